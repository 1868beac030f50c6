//! `aether profile`: what GPU runs tell (`aether_workflow::profile`) — the profiling
//! AutoTuner's recommended Spark properties, health and causes of slowness — printed.

use crate::workflow::{ConfigArg, id};
use aether_workflow::profile::{Profiled, json_of};
use anyhow::Result;
use clap::Args;
use serde_json::Value;
use std::collections::BTreeMap;
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
    /// Write per app `<app>/recommended.conf` and `<app>/profile.log`, plus `profile.json` and
    /// `tuning_summary.log`, here.
    #[arg(long)]
    output: Option<std::path::PathBuf>,
    /// How to print the recommendations.
    #[arg(long, value_enum, default_value_t = OutFormat::Table)]
    format: OutFormat,
    #[command(flatten)]
    ws: ConfigArg,
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
    let p = match aether_workflow::profile::profile(&ws, &a.event_log, step, a.aether_job_id) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(ExitCode::from(2));
        }
    };
    print(&p.apps, &p.slowness, &p.health, a.format)?;
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

fn print(
    out: &[Profiled],
    slowness: &BTreeMap<String, Vec<serde_json::Map<String, Value>>>,
    health: &BTreeMap<String, String>,
    f: OutFormat,
) -> Result<()> {
    match f {
        OutFormat::Table => {
            for p in out {
                if let Some(line) = health.get(&p.app_id) {
                    println!("App ID: {}: {line}", p.app_id);
                }
                if let Some(rows) = slowness.get(&p.app_id).filter(|r| !r.is_empty()) {
                    println!(
                        "App ID: {}: why it was slow (task time each cause touched)",
                        p.app_id
                    );
                    for r in rows {
                        let g = |k: &str| {
                            r.get(k)
                                .map(|v| v.as_str().map(String::from).unwrap_or(v.to_string()))
                                .unwrap_or_default()
                        };
                        println!(
                            "  {}. {} {} ms ({}% of task time): {}\n     -> {}",
                            g("rank"),
                            g("cause"),
                            g("time_ms"),
                            g("task_time_pct"),
                            g("detail"),
                            g("remedy")
                        );
                    }
                    println!();
                }
                println!(
                    "App ID: {} ({}){}",
                    p.app_id,
                    p.event_log,
                    p.config_id
                        .map(|c| format!("  Aether Config ID: {c}"))
                        .unwrap_or_default()
                );
                println!(
                    "{}",
                    aether_predict::profile::render_section_d(&p.tuning).trim_end()
                );
                if !p.remedies.is_empty() {
                    println!(
                        "\nGPU OOM remedies ({} tasks failed on GPU out-of-memory; beyond the reference, in the config):",
                        p.gpu_oom_tasks
                    );
                    for (k, v) in &p.remedies {
                        println!("--conf {k}={v}");
                    }
                }
                println!();
            }
        }
        OutFormat::Csv => {
            println!("app_id,config_id,key,value,change,source");
            let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
            for p in out {
                for r in &p.tuning.properties {
                    println!(
                        "{},{},{},{},{},{}",
                        q(&p.app_id),
                        p.config_id.map(|c| c.to_string()).unwrap_or_default(),
                        q(&r.key),
                        q(&r.value),
                        serde_json::to_value(r.change)?.as_str().unwrap_or(""),
                        q(r.source.as_deref().unwrap_or(""))
                    );
                }
            }
        }
        OutFormat::Json => {
            let mut v = json_of(out);
            for a in v.as_array_mut().into_iter().flatten() {
                let id = a["app_id"].as_str().unwrap_or("").to_string();
                a["slowness"] =
                    serde_json::to_value(slowness.get(&id).cloned().unwrap_or_default())?;
            }
            println!("{}", serde_json::to_string_pretty(&v)?)
        }
    }
    Ok(())
}
