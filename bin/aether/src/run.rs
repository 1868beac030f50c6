//! `aether run`: the whole workflow of `aether_workflow::run` in one command — qualify, tune
//! each job recommended for the GPU on a cluster of its shape, validate its best run, report;
//! resumable after a stop.

use crate::workflow::{WsArgs, stopped};
use aether_workflow::run::{RunEnd, RunRequest};
use aether_workflow::terminal;
use anyhow::Result;
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
#[command(after_help = "Example: aether run --event_log s3://my-bucket/spark-logs/ --yes")]
pub struct RunArgs {
    /// CPU event logs: files, directories, globs, .txt lists of paths, s3:// URLs.
    #[arg(long = "event_log", alias = "event-log", num_args = 1.., required = true, action = clap::ArgAction::Append)]
    event_log: Vec<String>,
    /// The settings file and where the GPU test runs go (--platform, or --backend as before).
    #[command(flatten)]
    ws: WsArgs,
    /// Tuning runs per job before it may stop for lack of improvement.
    #[arg(
        long = "min_tuning_iterations",
        alias = "min-tuning-iterations",
        default_value_t = 3
    )]
    min_tuning_iterations: i64,
    /// Never more tuning runs per job than this (default: min + 3).
    #[arg(long = "max_tuning_iterations", alias = "max-tuning-iterations")]
    max_tuning_iterations: Option<i64>,
    /// Give up on one run after this many seconds.
    #[arg(long = "timeout_s", alias = "timeout-s")]
    timeout_s: Option<u64>,
    /// Create paid resources (EMR clusters) without asking.
    #[arg(long)]
    yes: bool,
    /// A qualify setting, e.g. --set gpu_speedup_min=1.5 (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Write the reports here at the end: overview.html and job-<id>.html for each job.
    #[arg(long)]
    output: Option<PathBuf>,
}

pub fn cmd_run(a: RunArgs) -> Result<ExitCode> {
    let settings = match crate::settings_from(&a.set) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let ws = a.ws.open_stoppable()?;
    let req = RunRequest {
        event_log: a.event_log,
        min_tuning_iterations: a.min_tuning_iterations,
        max_tuning_iterations: a.max_tuning_iterations,
        timeout_s: a.timeout_s,
        settings,
        output: a.output,
    };
    let yes = a.yes;
    let mut confirm = |msg: &str| -> aether_workflow::Result<bool> {
        if yes {
            return Ok(true);
        }
        if !std::io::stdin().is_terminal() {
            return Err(aether_workflow::WorkflowError::Invalid(format!(
                "{msg}; pass --yes to create them"
            )));
        }
        eprint!("{msg}. Go on? [y/N] ");
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
    };
    Ok(match aether_workflow::run::run(&ws, &req, &mut confirm)? {
        RunEnd::Stopped(s) => stopped(s),
        RunEnd::Declined => ExitCode::from(1),
        RunEnd::Done { failed, overview } => {
            let width = Some(aether_core::table::terminal_width());
            println!("{}", terminal::jobs_text(&overview, width).trim_end());
            if failed > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
    })
}
