//! Fleet scale: `--shard i/n` splits the logs between n runners (each log read by exactly one,
//! whatever the order of the listing), a retried shard redoes nothing, and bad shards are
//! explained.

mod common;

use common::{err, out};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn inputs() -> Vec<String> {
    ["datasets/sample", "datasets/fixtures/analyze"]
        .iter()
        .map(|p| repo().join(p).display().to_string())
        .collect()
}

fn aether(home: &Path, args: &[&str]) -> std::process::Output {
    common::aether(home, args)
}

/// `SELECT … FROM applications` rows as sorted lines.
fn apps(home: &Path, source: &[&str]) -> Vec<String> {
    let mut args = vec!["sql"];
    args.extend_from_slice(source);
    args.extend_from_slice(&[
        "--format",
        "csv",
        "SELECT app_id, event_log FROM applications ORDER BY app_id",
    ]);
    let o = aether(home, &args);
    assert!(o.status.success(), "{}", err(&o));
    let mut rows: Vec<String> = out(&o).lines().skip(1).map(String::from).collect();
    rows.sort();
    rows
}

fn ingested(o: &std::process::Output) -> (usize, usize) {
    let e = err(o);
    let n = |after: &str| -> usize {
        e.split(after)
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no {after:?} in {e}"))
    };
    (n("ingested "), n("skipped "))
}

#[test]
fn shards_split_the_logs_once_and_a_retried_shard_redoes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let ins = inputs();
    let ins: Vec<&str> = ins.iter().map(String::as_str).collect();
    let all_wh = d.path().join("all").display().to_string();
    let mut args = vec!["ingest"];
    args.extend(&ins);
    args.extend(["--out", all_wh.as_str()]);
    let o = aether(&home, &args);
    assert!(o.status.success(), "{}", err(&o));
    let (total, _) = ingested(&o);
    assert!(total >= 10, "{}", err(&o));

    // three shards into one warehouse, as three runners would
    let wh = d.path().join("sharded").display().to_string();
    let mut per_shard = Vec::new();
    for i in 0..3 {
        let shard = format!("{i}/3");
        let mut args = vec!["ingest"];
        args.extend(&ins);
        args.extend(["--out", wh.as_str(), "--shard", shard.as_str()]);
        let o = aether(&home, &args);
        assert!(o.status.success(), "shard {shard}: {}", err(&o));
        per_shard.push(ingested(&o).0);
    }
    assert_eq!(per_shard.iter().sum::<usize>(), total, "{per_shard:?}");
    assert!(per_shard.iter().all(|&n| n > 0), "{per_shard:?}");
    // the same applications as one unsharded ingest, none twice
    let sharded = apps(&home, &["--warehouse", &wh]);
    assert_eq!(sharded, apps(&home, &["--warehouse", &all_wh]));
    let mut ids: Vec<&str> = sharded
        .iter()
        .map(|r| r.split(',').next().unwrap())
        .collect();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "an app ingested twice: {sharded:?}");

    // a retried shard (the runner's retry after a crash) reads nothing again
    let mut args = vec!["ingest"];
    args.extend(&ins);
    args.extend(["--out", wh.as_str(), "--shard", "1/3"]);
    let o = aether(&home, &args);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(ingested(&o), (0, per_shard[1]), "{}", err(&o));

    // a shard is the same logs whatever the order of the inputs, for sql and analyze too
    let rev: Vec<&str> = ins.iter().rev().copied().collect();
    let shard_of = |inputs: &[&str]| {
        let mut a = vec!["--event_log"];
        a.extend(inputs);
        a.extend(["--shard", "2/3"]);
        apps(&home, &a)
    };
    let s2 = shard_of(&ins);
    assert_eq!(s2.len(), per_shard[2]);
    assert_eq!(s2, shard_of(&rev));
    let mut a = vec!["analyze", "--event_log"];
    a.extend(&ins);
    a.extend(["--shard", "2/3", "--format", "json"]);
    let o = aether(&home, &a);
    assert!(o.status.success(), "{}", err(&o));
    let reports: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let analyzed = reports
        .as_array()
        .map(|a| a.len())
        .unwrap_or_else(|| reports["apps"].as_array().map(|a| a.len()).unwrap_or(0));
    assert_eq!(analyzed, s2.len(), "{}", out(&o));

    // bad shards: said, nothing read
    for bad in ["3/3", "1", "x/2", "0/0"] {
        let o = aether(
            &home,
            &["sql", "--event_log", ins[0], "--shard", bad, "SELECT 1"],
        );
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(err(&o).contains("--shard"), "{bad}: {}", err(&o));
    }
}
