//! `aether analyze`: a short report per application from the views — summary figures, the top
//! bottlenecks with advice, the slowest stages and SQL executions, the GPU-unsupported share.

use crate::{EngineError, Result};
use datafusion::prelude::SessionContext;
use serde_json::{Map, Value};
use std::fmt::Write;

/// One JSON object per row of `sql`.
pub async fn json_rows(ctx: &SessionContext, sql: &str) -> Result<Vec<Map<String, Value>>> {
    let (_, batches) = crate::query(ctx, sql).await?;
    let buf = crate::json_array(&batches)?;
    if buf.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_slice(&buf).map_err(|e| EngineError::Other(e.to_string()))
}

fn key(r: &Map<String, Value>) -> (String, String) {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    (s("app_id"), s("app_attempt_id"))
}

/// The report of every application in `ctx`: one JSON object per app with `summary`,
/// `gpu`, `bottlenecks`, `slowest_stages` and `slowest_sqls` (at most `top` of each list).
pub async fn analyze(ctx: &SessionContext, top: usize) -> Result<Vec<Value>> {
    let apps = json_rows(
        ctx,
        "SELECT a.*, u.app_duration_ms AS tool_app_duration_ms, u.sql_stage_durations_sum_ms,
                u.unsupported_stage_duration_ms, u.unsupported_stage_duration_pct,
                u.unsupported_operators
         FROM app_summary a
         LEFT JOIN unsupported_summary u
           ON u.app_id = a.app_id AND (u.app_attempt_id IS NOT DISTINCT FROM a.app_attempt_id)
         ORDER BY a.app_id, a.app_attempt_id",
    )
    .await?;
    let findings = json_rows(
        ctx,
        &format!(
            "SELECT * FROM (
               SELECT b.*, ROW_NUMBER() OVER (PARTITION BY app_id, app_attempt_id ORDER BY
                 CASE severity WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END,
                 value / NULLIF(threshold, 0) DESC, kind, stage_id) AS rank
               FROM bottlenecks b) t
             WHERE rank <= {top} ORDER BY app_id, app_attempt_id, rank"
        ),
    )
    .await?;
    let stages = json_rows(
        ctx,
        &format!(
            "SELECT * FROM (
               SELECT app_id, app_attempt_id, stage_id, stage_attempt_id, sql_id, name, status,
                      duration_ms, tasks_count, task_duration_p50_ms, task_duration_max_ms,
                      skew_ratio, task_time_ms, disk_spill_bytes, shuffle_read_bytes,
                      ROW_NUMBER() OVER (PARTITION BY app_id, app_attempt_id
                                         ORDER BY duration_ms DESC NULLS LAST, stage_id) AS rank
               FROM stage_summary) t
             WHERE rank <= {top} AND duration_ms IS NOT NULL
             ORDER BY app_id, app_attempt_id, rank"
        ),
    )
    .await?;
    let sqls = json_rows(
        ctx,
        &format!(
            "SELECT * FROM (
               SELECT app_id, app_attempt_id, sql_id, description, status, duration_ms,
                      jobs_count, task_time_ms, rows_read, rows_written,
                      ROW_NUMBER() OVER (PARTITION BY app_id, app_attempt_id
                                         ORDER BY duration_ms DESC NULLS LAST, sql_id) AS rank
               FROM sql_summary) t
             WHERE rank <= {top} AND duration_ms IS NOT NULL
             ORDER BY app_id, app_attempt_id, rank"
        ),
    )
    .await?;
    let pick = |rows: &[Map<String, Value>], k: &(String, String)| -> Vec<Value> {
        rows.iter()
            .filter(|r| &key(r) == k)
            .map(|r| Value::Object(r.clone()))
            .collect()
    };
    Ok(apps
        .into_iter()
        .map(|mut a| {
            let k = key(&a);
            let mut gpu = Map::new();
            for f in [
                "tool_app_duration_ms",
                "sql_stage_durations_sum_ms",
                "unsupported_stage_duration_ms",
                "unsupported_stage_duration_pct",
                "unsupported_operators",
            ] {
                if let Some(v) = a.remove(f) {
                    gpu.insert(f.trim_start_matches("tool_").to_string(), v);
                }
            }
            let mut o = Map::new();
            o.insert("app_id".into(), Value::String(k.0.clone()));
            if !k.1.is_empty() {
                o.insert("app_attempt_id".into(), Value::String(k.1.clone()));
            }
            o.insert("summary".into(), Value::Object(a));
            o.insert("gpu".into(), Value::Object(gpu));
            o.insert("bottlenecks".into(), Value::Array(pick(&findings, &k)));
            o.insert("slowest_stages".into(), Value::Array(pick(&stages, &k)));
            o.insert("slowest_sqls".into(), Value::Array(pick(&sqls, &k)));
            Value::Object(o)
        })
        .collect())
}

fn num(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_f64).unwrap_or(0.0)
}

fn int(v: Option<&Value>) -> String {
    let n = num(v) as i64;
    let s = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

fn bytes(v: Option<&Value>) -> String {
    aether_udfs::format_bytes::human_bytes(num(v)).unwrap_or_else(|| "?".into())
}

fn secs(v: Option<&Value>) -> String {
    match v.and_then(Value::as_f64) {
        Some(ms) if ms >= 10_000.0 => format!("{:.0} s", ms / 1000.0),
        Some(ms) => format!("{:.1} s", ms / 1000.0),
        None => "?".into(),
    }
}

fn pct(v: Option<&Value>) -> String {
    match v.and_then(Value::as_f64) {
        Some(r) => format!("{:.0}%", r * 100.0),
        None => "-".into(),
    }
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(x) => x.to_string(),
    }
}

/// The human report of [`analyze`]'s output.
/// The reports in `format`: text, CSV, or JSON (pretty).
pub fn render(reports: &[Value], format: crate::OutputFormat) -> Result<String> {
    Ok(match format {
        crate::OutputFormat::Table => render_text(reports),
        crate::OutputFormat::Csv => render_csv(reports)?,
        crate::OutputFormat::Json => serde_json::to_string_pretty(reports)
            .map_err(|e| crate::EngineError::Other(e.to_string()))?,
    })
}

pub fn render_text(reports: &[Value]) -> String {
    let mut out = String::new();
    for r in reports {
        let s = &r["summary"];
        let g = s.get("app_name");
        let _ = writeln!(
            out,
            "{} ({}{}) — Spark {}, {}, {}",
            text(g),
            text(r.get("app_id")),
            r.get("app_attempt_id")
                .map(|a| format!(" attempt {}", text(Some(a))))
                .unwrap_or_default(),
            text(s.get("spark_version")),
            secs(s.get("duration_ms")),
            if s.get("complete").and_then(Value::as_bool) == Some(true) {
                "complete"
            } else {
                "incomplete"
            }
        );
        let _ = writeln!(
            out,
            "  executors {} (peak {}, avg {:.1}) · cores peak {} (avg {:.1})",
            int(s.get("executors_count")),
            int(s.get("executors_peak_count")),
            num(s.get("executors_avg_count")),
            int(s.get("cores_peak_count")),
            num(s.get("cores_avg_count")),
        );
        let _ = writeln!(
            out,
            "  jobs {} ({} failed) · stage attempts {} ({} failed) · tasks {} ({} failed, {} killed) · SQL {} ({} failed)",
            int(s.get("jobs_count")),
            int(s.get("jobs_failed_count")),
            int(s.get("stage_attempts_count")),
            int(s.get("stages_failed_count")),
            int(s.get("tasks_count")),
            int(s.get("tasks_failed_count")),
            int(s.get("tasks_killed_count")),
            int(s.get("sql_count")),
            int(s.get("sql_failed_count")),
        );
        let _ = writeln!(
            out,
            "  task time {} · CPU {} of run time · GC {}",
            secs(s.get("task_time_ms")),
            pct(s.get("cpu_time_ratio")),
            pct(s.get("gc_ratio")),
        );
        let _ = writeln!(
            out,
            "  read {} rows / {} · written {} rows / {} · shuffle {} read, {} written · spill {} memory, {} disk",
            int(s.get("rows_read")),
            bytes(s.get("bytes_read")),
            int(s.get("rows_written")),
            bytes(s.get("bytes_written")),
            bytes(s.get("shuffle_read_bytes")),
            bytes(s.get("shuffle_write_bytes")),
            bytes(s.get("memory_spill_bytes")),
            bytes(s.get("disk_spill_bytes")),
        );
        let gpu = &r["gpu"];
        let ops: Vec<String> = gpu
            .get("unsupported_operators")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|v| text(Some(v))).collect())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  GPU (RAPIDS): {:.1}% of SQL stage time in stages with unsupported operators{}",
            num(gpu.get("unsupported_stage_duration_pct")),
            if ops.is_empty() {
                String::new()
            } else {
                format!("; unsupported operators: {}", ops.join(", "))
            }
        );
        let list = |k: &str| r[k].as_array().cloned().unwrap_or_default();
        let findings = list("bottlenecks");
        if findings.is_empty() {
            let _ = writeln!(out, "  bottlenecks: none above the thresholds");
        } else {
            let _ = writeln!(out, "  bottlenecks:");
            for f in &findings {
                let mut at = Vec::new();
                if !f["stage_id"].is_null() {
                    at.push(format!("stage {}", int(f.get("stage_id"))));
                }
                if !f["sql_id"].is_null() {
                    at.push(format!("SQL {}", int(f.get("sql_id"))));
                }
                if !f["executor_id"].is_null() {
                    at.push(format!("executor {}", text(f.get("executor_id"))));
                }
                let _ = writeln!(
                    out,
                    "    {:<6} {:<17} {}: {}",
                    text(f.get("severity")),
                    text(f.get("kind")),
                    at.join(", "),
                    text(f.get("advice"))
                );
            }
        }
        let stages = list("slowest_stages");
        if !stages.is_empty() {
            let _ = writeln!(out, "  slowest stages:");
            for st in &stages {
                let _ = writeln!(
                    out,
                    "    stage {}.{}{} {} · {} tasks · median {} ms, max {} ms{}",
                    int(st.get("stage_id")),
                    int(st.get("stage_attempt_id")),
                    if st["sql_id"].is_null() {
                        String::new()
                    } else {
                        format!(" (SQL {})", int(st.get("sql_id")))
                    },
                    secs(st.get("duration_ms")),
                    int(st.get("tasks_count")),
                    int(st.get("task_duration_p50_ms")),
                    int(st.get("task_duration_max_ms")),
                    st.get("skew_ratio")
                        .and_then(Value::as_f64)
                        .map(|x| format!(" · skew {x:.1}"))
                        .unwrap_or_default(),
                );
            }
        }
        let sqls = list("slowest_sqls");
        if !sqls.is_empty() {
            let _ = writeln!(out, "  slowest SQL:");
            for q in &sqls {
                let d: String = text(q.get("description")).chars().take(60).collect();
                let _ = writeln!(
                    out,
                    "    SQL {} {} · {} job(s) · {} · {}",
                    int(q.get("sql_id")),
                    secs(q.get("duration_ms")),
                    int(q.get("jobs_count")),
                    text(q.get("status")),
                    d.replace('\n', " ")
                );
            }
        }
        out.push('\n');
    }
    out
}

/// [`analyze`]'s output in long CSV form: `app_id,app_attempt_id,section,rank,name,value,detail`
/// (summary figures, then the bottlenecks, slowest stages and slowest SQLs).
pub fn render_csv(reports: &[Value]) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut rows: Vec<[String; 7]> = Vec::new();
    let mut row = |a: &str,
                   at: &str,
                   sec: &str,
                   rank: String,
                   name: String,
                   value: String,
                   detail: String| {
        rows.push([
            a.to_string(),
            at.to_string(),
            sec.to_string(),
            rank,
            name,
            value,
            detail,
        ]);
    };
    for r in reports {
        let a = text(r.get("app_id"));
        let at = text(r.get("app_attempt_id"));
        for sec in ["summary", "gpu"] {
            if let Some(m) = r[sec].as_object() {
                for (k, v) in m {
                    row(
                        &a,
                        &at,
                        sec,
                        String::new(),
                        k.clone(),
                        text(Some(v)),
                        String::new(),
                    );
                }
            }
        }
        for f in r["bottlenecks"].as_array().into_iter().flatten() {
            row(
                &a,
                &at,
                "bottleneck",
                text(f.get("rank")),
                text(f.get("kind")),
                text(f.get("value")),
                format!(
                    "severity={} stage={} sql={} executor={} threshold={}: {}",
                    text(f.get("severity")),
                    text(f.get("stage_id")),
                    text(f.get("sql_id")),
                    text(f.get("executor_id")),
                    text(f.get("threshold")),
                    text(f.get("advice"))
                ),
            );
        }
        for st in r["slowest_stages"].as_array().into_iter().flatten() {
            row(
                &a,
                &at,
                "slowest_stage",
                text(st.get("rank")),
                format!(
                    "{}.{}",
                    text(st.get("stage_id")),
                    text(st.get("stage_attempt_id"))
                ),
                text(st.get("duration_ms")),
                format!(
                    "sql={} tasks={}",
                    text(st.get("sql_id")),
                    text(st.get("tasks_count"))
                ),
            );
        }
        for q in r["slowest_sqls"].as_array().into_iter().flatten() {
            row(
                &a,
                &at,
                "slowest_sql",
                text(q.get("rank")),
                text(q.get("sql_id")),
                text(q.get("duration_ms")),
                text(q.get("description")),
            );
        }
    }
    let csv_err = |e: csv::Error| EngineError::Other(e.to_string());
    w.write_record([
        "app_id",
        "app_attempt_id",
        "section",
        "rank",
        "name",
        "value",
        "detail",
    ])
    .map_err(csv_err)?;
    for r in &rows {
        w.write_record(r).map_err(csv_err)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| EngineError::Other(e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| EngineError::Other(e.to_string()))
}
