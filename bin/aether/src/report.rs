//! `aether report list | job | validation | ui`: the job history's reports. Every form (terminal
//! table, CSV, JSON, Markdown, HTML, the UI) renders the same typed reports of `aether-report`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aether_core::{History, table::terminal_width};
use aether_report::html::{self, Mode};
use aether_report::{model, render};
use aether_workflow::{Workspace, terminal};
use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};

#[derive(Args)]
pub struct ReportArgs {
    #[command(flatten)]
    ws: crate::workflow::ConfigArg,
    #[command(subcommand)]
    action: ReportAction,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Form {
    Table,
    Csv,
    Json,
    Md,
    Html,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOn {
    Fail,
    Warn,
    Never,
}

#[derive(Subcommand)]
enum ReportAction {
    /// The KPIs and every job of the history: predicted vs measured speedup, cost per run on
    /// the CPU and the GPU, savings, validation, the recommendation and the config to use.
    List {
        #[arg(long, value_enum, default_value_t = Form::Table)]
        format: Form,
        /// Write the report here instead of stdout.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Every column of the table, not only those that fit the terminal.
        #[arg(long)]
        wide: bool,
    },
    /// One job: every run (the CPU original, each GPU test run) with its config changes, the
    /// validations, and the spark-defaults and cluster to use.
    Job {
        #[arg(long = "aether_job_id", alias = "aether-job-id", value_parser = crate::workflow::id)]
        aether_job_id: i64,
        #[arg(long, value_enum, default_value_t = Form::Table)]
        format: Form,
        /// Write the report here instead of stdout.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// The validations of a period, new failures first (against the period before); exits 1
    /// when a job's latest validation fails (for cron, Airflow, EventBridge).
    Validation {
        /// The period back from now: 7d, 24h, 90m, 2w.
        #[arg(long, default_value = "7d")]
        since: String,
        /// Write the report here; its extension picks the form (.html, .md, .json, .csv,
        /// else a text table).
        #[arg(long)]
        output: Option<PathBuf>,
        /// Printed when there is no --output.
        #[arg(long, value_enum, default_value_t = Form::Table)]
        format: Form,
        /// Exit 1 when a latest validation is a FAIL (fail), a FAIL or a WARN (warn), or never.
        #[arg(long = "fail_on", alias = "fail-on", value_enum, default_value_t = FailOn::Fail)]
        fail_on: FailOn,
    },
    /// The web UI (read-only): the overview with KPI tiles and charts, the job list, each job's
    /// page, the validations.
    Ui {
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// The address to listen on (127.0.0.1: this machine only).
        #[arg(long, default_value = "127.0.0.1")]
        bind: String,
    },
    /// Each completed GPU test run to CloudWatch, once: duration, speedup, cost, savings,
    /// validation, shuffle write time, longest SQL stage, GPU semaphore wait and retries.
    #[command(after_help = "Example: aether report metrics --cloudwatch --alarms")]
    Metrics {
        /// Publish to CloudWatch (endpoint and credentials as for EMR).
        #[arg(long, required = true)]
        cloudwatch: bool,
        /// The CloudWatch namespace of the metrics.
        #[arg(long, default_value = aether_workflow::monitoring::DEFAULT_NAMESPACE)]
        namespace: String,
        /// Also create each job's alarms (thresholds: the monitoring.* settings).
        #[arg(long)]
        alarms: bool,
    },
}

/// The history, reconciled first (a report never shows a run RUNNING whose step ended).
fn history(ws: &Workspace) -> Result<(History, PathBuf)> {
    let mut h = ws.history()?;
    aether_workflow::reconcile::reconcile(ws, &mut h, aether_workflow::reconcile::Scope::All)?;
    Ok((h, ws.history_path()))
}

fn form_of(path: &Path, default: Form) -> Form {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html" | "htm") => Form::Html,
        Some("md" | "markdown") => Form::Md,
        Some("json") => Form::Json,
        Some("csv") => Form::Csv,
        Some(_) => Form::Table,
        None => default,
    }
}

/// Print, or write to a file (the whole file at once, after the report is made).
fn emit(text: &str, output: Option<&Path>) -> Result<()> {
    match output {
        Some(p) => {
            aether_report::save(p, text)?;
            eprintln!("wrote {}", p.display());
        }
        None => println!("{}", text.trim_end()),
    }
    Ok(())
}

fn json(v: &impl aether_report::Serialize) -> Result<String> {
    Ok(serde_json::to_string_pretty(v)?)
}

pub fn cmd_report(a: ReportArgs) -> Result<ExitCode> {
    let cfg = a.ws.open()?;
    match a.action {
        ReportAction::List {
            format,
            output,
            wide,
        } => {
            let (h, path) = history(&cfg)?;
            let o = model::overview(&h)?;
            let form = output.as_deref().map_or(format, |p| form_of(p, format));
            let text = match form {
                Form::Table => terminal::jobs_text(&o, (!wide).then(terminal_width)),
                Form::Csv => render::jobs_table(&o).csv(),
                Form::Json => json(&o)?,
                Form::Md => {
                    let mut s = String::from("# aether: jobs\n\n");
                    for (k, v) in render::kpi_lines(&o.kpis) {
                        s.push_str(&format!("- **{k}**: {v}\n"));
                    }
                    s.push('\n');
                    s.push_str(&render::jobs_table(&o).markdown());
                    s
                }
                Form::Html => html::overview(&o, &path.display().to_string(), Mode::File),
            };
            emit(&text, output.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        ReportAction::Job {
            aether_job_id,
            format,
            output,
        } => {
            let (h, path) = history(&cfg)?;
            let Some(d) = model::job(&h, aether_job_id)? else {
                bail!("unknown job {aether_job_id} (see `aether report list`)");
            };
            let form = output.as_deref().map_or(format, |p| form_of(p, format));
            let text = match form {
                Form::Table => render::job_text(&d, false),
                Form::Md => render::job_text(&d, true),
                Form::Csv => render::runs_table(&d).csv(),
                Form::Json => json(&d)?,
                Form::Html => html::job(
                    &d,
                    aether_platform::now_ms(),
                    &path.display().to_string(),
                    Mode::File,
                ),
            };
            emit(&text, output.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        ReportAction::Validation {
            since,
            output,
            format,
            fail_on,
        } => {
            let back =
                aether_report::ui::parse_since(&since).map_err(|e| anyhow!("--since {e}"))?;
            let (h, path) = history(&cfg)?;
            let r = model::validation_report(&h, aether_platform::now_ms() - back)?;
            let form = output.as_deref().map_or(format, |p| form_of(p, format));
            let text = match form {
                Form::Table => render::validation_text(&r, false),
                Form::Md => render::validation_text(&r, true),
                Form::Csv => render::validations_table(&r.latest).csv(),
                Form::Json => json(&r)?,
                Form::Html => html::validation(&r, &path.display().to_string(), Mode::File),
            };
            emit(&text, output.as_deref())?;
            let alert = match fail_on {
                FailOn::Never => None,
                _ => r.alert(fail_on == FailOn::Warn, &since),
            };
            alert.iter().for_each(|a| eprintln!("{a}"));
            Ok(ExitCode::from(u8::from(alert.is_some())))
        }
        ReportAction::Ui { port, bind } => ui(&cfg, &bind, port),
        ReportAction::Metrics {
            namespace, alarms, ..
        } => {
            let req = aether_workflow::monitoring::MetricsRequest { namespace, alarms };
            let o = aether_workflow::monitoring::publish(&cfg, &cfg.cloudwatch(), &req)?;
            println!("{}", o.summary());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn ui(cfg: &Workspace, bind: &str, port: u16) -> Result<ExitCode> {
    let (_, path) = history(cfg)?;
    cfg.runtime().block_on(async {
        let listener = tokio::net::TcpListener::bind((bind, port))
            .await
            .with_context(|| format!("cannot listen on {bind}:{port}"))?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() {
            eprintln!(
                "warning: listening on {addr}: every machine that can reach it can read the job history"
            );
        }
        eprintln!(
            "aether report ui: serving http://{addr}/ from {} (Ctrl-C to stop)",
            path.display()
        );
        let stop = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        aether_report::ui::serve(listener, path, stop).await?;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
