//! `aether profile`: what GPU runs tell (`aether_workflow::profile`) — the profiling
//! AutoTuner's recommended Spark properties, health and causes of slowness — printed.

use crate::workflow::{ConfigArg, id};
use aether_workflow::profile::{Profile, json_of};
use anyhow::Result;
use clap::Args;
use std::process::ExitCode;

#[derive(Args)]
#[command(
    after_help = "Example: aether profile --platform_job_id s-2AXXXXXXGAPLF --cluster_id j-2AXXXXXXGAPLF"
)]
pub struct ProfileArgs {
    /// GPU event logs: files, directories, globs, .txt lists of paths, s3:// URLs.
    #[arg(long = "event_log", alias = "event-log", num_args = 1.., required_unless_present = "platform_job_id", action = clap::ArgAction::Append)]
    event_log: Vec<String>,
    /// A GPU run on EMR: the step (s-…) whose event log to profile (or an EMR on EKS job run,
    /// with --cluster_id its virtual cluster).
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
    /// The job the runs belong to (default: the job of the recorded run with that event log,
    /// else a job of its own).
    #[arg(long = "aether_job_id", alias = "aether-job-id", value_parser = id)]
    aether_job_id: Option<i64>,
    /// The cluster the next run is for: the reference's target-cluster YAML (workerInfo:
    /// cpuCores, memoryGB, gpu {count, name}; or instanceType), or a GPU instance type such as
    /// g5.12xlarge. Default: g6.4xlarge.
    #[arg(long = "target_cluster_info", alias = "target-cluster-info")]
    target_cluster_info: Option<String>,
    /// Write per app `<app>/recommended.conf` and `<app>/profile.log`, plus `profile.json` and
    /// `tuning_summary.log`, here.
    #[arg(long)]
    output: Option<std::path::PathBuf>,
    /// How to print the recommendations.
    #[arg(long, value_enum, default_value_t = OutFormat::Table)]
    format: OutFormat,
    /// Print the lines whole, not wrapped to the terminal's width.
    #[arg(long)]
    wide: bool,
    #[command(flatten)]
    ws: ConfigArg,
    #[command(flatten)]
    select: crate::select::SelectArgs,
}

#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum OutFormat {
    /// Section D of the reference's profile.log, per app.
    Table,
    /// app_id,key,value,change,source
    Csv,
    Json,
}

pub fn cmd_profile(a: ProfileArgs) -> Result<ExitCode> {
    let ws = a.ws.open()?;
    let step = a.cluster_id.as_deref().zip(a.platform_job_id.as_deref());
    let target = a.target_cluster_info.as_deref();
    let select = a.select.selection();
    let p = match aether_workflow::profile::profile(
        &ws,
        &a.event_log,
        step,
        a.aether_job_id,
        target,
        &select,
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {}", aether_workflow::error::describe(&e));
            return Ok(ExitCode::from(2));
        }
    };
    print(&p, a.format, a.wide)?;
    if let Some(dir) = &a.output {
        aether_workflow::profile::write_outputs(&ws, dir, &p)?;
    }
    let any_gpu = p.apps.iter().any(|p| p.tuning.recommended);
    Ok(if any_gpu && p.unreadable == 0 {
        ExitCode::SUCCESS
    } else if any_gpu {
        ExitCode::from(1)
    } else {
        ExitCode::from(2)
    })
}

fn print(p: &Profile, f: OutFormat, wide: bool) -> Result<()> {
    let out = &p.apps;
    match f {
        OutFormat::Table => {
            let width = (!wide).then(aether_core::table::terminal_width);
            print!("{}", aether_workflow::profile::text(p, width));
        }
        OutFormat::Csv => print!("{}", aether_workflow::profile::csv(out)?),
        OutFormat::Json => {
            let mut v = json_of(out);
            for a in v.as_array_mut().into_iter().flatten() {
                let id = a["app_id"].as_str().unwrap_or("").to_string();
                a["slowness"] =
                    serde_json::to_value(p.slowness.get(&id).cloned().unwrap_or_default())?;
            }
            println!("{}", serde_json::to_string_pretty(&v)?)
        }
    }
    Ok(())
}
