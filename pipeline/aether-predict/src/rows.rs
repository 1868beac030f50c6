//! Query results as JSON rows, by app, and the readers of their values: what qualify, the
//! AutoTuner and profile share.

use std::collections::HashMap;

use crate::error::Result;
use aether_engine::SessionContext;
use serde_json::Value;

/// One result row, by column name.
pub(crate) type Row = serde_json::Map<String, Value>;

pub(crate) async fn rows(ctx: &SessionContext, sql: &str) -> Result<Vec<Row>> {
    Ok(aether_engine::analyze::json_rows(ctx, sql).await?)
}

/// The rows of `sql` (which must return an `app_id` column), by app id.
pub(crate) async fn rows_by_app(
    ctx: &SessionContext,
    sql: &str,
) -> Result<HashMap<String, Vec<Row>>> {
    let mut out: HashMap<String, Vec<Row>> = HashMap::new();
    for r in rows(ctx, sql).await? {
        out.entry(s(r.get("app_id"))).or_default().push(r);
    }
    Ok(out)
}

pub(crate) fn s(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    }
}

pub(crate) fn i(v: Option<&Value>) -> Option<i64> {
    v.and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
}

pub(crate) fn f(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}
