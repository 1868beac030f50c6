//! The AutoTuner's [`Inputs`] of every app of a session, read from its tables and views, one
//! query per signal for all apps at once. Qualification reads what its rules need (the Spark
//! properties and version are its own); profiling also reads the GPU run's signals.

use std::collections::{BTreeSet, HashMap};

use aether_engine::SessionContext;
use serde_json::Value;

use super::{Inputs, Mode};
use crate::error::Result;
use crate::rows::{Row, i, rows_by_app};

type All = HashMap<String, Inputs>;

fn int(v: Option<&Value>) -> i64 {
    i(v).unwrap_or(0)
}

fn text<'a>(r: &'a Row, k: &str) -> &'a str {
    r.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Read the rules' inputs of every app in `ctx`, by app id. For [`Mode::Qualification`] the
/// Spark properties and version (`props`, `spark_version`) are left for the caller to fill in.
pub async fn inputs(ctx: &SessionContext, mode: Mode) -> Result<HashMap<String, Inputs>> {
    let mut all = All::new();
    executors(ctx, &mut all).await?;
    stages(ctx, mode, &mut all).await?;
    sql_io(ctx, &mut all).await?;
    file_scans(ctx, &mut all).await?;
    if mode == Mode::Profiling {
        run(ctx, &mut all).await?;
        gc_ratio(ctx, &mut all).await?;
        failures(ctx, &mut all).await?;
        gpu_footprint(ctx, &mut all).await?;
    }
    Ok(all)
}

/// Executors: the most cores, the most alive at once, their hosts (the driver only in local
/// mode).
async fn executors(ctx: &SessionContext, all: &mut All) -> Result<()> {
    for (app, ex) in rows_by_app(
        ctx,
        "SELECT app_id, executor_id, host, cores, added_ms, removed_ms FROM executors
         WHERE cores IS NOT NULL",
    )
    .await?
    {
        let inp = all.entry(app).or_default();
        let is_driver = |e: &&Row| e.get("executor_id").and_then(Value::as_str) == Some("driver");
        let workers: Vec<&Row> = if ex.iter().any(|e| !is_driver(&e)) {
            ex.iter().filter(|e| !is_driver(e)).collect()
        } else {
            ex.iter().collect()
        };
        inp.hosts = workers
            .iter()
            .filter_map(|e| e.get("host").and_then(Value::as_str))
            .collect::<BTreeSet<_>>()
            .len() as i64;
        if workers.is_empty() {
            continue;
        }
        let cores = workers
            .iter()
            .map(|e| int(e.get("cores")))
            .max()
            .unwrap_or(1);
        let mut events: Vec<(i64, i64)> = Vec::new();
        for e in &workers {
            events.push((int(e.get("added_ms")), 1));
            if e.get("removed_ms").is_some_and(|v| !v.is_null()) {
                events.push((int(e.get("removed_ms")), -1));
            }
        }
        // removals before additions at the same instant
        events.sort();
        let (mut alive, mut peak) = (0i64, 0i64);
        for (_, d) in events {
            alive += d;
            peak = peak.max(alive);
        }
        inp.cluster = Some((cores, peak.max(1)));
    }
    Ok(())
}

/// Skewed stages, and the shuffle stages that spilled: to disk as qualification counts them,
/// to memory or disk as profiling does.
async fn stages(ctx: &SessionContext, mode: Mode, all: &mut All) -> Result<()> {
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT DISTINCT app_id, \"stageId\" AS stage_id FROM profile_shuffle_skew_check",
    )
    .await?
    {
        let inp = all.entry(app).or_default();
        inp.skewed_stages
            .extend(rows.iter().map(|r| int(r.get("stage_id"))));
    }
    let spilled = match mode {
        Mode::Qualification => {
            "SELECT app_id, stage_id FROM tasks GROUP BY app_id, stage_id
             HAVING COALESCE(SUM(shuffle_remote_bytes_read + shuffle_local_bytes_read), 0)
                  + COALESCE(SUM(shuffle_bytes_written), 0) > 0
                AND COALESCE(SUM(disk_bytes_spilled), 0) > 0"
        }
        Mode::Profiling => {
            "SELECT app_id, stage_id FROM tasks GROUP BY app_id, stage_id
             HAVING SUM(shuffle_remote_bytes_read + shuffle_local_bytes_read + shuffle_bytes_written) > 0
                AND SUM(memory_bytes_spilled + disk_bytes_spilled) > 0"
        }
    };
    for (app, rows) in rows_by_app(ctx, spilled).await? {
        let mut s: Vec<i64> = rows.iter().filter_map(|r| i(r.get("stage_id"))).collect();
        s.sort();
        all.entry(app).or_default().spilled_shuffle_stages = s;
    }
    Ok(())
}

/// Per SQL: the input and shuffle-read bytes of its stages.
async fn sql_io(ctx: &SessionContext, all: &mut All) -> Result<()> {
    for (app, rows) in rows_by_app(
        ctx,
        "WITH s AS (SELECT DISTINCT app_id, sql_id, stage_id FROM stage_jobs WHERE sql_id IS NOT NULL),
              k AS (SELECT DISTINCT app_id, stage_id FROM stages
                    WHERE status IN ('complete', 'failed', 'active'))
         SELECT s.app_id, s.sql_id, COALESCE(SUM(t.input_bytes_read), 0) AS input,
                COALESCE(SUM(t.shuffle_remote_bytes_read + t.shuffle_local_bytes_read), 0) AS sr
         FROM s JOIN k ON k.app_id = s.app_id AND k.stage_id = s.stage_id
         LEFT JOIN tasks t ON t.app_id = s.app_id AND t.stage_id = s.stage_id
         GROUP BY s.app_id, s.sql_id",
    )
    .await?
    {
        let inp = all.entry(app).or_default();
        inp.sql_io.extend(
            rows.iter()
                .map(|r| (int(r.get("input")), int(r.get("sr")))),
        );
    }
    Ok(())
}

/// File scans: the largest task input of a file-scan stage, whether a cached table is read,
/// and every scan's location, format and bytes.
async fn file_scans(ctx: &SessionContext, all: &mut All) -> Result<()> {
    for (app, rows) in rows_by_app(
        ctx,
        "WITH node_stage AS (
             SELECT DISTINCT n.app_id, n.sql_id, n.node_id, n.node_name, n.description,
                    UNNEST(m.update_stage_ids) AS stage_id
             FROM sql_plan_nodes n
             JOIN sql_metrics m ON m.app_id = n.app_id AND m.sql_id = n.sql_id
              AND m.plan_version = n.plan_version AND m.node_id = n.node_id
             WHERE n.is_final
         ),
         cached AS (
             SELECT DISTINCT app_id, sql_id, stage_id FROM node_stage
             WHERE node_name LIKE '%InMemoryTableScan%' OR node_name LIKE '%InMemoryRelation%'
                OR description LIKE '%InMemoryTableScan%' OR description LIKE '%InMemoryRelation%'
         ),
         scan_stages AS (
             SELECT DISTINCT ns.app_id, ns.stage_id FROM node_stage ns
             WHERE ((ns.node_name LIKE 'Scan %' AND ns.node_name NOT LIKE 'Scan OneRowRelation%'
                     AND ns.node_name NOT LIKE 'Scan In-memory%')
                    OR ns.node_name LIKE 'GpuScan %'
                    OR ns.node_name LIKE '%BatchScan%' OR ns.node_name LIKE '%JDBCRelation%')
               AND NOT EXISTS (SELECT 1 FROM cached c WHERE c.app_id = ns.app_id
                               AND c.sql_id = ns.sql_id AND c.stage_id = ns.stage_id)
         )
         SELECT t.app_id, MAX(t.input_bytes_read) AS f
         FROM tasks t JOIN scan_stages s ON s.app_id = t.app_id AND s.stage_id = t.stage_id
         WHERE t.input_bytes_read > 0
         GROUP BY t.app_id",
    )
    .await?
    {
        all.entry(app).or_default().file_scan_task_input_max = rows
            .first()
            .and_then(|r| r.get("f"))
            .filter(|v| !v.is_null())
            .map(|v| int(Some(v)));
    }
    for (app, rows) in rows_by_app(
        ctx,
        // a cache node in any plan version, or a stage's RDD run in a cache scope
        "WITH names AS (
             SELECT app_id, node_name AS name FROM sql_plan_nodes
             UNION ALL
             SELECT app_id, unnest(rdd_scopes) AS name FROM stages)
         SELECT app_id, COUNT(*) AS n FROM names
         WHERE name IN ('InMemoryRelation', 'InMemoryTableScan', 'TableCacheQueryStage', 'GpuInMemoryTableScan')
            OR starts_with(name, 'Scan In-memory table ')
         GROUP BY app_id",
    )
    .await?
    {
        all.entry(app).or_default().cache_evidence =
            int(rows.first().and_then(|r| r.get("n"))) > 0;
    }
    // file scans of every plan version: where, which format, how many bytes
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT n.app_id, n.node_name, n.description, MAX(m.value) AS size
         FROM sql_plan_nodes n
         LEFT JOIN sql_metrics m ON m.app_id = n.app_id AND m.sql_id = n.sql_id
          AND m.plan_version = n.plan_version AND m.node_id = n.node_id
          AND m.name = 'size of files read'
         WHERE strpos(n.node_name, 'Scan') > 0 AND strpos(n.description, 'Location: ') > 0
         GROUP BY n.app_id, n.sql_id, n.plan_version, n.node_id, n.node_name, n.description",
    )
    .await?
    {
        let p = all.entry(app).or_default();
        for r in rows {
            let desc = text(&r, "description");
            if let Some(loc) = scan_location(text(&r, "node_name"), desc) {
                p.file_reads
                    .push((loc, desc.contains("Format: Parquet"), int(r.get("size"))));
            }
        }
    }
    Ok(())
}

/// Where a scan reads, as the reference's data_source_information writes it: a CPU scan's
/// `Location` (`InMemoryFileIndex[…]`), a GPU scan's paths inside it.
fn scan_location(node: &str, desc: &str) -> Option<String> {
    let rest = &desc[desc.find("Location: ")? + "Location: ".len()..];
    let open = rest.find('[')?;
    let close = open + rest[open..].find(']')?;
    Some(if node.trim_start().starts_with("Gpu") {
        rest[open + 1..close].to_string()
    } else {
        rest[..=close].to_string()
    })
}

/// The run: Spark version and properties, the RAPIDS plugin and Delta Lake jars on the
/// classpath, the JVM's file encoding.
async fn run(ctx: &SessionContext, all: &mut All) -> Result<()> {
    for (app, rows) in rows_by_app(ctx, "SELECT app_id, spark_version FROM applications").await? {
        all.entry(app).or_default().spark_version = rows
            .first()
            .map(|r| text(r, "spark_version"))
            .unwrap_or("")
            .to_string();
    }
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, key, value FROM properties WHERE category = 'spark'",
    )
    .await?
    {
        let p = all.entry(app).or_default();
        for r in rows {
            p.props
                .insert(text(&r, "key").to_string(), text(&r, "value").to_string());
        }
    }
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT DISTINCT app_id, key FROM properties
         WHERE category = 'classpath' AND key LIKE '%rapids-4-spark_%'",
    )
    .await?
    {
        let mut v: Vec<String> = rows
            .iter()
            .filter_map(|r| plugin_version_of(text(r, "key")))
            .collect();
        v.sort();
        v.dedup();
        all.entry(app).or_default().plugin_versions = v;
    }
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, key, value FROM properties
         WHERE (category = 'system' AND key = 'file.encoding')
            OR (category = 'classpath' AND key LIKE '%io.delta_delta-%')
         ORDER BY key",
    )
    .await?
    {
        let p = all.entry(app).or_default();
        for r in rows {
            if text(&r, "key") == "file.encoding" {
                p.file_encoding = Some(text(&r, "value").to_string());
            } else {
                p.delta_jars.push(text(&r, "key").to_string());
            }
        }
    }
    Ok(())
}

/// The plugin version a jar name carries (`rapids-4-spark_2.12-25.02.0-cuda11.jar`: 25.02.0), as
/// the reference reads it: `rapids-4-spark_<d>.<dd>-<yy>.<mm>.<n>...jar`.
pub fn plugin_version_of(jar: &str) -> Option<String> {
    let name = jar.rsplit('/').next()?;
    if !name.ends_with(".jar") {
        return None;
    }
    let rest = name.strip_prefix("rapids-4-spark_")?;
    let (scala, rest) = rest.split_once('-')?;
    let (major, minor) = scala.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if major.len() != 1 || !digits(major) || !digits(minor) {
        return None;
    }
    let mut parts = rest.splitn(3, '.');
    let (yy, mm, tail) = (parts.next()?, parts.next()?, parts.next()?);
    let n: String = tail.chars().take_while(|c| c.is_ascii_digit()).collect();
    (yy.len() == 2 && mm.len() == 2 && digits(yy) && digits(mm) && !n.is_empty())
        .then(|| format!("{yy}.{mm}.{n}"))
}

/// Mean over SQLs of GC time / CPU time (the reference's sql_level_aggregated_task_metrics: a
/// stage's CPU time is its tasks' nanoseconds summed, then cut to milliseconds; a SQL's is the
/// sum of its stages': sub-millisecond tasks still count).
async fn gc_ratio(ctx: &SessionContext, all: &mut All) -> Result<()> {
    for (app, rows) in rows_by_app(
        ctx,
        "WITH s AS (SELECT DISTINCT app_id, sql_id, stage_id FROM stage_jobs WHERE sql_id IS NOT NULL),
              st AS (SELECT s.app_id, s.sql_id, s.stage_id, SUM(t.jvm_gc_time_ms) AS gc,
                            SUM(t.executor_cpu_time_ns) / 1000000 AS cpu
                     FROM s JOIN tasks t ON t.app_id = s.app_id AND t.stage_id = s.stage_id
                     GROUP BY s.app_id, s.sql_id, s.stage_id)
         SELECT app_id, sql_id, SUM(gc) AS gc, SUM(cpu) AS cpu FROM st GROUP BY app_id, sql_id",
    )
    .await?
    {
        let fractions: Vec<f64> = rows
            .iter()
            .map(|r| int(r.get("gc")) as f64 / int(r.get("cpu")) as f64)
            .collect();
        if !fractions.is_empty() {
            all.entry(app).or_default().gc_ratio =
                Some(fractions.iter().sum::<f64>() / fractions.len() as f64);
        }
    }
    Ok(())
}

/// A task's failure, as SQL: its detail, else its end reason.
const FAILURE: &str = "COALESCE(t.failure_detail, t.end_reason, '')";

/// Failures: scan stages with a GPU OOM, GPU shuffle stages whose containers YARN killed, the
/// largest GPU exchange, Python workers out of memory.
async fn failures(ctx: &SessionContext, all: &mut All) -> Result<()> {
    let oom = [
        "GpuSplitAndRetryOOM",
        "GpuRetryOOM",
        "jni.GpuOOM",
        "jni.SplitAndRetryOOM",
        "jni.RetryOOM",
    ]
    .map(|e| format!("strpos({FAILURE}, '{e}') > 0"))
    .join(" OR ");
    for (app, rows) in rows_by_app(
        ctx,
        &format!(
            "WITH scans AS (SELECT DISTINCT app_id, unnest(update_stage_ids) AS stage_id
                            FROM sql_metrics WHERE name = 'scan time')
             SELECT t.app_id, COUNT(DISTINCT t.stage_id) AS n
             FROM tasks t JOIN scans s ON s.app_id = t.app_id AND s.stage_id = t.stage_id
             WHERE t.status <> 'success' AND ({oom})
             GROUP BY t.app_id"
        ),
    )
    .await?
    {
        all.entry(app).or_default().scan_stages_with_gpu_oom =
            int(rows.first().and_then(|r| r.get("n")));
    }
    for (app, rows) in rows_by_app(
        ctx,
        &format!(
            "SELECT t.app_id, COUNT(DISTINCT t.stage_id) AS n
             FROM tasks t
             JOIN (SELECT DISTINCT app_id, stage_id FROM stages
                   WHERE status = 'failed' AND strpos(name, 'GpuShuffleExchangeExec') > 0) s
               ON s.app_id = t.app_id AND s.stage_id = t.stage_id
             JOIN properties p ON p.app_id = t.app_id AND p.category = 'spark'
                              AND p.key = 'spark.master' AND strpos(p.value, 'yarn') > 0
             WHERE t.status <> 'success'
               AND strpos({FAILURE}, 'ExecutorLostFailure') > 0
               AND strpos({FAILURE}, 'Exit status: 137') > 0
             GROUP BY t.app_id"
        ),
    )
    .await?
    {
        all.entry(app)
            .or_default()
            .shuffle_stages_with_container_oom = int(rows.first().and_then(|r| r.get("n")));
    }
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, MAX(total) AS b FROM profile_sql_plan_metrics_for_application
         WHERE strpos(\"nodeName\", 'ColumnarExchange') > 0 AND name = 'data size'
         GROUP BY app_id",
    )
    .await?
    {
        all.entry(app).or_default().exchange_max_bytes = rows.first().and_then(|r| i(r.get("b")));
    }
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, failure_reason FROM stages
         WHERE status = 'failed' AND strpos(failure_reason, 'PythonException') > 0",
    )
    .await?
    {
        all.entry(app).or_default().python_oom = rows
            .iter()
            .any(|r| is_python_oom(text(r, "failure_reason")));
    }
    Ok(())
}

/// A stage failure reason of Python workers out of memory, as the reference recognises it: a
/// `org.apache.spark.api.python.PythonException` and a line that is a Python, numpy or pyarrow
/// memory error.
fn is_python_oom(reason: &str) -> bool {
    const EXC: &str = "org.apache.spark.api.python.PythonException";
    let exception = reason.match_indices(EXC).any(|(i, _)| {
        let before = reason[..i].chars().next_back();
        let after = reason[i + EXC.len()..].chars().next();
        before.is_none_or(|c| c.is_whitespace() || c == ':')
            && after.is_none_or(|c| c.is_whitespace() || c == ':')
    });
    exception
        && reason.lines().any(|l| {
            let l = l.trim_start();
            [
                "MemoryError",
                "numpy.core._exceptions._ArrayMemoryError",
                "numpy._core._exceptions._ArrayMemoryError",
                "pyarrow.lib.ArrowMemoryError",
            ]
            .iter()
            .any(|e| {
                l.strip_prefix(e)
                    .is_some_and(|rest| rest.starts_with(':') || rest.trim().is_empty())
            })
        })
}

/// The stage with the largest task GPU footprint (first stage on ties), with the mean and the
/// sample standard deviation of its updates.
async fn gpu_footprint(ctx: &SessionContext, all: &mut All) -> Result<()> {
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, stage_id, max, samples, CAST(sum AS DOUBLE) AS sum, sum_squares
         FROM stage_gpu_metrics WHERE metric = 'gpuMaxTaskFootprint' AND max > 0
         ORDER BY app_id, max DESC, stage_id",
    )
    .await?
    {
        let Some(r) = rows.first() else {
            continue;
        };
        let f = |k: &str| r.get(k).and_then(Value::as_f64);
        let n = int(r.get("samples"));
        let mean = f("sum").unwrap_or(0.0) / n.max(1) as f64;
        let sd = f("sum_squares").filter(|_| n > 1).map(|sq| {
            ((sq - n as f64 * mean * mean) / (n - 1) as f64)
                .max(0.0)
                .sqrt()
        });
        all.entry(app).or_default().footprint =
            Some((int(r.get("stage_id")), int(r.get("max")), n, mean, sd));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_versions_from_jar_names() {
        assert_eq!(
            plugin_version_of("/opt/sparkRapidsPlugin/rapids-4-spark_2.12-25.02.0-cuda11.jar")
                .as_deref(),
            Some("25.02.0")
        );
        assert_eq!(
            plugin_version_of("file:///usr/lib/spark/jars/rapids-4-spark_2.12-23.10.0.jar")
                .as_deref(),
            Some("23.10.0")
        );
        assert_eq!(plugin_version_of("/x/cudf-21.06.jar"), None);
        // a one-digit month, a snapshot's short version: not the reference's pattern
        assert_eq!(plugin_version_of("/x/rapids-4-spark_2.12-25.8.0.jar"), None);
        assert_eq!(
            plugin_version_of("/x/rapids-4-spark_2.12-0.6.0-SNAPSHOT.jar"),
            None
        );
    }

    #[test]
    fn python_out_of_memory_reasons() {
        let r = "Lost task 0.3: org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n  File \"w.py\", line 1\nMemoryError\n";
        assert!(is_python_oom(r));
        assert!(is_python_oom(&r.replace(
            "MemoryError",
            "pyarrow.lib.ArrowMemoryError: out of memory"
        )));
        assert!(!is_python_oom(&r.replace("MemoryError", "ValueError: bad")));
        assert!(!is_python_oom("MemoryError\n"));
        assert!(!is_python_oom(
            &r.replace("PythonException", "PythonExceptions")
        ));
    }

    #[test]
    fn scan_locations_as_the_reference_writes_them() {
        let d = "Batched: true, Format: Parquet, Location: InMemoryFileIndex[s3://b/t], PartitionFilters: []";
        assert_eq!(
            scan_location("Scan parquet ", d).as_deref(),
            Some("InMemoryFileIndex[s3://b/t]")
        );
        assert_eq!(
            scan_location("GpuScan parquet ", d).as_deref(),
            Some("s3://b/t")
        );
        assert_eq!(scan_location("Scan parquet ", "Format: Parquet"), None);
    }
}
