//! `aether tune`: the tuning loop of `aether_workflow::tune` — run, profile, a new config,
//! again; the fastest successful run kept; resumable.

use crate::workflow::{TargetArgs, WsArgs, id, stopped};
use aether_workflow::tune::{self, TuneEnd, TuneParams, TuneRequest};
use anyhow::Result;
use clap::Args;
use std::process::ExitCode;

#[derive(Args)]
#[command(after_help = "Example: aether tune --aether_job_id 12 --cluster_shape_id 3")]
pub struct TuneArgs {
    #[command(flatten)]
    ws: WsArgs,
    /// The job to tune (qualify's "Job" column).
    #[arg(long = "aether_job_id", alias = "aether-job-id", value_parser = id)]
    aether_job_id: i64,
    #[command(flatten)]
    target: TargetArgs,
    /// Run at least this many iterations before stopping for lack of improvement.
    #[arg(
        long = "min_tuning_iterations",
        alias = "min-tuning-iterations",
        default_value_t = 3
    )]
    min_tuning_iterations: i64,
    /// Never more than this many (default: min + 3).
    #[arg(long = "max_tuning_iterations", alias = "max-tuning-iterations")]
    max_tuning_iterations: Option<i64>,
    /// A run improves the best when it is at least this many percent faster.
    #[arg(
        long = "improvement_pct",
        alias = "improvement-pct",
        default_value_t = 5.0
    )]
    improvement_pct: f64,
    /// Stop when the session's runs have taken this many seconds in all.
    #[arg(long = "time_budget_s", alias = "time-budget-s")]
    time_budget_s: Option<u64>,
    /// Stop when the session's runs have cost this many USD in all.
    #[arg(long = "cost_budget_usd", alias = "cost-budget-usd")]
    cost_budget_usd: Option<f64>,
    /// Give up on one run after this many seconds (it is cancelled and recorded TIMED_OUT).
    #[arg(long = "timeout_s", alias = "timeout-s", default_value_t = 6 * 3600)]
    timeout_s: u64,
    /// The job as a spark-submit command line, when the history has no definition of it;
    /// recorded as the job's definition.
    #[arg(long)]
    job: Option<String>,
    /// Run even when the CPU run wrote outputs that no argument of the job names.
    #[arg(long = "allow_output_overwrite", alias = "allow-output-overwrite")]
    allow_output_overwrite: bool,
}

pub fn cmd_tune(a: TuneArgs) -> Result<ExitCode> {
    let ws = a.ws.open_stoppable()?;
    let mut params = TuneParams::new(
        a.min_tuning_iterations,
        a.max_tuning_iterations,
        a.improvement_pct,
    )?;
    params.time_budget_ms = a.time_budget_s.map(|s| s as i64 * 1000);
    params.cost_budget_usd = a.cost_budget_usd;
    let req = TuneRequest {
        job_id: a.aether_job_id,
        target: a.target.target(None)?,
        params,
        timeout_s: a.timeout_s,
        job: a.job,
        allow_output_overwrite: a.allow_output_overwrite,
    };
    match tune::tune(&ws, &req)? {
        TuneEnd::Interrupted(sig) => Ok(stopped(sig)),
        TuneEnd::Done { best_run, reason } => {
            println!("stopped: {reason}");
            let s = tune::summary(&ws.history()?, a.aether_job_id, best_run)?;
            let Some(best) = s.best else {
                println!("no successful run: nothing to keep");
                return Ok(ExitCode::from(1));
            };
            let line = aether_report::render::tune_best(&best, s.cpu_ms, s.cpu_cost_usd);
            println!("{line}");
            Ok(ExitCode::SUCCESS)
        }
    }
}
