//! The typed reports, built from the job history in one place: every output (the CLI's tables,
//! CSV, JSON, Markdown, the HTML files and the UI's pages) renders these structs.

use std::collections::{BTreeMap, HashMap};

use aether_core::history::{History, JobSummary, Run, Validation, best_gpu_run};
use serde::Serialize;

use crate::Result;

/// A month, for savings at a job's observed frequency.
const MONTH_MS: f64 = 30.0 * 24.0 * 3600.0 * 1000.0;

/// What to do with a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Faster (or cheaper) on the GPU and its output validated.
    Migrate,
    /// Worth GPU time but not proven yet: untested, unvalidated, or slower after few runs.
    TuneFurther,
    /// Not for the GPU: not recommended by qualify, slower after tuning, or its output differs.
    StayOnCpu,
    /// Not qualified yet.
    Qualify,
}

impl Action {
    pub fn label(&self) -> &'static str {
        match self {
            Action::Migrate => "migrate",
            Action::TuneFurther => "tune further",
            Action::StayOnCpu => "stay on CPU",
            Action::Qualify => "qualify",
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// A recommendation with its reason.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recommendation {
    pub action: Action,
    pub reason: String,
}

/// One job of the job list.
#[derive(Clone, Debug, Serialize)]
pub struct JobRow {
    pub job_id: i64,
    pub app_id: String,
    pub app_name: String,
    pub event_log: String,
    pub qualifications: i64,
    /// The qualified fleet's category (Large, Medium, Small, Not Recommended, Not Applicable).
    pub category: Option<String>,
    pub predicted_speedup: Option<f64>,
    /// The CPU run's duration over the best GPU run's (`best_run_id`).
    pub measured_speedup: Option<f64>,
    /// The prediction's 80 % range, as qualify recorded it (none before schema 7).
    pub predicted_low: Option<f64>,
    pub predicted_high: Option<f64>,
    /// The prediction's error against the measured speedup, `(predicted − measured) / measured`
    /// in % (above 0: over-predicted), and whether the measured speedup fell in the range.
    pub speedup_error_pct: Option<f64>,
    pub within_range: Option<bool>,
    /// qualify's predicted GPU cost per run, and its error against the best GPU run's measured
    /// cost in %.
    pub predicted_gpu_cost_usd: Option<f64>,
    pub gpu_cost_error_pct: Option<f64>,
    pub cpu_duration_ms: Option<i64>,
    pub gpu_duration_ms: Option<i64>,
    pub predicted_gpu_duration_ms: Option<i64>,
    /// Per run: the CPU run's measured cost, else the qualification's estimate.
    pub cpu_cost_usd: Option<f64>,
    /// Per run: the best GPU run's measured cost, else the qualification's estimate.
    pub gpu_cost_usd: Option<f64>,
    pub gpu_cost_measured: bool,
    pub savings_per_run_usd: Option<f64>,
    /// CPU runs of this app per month, from the history (`None`: seen once).
    pub runs_per_month: Option<f64>,
    pub savings_per_month_usd: Option<f64>,
    pub gpu_runs: usize,
    pub gpu_runs_ok: usize,
    /// The latest validation's verdict (PASS, WARN, FAIL).
    pub validation: Option<String>,
    pub recommendation: Recommendation,
    /// The config to use: the best GPU run's, else the newest.
    pub config_id: Option<i64>,
    pub best_run_id: Option<i64>,
    /// The prices qualify's costs are at.
    pub price_source: Option<String>,
}

/// The fleet's key figures.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Kpis {
    pub jobs: usize,
    pub qualified: usize,
    /// Qualified jobs that qualify recommends for the GPU.
    pub recommended: usize,
    /// Jobs with a successful GPU test run.
    pub tested: usize,
    /// Jobs whose latest validation passed (PASS or WARN).
    pub validated: usize,
    /// Jobs recommended to migrate.
    pub migrate: usize,
    /// Σ CPU duration / Σ best GPU duration over the tested jobs.
    pub measured_speedup: Option<f64>,
    /// Σ CPU duration / Σ predicted GPU duration over the recommended jobs not tested yet.
    pub predicted_speedup: Option<f64>,
    /// Σ per run over the jobs to migrate: on the CPU, then on the GPU.
    pub cost_before_usd: f64,
    pub cost_after_usd: f64,
    pub savings_per_run_usd: f64,
    /// Σ over the jobs to migrate whose frequency is known.
    pub savings_per_month_usd: Option<f64>,
    /// Σ predicted savings per run of the recommended jobs not tested yet.
    pub predicted_savings_per_run_usd: f64,
    /// Its 80 % range: each job's GPU cost at the low and the high end of its speedup range
    /// (jobs qualified before ranges were recorded count at their point estimate).
    pub predicted_savings_low_usd: f64,
    pub predicted_savings_high_usd: f64,
    /// Qualified jobs with a measured GPU run, and those with a prediction only.
    pub measured: usize,
    pub predicted_only: usize,
    /// The prices the qualified jobs' costs are at, with how many jobs each (more than one:
    /// the prices changed between qualifications).
    pub price_sources: Vec<(String, usize)>,
}

pub use aether_core::cost::savings_range;

/// The overview: the KPIs, the job list and the qualified fleet's categories.
#[derive(Clone, Debug, Serialize)]
pub struct Overview {
    pub generated_ms: i64,
    pub kpis: Kpis,
    pub jobs: Vec<JobRow>,
    pub categories: Vec<(String, usize)>,
}

/// One run of a job's page.
#[derive(Clone, Debug, Serialize)]
pub struct RunRow {
    pub run_id: i64,
    /// `cpu-original` or `gpu-test`.
    pub kind: String,
    pub status: String,
    pub backend: Option<String>,
    pub cluster_id: Option<String>,
    /// The cluster's shape and nodes (`shape 3: 1 x m5d.xlarge, 2 x g6.4xlarge`).
    pub cluster: String,
    pub start_ms: Option<i64>,
    pub duration_ms: Option<i64>,
    pub cost_usd: Option<f64>,
    pub config_id: Option<i64>,
    pub speedup: Option<f64>,
    /// The config's changes against the previous GPU run's: (property, before, after).
    pub changed: Vec<(String, Option<String>, Option<String>)>,
    /// Executor time allocated with no task running (from the run's event log), its share of
    /// the run's cost, and what the run would have cost had idle executors been released after
    /// 60 s (scale to zero).
    pub idle: Option<Idle>,
    /// How an EMR on EKS run's cost is made up (executor nodes, driver, consolidateAfter tail).
    pub cost_note: Option<String>,
    /// What the tune loop decided after this run (what the run's profile proposed is the next
    /// run's config changes).
    pub decision: Option<String>,
    pub failure_reason: Option<String>,
    /// The latest validation of this run.
    pub validation: Option<String>,
    pub best: bool,
}

/// `executors $0.030 (spot $0.310/h) + driver $0.010 + tail $0.0040` from an EMR on EKS
/// run's recorded cost.
fn cost_note(c: &serde_json::Value) -> Option<String> {
    let f = |k: &str| c[k].as_f64();
    let usd = |k: &str| f(k).map(|v| crate::money::usd(Some(v)));
    Some(format!(
        "executors {} ({} ${:.3}/h) + driver {} (on-demand) + consolidateAfter tail {}",
        usd("executor_usd")?,
        c["executor_price"].as_str().unwrap_or("?"),
        f("executor_usd_per_hour")?,
        usd("driver_usd")?,
        usd("tail_usd")?
    ))
}

/// A run's idle executor capacity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Idle {
    pub executors: i64,
    pub allocated_ms: i64,
    pub idle_ms: i64,
    pub idle_ms_scale_to_zero_60s: i64,
    /// The executors' cost × their idle share (on EMR on EKS the executor nodes' cost, on EMR
    /// the run's: its nodes stay for the whole run).
    pub idle_cost_usd: Option<f64>,
    /// The run's cost with the idle time cut to 60 s per gap.
    pub scale_to_zero_cost_usd: Option<f64>,
}

impl Idle {
    /// From a run's recorded details (`idle`, and `cost` of an EMR on EKS run) and its cost.
    fn of(details: &serde_json::Value, cost: Option<f64>) -> Option<Idle> {
        let v = &details["idle"];
        let n = |k: &str| v[k].as_i64();
        let (allocated, idle) = (n("allocated_ms")?, n("idle_ms")?);
        let cut = n("idle_ms_scale_to_zero_60s").unwrap_or(idle);
        // what the executors cost: on EKS their nodes' share, else the whole run's
        let base = details["cost"]["executor_usd"].as_f64().or(cost);
        let share = |x: i64| {
            base.filter(|_| allocated > 0)
                .map(|c| c * x as f64 / allocated as f64)
        };
        Some(Idle {
            executors: n("executors").unwrap_or(0),
            allocated_ms: allocated,
            idle_ms: idle,
            idle_ms_scale_to_zero_60s: cut,
            idle_cost_usd: share(idle),
            scale_to_zero_cost_usd: cost.zip(share(idle - cut)).map(|(c, saved)| c - saved),
        })
    }
    /// The idle share in percent.
    pub fn pct(&self) -> f64 {
        if self.allocated_ms > 0 {
            100.0 * self.idle_ms as f64 / self.allocated_ms as f64
        } else {
            0.0
        }
    }
}

/// The qualification a job page shows.
#[derive(Clone, Debug, Serialize)]
pub struct QualificationView {
    pub platform: String,
    pub model: String,
    pub speedup: f64,
    pub category: String,
    pub not_recommended_reason: String,
    pub unsupported_pct: f64,
    /// The CPU cluster the event log ran on, as its nodes (`4 x r5.4xlarge`).
    pub cpu_cluster: String,
    /// Its driver, executors and how its worker type was found.
    pub cpu_cluster_details: String,
    /// The recommended GPU cluster, as its nodes (`1 x g4dn.2xlarge`).
    pub gpu_cluster: String,
    /// Its executors and GPUs.
    pub gpu_cluster_details: String,
}

/// One validation, as the reports show it.
#[derive(Clone, Debug, Serialize)]
pub struct ValidationRow {
    pub validation_id: i64,
    pub job_id: i64,
    pub app_name: String,
    pub cpu_run_id: Option<i64>,
    pub gpu_run_id: Option<i64>,
    pub verdict: String,
    pub failed_checks: i64,
    pub created_ms: i64,
    pub reasons: Vec<String>,
}

impl ValidationRow {
    fn of(v: &Validation, app_name: &str) -> ValidationRow {
        ValidationRow {
            validation_id: v.validation_id,
            job_id: v.job_id,
            app_name: app_name.to_string(),
            cpu_run_id: v.cpu_run_id,
            gpu_run_id: v.gpu_run_id,
            verdict: v.verdict.clone(),
            failed_checks: v.failed_checks,
            created_ms: v.created_ms,
            reasons: v.report["reasons"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// A job's page: every run, the validations, the config to use.
#[derive(Clone, Debug, Serialize)]
pub struct JobDetail {
    pub job: JobRow,
    pub qualification: Option<QualificationView>,
    pub runs: Vec<RunRow>,
    pub validations: Vec<ValidationRow>,
    /// The properties of the config to use, as `spark-defaults.conf` lines.
    pub spark_defaults: String,
    /// The recommended GPU cluster, as JSON.
    pub cluster: String,
}

/// The validations of a period, new failures first.
#[derive(Clone, Debug, Serialize)]
pub struct ValidationReport {
    pub since_ms: i64,
    pub until_ms: i64,
    /// Each job's latest validation in the period, new failures first, then failures, warnings,
    /// passes.
    pub latest: Vec<ValidationRow>,
    /// Jobs failing now that did not before the period (or had no validation).
    pub new_failures: Vec<i64>,
    /// Jobs failing before the period that pass now.
    pub fixed: Vec<i64>,
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    /// Every validation of the period, newest first.
    pub all: Vec<ValidationRow>,
}

/// Whether qualify recommends a job of this category for the GPU.
pub fn recommended_by_qualify(category: Option<&str>) -> bool {
    matches!(category, Some(c) if c != "Not Recommended" && c != "Not Applicable")
}

/// Everything the reports read about one job.
struct JobFacts {
    summary: JobSummary,
    cpu_start_ms: Option<i64>,
    pred_gpu_ms: Option<i64>,
    not_recommended_reason: Option<String>,
    runs: Vec<Run>,
    validations: Vec<Validation>,
}

fn facts(h: &History) -> Result<Vec<JobFacts>> {
    let mut out = Vec::new();
    for s in h.list()? {
        let q = h.qualification(s.job_id)?;
        out.push(JobFacts {
            cpu_start_ms: h.cpu_run(s.job_id)?.and_then(|c| c.start_ms),
            pred_gpu_ms: q.as_ref().map(|q| q.app_duration_pred_ms),
            not_recommended_reason: q.map(|q| q.not_recommended_reason),
            runs: h.runs(s.job_id)?,
            validations: h.validations(s.job_id)?,
            summary: s,
        });
    }
    Ok(out)
}

/// Runs per month of each app name, from the start times of its CPU runs in the history.
fn frequencies(jobs: &[JobFacts]) -> HashMap<String, f64> {
    let mut starts: HashMap<&str, Vec<i64>> = HashMap::new();
    for j in jobs {
        let cpu_start = j
            .runs
            .iter()
            .find(|r| r.kind == "cpu-original")
            .and_then(|r| r.start_ms)
            .or(j.cpu_start_ms);
        if let Some(t) = cpu_start {
            starts.entry(&j.summary.app_name).or_default().push(t);
        }
    }
    starts
        .into_iter()
        .filter_map(|(name, mut t)| {
            t.sort();
            t.dedup();
            let span = (t.last()? - t.first()?) as f64;
            (t.len() >= 2 && span > 0.0)
                .then(|| (name.to_string(), (t.len() - 1) as f64 * MONTH_MS / span))
        })
        .collect()
}

fn ratio(a: i64, b: i64) -> Option<f64> {
    (a > 0 && b > 0).then(|| a as f64 / b as f64)
}

fn recommend(j: &JobFacts, row: &JobRow) -> Recommendation {
    let r = |action, reason: String| Recommendation { action, reason };
    let Some(category) = row.category.as_deref() else {
        return r(
            Action::Qualify,
            "not qualified yet: run aether qualify".into(),
        );
    };
    let latest = j.validations.last().map(|v| v.verdict.as_str());
    if let Some(speedup) = row.measured_speedup {
        if latest == Some("FAIL") {
            return r(
                Action::StayOnCpu,
                format!("validation failed: the GPU output differs ({speedup:.2}x faster)"),
            );
        }
        if speedup < 1.0 {
            return if row.gpu_runs_ok >= 3 {
                r(
                    Action::StayOnCpu,
                    format!(
                        "slower on the GPU ({speedup:.2}x) after {} tuning runs",
                        row.gpu_runs_ok
                    ),
                )
            } else {
                r(
                    Action::TuneFurther,
                    format!(
                        "slower on the GPU so far ({speedup:.2}x after {} runs)",
                        row.gpu_runs_ok
                    ),
                )
            };
        }
        if row.savings_per_run_usd.is_some_and(|s| s < 0.0) {
            return r(
                Action::TuneFurther,
                format!("{speedup:.2}x faster but dearer per run: try a smaller GPU cluster"),
            );
        }
        return match latest {
            Some("PASS") | Some("WARN") => r(
                Action::Migrate,
                format!(
                    "{speedup:.2}x faster, output validated{}",
                    if latest == Some("WARN") {
                        " (with warnings)"
                    } else {
                        ""
                    }
                ),
            ),
            _ => r(
                Action::TuneFurther,
                format!("{speedup:.2}x faster, output not validated yet: run aether validate"),
            ),
        };
    }
    if !recommended_by_qualify(Some(category)) {
        let why = j
            .not_recommended_reason
            .clone()
            .filter(|x| !x.is_empty() && x != "N/A")
            .unwrap_or_else(|| format!("qualify says {category}"));
        return r(Action::StayOnCpu, why);
    }
    let failed = row.gpu_runs - row.gpu_runs_ok;
    r(
        Action::TuneFurther,
        if failed > 0 {
            format!("{failed} GPU test run(s), none successful yet")
        } else {
            format!(
                "predicted {:.2}x ({category}), not tested on a GPU yet",
                row.predicted_speedup.unwrap_or(0.0)
            )
        },
    )
}

/// What a job's GPU runs are compared with: the duration and the cost per run of its CPU run,
/// the recorded CPU original's (completed) where there is one, else the qualified log's duration
/// and qualify's cost estimate.
pub fn cpu_baseline(runs: &[Run], s: &JobSummary) -> (Option<i64>, Option<f64>) {
    let cpu_original = runs
        .iter()
        .find(|r| r.kind == "cpu-original" && r.status == "COMPLETED");
    (
        cpu_original
            .and_then(|r| r.duration_ms)
            .or(s.app_duration_ms),
        cpu_original.and_then(|r| r.cost_usd).or(s.cpu_cost_usd),
    )
}

fn row_of(j: &JobFacts, freq: &HashMap<String, f64>) -> JobRow {
    let s = &j.summary;
    let best = best_gpu_run(&j.runs);
    let (cpu_ms, cpu_cost) = cpu_baseline(&j.runs, s);
    let gpu_ms = best.and_then(|r| r.duration_ms);
    let (gpu_cost, measured) = match best.and_then(|r| r.cost_usd) {
        Some(c) => (Some(c), true),
        None => (s.gpu_cost_usd, false),
    };
    let savings = cpu_cost.zip(gpu_cost).map(|(c, g)| c - g);
    let runs_per_month = freq.get(&s.app_name).copied();
    let gpu: Vec<&Run> = j.runs.iter().filter(|r| r.kind == "gpu-test").collect();
    let measured_speedup = cpu_ms.zip(gpu_ms).and_then(|(c, g)| ratio(c, g));
    let bound = |k: &str| s.range.as_ref().and_then(|r| r[k].as_f64());
    let (low, high) = (bound("low"), bound("high"));
    let error_pct = |p: Option<f64>, m: Option<f64>| {
        p.zip(m)
            .filter(|(_, m)| *m > 0.0)
            .map(|(p, m)| (p - m) / m * 100.0)
    };
    let mut row = JobRow {
        job_id: s.job_id,
        app_id: s.app_id.clone(),
        app_name: s.app_name.clone(),
        event_log: s.event_log.clone(),
        qualifications: s.qualifications,
        category: s.category.clone(),
        predicted_speedup: s.speedup,
        measured_speedup,
        predicted_low: low,
        predicted_high: high,
        speedup_error_pct: error_pct(s.speedup, measured_speedup),
        within_range: measured_speedup
            .zip(low.zip(high))
            .map(|(m, (l, h))| l <= m && m <= h),
        predicted_gpu_cost_usd: s.gpu_cost_usd,
        gpu_cost_error_pct: if measured {
            error_pct(s.gpu_cost_usd, gpu_cost)
        } else {
            None
        },
        cpu_duration_ms: cpu_ms,
        gpu_duration_ms: gpu_ms,
        predicted_gpu_duration_ms: j.pred_gpu_ms,
        cpu_cost_usd: cpu_cost,
        gpu_cost_usd: gpu_cost,
        gpu_cost_measured: measured,
        savings_per_run_usd: savings,
        runs_per_month,
        savings_per_month_usd: savings.zip(runs_per_month).map(|(s, n)| s * n),
        gpu_runs: gpu.len(),
        gpu_runs_ok: gpu.iter().filter(|r| r.status == "COMPLETED").count(),
        validation: j.validations.last().map(|v| v.verdict.clone()),
        recommendation: Recommendation {
            action: Action::Qualify,
            reason: String::new(),
        },
        config_id: best.and_then(|r| r.config_id).or(s.config_id),
        best_run_id: best.map(|r| r.run_id),
        price_source: s.price_source.clone(),
    };
    row.recommendation = recommend(j, &row);
    row
}

fn kpis(rows: &[JobRow]) -> Kpis {
    let mut k = Kpis {
        jobs: rows.len(),
        ..Default::default()
    };
    let (mut cpu_t, mut gpu_t, mut cpu_u, mut gpu_u) = (0i64, 0i64, 0i64, 0i64);
    let mut monthly: Option<f64> = None;
    for r in rows {
        k.qualified += r.category.is_some() as usize;
        let recommended = recommended_by_qualify(r.category.as_deref());
        k.recommended += recommended as usize;
        k.validated += matches!(r.validation.as_deref(), Some("PASS") | Some("WARN")) as usize;
        if r.category.is_some() {
            if r.measured_speedup.is_some() {
                k.measured += 1;
            } else {
                k.predicted_only += 1;
            }
        }
        if r.cpu_cost_usd.is_some() || r.predicted_gpu_cost_usd.is_some() {
            let p = r
                .price_source
                .clone()
                .unwrap_or_else(|| "prices not recorded".into());
            match k.price_sources.iter_mut().find(|(s, _)| *s == p) {
                Some((_, n)) => *n += 1,
                None => k.price_sources.push((p, 1)),
            }
        }
        if let (Some(c), Some(g)) = (r.cpu_duration_ms, r.gpu_duration_ms) {
            k.tested += 1;
            cpu_t += c;
            gpu_t += g;
        } else if recommended
            && let (Some(c), Some(p)) = (r.cpu_duration_ms, r.predicted_gpu_duration_ms)
        {
            cpu_u += c;
            gpu_u += p;
            k.predicted_savings_per_run_usd += r.savings_per_run_usd.unwrap_or(0.0);
            if let (Some(c), Some(g), Some(s)) =
                (r.cpu_cost_usd, r.gpu_cost_usd, r.predicted_speedup)
            {
                let (lo, hi) = savings_range(c, g, s, r.predicted_low, r.predicted_high);
                k.predicted_savings_low_usd += lo;
                k.predicted_savings_high_usd += hi;
            }
        }
        if r.recommendation.action == Action::Migrate {
            k.migrate += 1;
            if let (Some(c), Some(g)) = (r.cpu_cost_usd, r.gpu_cost_usd) {
                k.cost_before_usd += c;
                k.cost_after_usd += g;
            }
            if let Some(m) = r.savings_per_month_usd {
                *monthly.get_or_insert(0.0) += m;
            }
        }
    }
    k.measured_speedup = ratio(cpu_t, gpu_t);
    k.predicted_speedup = ratio(cpu_u, gpu_u);
    k.savings_per_run_usd = k.cost_before_usd - k.cost_after_usd;
    k.savings_per_month_usd = monthly;
    k
}

/// The overview of the whole history.
pub fn overview(h: &History) -> Result<Overview> {
    overview_of(h, |_| true)
}

/// The overview of the jobs `keep` selects (their frequencies still from the whole history).
pub fn overview_of(h: &History, keep: impl Fn(&JobSummary) -> bool) -> Result<Overview> {
    let jobs = facts(h)?;
    let freq = frequencies(&jobs);
    let rows: Vec<JobRow> = jobs
        .iter()
        .filter(|j| keep(&j.summary))
        .map(|j| row_of(j, &freq))
        .collect();
    let mut cats: BTreeMap<String, usize> = BTreeMap::new();
    for r in &rows {
        if let Some(c) = &r.category {
            *cats.entry(c.clone()).or_default() += 1;
        }
    }
    let order = [
        "Large",
        "Medium",
        "Small",
        "Not Recommended",
        "Not Applicable",
    ];
    let mut categories: Vec<(String, usize)> = cats.into_iter().collect();
    categories.sort_by_key(|(c, _)| order.iter().position(|o| o == c).unwrap_or(order.len()));
    Ok(Overview {
        generated_ms: crate::now_ms(),
        kpis: kpis(&rows),
        jobs: rows,
        categories,
    })
}

/// `1 GiB`, `1.5 GiB`, `512 MiB`.
fn mib(m: i64) -> String {
    if m >= 1024 {
        format!("{} GiB", (m as f64 / 1024.0 * 10.0).round() / 10.0)
    } else {
        format!("{m} MiB")
    }
}

/// `1 executor of 2 cores`, `4 executors of 8 cores`.
fn executors(n: Option<i64>, cores: Option<i64>) -> Option<String> {
    let n = n.filter(|n| *n > 0)?;
    let s = if n == 1 { "" } else { "s" };
    Some(match cores.filter(|c| *c > 0) {
        Some(c) => format!("{n} executor{s} of {c} cores"),
        None => format!("{n} executor{s}"),
    })
}

/// A qualification's cluster as the pages show both sides alike: its nodes (`4 x r5.4xlarge`)
/// and, apart, its details. Reads the GPU side qualify records (`summary`, `shape`) and the CPU
/// side (the cluster inferred from the event log: worker nodes and type, driver, executors);
/// anything else is shown as it is, in the details.
pub fn cluster_view(v: &serde_json::Value) -> (String, String) {
    let i = |k: &str| v[k].as_i64();
    let text = |k: &str| v[k].as_str().filter(|s| !s.is_empty());
    if let Some(summary) = text("summary") {
        let s = &v["shape"];
        let mut d: Vec<String> =
            executors(s["executors"].as_i64(), s["cores_per_executor"].as_i64())
                .into_iter()
                .collect();
        if let Some(gpu) = s["gpu"].as_str().filter(|g| !g.is_empty()) {
            let mem = s["gpu_memory_mib"]
                .as_i64()
                .filter(|m| *m > 0)
                .map(|m| format!(" ({})", mib(m)))
                .unwrap_or_default();
            d.push(format!(
                "{} {gpu}{mem} per node",
                s["gpus_per_node"].as_i64().unwrap_or(1)
            ));
        }
        return (summary.to_string(), d.join(", "));
    }
    if let Some(worker) = text("worker_instance") {
        let mut d = Vec::new();
        if let Some(driver) = text("driver_instance") {
            d.push(format!("driver {driver}"));
        }
        let mut e: Vec<String> = executors(i("num_executors"), i("cores_per_executor"))
            .into_iter()
            .collect();
        if let Some(h) = i("executor_heap_mib").filter(|h| *h > 0) {
            e.push(format!("{} heap", mib(h)));
        }
        if v["dynamic_allocation"].as_bool() == Some(true) {
            e.push("dynamic allocation".into());
        }
        if !e.is_empty() {
            d.push(e.join(", "));
        }
        d.push(match text("worker_instance_match") {
            Some("nearest") => "worker type inferred from the event log (nearest size)".into(),
            _ => "worker type inferred from the event log".to_string(),
        });
        return (
            format!("{} x {worker}", i("num_worker_nodes").unwrap_or(1).max(1)),
            d.join("; "),
        );
    }
    if v.is_null() {
        (String::new(), String::new())
    } else {
        ("–".into(), v.to_string())
    }
}

/// A job's page; `None` for an unknown job.
pub fn job(h: &History, job_id: i64) -> Result<Option<JobDetail>> {
    let jobs = facts(h)?;
    let freq = frequencies(&jobs);
    let Some(j) = jobs.iter().find(|j| j.summary.job_id == job_id) else {
        return Ok(None);
    };
    let row = row_of(j, &freq);
    let configs: HashMap<i64, BTreeMap<String, String>> = h
        .configs(job_id)?
        .into_iter()
        .map(|c| (c.config_id, c.properties))
        .collect();
    let decisions: HashMap<i64, String> = h
        .job_iterations(job_id)?
        .into_iter()
        .filter_map(|it| it.run_id.map(|r| (r, it.decision)))
        .collect();
    let mut prev: Option<&BTreeMap<String, String>> = None;
    let mut runs = Vec::new();
    for r in &j.runs {
        let conf = r.config_id.and_then(|c| configs.get(&c));
        let changed = match (prev, conf) {
            (Some(a), Some(b)) if r.kind == "gpu-test" => diff(a, b),
            (None, Some(b)) if r.kind == "gpu-test" => b
                .iter()
                .map(|(k, v)| (k.clone(), None, Some(v.clone())))
                .collect(),
            _ => Vec::new(),
        };
        if r.kind == "gpu-test" && conf.is_some() {
            prev = conf;
        }
        let cluster = match &r.cluster_id {
            Some(id) => cluster_text(h.cluster(id)?.as_ref()),
            None => String::new(),
        };
        runs.push(RunRow {
            run_id: r.run_id,
            kind: r.kind.clone(),
            status: r.status.clone(),
            backend: r.backend.clone(),
            cluster_id: r.cluster_id.clone(),
            cluster,
            start_ms: r.start_ms,
            duration_ms: r.duration_ms,
            cost_usd: r.cost_usd,
            config_id: r.config_id,
            speedup: match (r.kind.as_str(), row.cpu_duration_ms, r.duration_ms) {
                ("gpu-test", Some(c), Some(g)) if r.status == "COMPLETED" => ratio(c, g),
                _ => None,
            },
            changed,
            idle: Idle::of(&r.details, r.cost_usd),
            cost_note: cost_note(&r.details["cost"]),
            decision: decisions.get(&r.run_id).cloned(),
            failure_reason: r.failure_reason.clone(),
            validation: j
                .validations
                .iter()
                .rev()
                .find(|v| v.gpu_run_id == Some(r.run_id))
                .map(|v| v.verdict.clone()),
            best: Some(r.run_id) == row.best_run_id,
        });
    }
    let q = h.qualification(job_id)?;
    let spark_defaults = row
        .config_id
        .and_then(|c| configs.get(&c))
        .map(|p| {
            let w = p.keys().map(|k| k.len()).max().unwrap_or(0);
            p.iter()
                .map(|(k, v)| format!("{k:<w$}  {v}\n"))
                .collect::<String>()
        })
        .unwrap_or_default();
    let cluster = q
        .as_ref()
        .map(|q| serde_json::to_string_pretty(&q.gpu_cluster).unwrap_or_default())
        .unwrap_or_default();
    Ok(Some(JobDetail {
        qualification: q.map(|q| {
            let (cpu_cluster, cpu_cluster_details) = cluster_view(&q.cpu_cluster);
            let (gpu_cluster, gpu_cluster_details) = cluster_view(&q.gpu_cluster);
            QualificationView {
                cpu_cluster,
                cpu_cluster_details,
                gpu_cluster,
                gpu_cluster_details,
                platform: q.platform,
                model: q.model,
                speedup: q.speedup,
                category: q.category,
                not_recommended_reason: q.not_recommended_reason,
                unsupported_pct: q.unsupported_pct,
            }
        }),
        validations: j
            .validations
            .iter()
            .map(|v| ValidationRow::of(v, &row.app_name))
            .collect(),
        job: row,
        runs,
        spark_defaults,
        cluster,
    }))
}

/// A cluster as a run's page shows it: its shape and its nodes.
fn cluster_text(c: Option<&(Option<String>, String, serde_json::Value)>) -> String {
    let Some((shape, _, info)) = c else {
        return String::new();
    };
    let groups: Vec<String> = info["groups"]
        .as_array()
        .map(|g| {
            g.iter()
                .filter_map(|g| {
                    Some(format!(
                        "{} x {}",
                        g["count"].as_i64()?,
                        g["instance_type"].as_str()?
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let spec = &info["spec"];
    let nodes = if !groups.is_empty() {
        groups.join(", ")
    } else if let Some(t) = spec["instance_type"].as_str() {
        format!("{} x {t}", spec["instance_count"].as_i64().unwrap_or(1))
    } else {
        info["backend"].as_str().unwrap_or("").to_string()
    };
    match shape {
        Some(s) => format!("shape {s}: {nodes}"),
        None => nodes,
    }
}

/// The changes from `a` to `b`.
fn diff(
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
) -> Vec<(String, Option<String>, Option<String>)> {
    let mut out = Vec::new();
    for (k, v) in b {
        if a.get(k) != Some(v) {
            out.push((k.clone(), a.get(k).cloned(), Some(v.clone())));
        }
    }
    for (k, v) in a {
        if !b.contains_key(k) {
            out.push((k.clone(), Some(v.clone()), None));
        }
    }
    out.sort();
    out
}

fn verdict_rank(v: &str) -> u8 {
    match v {
        "FAIL" => 0,
        "WARN" => 1,
        _ => 2,
    }
}

/// The validations since `since_ms` (until now), each job's latest first by severity; a failure
/// is new when the job's latest validation before the period was not a failure.
impl ValidationReport {
    /// The alert a scheduled `report validation` raises (`since`: the period as given), if the
    /// failures (`warn`: and warnings) call for one.
    pub fn alert(&self, warn: bool, since: &str) -> Option<String> {
        (self.fail + if warn { self.warn } else { 0 } > 0).then(|| {
            format!(
                "{} failing, {} warning validation(s) since {since} ({} new failure(s))",
                self.fail,
                self.warn,
                self.new_failures.len()
            )
        })
    }
}

pub fn validation_report(h: &History, since_ms: i64) -> Result<ValidationReport> {
    let until_ms = crate::now_ms();
    let names: HashMap<i64, String> = h
        .list()?
        .into_iter()
        .map(|j| (j.job_id, j.app_name))
        .collect();
    let all = h.all_validations()?;
    let name = |id: i64| names.get(&id).cloned().unwrap_or_default();
    let mut latest: BTreeMap<i64, &Validation> = BTreeMap::new();
    let mut before: BTreeMap<i64, &Validation> = BTreeMap::new();
    for v in &all {
        if v.created_ms >= since_ms {
            latest.insert(v.job_id, v);
        } else {
            before.insert(v.job_id, v);
        }
    }
    let mut new_failures = Vec::new();
    let mut fixed = Vec::new();
    for (job, v) in &latest {
        let was_failing = before.get(job).is_some_and(|b| b.verdict == "FAIL");
        if v.verdict == "FAIL" && !was_failing {
            new_failures.push(*job);
        }
        if v.verdict != "FAIL" && was_failing {
            fixed.push(*job);
        }
    }
    let mut rows: Vec<ValidationRow> = latest
        .values()
        .map(|v| ValidationRow::of(v, &name(v.job_id)))
        .collect();
    rows.sort_by_key(|r| {
        (
            !new_failures.contains(&r.job_id),
            verdict_rank(&r.verdict),
            r.job_id,
        )
    });
    let count = |x: &str| rows.iter().filter(|r| r.verdict == x).count();
    let (pass, warn, fail) = (count("PASS"), count("WARN"), count("FAIL"));
    let mut period: Vec<ValidationRow> = all
        .iter()
        .filter(|v| v.created_ms >= since_ms)
        .map(|v| ValidationRow::of(v, &name(v.job_id)))
        .collect();
    period.reverse();
    Ok(ValidationReport {
        since_ms,
        until_ms,
        latest: rows,
        new_failures,
        fixed,
        pass,
        warn,
        fail,
        all: period,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_capacity_of_an_emr_run_and_of_an_emr_on_eks_run() {
        let idle = serde_json::json!({"executors": 2, "allocated_ms": 1000,
                                      "idle_ms": 400, "idle_ms_scale_to_zero_60s": 100});
        // EMR: the nodes stay for the run, its whole cost is shared by idle time
        let i = Idle::of(&serde_json::json!({ "idle": idle }), Some(10.0)).unwrap();
        assert_eq!(i.idle_cost_usd, Some(4.0));
        assert!((i.scale_to_zero_cost_usd.unwrap() - 7.0).abs() < 1e-12);
        assert!((i.pct() - 40.0).abs() < 1e-12);
        // EKS: only the executor nodes' cost is idle; the driver's and the tail are not
        let d = serde_json::json!({"idle": idle, "cost": {"executor_usd": 6.0, "driver_usd": 3.0,
            "tail_usd": 1.0, "total_usd": 10.0, "executor_price": "spot", "executor_usd_per_hour": 0.31}});
        let i = Idle::of(&d, Some(10.0)).unwrap();
        assert!((i.idle_cost_usd.unwrap() - 2.4).abs() < 1e-12);
        assert!((i.scale_to_zero_cost_usd.unwrap() - (10.0 - 6.0 * 0.3)).abs() < 1e-12);
        assert_eq!(
            cost_note(&d["cost"]).as_deref(),
            Some(
                "executors $6.00 (spot $0.310/h) + driver $3.00 (on-demand) + consolidateAfter tail $1.00"
            )
        );
        assert_eq!(cost_note(&serde_json::Value::Null), None);
        assert!(Idle::of(&serde_json::json!({}), Some(1.0)).is_none());
    }

    #[test]
    fn both_sides_of_a_qualification_read_as_nodes() {
        // as qualify records them (the emulator's sample job)
        let cpu = serde_json::json!({"cores_per_executor": 2, "driver_instance": "i3.2xlarge",
            "dynamic_allocation": false, "executor_heap_mib": 1024, "executors_per_node": 1,
            "num_executors": 1, "num_worker_nodes": 1, "worker_instance": "m5d.large",
            "worker_instance_match": "exact"});
        let gpu = serde_json::json!({"summary": "1 x g4dn.2xlarge", "shape": {
            "cores_per_executor": 8, "cost_usd": 0.0026, "executors": 1, "fits_memory": true,
            "gpu": "T4", "gpu_memory_mib": 16384, "gpus_per_node": 1, "hourly_usd": 1.72,
            "instance": "g4dn.2xlarge", "node_memory_mib": 32768, "nodes": 1}});
        assert_eq!(
            cluster_view(&cpu),
            (
                "1 x m5d.large".to_string(),
                "driver i3.2xlarge; 1 executor of 2 cores, 1 GiB heap; worker type inferred from the event log".to_string()
            )
        );
        assert_eq!(
            cluster_view(&gpu),
            (
                "1 x g4dn.2xlarge".to_string(),
                "1 executor of 8 cores, 1 T4 (16 GiB) per node".to_string()
            )
        );
        let big = serde_json::json!({"cores_per_executor": 4, "driver_instance": "i3.2xlarge",
            "dynamic_allocation": true, "executor_heap_mib": 14848, "num_executors": 16,
            "num_worker_nodes": 4, "worker_instance": "m5d.4xlarge",
            "worker_instance_match": "nearest"});
        assert_eq!(
            cluster_view(&big),
            (
                "4 x m5d.4xlarge".to_string(),
                "driver i3.2xlarge; 16 executors of 4 cores, 14.5 GiB heap, dynamic allocation; worker type inferred from the event log (nearest size)".to_string()
            )
        );
        // a summary alone; nothing; something else is kept, in the details
        assert_eq!(
            cluster_view(&serde_json::json!({"summary": "2 x m6gd.4xlarge"})),
            ("2 x m6gd.4xlarge".to_string(), String::new())
        );
        assert_eq!(
            cluster_view(&serde_json::Value::Null),
            (String::new(), String::new())
        );
        assert_eq!(
            cluster_view(&serde_json::json!({"nodes": 3})),
            ("–".to_string(), "{\"nodes\":3}".to_string())
        );
    }
}
