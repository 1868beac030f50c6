//! `aether cluster` and `aether submit`: GPU test clusters and runs on the platform the
//! settings choose (`aether_workflow::cluster`, `aether_workflow::submit`).

use crate::workflow::{TargetArgs, WsArgs, id, stopped};
use aether_platform::StepState;
use aether_workflow::cluster::{self, CreateOpts, Created};
use aether_workflow::submit::{self, SubmitRequest, Submitted};
use anyhow::Result;
use clap::{Args, Subcommand};
use std::process::ExitCode;

#[derive(Args)]
pub struct ClusterArgs {
    #[command(flatten)]
    ws: WsArgs,
    #[command(subcommand)]
    action: ClusterAction,
}

#[derive(Subcommand)]
enum ClusterAction {
    /// Start a cluster of the GPU shape qualify recommended (the id in its "Shape" column).
    #[command(after_help = "Example: aether cluster create --cluster_shape_id 3")]
    Create {
        /// The shape id qualify printed (omit on the local platform for this machine as is).
        #[arg(long = "cluster_shape_id", alias = "cluster-shape-id", value_parser = id)]
        cluster_shape_id: Option<i64>,
        /// Cores for local Spark (local[N]); default all.
        #[arg(long = "local_cores", alias = "local-cores", default_value_t = 0)]
        local_cores: i64,
        /// A token that makes a retried create return the cluster made the first time.
        #[arg(long = "request_token", alias = "request-token")]
        request_token: Option<String>,
        /// A YAML file over the defaults: emrRelease, applications, idleTimeoutSeconds, tags,
        /// instanceGroups [name, role, instanceType, instanceCount, market, bidPrice,
        /// onSpotUnavailable, ebsConfiguration] (EMR).
        #[arg(long = "config_file", alias = "config-file")]
        config_file: Option<std::path::PathBuf>,
        /// Keep a cluster whose create was interrupted (Ctrl-C, SIGTERM) instead of
        /// terminating it.
        #[arg(long = "keep_cluster", alias = "keep-cluster")]
        keep_cluster: bool,
        /// emr-eks: where to write the manifests (default <aether home>/emr-eks/shape-<id>).
        #[arg(long)]
        output: Option<std::path::PathBuf>,
        /// emr-eks: also apply them with kubectl (its current context).
        #[arg(long)]
        apply: bool,
    },
    /// aether's clusters (state, age, cost so far), the history reconciled; --all: all.
    #[command(after_help = "Example: aether cluster list")]
    List {
        /// Also the platform's clusters aether did not make.
        #[arg(long)]
        all: bool,
    },
    /// One cluster.
    #[command(after_help = "Example: aether cluster describe --cluster_id j-2AXXXXXXGAPLF")]
    Describe {
        #[arg(long = "cluster_id", alias = "cluster-id")]
        cluster_id: String,
    },
    /// Terminate a cluster (its running steps are cancelled), or aether's idle ones.
    #[command(after_help = "Example: aether cluster terminate --cluster_id j-2AXXXXXXGAPLF")]
    Terminate {
        #[arg(
            long = "cluster_id",
            alias = "cluster-id",
            required_unless_present = "all_idle"
        )]
        cluster_id: Option<String>,
        /// Every cluster aether made that is idle (WAITING, no run of the history open on it).
        #[arg(long = "all_idle", alias = "all-idle")]
        all_idle: bool,
    },
    /// Run a Ballista scheduler with aether's functions, for cross-log SQL over a fleet
    /// warehouse (`aether sql --cluster df://HOST:PORT`): `aether-cluster scheduler ARGS`
    /// (--bind, --port, --external_host, --s3_endpoint; see `aether-cluster scheduler --help`).
    #[command(disable_help_flag = true)]
    Scheduler {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run a Ballista executor with aether's functions and S3 (`aether-cluster executor ARGS`:
    /// --scheduler HOST:PORT, --port, --grpc_port, --tasks, --work_dir, --memory_mb).
    #[command(disable_help_flag = true)]
    Executor {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Args)]
#[command(after_help = "Example: aether submit --config_id 7 --cluster_id j-2AXXXXXXGAPLF")]
pub struct SubmitArgs {
    #[command(flatten)]
    ws: WsArgs,
    /// The stored Spark configs to run with (qualify's "Config" column, or a later one).
    #[arg(long = "config_id", alias = "config-id", value_parser = id)]
    config_id: i64,
    #[command(flatten)]
    target: TargetArgs,
    /// With --cluster_shape_id: the cluster's --config_file (EMR).
    #[arg(
        long = "config_file",
        alias = "config-file",
        requires = "cluster_shape_id"
    )]
    config_file: Option<std::path::PathBuf>,
    /// The job as a spark-submit command line, when its log does not hold one (a shell or
    /// notebook ran it); recorded as the job's definition.
    #[arg(long)]
    job: Option<String>,
    /// Spark properties set over the config's (`--conf k=v`, repeatable); stored as a new
    /// config of the job (source `user`).
    #[arg(long = "conf", value_name = "KEY=VALUE")]
    conf: Vec<String>,
    /// Run even when the CPU run wrote outputs that no argument of the job names (so they
    /// cannot be moved to the sandbox, and this run may overwrite them).
    #[arg(long = "allow_output_overwrite", alias = "allow-output-overwrite")]
    allow_output_overwrite: bool,
    /// Give up waiting after this many seconds (the step is cancelled).
    #[arg(long = "timeout_s", alias = "timeout-s", default_value_t = 6 * 3600)]
    timeout_s: u64,
}

pub fn cmd_cluster(a: ClusterArgs) -> Result<ExitCode> {
    match a.action {
        ClusterAction::Scheduler { args } => return crate::fleet::cluster_role("scheduler", args),
        ClusterAction::Executor { args } => return crate::fleet::cluster_role("executor", args),
        _ => {}
    }
    let ws = a.ws.open_stoppable()?;
    let platform = match &a.action {
        ClusterAction::Describe { cluster_id }
        | ClusterAction::Terminate {
            cluster_id: Some(cluster_id),
            ..
        } => ws.platform_of_cluster(cluster_id)?,
        _ => ws.platform()?,
    };
    match a.action {
        ClusterAction::Create {
            cluster_shape_id,
            local_cores,
            request_token,
            config_file,
            keep_cluster,
            output,
            apply,
        } => {
            let o = CreateOpts {
                shape_id: cluster_shape_id,
                local_cores,
                request_token,
                config_file,
                keep_cluster,
                output,
                apply,
            };
            match cluster::create_on(&ws, platform, &o)? {
                Created::Cluster(c) => println!("{}", cluster::info_line(&c)),
                Created::Capacity(w) => {
                    eprint!("{}", aether_platform::karpenter::PREREQUISITES);
                    w.files.iter().for_each(|p| println!("{}", p.display()));
                    w.uploaded.iter().for_each(|u| println!("{u}"));
                    eprintln!(
                        "(no platform.emr_eks.virtual_cluster_id: the capacity is written; runs need the \
                         virtual cluster they go to)"
                    );
                }
                Created::Stopped(sig) => return Ok(stopped(sig)),
            }
        }
        ClusterAction::List { all } => {
            let listed = cluster::list(&ws, ws.backend(platform)?.as_ref(), all)?;
            listed.iter().for_each(|l| println!("{}", l.line()));
        }
        ClusterAction::Describe { cluster_id } => {
            let c = ws
                .runtime()
                .block_on(ws.backend(platform)?.describe(&cluster_id))?;
            println!("{}", serde_json::to_string_pretty(&c)?);
        }
        ClusterAction::Terminate { cluster_id, .. } => {
            let b = ws.backend(platform)?;
            let ended = match cluster_id {
                Some(id) => vec![cluster::terminate(&ws, b.as_ref(), &id)?],
                None => cluster::terminate_idle(&ws, b.as_ref())?,
            };
            for c in &ended {
                println!("{}", cluster::info_line(c));
            }
        }
        ClusterAction::Scheduler { .. } | ClusterAction::Executor { .. } => {}
    }
    Ok(ExitCode::SUCCESS)
}

pub fn cmd_submit(a: SubmitArgs) -> Result<ExitCode> {
    let ws = a.ws.open_stoppable()?;
    let target = a.target.target(a.config_file)?;
    let req = SubmitRequest {
        config_id: a.config_id,
        target,
        job: a.job,
        conf: submit::parse_conf(&a.conf)?,
        allow_output_overwrite: a.allow_output_overwrite,
        timeout_s: a.timeout_s,
    };
    Ok(match submit::submit(&ws, &req)? {
        Submitted::StoppedCreating(sig) => stopped(sig),
        Submitted::Ran(o) => match (o.state, o.signal) {
            (StepState::Completed, _) => ExitCode::SUCCESS,
            (_, Some(sig)) => stopped(sig),
            _ => ExitCode::from(1),
        },
    })
}
