//! `aether fleet`: per-log work over a whole fleet as shards (`aether_workflow::fleet`): one
//! EMR step (`fleet submit`), the PySpark driver for any Spark (`fleet driver`), a Kubernetes
//! Indexed Job or an AWS Batch array job (`fleet manifests`); and `aether cluster
//! scheduler|executor`, run by the `aether-cluster` binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aether_workflow::fleet::{self, DRIVER};
use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};

#[derive(Args)]
pub struct FleetArgs {
    #[command(flatten)]
    ws: crate::workflow::ConfigArg,
    #[command(subcommand)]
    action: FleetAction,
}

/// The per-shard command every runner runs.
#[derive(Args, Clone)]
struct ShardWork {
    /// The fleet's event logs (s3:// prefixes, paths, .txt lists).
    #[arg(long = "event_log", alias = "event-log", num_args = 1.., required = true, action = clap::ArgAction::Append)]
    event_log: Vec<String>,
    /// The warehouse every shard writes to (s3://bucket/prefix).
    #[arg(long)]
    warehouse: String,
    /// How many shards.
    #[arg(long)]
    shards: u64,
    /// Threads of one shard's aether (the cores a task is given).
    #[arg(
        long = "threads_per_shard",
        alias = "threads-per-shard",
        default_value_t = 4
    )]
    threads_per_shard: u64,
}

impl ShardWork {
    fn work(self) -> Result<fleet::ShardWork> {
        let w = fleet::ShardWork {
            event_log: self.event_log,
            warehouse: self.warehouse,
            shards: self.shards,
            threads_per_shard: self.threads_per_shard,
        };
        w.check()?;
        Ok(w)
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
enum ManifestKind {
    /// A Kubernetes Job, completionMode Indexed: `--shard $(JOB_COMPLETION_INDEX)/N`.
    K8s,
    /// An AWS Batch job definition and array job: `--shard $AWS_BATCH_JOB_ARRAY_INDEX/N`.
    Batch,
}

#[derive(Subcommand)]
enum FleetAction {
    /// Qualify the fleet's logs into one warehouse (their tables and derived tables) as one EMR step: a PySpark job of N tasks, each
    /// running this aether binary (shipped with libxgboost.so as --archives) on its shard;
    /// Spark retries a failed task.
    Submit {
        #[command(flatten)]
        work: ShardWork,
        /// The EMR cluster to run the step on (any running cluster with Spark; no GPU needed).
        #[arg(long = "cluster_id", alias = "cluster-id")]
        cluster_id: String,
        /// Wait for the step and print each shard's result.
        #[arg(long)]
        wait: bool,
        /// With --wait: give up (and cancel the step) after this many seconds.
        #[arg(long = "timeout_s", alias = "timeout-s", default_value_t = 24 * 3600)]
        timeout_s: u64,
    },
    /// Write the PySpark fleet driver, to run with spark-submit on any Spark.
    Driver {
        /// Where to write it (default: standard output).
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Write the manifests of a Kubernetes Indexed Job or an AWS Batch array job running one
    /// shard per index.
    Manifests {
        #[arg(long, value_enum)]
        kind: ManifestKind,
        #[command(flatten)]
        work: ShardWork,
        /// The container image with aether on its PATH (default: the tag scripts/image builds).
        #[arg(long, default_value = concat!("aether:", env!("CARGO_PKG_VERSION")))]
        image: String,
        /// Shards run at once (Kubernetes parallelism; Batch runs what its queue allows).
        #[arg(long, default_value_t = 10)]
        parallelism: u64,
        /// Memory of one shard, MiB (the largest app's, not the fleet's).
        #[arg(long = "memory_mib", alias = "memory-mib", default_value_t = 8192)]
        memory_mib: u64,
        /// Attempts per shard.
        #[arg(long, default_value_t = 3)]
        attempts: u64,
        /// Kubernetes: the namespace and service account (with S3 access, e.g. IRSA).
        #[arg(long, default_value = "default")]
        namespace: String,
        #[arg(
            long = "service_account",
            alias = "service-account",
            default_value = "aether-fleet"
        )]
        service_account: String,
        /// Batch: the job queue and the job role.
        #[arg(
            long = "job_queue",
            alias = "job-queue",
            default_value = "aether-fleet"
        )]
        job_queue: String,
        #[arg(long = "job_role_arn", alias = "job-role-arn")]
        job_role_arn: Option<String>,
        /// Where to write them (default: standard output).
        #[arg(long)]
        output: Option<PathBuf>,
    },
}

pub fn cmd_fleet(a: FleetArgs) -> Result<ExitCode> {
    match a.action {
        FleetAction::Driver { output } => {
            write_out(output.as_deref(), DRIVER)?;
            Ok(ExitCode::SUCCESS)
        }
        FleetAction::Manifests {
            kind,
            work,
            image,
            parallelism,
            memory_mib,
            attempts,
            namespace,
            service_account,
            job_queue,
            job_role_arn,
            output,
        } => {
            let work = work.work()?;
            let text = match kind {
                ManifestKind::K8s => fleet::k8s_job(
                    &work,
                    &image,
                    parallelism,
                    memory_mib,
                    attempts,
                    &namespace,
                    &service_account,
                ),
                ManifestKind::Batch => fleet::batch_job(
                    &work,
                    &image,
                    memory_mib,
                    attempts,
                    &job_queue,
                    job_role_arn.as_deref(),
                ),
            };
            write_out(output.as_deref(), &text)?;
            Ok(ExitCode::SUCCESS)
        }
        FleetAction::Submit {
            work,
            cluster_id,
            wait,
            timeout_s,
        } => {
            let work = work.work()?;
            let ws = a.ws.open_stoppable()?;
            let step = fleet::submit_step(&ws, &work, &cluster_id)?;
            println!("{}\t{}\t{}", step.step_id, cluster_id, step.state.as_str());
            if !wait {
                eprintln!("{}", step.said(&cluster_id, &work));
                return Ok(ExitCode::SUCCESS);
            }
            let done = fleet::wait_step(&ws, &cluster_id, &step.step_id, timeout_s)?;
            for l in &done.shard_lines {
                println!("{l}");
            }
            if let Some(failure) = done.failure(&step.step_id) {
                eprintln!("{failure}");
                return Ok(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn write_out(path: Option<&Path>, text: &str) -> Result<()> {
    match path {
        Some(p) => std::fs::write(p, text).with_context(|| format!("{}", p.display())),
        None => {
            std::io::stdout().write_all(text.as_bytes())?;
            Ok(())
        }
    }
}

/// Run `aether-cluster ROLE ARGS…` in place of this process (`aether_workflow::fleet::cluster_role`).
pub fn cluster_role(role: &str, args: Vec<String>) -> Result<ExitCode> {
    let code = aether_workflow::fleet::cluster_role(role, &args)?;
    Ok(ExitCode::from(code))
}
