//! Structural scanning of raw JSON bytes: where a string or an object ends, eight bytes at a
//! time, without parsing. Shared by the event parser and the hand-written TaskEnd reader.

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
    let bad = |what: &str, at: usize| Err(format!("{what} at byte {at}"));
    if raw.get(start) != Some(&b'{') {
        return bad("expected an object", start);
    }
    let mut i = start;
    let mut depth = 0usize;
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
                depth -= 1;
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
}
