//! `aether cluster` and `aether submit`: GPU test clusters and runs on a platform backend
//! (`aether-platform`), recorded in the job history.

use aether_core::history::{ClusterRecord, Run};
use aether_core::{ConfigFile, History};
use aether_platform::local::{LocalBackend, find_spark_submit};
use aether_platform::{
    ClusterBackend, ClusterInfo, ClusterSpec, JobDefinition, Poll, StepRequest, StepState,
};
use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

/// Where the clusters run.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum PlatformArg {
    /// This machine's Spark (spark-submit from SPARK_HOME or pyspark): no GPU, no cloud.
    Local,
    /// Amazon EMR (aws-sdk-emr).
    Emr,
    /// EMR on EKS with Karpenter (aws-sdk-emrcontainers): job runs on a virtual cluster, GPU
    /// executors on the shape's NodePool (`cluster create` writes it).
    EmrEks,
}

#[derive(Args)]
pub struct ClusterArgs {
    /// The settings file (default: $AETHER_HOME/config.toml, else ~/.aether/config.toml).
    #[arg(long, global = true)]
    config: Option<std::path::PathBuf>,
    /// The platform of the cluster.
    #[arg(long, value_enum, global = true, default_value_t = PlatformArg::Local)]
    platform: PlatformArg,
    #[command(subcommand)]
    action: ClusterAction,
}

#[derive(Subcommand)]
enum ClusterAction {
    /// Start a cluster of the GPU shape qualify recommended (its "Aether Shape ID").
    Create {
        /// The shape id qualify printed (omit on the local platform for this machine as is).
        #[arg(long = "cluster_shape_id", alias = "cluster-shape-id")]
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
    /// The clusters of the platform.
    List,
    /// One cluster.
    Describe {
        #[arg(long = "cluster_id", alias = "cluster-id")]
        cluster_id: String,
    },
    /// Terminate a cluster (its running steps are cancelled).
    Terminate {
        #[arg(long = "cluster_id", alias = "cluster-id")]
        cluster_id: String,
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
pub struct SubmitArgs {
    /// The settings file (default: $AETHER_HOME/config.toml, else ~/.aether/config.toml).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// The platform of the cluster.
    #[arg(long, value_enum, default_value_t = PlatformArg::Local)]
    platform: PlatformArg,
    /// The stored Spark configs to run with ("Aether Config ID" of qualify, or a later one).
    #[arg(long = "config_id", alias = "config-id")]
    config_id: i64,
    /// The cluster to run on.
    #[arg(
        long = "cluster_id",
        alias = "cluster-id",
        required_unless_present = "cluster_shape_id"
    )]
    cluster_id: Option<String>,
    /// Instead of --cluster_id: make a cluster of this shape for the run, terminated after it
    /// (also when the run fails or is interrupted) unless --keep_cluster.
    #[arg(
        long = "cluster_shape_id",
        alias = "cluster-shape-id",
        conflicts_with = "cluster_id"
    )]
    cluster_shape_id: Option<i64>,
    /// With --cluster_shape_id: the cluster's --config_file (EMR).
    #[arg(
        long = "config_file",
        alias = "config-file",
        requires = "cluster_shape_id"
    )]
    config_file: Option<std::path::PathBuf>,
    /// Keep the cluster made for the run (--cluster_shape_id) after it.
    #[arg(long = "keep_cluster", alias = "keep-cluster")]
    keep_cluster: bool,
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

pub(crate) fn backend(
    platform: PlatformArg,
    cfg: &ConfigFile,
    rt: &tokio::runtime::Runtime,
) -> Result<Box<dyn ClusterBackend>> {
    match platform {
        PlatformArg::Local => {
            let spark_submit = find_spark_submit().ok_or_else(|| {
                anyhow!(
                    "no spark-submit: set SPARK_HOME or install pyspark (pip install 'pyspark==3.5.*')"
                )
            })?;
            let rapids = std::env::var_os("AETHER_RAPIDS_JAR").map(std::path::PathBuf::from);
            Ok(Box::new(
                LocalBackend::new(ConfigFile::home().join("local"), spark_submit)
                    .with_rapids_jar(rapids),
            ))
        }
        PlatformArg::Emr => Ok(Box::new(emr_backend(cfg, rt))),
        PlatformArg::EmrEks => Ok(Box::new(eks_backend(cfg, rt))),
    }
}

/// The EMR on EKS backend with the `platform.emr_eks.*` settings.
fn eks_backend(
    cfg: &ConfigFile,
    rt: &tokio::runtime::Runtime,
) -> aether_platform::emr_eks::EmrEksBackend {
    use aether_platform::emr_eks::{DEFAULT_DRIVER_INSTANCE, DEFAULT_RELEASE, EmrEksSettings};
    let e = &cfg.config.platform.emr_eks;
    let settings = EmrEksSettings {
        virtual_cluster_id: e.virtual_cluster_id.clone(),
        execution_role_arn: e.execution_role_arn.clone(),
        namespace: e.namespace.clone(),
        release_label: e.release_label.clone().unwrap_or(DEFAULT_RELEASE.into()),
        spark_event_log_dir: e.spark_event_log_dir.clone(),
        artifacts_path: e.artifacts_path.clone(),
        log_path: e.log_path.clone(),
        driver_instance_type: e
            .driver_instance_type
            .clone()
            .unwrap_or(DEFAULT_DRIVER_INSTANCE.into()),
    };
    rt.block_on(aether_platform::emr_eks::EmrEksBackend::from_env(
        e.region.clone().or(cfg.config.platform.emr.region.clone()),
        settings,
        ConfigFile::home().join("emr-eks/leases"),
    ))
}

/// The EMR backend with the `platform.emr.*` settings.
pub(crate) fn emr_backend(
    cfg: &ConfigFile,
    rt: &tokio::runtime::Runtime,
) -> aether_platform::emr::EmrBackend {
    let e = &cfg.config.platform.emr;
    let d = aether_platform::emr::EmrSettings::default();
    let settings = aether_platform::emr::EmrSettings {
        log_uri: e.cluster.log_path.clone(),
        artifacts_path: e.cluster.artifacts_path.clone(),
        spark_event_log_dir: e.spark_event_log_dir.clone(),
        release_label: e.release_label.clone().unwrap_or(d.release_label.clone()),
        idle_timeout_s: e.cluster.idle_timeout_s.unwrap_or(d.idle_timeout_s),
        ..d
    };
    rt.block_on(aether_platform::emr::EmrBackend::from_env(
        e.region.clone(),
        settings,
    ))
}

/// How long a finished step's logs are waited for: EMR copies step logs to S3 every few
/// minutes; a local step's are there when it ends.
fn log_wait(cfg: &ConfigFile, platform: PlatformArg) -> Duration {
    match platform {
        PlatformArg::Local => Duration::ZERO,
        PlatformArg::Emr => {
            Duration::from_secs(cfg.config.platform.emr.cluster.log_wait_s.unwrap_or(600) as u64)
        }
        PlatformArg::EmrEks => {
            Duration::from_secs(cfg.config.platform.emr_eks.log_wait_s.unwrap_or(600) as u64)
        }
    }
}

/// `f` until it finds something or `wait` has passed (polling with backoff).
fn wait_for<'a, T>(
    rt: &tokio::runtime::Runtime,
    wait: Duration,
    mut f: impl FnMut() -> std::pin::Pin<
        Box<dyn std::future::Future<Output = aether_platform::Result<Option<T>>> + Send + 'a>,
    >,
) -> aether_platform::Result<Option<T>> {
    let start = std::time::Instant::now();
    let mut every = Duration::from_millis(250);
    loop {
        if let Some(v) = rt.block_on(f())? {
            return Ok(Some(v));
        }
        let left = wait.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Ok(None);
        }
        std::thread::sleep(every.min(left));
        every = (every * 2).min(Duration::from_secs(15));
    }
}

/// A finished EMR step, as `qualify --platform_job_id` reads it.
pub struct StepSource {
    pub step: aether_platform::StepInfo,
    pub event_log: String,
    pub driver_log: Option<String>,
    /// The job the step ran (`None` when it was not a spark-submit).
    pub job: Option<JobDefinition>,
    /// The step's hours times its cluster's hourly price.
    pub cost_usd: Option<f64>,
    /// Its executors' idle capacity (as a GPU run's: `executor_idle` summed).
    pub idle: Option<serde_json::Value>,
    /// `emr` (an EMR step) or `emr-eks` (an EMR on EKS job run).
    pub backend: &'static str,
}

/// The event log and job of step `step_id` of EMR cluster `cluster_id`: DescribeStep, the YARN
/// application id in the step's stderr, the application's log in the event-log folder.
///
/// A `cluster_id` that is not an EMR cluster's (`j-…`) is an EMR on EKS virtual cluster's and
/// `step_id` one of its job runs: DescribeJobRun, the event log `spark-<id>` in the run's
/// event-log folder.
pub fn step_source(cfg: &ConfigFile, cluster_id: &str, step_id: &str) -> Result<StepSource> {
    if !cluster_id.starts_with("j-") {
        return job_run_source(cfg, cluster_id, step_id);
    }
    let rt = runtime()?;
    let b = emr_backend(cfg, &rt);
    let step = rt.block_on(b.step(cluster_id, step_id))?;
    finished(&step, &format!("step {step_id} on {cluster_id}"))?;
    let wait = log_wait(cfg, PlatformArg::Emr);
    let event_log = wait_for(&rt, wait, || b.event_log(cluster_id, step_id))?.ok_or_else(|| {
        anyhow!(
            "step {step_id} on {cluster_id}: no event log found within {} s (its stderr names no \
                 YARN application yet, or the application's log is not in the event-log folder)",
            wait.as_secs()
        )
    })?;
    let driver_log = rt
        .block_on(b.driver_log(cluster_id, step_id))
        .ok()
        .flatten();
    let job = JobDefinition::from_args(&step.args).ok();
    // what the CPU run cost, from its cluster's nodes (the baseline of the GPU runs' costs)
    let cost_usd = rt
        .block_on(b.describe(cluster_id))
        .ok()
        .zip(step.start_ms.zip(step.end_ms))
        .and_then(|(c, (s, e))| run_cost(cfg, &c, e - s));
    let idle = run_figures(&rt, &event_log).idle;
    Ok(StepSource {
        step,
        event_log,
        driver_log,
        job,
        cost_usd,
        idle,
        backend: "emr",
    })
}

/// A source step must have ended to be read; one that did not complete is read with a warning.
fn finished(step: &aether_platform::StepInfo, what: &str) -> Result<()> {
    if !step.state.is_final() {
        bail!(
            "{what} is {}: qualify it once it has finished",
            step.state.as_str()
        );
    }
    if step.state != StepState::Completed {
        eprintln!(
            "warning: {what} {}{}: qualifying the log it left",
            step.state.as_str(),
            step.failure_reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

/// A finished EMR on EKS job run, as [`step_source`] reads it (no cost: the nodes Karpenter
/// gave a CPU run are not known; qualify's estimate stands for it).
fn job_run_source(cfg: &ConfigFile, virtual_cluster: &str, run_id: &str) -> Result<StepSource> {
    let rt = runtime()?;
    let b = eks_backend(cfg, &rt);
    let run = rt.block_on(b.job_run(virtual_cluster, run_id))?;
    let step = run.step.clone();
    finished(
        &step,
        &format!("job run {run_id} on virtual cluster {virtual_cluster}"),
    )?;
    let wait = log_wait(cfg, PlatformArg::EmrEks);
    let event_log = wait_for(&rt, wait, || Box::pin(b.job_run_event_log(&run)))?.ok_or_else(|| {
        anyhow!(
            "job run {run_id}: no event log spark-{run_id} found within {} s in {}",
            wait.as_secs(),
            run.event_log_dir.as_deref().unwrap_or(
                "(the run sets no spark.eventLog.dir and platform.emr_eks.spark_event_log_dir is not set)"
            )
        )
    })?;
    let driver_log = rt.block_on(b.job_run_driver_log(&run)).ok().flatten();
    let job = JobDefinition::from_args(&step.args).ok();
    let idle = run_figures(&rt, &event_log).idle;
    Ok(StepSource {
        step,
        event_log,
        driver_log,
        job,
        cost_usd: None,
        idle,
        backend: "emr-eks",
    })
}

/// Records what qualify read from an EMR step: the step as the job's definition (what `submit`
/// re-runs) and the CPU run itself.
pub fn record_step_source(
    mut h: std::sync::MutexGuard<'_, History>,
    job_id: i64,
    src: &StepSource,
) -> Result<()> {
    if let Some(job) = &src.job {
        let source = if src.backend == "emr" {
            "emr-step"
        } else {
            "emr-eks-job-run"
        };
        h.set_definition(job_id, source, &serde_json::to_value(job)?)?;
    } else {
        eprintln!(
            "warning: step {} is not a spark-submit step ({}): submit needs --job for this job",
            src.step.step_id,
            src.step.args.join(" ")
        );
    }
    let s = &src.step;
    let mut run = Run {
        job_id,
        kind: "cpu-original".into(),
        backend: Some(src.backend.into()),
        cluster_id: Some(s.cluster_id.clone()),
        step_id: Some(s.step_id.clone()),
        status: s.state.as_str().into(),
        start_ms: s.start_ms,
        end_ms: s.end_ms,
        duration_ms: s.start_ms.zip(s.end_ms).map(|(a, b)| b - a),
        event_log: Some(src.event_log.clone()),
        driver_log: src.driver_log.clone(),
        cost_usd: src.cost_usd,
        failure_reason: s.failure_reason.clone(),
        details: serde_json::json!({ "args": s.args }),
        ..Default::default()
    };
    if let Some(idle) = &src.idle {
        run.details["idle"] = idle.clone();
    }
    run.run_id = h.start_run(&run)?;
    h.finish_run(&run)?;
    Ok(())
}

/// What a run cost: its hours times the hourly price (EC2 + EMR) of the cluster's nodes, from
/// the price catalog; `None` on the local backend or for an instance type not in the catalog.
fn run_cost(cfg: &ConfigFile, c: &ClusterInfo, duration_ms: i64) -> Option<f64> {
    if c.groups.is_empty() {
        return None;
    }
    let e = &cfg.config.platform.emr;
    let catalog =
        aether_predict::cluster::Catalog::load(e.pricing_file.as_deref().map(std::path::Path::new))
            .ok()?;
    let region = e.region.as_deref().unwrap_or("us-east-1");
    // spot nodes at the on-demand price: an upper bound (no spot price history offline)
    let mut per_hour = 0.0;
    for g in &c.groups {
        per_hour += catalog.price(region, &g.instance_type)?.total() * g.count as f64;
    }
    Some(per_hour * duration_ms as f64 / 3_600_000.0)
}

/// Puts the cgroup bootstrap action an EMR 7 RAPIDS cluster needs under the artifacts path
/// (`s3://bucket/prefix/cgroup-bootstrap-action.sh`), where `cluster create` points EMR to it.
fn upload_bootstrap(cfg: &ConfigFile, rt: &tokio::runtime::Runtime) -> Result<()> {
    use object_store::ObjectStoreExt;
    let url = cfg.config.platform.emr.cluster.artifacts_path.as_deref().ok_or_else(|| {
        anyhow!(
            "platform.emr.cluster.artifacts_path is not set: the cluster's bootstrap action is put there \
             (aether config set platform.emr.cluster.artifacts_path s3://bucket/prefix)"
        )
    })?;
    let s3 = aether_ingest::source::s3_location(
        url,
        &aether_ingest::S3Options {
            region: cfg.config.platform.emr.region.clone(),
            endpoint: None,
        },
    )
    .map_err(|e| anyhow!("platform.emr.cluster.artifacts_path {url}: {e}"))?;
    let key = object_store::path::Path::from(
        format!("{}/cgroup-bootstrap-action.sh", s3.prefix).trim_start_matches('/'),
    );
    let store = s3.store;
    rt.block_on(store.put(
        &key,
        object_store::PutPayload::from(aether_platform::emr::CGROUP_BOOTSTRAP.as_bytes().to_vec()),
    ))
    .with_context(|| format!("putting the bootstrap action to {url}"))?;
    Ok(())
}

pub(crate) fn load_settings(path: Option<&std::path::Path>) -> Result<ConfigFile> {
    ConfigFile::load(&ConfigFile::default_path(path)).map_err(|e| anyhow!("{e}"))
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

fn print_cluster(c: &ClusterInfo) {
    println!(
        "{}\t{}\t{}\t{}\t{}",
        c.cluster_id,
        c.backend,
        c.state.as_str(),
        c.spec.name,
        c.state_reason.as_deref().unwrap_or("")
    );
}

pub fn cmd_cluster(a: ClusterArgs) -> Result<ExitCode> {
    match a.action {
        ClusterAction::Scheduler { args } => return crate::fleet::cluster_role("scheduler", args),
        ClusterAction::Executor { args } => return crate::fleet::cluster_role("executor", args),
        _ => {}
    }
    let cfg = load_settings(a.config.as_deref())?;
    // EMR on EKS without a virtual cluster: the capacity only (for a platform team to apply)
    if a.platform == PlatformArg::EmrEks
        && cfg.config.platform.emr_eks.virtual_cluster_id.is_none()
        && let ClusterAction::Create {
            cluster_shape_id,
            output,
            apply,
            ..
        } = a.action
    {
        let shape = cluster_shape_id
            .ok_or_else(|| anyhow!("--cluster_shape_id is needed to size the capacity"))?;
        let code = crate::eks::create_capacity(&cfg, shape, output, apply)?;
        eprintln!(
            "(no platform.emr_eks.virtual_cluster_id: the capacity is written; runs need the \
             virtual cluster they go to)"
        );
        return Ok(code);
    }
    let rt = runtime()?;
    let b = backend(a.platform, &cfg, &rt)?;
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
            let mut h = History::open(&cfg.history_db())?;
            let o = CreateOpts {
                shape_id: cluster_shape_id,
                local_cores,
                request_token,
                config_file,
                keep_cluster,
                output,
                apply,
            };
            match create_cluster(&cfg, &rt, b.as_ref(), a.platform, &mut h, &o)? {
                Ok(c) => print_cluster(&c),
                Err(sig) => return Ok(sig.exit_code()),
            }
        }
        ClusterAction::List => {
            for c in rt.block_on(b.list())? {
                print_cluster(&c);
            }
        }
        ClusterAction::Describe { cluster_id } => {
            let c = rt.block_on(b.describe(&cluster_id))?;
            println!("{}", serde_json::to_string_pretty(&c)?);
        }
        ClusterAction::Terminate { cluster_id } => {
            let c = rt.block_on(b.terminate(&cluster_id))?;
            print_cluster(&c);
            // the cluster is gone either way; a history that cannot take it is told
            let recorded = History::open(&cfg.history_db())
                .map_err(anyhow::Error::from)
                .and_then(|mut h| record_cluster(&mut h, b.as_ref(), &c, None, None));
            if let Err(e) = recorded {
                eprintln!("warning: cluster {cluster_id} terminated but not recorded: {e:#}");
            }
        }
        // run above, before the settings are read
        ClusterAction::Scheduler { .. } | ClusterAction::Executor { .. } => {}
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_conf(items: &[String]) -> Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| anyhow!("--conf {kv:?}: expected KEY=VALUE"))?;
            if k.trim().is_empty() {
                bail!("--conf {kv:?}: empty key");
            }
            Ok((k.trim().to_string(), v.to_string()))
        })
        .collect()
}

/// A finished run's figures from its event log.
#[derive(Default)]
pub(crate) struct Figures {
    /// The application's duration.
    pub duration_ms: Option<i64>,
    /// Its executors' idle capacity (the `executor_idle` view summed: executors,
    /// allocated_ms, idle_ms, idle_ms_scale_to_zero_60s).
    pub idle: Option<serde_json::Value>,
    /// Each executor's allocated time (what EMR on EKS bills as node time).
    pub executor_ms: Vec<i64>,
}

/// The figures of a run's event log; none where the log cannot be read (said on stderr).
pub(crate) fn run_figures(rt: &tokio::runtime::Runtime, event_log: &str) -> Figures {
    let read = || -> Result<Figures> {
        let ing = aether_ingest::ingest(&[event_log.to_string()], &Default::default());
        if let Some(e) = ing.source_errors.first() {
            bail!("{}: {}", e.path, e.error);
        }
        let ctx = aether_engine::session();
        aether_engine::register_ingested(&ctx, &ing)?;
        rt.block_on(aether_engine::views::register_views_materialized(
            &ctx,
            &Default::default(),
            &["executor_idle"],
        ))?;
        let q = |sql: &str| rt.block_on(aether_engine::analyze::json_rows(&ctx, sql));
        let duration_ms = q("SELECT duration_ms FROM applications")?
            .first()
            .and_then(|r| r.get("duration_ms")?.as_i64());
        let idle = q(
            "SELECT COUNT(*) AS executors, SUM(allocated_ms) AS allocated_ms,
                             SUM(idle_ms) AS idle_ms,
                             SUM(idle_ms_scale_to_zero_60s) AS idle_ms_scale_to_zero_60s
                      FROM executor_idle",
        )?
        .into_iter()
        .next()
        .filter(|r| r.get("executors").and_then(|v| v.as_i64()).unwrap_or(0) > 0)
        .map(serde_json::Value::Object);
        let executor_ms = q("SELECT allocated_ms FROM executor_idle ORDER BY executor_id")?
            .iter()
            .filter_map(|r| r.get("allocated_ms")?.as_i64())
            .collect();
        Ok(Figures {
            duration_ms,
            idle,
            executor_ms,
        })
    };
    match read() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("warning: {event_log}: {e:#}");
            Figures::default()
        }
    }
}

/// What a run on EMR on EKS cost: its executors' node time at the GPU pool's price (spot from
/// the prices file, else on-demand), the driver's on-demand node, the consolidateAfter tail.
pub(crate) fn eks_run_cost(
    cfg: &ConfigFile,
    c: &ClusterInfo,
    f: &Figures,
) -> Option<aether_platform::emr_eks::EksCost> {
    let e = &cfg.config.platform.emr_eks;
    let file = e
        .pricing_file
        .as_deref()
        .or(cfg.config.platform.emr.pricing_file.as_deref());
    let catalog = aether_predict::cluster::Catalog::load(file.map(std::path::Path::new)).ok()?;
    let region = e
        .region
        .as_deref()
        .or(cfg.config.platform.emr.region.as_deref())
        .unwrap_or("us-east-1");
    let group = |role: &str| c.groups.iter().find(|g| g.role == role);
    let exec = catalog.price(region, &group("EXECUTOR")?.instance_type)?;
    let driver = catalog.price(region, &group("DRIVER")?.instance_type)?;
    Some(aether_platform::emr_eks::eks_cost(
        &aether_platform::emr_eks::EksCostInputs {
            executor_ms: f.executor_ms.clone(),
            executors_per_node: c
                .spec
                .tags
                .get("aether:gpus-per-node")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1),
            executor_spot_usd_per_hour: exec.spot_usd_per_hour,
            executor_on_demand_usd_per_hour: exec.ec2_usd_per_hour,
            // no EMR-on-EC2 uplift on EKS: EC2 prices
            driver_usd_per_hour: driver.ec2_usd_per_hour,
            driver_ms: f.duration_ms.unwrap_or(0),
            consolidate_after_s: e.consolidate_after_s.unwrap_or(30),
        },
    ))
}

/// The writes of a CPU run, from its event log's plans (tables resolved as `validate` does).
fn cpu_writes(
    rt: &tokio::runtime::Runtime,
    event_log: &str,
) -> Result<Vec<aether_platform::sandbox::WriteTarget>> {
    let ing = aether_ingest::ingest(&[event_log.to_string()], &Default::default());
    if let Some(e) = ing.source_errors.first() {
        bail!("the CPU run's event log {}: {}", e.path, e.error);
    }
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing)?;
    let mut out: Vec<_> = rt
        .block_on(aether_validate::logs::writes(&ctx))
        .with_context(|| format!("the CPU run's event log {event_log}"))?
        .into_iter()
        .map(|(_, _, t)| t)
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path).then(a.table.cmp(&b.table)));
    out.dedup();
    Ok(out)
}

pub fn cmd_submit(a: SubmitArgs) -> Result<ExitCode> {
    let cfg = load_settings(a.config.as_deref())?;
    let rt = runtime()?;
    let b = backend(a.platform, &cfg, &rt)?;
    let mut h = History::open(&cfg.history_db())?;
    let base = h.config(a.config_id)?.ok_or_else(|| {
        anyhow!(
            "unknown config id {} (see `aether report list`)",
            a.config_id
        )
    })?;
    let job_id = base.job_id;
    // the job: given now (and kept), else recorded from its log or an earlier --job
    let job: JobDefinition = match &a.job {
        Some(line) => {
            let d = JobDefinition::parse(line).with_context(|| format!("--job {line:?}"))?;
            h.set_definition(job_id, "user", &serde_json::to_value(&d)?)?;
            d
        }
        None => match h.definition(job_id)? {
            Some((_, d)) => serde_json::from_value(d)?,
            None => bail!(
                "job {job_id} has no definition to run: its event log holds no spark-submit command line \
                 (an interactive shell or notebook ran it); give it as --job \"spark-submit … job.py args\""
            ),
        },
    };
    let overrides = parse_conf(&a.conf)?;
    let mut properties = base.properties;
    let config_id = if overrides.is_empty() {
        a.config_id
    } else {
        properties.extend(overrides);
        h.add_config(job_id, "user", &properties)?
    };
    let planned = plan_run(
        &cfg,
        &rt,
        &mut h,
        a.platform,
        job_id,
        job,
        properties,
        a.allow_output_overwrite,
    )?;
    let (cluster, created) = match (&a.cluster_id, a.cluster_shape_id) {
        (Some(id), _) => (rt.block_on(b.describe(id))?, false),
        (None, Some(shape)) => {
            let o = CreateOpts {
                shape_id: Some(shape),
                config_file: a.config_file.clone(),
                keep_cluster: a.keep_cluster,
                ..Default::default()
            };
            match create_cluster(&cfg, &rt, b.as_ref(), a.platform, &mut h, &o)? {
                Ok(c) => {
                    eprintln!(
                        "cluster {} made for this run ({}{})",
                        c.cluster_id,
                        c.state.as_str(),
                        if a.keep_cluster {
                            ", kept after it: --keep_cluster"
                        } else {
                            ", terminated after it"
                        }
                    );
                    (c, true)
                }
                Err(sig) => return Ok(sig.exit_code()),
            }
        }
        (None, None) => bail!(
            "give --cluster_id (a running cluster) or --cluster_shape_id (a cluster made for this run \
             and terminated after it)"
        ),
    };
    let outcome = execute_run(
        &mut h,
        &RunSpec {
            cfg: &cfg,
            rt: &rt,
            b: b.as_ref(),
            platform: a.platform,
            cluster: &cluster,
            job_id,
            config_id,
            timeout_s: a.timeout_s,
        },
        planned,
    );
    // a cluster made for this run ends with it, whatever happened to the run
    if created && !a.keep_cluster {
        end_cluster(&rt, b.as_ref(), &mut h, &cluster.cluster_id);
    }
    let o = outcome?;
    Ok(match (o.state, o.signal) {
        (StepState::Completed, _) => ExitCode::SUCCESS,
        (_, Some(sig)) => sig.exit_code(),
        _ => ExitCode::from(1),
    })
}

/// A run's job and properties with its outputs moved to the sandbox.
pub(crate) struct PlannedRun {
    job: JobDefinition,
    properties: BTreeMap<String, String>,
    outputs: serde_json::Value,
    tables: Vec<String>,
    run_dir: String,
}

/// Where a run goes and how long it may take.
pub(crate) struct RunSpec<'a> {
    pub cfg: &'a ConfigFile,
    pub rt: &'a tokio::runtime::Runtime,
    pub b: &'a dyn ClusterBackend,
    pub platform: PlatformArg,
    pub cluster: &'a ClusterInfo,
    pub job_id: i64,
    pub config_id: i64,
    pub timeout_s: u64,
}

/// How a run ended.
pub(crate) struct RunOutcome {
    pub run: Run,
    pub state: StepState,
    pub signal: Option<Stop>,
}

/// Sandbox a run of `job`: its outputs go under a prefix of its own, never over the CPU run's;
/// refused (an error) when the CPU run wrote where no argument names.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_run(
    cfg: &ConfigFile,
    rt: &tokio::runtime::Runtime,
    h: &mut History,
    platform: PlatformArg,
    job_id: i64,
    job: JobDefinition,
    mut properties: BTreeMap<String, String>,
    allow_output_overwrite: bool,
) -> Result<PlannedRun> {
    let cpu_log = h
        .job_event_log(job_id)?
        .ok_or_else(|| anyhow!("job {job_id} is not in the history"))?;
    let writes = match cpu_writes(rt, &cpu_log) {
        Ok(w) => w,
        Err(e) if allow_output_overwrite => {
            eprintln!("warning: {e:#}; running anyway (--allow_output_overwrite)");
            Vec::new()
        }
        Err(e) => bail!(
            "{e:#}: cannot tell where the job writes; refusing to run (--allow_output_overwrite to run anyway)"
        ),
    };
    let run_dir = format!("job{job_id}-{}", aether_platform::now_ms());
    let prefix = match platform {
        PlatformArg::Local => ConfigFile::home()
            .join("local/sandbox")
            .join(&run_dir)
            .display()
            .to_string(),
        PlatformArg::Emr => {
            let base = cfg.config.platform.emr.cluster.artifacts_path.as_deref().ok_or_else(|| {
                anyhow!("platform.emr.cluster.artifacts_path is not set: test runs write their outputs under it")
            })?;
            format!("{}/sandbox/{run_dir}", base.trim_end_matches('/'))
        }
        PlatformArg::EmrEks => {
            let base = cfg.config.platform.emr_eks.artifacts_path.as_deref().ok_or_else(|| {
                anyhow!("platform.emr_eks.artifacts_path is not set: test runs write their outputs under it")
            })?;
            format!("{}/sandbox/{run_dir}", base.trim_end_matches('/'))
        }
    };
    let sb = aether_platform::sandbox::sandbox(&job, &writes, &prefix);
    if !sb.unmapped.is_empty() {
        let list = sb.unmapped.join(", ");
        if !allow_output_overwrite {
            bail!(
                "the CPU run wrote {list}, which no argument of the job names: this run would write \
                 there too (production outputs); refusing (pass the output as an argument, or \
                 --allow_output_overwrite)"
            );
        }
        eprintln!("warning: this run may overwrite {list} (--allow_output_overwrite)");
    }
    if !sb.tables.is_empty() {
        // a local run's metastore lives in its own folder: its tables go to the sandbox
        if platform != PlatformArg::Local {
            bail!(
                "the CPU run wrote the tables {}: a shared metastore cannot be sandboxed on {:?}; refusing",
                sb.tables.join(", "),
                platform
            );
        }
        properties.insert(
            "spark.sql.warehouse.dir".into(),
            format!("{prefix}/warehouse"),
        );
    }
    for (from, to) in &sb.rewritten {
        eprintln!("  output {from} -> {to}");
    }
    let outputs = serde_json::to_value(&sb.rewritten)?;
    let job = sb.job;
    Ok(PlannedRun {
        job,
        properties,
        outputs,
        tables: sb.tables,
        run_dir,
    })
}

/// Run a planned job on the spec's cluster: submit, record the run before waiting, wait
/// (cancelled at the deadline or on a signal), fetch its logs, its duration and cost.
pub(crate) fn execute_run(h: &mut History, s: &RunSpec<'_>, p: PlannedRun) -> Result<RunOutcome> {
    let (cfg, rt, b, cluster) = (s.cfg, s.rt, s.b, s.cluster);
    let (job_id, config_id) = (s.job_id, s.config_id);
    let PlannedRun {
        job,
        properties,
        outputs,
        tables,
        run_dir,
    } = p;
    let req = StepRequest {
        // unique per run: a retried AddJobFlowSteps finds the step by it
        name: format!("aether job {job_id} config {config_id} {run_dir}"),
        job,
        conf: properties,
    };
    let step = rt.block_on(b.submit(&cluster.cluster_id, &req))?;
    let mut run = Run {
        job_id,
        kind: "gpu-test".into(),
        backend: Some(b.name().into()),
        cluster_id: Some(cluster.cluster_id.clone()),
        step_id: Some(step.step_id.clone()),
        config_id: Some(config_id),
        status: step.state.as_str().into(),
        start_ms: step.start_ms,
        details: serde_json::json!({
            "args": step.args,
            "cluster": cluster.state_reason,
            "outputs": outputs,
            "tables_sandboxed": tables,
        }),
        ..Default::default()
    };
    run.run_id = match h.start_run(&run) {
        Ok(id) => id,
        Err(e) => {
            // a run that cannot be recorded is not left running
            let _ = rt.block_on(b.cancel(&cluster.cluster_id, &step.step_id));
            return Err(anyhow!(e).context(format!(
                "step {} cancelled: the run could not be recorded",
                step.step_id
            )));
        }
    };
    eprintln!(
        "run {} of job {job_id}: step {} on {} ({}) with config {config_id}",
        run.run_id,
        step.step_id,
        cluster.cluster_id,
        b.name()
    );
    let poll = Poll {
        deadline: Duration::from_secs(s.timeout_s),
        ..Poll::default()
    };
    let (cid, sid) = (cluster.cluster_id.clone(), step.step_id.clone());
    let waited = rt.block_on(async {
        // a terminal sees one line updated; a log file one line per state change
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let mut last = None;
        let wait = aether_platform::wait_step(b, &cid, &sid, poll, |s, t| {
            let line = format!(
                "  {} {:>5.0} s  step {}",
                s.state.as_str(),
                t.as_secs_f64(),
                s.step_id
            );
            if tty {
                eprint!("\r{line}\x1b[K");
            } else if last != Some(s.state) {
                eprintln!("{line}");
            }
            last = Some(s.state);
        });
        tokio::select! {
            r = wait => Ok(r),
            s = stopped() => Err(s),
        }
    });
    let signal = waited.as_ref().err().copied();
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!();
    }
    // a step given up on is cancelled; a failed cancel is said and recorded, never lost
    let cancel = |why: &str| -> (String, aether_platform::StepInfo) {
        match rt.block_on(b.cancel(&cid, &sid)) {
            Ok(i) if i.state.is_final() => (why.to_string(), i),
            Ok(mut i) => {
                let still = i.state.as_str();
                i.end_ms = Some(aether_platform::now_ms());
                i.failure_reason = Some(format!("{why}; the cancelled step is still {still}"));
                eprintln!(
                    "warning: step {sid} was cancelled but is still {still}; it may still be running"
                );
                (why.to_string(), i)
            }
            Err(e) => {
                let mut i = step.clone();
                i.end_ms = Some(aether_platform::now_ms());
                i.failure_reason = Some(format!("{why}; cancelling the step failed: {e}"));
                eprintln!("warning: cancelling step {sid} failed: {e}; it may still be running");
                (why.to_string(), i)
            }
        }
    };
    let (status, info) = match waited {
        // interrupted: the step is cancelled, the run recorded as such
        Err(sig) => {
            eprintln!("{}: cancelling step {sid}", sig.name());
            let (st, mut i) = cancel("INTERRUPTED");
            i.failure_reason
                .get_or_insert(format!("{}: cancelled", sig.name()));
            (st, i)
        }
        Ok(Err(aether_platform::PlatformError::Deadline { .. })) => {
            let (st, mut i) = cancel("TIMED_OUT");
            i.failure_reason.get_or_insert(format!(
                "did not finish within --timeout_s {} s: cancelled",
                s.timeout_s
            ));
            (st, i)
        }
        Ok(Err(e)) => {
            // polling failed: the step is not left running unwatched
            let (_, i) = cancel("FAILED");
            run.status = "FAILED".into();
            run.end_ms = i.end_ms;
            run.failure_reason = Some(match i.failure_reason {
                Some(c) if c.contains("cancelling the step failed") => format!("{e}; {c}"),
                _ => format!("{e}; the step was cancelled"),
            });
            h.finish_run(&run)?;
            return Err(e.into());
        }
        Ok(Ok(i)) => (i.state.as_str().to_string(), i),
    };
    run.status = status;
    run.end_ms = info.end_ms;
    run.failure_reason = info.failure_reason.clone();
    // the logs: a completed run's event log is waited for, a failed run's stderr
    let wait = log_wait(cfg, s.platform);
    let completed = info.state == StepState::Completed;
    // (a step cancelled on a deadline or a signal gets one look, no wait)
    let (ev_wait, drv_wait) = match info.state {
        StepState::Completed => (wait, Duration::ZERO),
        StepState::Failed => (Duration::ZERO, wait.min(Duration::from_secs(120))),
        _ => (Duration::ZERO, Duration::ZERO),
    };
    let mut log_errors = Vec::new();
    match wait_for(rt, drv_wait, || b.driver_log(&cid, &sid)) {
        Ok(l) => run.driver_log = l,
        Err(e) => log_errors.push(format!("driver log: {e}")),
    }
    match wait_for(rt, ev_wait, || b.event_log(&cid, &sid)) {
        Ok(l) => run.event_log = l,
        Err(e) => log_errors.push(format!("event log: {e}")),
    }
    if completed && run.event_log.is_none() && log_errors.is_empty() {
        log_errors.push(format!(
            "event log: none found within {} s",
            ev_wait.as_secs()
        ));
    }
    for e in &log_errors {
        eprintln!("warning: run {}: {e}", run.run_id);
    }
    if !log_errors.is_empty() {
        run.details["log_errors"] = serde_json::json!(log_errors);
    }
    let mut figures = Figures::default();
    if completed && let Some(l) = run.event_log.as_deref() {
        figures = run_figures(rt, l);
        run.duration_ms = figures.duration_ms;
        if let Some(idle) = &figures.idle {
            run.details["idle"] = idle.clone();
        }
    }
    if run.duration_ms.is_none() {
        run.duration_ms = info.start_ms.zip(info.end_ms).map(|(s, e)| e - s);
    }
    let mut eks_cost = None;
    if s.platform == PlatformArg::EmrEks {
        if figures.duration_ms.is_none() {
            // no event log (a failed run): its wall time as the driver's and one executor's
            figures.duration_ms = run.duration_ms;
            figures.executor_ms = run.duration_ms.into_iter().collect();
        }
        eks_cost = eks_run_cost(cfg, cluster, &figures);
        if let Some(c) = &eks_cost {
            run.cost_usd = Some(c.total_usd);
            run.details["cost"] = serde_json::to_value(c)?;
        }
    } else {
        run.cost_usd = run.duration_ms.and_then(|d| run_cost(cfg, cluster, d));
    }
    h.finish_run(&run)?;
    println!(
        "run {}\t{}\tstep {}\tduration {} ms\tevent log {}",
        run.run_id,
        run.status,
        sid,
        run.duration_ms.unwrap_or(0),
        run.event_log.as_deref().unwrap_or("-")
    );
    if let Some(c) = &eks_cost {
        eprintln!(
            "  cost: ${:.4} = executors ${:.4} ({:.4} node-h at ${:.3}/h, {}) + driver ${:.4} \
             ({:.4} node-h on-demand) + consolidateAfter tail ${:.4}",
            c.total_usd,
            c.executor_usd,
            c.executor_node_hours,
            c.executor_usd_per_hour,
            c.executor_price,
            c.driver_usd,
            c.driver_node_hours,
            c.tail_usd
        );
    } else if let Some(c) = run.cost_usd {
        let spot = cluster.groups.iter().any(|g| g.market == "SPOT");
        eprintln!(
            "  cost: ${c:.4} (the run's hours x the cluster's nodes' hourly EC2 + EMR price{})",
            if spot {
                "; spot nodes at the on-demand price, an upper bound"
            } else {
                ""
            }
        );
    }
    if let Some(r) = &run.failure_reason {
        eprintln!("  reason: {r}");
        if let Some(l) = &run.driver_log {
            eprintln!("  driver log: {l}");
            let s3 = aether_ingest::S3Options {
                region: cfg.config.platform.emr.region.clone(),
                endpoint: None,
            };
            if let Ok(lines) = rt.block_on(aether_platform::log_tail(l, &s3, 12)) {
                for line in lines {
                    eprintln!("    | {line}");
                }
            }
        }
    }
    Ok(RunOutcome {
        state: info.state,
        run,
        signal,
    })
}

/// Terminate a cluster this command made and record its state; a failure is told (with what to
/// run), never silent.
pub(crate) fn end_cluster(
    rt: &tokio::runtime::Runtime,
    b: &dyn ClusterBackend,
    h: &mut History,
    cluster_id: &str,
) {
    match rt.block_on(b.terminate(cluster_id)) {
        Ok(c) => {
            eprintln!("cluster {cluster_id} {}", c.state.as_str());
            if let Err(e) = record_cluster(h, b, &c, None, None) {
                eprintln!("warning: cluster {cluster_id}: not recorded: {e:#}");
            }
        }
        Err(e) => eprintln!(
            "error: terminating cluster {cluster_id} failed: {e}; it may still be running: \
             aether cluster terminate --platform {} --cluster_id {cluster_id}",
            b.name()
        ),
    }
}

fn record_cluster(
    h: &mut History,
    b: &dyn ClusterBackend,
    c: &ClusterInfo,
    job_id: Option<i64>,
    token: Option<&str>,
) -> Result<()> {
    h.upsert_cluster(&ClusterRecord {
        cluster_id: &c.cluster_id,
        backend: b.name(),
        shape_id: c.spec.shape_id.as_deref(),
        job_id,
        request_token: token,
        state: c.state.as_str(),
        info: &serde_json::to_value(c)?,
    })?;
    Ok(())
}

/// A signal that stops a command: the run is recorded as interrupted, the command exits
/// 128 + the signal's number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Int,
    Term,
}

impl Stop {
    pub(crate) fn exit_code(self) -> ExitCode {
        ExitCode::from(match self {
            Stop::Int => 130,
            Stop::Term => 143,
        })
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stop::Int => "SIGINT",
            Stop::Term => "SIGTERM",
        }
    }
}

/// The first Ctrl-C (SIGINT) or SIGTERM.
async fn stopped() -> Stop {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => Stop::Int,
        _ = async {
            match term.as_mut() {
                Some(t) => { t.recv().await; }
                None => std::future::pending::<()>().await,
            }
        } => Stop::Term,
    }
}

/// What `cluster create` and a transient `submit` cluster are made from.
#[derive(Default)]
pub(crate) struct CreateOpts {
    pub(crate) shape_id: Option<i64>,
    pub(crate) local_cores: i64,
    pub(crate) request_token: Option<String>,
    pub(crate) config_file: Option<std::path::PathBuf>,
    pub(crate) keep_cluster: bool,
    /// EMR on EKS: where the capacity manifests go, and whether kubectl applies them.
    pub(crate) output: Option<std::path::PathBuf>,
    pub(crate) apply: bool,
}

/// Create a cluster of a qualified shape (and the `--config_file` over it), recorded in the
/// history. A signal during the create ends the cluster the interrupted call made (unless
/// `--keep_cluster`): `Ok(Err(signal))`.
pub(crate) fn create_cluster(
    cfg: &ConfigFile,
    rt: &tokio::runtime::Runtime,
    b: &dyn ClusterBackend,
    platform: PlatformArg,
    h: &mut History,
    o: &CreateOpts,
) -> Result<std::result::Result<ClusterInfo, Stop>> {
    let mut spec = ClusterSpec {
        name: "aether GPU test".into(),
        local_cores: o.local_cores,
        instance_count: 1,
        ..Default::default()
    };
    if let Some(path) = &o.config_file {
        if platform != PlatformArg::Emr {
            bail!("--config_file describes an EMR cluster: use it with --platform emr");
        }
        spec.file = Some(
            aether_platform::clusterfile::ClusterFile::load(path)
                .map_err(|e| anyhow!("--config_file {e}"))?,
        );
    }
    let mut job_id = None;
    if let Some(id) = o.shape_id {
        let (job, gpu) = h
            .shape(id)?
            .ok_or_else(|| anyhow!("unknown cluster shape id {id} (see `aether report list`)"))?;
        let shape = &gpu["shape"];
        spec.shape_id = Some(id.to_string());
        spec.name = format!("aether job {job} shape {id}");
        spec.instance_type = shape["instance"].as_str().map(String::from);
        spec.instance_count = shape["nodes"].as_i64().unwrap_or(1);
        spec.tags.insert("aether:job-id".into(), job.to_string());
        job_id = Some(job);
        if platform == PlatformArg::EmrEks {
            // the shape's NodePool and pod templates, which the lease's runs use
            let w = crate::eks::write_capacity(cfg, id, o.output.clone(), o.apply, false)?;
            spec.tags
                .insert("aether:gpus-per-node".into(), w.gpus_per_node.to_string());
        }
    } else if platform != PlatformArg::Local
        && spec
            .file
            .as_ref()
            .is_none_or(|f| f.instance_groups.is_none())
    {
        bail!(
            "--cluster_shape_id (or instanceGroups in --config_file) is needed to size a cluster on {:?}",
            platform
        );
    }
    let token = o.request_token.clone().unwrap_or_else(|| {
        format!(
            "aether-{}-{}",
            std::process::id(),
            aether_platform::now_ms()
        )
    });
    spec.tags
        .insert("aether:request-token".into(), token.clone());
    if platform == PlatformArg::Emr {
        upload_bootstrap(cfg, rt)?;
    }
    let made = rt.block_on(async {
        tokio::select! {
            r = b.create(&spec, &token) => Ok(r),
            s = stopped() => Err(s),
        }
    });
    match made {
        Ok(c) => {
            let c = c?;
            record_cluster(h, b, &c, job_id, Some(&token))?;
            Ok(Ok(c))
        }
        Err(sig) => {
            eprintln!(
                "{}: cluster create interrupted (request token {token})",
                sig.name()
            );
            // the interrupted call may have made the cluster: find it by its token
            let mut found = None;
            for _ in 0..3 {
                if let Ok(Some(c)) = rt.block_on(b.find_by_token(&token)) {
                    found = Some(c);
                    break;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            match found {
                Some(c) if o.keep_cluster => {
                    record_cluster(h, b, &c, job_id, Some(&token))?;
                    eprintln!("cluster {} kept (--keep_cluster)", c.cluster_id);
                }
                Some(c) => {
                    record_cluster(h, b, &c, job_id, Some(&token))?;
                    end_cluster(rt, b, h, &c.cluster_id);
                }
                None => eprintln!("no cluster was made for request token {token}"),
            }
            Ok(Err(sig))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The EKS cost of a real standalone log whose executors were added and removed, against
    /// the lifetimes read straight from its JSON events (ExecutorAdded until ExecutorRemoved,
    /// else ApplicationEnd; the app from ApplicationStart to ApplicationEnd).
    #[test]
    fn eks_cost_of_a_log_with_executors_added_and_removed() {
        let log = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../datasets/fixtures/analyze/app-20261130040123-0000.zstd"
        );
        let raw = zstd::decode_all(std::fs::File::open(log).unwrap()).unwrap();
        let (mut added, mut removed) = (BTreeMap::new(), BTreeMap::new());
        let (mut start, mut end) = (0i64, 0i64);
        for line in String::from_utf8(raw).unwrap().lines() {
            let e: serde_json::Value = serde_json::from_str(line).unwrap();
            let ts = e["Timestamp"].as_i64();
            match e["Event"].as_str().unwrap_or("") {
                "SparkListenerExecutorAdded" => {
                    added.insert(e["Executor ID"].as_str().unwrap().to_string(), ts.unwrap());
                }
                "SparkListenerExecutorRemoved" => {
                    removed.insert(e["Executor ID"].as_str().unwrap().to_string(), ts.unwrap());
                }
                "SparkListenerApplicationStart" => start = ts.unwrap(),
                "SparkListenerApplicationEnd" => end = ts.unwrap(),
                _ => {}
            }
        }
        assert!(!removed.is_empty(), "the fixture has executors removed");
        let lifetimes: Vec<i64> = added
            .iter()
            .map(|(id, a)| removed.get(id).copied().unwrap_or(end) - a)
            .collect();

        let rt = runtime().unwrap();
        let f = run_figures(&rt, log);
        let mut got = f.executor_ms.clone();
        let mut want = lifetimes.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want);
        assert_eq!(f.duration_ms, Some(end - start));

        let d = tempfile::tempdir().unwrap();
        let prices = d.path().join("spot.csv");
        std::fs::write(
            &prices,
            "region,instance,ec2_usd_per_hour,emr_usd_per_hour,spot_usd_per_hour\n\
             us-east-1,g4dn.2xlarge,0.752,0.188,0.2256\n",
        )
        .unwrap();
        let mut cfg = ConfigFile::load(&d.path().join("config.toml")).unwrap();
        cfg.config
            .set(
                "platform.emr_eks.pricing_file",
                &prices.display().to_string(),
            )
            .unwrap();
        cfg.config
            .set("platform.emr_eks.consolidate_after_s", "45")
            .unwrap();
        let group = |role: &str, t: &str, market: &str| aether_platform::NodeGroup {
            role: role.into(),
            instance_type: t.into(),
            count: 1,
            market: market.into(),
        };
        let cluster = ClusterInfo {
            cluster_id: "eks-1".into(),
            backend: "emr-eks".into(),
            state: aether_platform::ClusterState::Waiting,
            spec: ClusterSpec::default(),
            created_ms: 0,
            ended_ms: None,
            state_reason: None,
            groups: vec![
                group("DRIVER", "m5d.xlarge", "ON_DEMAND"),
                group("EXECUTOR", "g4dn.2xlarge", "SPOT"),
            ],
        };
        let c = eks_run_cost(&cfg, &cluster, &f).unwrap();
        let h = |ms: i64| ms as f64 / 3_600_000.0;
        let exec = h(lifetimes.iter().sum()) * 0.2256;
        // the driver at m5d.xlarge's EC2 price (the catalog's), on-demand
        let drv = h(end - start) * 0.226;
        let tail = 45.0 / 3600.0 * (lifetimes.len() as f64 * 0.2256 + 0.226);
        assert!((c.executor_usd - exec).abs() < 1e-12, "{c:?}");
        assert!((c.driver_usd - drv).abs() < 1e-12, "{c:?}");
        assert!((c.tail_usd - tail).abs() < 1e-12, "{c:?}");
        assert!((c.total_usd - (exec + drv + tail)).abs() < 1e-12);
        assert_eq!(c.executor_price, "spot");

        // no spot price for the pool: on-demand EC2 (no EMR uplift on EKS)
        let mut on_demand = cluster.clone();
        on_demand.groups[1].instance_type = "g5.xlarge".into();
        let c = eks_run_cost(&cfg, &on_demand, &f).unwrap();
        assert!(c.executor_price.starts_with("on-demand"), "{c:?}");
        assert!(
            (c.executor_usd - h(lifetimes.iter().sum()) * 1.006).abs() < 1e-12,
            "{c:?}"
        );
    }
}
