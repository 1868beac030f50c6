//! The words of a SQL statement, as the views and the plan cache read them: whole-word mentions
//! of names, what leads a statement (after its comments), catalog listings.

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Does `sql` mention `name` as a whole word?
pub(crate) fn mentions(sql: &str, name: &str) -> bool {
    let bytes = sql.as_bytes();
    let mut from = 0;
    while let Some(i) = sql[from..].find(name) {
        let start = from + i;
        let end = start + name.len();
        let before_ok = start == 0 || !is_ident_byte(bytes[start - 1]);
        let after_ok = end == bytes.len() || !is_ident_byte(bytes[end]);
        if before_ok && after_ok {
            return true;
        }
        from = start + 1;
    }
    false
}

/// Whether a statement (in lower case) lists the catalog: `information_schema`, `SHOW …`.
pub(crate) fn lists_catalog(lower: &str) -> bool {
    mentions(lower, "information_schema") || skip_leading_comments(lower).starts_with("show")
}

/// `sql` after the blanks and comments (`-- …`, `/* … */`, nested) at its start.
pub fn skip_leading_comments(sql: &str) -> &str {
    let mut s = sql.trim_start();
    loop {
        if let Some(r) = s.strip_prefix("--") {
            s = r.find('\n').map_or("", |i| &r[i + 1..]).trim_start();
        } else if s.starts_with("/*") {
            let b = s.as_bytes();
            let (mut depth, mut i) = (0usize, 0);
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            // an unclosed comment: nothing follows it
            s = if depth == 0 { s[i..].trim_start() } else { "" };
        } else {
            return s;
        }
    }
}
