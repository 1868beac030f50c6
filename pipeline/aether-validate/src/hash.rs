//! A 64-bit hash of each canonicalised row: the same rows give the same hashes whatever the
//! file layout, the order of the rows or of the elements of an array column (collect_list and
//! collect_set differ in order between runs), and floats that agree to within the tolerance
//! (rounded to the tolerance's number of mantissa bits; -0.0 is 0.0, every NaN is one NaN).

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{self as dt, DataType};
use xxhash_rust::xxh3::xxh3_64;

const NULL_TAG: u64 = 0x6e75_6c6c_6e75_6c6c;

/// A strong 64-bit finaliser (splitmix64's).
pub fn finish(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// `h` combined with `v` (order-dependent).
pub fn combine(h: u64, v: u64) -> u64 {
    finish(h.rotate_left(29) ^ v)
}

/// How many mantissa bits a float keeps for a relative tolerance.
pub fn keep_bits(rel_tol: f64, mantissa_bits: u32) -> u32 {
    if rel_tol <= 0.0 {
        return mantissa_bits;
    }
    ((-rel_tol.log2()).ceil().max(0.0) as u32).min(mantissa_bits)
}

/// A double's canonical bits, rounded to `keep` mantissa bits.
pub fn canon_f64(x: f64, keep: u32) -> u64 {
    if x.is_nan() {
        return 0x7ff8_0000_0000_0000;
    }
    if x == 0.0 {
        return 0;
    }
    let bits = x.to_bits();
    let drop = 52 - keep.min(52);
    if drop == 0 {
        return bits;
    }
    // round half up on the magnitude (the exponent absorbs a carry out of the mantissa)
    let sign = bits & (1 << 63);
    let mag = bits & !(1 << 63);
    let rounded = (mag + (1u64 << (drop - 1))) & !((1u64 << drop) - 1);
    sign | rounded
}

/// Per-column float rounding: mantissa bits kept for doubles and for floats.
#[derive(Clone, Copy, Debug)]
pub struct FloatKeep {
    pub f64_bits: u32,
    pub f32_bits: u32,
}

/// The hashes of column `col` of a batch (one per row, salted by the column's position), to
/// [`mix`] into as many row hashes as need the column.
pub fn column_hashes(a: &dyn Array, col: usize, keep: FloatKeep) -> Vec<u64> {
    let mut v = vec![0u64; a.len()];
    value_hashes(a, keep, &mut v);
    let salt = finish(col as u64 + 1);
    for x in v.iter_mut() {
        *x ^= salt;
    }
    v
}

/// Mix a column's hashes into the row hashes.
pub fn mix(rows: &mut [u64], col: &[u64]) {
    for (r, &x) in rows.iter_mut().zip(col) {
        *r = combine(*r, x);
    }
}

macro_rules! prim {
    ($a:expr, $t:ty, $out:expr, $f:expr) => {{
        let p = $a.as_primitive::<$t>();
        for (i, o) in $out.iter_mut().enumerate() {
            *o = if p.is_null(i) {
                NULL_TAG
            } else {
                #[allow(clippy::redundant_closure_call)]
                finish(($f)(p.value(i)))
            };
        }
    }};
}

/// One hash per value of `a` (null: a fixed tag).
pub fn value_hashes(a: &dyn Array, keep: FloatKeep, out: &mut [u64]) {
    match a.data_type() {
        DataType::Boolean => {
            let b = a.as_boolean();
            for (i, o) in out.iter_mut().enumerate() {
                *o = if b.is_null(i) {
                    NULL_TAG
                } else {
                    finish(b.value(i) as u64 + 7)
                };
            }
        }
        DataType::Int8 => prim!(a, dt::Int8Type, out, |v: i8| v as i64 as u64),
        DataType::Int16 => prim!(a, dt::Int16Type, out, |v: i16| v as i64 as u64),
        DataType::Int32 => prim!(a, dt::Int32Type, out, |v: i32| v as i64 as u64),
        DataType::Int64 => prim!(a, dt::Int64Type, out, |v: i64| v as u64),
        DataType::UInt8 => prim!(a, dt::UInt8Type, out, |v: u8| v as u64),
        DataType::UInt16 => prim!(a, dt::UInt16Type, out, |v: u16| v as u64),
        DataType::UInt32 => prim!(a, dt::UInt32Type, out, |v: u32| v as u64),
        DataType::UInt64 => prim!(a, dt::UInt64Type, out, |v: u64| v),
        DataType::Float32 => prim!(a, dt::Float32Type, out, |v: f32| canon_f64(
            v as f64,
            keep.f32_bits
        )),
        DataType::Float64 => prim!(a, dt::Float64Type, out, |v: f64| canon_f64(
            v,
            keep.f64_bits
        )),
        DataType::Decimal128(_, _) => prim!(a, dt::Decimal128Type, out, |v: i128| (v as u64)
            ^ finish((v >> 64) as u64)),
        DataType::Date32 => prim!(a, dt::Date32Type, out, |v: i32| v as i64 as u64),
        DataType::Date64 => prim!(a, dt::Date64Type, out, |v: i64| v as u64),
        DataType::Timestamp(dt::TimeUnit::Second, _) => {
            prim!(a, dt::TimestampSecondType, out, |v: i64| v as u64)
        }
        DataType::Timestamp(dt::TimeUnit::Millisecond, _) => {
            prim!(a, dt::TimestampMillisecondType, out, |v: i64| v as u64)
        }
        DataType::Timestamp(dt::TimeUnit::Microsecond, _) => {
            prim!(a, dt::TimestampMicrosecondType, out, |v: i64| v as u64)
        }
        DataType::Timestamp(dt::TimeUnit::Nanosecond, _) => {
            prim!(a, dt::TimestampNanosecondType, out, |v: i64| v as u64)
        }
        DataType::Utf8 => bytes(
            a.as_string::<i32>().iter().map(|s| s.map(str::as_bytes)),
            out,
        ),
        DataType::LargeUtf8 => bytes(
            a.as_string::<i64>().iter().map(|s| s.map(str::as_bytes)),
            out,
        ),
        DataType::Utf8View => bytes(a.as_string_view().iter().map(|s| s.map(str::as_bytes)), out),
        DataType::Binary => bytes(a.as_binary::<i32>().iter(), out),
        DataType::LargeBinary => bytes(a.as_binary::<i64>().iter(), out),
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            list(
                l.values(),
                l.offsets().iter().map(|&o| o as usize),
                a,
                keep,
                out,
            )
        }
        DataType::LargeList(_) => {
            let l = a.as_list::<i64>();
            list(
                l.values(),
                l.offsets().iter().map(|&o| o as usize),
                a,
                keep,
                out,
            )
        }
        DataType::Struct(_) => {
            let s = a.as_struct();
            out.fill(0x0515_75c7);
            for (c, child) in s.columns().iter().enumerate() {
                let mut v = vec![0u64; a.len()];
                value_hashes(child.as_ref(), keep, &mut v);
                for (o, x) in out.iter_mut().zip(v) {
                    *o = combine(*o, x ^ (c as u64 + 1));
                }
            }
            for (i, o) in out.iter_mut().enumerate() {
                if s.is_null(i) {
                    *o = NULL_TAG;
                }
            }
        }
        _ => {
            // dictionaries (Hive partition columns), maps, times, intervals: by their text
            match cast(a, &DataType::Utf8) {
                Ok(s) => value_hashes(s.as_ref(), keep, out),
                Err(_) => out.fill(NULL_TAG),
            }
        }
    }
}

fn bytes<'a>(it: impl Iterator<Item = Option<&'a [u8]>>, out: &mut [u64]) {
    for (o, v) in out.iter_mut().zip(it) {
        *o = match v {
            Some(b) => xxh3_64(b),
            None => NULL_TAG,
        };
    }
}

/// An array column: its elements' hashes sorted, so element order does not matter.
fn list(
    values: &ArrayRef,
    offsets: impl Iterator<Item = usize>,
    a: &dyn Array,
    keep: FloatKeep,
    out: &mut [u64],
) {
    let mut elems = vec![0u64; values.len()];
    value_hashes(values.as_ref(), keep, &mut elems);
    let offs: Vec<usize> = offsets.collect();
    for (i, o) in out.iter_mut().enumerate() {
        if a.is_null(i) {
            *o = NULL_TAG;
            continue;
        }
        let mut e = elems[offs[i]..offs[i + 1]].to_vec();
        e.sort_unstable();
        *o = e
            .iter()
            .fold(0x1157_u64 ^ e.len() as u64, |h, &x| combine(h, x));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_within_the_tolerance_hash_alike() {
        let k = keep_bits(1e-6, 52);
        assert_eq!(k, 20);
        let x = 1234.5678_f64;
        let next = f64::from_bits(x.to_bits() + 1);
        assert_eq!(canon_f64(x, k), canon_f64(next, k));
        assert_ne!(canon_f64(x, k), canon_f64(x * (1.0 + 1e-4), k));
        assert_eq!(canon_f64(-0.0, k), canon_f64(0.0, k));
        assert_eq!(canon_f64(f64::NAN, k), canon_f64(-f64::NAN, k));
        assert_eq!(canon_f64(-x, k) & (1 << 63), 1 << 63);
    }
}
