//! QualX's plan signature (`hash` in its features.csv): a normalised copy of a SQL's initial
//! physical plan tree, each node's label MD5-hashed and the hashes summed as one big integer
//! (docs/reference/qualx-features.md §4.8). Plans that differ only in glue operators, exchange
//! placement or projection details get the same number.

use crate::events::SparkPlanInfo;
use md5::{Digest, Md5};

#[derive(Clone, Debug)]
struct Node {
    name: String,
    simple: String,
    children: Vec<Node>,
}

fn tree(p: &SparkPlanInfo) -> Node {
    Node {
        name: p.node_name.clone(),
        simple: p.simple_string.clone(),
        children: p.children.iter().map(tree).collect(),
    }
}

const REMOVE_EXACT: &[&str] = &["Exchange", "Sort"];
const REMOVE_PREFIX: &[&str] = &[
    "AdaptiveSparkPlan",
    "ColumnarToRow",
    "InputAdapter",
    "ReusedExchange",
    "WindowSort",
    "WholeStageCodegen",
    "GpuCoalesceBatches",
    "GpuColumnarExchange",
    "GpuColumnarToRow",
    "GpuRapidsDeltaWrite",
    "GpuRowToColumnar",
    "GpuShuffleCoalesce",
    "GpuSort",
    "RowToVeloxColumnar",
    "VeloxColumnarToRowExec",
    "VeloxRowToColumnar",
];
/// Renames by name prefix, in order; the last prefix the original name has wins.
const RENAME: &[(&str, &str)] = &[
    ("Scan parquet", "Scan parquet"),
    ("Scan ExistingRDD Delta Table State", "Scan ExistingRDD"),
    ("Scan ExistingRDD Delta Table Checkpoint", "Scan parquet"),
    ("BucketUnion", "Union"),
    ("ObjectHashAggregate", "HashAggregate"),
    ("ShuffledHashJoin", "SortMergeJoin"),
    (
        "Execute GpuInsertIntoHadoopFsRelationCommand",
        "Execute InsertIntoHadoopFsRelationCommand",
    ),
    (
        "Execute GpuInsertIntoHiveTable",
        "Execute InsertIntoHiveTable",
    ),
    ("GpuBroadcastExchange", "BroadcastExchange"),
    ("GpuBroadcastHashJoin", "BroadcastHashJoin"),
    ("GpuCoalesce", "Coalesce"),
    ("CpuCustomShuffleReader", "AQEShuffleRead"),
    ("GpuExpand", "Expand"),
    (
        "GpuExecute SaveIntoDataSourceCommand",
        "Execute SaveIntoDataSourceCommand",
    ),
    ("GpuFilter", "Filter"),
    ("GpuGenerate", "Generate"),
    ("GpuGlobalLimit", "GlobalLimit"),
    ("GpuHashAggregate", "HashAggregate"),
    ("GpuLocalLimit", "LocalLimit"),
    ("GpuProject", "Project"),
    ("GpuRunningWindow", "Window"),
    ("GpuScan parquet", "Scan parquet"),
    ("GpuShuffledHashJoin", "SortMergeJoin"),
    ("GpuUnion", "Union"),
    ("ProjectExecTransformer", "Project"),
];

/// Drop glue nodes (which must have one child) and rename; `None` when a glue node has several.
fn norm_node(mut n: Node) -> Option<Node> {
    n.children.retain(|c| c.name != "SubqueryAdaptiveBroadcast");
    let name = n.name.clone();
    if REMOVE_EXACT.contains(&name.as_str()) || REMOVE_PREFIX.iter().any(|p| name.starts_with(p)) {
        if n.children.len() != 1 {
            return None;
        }
        return norm_node(n.children.pop()?);
    }
    for (pre, rep) in RENAME {
        if name.starts_with(pre) {
            n.name = (*rep).to_string();
        }
    }
    n.children = n
        .children
        .into_iter()
        .map(norm_node)
        .collect::<Option<Vec<_>>>()?;
    Some(n)
}

/// Whether `n` starts the name path `path` (each next name on some child).
fn path_match(n: &Node, path: &[&str]) -> bool {
    match path.split_first() {
        Some((first, rest)) if n.name == *first => {
            rest.is_empty() || n.children.iter().any(|c| path_match(c, rest))
        }
        _ => false,
    }
}

fn norm_path(mut n: Node) -> Option<Node> {
    if path_match(&n, &["UnionWithLocalData", "Union"]) {
        let first = n.children.into_iter().next()?;
        return norm_path(first.children.into_iter().next()?);
    }
    // these pairs collapse into the outer node, which takes the inner node's children
    let collapse = if path_match(&n, &["GpuTopN", "GpuTopN"]) {
        n.name = "TakeOrderedAndProject".into();
        true
    } else {
        path_match(&n, &["Project", "Filter"])
    };
    let mut children = std::mem::take(&mut n.children);
    if collapse {
        children = children.into_iter().next()?.children;
    }
    n.children = children.into_iter().map(norm_path).collect::<Option<_>>()?;
    Some(n)
}

/// `n` with every node named in `rm` spliced out (its children take its place).
fn remove_nodes(mut n: Node, rm: &[&str]) -> Vec<Node> {
    let mut kept = Vec::new();
    for c in std::mem::take(&mut n.children) {
        kept.extend(remove_nodes(c, rm));
    }
    if rm.contains(&n.name.as_str()) {
        return kept;
    }
    n.children = kept;
    vec![n]
}

fn norm_bhj(mut n: Node) -> Node {
    if n.name == "BroadcastHashJoin" {
        let rm = [
            "Project",
            "BroadcastHashJoin",
            "BroadcastExchange",
            "SortMergeJoin",
        ];
        n.children = std::mem::take(&mut n.children)
            .into_iter()
            .flat_map(|c| remove_nodes(c, &rm))
            .collect();
    } else {
        n.children = std::mem::take(&mut n.children)
            .into_iter()
            .map(norm_bhj)
            .collect();
    }
    n
}

fn norm_smj(mut n: Node) -> Node {
    if path_match(&n, &["SortMergeJoin", "Project", "BroadcastHashJoin"]) {
        n.children = std::mem::take(&mut n.children)
            .into_iter()
            .flat_map(|c| remove_nodes(c, &["Project", "BroadcastHashJoin"]))
            .collect();
        n.name = "BroadcastHashJoin".into();
    } else {
        n.children = std::mem::take(&mut n.children)
            .into_iter()
            .map(norm_smj)
            .collect();
    }
    n
}

/// `#123` / `#45L` expression ids removed.
fn strip_ids(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'#' && i + 1 < b.len() && (b[i + 1].is_ascii_digit() || b[i + 1] == b'L') {
            i += 1;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'L') {
                i += 1;
            }
            continue;
        }
        let ch = s[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// Each `CASE WHEN … END` (shortest) replaced by `case_statement`.
fn replace_case(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("CASE WHEN") {
        match rest[i + 9..].find("END") {
            Some(j) => {
                out.push_str(&rest[..i]);
                out.push_str("case_statement");
                rest = &rest[i + 9 + j + 3..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

/// Python's `repr` of a list of strings.
fn py_list(items: &[String]) -> String {
    let q: Vec<String> = items
        .iter()
        .map(|s| {
            if s.contains('\'') && !s.contains('"') {
                format!("\"{}\"", s.replace('\\', "\\\\"))
            } else {
                format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
            }
        })
        .collect();
    format!("[{}]", q.join(", "))
}

/// The label of a Project node: its simple output columns (no expressions), sorted, first 10.
fn project_fields(simple: &str) -> String {
    let (Some(a), Some(b)) = (simple.find('['), simple.rfind(']')) else {
        return String::new();
    };
    if b <= a {
        return String::new();
    }
    let body = replace_case(&strip_ids(&simple[a + 1..b]));
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in body.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(body[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(body[start..].trim().to_string());
    let mut f: Vec<String> = parts
        .into_iter()
        .filter(|x| !x.contains('(') && !x.contains('['))
        .collect();
    f.sort();
    f.truncate(10);
    py_list(&f)
}

/// A 192-bit unsigned sum (little-endian 64-bit limbs).
#[derive(Default, Clone, Copy)]
struct Big([u64; 3]);

impl Big {
    fn add_u128(&mut self, v: u128) {
        let (lo, hi) = (v as u64, (v >> 64) as u64);
        let (a, c1) = self.0[0].overflowing_add(lo);
        let (b, c2) = self.0[1].overflowing_add(hi);
        let (b, c3) = b.overflowing_add(c1 as u64);
        self.0[0] = a;
        self.0[1] = b;
        self.0[2] = self.0[2].wrapping_add(c2 as u64 + c3 as u64);
    }

    fn add(&mut self, o: Big) {
        self.add_u128(((o.0[1] as u128) << 64) | o.0[0] as u128);
        self.0[2] = self.0[2].wrapping_add(o.0[2]);
    }

    fn to_decimal(self) -> String {
        let mut limbs = self.0;
        let mut chunks = Vec::new();
        const TEN19: u64 = 10_000_000_000_000_000_000;
        loop {
            let mut rem: u128 = 0;
            for l in limbs.iter_mut().rev() {
                let cur = (rem << 64) | *l as u128;
                *l = (cur / TEN19 as u128) as u64;
                rem = cur % TEN19 as u128;
            }
            chunks.push(rem as u64);
            if limbs.iter().all(|l| *l == 0) {
                break;
            }
        }
        let mut s = chunks.pop().unwrap_or(0).to_string();
        for c in chunks.iter().rev() {
            s.push_str(&format!("{c:019}"));
        }
        s
    }
}

fn h(n: &Node, depth: usize) -> Big {
    let label = if n.name == "Project" {
        format!("Project_{depth}_{}", project_fields(&n.simple))
    } else {
        format!("{}_{depth}", n.name)
    };
    let d = Md5::digest(label.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d);
    let mut sum = Big::default();
    sum.add_u128(u128::from_be_bytes(b));
    for c in &n.children {
        sum.add(h(c, depth + 1));
    }
    sum
}

/// The signature of a SQL's initial plan, as a decimal string; `None` when the plan has a glue
/// node with several children (QualX fails on those).
pub fn plan_hash(plan: &SparkPlanInfo) -> Option<String> {
    let n = norm_node(tree(plan))?;
    let n = norm_path(n)?;
    let n = norm_smj(norm_bhj(n));
    Some(h(&n, 0).to_decimal())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_sums_and_decimal() {
        let mut b = Big::default();
        b.add_u128(u128::MAX);
        b.add_u128(1);
        assert_eq!(b.to_decimal(), "340282366920938463463374607431768211456");
        assert_eq!(Big::default().to_decimal(), "0");
    }

    #[test]
    fn project_fields_like_python() {
        assert_eq!(
            project_fields(
                "Project [a#1, b#2L, (c#3 + 1) AS d#4, CASE WHEN x#5 THEN 1 ELSE 0 END AS e#6]"
            ),
            "['a', 'b', 'case_statement AS e']"
        );
        assert_eq!(project_fields("Project"), "");
    }
}
