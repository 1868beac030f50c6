//! Ids as they are printed: the history's ids are numbers (`12`), shown in some places with a
//! prefix (`aether-12`, `job-12`, `config-12`, `shape-12`, `run-12`, `#12`). Each form names
//! the same id.

/// The number an id given as printed names; an error says what forms are taken.
pub fn parse_id(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let mut rest = lower.as_str();
    for prefix in ["aether-", "aether_", "aether"] {
        if let Some(r) = rest.strip_prefix(prefix) {
            rest = r;
            break;
        }
    }
    for prefix in ["job-", "config-", "shape-", "run-", "#"] {
        if let Some(r) = rest.strip_prefix(prefix) {
            rest = r;
            break;
        }
    }
    match rest.parse::<i64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "{t:?} is not an aether id: expected a number as printed, e.g. 12 or aether-12"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_id;

    #[test]
    fn ids_are_taken_as_printed() {
        for s in [
            "12",
            " 12 ",
            "aether-12",
            "AETHER-12",
            "job-12",
            "aether-job-12",
            "#12",
        ] {
            assert_eq!(parse_id(s), Ok(12), "{s}");
        }
        for s in ["", "aether-", "twelve", "-3", "0", "j-12", "12.5"] {
            let e = parse_id(s).unwrap_err();
            assert!(e.contains("aether-12"), "{s}: {e}");
        }
    }
}
