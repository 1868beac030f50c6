//! Structural scanning of raw JSON bytes: where a string or an object ends, eight or 32 bytes at
//! a time, without parsing. Shared by the event parser and the hand-written TaskEnd reader.

const fn byte_table(bytes: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
}

/// Bytes that matter outside strings.
static STRUCTURAL: [bool; 256] = byte_table(b"\"{}[]");

/// Bytes of `w` equal to `b`, as the high bit of each byte (exact up to the lowest match).
#[inline]
fn bytes_equal(w: u64, b: u8) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let x = w ^ (LO * b as u64);
    x.wrapping_sub(LO) & !x & HI
}

/// The index of the quote closing a string whose body starts at `i`, eight bytes at a time.
#[inline]
pub(crate) fn string_end(raw: &[u8], i: usize) -> Option<usize> {
    string_end_escaped(raw, i).map(|(end, _)| end)
}

/// Like [`string_end`], also telling whether the string has an escape.
#[inline]
pub(crate) fn string_end_escaped(raw: &[u8], mut i: usize) -> Option<(usize, bool)> {
    let mut escaped = false;
    loop {
        while let Some(chunk) = raw.get(i..i + 8) {
            let w = u64::from_le_bytes(chunk.try_into().ok()?);
            let m = bytes_equal(w, b'"') | bytes_equal(w, b'\\');
            if m != 0 {
                i += (m.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        match raw.get(i)? {
            b'\\' => {
                escaped = true;
                i += 2
            }
            b'"' => return Some((i, escaped)),
            _ => i += 1,
        }
    }
}

/// The index of the `}` closing the object that starts at `raw[start] == b'{'`: a structural
/// scan tracking strings (with escapes) and nesting.
pub(crate) fn object_end(raw: &[u8], start: usize) -> Result<usize, String> {
    #[cfg(target_arch = "x86_64")]
    if raw.get(start) == Some(&b'{') && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked just above).
        match unsafe { simd::object_end(raw, start) } {
            simd::Scan::End(end) => return Ok(end),
            simd::Scan::Tail { at, depth, inside } => {
                let at = if inside {
                    match string_end(raw, at) {
                        Some(end) => end + 1,
                        None => return Err(format!("unterminated string at byte {at}")),
                    }
                } else {
                    at
                };
                return object_end_from(raw, start, at, depth);
            }
            simd::Scan::GiveUp => {}
        }
    }
    object_end_from(raw, start, start, 0)
}

/// [`object_end`] one structural byte at a time, from `raw[i]` at `depth` (outside strings).
fn object_end_from(
    raw: &[u8],
    start: usize,
    mut i: usize,
    mut depth: usize,
) -> Result<usize, String> {
    let bad = |what: &str, at: usize| Err(format!("{what} at byte {at}"));
    if raw.get(start) != Some(&b'{') {
        return bad("expected an object", start);
    }
    loop {
        // jump to the next byte that matters
        while i < raw.len() && !STRUCTURAL[raw[i] as usize] {
            i += 1;
        }
        let Some(&c) = raw.get(i) else {
            return bad("unterminated object", start);
        };
        match c {
            b'"' => match string_end(raw, i + 1) {
                Some(end) => i = end,
                None => return bad("unterminated string", i),
            },
            b'{' | b'[' => depth += 1,
            _ => {
                // `}` or `]`
                let Some(d) = depth.checked_sub(1) else {
                    return bad("mismatched bracket", i);
                };
                depth = d;
                if depth == 0 {
                    return if c == b'}' {
                        Ok(i)
                    } else {
                        bad("mismatched bracket", i)
                    };
                }
            }
        }
        i += 1;
    }
}

/// Structural scanning 32 bytes at a time: quote and bracket masks from AVX2 compares, the
/// inside-string mask from a prefix XOR of the quote mask, valid as long as no backslash comes (a
/// block with one gives up). Serves [`object_end`] and the accumulables' array scan.
#[cfg(target_arch = "x86_64")]
pub(crate) mod simd {
    use std::arch::x86_64::*;

    /// The brackets outside strings in `raw[base..base + 32]`, as bit masks (opening, closing);
    /// `carry` is all ones when the block starts inside a string, and is set for the next one.
    /// `None` when the block holds a backslash (the prefix XOR cannot tell escaped quotes).
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) fn brackets(raw: &[u8], base: usize, carry: &mut u32) -> Option<(u32, u32)> {
        let block = &raw[base..base + 32];
        // SAFETY: `block` holds the 32 bytes read.
        let v = unsafe { _mm256_loadu_si256(block.as_ptr() as *const __m256i) };
        macro_rules! eq {
            ($b:expr) => {
                _mm256_cmpeq_epi8(v, _mm256_set1_epi8($b as i8))
            };
        }
        if _mm256_movemask_epi8(eq!(b'\\')) != 0 {
            return None;
        }
        let quotes = _mm256_movemask_epi8(eq!(b'"')) as u32;
        let opens = _mm256_movemask_epi8(_mm256_or_si256(eq!(b'{'), eq!(b'['))) as u32;
        let closes = _mm256_movemask_epi8(_mm256_or_si256(eq!(b'}'), eq!(b']'))) as u32;
        let mut x = quotes;
        x ^= x << 1;
        x ^= x << 2;
        x ^= x << 4;
        x ^= x << 8;
        x ^= x << 16;
        let inside = x ^ *carry;
        *carry = if inside >> 31 == 1 { u32::MAX } else { 0 };
        Some((opens & !inside, closes & !inside))
    }

    pub(super) enum Scan {
        /// the index of the closing `}`
        End(usize),
        /// an escape or a mismatched bracket: the byte scan judges the whole object
        GiveUp,
        /// the object runs into the last partial block: go on from `at`, at `depth`, inside a
        /// string or not
        Tail {
            at: usize,
            depth: usize,
            inside: bool,
        },
    }

    /// The end of the object at `raw[start] == b'{'`.
    #[target_feature(enable = "avx2")]
    pub(super) fn object_end(raw: &[u8], start: usize) -> Scan {
        let mut depth = 0usize;
        let mut inside_carry = 0u32;
        let mut base = start;
        while base + 32 <= raw.len() {
            let Some((opens, closes)) = brackets(raw, base, &mut inside_carry) else {
                return Scan::GiveUp;
            };
            let mut bits = opens | closes;
            while bits != 0 {
                let bit = bits & bits.wrapping_neg();
                bits ^= bit;
                if opens & bit != 0 {
                    depth += 1;
                } else {
                    let Some(d) = depth.checked_sub(1) else {
                        return Scan::GiveUp;
                    };
                    depth = d;
                    if depth == 0 {
                        let p = base + bit.trailing_zeros() as usize;
                        return if raw[p] == b'}' {
                            Scan::End(p)
                        } else {
                            Scan::GiveUp
                        };
                    }
                }
            }
            base += 32;
        }
        Scan::Tail {
            at: base,
            depth,
            inside: inside_carry != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_end_handles_escapes_at_every_offset() {
        for pad in 0..20 {
            let body = format!("{}a\\\"b\\\\\"tail", "x".repeat(pad));
            // body: xxx a \" b \\ " tail  → the closing quote follows the escaped backslash
            let bytes = body.as_bytes();
            let end = string_end(bytes, 0).unwrap();
            assert_eq!(&bytes[end + 1..], b"tail", "pad {pad}");
        }
        assert_eq!(string_end(b"no closing quote here", 0), None);
        assert_eq!(string_end(b"ends with escape\\", 0), None);
    }

    /// The 32-bytes-at-a-time scan ends every object where the byte scan does (or fails where
    /// it fails), whatever falls on a block's edge: strings with brackets, escapes, nesting.
    #[test]
    fn object_end_agrees_with_the_byte_scan() {
        let pieces: [&[u8]; 12] = [
            br#""a":1"#,
            br#""br{ck}[ts]":"}]""#,
            br#""n":{"x":[1,2,{"y":"]"}]}"#,
            br#""esc":"q\"}\\""#,
            br#""long":"0123456789012345678901234567890123456789""#,
            br#""e":{}"#,
            br#""l":[]"#,
            br#""t":true"#,
            br#""s":"{""#,
            "\"u\":\"é\"".as_bytes(),
            br#""deep":[[[[{"a":[{}]}]]]]"#,
            br#""sp" : [ 1 , 2 ]"#,
        ];
        let mut seed = 11u64;
        let mut ends = 0;
        for _ in 0..3000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let pad = (seed % 40) as usize;
            let mut raw = vec![b' '; pad];
            let start = raw.len();
            raw.push(b'{');
            let n = 1 + (seed >> 8) % 9;
            for k in 0..n {
                if k > 0 {
                    raw.push(b',');
                }
                raw.extend_from_slice(pieces[((seed >> (12 + 4 * k)) % 12) as usize]);
            }
            // sometimes cut short or spoiled, to compare the failures too
            match (seed >> 50) % 6 {
                0 => {}
                1 => raw.push(b']'),
                _ => raw.push(b'}'),
            }
            raw.extend_from_slice(&b",\"next\":{\"k\":[1]}}"[..((seed >> 56) % 15) as usize]);
            let want = object_end_from(&raw, start, start, 0).ok();
            assert_eq!(
                object_end(&raw, start).ok(),
                want,
                "{}",
                String::from_utf8_lossy(&raw)
            );
            ends += usize::from(want.is_some());
        }
        assert!(ends > 1000, "{ends} objects ended");
    }
}
