//! aether-platform: where aether runs Spark jobs.
//!
//! Owns: the [`ClusterBackend`] trait (create, describe, list and terminate a cluster; submit a
//! step, poll it, cancel it, find its event log and driver log), what differs between the
//! platforms ([`Capabilities`]: asked, never matched on, by the workflow), its backends ([`local`]: this
//! machine's Spark; [`emr`]: EMR clusters and steps), the job definition a step re-runs
//! ([`jobdef`]), [`emr_eks`]: EMR on EKS job runs on Karpenter capacity, the poll loop with backoff and a deadline ([`wait_step`]) that every command uses
//! instead of the SDK waiters, reading a step's logs ([`log_tail`]), and CloudWatch metrics and
//! alarms of the runs ([`cloudwatch`]), and what an AWS account offers before the first real
//! cluster ([`preflight`]: credentials, EMR's roles, writable buckets, releases, instance
//! types, GPU vCPU quotas).
//!
//! Does not own: the job history (aether-core) or reading the logs a run leaves (aether-ingest).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub mod capabilities;
pub mod cloudwatch;
pub mod clusterfile;
pub mod ec2;
pub mod emr;
pub mod emr_eks;
pub mod jobdef;
pub mod k8s_schema;
pub mod karpenter;
pub mod local;
pub mod preflight;
pub mod rapids;
pub mod sandbox;
mod signed;

pub use capabilities::{Capabilities, CostBasis};
pub use jobdef::{JobDefinition, JobDefinitionError};

/// Errors of a platform, naming what they concern.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("unknown cluster {0}")]
    UnknownCluster(String),
    #[error("unknown step {step} on cluster {cluster}")]
    UnknownStep { cluster: String, step: String },
    #[error("cluster {cluster} is {state}: it takes no steps")]
    NotRunning { cluster: String, state: String },
    #[error("step {step} did not finish within {secs} s (still {state})")]
    Deadline {
        step: String,
        secs: u64,
        state: String,
    },
    #[error("{what}: {error}")]
    Io { what: String, error: String },
    #[error("{0}")]
    Other(String),
}

pub type Result<T> = std::result::Result<T, PlatformError>;

pub(crate) fn io(what: impl std::fmt::Display, e: impl std::fmt::Display) -> PlatformError {
    PlatformError::Io {
        what: what.to_string(),
        error: e.to_string(),
    }
}

/// What a cluster should be: the GPU shape qualify recommended, as the backend needs it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterSpec {
    /// A name for the cluster (EMR's Name).
    pub name: String,
    /// The shape id it was made from (the qualification's), if any.
    pub shape_id: Option<String>,
    /// Worker instance type and count (EMR); the local backend records them only.
    pub instance_type: Option<String>,
    pub instance_count: i64,
    /// Cores the local backend gives Spark (`local[N]`); 0: all cores.
    pub local_cores: i64,
    /// Tags (EMR), e.g. `aether:job-id`.
    pub tags: BTreeMap<String, String>,
    /// `--config_file`: the release, applications and nodes over the defaults (EMR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<clusterfile::ClusterFile>,
}

/// A cluster's lifecycle, as EMR names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ClusterState {
    Starting,
    Waiting,
    Running,
    Terminating,
    Terminated,
    TerminatedWithErrors,
}

impl ClusterState {
    /// Whether the cluster is gone (or going).
    pub fn is_ended(self) -> bool {
        matches!(
            self,
            ClusterState::Terminating
                | ClusterState::Terminated
                | ClusterState::TerminatedWithErrors
        )
    }
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterState::Starting => "STARTING",
            ClusterState::Waiting => "WAITING",
            ClusterState::Running => "RUNNING",
            ClusterState::Terminating => "TERMINATING",
            ClusterState::Terminated => "TERMINATED",
            ClusterState::TerminatedWithErrors => "TERMINATED_WITH_ERRORS",
        }
    }
}

/// A cluster as its backend describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterInfo {
    pub cluster_id: String,
    pub backend: String,
    pub state: ClusterState,
    pub spec: ClusterSpec,
    pub created_ms: i64,
    pub ended_ms: Option<i64>,
    /// Why it ended (or a note such as "a local run has no GPU").
    pub state_reason: Option<String>,
    /// Its nodes (EMR instance groups); empty on the local backend.
    #[serde(default)]
    pub groups: Vec<NodeGroup>,
    /// The EMR release its nodes run (`emr-7.9.0`), where the backend tells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_label: Option<String>,
    /// The nodes' custom AMI, if not the release's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_ami: Option<String>,
}

/// A group of nodes of one instance type (an EMR instance group).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeGroup {
    /// MASTER, CORE or TASK.
    pub role: String,
    pub instance_type: String,
    pub count: i64,
    /// ON_DEMAND or SPOT.
    pub market: String,
}

/// A step to run: the job and the Spark properties this run sets over the job's own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRequest {
    pub name: String,
    pub job: JobDefinition,
    pub conf: BTreeMap<String, String>,
}

/// A step's lifecycle, as EMR names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StepState {
    Pending,
    Running,
    Completed,
    Failed,
    Cancelled,
    Interrupted,
}

impl StepState {
    pub fn is_final(self) -> bool {
        !matches!(self, StepState::Pending | StepState::Running)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Pending => "PENDING",
            StepState::Running => "RUNNING",
            StepState::Completed => "COMPLETED",
            StepState::Failed => "FAILED",
            StepState::Cancelled => "CANCELLED",
            StepState::Interrupted => "INTERRUPTED",
        }
    }
}

/// A step as its backend describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepInfo {
    pub cluster_id: String,
    pub step_id: String,
    pub state: StepState,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
    /// Why it failed (the last error lines of its driver log, or the backend's reason).
    pub failure_reason: Option<String>,
    /// The spark-submit arguments it ran.
    pub args: Vec<String>,
}

/// Where aether runs jobs. Every method is one call to the platform; waiting is
/// [`wait_step`]'s.
#[async_trait]
pub trait ClusterBackend: Send + Sync {
    /// The platform this backend runs on.
    fn platform(&self) -> aether_core::config::RunOn;
    /// The backend's name, as the history records it (`local`, `emr`, `emr-eks`).
    fn name(&self) -> &'static str {
        self.platform().as_str()
    }
    /// What the platform can and cannot do (a cluster file, sizing, Karpenter capacity, a
    /// metastore of its own, how runs are paid for).
    fn capabilities(&self) -> Capabilities {
        Capabilities::of(self.platform())
    }
    /// What the platform would refuse of a cluster of `spec` (an instance type it does not
    /// support, a setting the cluster cannot lack), asked before anything is made or recorded;
    /// `create` asks it too.
    async fn check(&self, spec: &ClusterSpec) -> Result<()> {
        let _ = spec;
        Ok(())
    }
    /// Start a cluster. A request token already used returns the cluster made for it instead
    /// of a second one.
    async fn create(&self, spec: &ClusterSpec, request_token: &str) -> Result<ClusterInfo>;
    /// The cluster a create with `request_token` made, if any and not yet ended (after an
    /// interrupted create: what to clean up).
    async fn find_by_token(&self, request_token: &str) -> Result<Option<ClusterInfo>>;
    /// The cluster a create with `request_token` made since `since_ms`, whatever its state
    /// (after a crash: to put on record a cluster whose create was never answered, also one
    /// that has ended since).
    async fn find_created(
        &self,
        request_token: &str,
        since_ms: i64,
    ) -> Result<Option<ClusterInfo>> {
        let _ = since_ms;
        self.find_by_token(request_token).await
    }
    async fn describe(&self, cluster_id: &str) -> Result<ClusterInfo>;
    async fn list(&self) -> Result<Vec<ClusterInfo>>;
    /// Terminate a cluster (its running steps are cancelled).
    async fn terminate(&self, cluster_id: &str) -> Result<ClusterInfo>;
    async fn submit(&self, cluster_id: &str, step: &StepRequest) -> Result<StepInfo>;
    /// The step of the cluster submitted as `name` (a [`StepRequest::name`], unique per run),
    /// if any: how a run whose submit was never answered is found again.
    async fn find_step(&self, cluster_id: &str, name: &str) -> Result<Option<StepInfo>>;
    async fn step(&self, cluster_id: &str, step_id: &str) -> Result<StepInfo>;
    async fn cancel(&self, cluster_id: &str, step_id: &str) -> Result<StepInfo>;
    /// The step's Spark event log (a path or URL) once the step has written one.
    async fn event_log(&self, cluster_id: &str, step_id: &str) -> Result<Option<String>>;
    /// The step's driver log (stderr), for the user to read when it failed.
    async fn driver_log(&self, cluster_id: &str, step_id: &str) -> Result<Option<String>>;
}

/// The AWS SDK's HTTPS client: rustls on ring (the crypto object_store and reqwest already
/// use), trusting the system's roots. Every SDK client aether makes takes this one.
pub fn https_client() -> aws_sdk_emr::config::SharedHttpClient {
    use aws_smithy_http_client::tls;
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https()
}

/// The AWS SDK's standard configuration (credentials, region, endpoints from the environment
/// and the profiles), in `region` when given, with [`https_client`].
pub fn aws_loader(region: Option<String>) -> aws_config::ConfigLoader {
    let loader =
        aws_config::defaults(aws_config::BehaviorVersion::latest()).http_client(https_client());
    match region {
        Some(r) => loader.region(aws_config::Region::new(r)),
        None => loader,
    }
}

/// How [`wait_step`] polls: the first interval, growing by `factor` up to `max`, until
/// `deadline`.
#[derive(Clone, Copy, Debug)]
pub struct Poll {
    pub first: Duration,
    pub max: Duration,
    pub factor: f64,
    pub deadline: Duration,
}

impl Default for Poll {
    fn default() -> Self {
        Poll {
            first: Duration::from_millis(500),
            max: Duration::from_secs(15),
            factor: 1.5,
            deadline: Duration::from_secs(6 * 3600),
        }
    }
}

/// Polls in a row that may fail before [`wait_step`] gives up.
pub const POLL_FAILURES: u32 = 5;

/// Poll a step until it ends or `poll.deadline` passes (then [`PlatformError::Deadline`];
/// the caller decides whether to cancel it). `progress` sees every answer.
pub async fn wait_step(
    backend: &dyn ClusterBackend,
    cluster_id: &str,
    step_id: &str,
    poll: Poll,
    mut progress: impl FnMut(&StepInfo, Duration),
) -> Result<StepInfo> {
    let started = Instant::now();
    let mut every = poll.first;
    let mut failures = 0;
    loop {
        // a poll that fails (after the SDK's own retries) is tried again a few times: a burst
        // of throttling must not end a run of hours; unknown ids end it at once
        let s = match backend.step(cluster_id, step_id).await {
            Ok(s) => {
                failures = 0;
                s
            }
            Err(e @ (PlatformError::UnknownCluster(_) | PlatformError::UnknownStep { .. })) => {
                return Err(e);
            }
            Err(e) if failures + 1 >= POLL_FAILURES || started.elapsed() >= poll.deadline => {
                return Err(e);
            }
            Err(_) => {
                failures += 1;
                tokio::time::sleep(every).await;
                every = poll.max.min(every.mul_f64(poll.factor));
                continue;
            }
        };
        progress(&s, started.elapsed());
        if s.state.is_final() {
            return Ok(s);
        }
        let left = poll.deadline.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(PlatformError::Deadline {
                step: step_id.to_string(),
                secs: poll.deadline.as_secs(),
                state: s.state.as_str().to_string(),
            });
        }
        tokio::time::sleep(every.min(left)).await;
        every = poll.max.min(every.mul_f64(poll.factor));
    }
}

/// Whether a config value is a placeholder for the user to fill in (the AutoTuner's
/// `[FILL_IN_VALUE]`), which no run may pass to Spark.
pub fn is_placeholder(value: &str) -> bool {
    value.contains("[FILL_IN_VALUE]")
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The last `n` lines of a log (a local file or an `s3://` object; `.gz` is unpacked).
pub async fn log_tail(url: &str, s3: &aether_ingest::S3Options, n: usize) -> Result<Vec<String>> {
    let bytes = if url.starts_with("s3://") || url.starts_with("s3a://") {
        emr::read_object(s3, url)
            .await?
            .ok_or_else(|| io(url, "no such object"))?
    } else {
        std::fs::read(url).map_err(|e| io(url, e))?
    };
    let text = if url.ends_with(".gz") {
        use std::io::Read;
        let mut t = String::new();
        flate2::read::MultiGzDecoder::new(bytes.as_slice())
            .read_to_string(&mut t)
            .map_err(|e| io(url, e))?;
        t
    } else {
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    Ok(lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.to_string())
        .collect())
}
