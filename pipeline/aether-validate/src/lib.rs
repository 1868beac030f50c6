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

pub mod hash;
pub mod ks;
pub mod logs;
mod orc;
mod read;
pub mod report;

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use serde::Serialize;

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
            memory_mb: 2048,
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

/// Compare the CPU run's output with the GPU run's.
pub async fn validate(cpu: &str, gpu: &str, o: &Options) -> Result<Report> {
    let t0 = Instant::now();
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
        find_key(&ctx, &common, &stats, cr).await?
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
        progress("distribution: Kolmogorov-Smirnov per numeric column");
        for f in common.iter().filter(|f| is_numeric(f.data_type())) {
            ks_column(&ctx, f, &mut b).await?;
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

const UTC_MICROS: &str = "Timestamp(Microsecond, Some(\"UTC\"))";

fn timestamps(a: &DataType, b: &DataType) -> bool {
    matches!(a, DataType::Timestamp(_, _)) && matches!(b, DataType::Timestamp(_, _))
}

/// Names, types, nullability; the columns both sides have with the same type (timestamps of
/// any unit and zone count as one type: instants).
fn compare_schema(cs: &SchemaRef, gs: &SchemaRef, b: &mut Builder) -> Vec<Field> {
    let mut common = Vec::new();
    for f in cs.fields() {
        match gs.field_with_name(f.name()) {
            Err(_) => b.add(
                "schema",
                "column",
                Some(f.name()),
                f.data_type(),
                "(missing)",
                None,
                Verdict::Fail,
                format!("column {} is only in the CPU output", f.name()),
            ),
            Ok(g) if g.data_type() != f.data_type() && timestamps(f.data_type(), g.data_type()) => {
                b.add(
                    "schema",
                    "type",
                    Some(f.name()),
                    f.data_type(),
                    g.data_type(),
                    None,
                    Verdict::Pass,
                    format!(
                        "column {} is stored as {} on the CPU, {} on the GPU: compared as UTC instants",
                        f.name(),
                        f.data_type(),
                        g.data_type()
                    ),
                );
                common.push(f.as_ref().clone());
            }
            Ok(g) if g.data_type() != f.data_type() => b.add(
                "schema",
                "type",
                Some(f.name()),
                f.data_type(),
                g.data_type(),
                None,
                Verdict::Fail,
                format!(
                    "column {} is {} on the CPU, {} on the GPU",
                    f.name(),
                    f.data_type(),
                    g.data_type()
                ),
            ),
            Ok(g) => {
                if g.is_nullable() != f.is_nullable() {
                    b.add(
                        "schema",
                        "nullability",
                        Some(f.name()),
                        f.is_nullable(),
                        g.is_nullable(),
                        None,
                        Verdict::Pass,
                        format!(
                            "column {} is nullable on one side only (Spark marks columns it read \
                             nullable): the nulls themselves are counted below",
                            f.name()
                        ),
                    );
                }
                common.push(f.as_ref().clone());
            }
        }
    }
    for g in gs.fields() {
        if cs.field_with_name(g.name()).is_err() {
            b.add(
                "schema",
                "column",
                Some(g.name()),
                "(missing)",
                g.data_type(),
                None,
                Verdict::Fail,
                format!("column {} is only in the GPU output", g.name()),
            );
        }
    }
    let same_order = cs.fields().len() == gs.fields().len()
        && cs
            .fields()
            .iter()
            .zip(gs.fields())
            .all(|(a, b)| a.name() == b.name());
    b.add(
        "schema",
        "columns",
        None,
        cs.fields().len(),
        gs.fields().len(),
        None,
        if common.len() == cs.fields().len() && common.len() == gs.fields().len() {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        format!(
            "{} columns on the CPU, {} on the GPU, {} compared{}",
            cs.fields().len(),
            gs.fields().len(),
            common.len(),
            if same_order || common.len() != cs.fields().len() {
                ""
            } else {
                " (in another order)"
            }
        ),
    );
    common
}

/// A column's statistics on one side, as text (NULL: None).
type Stats = HashMap<String, Vec<Option<String>>>;

/// The statistics computed per column, in order, with how they compare.
/// A statistic: its name, its SQL, how the two sides compare.
type Stat = (&'static str, String, Cmp);

fn stat_exprs(f: &Field, o: &Options) -> Vec<Stat> {
    let c = ident(f.name());
    let t = f.data_type();
    let mut v: Vec<Stat> = vec![("non-null count", format!("COUNT({c})"), Cmp::Exact)];
    if is_nested(t) {
        return v;
    }
    let tol = o.tol(t);
    if is_float(t) {
        let x = format!("CAST({c} AS DOUBLE)");
        let finite = format!("(NOT isnan({x}) AND abs({x}) < 1e27)");
        v.push((
            "NaN count",
            format!("SUM(CASE WHEN isnan({x}) THEN 1 ELSE 0 END)"),
            Cmp::Exact,
        ));
        v.push((
            "min",
            format!("MIN(CASE WHEN NOT isnan({x}) THEN {x} END)"),
            Cmp::Float(tol),
        ));
        v.push((
            "max",
            format!("MAX(CASE WHEN NOT isnan({x}) THEN {x} END)"),
            Cmp::Float(tol),
        ));
        // a sum that does not depend on the order of addition; its tolerance scales with Σ|x|
        v.push((
            "sum",
            format!(
                "CAST(SUM(CASE WHEN {finite} THEN CAST({x} AS DECIMAL(38,10)) END) AS VARCHAR)"
            ),
            Cmp::Sum(tol),
        ));
        v.push((
            "sum of |x|",
            format!(
                "CAST(SUM(CASE WHEN {finite} THEN CAST(abs({x}) AS DECIMAL(38,10)) END) AS VARCHAR)"
            ),
            Cmp::Float(tol),
        ));
        v.push((
            "mean",
            format!("AVG(CASE WHEN NOT isnan({x}) THEN {x} END)"),
            Cmp::Float(tol.max(1e-9)),
        ));
        v.push((
            "stddev",
            format!("STDDEV(CASE WHEN NOT isnan({x}) THEN {x} END)"),
            Cmp::Float(tol.max(1e-9)),
        ));
    } else if is_int(t) || is_decimal(t) {
        v.push(("min", format!("CAST(MIN({c}) AS VARCHAR)"), Cmp::Exact));
        v.push(("max", format!("CAST(MAX({c}) AS VARCHAR)"), Cmp::Exact));
        let sum = if is_int(t) {
            // integers summed as 38-digit decimals: no silent wrap-around
            format!("CAST(SUM(CAST({c} AS DECIMAL(38,0))) AS VARCHAR)")
        } else {
            format!("CAST(SUM({c}) AS VARCHAR)")
        };
        v.push(("sum", sum, Cmp::Exact));
        v.push((
            "mean",
            format!("AVG(CAST({c} AS DOUBLE))"),
            Cmp::Float(1e-9),
        ));
        v.push((
            "stddev",
            format!("STDDEV(CAST({c} AS DOUBLE))"),
            Cmp::Float(1e-9),
        ));
    } else if is_string(t) {
        v.push(("min", format!("MIN(CAST({c} AS VARCHAR))"), Cmp::Exact));
        v.push(("max", format!("MAX(CAST({c} AS VARCHAR))"), Cmp::Exact));
        v.push((
            "empty strings",
            format!("SUM(CASE WHEN CAST({c} AS VARCHAR) = '' THEN 1 ELSE 0 END)"),
            Cmp::Exact,
        ));
        v.push((
            "total length",
            format!("SUM(CAST(character_length(CAST({c} AS VARCHAR)) AS BIGINT))"),
            Cmp::Exact,
        ));
    } else if is_temporal(t) {
        v.push(("min", format!("CAST(MIN({c}) AS VARCHAR)"), Cmp::Exact));
        v.push(("max", format!("CAST(MAX({c}) AS VARCHAR)"), Cmp::Exact));
        if matches!(
            t,
            DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64
        ) {
            v.push((
                "mean (epoch s)",
                format!("AVG(CAST(to_unixtime({c}) AS DOUBLE))"),
                Cmp::Float(1e-12),
            ));
        }
    } else if matches!(t, DataType::Boolean) {
        v.push((
            "true count",
            format!("SUM(CASE WHEN {c} THEN 1 ELSE 0 END)"),
            Cmp::Exact,
        ));
    }
    if !is_float(t) && !matches!(t, DataType::Boolean) {
        v.push((
            "approx distinct",
            format!("approx_distinct({c})"),
            Cmp::Approx,
        ));
    }
    v
}

#[derive(Clone, Copy, Debug)]
enum Cmp {
    Exact,
    /// Floats within a relative tolerance.
    Float(f64),
    /// A float column's sum, within tolerance × Σ|x| (the next statistic).
    Sum(f64),
    /// An estimate: a difference is a warning.
    Approx,
}

async fn aggregates(
    ctx: &SessionContext,
    common: &[Field],
    o: &Options,
    b: &mut Builder,
) -> Result<(u64, u64, Stats)> {
    let aggs = o.checks.contains(&CheckKind::Aggregates);
    let mut exprs = vec!["COUNT(*)".to_string()];
    let mut plan: Vec<(&Field, Vec<Stat>)> = Vec::new();
    if aggs {
        for f in common {
            let s = stat_exprs(f, o);
            exprs.extend(s.iter().map(|(_, e, _)| e.clone()));
            plan.push((f, s));
        }
    }
    let select = aliased(&exprs);
    let cpu = one_row(ctx, &format!("SELECT {select} FROM cpu")).await?;
    let gpu = one_row(ctx, &format!("SELECT {select} FROM gpu")).await?;
    let n = |v: &Option<String>| {
        v.as_deref()
            .and_then(|x| x.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (cr, gr) = (n(&cpu[0]), n(&gpu[0]));
    b.gate(
        "aggregates",
        "row count",
        None,
        cr,
        gr,
        pct(cr as f64, gr as f64),
        cr == gr,
        Verdict::Fail,
        || format!("{} rows on the CPU, {} on the GPU", cr, gr),
    );
    let mut stats: Stats = HashMap::new();
    let mut i = 1;
    for (f, s) in &plan {
        let name = f.name();
        let cvals: Vec<Option<String>> = cpu[i..i + s.len()].to_vec();
        let gvals: Vec<Option<String>> = gpu[i..i + s.len()].to_vec();
        for (j, (stat, _, cmp)) in s.iter().enumerate() {
            let (c, g) = (&cvals[j], &gvals[j]);
            let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "NULL".into());
            let num = |v: &Option<String>| v.as_deref().and_then(|x| x.parse::<f64>().ok());
            let (cn, gn) = (num(c), num(g));
            let dev = match (cn, gn) {
                (Some(a), Some(b)) => pct(a, b),
                _ => None,
            };
            let within = |tol: f64, scale: f64| match (cn, gn) {
                (Some(a), Some(b)) => {
                    (a - b).abs() <= tol * scale + o.abs_tol || (a.is_nan() && b.is_nan())
                }
                _ => c == g,
            };
            let verdict = match cmp {
                Cmp::Exact => c == g,
                Cmp::Float(tol) => {
                    within(*tol, cn.unwrap_or(0.0).abs().max(gn.unwrap_or(0.0).abs()))
                }
                Cmp::Sum(tol) => {
                    let scale = num(&cvals[j + 1])
                        .unwrap_or(0.0)
                        .max(num(&gvals[j + 1]).unwrap_or(0.0));
                    within(*tol, scale)
                }
                Cmp::Approx => c == g,
            };
            let verdict = match (verdict, cmp) {
                (true, _) => Verdict::Pass,
                (false, Cmp::Approx) => Verdict::Warn,
                (false, _) => Verdict::Fail,
            };
            let detail = if verdict == Verdict::Pass {
                String::new()
            } else {
                format!(
                    "{stat} of column {name}: CPU {} vs GPU {}",
                    show(c),
                    show(g)
                )
            };
            b.add(
                "aggregates",
                stat,
                Some(name),
                show(c),
                show(g),
                dev,
                verdict,
                detail,
            );
            if *stat == "non-null count" {
                let nulls = |v: &Option<String>, rows: u64| rows.saturating_sub(n(v));
                let (cnul, gnul) = (nulls(c, cr), nulls(g, gr));
                b.gate(
                    "aggregates",
                    "nulls",
                    Some(name),
                    cnul,
                    gnul,
                    pct(cnul as f64, gnul as f64),
                    cnul == gnul,
                    Verdict::Fail,
                    || format!("column {name} has {cnul} nulls on the CPU, {gnul} on the GPU"),
                );
            }
        }
        stats.insert(name.to_string(), cvals);
        i += s.len();
    }
    Ok((cr, gr, stats))
}

/// A unique, never-null, flat column of the CPU output (checked exactly), preferring id-like
/// names; none when there is no such column.
async fn find_key(
    ctx: &SessionContext,
    common: &[Field],
    stats: &Stats,
    rows: u64,
) -> Result<Vec<String>> {
    if rows == 0 {
        return Ok(Vec::new());
    }
    let mut cands: Vec<&Field> = common
        .iter()
        .filter(|f| {
            let t = f.data_type();
            (is_int(t) || is_string(t) || is_decimal(t))
                && stats.get(f.name()).is_some_and(|s| {
                    s.first()
                        .cloned()
                        .flatten()
                        .and_then(|x| x.parse::<u64>().ok())
                        == Some(rows)
                        && s.last()
                            .cloned()
                            .flatten()
                            .and_then(|x| x.parse::<f64>().ok())
                            .is_some_and(|d| d >= rows as f64 * 0.97)
                })
        })
        .collect();
    let score = |f: &Field| {
        let n = f.name().to_ascii_lowercase();
        if n == "id" || n.ends_with("_id") || n.ends_with("key") {
            0
        } else {
            1
        }
    };
    cands.sort_by_key(|f| score(f));
    for f in cands.into_iter().take(3) {
        let c = ident(f.name());
        let d = one_row(ctx, &format!("SELECT COUNT(DISTINCT {c}) FROM cpu")).await?;
        if d[0].as_deref().and_then(|x| x.parse::<u64>().ok()) == Some(rows) {
            return Ok(vec![f.name().to_string()]);
        }
    }
    Ok(Vec::new())
}

const BUCKET_BITS: u32 = 12;
const BUCKETS: usize = 1 << BUCKET_BITS;
/// Buckets drilled into at most, and rows kept per side from them.
const MAX_DRILL_BUCKETS: usize = 256;
const MAX_DRILL_ROWS: usize = 200_000;

#[derive(Clone)]
struct Sums {
    count: Vec<u64>,
    sum: Vec<u64>,
    sum2: Vec<u64>,
}

impl Sums {
    fn new() -> Self {
        Sums {
            count: vec![0; BUCKETS],
            sum: vec![0; BUCKETS],
            sum2: vec![0; BUCKETS],
        }
    }
    fn add(&mut self, h: u64) {
        let k = (h >> (64 - BUCKET_BITS)) as usize;
        self.count[k] += 1;
        self.sum[k] = self.sum[k].wrapping_add(h);
        self.sum2[k] = self.sum2[k].wrapping_add(hash::finish(h ^ 0x5bd1_e995));
    }
}

/// A row kept for drilling: its hash, its hash without float columns, its floats, its text.
struct Kept {
    hash: u64,
    no_float: u64,
    floats: Vec<Option<f64>>,
    text: String,
}

impl Kept {
    /// Row `r` of a batch with its hashes.
    fn of(batch: &RecordBatch, cols: &[Field], h: &Hashed, r: usize) -> Kept {
        Kept {
            hash: h.rows[r],
            no_float: h.no_float[r],
            floats: floats_of(batch, cols, r),
            text: row_text(batch, cols, r),
        }
    }

    /// The same row: equal hashes, or equal but for floats within the tolerance.
    fn matches(&self, other: &Kept, float_tols: &[f64], abs_tol: f64) -> bool {
        self.hash == other.hash
            || (self.no_float == other.no_float
                && floats_close(&self.floats, &other.floats, float_tols, abs_tol))
    }
}

/// A sampled key's row on one side.
struct Sampled {
    key_text: String,
    row: Kept,
}

struct Hashed {
    rows: Vec<u64>,
    no_float: Vec<u64>,
    key: Vec<u64>,
}

fn hash_batch(batch: &RecordBatch, cols: &[Field], key: &[String], o: &Options) -> Hashed {
    let n = batch.num_rows();
    let keep = o.keep();
    let (mut rows, mut no_float, mut keyh) = (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
    for (i, f) in cols.iter().enumerate() {
        // each column hashed once, mixed into every row hash that covers it
        let c = hash::column_hashes(batch.column(i).as_ref(), i, keep);
        hash::mix(&mut rows, &c);
        if !is_float(f.data_type()) {
            hash::mix(&mut no_float, &c);
        }
        if key.iter().any(|k| k == f.name()) {
            hash::mix(&mut keyh, &c);
        }
    }
    for h in rows
        .iter_mut()
        .chain(no_float.iter_mut())
        .chain(keyh.iter_mut())
    {
        *h = hash::finish(*h);
    }
    Hashed {
        rows,
        no_float,
        key: keyh,
    }
}

fn row_text(batch: &RecordBatch, cols: &[Field], r: usize) -> String {
    cols.iter()
        .enumerate()
        .map(|(i, f)| {
            let a = batch.column(i);
            let v = if a.is_null(r) {
                "NULL".to_string()
            } else {
                array_value_to_string(a, r).unwrap_or_default()
            };
            format!("{}={v}", f.name())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn floats_of(batch: &RecordBatch, cols: &[Field], r: usize) -> Vec<Option<f64>> {
    cols.iter()
        .enumerate()
        .filter(|(_, f)| is_float(f.data_type()))
        .map(|(i, f)| {
            let a = batch.column(i);
            if a.is_null(r) {
                return None;
            }
            match f.data_type() {
                DataType::Float64 => Some(
                    a.as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                        .value(r),
                ),
                DataType::Float32 => Some(
                    a.as_primitive::<datafusion::arrow::datatypes::Float32Type>()
                        .value(r) as f64,
                ),
                _ => None,
            }
        })
        .collect()
}

fn floats_close(a: &[Option<f64>], b: &[Option<f64>], tols: &[f64], abs_tol: f64) -> bool {
    a.iter().zip(b).zip(tols).all(|((x, y), tol)| match (x, y) {
        (None, None) => true,
        (Some(x), Some(y)) => {
            (x.is_nan() && y.is_nan())
                || x == y
                || (x - y).abs() <= tol * x.abs().max(y.abs()) + abs_tol
        }
        _ => false,
    })
}

/// The rows of one side, streamed: `f` sees each batch with its hashes.
async fn stream_rows(
    ctx: &SessionContext,
    table: &str,
    cols: &[Field],
    key: &[String],
    o: &Options,
    mut f: impl FnMut(&RecordBatch, &Hashed),
) -> Result<u64> {
    let select = cols
        .iter()
        .map(|c| ident(c.name()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut s = ctx
        .sql(&format!("SELECT {select} FROM {table}"))
        .await
        .map_err(q)?
        .execute_stream()
        .await
        .map_err(q)?;
    let mut n = 0u64;
    let mut next_report = 5_000_000u64;
    while let Some(batch) = s.next().await {
        let batch = batch.map_err(q)?;
        let h = hash_batch(&batch, cols, key, o);
        f(&batch, &h);
        n += batch.num_rows() as u64;
        if o.progress && n >= next_report {
            eprintln!("validate: {table}: {n} rows hashed");
            next_report += 5_000_000;
        }
    }
    Ok(n)
}

async fn rows(
    ctx: &SessionContext,
    cols: &[Field],
    key: &[String],
    rows_max: u64,
    o: &Options,
    b: &mut Builder,
) -> Result<bool> {
    if cols.is_empty() {
        return Ok(false);
    }
    let sample = o.checks.contains(&CheckKind::Sample) && !key.is_empty() && o.sample_keys > 0;
    let modulus = (rows_max / o.sample_keys.max(1) as u64).max(1);
    let float_tols: Vec<f64> = cols
        .iter()
        .filter(|f| is_float(f.data_type()))
        .map(|f| o.tol(f.data_type()))
        .collect();
    let mut sums = [Sums::new(), Sums::new()];
    let mut samples: [HashMap<u64, Vec<Sampled>>; 2] = [HashMap::new(), HashMap::new()];
    for (side, table) in ["cpu", "gpu"].iter().enumerate() {
        let (sm, sp) = (&mut sums[side], &mut samples[side]);
        stream_rows(ctx, table, cols, key, o, |batch, h| {
            for (r, &x) in h.rows.iter().enumerate() {
                sm.add(x);
                if sample && h.key[r] % modulus == 0 && sp.len() < o.sample_keys * 4 {
                    let key_text = cols
                        .iter()
                        .enumerate()
                        .filter(|(_, f)| key.iter().any(|k| k == f.name()))
                        .map(|(i, _)| array_value_to_string(batch.column(i), r).unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join(", ");
                    sp.entry(h.key[r]).or_default().push(Sampled {
                        key_text,
                        row: Kept::of(batch, cols, h, r),
                    });
                }
            }
        })
        .await?;
    }
    let [cpu_sums, gpu_sums] = sums;
    let differing: Vec<usize> = (0..BUCKETS)
        .filter(|&k| {
            cpu_sums.count[k] != gpu_sums.count[k]
                || cpu_sums.sum[k] != gpu_sums.sum[k]
                || cpu_sums.sum2[k] != gpu_sums.sum2[k]
        })
        .collect();
    let total_c: u64 = cpu_sums.count.iter().sum();
    let total_g: u64 = gpu_sums.count.iter().sum();
    if o.checks.contains(&CheckKind::Rows) {
        if differing.is_empty() {
            b.add(
                "rows",
                "every row (hash multiset)",
                None,
                total_c,
                total_g,
                Some(0.0),
                Verdict::Pass,
                format!("all {total_c} rows hash alike (floats to the tolerance)"),
            );
        } else {
            let drill: std::collections::HashSet<usize> =
                differing.iter().copied().take(MAX_DRILL_BUCKETS).collect();
            let mut kept: [Vec<Kept>; 2] = [Vec::new(), Vec::new()];
            for (side, table) in ["cpu", "gpu"].iter().enumerate() {
                let k = &mut kept[side];
                stream_rows(ctx, table, cols, key, o, |batch, h| {
                    for (r, &x) in h.rows.iter().enumerate() {
                        if k.len() < MAX_DRILL_ROWS
                            && drill.contains(&((x >> (64 - BUCKET_BITS)) as usize))
                        {
                            k.push(Kept::of(batch, cols, h, r));
                        }
                    }
                })
                .await?;
            }
            let [kc, kg] = kept;
            // multiset difference by hash
            let mut counts: HashMap<u64, i64> = HashMap::new();
            for r in &kc {
                *counts.entry(r.hash).or_default() += 1;
            }
            for r in &kg {
                *counts.entry(r.hash).or_default() -= 1;
            }
            let take = |rows: &[Kept], sign: i64, counts: &mut HashMap<u64, i64>| -> Vec<usize> {
                let mut out = Vec::new();
                for (i, r) in rows.iter().enumerate() {
                    if let Some(c) = counts.get_mut(&r.hash)
                        && *c * sign > 0
                    {
                        *c -= sign;
                        out.push(i);
                    }
                }
                out
            };
            let mut only_c = take(&kc, 1, &mut counts.clone());
            let mut only_g = take(&kg, -1, &mut counts);
            // rows equal but for floats within the tolerance pair up
            let mut within = 0u64;
            let mut by_nf: HashMap<u64, Vec<usize>> = HashMap::new();
            for &i in &only_g {
                by_nf.entry(kg[i].no_float).or_default().push(i);
            }
            let mut paired_g: std::collections::HashSet<usize> = Default::default();
            only_c.retain(|&i| {
                if let Some(cands) = by_nf.get_mut(&kc[i].no_float)
                    && let Some(pos) = cands
                        .iter()
                        .position(|&j| kc[i].matches(&kg[j], &float_tols, o.abs_tol))
                {
                    paired_g.insert(cands.remove(pos));
                    within += 1;
                    return false;
                }
                true
            });
            only_g.retain(|j| !paired_g.contains(j));
            let partial = differing.len() > MAX_DRILL_BUCKETS
                || kc.len() >= MAX_DRILL_ROWS
                || kg.len() >= MAX_DRILL_ROWS;
            let ex = |rows: &[Kept], idx: &[usize]| {
                idx.iter()
                    .take(o.max_examples)
                    .map(|&i| rows[i].text.clone())
                    .collect::<Vec<_>>()
                    .join(" | ")
            };
            let bad = !only_c.is_empty() || !only_g.is_empty();
            let scope = if partial {
                format!(
                    " (from {} of {} differing hash buckets: counts are a lower bound)",
                    drill.len(),
                    differing.len()
                )
            } else {
                String::new()
            };
            b.gate(
                "rows",
                "rows only in the CPU output",
                None,
                only_c.len(),
                0,
                None,
                only_c.is_empty(),
                Verdict::Fail,
                || {
                    format!(
                        "{} rows only in the CPU output{scope}, e.g. {}",
                        only_c.len(),
                        ex(&kc, &only_c)
                    )
                },
            );
            b.gate(
                "rows",
                "rows only in the GPU output",
                None,
                0,
                only_g.len(),
                None,
                only_g.is_empty(),
                Verdict::Fail,
                || {
                    format!(
                        "{} rows only in the GPU output{scope}, e.g. {}",
                        only_g.len(),
                        ex(&kg, &only_g)
                    )
                },
            );
            b.add(
                "rows",
                "every row (hash multiset)",
                None,
                total_c,
                total_g,
                None,
                if bad { Verdict::Fail } else { Verdict::Pass },
                if within > 0 {
                    format!("{within} rows equal only within the float tolerance")
                } else {
                    String::new()
                },
            );
        }
    }
    if sample {
        let [sc, sg] = samples;
        let (mut compared, mut differ, mut missing) = (0u64, Vec::new(), Vec::new());
        for (k, rows_c) in &sc {
            let Some(rows_g) = sg.get(k) else {
                missing.push(format!("{} (not in the GPU output)", rows_c[0].key_text));
                continue;
            };
            compared += 1;
            let same = rows_c.len() == rows_g.len()
                && rows_c.iter().all(|c| {
                    rows_g
                        .iter()
                        .any(|g| c.row.matches(&g.row, &float_tols, o.abs_tol))
                });
            if !same {
                differ.push(format!(
                    "CPU {} / GPU {}",
                    rows_c[0].row.text, rows_g[0].row.text
                ));
            }
        }
        for (k, rows_g) in &sg {
            if !sc.contains_key(k) {
                missing.push(format!("{} (not in the CPU output)", rows_g[0].key_text));
            }
        }
        let bad = differ.len() + missing.len();
        b.add(
            "rows",
            "hash sample of keys",
            Some(&key.join(",")),
            sc.len(),
            sg.len(),
            None,
            if bad == 0 {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            if bad == 0 {
                format!("{compared} sampled keys (1 in {modulus}) equal")
            } else {
                format!(
                    "{} of {} sampled keys differ, e.g. {}",
                    bad,
                    sc.len().max(sg.len()),
                    differ
                        .iter()
                        .chain(&missing)
                        .take(o.max_examples)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" | ")
                )
            },
        );
    }
    Ok(differing.is_empty())
}

/// The keyed comparison: rows present on one side only, and per column the mismatches.
async fn keyed(
    ctx: &SessionContext,
    cols: &[Field],
    key: &[String],
    o: &Options,
    b: &mut Builder,
) -> Result<()> {
    let on = key
        .iter()
        .map(|k| format!("c.{0} = g.{0}", ident(k)))
        .collect::<Vec<_>>()
        .join(" AND ");
    let from = format!(
        "(SELECT *, 1 AS __c FROM cpu) c FULL OUTER JOIN (SELECT *, 1 AS __g FROM gpu) g ON {on}"
    );
    let keys_sel = key.iter().map(|k| ident(k)).collect::<Vec<_>>().join(", ");
    let dup = |t: &str| {
        format!(
            "SELECT COUNT(*) FROM (SELECT {keys_sel} FROM {t} GROUP BY {keys_sel} HAVING COUNT(*) > 1) x"
        )
    };
    let dc = one_row(ctx, &dup("cpu")).await?[0]
        .clone()
        .unwrap_or_default();
    let dg = one_row(ctx, &dup("gpu")).await?[0]
        .clone()
        .unwrap_or_default();
    let unique = dc == "0" && dg == "0";
    b.gate(
        "rows",
        "key is unique",
        Some(&key.join(",")),
        format!("{dc} duplicated"),
        format!("{dg} duplicated"),
        None,
        unique,
        Verdict::Warn,
        || {
            format!(
                "key {} repeats ({dc} keys on the CPU, {dg} on the GPU): the keyed counts multiply",
                key.join(",")
            )
        },
    );
    let both = "c.__c IS NOT NULL AND g.__g IS NOT NULL";
    let value_cols: Vec<&Field> = cols
        .iter()
        .filter(|f| !key.contains(f.name()) && !is_nested(f.data_type()))
        .collect();
    let mut exprs = vec![
        "SUM(CASE WHEN g.__g IS NULL THEN 1 ELSE 0 END)".to_string(),
        "SUM(CASE WHEN c.__c IS NULL THEN 1 ELSE 0 END)".to_string(),
    ];
    let mismatch = |f: &Field| -> String {
        let c = format!("c.{}", ident(f.name()));
        let g = format!("g.{}", ident(f.name()));
        if is_float(f.data_type()) {
            let tol = o.tol(f.data_type());
            format!(
                "NOT (({c} IS NULL AND {g} IS NULL) OR (isnan({c}) AND isnan({g})) OR \
                 abs(CAST({c} AS DOUBLE) - CAST({g} AS DOUBLE)) <= {tol:e} * GREATEST(abs(CAST({c} AS DOUBLE)), abs(CAST({g} AS DOUBLE))) + {abs:e})",
                abs = o.abs_tol
            )
        } else {
            format!("{c} IS DISTINCT FROM {g}")
        }
    };
    for f in &value_cols {
        let c = format!("c.{}", ident(f.name()));
        let g = format!("g.{}", ident(f.name()));
        exprs.push(format!(
            "SUM(CASE WHEN {both} AND ({}) THEN 1 ELSE 0 END)",
            mismatch(f)
        ));
        exprs.push(format!(
            "SUM(CASE WHEN {both} AND (({c} IS NULL) <> ({g} IS NULL)) THEN 1 ELSE 0 END)"
        ));
        exprs.push(if is_numeric(f.data_type()) {
            format!("MAX(CASE WHEN {both} THEN abs(CAST({c} AS DOUBLE) - CAST({g} AS DOUBLE)) END)")
        } else {
            "CAST(NULL AS DOUBLE)".into()
        });
    }
    let r = one_row(ctx, &format!("SELECT {} FROM {from}", aliased(&exprs))).await?;
    let n = |v: &Option<String>| {
        v.as_deref()
            .and_then(|x| x.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (only_c, only_g) = (n(&r[0]), n(&r[1]));
    b.gate(
        "rows",
        "keys only on one side",
        Some(&key.join(",")),
        only_c,
        only_g,
        None,
        only_c + only_g == 0,
        Verdict::Fail,
        || format!("{only_c} keys only in the CPU output, {only_g} only in the GPU output"),
    );
    for (i, f) in value_cols.iter().enumerate() {
        let (mm, nd) = (n(&r[2 + 3 * i]), n(&r[3 + 3 * i]));
        let maxd = r[4 + 3 * i].clone();
        if mm == 0 {
            b.add(
                "rows",
                "values by key",
                Some(f.name()),
                0,
                0,
                None,
                Verdict::Pass,
                String::new(),
            );
            continue;
        }
        let c = format!("c.{}", ident(f.name()));
        let g = format!("g.{}", ident(f.name()));
        let kc = key
            .iter()
            .map(|k| format!("CAST(c.{} AS VARCHAR)", ident(k)))
            .collect::<Vec<_>>()
            .join(" || ',' || ");
        let ex_sql = format!(
            "SELECT {kc}, CAST({c} AS VARCHAR), CAST({g} AS VARCHAR) FROM {from} WHERE {both} AND ({}) LIMIT {}",
            mismatch(f),
            o.max_examples
        );
        let ex: Vec<String> = text_rows(ctx, &ex_sql)
            .await?
            .iter()
            .map(|row| {
                let v = |c: usize| row[c].clone().unwrap_or_else(|| "NULL".into());
                format!("{}={}: CPU {} GPU {}", key.join(","), v(0), v(1), v(2))
            })
            .collect();
        b.add(
            "rows",
            "values by key",
            Some(f.name()),
            format!("{mm} rows differ"),
            format!("{nd} null differences"),
            None,
            Verdict::Fail,
            format!(
                "column {} differs on {mm} rows{}{}, e.g. {}",
                f.name(),
                if nd > 0 {
                    format!(" ({nd} null on one side only)")
                } else {
                    String::new()
                },
                maxd.map(|m| format!(", largest difference {m}"))
                    .unwrap_or_default(),
                ex.join(" | ")
            ),
        );
    }
    Ok(())
}

/// A sorted stream of doubles, read value by value.
struct Sorted {
    s: datafusion::physical_plan::SendableRecordBatchStream,
    batch: Option<datafusion::arrow::array::Float64Array>,
    i: usize,
}

impl Sorted {
    fn new(s: datafusion::physical_plan::SendableRecordBatchStream) -> Self {
        Sorted {
            s,
            batch: None,
            i: 0,
        }
    }

    /// The next value, without taking it; `None` at the end.
    async fn peek(&mut self) -> Result<Option<f64>> {
        loop {
            if let Some(a) = &self.batch
                && self.i < a.len()
            {
                return Ok(Some(a.value(self.i)));
            }
            match self.s.next().await {
                None => return Ok(None),
                Some(b) => {
                    let b = b.map_err(q)?;
                    self.batch = Some(
                        b.column(0)
                            .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                            .clone(),
                    );
                    self.i = 0;
                }
            }
        }
    }

    /// Take every next value equal to `v`: how many.
    async fn take_equal(&mut self, v: f64) -> Result<u64> {
        let mut n = 0;
        while let Some(x) = self.peek().await? {
            if x != v {
                break;
            }
            self.i += 1;
            n += 1;
        }
        Ok(n)
    }
}

/// The exact two-sample KS statistic of one column and its p-value.
async fn ks_column(ctx: &SessionContext, f: &Field, b: &mut Builder) -> Result<()> {
    let c = ident(f.name());
    let x = format!("CAST({c} AS DOUBLE)");
    let filter = format!("{c} IS NOT NULL AND NOT isnan({x})");
    let n = |t: &str| {
        let sql = format!("SELECT COUNT(*) FROM {t} WHERE {filter}");
        async move {
            Ok::<u64, Error>(
                one_row(ctx, &sql).await?[0]
                    .as_deref()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            )
        }
    };
    let (n1, n2) = (n("cpu").await?, n("gpu").await?);
    // both sides' values sorted (the sorts spill beyond the memory limit), walked together: the
    // largest gap between the two empirical distribution functions is D, exactly
    let sorted = |t: &str| {
        let sql = format!("SELECT {x} AS x FROM {t} WHERE {filter} ORDER BY x");
        async move {
            ctx.sql(&sql)
                .await
                .map_err(q)?
                .execute_stream()
                .await
                .map_err(q)
        }
    };
    let mut sides = [
        Sorted::new(sorted("cpu").await?),
        Sorted::new(sorted("gpu").await?),
    ];
    let (mut ca, mut cb, mut d) = (0u64, 0u64, 0f64);
    loop {
        let (va, vb) = (sides[0].peek().await?, sides[1].peek().await?);
        let v = match (va, vb) {
            (None, None) => break,
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (Some(a), Some(b)) => a.min(b),
        };
        ca += sides[0].take_equal(v).await?;
        cb += sides[1].take_equal(v).await?;
        if n1 > 0 && n2 > 0 {
            d = d.max((ca as f64 / n1 as f64 - cb as f64 / n2 as f64).abs());
        }
    }
    let d = if d.is_finite() { d } else { 0.0 };
    let p = ks::p_value(d, n1, n2);
    b.gate(
        "distribution",
        "Kolmogorov-Smirnov",
        Some(f.name()),
        format!("D={d:.6}"),
        format!("p={p:.3e}"),
        None,
        // a difference only when it is both unlikely by chance and not negligible
        !(p < 1e-3 && d > 1e-3),
        Verdict::Fail,
        || {
            format!(
                "column {} is distributed differently: D = {d:.6}, p = {p:.3e}",
                f.name()
            )
        },
    );
    Ok(())
}
