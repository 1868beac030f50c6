//! Layer 3, every row: each row's canonical hash ([`crate::hash`]) compared as a multiset per
//! bucket, the buckets that differ drilled into (rows equal but for floats within the tolerance
//! paired up), and the deterministic hash sample of keys.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use crate::{Builder, CheckKind, Options, Result, Verdict, hash, ident, is_float, q};

const BUCKET_BITS: u32 = 12;
const BUCKETS: usize = 1 << BUCKET_BITS;
/// Buckets drilled into at most, and rows kept per side from them.
const MAX_DRILL_BUCKETS: usize = 256;
const MAX_DRILL_ROWS: usize = 200_000;

#[derive(Clone)]
struct Sums {
    count: Vec<u64>,
    sum: Vec<u64>,
    sum2: Vec<u64>,
}

impl Sums {
    fn new() -> Self {
        Sums {
            count: vec![0; BUCKETS],
            sum: vec![0; BUCKETS],
            sum2: vec![0; BUCKETS],
        }
    }
    fn add(&mut self, h: u64) {
        let k = (h >> (64 - BUCKET_BITS)) as usize;
        self.count[k] += 1;
        self.sum[k] = self.sum[k].wrapping_add(h);
        self.sum2[k] = self.sum2[k].wrapping_add(hash::finish(h ^ 0x5bd1_e995));
    }
}

/// A row kept for drilling: its hash, its hash without float columns, its floats, its text.
struct Kept {
    hash: u64,
    no_float: u64,
    floats: Vec<Option<f64>>,
    text: String,
}

impl Kept {
    /// Row `r` of a batch with its hashes.
    fn of(batch: &RecordBatch, cols: &[Field], h: &Hashed, r: usize) -> Kept {
        Kept {
            hash: h.rows[r],
            no_float: h.no_float[r],
            floats: floats_of(batch, cols, r),
            text: row_text(batch, cols, r),
        }
    }

    /// The same row: equal hashes, or equal but for floats within the tolerance.
    fn matches(&self, other: &Kept, float_tols: &[f64], abs_tol: f64) -> bool {
        self.hash == other.hash
            || (self.no_float == other.no_float
                && floats_close(&self.floats, &other.floats, float_tols, abs_tol))
    }
}

/// A sampled key's row on one side.
struct Sampled {
    key_text: String,
    row: Kept,
}

struct Hashed {
    rows: Vec<u64>,
    no_float: Vec<u64>,
    key: Vec<u64>,
}

fn hash_batch(batch: &RecordBatch, cols: &[Field], key: &[String], o: &Options) -> Hashed {
    let n = batch.num_rows();
    let keep = o.keep();
    let (mut rows, mut no_float, mut keyh) = (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
    for (i, f) in cols.iter().enumerate() {
        // each column hashed once, mixed into every row hash that covers it
        let c = hash::column_hashes(batch.column(i).as_ref(), i, keep);
        hash::mix(&mut rows, &c);
        if !is_float(f.data_type()) {
            hash::mix(&mut no_float, &c);
        }
        if key.iter().any(|k| k == f.name()) {
            hash::mix(&mut keyh, &c);
        }
    }
    for h in rows
        .iter_mut()
        .chain(no_float.iter_mut())
        .chain(keyh.iter_mut())
    {
        *h = hash::finish(*h);
    }
    Hashed {
        rows,
        no_float,
        key: keyh,
    }
}

fn row_text(batch: &RecordBatch, cols: &[Field], r: usize) -> String {
    cols.iter()
        .enumerate()
        .map(|(i, f)| {
            let a = batch.column(i);
            let v = if a.is_null(r) {
                "NULL".to_string()
            } else {
                array_value_to_string(a, r).unwrap_or_default()
            };
            format!("{}={v}", f.name())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn floats_of(batch: &RecordBatch, cols: &[Field], r: usize) -> Vec<Option<f64>> {
    cols.iter()
        .enumerate()
        .filter(|(_, f)| is_float(f.data_type()))
        .map(|(i, f)| {
            let a = batch.column(i);
            if a.is_null(r) {
                return None;
            }
            match f.data_type() {
                DataType::Float64 => Some(
                    a.as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                        .value(r),
                ),
                DataType::Float32 => Some(
                    a.as_primitive::<datafusion::arrow::datatypes::Float32Type>()
                        .value(r) as f64,
                ),
                _ => None,
            }
        })
        .collect()
}

fn floats_close(a: &[Option<f64>], b: &[Option<f64>], tols: &[f64], abs_tol: f64) -> bool {
    a.iter().zip(b).zip(tols).all(|((x, y), tol)| match (x, y) {
        (None, None) => true,
        (Some(x), Some(y)) => {
            (x.is_nan() && y.is_nan())
                || x == y
                || (x - y).abs() <= tol * x.abs().max(y.abs()) + abs_tol
        }
        _ => false,
    })
}

/// The rows of one side, streamed: `f` sees each batch with its hashes.
async fn stream_rows(
    ctx: &SessionContext,
    table: &str,
    cols: &[Field],
    key: &[String],
    o: &Options,
    mut f: impl FnMut(&RecordBatch, &Hashed),
) -> Result<u64> {
    let select = cols
        .iter()
        .map(|c| ident(c.name()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut s = ctx
        .sql(&format!("SELECT {select} FROM {table}"))
        .await
        .map_err(q)?
        .execute_stream()
        .await
        .map_err(q)?;
    let mut n = 0u64;
    let mut next_report = 5_000_000u64;
    while let Some(batch) = s.next().await {
        let batch = batch.map_err(q)?;
        let h = hash_batch(&batch, cols, key, o);
        f(&batch, &h);
        n += batch.num_rows() as u64;
        if o.progress && n >= next_report {
            eprintln!("validate: {table}: {n} rows hashed");
            next_report += 5_000_000;
        }
    }
    Ok(n)
}

pub(crate) async fn rows(
    ctx: &SessionContext,
    cols: &[Field],
    key: &[String],
    rows_max: u64,
    o: &Options,
    b: &mut Builder,
) -> Result<bool> {
    if cols.is_empty() {
        return Ok(false);
    }
    let sample = o.checks.contains(&CheckKind::Sample) && !key.is_empty() && o.sample_keys > 0;
    let modulus = (rows_max / o.sample_keys.max(1) as u64).max(1);
    let float_tols: Vec<f64> = cols
        .iter()
        .filter(|f| is_float(f.data_type()))
        .map(|f| o.tol(f.data_type()))
        .collect();
    let mut sums = [Sums::new(), Sums::new()];
    let mut samples: [HashMap<u64, Vec<Sampled>>; 2] = [HashMap::new(), HashMap::new()];
    for (side, table) in ["cpu", "gpu"].iter().enumerate() {
        let (sm, sp) = (&mut sums[side], &mut samples[side]);
        stream_rows(ctx, table, cols, key, o, |batch, h| {
            for (r, &x) in h.rows.iter().enumerate() {
                sm.add(x);
                if sample && h.key[r] % modulus == 0 && sp.len() < o.sample_keys * 4 {
                    let key_text = cols
                        .iter()
                        .enumerate()
                        .filter(|(_, f)| key.iter().any(|k| k == f.name()))
                        .map(|(i, _)| array_value_to_string(batch.column(i), r).unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join(", ");
                    sp.entry(h.key[r]).or_default().push(Sampled {
                        key_text,
                        row: Kept::of(batch, cols, h, r),
                    });
                }
            }
        })
        .await?;
    }
    let [cpu_sums, gpu_sums] = sums;
    let differing: Vec<usize> = (0..BUCKETS)
        .filter(|&k| {
            cpu_sums.count[k] != gpu_sums.count[k]
                || cpu_sums.sum[k] != gpu_sums.sum[k]
                || cpu_sums.sum2[k] != gpu_sums.sum2[k]
        })
        .collect();
    let total_c: u64 = cpu_sums.count.iter().sum();
    let total_g: u64 = gpu_sums.count.iter().sum();
    if o.checks.contains(&CheckKind::Rows) {
        if differing.is_empty() {
            b.add(
                "rows",
                "every row (hash multiset)",
                None,
                total_c,
                total_g,
                Some(0.0),
                Verdict::Pass,
                format!("all {total_c} rows hash alike (floats to the tolerance)"),
            );
        } else {
            let drill: std::collections::HashSet<usize> =
                differing.iter().copied().take(MAX_DRILL_BUCKETS).collect();
            let mut kept: [Vec<Kept>; 2] = [Vec::new(), Vec::new()];
            for (side, table) in ["cpu", "gpu"].iter().enumerate() {
                let k = &mut kept[side];
                stream_rows(ctx, table, cols, key, o, |batch, h| {
                    for (r, &x) in h.rows.iter().enumerate() {
                        if k.len() < MAX_DRILL_ROWS
                            && drill.contains(&((x >> (64 - BUCKET_BITS)) as usize))
                        {
                            k.push(Kept::of(batch, cols, h, r));
                        }
                    }
                })
                .await?;
            }
            let [kc, kg] = kept;
            // multiset difference by hash
            let mut counts: HashMap<u64, i64> = HashMap::new();
            for r in &kc {
                *counts.entry(r.hash).or_default() += 1;
            }
            for r in &kg {
                *counts.entry(r.hash).or_default() -= 1;
            }
            let take = |rows: &[Kept], sign: i64, counts: &mut HashMap<u64, i64>| -> Vec<usize> {
                let mut out = Vec::new();
                for (i, r) in rows.iter().enumerate() {
                    if let Some(c) = counts.get_mut(&r.hash)
                        && *c * sign > 0
                    {
                        *c -= sign;
                        out.push(i);
                    }
                }
                out
            };
            let mut only_c = take(&kc, 1, &mut counts.clone());
            let mut only_g = take(&kg, -1, &mut counts);
            // rows equal but for floats within the tolerance pair up
            let mut within = 0u64;
            let mut by_nf: HashMap<u64, Vec<usize>> = HashMap::new();
            for &i in &only_g {
                by_nf.entry(kg[i].no_float).or_default().push(i);
            }
            let mut paired_g: std::collections::HashSet<usize> = Default::default();
            only_c.retain(|&i| {
                if let Some(cands) = by_nf.get_mut(&kc[i].no_float)
                    && let Some(pos) = cands
                        .iter()
                        .position(|&j| kc[i].matches(&kg[j], &float_tols, o.abs_tol))
                {
                    paired_g.insert(cands.remove(pos));
                    within += 1;
                    return false;
                }
                true
            });
            only_g.retain(|j| !paired_g.contains(j));
            let partial = differing.len() > MAX_DRILL_BUCKETS
                || kc.len() >= MAX_DRILL_ROWS
                || kg.len() >= MAX_DRILL_ROWS;
            let ex = |rows: &[Kept], idx: &[usize]| {
                idx.iter()
                    .take(o.max_examples)
                    .map(|&i| rows[i].text.clone())
                    .collect::<Vec<_>>()
                    .join(" | ")
            };
            let bad = !only_c.is_empty() || !only_g.is_empty();
            let scope = if partial {
                format!(
                    " (from {} of {} differing hash buckets: counts are a lower bound)",
                    drill.len(),
                    differing.len()
                )
            } else {
                String::new()
            };
            b.gate(
                "rows",
                "rows only in the CPU output",
                None,
                only_c.len(),
                0,
                None,
                only_c.is_empty(),
                Verdict::Fail,
                || {
                    format!(
                        "{} rows only in the CPU output{scope}, e.g. {}",
                        only_c.len(),
                        ex(&kc, &only_c)
                    )
                },
            );
            b.gate(
                "rows",
                "rows only in the GPU output",
                None,
                0,
                only_g.len(),
                None,
                only_g.is_empty(),
                Verdict::Fail,
                || {
                    format!(
                        "{} rows only in the GPU output{scope}, e.g. {}",
                        only_g.len(),
                        ex(&kg, &only_g)
                    )
                },
            );
            b.add(
                "rows",
                "every row (hash multiset)",
                None,
                total_c,
                total_g,
                None,
                if bad { Verdict::Fail } else { Verdict::Pass },
                if within > 0 {
                    format!("{within} rows equal only within the float tolerance")
                } else {
                    String::new()
                },
            );
        }
    }
    if sample {
        let [sc, sg] = samples;
        let (mut compared, mut differ, mut missing) = (0u64, Vec::new(), Vec::new());
        for (k, rows_c) in &sc {
            let Some(rows_g) = sg.get(k) else {
                missing.push(format!("{} (not in the GPU output)", rows_c[0].key_text));
                continue;
            };
            compared += 1;
            let same = rows_c.len() == rows_g.len()
                && rows_c.iter().all(|c| {
                    rows_g
                        .iter()
                        .any(|g| c.row.matches(&g.row, &float_tols, o.abs_tol))
                });
            if !same {
                differ.push(format!(
                    "CPU {} / GPU {}",
                    rows_c[0].row.text, rows_g[0].row.text
                ));
            }
        }
        for (k, rows_g) in &sg {
            if !sc.contains_key(k) {
                missing.push(format!("{} (not in the CPU output)", rows_g[0].key_text));
            }
        }
        let bad = differ.len() + missing.len();
        b.add(
            "rows",
            "hash sample of keys",
            Some(&key.join(",")),
            sc.len(),
            sg.len(),
            None,
            if bad == 0 {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            if bad == 0 {
                format!("{compared} sampled keys (1 in {modulus}) equal")
            } else {
                format!(
                    "{} of {} sampled keys differ, e.g. {}",
                    bad,
                    sc.len().max(sg.len()),
                    differ
                        .iter()
                        .chain(&missing)
                        .take(o.max_examples)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" | ")
                )
            },
        );
    }
    Ok(differing.is_empty())
}
