//! `gpu_operator::classify` against the reference tool's per-node results (golden `execs.csv`
//! of spark-rapids-tools 26.08.4 on the shared dev logs).
//!
//! `golden_nodes.tsv` (committed) holds a representative sample; `full_golden_dump` (ignored)
//! compares every node of a full dump (`AETHER_GOLDEN_DUMP`: one TSV row per non-cluster node
//! of every golden app, as described at `dump_cases`; made outside the repository by joining
//! `aether sql` output with the golden `execs.csv`) and prints the agreement.

use aether_udfs::gpu_operator::{OperatorInfo, classify};
use std::collections::BTreeMap;

/// One row: node name, description, delta enabled, and the golden exec name, supported, action.
struct Case {
    node_name: String,
    description: String,
    delta_enabled: bool,
    exec_name: String,
    supported: bool,
    action: String,
    /// Where the row comes from (app, SQL id, node id), when known.
    origin: String,
    /// Plan-level rules that decide this node's golden result (not modelled by `classify`).
    plan_flags: String,
}

/// Reverses the dump's escaping (`\\`, `\t`, `\n`, `\r`).
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The fixture's rows: `node_name, description, delta_enabled, exec_name, supported, action`.
fn fixture_cases(text: &str) -> Vec<Case> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<String> = l.split('\t').map(unescape).collect();
            assert_eq!(f.len(), 6, "fixture row {l:?}");
            Case {
                node_name: f[0].clone(),
                description: f[1].clone(),
                delta_enabled: f[2] == "true",
                exec_name: f[3].clone(),
                supported: f[4] == "true",
                action: f[5].clone(),
                origin: String::new(),
                plan_flags: String::new(),
            }
        })
        .collect()
}

/// The dump's rows: `app, sql_id, node_id, node_name, description, delta_enabled, exec_name,
/// supported, action, flags`.
fn dump_cases(text: &str) -> Vec<Case> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<String> = l.split('\t').map(unescape).collect();
            assert_eq!(f.len(), 10, "dump row {l:?}");
            Case {
                node_name: f[3].clone(),
                description: f[4].clone(),
                delta_enabled: f[5] == "true",
                exec_name: f[6].clone(),
                supported: f[7] == "true",
                action: f[8].clone(),
                origin: format!("{} sql {} node {}", f[0], f[1], f[2]),
                plan_flags: f[9].clone(),
            }
        })
        .collect()
}

fn check(case: &Case) -> (OperatorInfo, bool, bool, bool) {
    let info = classify(&case.node_name, &case.description, case.delta_enabled);
    let name_ok = info.exec_name == case.exec_name;
    let supported_ok = info.supported == case.supported;
    let action_ok = info.action() == case.action;
    (info, name_ok, supported_ok, action_ok)
}

#[test]
fn golden_fixture() {
    let cases = fixture_cases(include_str!("golden_nodes.tsv"));
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let (info, name_ok, supported_ok, action_ok) = check(case);
        if !(name_ok && supported_ok && action_ok) {
            failures.push(format!(
                "{:?} / {:?}: got ({:?}, {}, {}), want ({:?}, {}, {})",
                case.node_name,
                case.description.chars().take(120).collect::<String>(),
                info.exec_name,
                info.supported,
                info.action(),
                case.exec_name,
                case.supported,
                case.action
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a full golden dump (AETHER_GOLDEN_DUMP, default /tmp/qv/nodes.tsv)"]
fn full_golden_dump() {
    let path =
        std::env::var("AETHER_GOLDEN_DUMP").unwrap_or_else(|_| "/tmp/qv/nodes.tsv".to_string());
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("no dump at {path}; skipped");
        return;
    };
    let cases = dump_cases(&text);
    let (mut names, mut supported, mut actions, mut all) = (0, 0, 0, 0);
    let mut by_flag: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut misses: BTreeMap<String, usize> = BTreeMap::new();
    // optionally, every classification (for comparing details with unsupported_operators.csv)
    let mut out = std::env::var("AETHER_CLASSIFY_OUT")
        .ok()
        .map(|_| String::new());
    for case in &cases {
        let (info, name_ok, supported_ok, action_ok) = check(case);
        if let Some(out) = out.as_mut() {
            let exprs: Vec<String> = info
                .unsupported_expressions
                .iter()
                .map(|(n, d)| format!("{n}={d}"))
                .collect();
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                case.origin,
                info.exec_name,
                info.op_type,
                info.details.clone().unwrap_or_default(),
                info.action(),
                exprs.join("|"),
                info.expressions.join("|")
            ));
        }
        names += usize::from(name_ok);
        supported += usize::from(supported_ok);
        actions += usize::from(action_ok);
        let ok = name_ok && supported_ok && action_ok;
        all += usize::from(ok);
        let flag = if case.plan_flags.is_empty() {
            "-".to_string()
        } else {
            case.plan_flags.clone()
        };
        let e = by_flag.entry(flag).or_default();
        e.0 += 1;
        e.1 += usize::from(ok);
        if !ok {
            let key = format!(
                "{} [{}]: got ({}, {}, {}) want ({}, {}, {})",
                case.node_name,
                case.plan_flags,
                info.exec_name,
                info.supported,
                info.action(),
                case.exec_name,
                case.supported,
                case.action
            );
            if *misses.entry(key.clone()).or_default() == 0 {
                eprintln!("first miss {key}: {}", case.origin);
            }
            *misses.get_mut(&key).expect("inserted") += 1;
        }
    }
    if let (Some(out), Ok(path)) = (out, std::env::var("AETHER_CLASSIFY_OUT")) {
        std::fs::write(path, out).expect("writable");
    }
    println!(
        "nodes {}: exec name {names}, supported {supported}, action {actions}, all three {all}",
        cases.len()
    );
    for (flag, (n, ok)) in &by_flag {
        println!("  plan flags {flag:>24}: {ok}/{n}");
    }
    for (k, n) in &misses {
        println!("  {n:>4} x {k}");
    }
}
