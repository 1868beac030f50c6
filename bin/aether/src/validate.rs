//! `aether validate`: the GPU run's output against the CPU run's (aether-validate), with a
//! verdict CI and schedulers can gate on: exit 0 on PASS (and WARN unless --strict), 1 on FAIL,
//! 2 on an error (an output that cannot be read, bad arguments).

use crate::workflow::{ConfigArg, id};
use anyhow::{Result, anyhow};
use clap::{Args, ValueEnum};
use std::process::ExitCode;

#[derive(Clone, Copy, ValueEnum)]
pub enum ReportFormat {
    Table,
    Json,
    Md,
    Html,
}

#[derive(Args)]
#[command(
    after_help = "Example: aether validate --aether_job_id 12\nTroubleshoot: aether validate --aether_job_id 12 --phase all"
)]
pub struct ValidateArgs {
    /// The CPU run's output: a file or a folder of part files (Hive partitions included), or
    /// s3://bucket/prefix.
    #[arg(
        long = "cpu_output",
        alias = "cpu-output",
        requires = "gpu_output",
        required_unless_present_any = ["cpu_event_log", "aether_job_id"]
    )]
    cpu_output: Option<String>,
    /// The GPU run's output, as --cpu_output.
    #[arg(long = "gpu_output", alias = "gpu-output", requires = "cpu_output")]
    gpu_output: Option<String>,
    /// The CPU run's event log: rows read and written per app and SQL, and each write command
    /// (path, format, mode, partitions, rows), compared with --gpu_event_log's.
    #[arg(
        long = "cpu_event_log",
        alias = "cpu-event-log",
        requires = "gpu_event_log"
    )]
    cpu_event_log: Option<String>,
    /// The GPU run's event log.
    #[arg(
        long = "gpu_event_log",
        alias = "gpu-event-log",
        requires = "cpu_event_log"
    )]
    gpu_event_log: Option<String>,
    /// A job of the history: its CPU run against its best GPU test run (or --run_id): the
    /// event logs, and each output against the run's sandbox copy; the result is recorded.
    #[arg(
        long = "aether_job_id",
        alias = "aether-job-id",
        conflicts_with_all = ["cpu_output", "gpu_output", "cpu_event_log", "gpu_event_log"],
        value_parser = id
    )]
    aether_job_id: Option<i64>,
    /// Where the GPU run first diverges from the CPU run, from the two event logs: scan, shuffle,
    /// join, aggregate, output, or all (first phase and stage, its operators and CPU fallbacks).
    #[arg(long, conflicts_with_all = ["cpu_output", "gpu_output"])]
    phase: Option<aether_validate::phases::PhaseChoice>,
    /// The GPU test run to validate (default: the job's fastest successful one).
    #[arg(long = "run_id", alias = "run-id", requires = "aether_job_id", value_parser = id)]
    run_id: Option<i64>,
    #[command(flatten)]
    ws: ConfigArg,
    /// The outputs' format: parquet, csv (with a header line), json (JSON lines).
    #[arg(long, default_value = "parquet")]
    format: aether_validate::Format,
    /// Key columns (comma-separated) for the keyed comparison and the sample; default: a
    /// unique, never-null column of the CPU output, if any.
    #[arg(long, value_delimiter = ',')]
    key: Vec<String>,
    /// Relative tolerance for floating-point values (default: 1e-6 for doubles, 1e-4 for
    /// floats).
    #[arg(long = "rel_tol", alias = "rel-tol")]
    rel_tol: Option<f64>,
    /// Absolute tolerance for floating-point values.
    #[arg(long = "abs_tol", alias = "abs-tol", default_value_t = 0.0)]
    abs_tol: f64,
    /// The checks to run (comma-separated): counts, aggregates, rows, sample, ks.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "counts,aggregates,rows,sample,ks"
    )]
    checks: Vec<aether_validate::CheckKind>,
    /// Memory for the sorts, aggregations and joins of the comparison, in MiB (beyond it they
    /// spill to the temporary directory).
    #[arg(long = "memory_mb", alias = "memory-mb", default_value_t = aether_validate::DEFAULT_MEMORY_MB)]
    memory_mb: usize,
    /// Exit 1 on WARN too.
    #[arg(long)]
    strict: bool,
    /// Write validation.json, validation.md and validation.html here.
    #[arg(long)]
    output: Option<std::path::PathBuf>,
    /// How to print the result (the table shows every check that did not pass, and the
    /// overall ones; json, md and html every check).
    #[arg(long = "report_format", alias = "report-format", value_enum, default_value_t = ReportFormat::Table)]
    report_format: ReportFormat,
}

pub fn cmd_validate(a: ValidateArgs) -> Result<ExitCode> {
    let o = aether_validate::Options {
        format: a.format,
        key: a
            .key
            .iter()
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .collect(),
        rel_tol: a.rel_tol,
        abs_tol: a.abs_tol,
        checks: a.checks.into_iter().collect(),
        memory_mb: a.memory_mb,
        ..Default::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if let Some(choice) = a.phase {
        let r = match (a.aether_job_id, &a.cpu_event_log, &a.gpu_event_log) {
            (Some(job), _, _) => {
                aether_workflow::validate::job_phases(&a.ws.open()?, job, a.run_id, choice)?
            }
            (None, Some(c), Some(g)) => rt
                .block_on(aether_validate::phases::phases(c, g, choice))
                .map_err(|e| anyhow!("{e}"))?,
            _ => {
                return Err(anyhow!(
                    "--phase needs --aether_job_id or the two event logs"
                ));
            }
        };
        match a.report_format {
            ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&r)?),
            _ => print!("{}", aether_validate::phases::render(&r, choice)),
        }
        return Ok(ExitCode::from(r.first.is_some() as u8));
    }
    let mut report: Option<aether_validate::Report> = None;
    let mut record = None;
    if let Some(job) = a.aether_job_id {
        let ws = a.ws.open()?;
        let (r, runs) = aether_workflow::validate::validate_job(&ws, job, a.run_id, &o)?;
        report = Some(r);
        record = Some((ws, runs));
    }
    if let (Some(c), Some(g)) = (&a.cpu_event_log, &a.gpu_event_log) {
        report = Some(
            rt.block_on(aether_validate::validate_logs(c, g))
                .map_err(|e| anyhow!("{e}"))?,
        );
    }
    if let (Some(c), Some(g)) = (&a.cpu_output, &a.gpu_output) {
        let r = rt
            .block_on(aether_validate::validate(c, g, &o))
            .map_err(|e| anyhow!("{e}"))?;
        report = Some(match report {
            Some(l) => l.merge(r),
            None => r,
        });
    }
    let r = report.ok_or_else(|| {
        anyhow!("give --cpu_output and --gpu_output, or --cpu_event_log and --gpu_event_log")
    })?;
    if let Some((ws, runs)) = record {
        aether_workflow::validate::record(&ws, &runs, &r)?;
    }
    if let Some(dir) = &a.output {
        aether_validate::report::write_all(dir, &r).map_err(|e| anyhow!(e))?;
        eprintln!(
            "validate: wrote {}/validation.{{json,md,html}}",
            dir.display()
        );
    }
    print!(
        "{}",
        match a.report_format {
            ReportFormat::Table => aether_validate::report::table(&r, false),
            ReportFormat::Json => aether_validate::report::json(&r) + "\n",
            ReportFormat::Md => aether_validate::report::markdown(&r),
            ReportFormat::Html => aether_validate::report::html(&r),
        }
    );
    Ok(ExitCode::from(match r.verdict {
        aether_validate::Verdict::Pass => 0,
        aether_validate::Verdict::Warn if !a.strict => 0,
        _ => 1,
    }))
}
