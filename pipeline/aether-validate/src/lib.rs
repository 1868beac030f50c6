//! `aether validate`: is the GPU run's output the CPU run's? Layered checks, cheapest first, each
//! a row with PASS / WARN / FAIL:
//!
//! 1. **schema**: column names, types, nullability;
//! 2. **aggregates**: row count and, per column, count, nulls, min, max, sum (exact for integers
//!    and decimals, as Decimal128(38,10) for floats so the order of addition does not matter),
//!    mean, standard deviation, approximate distinct count, with the deviation in percent;
//! 3. **rows**: every row's canonical 64-bit hash ([`hash`]) compared as a multiset (per bucket:
//!    count and two wrapping sums; only buckets that differ are read again and drilled into), so
//!    duplicates and reordering are caught; rows that differ only in floats are paired and
//!    compared within the tolerance. With a key (given, or a unique column found): per-column
//!    mismatches, largest difference, null differences and example rows, and a deterministic
//!    hash sample of keys both sides pick alike;
//! 4. **distribution**: the two-sample Kolmogorov–Smirnov statistic D per numeric column
//!    (exactly, in SQL) and its p-value ([`ks`]); FAIL only when p < 1e-3 and D > 1e-3.
//!
//! Everything streams through DataFusion: memory stays bounded whatever the size of the outputs.

mod aggregates;
pub mod hash;
mod keyed;
pub mod ks;
pub mod logs;
mod orc;
pub mod phases;
mod read;
pub mod report;
mod rows;
mod schema;

use std::collections::BTreeSet;
use std::time::Instant;

use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::prelude::{SessionConfig, SessionContext};
use serde::Serialize;

use aggregates::{aggregates, find_key};
use keyed::keyed;
use ks::ks_column;
use rows::rows;
use schema::{UTC_MICROS, compare_schema};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An output that cannot be read (the message names it).
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Query(String),
}

pub type Result<T> = std::result::Result<T, Error>;

fn q(e: datafusion::error::DataFusionError) -> Error {
    Error::Query(e.to_string())
}

/// The outputs' file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Parquet,
    Csv,
    Json,
    Orc,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "parquet" => Ok(Format::Parquet),
            "csv" => Ok(Format::Csv),
            "json" | "jsonl" | "ndjson" => Ok(Format::Json),
            "orc" => Ok(Format::Orc),
            o => Err(format!("unknown format {o:?} (parquet, csv, json, orc)")),
        }
    }
}

/// The checks to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CheckKind {
    Counts,
    Aggregates,
    Rows,
    Sample,
    Ks,
}

impl std::str::FromStr for CheckKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Ok(match s.trim() {
            "counts" => CheckKind::Counts,
            "aggregates" => CheckKind::Aggregates,
            "rows" => CheckKind::Rows,
            "sample" => CheckKind::Sample,
            "ks" => CheckKind::Ks,
            o => {
                return Err(format!(
                    "unknown check {o:?} (counts, aggregates, rows, sample, ks)"
                ));
            }
        })
    }
}

/// Memory for the sorts, aggregations and joins of a comparison by default, in MiB: with the
/// Parquet readers and the binary, a validate of two 1.2 GB outputs peaks well under a third of
/// what Spark takes for the same comparison (docs/performance.md).
pub const DEFAULT_MEMORY_MB: usize = 512;

/// What to compare and how strictly.
#[derive(Clone, Debug)]
pub struct Options {
    pub format: Format,
    /// Key columns (empty: a unique column is looked for).
    pub key: Vec<String>,
    /// Relative tolerance of doubles and floats (defaults: 1e-6 and 1e-4, as NVIDIA's own
    /// CPU-vs-GPU tests); one value overrides both.
    pub rel_tol: Option<f64>,
    /// Absolute tolerance of floats.
    pub abs_tol: f64,
    pub checks: BTreeSet<CheckKind>,
    /// Keys in the hash sample.
    pub sample_keys: usize,
    /// Example rows per finding.
    pub max_examples: usize,
    /// Print progress to stderr.
    pub progress: bool,
    /// Memory for sorts, aggregations and joins, in MiB (beyond it they spill to disk).
    pub memory_mb: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            format: Format::Parquet,
            key: Vec::new(),
            rel_tol: None,
            abs_tol: 0.0,
            checks: [
                CheckKind::Counts,
                CheckKind::Aggregates,
                CheckKind::Rows,
                CheckKind::Sample,
                CheckKind::Ks,
            ]
            .into_iter()
            .collect(),
            sample_keys: 1000,
            max_examples: 5,
            progress: true,
            memory_mb: DEFAULT_MEMORY_MB,
        }
    }
}

impl Options {
    fn tol(&self, t: &DataType) -> f64 {
        match (self.rel_tol, t) {
            (Some(r), _) => r,
            (None, DataType::Float32 | DataType::Float16) => 1e-4,
            (None, _) => 1e-6,
        }
    }

    fn keep(&self) -> hash::FloatKeep {
        hash::FloatKeep {
            f64_bits: hash::keep_bits(self.tol(&DataType::Float64), 52),
            f32_bits: hash::keep_bits(self.tol(&DataType::Float32), 23),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "PASS",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
        })
    }
}

/// One row of the result.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub layer: String,
    pub check: String,
    pub column: Option<String>,
    pub cpu: String,
    pub gpu: String,
    pub deviation_pct: Option<f64>,
    pub verdict: Verdict,
    pub detail: String,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub cpu: String,
    pub gpu: String,
    pub verdict: Verdict,
    /// One line per WARN or FAIL check.
    pub reasons: Vec<String>,
    pub cpu_rows: u64,
    pub gpu_rows: u64,
    pub key: Vec<String>,
    pub checks: Vec<Check>,
    pub elapsed_ms: u64,
}

struct Builder {
    checks: Vec<Check>,
}

impl Builder {
    /// A check that passes when `ok`, else is `bad` with the reason `why()`.
    #[allow(clippy::too_many_arguments)]
    fn gate(
        &mut self,
        layer: &str,
        check: &str,
        column: Option<&str>,
        cpu: impl ToString,
        gpu: impl ToString,
        deviation_pct: Option<f64>,
        ok: bool,
        bad: Verdict,
        why: impl FnOnce() -> String,
    ) {
        let (verdict, detail) = if ok {
            (Verdict::Pass, String::new())
        } else {
            (bad, why())
        };
        self.add(
            layer,
            check,
            column,
            cpu,
            gpu,
            deviation_pct,
            verdict,
            detail,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        layer: &str,
        check: &str,
        column: Option<&str>,
        cpu: impl ToString,
        gpu: impl ToString,
        deviation_pct: Option<f64>,
        verdict: Verdict,
        detail: impl Into<String>,
    ) {
        self.checks.push(Check {
            layer: layer.into(),
            check: check.into(),
            column: column.map(String::from),
            cpu: cpu.to_string(),
            gpu: gpu.to_string(),
            deviation_pct,
            verdict,
            detail: detail.into(),
        });
    }
}

/// A select list whose items are named e0, e1, … (DataFusion wants distinct names).
fn aliased(exprs: &[String]) -> String {
    exprs
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{e} AS e{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn ident(c: &str) -> String {
    format!("\"{}\"", c.replace('"', "\"\""))
}

/// A session whose sorts, aggregations and joins stay within `memory_mb` (spilling to the
/// temporary directory beyond it: joins are sort-merge joins, which can).
fn session(memory_mb: usize) -> Result<SessionContext> {
    let mut cfg = SessionConfig::new();
    // Spark's INT96 timestamps read as microsecond timestamps, as Spark reads them
    cfg.options_mut().execution.parquet.coerce_int96 = Some("us".into());
    cfg.options_mut().optimizer.prefer_hash_join = false;
    let rt = datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
        .with_memory_pool(std::sync::Arc::new(
            datafusion::execution::memory_pool::FairSpillPool::new(memory_mb << 20),
        ))
        .build_arc()
        .map_err(q)?;
    Ok(SessionContext::new_with_config_rt(cfg, rt))
}

/// A query's rows as text, NULL as `None`.
pub(crate) async fn text_rows(ctx: &SessionContext, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
    let batches = ctx.sql(sql).await.map_err(q)?.collect().await.map_err(q)?;
    let mut out = Vec::new();
    for b in &batches {
        for r in 0..b.num_rows() {
            out.push(
                (0..b.num_columns())
                    .map(|c| {
                        let a = b.column(c);
                        (!a.is_null(r))
                            .then(|| array_value_to_string(a, r).ok())
                            .flatten()
                    })
                    .collect(),
            );
        }
    }
    Ok(out)
}

/// The first row of a query's result as text, NULL as `None`.
async fn one_row(ctx: &SessionContext, sql: &str) -> Result<Vec<Option<String>>> {
    text_rows(ctx, sql)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| Error::Query(format!("no row from {sql}")))
}

fn is_int(t: &DataType) -> bool {
    t.is_integer()
}
fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}
fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(_, _) | DataType::Decimal256(_, _))
}
fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
        || matches!(t, DataType::Dictionary(_, v) if matches!(**v, DataType::Utf8))
}
fn is_temporal(t: &DataType) -> bool {
    t.is_temporal()
}
fn is_numeric(t: &DataType) -> bool {
    is_int(t) || is_float(t) || is_decimal(t)
}
fn is_nested(t: &DataType) -> bool {
    t.is_nested()
}

fn pct(cpu: f64, gpu: f64) -> Option<f64> {
    if cpu == gpu {
        Some(0.0)
    } else if cpu == 0.0 || !cpu.is_finite() || !gpu.is_finite() {
        None
    } else {
        Some((gpu - cpu) / cpu.abs() * 100.0)
    }
}

/// Layer 1: the two runs' event logs (rows read and written, the write commands).
pub async fn validate_logs(cpu_log: &str, gpu_log: &str) -> Result<Report> {
    let t0 = Instant::now();
    let (b, c, g) = log_checks(cpu_log, gpu_log).await?;
    Ok(run_report(cpu_log, gpu_log, &c, &g, b, Vec::new(), t0))
}

/// The event logs' checks, and what each log says.
async fn log_checks(
    cpu_log: &str,
    gpu_log: &str,
) -> Result<(Builder, logs::LogFacts, logs::LogFacts)> {
    let c = logs::facts(cpu_log).await?;
    let g = logs::facts(gpu_log).await?;
    let mut b = Builder { checks: Vec::new() };
    logs::compare(&c, &g, &mut b);
    Ok((b, c, g))
}

/// The report of two runs: their logs' checks (and notes), then each compared output's checks.
fn run_report(
    cpu_log: &str,
    gpu_log: &str,
    c: &logs::LogFacts,
    g: &logs::LogFacts,
    b: Builder,
    outputs: Vec<Report>,
    t0: Instant,
) -> Report {
    let mut r = finish(
        &format!("{} ({})", cpu_log, c.app_id),
        &format!("{} ({})", gpu_log, g.app_id),
        b,
        c.rows_written.max(0) as u64,
        g.rows_written.max(0) as u64,
        Vec::new(),
        t0,
    );
    for o in outputs {
        r.absorb(o);
    }
    r
}

/// A GPU test run against the CPU run it copies: their event logs, then each output the CPU
/// run wrote against the GPU run's copy of it (`outputs`: the sandbox's (production path,
/// sandbox path) pairs that `submit` recorded), in the format the CPU run wrote it.
pub async fn validate_run(
    cpu_log: &str,
    gpu_log: &str,
    outputs: &[(String, String)],
    o: &Options,
) -> Result<Report> {
    let t0 = Instant::now();
    let (mut b, c, g) = log_checks(cpu_log, gpu_log).await?;
    let logs_checks = b.checks.len();
    let mut outs = Vec::new();
    let mut seen = BTreeSet::new();
    let matched = logs::match_writes(&c.writes, &g.writes);
    for (i, w) in c.writes.iter().enumerate() {
        let Some(path) = w.target.path.clone() else {
            continue;
        };
        if !seen.insert(path.clone()) {
            continue;
        }
        let name = w.name();
        // the sandbox's copy of the path, else where the GPU run's matching write went (a
        // table: its location in the run's own warehouse)
        let mapped = outputs
            .iter()
            .find_map(|(from, to)| {
                let from = from.trim_end_matches('/');
                if path == from {
                    Some(to.clone())
                } else {
                    path.strip_prefix(&format!("{from}/"))
                        .map(|rest| format!("{}/{rest}", to.trim_end_matches('/')))
                }
            })
            .or_else(|| {
                let gw = &g.writes[matched[i]?];
                (gw.name() == name || w.target.table.is_none())
                    .then(|| gw.target.path.clone())
                    .flatten()
                    .filter(|p| *p != path)
            });
        // one "output compared" check per output
        let compared = |b: &mut Builder, gpu: &str, v: Verdict, detail: String| {
            b.add(
                "outputs",
                "output compared",
                Some(&name),
                &path,
                gpu,
                None,
                v,
                detail,
            )
        };
        let Some(gpu_path) = mapped else {
            compared(
                &mut b,
                "(unknown)",
                Verdict::Warn,
                format!(
                    "the GPU run's copy of {path} is not known (no sandbox mapping, and the GPU run \
                     wrote no other place for it): not compared"
                ),
            );
            continue;
        };
        // a table command may not name its format: its files do
        let sniffed = (w.target.format.is_none() && !path.contains("://"))
            .then(|| read::sniff(&path))
            .flatten();
        let format = match (
            w.target.format.as_deref().map(str::parse::<Format>),
            sniffed,
        ) {
            (Some(Ok(f)), _) | (None, Some(f)) => f,
            (other, _) => {
                let why = match other {
                    Some(Err(e)) => e,
                    _ => "of an unknown format".into(),
                };
                compared(
                    &mut b,
                    &gpu_path,
                    Verdict::Warn,
                    format!(
                        "{path} is {why}: only Parquet, CSV, JSON and ORC outputs are compared"
                    ),
                );
                continue;
            }
        };
        if o.progress {
            eprintln!("validate: output {path} against {gpu_path}");
        }
        let mut oo = o.clone();
        oo.format = format;
        // an output that cannot be read fails its check; the other outputs are still compared
        match validate(&path, &gpu_path, &oo).await {
            Ok(r) => {
                compared(
                    &mut b,
                    &gpu_path,
                    r.verdict,
                    format!("{} checks, {}", r.checks.len(), r.verdict),
                );
                outs.push(r);
            }
            Err(e) => compared(
                &mut b,
                &gpu_path,
                Verdict::Fail,
                format!("{name} could not be compared: {e}"),
            ),
        }
    }
    if b.checks.len() == logs_checks {
        b.add(
            "outputs",
            "output compared",
            None,
            c.writes.len(),
            outputs.len(),
            None,
            Verdict::Warn,
            "no output of the CPU run has a known copy from the GPU run: only the event logs were compared",
        );
    }
    Ok(run_report(cpu_log, gpu_log, &c, &g, b, outs, t0))
}

impl Report {
    /// Take in another report's checks, reasons and verdict (one comparison of several parts).
    fn absorb(&mut self, other: Report) {
        self.checks.extend(other.checks);
        self.reasons.extend(other.reasons);
        self.verdict = self.verdict.max(other.verdict);
    }

    /// One report of two (the event logs' and the outputs'): every check, the worse verdict.
    pub fn merge(mut self, other: Report) -> Report {
        self.cpu = format!("{}; {}", self.cpu, other.cpu);
        self.gpu = format!("{}; {}", self.gpu, other.gpu);
        self.elapsed_ms += other.elapsed_ms;
        self.cpu_rows = other.cpu_rows;
        self.gpu_rows = other.gpu_rows;
        self.key = other.key.clone();
        self.absorb(other);
        self
    }
}

/// Cap glibc's heap arenas at two. Each thread that decodes Parquet otherwise gets an arena of
/// its own, and the freed pages of large column chunks stay in them: measured on two 1.2 GB
/// outputs, the peak RSS halves (786 to 402 MB) at the same speed.
fn cap_heap_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; M_ARENA_MAX is a valid one.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Compare the CPU run's output with the GPU run's.
pub async fn validate(cpu: &str, gpu: &str, o: &Options) -> Result<Report> {
    let t0 = Instant::now();
    cap_heap_arenas();
    let ctx = session(o.memory_mb)?;
    let progress = |m: &str| {
        if o.progress {
            eprintln!("validate: {:>7.1} s {m}", t0.elapsed().as_secs_f64());
        }
    };
    progress(&format!("reading {cpu} and {gpu}"));
    let cs = read::register(&ctx, "cpu_raw", cpu, o.format).await?;
    let gs = read::register(&ctx, "gpu_raw", gpu, o.format).await?;
    let mut b = Builder { checks: Vec::new() };

    // an empty output (no data file) has no schema: only the counts compare
    let (cs, gs) = match (cs, gs) {
        (Some(c), Some(g)) => (c, g),
        (c, g) => {
            let cr = count_rows(&ctx, c.is_some(), "cpu_raw").await?;
            let gr = count_rows(&ctx, g.is_some(), "gpu_raw").await?;
            let v = if cr == gr {
                Verdict::Pass
            } else {
                Verdict::Fail
            };
            b.add(
                "aggregates",
                "row count",
                None,
                cr,
                gr,
                pct(cr as f64, gr as f64),
                v,
                "an output without data files is empty",
            );
            return Ok(finish(cpu, gpu, b, cr, gr, Vec::new(), t0));
        }
    };

    // 1. schema; then the columns both sides have, timestamps as UTC instants in microseconds
    // (Spark's INT96 and TIMESTAMP_MICROS, with or without a time zone, compare alike)
    let common = compare_schema(&cs, &gs, &mut b);
    let select = common
        .iter()
        .map(|f| {
            let c = ident(f.name());
            if matches!(f.data_type(), DataType::Timestamp(_, _)) {
                format!("arrow_cast({c}, '{UTC_MICROS}') AS {c}")
            } else {
                c
            }
        })
        .collect::<Vec<_>>();
    let common = if select.is_empty() {
        common
    } else {
        let select = select.join(", ");
        for side in ["cpu", "gpu"] {
            ctx.sql(&format!(
                "CREATE VIEW {side} AS SELECT {select} FROM {side}_raw"
            ))
            .await
            .map_err(q)?;
        }
        let view = ctx.table("cpu").await.map_err(q)?;
        view.schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect()
    };

    // 2. counts and aggregates
    progress("aggregates");
    let (cr, gr, stats) = aggregates(&ctx, &common, o, &mut b).await?;

    // the key: given, or a unique column of the CPU output
    let key = if !o.key.is_empty() {
        for k in &o.key {
            if !common.iter().any(|f| f.name() == k) {
                return Err(Error::Input(format!(
                    "key column {k} is not a column of both outputs"
                )));
            }
        }
        o.key.clone()
    } else {
        find_key(&ctx, &common, &stats, cr, o.memory_mb).await?
    };

    // 3. every row, then by key
    let mut all_equal = false;
    if o.checks.contains(&CheckKind::Rows) || o.checks.contains(&CheckKind::Sample) {
        progress("rows: hashing every row of both outputs");
        all_equal = rows(&ctx, &common, &key, cr.max(gr), o, &mut b).await?;
    }
    if o.checks.contains(&CheckKind::Rows) && !key.is_empty() {
        if all_equal && cr == gr {
            // equal multisets of rows: every key has the same values on both sides
            b.add(
                "rows",
                "keyed comparison",
                Some(&key.join(",")),
                cr,
                gr,
                None,
                Verdict::Pass,
                "not joined: every row hashes alike, so every key's values match",
            );
        } else {
            progress(&format!("rows: joining on {}", key.join(", ")));
            keyed(&ctx, &common, &key, o, &mut b).await?;
        }
    }

    // 4. distribution
    if o.checks.contains(&CheckKind::Ks) {
        let numeric = common.iter().filter(|f| is_numeric(f.data_type()));
        if all_equal && cr == gr {
            // equal multisets of rows: every column's values are the same multiset on both
            // sides, so the two empirical distributions are one (D = 0): nothing to sort
            for f in numeric {
                ks::same_distribution(f, &mut b);
            }
        } else {
            progress("distribution: Kolmogorov-Smirnov per numeric column");
            for f in numeric {
                ks_column(&ctx, f, &mut b).await?;
            }
        }
    }
    Ok(finish(cpu, gpu, b, cr, gr, key, t0))
}

async fn count_rows(ctx: &SessionContext, registered: bool, table: &str) -> Result<u64> {
    if !registered {
        return Ok(0);
    }
    Ok(
        one_row(ctx, &format!("SELECT COUNT(*) FROM {table}")).await?[0]
            .as_deref()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    )
}

fn finish(
    cpu: &str,
    gpu: &str,
    b: Builder,
    cpu_rows: u64,
    gpu_rows: u64,
    key: Vec<String>,
    t0: Instant,
) -> Report {
    let verdict = b
        .checks
        .iter()
        .map(|c| c.verdict)
        .max()
        .unwrap_or(Verdict::Pass);
    let reasons = b
        .checks
        .iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .map(|c| {
            format!(
                "{} {}{}: {}",
                c.verdict,
                c.check,
                c.column
                    .as_ref()
                    .map(|x| format!(" of column {x}"))
                    .unwrap_or_default(),
                if c.detail.is_empty() {
                    format!("CPU {} vs GPU {}", c.cpu, c.gpu)
                } else {
                    c.detail.clone()
                }
            )
        })
        .collect();
    Report {
        cpu: cpu.into(),
        gpu: gpu.into(),
        verdict,
        reasons,
        cpu_rows,
        gpu_rows,
        key,
        checks: b.checks,
        elapsed_ms: t0.elapsed().as_millis() as u64,
    }
}
