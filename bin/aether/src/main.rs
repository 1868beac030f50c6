//! The `aether` command line: parse arguments, read settings, call the pipeline crates, render.

use aether_engine::OutputFormat;
use aether_ingest::{IngestOptions, S3Options};
use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::process::ExitCode;

mod cluster;
mod fleet;
mod profile;
mod progress;
mod report;
mod run;
mod select;
mod tune;
mod validate;
mod workflow;

#[derive(Parser)]
#[command(
    name = "aether",
    version,
    about = "Move Spark workloads from CPU to GPU (RAPIDS on EMR) with evidence"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Which apps get faster and cheaper on GPUs: QualX speedup, category and GPU shape per app.
    ///
    /// Predict which apps get faster and cheaper on GPUs (RAPIDS): QualX speedup per app and
    /// SQL, category, status per log; --output DIR writes the reports.
    Qualify(QualifyArgs),
    /// GPU test clusters: create (from qualify's shape), list, describe, terminate.
    Cluster(cluster::ClusterArgs),
    /// Run a job on a cluster with a stored config; records the run and its event log.
    Submit(cluster::SubmitArgs),
    /// A GPU run's recommended Spark properties (the profiling AutoTuner), stored as a config.
    ///
    /// What GPU runs tell: the profiling AutoTuner's recommended Spark properties (the
    /// reference profiler's rules for EMR), stored as a config `submit` can run.
    Profile(profile::ProfileArgs),
    /// The tuning loop: run, profile, re-configure until runs stop getting faster; resumable.
    ///
    /// The tuning loop: submit the job with its best config, profile the run, a new config,
    /// again; keeps the fastest successful run; resumes after an interruption.
    Tune(tune::TuneArgs),
    /// Is the GPU run's output the CPU run's? Row hashes, aggregates, KS: PASS / WARN / FAIL.
    ///
    /// Is the GPU run's output the CPU run's? Schema, aggregates, every row by hash, a keyed
    /// diff, KS per numeric column: PASS / WARN / FAIL (exit 0 / 0 / 1).
    Validate(validate::ValidateArgs),
    /// Reports from the job history: list, job, validation, metrics, and the web UI.
    ///
    /// Reports from the job history: `report list` (KPIs and every job), `report job`, `report
    /// validation` (scheduled, exit 1 on a failure), `report ui` (the web UI), `report metrics`.
    Report(report::ReportArgs),
    /// The whole workflow in one command: qualify, tune, validate, report each recommended app.
    ///
    /// The whole workflow: qualify, then for each app recommended for the GPU tune it on a
    /// cluster of its shape (ended after it), validate its best run, and report; resumable.
    Run(run::RunArgs),
    /// Run SQL over event logs (or a warehouse) as tables.
    Sql(SqlArgs),
    /// Per app: summary figures, bottlenecks with advice, slowest stages and SQL, GPU coverage.
    ///
    /// Per application: summary figures, top bottlenecks with advice, slowest stages and SQL,
    /// and the share of time the GPU (RAPIDS) could not take.
    Analyze(AnalyzeArgs),
    /// Read event logs into a Parquet warehouse (a directory or s3://bucket/prefix).
    Ingest(IngestArgs),
    /// The warehouse's upkeep: `warehouse compact` into day partitions of large files.
    ///
    /// The warehouse's upkeep: `warehouse compact` rewrites the per-log files into Hive-style
    /// day partitions of large files, for aether and Athena / Trino / Spark SQL alike.
    Warehouse(WarehouseArgs),
    /// One aether command over N shards of the logs: Spark tasks, Kubernetes or AWS Batch.
    ///
    /// Fleet scale: one aether command over N shards of the logs as Spark tasks (`fleet
    /// submit` on EMR, `fleet driver` for any Spark), or as a Kubernetes Indexed Job or an AWS
    /// Batch array job (`fleet manifests`).
    Fleet(fleet::FleetArgs),
    /// Train or evaluate a QualX-style model on CPU and GPU logs of the same workloads.
    ///
    /// Train or evaluate a QualX-style XGBoost model on pairs of CPU and GPU event logs of the
    /// same workloads.
    Model(ModelArgs),
    /// Checks before the first real `cluster create`: credentials, roles, buckets, quota, release.
    ///
    /// Before the first real `cluster create`: credentials, EMR's roles, writable buckets, the
    /// release, GPU instance types and vCPU quota; OK / WARN / FAIL with what to fix (exit 1).
    #[command(after_help = "Example: aether doctor --cluster_shape_id 3")]
    Doctor {
        #[command(flatten)]
        ws: workflow::WsArgs,
        /// Check this shape's nodes (default: the families of platform.emr.gpu_instance_types).
        #[arg(long = "cluster_shape_id", alias = "cluster-shape-id", value_parser = workflow::id)]
        shape_id: Option<i64>,
        /// The checks as JSON.
        #[arg(long)]
        json: bool,
    },
    /// `history check`: reconcile the history with the platforms; what changed, what is open.
    #[command(after_help = "Example: aether history check --since 7d")]
    History {
        #[command(flatten)]
        ws: workflow::WsArgs,
        #[command(subcommand)]
        action: HistoryAction,
    },
    /// Read and change the settings file (~/.aether/config.toml).
    ///
    /// Read and change the settings file (~/.aether/config.toml, $AETHER_HOME/config.toml, or
    /// --config FILE).
    Config(ConfigArgs),
}

#[derive(Subcommand)]
enum HistoryAction {
    /// Reconcile the history now; what reconciliation changed, what is still open and why,
    /// the job locks, the database's integrity (exit 1 when a platform could not be asked).
    Check {
        /// The period back from now whose changes are listed: 7d, 24h, 90m, 2w.
        #[arg(long, default_value = "7d")]
        since: String,
        #[arg(long, help = "As JSON.")]
        json: bool,
    },
}

#[derive(Args)]
struct ConfigArgs {
    /// The settings file (default: $AETHER_HOME/config.toml, else ~/.aether/config.toml).
    #[arg(long, global = true)]
    config: Option<std::path::PathBuf>,
    #[command(subcommand)]
    action: ConfigAction,
}

#[derive(Subcommand)]
enum ConfigAction {
    /// Write the settings file with its defaults (keeps an existing file unless --force).
    Init {
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Every key, its value and what it means.
    List,
    /// One key's value (nothing printed, exit 1, when unset).
    Get {
        /// A key such as platform.emr.region.
        key: String,
    },
    /// Set a key (checked: unknown keys and malformed values are refused).
    Set {
        /// A key such as platform.emr.region.
        key: String,
        /// Its new value (lists comma-separated).
        value: String,
    },
    /// Remove a key's value (back to its default).
    Unset {
        /// A key such as platform.emr.region.
        key: String,
    },
}

#[derive(Args, Clone, Default)]
struct Common {
    /// Worker threads (default: all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// AWS region for s3:// inputs (else the AWS environment).
    #[arg(long)]
    region: Option<String>,
    /// Endpoint of an S3-compatible store (e.g. http://127.0.0.1:5000).
    #[arg(long = "s3-endpoint", alias = "s3_endpoint")]
    s3_endpoint: Option<String>,
    /// Only shard i of n of the logs (0 <= i < n), by a stable hash of each log's path or URL:
    /// n runners given the same inputs read each log exactly once between them.
    #[arg(long)]
    shard: Option<aether_ingest::Shard>,
    /// No progress on stderr (it is drawn only when stderr is a terminal, for reads that take
    /// more than a moment).
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    select: select::SelectArgs,
}

impl Common {
    fn ingest_options(&self) -> IngestOptions {
        IngestOptions {
            threads: self.threads,
            s3: S3Options {
                region: self.region.clone(),
                endpoint: self.s3_endpoint.clone(),
            },
            shard: self.shard,
            select: self.select.selection(),
            ..Default::default()
        }
    }

    /// [`Common::ingest_options`] with a progress display of the reading (`what`: "reading",
    /// "qualifying") when stderr is a terminal and not `--quiet`; it is cleared when dropped.
    fn ingest_options_shown(
        &self,
        what: &'static str,
    ) -> (IngestOptions, Option<progress::Display>) {
        let mut opts = self.ingest_options();
        if !progress::wanted(self.quiet) {
            return (opts, None);
        }
        let p = std::sync::Arc::new(aether_ingest::Progress::default());
        opts.progress = Some(p.clone());
        (opts, Some(progress::Display::start(p, what)))
    }
}

#[derive(Clone, Copy, ValueEnum, Default)]
enum Format {
    #[default]
    Table,
    Csv,
    Json,
}

impl From<Format> for OutputFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Table => OutputFormat::Table,
            Format::Csv => OutputFormat::Csv,
            Format::Json => OutputFormat::Json,
        }
    }
}

/// Where the tables come from, and how to print: shared by `sql` and `analyze`.
#[derive(Args)]
struct Inputs {
    /// Event logs: files, directories, globs, .txt lists of paths, s3:// URLs (repeatable;
    /// several paths may follow one flag).
    #[arg(long = "event_log", alias = "event-log", num_args = 1.., action = clap::ArgAction::Append)]
    event_log: Vec<String>,
    /// Read a Parquet warehouse written by `aether ingest` instead of logs.
    #[arg(long)]
    warehouse: Option<String>,
    /// Output format (csv and json for scripts).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Exit with status 2 if any log could not be read cleanly.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct SqlArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// Run the query on a Ballista cluster (df://HOST:PORT, started with `aether cluster
    /// scheduler` and `aether cluster executor`) over --warehouse.
    #[arg(long, value_name = "df://HOST:PORT", requires = "warehouse")]
    cluster: Option<String>,
    /// Write the result to FILE instead of stdout, in the format of its extension: .csv, .json
    /// or .parquet (replaced whole once the query has run).
    #[arg(long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    /// The SQL query (none: an interactive shell on a terminal, else the statements on stdin).
    query: Option<String>,
}

#[derive(Args)]
struct IngestArgs {
    /// Event logs: files, directories, globs, .txt lists of paths, s3:// URLs.
    #[arg(required = true)]
    inputs: Vec<String>,
    /// The warehouse: a directory or s3://bucket/prefix.
    #[arg(long)]
    out: String,
    /// Re-read logs the warehouse already holds.
    #[arg(long)]
    force: bool,
    /// Exit with status 2 if any log could not be read cleanly.
    #[arg(long)]
    strict: bool,
    /// List the logs and apps the selection picks (and those it leaves out, with why), with
    /// sizes, codecs and first events; read nothing else, write nothing.
    #[arg(long = "dry_run", alias = "dry-run")]
    dry_run: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct WarehouseArgs {
    #[command(subcommand)]
    action: WarehouseAction,
}

#[derive(clap::Subcommand)]
enum WarehouseAction {
    /// Rewrite the staging files (one per log and table) into
    /// tables/<table>/app_date=YYYY-MM-DD/part-….parquet of about --target_mb each, sorted by
    /// app id, with a log_key column; commits by a manifest, then deletes what it absorbed; safe
    /// to run again after a crash.
    Compact {
        /// The warehouse: a directory or s3://bucket/prefix.
        warehouse: String,
        /// The size a part file is closed at, MB.
        #[arg(long = "target_mb", alias = "target-mb", default_value_t = 256)]
        target_mb: u64,
        #[command(flatten)]
        common: Common,
    },
}

fn cmd_warehouse(a: WarehouseArgs) -> Result<ExitCode> {
    match a.action {
        WarehouseAction::Compact {
            warehouse,
            target_mb,
            common,
        } => {
            let opts = common.ingest_options();
            let t0 = std::time::Instant::now();
            let wh = aether_engine::Warehouse::open(&warehouse, &opts.s3)?;
            let rt = runtime()?;
            let r = match rt.block_on(wh.compact(target_mb.max(1) * 1_000_000)) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: {warehouse}: compaction failed, nothing committed: {e}");
                    return Ok(ExitCode::from(2));
                }
            };
            eprintln!("{}", r.summary(t0.elapsed().as_secs_f64()));
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[derive(Args)]
struct AnalyzeArgs {
    #[command(flatten)]
    inputs: Inputs,
    /// How many bottlenecks, stages and SQL executions to show per application.
    #[arg(long, default_value_t = 5)]
    top: usize,
    /// Change a bottleneck threshold, e.g. --set skew_ratio_min=8 (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
}

#[derive(Args)]
struct ModelArgs {
    #[command(subcommand)]
    action: ModelAction,
    #[command(flatten)]
    ws: workflow::ConfigArg,
}

#[derive(Subcommand)]
enum ModelAction {
    /// Train a booster: label ln(CPU SQL duration / GPU SQL duration) per SQL matched by id and
    /// description, inputs the CPU run's QualX features (the platform model's feature names).
    Train {
        /// CSV with columns cpu_log,gpu_log (paths relative to the file).
        #[arg(long)]
        pairs: std::path::PathBuf,
        /// Where to write the booster (JSON).
        #[arg(long)]
        out: std::path::PathBuf,
        /// Boosting rounds.
        #[arg(long, default_value_t = 50)]
        rounds: u32,
        /// Platform whose feature set (and one-hot) the model uses.
        #[arg(long, default_value = "emr")]
        platform: aether_predict::platform::ModelPlatform,
    },
    /// Fit a correction of QualX's speedups on measured pairs (the history's, --pairs CSV
    /// predicted,measured[,id]), held-out error vs QualX's; --save: later qualify runs use it.
    Calibrate {
        #[arg(long)]
        pairs: Option<std::path::PathBuf>,
        #[arg(long)]
        save: bool,
    },
    /// Predicted vs actual SQL speedups on pairs, with the mean absolute percentage error.
    Evaluate {
        /// CSV with columns cpu_log,gpu_log (paths relative to the file).
        #[arg(long)]
        pairs: std::path::PathBuf,
        /// A booster (default: the built-in model of the platform).
        #[arg(long)]
        model: Option<std::path::PathBuf>,
        #[arg(long, default_value = "emr")]
        platform: aether_predict::platform::ModelPlatform,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
}

/// An error and its sources in one line, each said once.
fn said(e: impl Into<anyhow::Error>) -> String {
    aether_workflow::error::describe(&*e.into())
}

/// The value of a `Result`, or its error said and exit status 2.
macro_rules! or_exit2 {
    ($e:expr) => {
        match $e {
            Ok(x) => x,
            Err(e) => {
                eprintln!("error: {}", said(e));
                return Ok(ExitCode::from(2));
            }
        }
    };
}

fn cmd_model(a: ModelArgs) -> Result<ExitCode> {
    match a.action {
        ModelAction::Train {
            pairs,
            out,
            rounds,
            platform,
        } => {
            let t = aether_workflow::model::train(&pairs, &out, rounds, platform)?;
            t.warnings.iter().for_each(|w| eprintln!("warning: {w}"));
            println!("{}", t.summary(rounds, &out));
        }
        ModelAction::Calibrate { pairs, save } => {
            let c = aether_workflow::model::calibrate(&a.ws.open()?, pairs.as_deref(), save)?;
            println!("{}", c.text());
        }
        ModelAction::Evaluate {
            pairs,
            model,
            platform,
            format,
        } => {
            let (ev, warnings) =
                aether_workflow::model::evaluate(&pairs, model.as_deref(), platform)?;
            warnings.iter().for_each(|w| eprintln!("warning: {w}"));
            let (table, summary) = aether_workflow::model::evaluation_text(&ev, format.into())?;
            println!("{table}");
            eprintln!("{summary}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
struct QualifyArgs {
    /// CPU event logs: files, directories, globs, .txt lists of paths, s3:// URLs.
    #[arg(long = "event_log", alias = "event-log", num_args = 1.., required_unless_present = "platform_job_id", action = clap::ArgAction::Append)]
    event_log: Vec<String>,
    /// An EMR step (s-…) to qualify: its event log is found from the step's stderr (the YARN
    /// application id) in the event-log folder, and the step is recorded as the job's
    /// definition (what `submit` re-runs). Or an EMR on EKS job run, with --cluster_id its
    /// virtual cluster: its event log is spark-<id> in the run's event-log folder.
    #[arg(
        long = "platform_job_id",
        alias = "platform-job-id",
        requires = "cluster_id"
    )]
    platform_job_id: Option<String>,
    /// The EMR cluster (j-…) of --platform_job_id, or the EMR on EKS virtual cluster of its job run.
    #[arg(
        long = "cluster_id",
        alias = "cluster-id",
        requires = "platform_job_id"
    )]
    cluster_id: Option<String>,
    /// The platform to predict for (default: core.selected_platform of the settings, else emr).
    #[arg(long)]
    platform: Option<aether_predict::platform::ModelPlatform>,
    /// An XGBoost booster (JSON or UBJSON) with QualX feature names, instead of the built-in
    /// model of the platform.
    #[arg(long)]
    model: Option<std::path::PathBuf>,
    /// Write qualification_summary.csv, status.csv, per_sql.csv and features.csv here.
    #[arg(long)]
    output: Option<std::path::PathBuf>,
    /// Output format of the summary printed.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Every column of the summary table, not only those that fit the terminal.
    #[arg(long)]
    wide: bool,
    /// Show the top N reasons (XGBoost SHAP contributions) behind each app's prediction.
    #[arg(long, num_args = 0..=1, default_missing_value = "5", value_name = "N")]
    explain: Option<usize>,
    /// Small logs judged together in one session, at most N at a time (1: one session per log).
    #[arg(long, default_value_t = aether_predict::qualify::BATCH_LOGS, value_name = "N")]
    batch_logs: usize,
    /// Change a setting, e.g. --set gpu_speedup_min=1.5 (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// The settings file (default: $AETHER_HOME/config.toml, else ~/.aether/config.toml).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Keep what is read in this warehouse (a directory or s3://bucket/prefix), with each
    /// app's derived tables (qualification, qualification_sql, qualx_features, bottlenecks,
    /// operators, unsupported_summary under derived/): logs it already holds are skipped. With
    /// --shard, one task of a fleet run (`aether fleet`). The job history is not written.
    #[arg(long, value_name = "DIR|s3://…")]
    warehouse: Option<String>,
    /// With --warehouse: read again the logs the warehouse already holds.
    #[arg(long, requires = "warehouse")]
    force: bool,
    /// List the logs and apps the selection picks (and those it leaves out, with why), with
    /// sizes, codecs and first events; qualify nothing, write nothing.
    #[arg(
        long = "dry_run",
        alias = "dry-run",
        conflicts_with = "platform_job_id"
    )]
    dry_run: bool,
    #[command(flatten)]
    common: Common,
}

/// Settings with `--set NAME=VALUE` applied; `Err` (reported) on a bad one.
pub(crate) fn settings_from(
    sets: &[String],
) -> std::result::Result<aether_engine::AnalysisSettings, ExitCode> {
    let mut settings = aether_engine::AnalysisSettings::default();
    for kv in sets {
        let Some((k, v)) = kv.split_once('=') else {
            eprintln!("error: --set {kv}: expected NAME=VALUE");
            return Err(ExitCode::from(2));
        };
        if let Err(e) = settings.set(k.trim(), v) {
            eprintln!("error: --set {kv}: {e}");
            return Err(ExitCode::from(2));
        }
    }
    Ok(settings)
}

fn cmd_qualify(a: QualifyArgs) -> Result<ExitCode> {
    use aether_workflow::qualify::QualifyRequest;
    if a.dry_run {
        return select::dry_run(&a.event_log, &a.common.ingest_options(), a.format);
    }
    let settings = match settings_from(&a.set) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let config = workflow::ConfigArg {
        config: a.config.clone(),
    };
    let ws = or_exit2!(config.open());
    let (ingest, shown) = a.common.ingest_options_shown("qualifying");
    let req = QualifyRequest {
        event_log: a.event_log.clone(),
        step: a.cluster_id.clone().zip(a.platform_job_id.clone()),
        platform: a.platform,
        model: a.model.clone(),
        settings,
        explain: a.explain.unwrap_or(5),
        ingest,
        batch_logs: a.batch_logs,
        derive: a.warehouse.is_some(),
        output: a.output.clone(),
        format: a.format.into(),
    };
    if let Some(location) = &a.warehouse {
        if a.platform_job_id.is_some() {
            eprintln!("error: --warehouse qualifies event logs (--event_log), not a step");
            return Ok(ExitCode::from(2));
        }
        let (opts, names, _) = or_exit2!(aether_workflow::qualify::options(&ws, req));
        return qualify_to_warehouse(&a, &ws, location, &opts, &names, shown);
    }
    let (done, _) = or_exit2!(aether_workflow::qualify::qualify(&ws, req));
    drop(shown);
    print_qualified(&a, &done)?;
    Ok(if done.qualified > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// Print the apps not qualified, then the summary (and --explain).
fn print_qualified(a: &QualifyArgs, done: &aether_predict::outputs::Finished) -> Result<()> {
    for (_, line) in &done.lines {
        eprintln!("{line}");
    }
    let width = (!a.wide).then(aether_core::table::terminal_width);
    let out = a.output.as_deref();
    done.print(&mut std::io::stdout(), a.explain.is_some(), width, out)?;
    Ok(())
}

/// `qualify --warehouse` (`aether_workflow::qualify::qualify_to_warehouse`), told and judged.
fn qualify_to_warehouse(
    a: &QualifyArgs,
    ws: &aether_workflow::Workspace,
    location: &str,
    opts: &aether_predict::qualify::QualifyOptions,
    names: &[String],
    shown: Option<progress::Display>,
) -> Result<ExitCode> {
    let t0 = std::time::Instant::now();
    let outputs =
        aether_predict::outputs::Outputs::new(a.output.as_deref(), names, a.format.into());
    let q = outputs.map_err(Into::into).and_then(|o| {
        aether_workflow::qualify::qualify_to_warehouse(
            ws,
            location,
            &a.event_log,
            a.force,
            opts,
            names,
            o,
        )
    });
    drop(shown);
    let q = or_exit2!(q);
    if a.common.shard.is_none() {
        print_qualified(a, &q.finished)?;
    }
    for f in &q.failures {
        eprintln!("error: {f}");
    }
    eprintln!("{}", q.summary(location, t0.elapsed()));
    let ok = q.with_tables;
    if !q.failures.is_empty() {
        return Ok(ExitCode::from(2));
    }
    let shard = shard_exit(a.common.shard, q.source_errors.len(), q.written, q.skipped);
    if let Some(code) = shard {
        return Ok(code);
    }
    Ok(if ok == 0 && q.skipped == 0 {
        eprintln!("error: no event log could be read");
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// A fleet task's exit when its shard decides it (`aether_workflow::fleet::shard_exit`), said.
fn shard_exit(
    shard: Option<aether_ingest::Shard>,
    unreadable: usize,
    written: usize,
    skipped: usize,
) -> Option<ExitCode> {
    let (code, say) = aether_workflow::fleet::shard_exit(shard, unreadable, written, skipped)?;
    eprintln!("{say}");
    Some(ExitCode::from(code))
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

use aether_engine::load::Views;

/// A session with the tables of the logs (or the warehouse), the UDFs and the views; whether
/// any file had problems. `Err(code)` when nothing could be loaded (reported on stderr).
fn load(
    rt: &tokio::runtime::Runtime,
    inputs: &Inputs,
    settings: &aether_engine::AnalysisSettings,
    views: Views,
    skip_task_accumulables: bool,
) -> Result<std::result::Result<(aether_engine::SessionContext, bool), ExitCode>> {
    let (event_log, warehouse) = (&inputs.event_log, inputs.warehouse.as_deref());
    if event_log.is_empty() && warehouse.is_none() {
        eprintln!("error: give --event_log PATH… or --warehouse DIR");
        return Ok(Err(ExitCode::from(2)));
    }
    let (mut opts, shown) = inputs.common.ingest_options_shown("reading");
    opts.skip_task_accumulables = skip_task_accumulables;
    let loaded = aether_engine::load::load(rt, event_log, warehouse, &opts, settings, views);
    drop(shown);
    Ok(match loaded {
        Ok(l) => {
            for p in l.problems.iter().chain(&l.duplicates) {
                eprintln!("warning: {p}");
            }
            Ok((l.ctx, !l.problems.is_empty()))
        }
        Err(e) => {
            for p in &e.problems {
                eprintln!("warning: {p}");
            }
            eprintln!("error: {}", e.error);
            Err(ExitCode::from(2))
        }
    })
}

fn cmd_analyze(a: AnalyzeArgs) -> Result<ExitCode> {
    let settings = match settings_from(&a.set) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let rt = runtime()?;
    let (ctx, failed_files) = match load(&rt, &a.inputs, &settings, Views::All, false)? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let reports = match rt.block_on(aether_engine::analyze::analyze(&ctx, a.top)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: analysis failed: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let text = aether_engine::analyze::render(&reports, a.inputs.format.into())?;
    println!("{}", text.trim_end());
    Ok(if a.inputs.strict && failed_files {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn cmd_sql(mut a: SqlArgs) -> Result<ExitCode> {
    // `--event_log A B "SELECT …"`: the flag takes several values, so the query may land last
    if a.query.is_none()
        && let Some(last) = a.inputs.event_log.last()
        && aether_shell::looks_like_sql(last)
        && !std::path::Path::new(last).exists()
    {
        a.query = a.inputs.event_log.pop();
    }
    if let Some(url) = &a.cluster {
        let (Some(query), Some(wh)) = (a.query.clone(), &a.inputs.warehouse) else {
            eprintln!("error: --cluster runs one query given on the command line");
            return Ok(ExitCode::from(2));
        };
        if a.output.is_some() {
            eprintln!("error: --output is not supported with --cluster (redirect stdout)");
            return Ok(ExitCode::from(2));
        }
        let mut args = vec![
            "--cluster".to_string(),
            url.clone(),
            "--warehouse".into(),
            wh.clone(),
            "--format".into(),
            match a.inputs.format {
                Format::Table => "table",
                Format::Csv => "csv",
                Format::Json => "json",
            }
            .to_string(),
        ];
        let s3 = &a.inputs.common;
        if let Some(e) = &s3.s3_endpoint {
            args.extend(["--s3_endpoint".into(), e.clone()]);
        }
        if let Some(r) = &s3.region {
            args.extend(["--s3_region".into(), r.clone()]);
        }
        args.push(query);
        return fleet::cluster_role("sql", args);
    }
    if let Some(out) = &a.output
        && let Err(e) = aether_engine::FileFormat::of(out)
    {
        eprintln!("error: --output {e}");
        return Ok(ExitCode::from(2));
    }
    // no query: a shell on a terminal, else the statements on stdin
    let script = match aether_shell::Script::of(a.query.clone()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: reading the statements on stdin: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let rt = runtime()?;
    // statements known up front that never read the tasks' SQL-metric updates: left unread
    let tables = aether_ingest::TASK_ACCUMULABLE_TABLES;
    let skip = !script.interactive && !aether_shell::script_may_read(&script.text, &tables);
    let settings = aether_engine::AnalysisSettings::default();
    let (ctx, failed_files) = match load(&rt, &a.inputs, &settings, Views::OnDemand, skip)? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let from = match (&a.inputs.warehouse, a.inputs.event_log.len()) {
        (Some(w), 0) => format!("the warehouse {w}"),
        (Some(w), n) => format!("{n} event log input(s) and the warehouse {w}"),
        (None, n) => format!("{n} event log input(s)"),
    };
    let banner = format!("aether {} SQL shell over {from}", env!("CARGO_PKG_VERSION"));
    let failed = script.run(&rt, ctx, a.inputs.format.into(), a.output.clone(), &banner)?;
    Ok(if failed || (a.inputs.strict && failed_files) {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn cmd_config(a: ConfigArgs) -> Result<ExitCode> {
    use aether_core::ConfigFile;
    let path = ConfigFile::default_path(a.config.as_deref());
    if let ConfigAction::Init { force } = a.action {
        eprintln!("{}", ConfigFile::init(&path, force)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut f = ConfigFile::load(&path)?;
    match a.action {
        ConfigAction::Init { .. } => unreachable!("handled above"),
        ConfigAction::List => {
            for k in aether_core::config::KEYS {
                let shown = f.shown(k.key)?.unwrap_or_else(|| "(unset)".into());
                println!("{} = {}    # {}", k.key, shown, k.doc);
            }
        }
        ConfigAction::Get { key } => match f.shown(&key)? {
            Some(v) => println!("{}", v.trim_end_matches(" (default)")),
            None => return Ok(ExitCode::from(1)),
        },
        ConfigAction::Set { key, value } => {
            f.config.set(&key, &value)?;
            f.save()?;
        }
        ConfigAction::Unset { key } => {
            f.config.unset(&key)?;
            f.save()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_ingest(a: IngestArgs) -> Result<ExitCode> {
    if a.dry_run {
        return select::dry_run(&a.inputs, &a.common.ingest_options(), Format::Table);
    }
    let (opts, shown) = a.common.ingest_options_shown("ingesting");
    let t0 = std::time::Instant::now();
    let rep = aether_engine::ingest_to_warehouse(&a.inputs, &a.out, &opts, a.force);
    drop(shown);
    let rep = match rep {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    for line in rep.lines(&a.out, t0.elapsed().as_secs_f64()) {
        eprintln!("{line}");
    }
    let read_ok = rep.written.iter().filter(|r| r.app_id.is_some()).count();
    let (unreadable, written) = (rep.source_errors.len(), rep.written.len());
    if let Some(code) = shard_exit(a.common.shard, unreadable, written, rep.skipped.len()) {
        return Ok(code);
    }
    if read_ok == 0 && rep.skipped.is_empty() {
        eprintln!("error: no event log could be read");
        return Ok(ExitCode::from(2));
    }
    Ok(if a.strict && !rep.all_ok() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn main() -> ExitCode {
    aether_core::init_tracing();
    let cli = Cli::parse();
    let res = match cli.command {
        Command::Sql(a) => cmd_sql(a),
        Command::Ingest(a) => cmd_ingest(a),
        Command::Analyze(a) => cmd_analyze(a),
        Command::Qualify(a) => cmd_qualify(a),
        Command::Report(a) => report::cmd_report(a),
        Command::Model(a) => cmd_model(a),
        Command::Config(a) => cmd_config(a),
        Command::Cluster(a) => cluster::cmd_cluster(a),
        Command::Warehouse(a) => cmd_warehouse(a),
        Command::Fleet(a) => fleet::cmd_fleet(a),
        Command::Submit(a) => cluster::cmd_submit(a),
        Command::Profile(a) => profile::cmd_profile(a),
        Command::Tune(a) => tune::cmd_tune(a),
        Command::Validate(a) => validate::cmd_validate(a),
        Command::Run(a) => run::cmd_run(a),
        Command::History {
            ws,
            action: HistoryAction::Check { since, json },
        } => (|| {
            let c = aether_workflow::reconcile::check(&ws.open()?, &since)?;
            print!("{}", c.text(json)?);
            Ok(ExitCode::from(u8::from(!c.ok())))
        })(),
        Command::Doctor { ws, shape_id, json } => (|| {
            let d = aether_workflow::doctor::doctor(&ws.open()?, shape_id)?;
            println!("{}", d.render(json)?);
            Ok(ExitCode::from(u8::from(d.failed() > 0)))
        })(),
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", said(e));
            ExitCode::from(2)
        }
    }
}
