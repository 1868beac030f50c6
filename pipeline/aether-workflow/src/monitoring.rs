//! `aether report metrics --cloudwatch`: every completed GPU test run of the job history as
//! CloudWatch metrics, for dashboards and alarms, and (`--alarms`) each job's alarms on them.
//!
//! Per run, from the history: its duration, its speedup over the job's CPU run, its cost and the
//! savings against the CPU run's, its latest validation (1 PASS or WARN, 0 FAIL); from its event
//! log: the shuffle write time, the longest stage of a SQL execution, and the RAPIDS plugin's
//! GPU semaphore wait and memory retries where the log has them (a metric the log does not have
//! is not published). Each figure goes out twice: with the run's dimensions (`AetherJobId`,
//! `ClusterId`, `AppId`) and with the job's alone (`AetherJobId`, what the alarms watch).
//!
//! Publishing is idempotent per run: what was sent is recorded in the job history (per run,
//! namespace and metric), a run's event log is read once, and publishing again sends only what
//! is new (a run finished since, a validation made since) or changed.

use crate::error::{Context, Result, bail};
use crate::workspace::Workspace;
use aether_core::history::{PublishedMetric, Run, Validation};
use aether_platform::cloudwatch::{AlarmSpec, AlarmStatistic, CloudWatch, Comparison, Datum, Unit};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The namespace metrics go to unless `--namespace` says otherwise.
pub const DEFAULT_NAMESPACE: &str = "Spark/GPU";

/// The dimension names: aether's job id, the run's cluster, its Spark application.
pub const DIM_JOB: &str = "AetherJobId";
pub const DIM_CLUSTER: &str = "ClusterId";
pub const DIM_APP: &str = "AppId";

/// Every metric, with its unit and what it is.
pub const METRICS: &[(&str, Unit, &str)] = &[
    ("RunDuration", Unit::Milliseconds, "the run's duration"),
    (
        "Speedup",
        Unit::None,
        "the CPU run's duration over the run's (the job's CPU run as `report job` compares)",
    ),
    ("EstimatedCost", Unit::None, "the run's cost, USD"),
    (
        "EstimatedSavings",
        Unit::None,
        "the CPU run's cost minus the run's, USD",
    ),
    (
        "ValidationVerdict",
        Unit::None,
        "the run's latest validation: 1 PASS or WARN, 0 FAIL",
    ),
    (
        "ShuffleWriteTime",
        Unit::Milliseconds,
        "its tasks' shuffle write time (whole ms per stage, summed, as the profiler's \
         sw_writeTime_sum)",
    ),
    (
        "LongestSqlStageDuration",
        Unit::Milliseconds,
        "the longest stage attempt of its SQL executions (submission to completion)",
    ),
    (
        "GpuSemaphoreWait",
        Unit::Milliseconds,
        "its tasks' gpuSemaphoreWait (RAPIDS plugin)",
    ),
    (
        "GpuRetryCount",
        Unit::Count,
        "its tasks' GPU out-of-memory retries (gpuRetryCount)",
    ),
    (
        "GpuSplitAndRetryCount",
        Unit::Count,
        "its tasks' GPU out-of-memory split-and-retries (gpuSplitAndRetryCount)",
    ),
];

/// The metrics read from a run's event log, and the plugin's task metric behind each GPU one.
const LOG_METRICS: [&str; 5] = [
    "ShuffleWriteTime",
    "LongestSqlStageDuration",
    "GpuSemaphoreWait",
    "GpuRetryCount",
    "GpuSplitAndRetryCount",
];
const GPU_METRICS: [(&str, &str); 3] = [
    ("gpuSemaphoreWait", "GpuSemaphoreWait"),
    ("gpuRetryCount", "GpuRetryCount"),
    ("gpuSplitAndRetryCount", "GpuSplitAndRetryCount"),
];

/// CloudWatch takes data points up to two weeks old (kept an hour inside) and two hours ahead.
const OLDEST_MS: i64 = (14 * 24 - 1) * 3_600_000;
const AHEAD_MS: i64 = 2 * 3_600_000;

/// What to publish.
#[derive(Clone, Debug)]
pub struct MetricsRequest {
    /// The CloudWatch namespace (default [`DEFAULT_NAMESPACE`]).
    pub namespace: String,
    /// Also create each job's alarms (thresholds from the `monitoring.*` settings).
    pub alarms: bool,
}

impl Default for MetricsRequest {
    fn default() -> Self {
        MetricsRequest {
            namespace: DEFAULT_NAMESPACE.into(),
            alarms: false,
        }
    }
}

/// What a publish did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricsOutcome {
    pub namespace: String,
    /// Completed GPU test runs in the history.
    pub runs: usize,
    /// Runs that had something new, sent now.
    pub runs_published: usize,
    /// Runs left out: no readable event log (a warning names each; they are tried again).
    pub runs_skipped: usize,
    /// Metrics sent now (each as two data points) and metrics already published as they are.
    pub metrics_published: usize,
    pub metrics_unchanged: usize,
    pub datapoints: usize,
    /// Data points timed now because their run ended before the two weeks CloudWatch takes.
    pub retimed: usize,
    pub alarms_created: usize,
    pub alarms_updated: usize,
    pub alarms_unchanged: usize,
    /// The alarms that were wanted (`--alarms`), by name.
    pub alarm_names: Vec<String>,
}

impl MetricsOutcome {
    /// What happened, in a few lines.
    pub fn summary(&self) -> String {
        let ns = &self.namespace;
        let mut out = if self.runs == 0 {
            "no completed GPU test run in the job history: nothing to publish".to_string()
        } else if self.metrics_published == 0 {
            format!(
                "nothing new to publish: the {} metric(s) of {} GPU run(s) are already in \
                 CloudWatch namespace {ns}",
                self.metrics_unchanged,
                self.runs - self.runs_skipped
            )
        } else {
            let mut s = format!(
                "published {} metric(s) of {} GPU run(s) to CloudWatch namespace {ns} ({} data \
                 points)",
                self.metrics_published, self.runs_published, self.datapoints
            );
            if self.metrics_unchanged > 0 {
                s.push_str(&format!(
                    "; {} metric(s) were already there",
                    self.metrics_unchanged
                ));
            }
            s
        };
        if self.retimed > 0 {
            out.push_str(&format!(
                "\n{} data point(s) timed now: their run is older than the two weeks CloudWatch takes",
                self.retimed
            ));
        }
        if self.runs_skipped > 0 {
            out.push_str(&format!(
                "\n{} GPU run(s) skipped: no readable event log (see the warnings); tried again next time",
                self.runs_skipped
            ));
        }
        if !self.alarm_names.is_empty() {
            out.push_str(&format!(
                "\nalarms: {} created, {} updated, {} up to date",
                self.alarms_created, self.alarms_updated, self.alarms_unchanged
            ));
        }
        out
    }
}

/// A run's figures from its event log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogFigures {
    pub app_id: String,
    /// (metric, value) of the log metrics the log has.
    pub metrics: Vec<(&'static str, f64)>,
}

/// The figures of a run's event log: its application id, shuffle write time, longest SQL stage
/// and the GPU metrics it has.
pub fn log_figures(rt: &tokio::runtime::Runtime, event_log: &str) -> Result<LogFigures> {
    use aether_engine::{analyze::json_rows, views};
    let ing = aether_ingest::ingest(&[event_log.to_string()], &Default::default());
    if let Some(e) = ing.source_errors.first() {
        bail!("{}: {}", e.path, e.error);
    }
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing)?;
    views::register_settings(&ctx, &Default::default())?;
    let q = |sql: &str| {
        rt.block_on(async {
            views::register_views_for(&ctx, sql).await?;
            json_rows(&ctx, sql).await
        })
    };
    let num = |rows: &[serde_json::Map<String, serde_json::Value>], k: &str| {
        rows.first().and_then(|r| r.get(k)?.as_f64())
    };
    let app_id = q("SELECT app_id FROM applications ORDER BY app_id LIMIT 1")?
        .first()
        .and_then(|r| r.get("app_id")?.as_str().map(String::from))
        .with_context(|| format!("{event_log}: no application in the log"))?;
    let mut metrics = Vec::new();
    // whole ms per stage, summed (as the profiler's stage-level sw_writeTime_sum)
    let sw = q(
        "SELECT SUM(ms) AS ms FROM (SELECT stage_id, SUM(shuffle_write_time_ns) / 1000000 \
                AS ms FROM tasks GROUP BY stage_id)",
    )?;
    if let Some(v) = num(&sw, "ms") {
        metrics.push(("ShuffleWriteTime", v));
    }
    let longest = q(
        "SELECT MAX(complete_ms - submit_ms) AS ms FROM stages
                     WHERE submit_ms IS NOT NULL AND complete_ms IS NOT NULL
                       AND stage_id IN (SELECT stage_id FROM stage_jobs WHERE sql_id IS NOT NULL)",
    )?;
    if let Some(v) = num(&longest, "ms") {
        metrics.push(("LongestSqlStageDuration", v));
    }
    let gpu = q("SELECT metric, SUM(\"sum\") AS total FROM stage_gpu_metrics GROUP BY metric")?;
    for (plugin, name) in GPU_METRICS {
        let v = gpu
            .iter()
            .find(|r| r.get("metric").and_then(|m| m.as_str()) == Some(plugin))
            .and_then(|r| r.get("total")?.as_f64());
        if let Some(v) = v {
            metrics.push((name, v));
        }
    }
    Ok(LogFigures { app_id, metrics })
}

/// When a data point is put: `at` when CloudWatch takes it, else `now` (and `true`).
pub fn point_time(at: Option<i64>, now: i64) -> (i64, bool) {
    match at {
        Some(t) if t >= now - OLDEST_MS && t <= now + AHEAD_MS => (t, false),
        _ => (now, true),
    }
}

fn unit_of(metric: &str) -> Unit {
    METRICS
        .iter()
        .find(|(n, _, _)| *n == metric)
        .map_or(Unit::None, |(_, u, _)| *u)
}

/// The figures of one run: (metric, value, when).
fn run_metrics(
    run: &Run,
    cpu: (Option<i64>, Option<f64>),
    validation: Option<&Validation>,
    log: &[(&'static str, f64)],
) -> Vec<(&'static str, f64, Option<i64>)> {
    let end = run
        .end_ms
        .or(run.start_ms.zip(run.duration_ms).map(|(s, d)| s + d));
    let mut out = Vec::new();
    if let Some(d) = run.duration_ms.filter(|d| *d > 0) {
        out.push(("RunDuration", d as f64, end));
        if let Some(c) = cpu.0.filter(|c| *c > 0) {
            out.push(("Speedup", c as f64 / d as f64, end));
        }
    }
    if let Some(c) = run.cost_usd {
        out.push(("EstimatedCost", c, end));
        if let Some(cpu_cost) = cpu.1 {
            out.push(("EstimatedSavings", cpu_cost - c, end));
        }
    }
    if let Some(v) = validation {
        let verdict = match v.verdict.as_str() {
            "PASS" | "WARN" => Some(1.0),
            "FAIL" => Some(0.0),
            _ => None,
        };
        if let Some(x) = verdict {
            out.push(("ValidationVerdict", x, Some(v.created_ms)));
        }
    }
    out.extend(log.iter().map(|(m, v)| (*m, *v, end)));
    out
}

/// A value as a note shows it: whole numbers as such, else 4 decimals.
fn shown(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Check a namespace as CloudWatch would, naming the problem.
fn check_namespace(ns: &str) -> Result<()> {
    if ns.is_empty() || ns.len() > 255 {
        bail!("--namespace {ns:?}: a CloudWatch namespace has 1 to 255 characters");
    }
    if ns.starts_with("AWS/") {
        bail!("--namespace {ns}: namespaces starting with AWS/ are reserved for AWS services");
    }
    if !ns
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || ".-_/#:".contains(c))
    {
        bail!("--namespace {ns}: a CloudWatch namespace has letters, digits and . - _ / # : only");
    }
    Ok(())
}

/// Publish what is new in the job history to CloudWatch through `cw` (events: a note per run
/// published, a warning per run whose event log cannot be read), then, with `req.alarms`, each
/// job's alarms on what was published.
pub fn publish(ws: &Workspace, cw: &CloudWatch, req: &MetricsRequest) -> Result<MetricsOutcome> {
    let ns = req.namespace.as_str();
    check_namespace(ns)?;
    let mon = ws.monitoring();
    if req.alarms && mon.period_s() % 60 != 0 {
        bail!(
            "monitoring.alarm_period_s = {}: CloudWatch alarm periods are whole minutes (a multiple of 60)",
            mon.period_s()
        );
    }
    let rt = ws.runtime();
    let mut h = ws.history()?;
    let mut done: HashMap<i64, Vec<PublishedMetric>> = HashMap::new();
    for m in h.published_metrics(ns)? {
        done.entry(m.run_id).or_default().push(m);
    }
    let now = aether_platform::now_ms();
    let mut out = MetricsOutcome {
        namespace: ns.to_string(),
        ..Default::default()
    };
    // per job: its name and the metrics its runs have in CloudWatch
    let mut watched: BTreeMap<i64, (String, BTreeSet<&'static str>)> = BTreeMap::new();
    for s in h.list()? {
        let runs = h.runs(s.job_id)?;
        let cpu = aether_report::model::cpu_baseline(&runs, &s);
        let validations = h.validations(s.job_id)?;
        for run in runs
            .iter()
            .filter(|r| r.kind == "gpu-test" && r.status == "COMPLETED")
        {
            out.runs += 1;
            let before = done.get(&run.run_id).map(Vec::as_slice).unwrap_or(&[]);
            // a run's log is read once: when it is first published
            let log = if let Some(first) = before.first() {
                let app = first
                    .dimensions
                    .iter()
                    .find(|(k, _)| k == DIM_APP)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                let metrics = LOG_METRICS
                    .iter()
                    .filter_map(|m| {
                        before
                            .iter()
                            .find(|p| p.metric == *m)
                            .map(|p| (*m, p.value))
                    })
                    .collect();
                LogFigures {
                    app_id: app,
                    metrics,
                }
            } else {
                let Some(path) = run.event_log.as_deref() else {
                    ws.warn(&format!(
                        "run {} of job {}: no event log recorded: not published",
                        run.run_id, s.job_id
                    ));
                    out.runs_skipped += 1;
                    continue;
                };
                match log_figures(rt, path) {
                    Ok(f) => f,
                    Err(e) => {
                        ws.warn(&format!(
                            "run {} of job {}: its event log cannot be read: {e:#}; not published",
                            run.run_id, s.job_id
                        ));
                        out.runs_skipped += 1;
                        continue;
                    }
                }
            };
            let validation = validations
                .iter()
                .rev()
                .find(|v| v.gpu_run_id == Some(run.run_id));
            let job_dims = vec![(DIM_JOB.to_string(), s.job_id.to_string())];
            let run_dims = vec![
                (DIM_JOB.to_string(), s.job_id.to_string()),
                (
                    DIM_CLUSTER.to_string(),
                    run.cluster_id.clone().unwrap_or_else(|| "none".into()),
                ),
                (DIM_APP.to_string(), log.app_id.clone()),
            ];
            let (mut data, mut rows) = (Vec::new(), Vec::new());
            let entry = watched
                .entry(s.job_id)
                .or_insert_with(|| (s.app_name.clone(), BTreeSet::new()));
            for (metric, value, at) in run_metrics(run, cpu, validation, &log.metrics) {
                entry.1.insert(metric);
                let unit = unit_of(metric);
                let old = before.iter().find(|p| p.metric == metric);
                if old.is_some_and(|p| same(p.value, value) && p.unit == unit.as_str()) {
                    out.metrics_unchanged += 1;
                    continue;
                }
                let (t, moved) = point_time(at, now);
                out.retimed += 2 * moved as usize;
                for dims in [&run_dims, &job_dims] {
                    data.push(Datum {
                        metric: metric.to_string(),
                        unit,
                        value,
                        timestamp_ms: t,
                        dimensions: dims.clone(),
                    });
                }
                rows.push(PublishedMetric {
                    run_id: run.run_id,
                    namespace: ns.to_string(),
                    metric: metric.to_string(),
                    value,
                    unit: unit.as_str().to_string(),
                    timestamp_ms: t,
                    dimensions: run_dims.clone(),
                });
            }
            if rows.is_empty() {
                continue;
            }
            rt.block_on(cw.put_metric_data(ns, &data)).with_context(|| {
                format!(
                    "publishing run {} of job {} (the runs before it are published and recorded)",
                    run.run_id, s.job_id
                )
            })?;
            h.record_published(&rows)?;
            out.runs_published += 1;
            out.metrics_published += rows.len();
            out.datapoints += data.len();
            ws.note(&format!(
                "run {} of job {} ({} on {}): {}",
                run.run_id,
                s.job_id,
                log.app_id,
                run.cluster_id.as_deref().unwrap_or("no cluster"),
                rows.iter()
                    .map(|r| format!("{} {}", r.metric, shown(r.value)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    if req.alarms {
        alarms(ws, cw, ns, &watched, &mut out)?;
    }
    Ok(out)
}

/// The alarms of a job's published metrics: shuffle write time and longest SQL stage above the
/// settings' thresholds, a failed validation.
pub fn alarm_specs(
    mon: &aether_core::config::Monitoring,
    ns: &str,
    job_id: i64,
    app_name: &str,
    metrics: &BTreeSet<&str>,
) -> Vec<AlarmSpec> {
    let period = mon.period_s();
    let app: String = app_name.chars().take(100).collect();
    let topics: Vec<String> = mon.alarm_topic_arn.iter().cloned().collect();
    let spec = |metric: &str, statistic, comparison, threshold: f64, what: String| AlarmSpec {
        name: format!("aether/{ns}/job-{job_id}/{metric}"),
        description: format!(
            "aether job {job_id} ({app}): {what} within {period} s (aether report metrics)"
        ),
        namespace: ns.to_string(),
        metric: metric.to_string(),
        dimensions: vec![(DIM_JOB.to_string(), job_id.to_string())],
        statistic,
        comparison,
        threshold,
        period_s: period as i32,
        actions: topics.clone(),
    };
    let mut out = Vec::new();
    if metrics.contains("ShuffleWriteTime") {
        let ms = mon.shuffle_write_ms();
        out.push(spec(
            "ShuffleWriteTime",
            AlarmStatistic::Maximum,
            Comparison::GreaterThanThreshold,
            ms as f64,
            format!(
                "a GPU run's shuffle write time above {ms} ms (monitoring.alarm_shuffle_write_ms)"
            ),
        ));
    }
    if metrics.contains("LongestSqlStageDuration") {
        let min = mon.sql_stage_minutes();
        out.push(spec(
            "LongestSqlStageDuration",
            AlarmStatistic::Maximum,
            Comparison::GreaterThanThreshold,
            (min * 60_000) as f64,
            format!(
                "a GPU run's SQL stage longer than {min} minutes (monitoring.alarm_sql_stage_minutes)"
            ),
        ));
    }
    if metrics.contains("ValidationVerdict") {
        out.push(spec(
            "ValidationVerdict",
            AlarmStatistic::Minimum,
            Comparison::LessThanThreshold,
            1.0,
            "a GPU run's output failed validation".into(),
        ));
    }
    out
}

fn alarms(
    ws: &Workspace,
    cw: &CloudWatch,
    ns: &str,
    watched: &BTreeMap<i64, (String, BTreeSet<&'static str>)>,
    out: &mut MetricsOutcome,
) -> Result<()> {
    let mon = ws.monitoring();
    let want: Vec<AlarmSpec> = watched
        .iter()
        .flat_map(|(job, (name, metrics))| alarm_specs(mon, ns, *job, name, metrics))
        .collect();
    out.alarm_names = want.iter().map(|a| a.name.clone()).collect();
    if want.is_empty() {
        return Ok(());
    }
    let rt = ws.runtime();
    let have: HashMap<String, AlarmSpec> = rt
        .block_on(cw.alarms(&out.alarm_names))?
        .into_iter()
        .map(|a| (a.name.clone(), a))
        .collect();
    for a in &want {
        match have.get(&a.name) {
            Some(h) if h == a => out.alarms_unchanged += 1,
            found => {
                rt.block_on(cw.put_alarm(a))?;
                if found.is_some() {
                    out.alarms_updated += 1;
                } else {
                    out.alarms_created += 1;
                }
                ws.note(&format!(
                    "alarm {}: {} of {} {} {} ({} s)",
                    a.name,
                    match a.statistic {
                        AlarmStatistic::Maximum => "maximum",
                        AlarmStatistic::Minimum => "minimum",
                    },
                    a.metric,
                    match a.comparison {
                        Comparison::GreaterThanThreshold => ">",
                        Comparison::LessThanThreshold => "<",
                    },
                    a.threshold,
                    a.period_s
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_older_than_cloudwatch_takes_are_timed_now() {
        let now = 1_800_000_000_000;
        assert_eq!(
            point_time(Some(now - 3_600_000), now),
            (now - 3_600_000, false)
        );
        let t = now - 13 * 86_400_000;
        assert_eq!(point_time(Some(t), now), (t, false));
        assert_eq!(point_time(Some(now - 14 * 86_400_000), now), (now, true));
        assert_eq!(point_time(Some(now + 3 * 3_600_000), now), (now, true));
        assert_eq!(point_time(None, now), (now, true));
    }

    #[test]
    fn a_run_gets_only_the_figures_it_has() {
        let run = Run {
            run_id: 4,
            kind: "gpu-test".into(),
            status: "COMPLETED".into(),
            start_ms: Some(1_000),
            duration_ms: Some(40_000),
            cost_usd: Some(0.5),
            ..Default::default()
        };
        let v = Validation {
            validation_id: 1,
            job_id: 1,
            cpu_run_id: None,
            gpu_run_id: Some(4),
            verdict: "WARN".into(),
            failed_checks: 0,
            report: serde_json::Value::Null,
            created_ms: 99_000,
        };
        let got = run_metrics(
            &run,
            (Some(100_000), Some(2.0)),
            Some(&v),
            &[("GpuSemaphoreWait", 12.0)],
        );
        assert_eq!(
            got,
            vec![
                ("RunDuration", 40_000.0, Some(41_000)),
                ("Speedup", 2.5, Some(41_000)),
                ("EstimatedCost", 0.5, Some(41_000)),
                ("EstimatedSavings", 1.5, Some(41_000)),
                ("ValidationVerdict", 1.0, Some(99_000)),
                ("GpuSemaphoreWait", 12.0, Some(41_000)),
            ]
        );
        // no CPU baseline, no cost, not validated: duration only
        let bare = Run {
            cost_usd: None,
            ..run
        };
        assert_eq!(
            run_metrics(&bare, (None, None), None, &[]),
            vec![("RunDuration", 40_000.0, Some(41_000))]
        );
    }

    #[test]
    fn namespaces_are_checked_and_alarms_follow_the_published_metrics() {
        assert!(check_namespace("Spark/GPU").is_ok());
        for bad in ["", "AWS/EMR", "my namespace"] {
            let e = check_namespace(bad).unwrap_err().to_string();
            assert!(e.contains("--namespace"), "{e}");
        }
        let mon = aether_core::config::Monitoring {
            alarm_sql_stage_minutes: Some(2),
            ..Default::default()
        };
        let only_duration = BTreeSet::from(["RunDuration"]);
        assert!(alarm_specs(&mon, "Spark/GPU", 3, "etl", &only_duration).is_empty());
        let all = BTreeSet::from([
            "ShuffleWriteTime",
            "LongestSqlStageDuration",
            "ValidationVerdict",
        ]);
        let a = alarm_specs(&mon, "Spark/GPU", 3, "etl", &all);
        let t: Vec<(&str, f64)> = a.iter().map(|a| (a.metric.as_str(), a.threshold)).collect();
        assert_eq!(
            t,
            vec![
                ("ShuffleWriteTime", 500.0),
                ("LongestSqlStageDuration", 120_000.0),
                ("ValidationVerdict", 1.0)
            ]
        );
        assert_eq!(a[0].name, "aether/Spark/GPU/job-3/ShuffleWriteTime");
        assert_eq!(a[2].comparison, Comparison::LessThanThreshold);
    }
}
