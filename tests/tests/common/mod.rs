//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::SessionContext;
use std::path::PathBuf;

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
