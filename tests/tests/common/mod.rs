//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::SessionContext;
use std::path::PathBuf;

/// The rows of a CSV file with a header, each as column name → value. Panics naming the file
/// when it cannot be read.
pub fn csv_rows(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// The rows of a CSV file by the value of column `key` (a later row with the same key wins).
pub fn csv_by(
    path: &std::path::Path,
    key: &str,
) -> std::collections::HashMap<String, std::collections::HashMap<String, String>> {
    csv_rows(path)
        .into_iter()
        .map(|r| (r[key].clone(), r))
        .collect()
}

/// `../shared` next to the repository (or `$AETHER_SHARED`). Panics when missing: CI must
/// have it, and a test that silently skips would hide that.
pub fn shared() -> PathBuf {
    let p = std::env::var_os("AETHER_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    assert!(
        p.join("datasets/real-spark-manifest.csv").exists(),
        "the shared datasets are missing at {} (set AETHER_SHARED)",
        p.display()
    );
    p
}

/// The bundled sample's logs (datasets/sample), by name: six files and a rolling log folder.
pub const SAMPLE_LOGS: [&str; 7] = [
    "eventlog_v2_local-1796009941265",
    "local-1796009671201",
    "local-1796009777604",
    "local-1796009829641.lz4",
    "local-1796009839341.zstd",
    "local-1796009848199.snappy",
    "local-1796393658133.zstd",
];

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Run a query whose columns are all Int64 or Utf8, returning rows of strings ("NULL" for null).
pub fn rows(ctx: &SessionContext, sql: &str) -> Vec<Vec<String>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let batches = rt
        .block_on(async { ctx.sql(sql).await?.collect().await })
        .unwrap_or_else(|e| panic!("query failed: {sql}: {e}"));
    let mut out = Vec::new();
    for b in &batches {
        for r in 0..b.num_rows() {
            let mut row = Vec::new();
            for c in b.columns() {
                if c.is_null(r) {
                    row.push("NULL".to_string());
                } else if let Some(a) = c.as_primitive_opt::<Int64Type>() {
                    row.push(a.value(r).to_string());
                } else if let Some(a) = c.as_string_opt::<i32>() {
                    row.push(a.value(r).to_string());
                } else if let Some(a) = c.as_boolean_opt() {
                    row.push(a.value(r).to_string());
                } else {
                    let s = datafusion::arrow::util::display::array_value_to_string(c, r).unwrap();
                    row.push(s);
                }
            }
            out.push(row);
        }
    }
    out
}

/// Each `(key, sql)`: the single value `sql` returns must equal `gt[key]` (Spark's number).
pub fn assert_ground_truth(ctx: &SessionContext, gt: &serde_json::Value, checks: &[(&str, &str)]) {
    let mut wrong = Vec::new();
    for (key, sql) in checks {
        let want = gt[*key]
            .as_i64()
            .unwrap_or_else(|| panic!("{key} missing from the ground truth"))
            .to_string();
        let got = rows(ctx, sql)
            .first()
            .and_then(|r| r.first().cloned())
            .unwrap_or_default();
        if got != want {
            wrong.push(format!("{key}: want {want}, got {got} ({sql})"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The checks of Spark's stage/task/job ground truth common to the shared records.
pub const GT_CHECKS: &[(&str, &str)] = &[
    ("gt_jobs", "SELECT count(*) FROM jobs"),
    (
        "gt_jobs_succeeded",
        "SELECT count(*) FROM jobs WHERE status = 'succeeded'",
    ),
    ("gt_stage_attempts", "SELECT count(*) FROM stages"),
    (
        "gt_stages_complete",
        "SELECT count(*) FROM stages WHERE status = 'complete'",
    ),
    (
        "gt_stages_skipped",
        "SELECT count(*) FROM stages WHERE status = 'skipped'",
    ),
    (
        "gt_tasks_completed",
        "SELECT count(*) FROM tasks WHERE status = 'success'",
    ),
    (
        "gt_sum_executorRunTime",
        "SELECT sum(executor_run_time_ms) FROM tasks",
    ),
    (
        "gt_sum_shuffleWriteRecords",
        "SELECT sum(shuffle_records_written) FROM tasks",
    ),
    (
        "gt_sum_shuffleReadRecords",
        "SELECT sum(shuffle_records_read) FROM tasks",
    ),
    ("gt_sql_executions", "SELECT count(*) FROM sql_executions"),
];

/// The manifest rows of the 38 logs of `real-spark-4.3.0/` and their paths.
pub fn real_spark_logs() -> (Vec<std::collections::HashMap<String, String>>, Vec<String>) {
    let datasets = shared().join("datasets");
    let mut rdr = csv::Reader::from_path(datasets.join("real-spark-manifest.csv")).unwrap();
    let rows: Vec<std::collections::HashMap<String, String>> = rdr
        .deserialize()
        .map(|r| r.unwrap())
        .filter(|r: &std::collections::HashMap<String, String>| {
            r["file"].starts_with("real-spark-4.3.0/")
        })
        .collect();
    assert_eq!(rows.len(), 38, "manifest rows for real-spark-4.3.0");
    let inputs = rows
        .iter()
        .map(|r| {
            datasets
                .join(r["file"].trim_end_matches('/'))
                .display()
                .to_string()
        })
        .collect();
    (rows, inputs)
}

/// A session over the tables of `ing`, with the UDFs and the views (default settings).
pub fn session_with_views(ing: &aether_ingest::Ingested) -> SessionContext {
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, ing).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(aether_engine::register_views(&ctx, &Default::default()))
        .unwrap();
    ctx
}

/// The `.zstd` event logs of a fixture folder, sorted.
pub fn zstd_logs(dir: &std::path::Path) -> Vec<String> {
    let mut logs: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "zstd"))
        .map(|p| p.display().to_string())
        .collect();
    logs.sort();
    logs
}
