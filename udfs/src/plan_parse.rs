//! Pulling expression names out of a Spark plan node's description, the way the RAPIDS
//! qualification tool does (best effort, regex based), and the Java string semantics it relies
//! on (`String.split`, `String.trim`, `\w`, `\s`, `.`).
//!
//! A parser returns `Err(ParseFailure)` where the reference tool throws (it then reports the
//! node as unsupported under its raw name).

use regex::{NoExpand, Regex};
use std::collections::HashMap;
use std::sync::LazyLock;

/// The reference tool threw while parsing this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseFailure;

/// A result of a parser that may fail like the reference tool.
pub type Parsed<T> = Result<T, ParseFailure>;

// Java regex classes: `\w` and `\s` are ASCII, `.` stops at any line terminator.
macro_rules! w {
    () => {
        "[0-9A-Za-z_]"
    };
}
macro_rules! s {
    () => {
        r"[ \t\n\x0B\x0C\r]"
    };
}
macro_rules! dot {
    () => {
        r"[^\n\r\x{85}\x{2028}\x{2029}]"
    };
}
// Java's `$` without MULTILINE: the end, or before a final line terminator.
macro_rules! end {
    () => {
        r"(?:(?:\r\n|[\n\r\x{85}\x{2028}\x{2029}])?\z)"
    };
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid built-in pattern")
}

/// `(\w+)\(`: a function name.
static FUNCTION_PREFIX: LazyLock<Regex> = LazyLock::new(|| re(concat!("(", w!(), r"+)\(")));
/// `(\w+)\(.*\)`: a function call.
static FUNCTION_CALL: LazyLock<Regex> =
    LazyLock::new(|| re(concat!("(", w!(), r"+)\(", dot!(), r"*\)")));
static AGGREGATE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^\((keys|functions)=\[(",
        dot!(),
        r"*)\]",
        s!(),
        "*,",
        s!(),
        r"*(keys|functions)=\[(",
        dot!(),
        r"*)\]",
        s!(),
        r"*\)",
        end!()
    ))
});
static SORT_KEYS: LazyLock<Regex> = LazyLock::new(|| re(r"\[([0-9A-Za-z_#, ()]+\])"));
static ORDER_BY: LazyLock<Regex> = LazyLock::new(|| re(r"orderBy=\[([0-9A-Za-z_#, ()]+\])"));
static EQUI_JOIN_KEYS: LazyLock<Regex> =
    LazyLock::new(|| re(r"\[([0-9A-Za-z_#, +*\\\-.<>=$`()]+\])"));
static BINARY_OP_NO_SPACE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        "(^|",
        s!(),
        r"+)((AND|OR|NOT|IN|=|<=>|<|>|>=|\++|-|\*+))(\(+)"
    ))
});
static NON_BINARY_OP: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        s!(),
        r"+((AND|OR|NOT|=|<=>|<|>|>=|\++|-|\*+))(",
        end!(),
        r"|\)+)"
    ))
});
static OPEN_PARENS: LazyLock<Regex> = LazyLock::new(|| re(r"\(+"));
static CLOSE_PARENS: LazyLock<Regex> = LazyLock::new(|| re(r"\)+"));
static WHITESPACE: LazyLock<Regex> = LazyLock::new(|| re(concat!(s!(), "+")));
static LEADING_BRACKETS: LazyLock<Regex> = LazyLock::new(|| re(r"^\[+"));
static TRAILING_BRACKETS: LazyLock<Regex> = LazyLock::new(|| re(r"\]+$"));
static PARSE_URL_PART: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)parse_url\(",
        dot!(),
        "*,",
        s!(),
        "*(FILE|REF|AUTHORITY|USERINFO)(?:",
        s!(),
        "*,",
        dot!(),
        r"*)*\)"
    ))
});
static AND_OR: LazyLock<Regex> = LazyLock::new(|| re(concat!(s!(), "+(?i)(AND|OR)", s!(), "+")));
static CAST_AS_DATE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)\bcast\(",
        s!(),
        "*",
        dot!(),
        "+",
        s!(),
        "+as",
        s!(),
        "+date",
        s!(),
        r"*\)"
    ))
});
static LOWER_IN: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)\blower\(",
        s!(),
        "*",
        dot!(),
        "+",
        s!(),
        r"*\)",
        s!(),
        "+in",
        s!(),
        r"*(\((?:[^()]*|",
        dot!(),
        r"*)\)|\bsubquery#[0-9]+\b)"
    ))
});
/// `<op>\(+` for the operators of `BINARY_OP_NO_SPACE` that are valid Java patterns.
static OP_PAREN: LazyLock<HashMap<&'static str, Regex>> = LazyLock::new(|| {
    ["AND", "OR", "NOT", "IN", "=", "<=>", "<", ">", ">=", "-"]
        .into_iter()
        .map(|op| (op, re(&format!(r"{}\(+", regex::escape(op)))))
        .collect()
});

/// Names that are not expressions (compared lower-cased).
const IGNORED_EXPRESSIONS: &[&str] = &[
    "any",
    "cast",
    "ansi_cast",
    "decimal",
    "decimaltype",
    "every",
    "some",
    "list",
    "current_database",
    "current_user",
    "current_timestamp",
    "arraybuffer",
    "arraytype",
    "structfield",
    "structtype",
];

/// Prefixes of partial aggregate functions; one is removed.
const AGGREGATE_PREFIXES: &[&str] = &["finalmerge_", "partial_", "merge_"];

fn ignored(name: &str) -> bool {
    let lc = name.to_lowercase();
    IGNORED_EXPRESSIONS.contains(&lc.as_str())
}

// ---------------------------------------------------------------------------------------------
// Java string semantics

/// Java's `String.trim`: removes leading and trailing characters up to U+0020.
pub fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// Java's `String.split` (limit 0) given the `(start, end)` of each delimiter match: a match
/// found nowhere gives the whole string; a zero-width match at the start gives no leading piece;
/// trailing empty pieces are removed.
fn java_split_at(s: &str, matches: impl Iterator<Item = (usize, usize)>) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut last = 0;
    let mut any = false;
    for (start, end) in matches {
        any = true;
        if start == 0 && end == 0 {
            continue;
        }
        pieces.push(&s[last..start]);
        last = end;
    }
    if !any {
        return vec![s];
    }
    pieces.push(&s[last..]);
    while pieces.last().is_some_and(|p| p.is_empty()) {
        pieces.pop();
    }
    pieces
}

/// Java's `s.split(regex)`.
pub fn java_split_re<'a>(s: &'a str, re: &Regex) -> Vec<&'a str> {
    java_split_at(s, re.find_iter(s).map(|m| (m.start(), m.end())))
}

/// Java's `s.split(literal)` for a delimiter without regex meaning.
pub fn java_split<'a>(s: &'a str, delim: &str) -> Vec<&'a str> {
    java_split_at(s, s.match_indices(delim).map(|(i, d)| (i, i + d.len())))
}

/// Java's `s.split(literal, limit)` with `limit > 0`: at most `limit` pieces, empty ones kept.
pub fn java_split_limit<'a>(s: &'a str, delim: &str, limit: usize) -> Vec<&'a str> {
    s.splitn(limit.max(1), delim).collect()
}

/// Java's `s.split("(?<=a)|(?<=b)…")`: splits after every occurrence of any marker.
pub fn split_after<'a>(s: &'a str, markers: &[&str]) -> Vec<&'a str> {
    let mut cuts: Vec<usize> = markers
        .iter()
        .flat_map(|m| s.match_indices(m).map(move |(i, _)| i + m.len()))
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    java_split_at(s, cuts.into_iter().map(|c| (c, c)))
}

/// Strips `^\[+` and `\]+$`.
fn strip_brackets(s: &str) -> String {
    let s = LEADING_BRACKETS.replace(s, "");
    TRAILING_BRACKETS.replace(&s, "").into_owned()
}

// ---------------------------------------------------------------------------------------------
// Function names

/// Rewrites `parse_url(…, FILE|REF|AUTHORITY|USERINFO …)` as `parse_url_<part>(…)` (the plugin
/// supports only the other parts).
fn process_special_functions(expr: &str) -> String {
    const CALL: &str = "parse_url(";
    if !expr.contains(CALL) {
        return expr.to_string();
    }
    // every balanced `parse_url(…)` call, left to right, not overlapping
    let mut calls = Vec::new();
    let mut from = 0;
    while let Some(i) = expr[from..].find(CALL).map(|i| i + from) {
        let open = i + CALL.len() - 1;
        let mut depth = 0usize;
        let mut close = None;
        for (j, c) in expr[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + j);
                        break;
                    }
                }
                _ => {}
            }
        }
        match close {
            Some(c) => {
                calls.push(&expr[i..=c]);
                from = c + 1;
            }
            None => from = i + 1,
        }
    }
    let mut out = expr.to_string();
    for call in calls {
        if let Some(part) = PARSE_URL_PART.captures(call).and_then(|c| c.get(1)) {
            let renamed = call.replacen(
                "parse_url(",
                &format!("parse_url_{}(", part.as_str().to_lowercase()),
                1,
            );
            out = out.replace(call, &renamed);
        }
    }
    out
}

/// Every `name(` in `expr` (after the `parse_url` rewrite), one aggregate prefix removed,
/// non-expressions dropped.
pub fn all_function_names(expr: &str) -> Vec<String> {
    let expr = process_special_functions(expr);
    FUNCTION_PREFIX
        .captures_iter(&expr)
        .map(|c| {
            let f = &c[1];
            AGGREGATE_PREFIXES
                .iter()
                .find(|p| f.starts_with(*p))
                .map(|p| f[p.len()..].to_string())
                .unwrap_or_else(|| f.to_string())
        })
        .filter(|f| !ignored(f))
        .collect()
}

/// The first match of `pattern` in `expr`, unless it is a non-expression.
fn function_name(pattern: &Regex, expr: &str) -> Option<String> {
    let f = pattern.captures(expr)?.get(1)?.as_str();
    (!ignored(f)).then(|| f.to_string())
}

// ---------------------------------------------------------------------------------------------
// Per-exec parsers

/// Project, Expand, Generate: every function name.
pub fn project(expr: &str) -> Vec<String> {
    all_function_names(expr)
}

/// HashAggregate, ObjectHashAggregate, SortAggregate: the function names of `functions=[…]`
/// (the keys are not looked at).
pub fn aggregate(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(c) = AGGREGATE.captures(expr) {
        for g in [1, 3] {
            if &c[g] == "functions" {
                out.extend(all_function_names(&c[g + 1]));
            }
        }
    }
    out
}

/// Sort keys of a bracketed list: per key, the first `name(…)`.
fn sort_keys(list: &str) -> Vec<String> {
    split_after(list, &["FIRST,", "LAST,"])
        .into_iter()
        .filter_map(|k| function_name(&FUNCTION_CALL, &strip_brackets(java_trim(k))))
        .collect()
}

/// Sort: the functions of the first bracketed key list.
pub fn sort(expr: &str) -> Vec<String> {
    match SORT_KEYS.find(expr) {
        Some(m) => sort_keys(m.as_str()),
        None => Vec::new(),
    }
}

/// TakeOrderedAndProject: the functions of `orderBy=[…]`.
pub fn take_ordered(expr: &str) -> Vec<String> {
    match ORDER_BY.find(expr) {
        Some(m) => sort_keys(&m.as_str().replace("orderBy=", "")),
        None => Vec::new(),
    }
}

/// Window: the window function in front of every `windowspecdefinition`.
pub fn window(expr: &str) -> Vec<String> {
    let first = split_after(expr, &["]"]).into_iter().next().unwrap_or("");
    let list = strip_brackets(java_trim(first)).replace("cast(", "");
    let parts = java_split(&list, "windowspecdefinition");
    let mut out = Vec::new();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        let part = java_trim(part);
        let last = FUNCTION_PREFIX
            .find_iter(part)
            .last()
            .map(|m| m.as_str())
            .unwrap_or("");
        out.extend(function_name(&FUNCTION_PREFIX, last));
    }
    out
}

/// WindowGroupLimit: the function of the third `", "`-separated argument.
pub fn window_group_limit(expr: &str) -> Vec<String> {
    let parts = java_split(expr, ", ");
    let Some(rank) = parts.get(2).map(|p| java_trim(p)) else {
        return Vec::new();
    };
    FUNCTION_PREFIX
        .find(rank)
        .and_then(|m| function_name(&FUNCTION_PREFIX, m.as_str()))
        .into_iter()
        .collect()
}

/// A condition (Filter, join conditions): function names, then the binary operators as
/// expression names (`=` → `EqualTo`, `AND` → `And`, …).
pub fn conditional(expr: &str) -> Parsed<Vec<String>> {
    let mut processed = expr.to_string();
    // 1. `AND(` → `AND (` so operators do not read as functions
    // (the reference replaces once per match; once per distinct operator gives the same text)
    let mut done: Vec<&str> = Vec::new();
    for c in BINARY_OP_NO_SPACE.captures_iter(expr) {
        let op = c.get(2).map_or("", |m| m.as_str());
        if done.contains(&op) {
            continue;
        }
        done.push(op);
        // the reference compiles `<op>\(+` as a regex: `+…` and `*…` do not compile
        let Some(pattern) = OP_PAREN.get(op) else {
            return Err(ParseFailure);
        };
        processed = pattern
            .replace_all(&processed, NoExpand(&format!("{op} (")))
            .into_owned();
    }
    // 2. function names, then drop the calls
    let mut out: Vec<String> = FUNCTION_PREFIX
        .captures_iter(&processed)
        .map(|c| c[1].to_string())
        .filter(|f| !ignored(f))
        .collect();
    processed = FUNCTION_PREFIX.replace_all(&processed, " ").into_owned();
    // 3. operators at the end of the string or before `)` are literals
    processed = NON_BINARY_OP.replace_all(&processed, " ").into_owned();
    // 4. (the reference means to drop commas when it found functions, but tests an iterator it
    //    has already consumed, so commas stay)
    processed = OPEN_PARENS.replace_all(&processed, " ").into_owned();
    processed = CLOSE_PARENS.replace_all(&processed, " ").into_owned();
    // 5. tokens
    for token in java_split_re(&processed, &WHITESPACE) {
        let name = match token {
            "NOT" => "Not",
            "=" => "EqualTo",
            "<=>" => "EqualNullSafe",
            "<" => "LessThan",
            ">" => "GreaterThan",
            "<=" => "LessThanOrEqual",
            ">=" => "GreaterThanOrEqual",
            "<<" => "ShiftLeft",
            ">>" => "ShiftRight",
            ">>>" => "ShiftRightUnsigned",
            "+" => "Add",
            "-" => "Subtract",
            "*" => "Multiply",
            "IN" => "In",
            "OR" | "||" => "Or",
            "&&" | "AND" => "And",
            _ => continue,
        };
        out.push(name.to_string());
    }
    Ok(out)
}

const ALL_JOIN_TYPES: &[&str] = &[
    "Inner",
    "Cross",
    "LeftOuter",
    "RightOuter",
    "FullOuter",
    "LeftSemi",
    "LeftAnti",
    "ExistenceJoin",
];
const BUILD_RIGHT_JOIN_TYPES: &[&str] = &[
    "Inner",
    "Cross",
    "LeftOuter",
    "LeftSemi",
    "LeftAnti",
    "FullOuter",
    "ExistenceJoin",
];
const BUILD_LEFT_JOIN_TYPES: &[&str] = &["Inner", "Cross", "RightOuter", "FullOuter"];

/// The index of the first comma outside parentheses.
fn first_top_level_comma(s: &str) -> Option<usize> {
    let mut depth = 0i64;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// BroadcastHashJoin, ShuffledHashJoin, SortMergeJoin: the functions of the key lists and the
/// condition, and whether the join type (and build side) is supported.
pub fn equi_join(expr: &str) -> Parsed<(Vec<String>, bool)> {
    let expr =
        if expr.to_lowercase().contains("partitioning") || expr.starts_with("SinglePartition") {
            match first_top_level_comma(expr) {
                Some(i) if i > 0 => java_trim(&expr[i + 1..]),
                _ => expr,
            }
        } else {
            expr
        };
    let keys: Vec<&str> = EQUI_JOIN_KEYS.find_iter(expr).map(|m| m.as_str()).collect();
    let rest = EQUI_JOIN_KEYS.replace_all(expr, "");
    let params: Vec<&str> = java_split(&rest, ",")
        .into_iter()
        .map(java_trim)
        .filter(|p| !p.is_empty())
        .collect();
    let join_type = match params.first() {
        Some(p) => java_trim(java_split(p, "(").first().ok_or(ParseFailure)?),
        None => "",
    };
    let build_side = params
        .iter()
        .find(|p| matches!(**p, "BuildLeft" | "BuildRight"))
        .copied()
        .unwrap_or("");
    let condition = params
        .iter()
        .skip_while(|p| matches!(**p, "BuildLeft" | "BuildRight") || p.contains(join_type))
        .map(|p| java_trim(p))
        .collect::<Vec<_>>()
        .join(",");
    let mut out = Vec::new();
    let joined = keys.join("::");
    for list in java_split(&joined, "::") {
        let list = java_trim(list);
        let list = strip_brackets(list);
        for key in java_split(&list, ",") {
            out.extend(all_function_names(java_trim(key)));
        }
    }
    if !condition.is_empty() {
        out.extend(conditional(&condition)?);
    }
    let smj_ok =
        !(build_side.is_empty() && !condition.is_empty() && smj_condition_unsupported(&condition));
    let side_types = match build_side {
        "BuildLeft" => BUILD_LEFT_JOIN_TYPES,
        "BuildRight" => BUILD_RIGHT_JOIN_TYPES,
        _ => ALL_JOIN_TYPES,
    };
    let ok = ALL_JOIN_TYPES.contains(&join_type) && side_types.contains(&join_type) && smj_ok;
    Ok((out, ok))
}

/// Sort-merge-join conditions the plugin cannot run: `cast(… as date)` or `lower(…) in (…)`.
fn smj_condition_unsupported(condition: &str) -> bool {
    java_split_re(condition, &AND_OR).into_iter().any(|c| {
        let c = java_trim(c);
        CAST_AS_DATE.is_match(c) || LOWER_IN.is_match(c)
    })
}

/// BroadcastNestedLoopJoin (`BuildSide, JoinType[, condition]`): the condition's expressions and
/// whether the join is supported.
pub fn nested_loop_join(expr: &str) -> Parsed<(Vec<String>, bool)> {
    let parts = java_split_limit(expr, ",", 3);
    if parts.len() < 2 {
        return Err(ParseFailure);
    }
    let (build_side, join_type) = (java_trim(parts[0]), java_trim(parts[1]));
    let exprs = if parts.len() > 2 {
        conditional(expr)?
    } else {
        Vec::new()
    };
    let type_ok = join_type != "FullOuter" && ALL_JOIN_TYPES.contains(&join_type);
    let side_bad = match build_side {
        "BuildLeft" => matches!(join_type, "LeftOuter" | "LeftSemi" | "LeftAnti"),
        "BuildRight" => join_type == "RightOuter",
        _ => false,
    };
    Ok((exprs, type_ok && !side_bad))
}

/// Splits at commas outside brackets and parentheses, trimming each piece (the write-operation
/// metadata reader of the reference tool).
pub fn top_level_components(input: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let (mut brackets, mut parens) = (0usize, 0usize);
    for c in input.chars() {
        if c == ',' && brackets == 0 && parens == 0 {
            out.push(java_trim(&current).to_string());
            current.clear();
            continue;
        }
        match c {
            '[' => brackets += 1,
            ']' => brackets = brackets.saturating_sub(1),
            '(' => parens += 1,
            ')' => parens = parens.saturating_sub(1),
            _ => {}
        }
        current.push(c);
    }
    if !current.is_empty() {
        out.push(java_trim(&current).to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn java_split_semantics() {
        assert_eq!(java_split("", ","), vec![""]);
        assert_eq!(java_split("a", ","), vec!["a"]);
        assert_eq!(java_split(",a,,", ","), vec!["", "a"]);
        assert!(java_split(",,", ",").is_empty());
        assert_eq!(java_split_limit("a,b,c,d", ",", 3), vec!["a", "b", "c,d"]);
        assert_eq!(java_split_limit("a,", ",", 3), vec!["a", ""]);
        assert_eq!(
            split_after(
                "[a ASC NULLS FIRST, b DESC NULLS LAST]",
                &["FIRST,", "LAST,"]
            ),
            vec!["[a ASC NULLS FIRST,", " b DESC NULLS LAST]"]
        );
        assert_eq!(split_after("x]", &["]"]), vec!["x]"]);
        assert_eq!(java_trim("\u{1}\t a \n"), "a");
        assert_eq!(java_trim("\u{a0}a"), "\u{a0}a");
    }

    #[test]
    fn function_names() {
        assert_eq!(
            project(
                "[cast(value#136 as string) AS value#144, CEIL(value#136) AS CEIL(value)#143L]"
            ),
            v(&["CEIL", "CEIL"])
        );
        assert_eq!(
            aggregate(
                "(keys=[num#83], functions=[partial_collect_list(letter#84, 0, 0), partial_count(letter#84)])"
            ),
            v(&["collect_list", "count"])
        );
        assert_eq!(
            aggregate("(keys=[substr(a#1, 1, 2)], functions=[finalmerge_sum(merge sum#5)])"),
            v(&["sum"])
        );
        assert!(aggregate("(keys=[a#1])").is_empty());
        assert_eq!(
            project("[parse_url(u#7, HOST, false) AS h#9, parse_url(u#7, REF) AS r#10]"),
            v(&["parse_url", "parse_url_ref"])
        );
        assert_eq!(
            project("[parse_url(concat(u#7, x), userinfo) AS a#1]"),
            v(&["parse_url_userinfo", "concat"])
        );
        assert_eq!(project("[parse_url(u#7, HOST"), v(&["parse_url"]));
    }

    #[test]
    fn sort_window_take() {
        assert_eq!(
            sort("[round(num#126, 0) ASC NULLS FIRST, letter#127 DESC NULLS LAST], true, 0"),
            v(&["round"])
        );
        assert_eq!(
            take_ordered(
                "(limit=2, orderBy=[FLOOR(z#796) ASC NULLS FIRST,CEIL(y#795L) ASC NULLS FIRST,y#1588L ASC NULLS FIRST], output=[x#794,y#796L,z#795])"
            ),
            v(&["FLOOR", "CEIL"])
        );
        assert_eq!(
            window(
                "[sum(cast(level#30 as bigint)) windowspecdefinition(device#29, id#28 ASC NULLS FIRST, specifiedwindowframe(RangeFrame, unboundedpreceding$(), currentrow$())) AS sum#35L, row_number() windowspecdefinition(device#29, id#28 ASC NULLS FIRST, specifiedwindowframe(RowFrame, unboundedpreceding$(), currentrow$())) AS row_number#41], [device#29], [id#28 ASC NULLS FIRST]"
            ),
            v(&["sum", "row_number"])
        );
        assert_eq!(
            window_group_limit(
                "[category#16], [amount#17 DESC NULLS LAST], dense_rank(amount#17), 2, Final"
            ),
            v(&["dense_rank"])
        );
        // two sort keys: the third argument is a column (the reference's quirk)
        assert!(
            window_group_limit(
                "[a#1], [b#2 ASC NULLS FIRST, c#3 ASC NULLS FIRST], row_number(), 3, Final"
            )
            .is_empty()
        );
    }

    #[test]
    fn conditions() {
        assert_eq!(
            conditional("((isnotnull(s_state#68) AND (s_state#68 = TN)) OR (hex(cast(value#0 as bigint)) = B))").unwrap(),
            v(&["isnotnull", "hex", "And", "EqualTo", "Or", "EqualTo"])
        );
        assert_eq!(
            conditional("(isnotnull(names#15) AND StartsWith(names#15, AND))").unwrap(),
            v(&["isnotnull", "StartsWith", "And"])
        );
        assert_eq!(
            conditional("NOT(a#1 <=> 2)").unwrap(),
            v(&["Not", "EqualNullSafe"])
        );
        assert_eq!(conditional("").unwrap(), Vec::<String>::new());
        // `+(` and `*(` make the reference throw
        assert_eq!(conditional("(a#1 = +(b#2))"), Err(ParseFailure));
        assert_eq!(conditional(" *(b#2)"), Err(ParseFailure));
    }

    #[test]
    fn joins() {
        assert_eq!(
            equi_join("[name#11, CEIL(DEPT#12)], [name#28, CEIL(DEPT_ID#27)], Inner, BuildLeft")
                .unwrap(),
            (v(&["CEIL", "CEIL"]), true)
        );
        assert_eq!(
            equi_join("[a#1], [b#2], LeftOuter, BuildLeft, false").unwrap(),
            (vec![], false)
        );
        assert_eq!(
            equi_join("[i#56], [i#86], ExistenceJoin(exists#86), BuildRight").unwrap(),
            (vec![], true)
        );
        assert_eq!(
            equi_join("[a#1], [b#2], LeftOuter, (upper(c#3) > d#4)").unwrap(),
            (v(&["upper", "GreaterThan"]), true)
        );
        assert!(
            !equi_join("[a#1], [b#2], Inner, (cast(c#3 as date) = d#4)")
                .unwrap()
                .1
        );
        assert_eq!(
            equi_join("hashpartitioning(x#1, 200), [a#1], [b#2], Inner, BuildRight").unwrap(),
            (vec![], true)
        );
        assert!(equi_join("[a#1], [b#2], LeftAnti").unwrap().1);
        assert_eq!(equi_join("").unwrap(), (vec![], false));
        assert_eq!(equi_join("(, x"), Err(ParseFailure));
        assert_eq!(
            nested_loop_join("BuildRight, LeftOuter, ((CEIL(cast(id1#1490 as double)) <= cast(id2#1496 as bigint)) AND (id1#1490 < id2#1496))").unwrap(),
            (v(&["CEIL", "LessThanOrEqual", "And", "LessThan"]), true)
        );
        assert!(!nested_loop_join("BuildRight, FullOuter").unwrap().1);
        assert!(!nested_loop_join("BuildLeft, LeftSemi").unwrap().1);
        assert!(nested_loop_join("BuildLeft, Inner").unwrap().1);
        assert_eq!(nested_loop_join("BuildLeft"), Err(ParseFailure));
    }

    #[test]
    fn components() {
        assert_eq!(
            top_level_components(
                "Execute X file:/a, false, Parquet, [compression=zstd, path=/a], Append, Map(a -> 1, b -> 2), [x, y]"
            ),
            v(&[
                "Execute X file:/a",
                "false",
                "Parquet",
                "[compression=zstd, path=/a]",
                "Append",
                "Map(a -> 1, b -> 2)",
                "[x, y]"
            ])
        );
    }
}
