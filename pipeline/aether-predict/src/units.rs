//! Memory sizes as Spark properties write them.

/// Bytes of a memory value (`4g`, `512MiB`, a bare number in `mib`-or-bytes).
pub fn parse_bytes(v: &str, mib: bool) -> Option<i64> {
    let t = v.trim().to_ascii_lowercase();
    let num_end = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let n: f64 = t[..num_end].parse().ok()?;
    let unit = &t[num_end..];
    let pow = match unit {
        "" => {
            return Some(if mib {
                (n * 1048576.0) as i64
            } else {
                n as i64
            });
        }
        "b" => 0,
        "k" | "kb" | "kib" => 1,
        "m" | "mb" | "mib" => 2,
        "g" | "gb" | "gib" => 3,
        "t" | "tb" | "tib" => 4,
        "p" | "pb" | "pib" => 5,
        _ => return None,
    };
    Some((n * 1024f64.powi(pow)) as i64)
}

/// Bytes written with the largest unit that divides them exactly (`32g`, `4915m`).
pub fn format_bytes(b: i64) -> String {
    if b == 0 {
        return "0b".into();
    }
    for (u, s) in [(5, "p"), (4, "t"), (3, "g"), (2, "m"), (1, "k")] {
        let d = 1i64 << (10 * u);
        if b % d == 0 {
            return format!("{}{s}", b / d);
        }
    }
    format!("{b}b")
}
