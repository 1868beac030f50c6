//! The EMR on EKS backend (aws-sdk-emrcontainers): GPU test runs as job runs on a virtual
//! cluster whose GPU capacity comes from Karpenter (see [`crate::karpenter`]).
//!
//! EMR on EKS has no cluster to start per test: the virtual cluster is set up once and shared,
//! the nodes come and go with the pods. What aether calls a cluster here is a **capacity lease**:
//! the virtual cluster, the qualified shape whose NodePool and pod templates the runs use, and
//! the job runs aether started on it. `create` checks that the virtual cluster is RUNNING and
//! that the shape's pod templates are in S3, and records the lease (a file under aether's home);
//! `terminate` cancels every job run of the lease still alive and ends it — Karpenter then
//! removes the empty nodes after the NodePool's `consolidateAfter`; the virtual cluster stays.
//!
//! A step is a job run: `StartJobRun` with the RAPIDS release label, a `sparkSubmitJobDriver`
//! (entry point, arguments, the job's options and `--conf`s), `configurationOverrides` (the
//! spark-defaults with the pod template files and the S3 event-log folder, `emr-job-submitter`
//! on on-demand nodes, S3 monitoring logs), tagged with the lease, and a client token derived
//! from the run's unique name, so a retried call (the SDK's retries, or ours after a lost
//! answer) never makes a second run. `DescribeJobRun` is polled by [`crate::wait_step`],
//! `CancelJobRun` ends it, its event log is `spark-<jobRunId>` in the event-log folder (the
//! Spark application id EMR on EKS gives a run), its driver log is where S3 monitoring puts it.

use crate::{
    ClusterBackend, ClusterInfo, ClusterSpec, ClusterState, NodeGroup, PlatformError, Result,
    StepInfo, StepRequest, StepState, io,
};
use async_trait::async_trait;
use aws_sdk_emrcontainers::Client;
use aws_sdk_emrcontainers::types::{
    Configuration, ConfigurationOverrides, JobDriver, JobRunState, MonitoringConfiguration,
    S3MonitoringConfiguration, SparkSubmitJobDriver,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What runs on EMR on EKS need (the `platform.emr_eks.*` settings).
#[derive(Clone, Debug, Default)]
pub struct EmrEksSettings {
    pub virtual_cluster_id: Option<String>,
    pub execution_role_arn: Option<String>,
    /// The namespace the virtual cluster should be bound to (checked at create).
    pub namespace: Option<String>,
    /// A RAPIDS release label, e.g. `emr-7.9.0-spark-rapids-latest`.
    pub release_label: String,
    /// Where the runs' Spark event logs go (`s3://…`).
    pub spark_event_log_dir: Option<String>,
    /// Where the pod templates are (`<it>/pod-templates/shape-<id>/…`).
    pub artifacts_path: Option<String>,
    /// The S3 monitoring log URI of the runs.
    pub log_path: Option<String>,
    /// The instance type the driver is priced at (the driver pool's smallest).
    pub driver_instance_type: String,
}

/// The release label when none is set: the RAPIDS image of EMR 7.9 on EKS.
pub const DEFAULT_RELEASE: &str = "emr-7.9.0-spark-rapids-latest";
/// The driver's instance type when none is set.
pub const DEFAULT_DRIVER_INSTANCE: &str = "m5d.xlarge";

/// A capacity lease: what aether calls a cluster on EMR on EKS.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Lease {
    cluster_id: String,
    virtual_cluster_id: String,
    request_token: String,
    spec: ClusterSpec,
    driver_template: String,
    executor_template: String,
    created_ms: i64,
    ended_ms: Option<i64>,
    state_reason: Option<String>,
    /// The job runs started on it.
    runs: Vec<String>,
}

/// The pod template files of a shape under the artifacts path.
pub fn pod_templates(artifacts_path: &str, shape_id: &str) -> (String, String) {
    let base = format!(
        "{}/pod-templates/shape-{shape_id}",
        artifacts_path.trim_end_matches('/')
    );
    (
        format!("{base}/pod-template-driver.yaml"),
        format!("{base}/pod-template-executor.yaml"),
    )
}

/// A job run's name and client token from the run's unique step name: EMR on EKS takes
/// `[.\-_/#A-Za-z0-9]+`, at most 64 characters.
pub fn run_name(step_name: &str) -> String {
    let mut s: String = step_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-/#".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let s = s.trim_matches('-');
    // keep the end (the run's unique suffix) when it is too long
    let start = s.len().saturating_sub(64);
    s[start..].to_string()
}

fn other(e: impl std::fmt::Display) -> PlatformError {
    PlatformError::Other(e.to_string())
}

fn sdk<E, R>(what: &str, e: aws_sdk_emrcontainers::error::SdkError<E, R>) -> PlatformError
where
    E: aws_sdk_emrcontainers::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    crate::emr::sdk_error("EMR on EKS", what, e)
}

fn state_of(s: Option<&JobRunState>) -> StepState {
    match s {
        Some(JobRunState::Pending) | Some(JobRunState::Submitted) => StepState::Pending,
        Some(JobRunState::Completed) => StepState::Completed,
        Some(JobRunState::Failed) => StepState::Failed,
        Some(JobRunState::Cancelled) => StepState::Cancelled,
        // RUNNING, CANCEL_PENDING: still alive
        _ => StepState::Running,
    }
}

fn ms(t: Option<&aws_sdk_emrcontainers::primitives::DateTime>) -> Option<i64> {
    t.and_then(|t| t.to_millis().ok())
}

/// Properties only the platform sets: a run's own values would break it.
fn platform_owned(key: &str) -> bool {
    matches!(
        key,
        "spark.master"
            | "spark.submit.deployMode"
            | "spark.eventLog.dir"
            | "spark.eventLog.enabled"
            | "spark.kubernetes.driver.podTemplateFile"
            | "spark.kubernetes.executor.podTemplateFile"
    ) || key.starts_with("spark.yarn.")
}

/// The sparkSubmitParameters of a run: the job's options, class and `--conf`s with the run's
/// over them, and the GPU settings a RAPIDS run on Kubernetes needs ([`crate::rapids`]: added
/// where none is given, refused where no GPU run can take them).
pub fn submit_parameters(
    job: &crate::JobDefinition,
    conf: &BTreeMap<String, String>,
    executors: i64,
) -> std::result::Result<Vec<String>, String> {
    let mut all = job.conf.clone();
    all.extend(conf.iter().map(|(k, v)| (k.clone(), v.clone())));
    all.retain(|k, v| !platform_owned(k) && !crate::is_placeholder(v));
    all.extend(crate::rapids::gpu_conf(
        &BTreeMap::new(),
        &all,
        crate::rapids::Runtime::Kubernetes,
    )?);
    let defaults = [
        // the pods ask Kubernetes for nvidia.com/gpu
        (
            "spark.executor.resource.gpu.vendor",
            "nvidia.com".to_string(),
        ),
        ("spark.executor.instances", executors.max(1).to_string()),
    ];
    for (k, v) in defaults {
        all.entry(k.to_string()).or_insert(v);
    }
    let mut out = Vec::new();
    for (name, value) in &job.options {
        if matches!(name.as_str(), "--master" | "--deploy-mode" | "--queue") {
            continue;
        }
        out.push(name.clone());
        if let Some(v) = value {
            out.push(v.clone());
        }
    }
    if let Some(c) = &job.class {
        out.push("--class".into());
        out.push(c.clone());
    }
    for (k, v) in all {
        out.push("--conf".into());
        out.push(format!("{k}={v}"));
    }
    Ok(out)
}

/// Words joined so that a shell-like split gives them back (sparkSubmitParameters is one
/// string).
fn join_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.=/:,@%+".contains(c))
            {
                w.clone()
            } else if !w.contains('\'') {
                format!("'{w}'")
            } else if !w.contains('"') && !w.contains('\\') {
                format!("\"{w}\"")
            } else {
                // both quotes: the POSIX way ('…'\''…'), which a shell-like split reads back
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The EMR on EKS backend.
pub struct EmrEksBackend {
    client: Client,
    settings: EmrEksSettings,
    s3: aether_ingest::S3Options,
    /// Where the leases are kept.
    root: PathBuf,
}

impl EmrEksBackend {
    /// A backend from the SDK's standard configuration (credentials, `AWS_ENDPOINT_URL`…).
    pub async fn from_env(
        region: Option<String>,
        settings: EmrEksSettings,
        root: impl Into<PathBuf>,
    ) -> EmrEksBackend {
        let conf = crate::aws_loader(region).load().await;
        EmrEksBackend {
            client: Client::new(&conf),
            s3: aether_ingest::S3Options {
                region: conf.region().map(|r| r.to_string()),
                endpoint: None,
            },
            settings,
            root: root.into(),
        }
    }

    fn lease_path(&self, id: &str) -> PathBuf {
        self.root.join(format!("{id}.json"))
    }

    fn load(&self, id: &str) -> Result<Lease> {
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(PlatformError::UnknownCluster(id.to_string()));
        }
        let p = self.lease_path(id);
        let text = std::fs::read_to_string(&p)
            .map_err(|_| PlatformError::UnknownCluster(id.to_string()))?;
        serde_json::from_str(&text).map_err(|e| io(p.display(), e))
    }

    fn save(&self, l: &Lease) -> Result<()> {
        std::fs::create_dir_all(&self.root).map_err(|e| io(self.root.display(), e))?;
        let p = self.lease_path(&l.cluster_id);
        let tmp = p.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(l).map_err(|e| io(p.display(), e))?;
        std::fs::write(&tmp, text).map_err(|e| io(tmp.display(), e))?;
        std::fs::rename(&tmp, &p).map_err(|e| io(p.display(), e))
    }

    fn virtual_cluster(&self) -> Result<&str> {
        self.settings.virtual_cluster_id.as_deref().ok_or_else(|| {
            other(
                "platform.emr_eks.virtual_cluster_id is not set: runs go to an EMR on EKS virtual cluster \
                 (aether config set platform.emr_eks.virtual_cluster_id ID)",
            )
        })
    }

    /// The virtual cluster's state (`RUNNING`, `TERMINATED`, `ARRESTED`…).
    async fn virtual_cluster_state(&self, id: &str) -> Result<String> {
        Ok(self.virtual_cluster_info(id).await?.0)
    }

    /// The virtual cluster's state and namespace.
    async fn virtual_cluster_info(&self, id: &str) -> Result<(String, Option<String>)> {
        let out = self
            .client
            .describe_virtual_cluster()
            .id(id)
            .send()
            .await
            .map_err(|e| {
                let text = sdk("DescribeVirtualCluster", e).to_string();
                if text.contains("ResourceNotFound") || text.contains("doesn't exist") {
                    other(format!(
                        "virtual cluster {id} does not exist (platform.emr_eks.virtual_cluster_id)"
                    ))
                } else {
                    other(text)
                }
            })?;
        let v = out.virtual_cluster();
        let namespace = v
            .and_then(|v| v.container_provider())
            .and_then(|p| p.info())
            .and_then(|i| i.as_eks_info().ok())
            .and_then(|e| e.namespace())
            .map(String::from);
        Ok((
            v.and_then(|v| v.state())
                .map(|s| s.as_str().to_string())
                .unwrap_or_default(),
            namespace,
        ))
    }

    fn info(&self, l: &Lease, vc_state: Option<&str>) -> ClusterInfo {
        let state = if l.ended_ms.is_some() {
            ClusterState::Terminated
        } else if vc_state.is_some_and(|s| s != "RUNNING") {
            ClusterState::TerminatedWithErrors
        } else {
            // a live lease takes runs; its nodes come and go with them
            ClusterState::Waiting
        };
        let reason = match (vc_state, &l.state_reason) {
            (Some(s), _) if s != "RUNNING" && l.ended_ms.is_none() => {
                Some(format!("virtual cluster {} is {s}", l.virtual_cluster_id))
            }
            (_, r) => r.clone().or_else(|| {
                Some(format!(
                    "virtual cluster {}; GPU executors on NodePool {} (spot, on-demand fallback), \
                     driver on {} (on-demand)",
                    l.virtual_cluster_id,
                    crate::karpenter::gpu_pool(
                        l.spec
                            .shape_id
                            .as_deref()
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(0)
                    ),
                    crate::karpenter::DRIVER_POOL
                ))
            }),
        };
        ClusterInfo {
            cluster_id: l.cluster_id.clone(),
            backend: "emr-eks".into(),
            release_label: None,
            custom_ami: None,
            state,
            spec: l.spec.clone(),
            created_ms: l.created_ms,
            ended_ms: l.ended_ms,
            state_reason: reason,
            groups: vec![
                NodeGroup {
                    role: "DRIVER".into(),
                    instance_type: self.settings.driver_instance_type.clone(),
                    count: 1,
                    market: "ON_DEMAND".into(),
                },
                NodeGroup {
                    role: "EXECUTOR".into(),
                    instance_type: l.spec.instance_type.clone().unwrap_or_default(),
                    count: l.spec.instance_count,
                    market: "SPOT".into(),
                },
            ],
        }
    }

    async fn describe_run(&self, cluster_id: &str, run_id: &str) -> Result<StepInfo> {
        let l = self.load(cluster_id)?;
        let mut s = self.job_run(&l.virtual_cluster_id, run_id).await?.step;
        s.cluster_id = cluster_id.to_string();
        Ok(s)
    }

    /// A job run of a virtual cluster (any: aether's or production's), as a step, with where
    /// its event log and logs went (its own spark-defaults and S3 monitoring, else the
    /// settings').
    pub async fn job_run(&self, virtual_cluster_id: &str, run_id: &str) -> Result<JobRunInfo> {
        let vc = virtual_cluster_id;
        let unknown = || PlatformError::UnknownStep {
            cluster: vc.to_string(),
            step: run_id.to_string(),
        };
        let out = self
            .client
            .describe_job_run()
            .id(run_id)
            .virtual_cluster_id(vc)
            .send()
            .await
            .map_err(|e| {
                let text = sdk("DescribeJobRun", e).to_string();
                if text.contains("ResourceNotFound")
                    || text.contains("doesn't exist")
                    || text.contains("Invalid job run")
                {
                    unknown()
                } else {
                    other(text)
                }
            })?;
        let r = out.job_run().ok_or_else(unknown)?;
        let state = state_of(r.state());
        let failure_reason = (state == StepState::Failed || state == StepState::Cancelled)
            .then(|| {
                let why = r.failure_reason().map(|f| f.as_str().to_string());
                match (why, r.state_details()) {
                    (Some(w), Some(d)) => Some(format!("{w}: {d}")),
                    (Some(w), None) => Some(w),
                    (None, Some(d)) => Some(d.to_string()),
                    (None, None) => None,
                }
            })
            .flatten();
        let mut args = vec!["spark-submit".to_string()];
        if let Some(d) = r.job_driver().and_then(|d| d.spark_submit_job_driver()) {
            if let Some(p) = d.spark_submit_parameters() {
                args.extend(crate::jobdef::split_words(p));
            }
            args.push(d.entry_point().to_string());
            args.extend(d.entry_point_arguments().iter().cloned());
        }
        let o = r.configuration_overrides();
        let event_log_dir = o
            .map(|o| o.application_configuration())
            .unwrap_or_default()
            .iter()
            .filter(|c| c.classification() == "spark-defaults")
            .find_map(|c| {
                c.properties()
                    .and_then(|p| p.get("spark.eventLog.dir"))
                    .cloned()
            })
            .map(|d| d.replacen("s3a://", "s3://", 1))
            .or(self.settings.spark_event_log_dir.clone());
        let log_uri = o
            .and_then(|o| o.monitoring_configuration())
            .and_then(|m| m.s3_monitoring_configuration())
            .map(|m| m.log_uri().to_string())
            .or(self.settings.log_path.clone());
        Ok(JobRunInfo {
            step: StepInfo {
                cluster_id: vc.to_string(),
                step_id: run_id.to_string(),
                state,
                start_ms: ms(r.created_at()),
                end_ms: ms(r.finished_at()),
                failure_reason,
                args,
            },
            event_log_dir,
            log_uri,
        })
    }

    /// The event log of a job run (`spark-<id>` in its event-log folder), once written.
    pub async fn job_run_event_log(&self, run: &JobRunInfo) -> Result<Option<String>> {
        let Some(dir) = &run.event_log_dir else {
            return Ok(None);
        };
        crate::emr::find_event_log(&self.s3, dir, &format!("spark-{}", run.step.step_id)).await
    }

    /// The driver's stderr of a job run, where S3 monitoring puts it (if it is there).
    pub async fn job_run_driver_log(&self, run: &JobRunInfo) -> Result<Option<String>> {
        let Some(logs) = &run.log_uri else {
            return Ok(None);
        };
        let id = &run.step.step_id;
        let url = format!(
            "{}/{}/jobs/{id}/containers/spark-{id}/spark-{id}-driver/stderr.gz",
            logs.trim_end_matches('/'),
            run.step.cluster_id
        );
        Ok(crate::emr::read_object(&self.s3, &url).await?.map(|_| url))
    }
}

/// A job run as [`EmrEksBackend::job_run`] describes it.
#[derive(Clone, Debug)]
pub struct JobRunInfo {
    /// The run as a step (`cluster_id`: the virtual cluster).
    pub step: StepInfo,
    /// Its `spark.eventLog.dir` (as `s3://`).
    pub event_log_dir: Option<String>,
    /// Its S3 monitoring log URI.
    pub log_uri: Option<String>,
}

#[async_trait]
impl ClusterBackend for EmrEksBackend {
    fn platform(&self) -> aether_core::config::RunOn {
        aether_core::config::RunOn::EmrEks
    }

    async fn create(&self, spec: &ClusterSpec, request_token: &str) -> Result<ClusterInfo> {
        if let Some(c) = self.find_by_token(request_token).await? {
            return Ok(c);
        }
        let vc = self.virtual_cluster()?.to_string();
        let (state, namespace) = self.virtual_cluster_info(&vc).await?;
        if state != "RUNNING" {
            return Err(other(format!(
                "virtual cluster {vc} is {state}: it takes no job runs"
            )));
        }
        if let (Some(want), Some(got)) = (&self.settings.namespace, &namespace)
            && want != got
        {
            return Err(other(format!(
                "virtual cluster {vc} is bound to namespace {got}, not {want} (platform.emr_eks.namespace)"
            )));
        }
        let shape = spec.shape_id.clone().ok_or_else(|| {
            other("a run on EMR on EKS needs the qualified shape whose NodePool it runs on (--cluster_shape_id)")
        })?;
        let art = self.settings.artifacts_path.as_deref().ok_or_else(|| {
            other(
                "platform.emr_eks.artifacts_path is not set: the runs' pod templates are there \
                 (aether config set platform.emr_eks.artifacts_path s3://bucket/prefix)",
            )
        })?;
        let (driver, executor) = pod_templates(art, &shape);
        for t in [&driver, &executor] {
            if crate::emr::read_object(&self.s3, t).await?.is_none() {
                return Err(other(format!(
                    "{t} is missing: `aether cluster create --platform emr-eks --cluster_shape_id {shape}` \
                     writes the shape's capacity and puts its pod templates there"
                )));
            }
        }
        let now = crate::now_ms();
        let l = Lease {
            cluster_id: format!("eks-{now:x}-{}", std::process::id()),
            virtual_cluster_id: vc,
            request_token: request_token.to_string(),
            spec: spec.clone(),
            driver_template: driver,
            executor_template: executor,
            created_ms: now,
            ended_ms: None,
            state_reason: None,
            runs: Vec::new(),
        };
        self.save(&l)?;
        Ok(self.info(&l, Some(&state)))
    }

    async fn find_created(
        &self,
        request_token: &str,
        _since_ms: i64,
    ) -> Result<Option<ClusterInfo>> {
        if request_token.is_empty() {
            return Ok(None);
        }
        Ok(self.list().await?.into_iter().find(|c| {
            c.spec.tags.get("aether:request-token").map(String::as_str) == Some(request_token)
        }))
    }

    async fn find_by_token(&self, request_token: &str) -> Result<Option<ClusterInfo>> {
        if request_token.is_empty() {
            return Ok(None);
        }
        Ok(self.list().await?.into_iter().find(|c| {
            c.spec.tags.get("aether:request-token").map(String::as_str) == Some(request_token)
                && !c.state.is_ended()
        }))
    }

    async fn describe(&self, cluster_id: &str) -> Result<ClusterInfo> {
        let l = self.load(cluster_id)?;
        let vc = if l.ended_ms.is_none() {
            Some(self.virtual_cluster_state(&l.virtual_cluster_id).await?)
        } else {
            None
        };
        Ok(self.info(&l, vc.as_deref()))
    }

    async fn list(&self) -> Result<Vec<ClusterInfo>> {
        let Ok(dir) = std::fs::read_dir(&self.root) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some(id) = name.strip_suffix(".json")
                && let Ok(l) = self.load(id)
            {
                out.push(self.info(&l, None));
            }
        }
        out.sort_by_key(|c| c.created_ms);
        Ok(out)
    }

    async fn terminate(&self, cluster_id: &str) -> Result<ClusterInfo> {
        let mut l = self.load(cluster_id)?;
        let mut cancelled = Vec::new();
        let mut failed = Vec::new();
        for id in l.runs.clone() {
            match self.describe_run(cluster_id, &id).await {
                Ok(s) if s.state.is_final() => {}
                Ok(_) => match self.cancel(cluster_id, &id).await {
                    Ok(_) => cancelled.push(id),
                    Err(e) => failed.push(format!("{id}: {e}")),
                },
                Err(PlatformError::UnknownStep { .. }) => {}
                Err(e) => failed.push(format!("{id}: {e}")),
            }
        }
        if !failed.is_empty() {
            return Err(other(format!(
                "lease {cluster_id}: job runs could not be cancelled ({}); it stays open",
                failed.join("; ")
            )));
        }
        l.ended_ms = Some(crate::now_ms());
        l.state_reason = Some(format!(
            "{}; Karpenter removes the empty nodes after consolidateAfter; virtual cluster {} stays",
            if cancelled.is_empty() {
                "no job run was alive".to_string()
            } else {
                format!("job runs cancelled: {}", cancelled.join(", "))
            },
            l.virtual_cluster_id
        ));
        self.save(&l)?;
        Ok(self.info(&l, None))
    }

    async fn submit(&self, cluster_id: &str, step: &StepRequest) -> Result<StepInfo> {
        let mut l = self.load(cluster_id)?;
        if l.ended_ms.is_some() {
            return Err(PlatformError::NotRunning {
                cluster: cluster_id.to_string(),
                state: "TERMINATED".into(),
            });
        }
        let role = self.settings.execution_role_arn.as_deref().ok_or_else(|| {
            other(
                "platform.emr_eks.execution_role_arn is not set: the job runs' IAM role \
                 (aether config set platform.emr_eks.execution_role_arn arn:aws:iam::…:role/…)",
            )
        })?;
        let events = self.settings.spark_event_log_dir.as_deref().ok_or_else(|| {
            other(
                "platform.emr_eks.spark_event_log_dir is not set: a run's event log is how aether \
                 measures it (aether config set platform.emr_eks.spark_event_log_dir s3://bucket/prefix)",
            )
        })?;
        let params = submit_parameters(&step.job, &step.conf, l.spec.instance_count)
            .map_err(|e| other(format!("run {}: {e}", step.name)))?;
        let driver = SparkSubmitJobDriver::builder()
            .entry_point(&step.job.main)
            .set_entry_point_arguments(Some(step.job.args.clone()))
            .spark_submit_parameters(join_words(&params))
            .build()
            .map_err(other)?;
        // Spark's own Hadoop S3 connector on EKS: s3a:// for the event log folder
        let events_s3a = events.replacen("s3://", "s3a://", 1);
        let defaults = Configuration::builder()
            .classification("spark-defaults")
            .properties(
                "spark.kubernetes.driver.podTemplateFile",
                &l.driver_template,
            )
            .properties(
                "spark.kubernetes.executor.podTemplateFile",
                &l.executor_template,
            )
            .properties("spark.eventLog.enabled", "true")
            .properties("spark.eventLog.dir", events_s3a)
            .build()
            .map_err(other)?;
        // the job submitter pod on on-demand capacity (a spot reclaim would lose the run)
        let submitter = Configuration::builder()
            .classification("emr-job-submitter")
            .properties(
                "jobsubmitter.node.selector.karpenter.sh/capacity-type",
                "on-demand",
            )
            .build()
            .map_err(other)?;
        let mut overrides = ConfigurationOverrides::builder()
            .application_configuration(defaults)
            .application_configuration(submitter);
        if let Some(logs) = &self.settings.log_path {
            overrides = overrides.monitoring_configuration(
                MonitoringConfiguration::builder()
                    .s3_monitoring_configuration(
                        S3MonitoringConfiguration::builder()
                            .log_uri(logs)
                            .build()
                            .map_err(other)?,
                    )
                    .build(),
            );
        }
        let name = run_name(&step.name);
        let mut tags: std::collections::HashMap<String, String> = l
            .spec
            .tags
            .iter()
            .filter(|(k, _)| k.starts_with("aether:job"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        tags.insert("aether:lease".into(), l.cluster_id.clone());
        // the client token makes the SDK's retries (and a retry after a lost answer) return
        // the run the first call made
        let req = self
            .client
            .start_job_run()
            .name(&name)
            .virtual_cluster_id(&l.virtual_cluster_id)
            .client_token(&name)
            .execution_role_arn(role)
            .release_label(&self.settings.release_label)
            .job_driver(JobDriver::builder().spark_submit_job_driver(driver).build())
            .configuration_overrides(overrides.build())
            .set_tags(Some(tags));
        let mut attempt = 0;
        let out = loop {
            match req.clone().send().await {
                Ok(o) => break o,
                Err(e) if attempt + 1 < 4 && crate::emr::transient(&e) => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(300 * 2u64.pow(attempt)))
                        .await;
                }
                Err(e) => return Err(sdk("StartJobRun", e)),
            }
        };
        let id = out
            .id()
            .ok_or_else(|| other("StartJobRun answered no job run id"))?
            .to_string();
        if !l.runs.contains(&id) {
            l.runs.push(id.clone());
            self.save(&l)?;
        }
        self.describe_run(cluster_id, &id).await
    }

    async fn find_step(&self, cluster_id: &str, name: &str) -> Result<Option<StepInfo>> {
        let mut l = self.load(cluster_id)?;
        let name = run_name(name);
        let mut pages = self
            .client
            .list_job_runs()
            .virtual_cluster_id(&l.virtual_cluster_id)
            .name(&name)
            .into_paginator()
            .send();
        let mut found = None;
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| sdk("ListJobRuns", e))?;
            if let Some(r) = page
                .job_runs()
                .iter()
                .find(|r| r.name() == Some(name.as_str()))
            {
                found = r.id().map(String::from);
                break;
            }
        }
        let Some(id) = found else { return Ok(None) };
        if !l.runs.contains(&id) {
            l.runs.push(id.clone());
            self.save(&l)?;
        }
        Ok(Some(self.describe_run(cluster_id, &id).await?))
    }

    async fn step(&self, cluster_id: &str, step_id: &str) -> Result<StepInfo> {
        self.describe_run(cluster_id, step_id).await
    }

    async fn cancel(&self, cluster_id: &str, step_id: &str) -> Result<StepInfo> {
        let l = self.load(cluster_id)?;
        let now = self.describe_run(cluster_id, step_id).await?;
        if now.state.is_final() {
            return Ok(now);
        }
        self.client
            .cancel_job_run()
            .id(step_id)
            .virtual_cluster_id(&l.virtual_cluster_id)
            .send()
            .await
            .map_err(|e| sdk("CancelJobRun", e))?;
        // CANCEL_PENDING until the pods are gone
        let started = std::time::Instant::now();
        let mut every = std::time::Duration::from_millis(250);
        loop {
            let s = self.describe_run(cluster_id, step_id).await?;
            if s.state.is_final() || started.elapsed() > std::time::Duration::from_secs(120) {
                return Ok(s);
            }
            tokio::time::sleep(every).await;
            every = (every * 2).min(std::time::Duration::from_secs(5));
        }
    }

    async fn event_log(&self, cluster_id: &str, step_id: &str) -> Result<Option<String>> {
        let l = self.load(cluster_id)?;
        let run = self.job_run(&l.virtual_cluster_id, step_id).await?;
        self.job_run_event_log(&run).await
    }

    async fn driver_log(&self, cluster_id: &str, step_id: &str) -> Result<Option<String>> {
        let l = self.load(cluster_id)?;
        let run = self.job_run(&l.virtual_cluster_id, step_id).await?;
        self.job_run_driver_log(&run).await
    }
}

/// What a run on EMR on EKS cost: the node time it caused.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EksCost {
    /// GPU executor nodes: each executor's lifetime as its share of a node (GPUs per node
    /// executors share one), at the pool's price.
    pub executor_usd: f64,
    /// The driver's node (on-demand) for the application's duration.
    pub driver_usd: f64,
    /// Empty nodes kept for `consolidateAfter` after their pods ended.
    pub tail_usd: f64,
    pub total_usd: f64,
    /// Node-hours behind the figures.
    pub executor_node_hours: f64,
    pub driver_node_hours: f64,
    /// The executor price used and where it came from (`spot` or `on-demand (no spot price)`).
    pub executor_usd_per_hour: f64,
    pub executor_price: String,
    pub driver_usd_per_hour: f64,
}

/// What to price a run from.
#[derive(Clone, Debug, Default)]
pub struct EksCostInputs {
    /// Each executor's allocated time (added until removed, else the app's end), ms.
    pub executor_ms: Vec<i64>,
    /// Executors one GPU node holds (its GPUs: one GPU per executor).
    pub executors_per_node: i64,
    /// The executor pool's price: spot when known, else on-demand.
    pub executor_spot_usd_per_hour: Option<f64>,
    pub executor_on_demand_usd_per_hour: f64,
    /// The driver's node, on-demand.
    pub driver_usd_per_hour: f64,
    /// The application's duration (the driver pod's life), ms.
    pub driver_ms: i64,
    pub consolidate_after_s: i64,
}

/// The node time a run caused, priced.
pub fn eks_cost(i: &EksCostInputs) -> EksCost {
    let per_node = i.executors_per_node.max(1) as f64;
    let (exec_price, source) = match i.executor_spot_usd_per_hour {
        Some(p) => (p, "spot"),
        None => (
            i.executor_on_demand_usd_per_hour,
            "on-demand (no spot price in the catalog)",
        ),
    };
    let h = |ms: f64| ms / 3_600_000.0;
    let exec_ms: f64 = i.executor_ms.iter().map(|&m| m.max(0) as f64).sum();
    let executor_node_hours = h(exec_ms) / per_node;
    let driver_node_hours = h(i.driver_ms.max(0) as f64);
    // each executor node, and the driver's, stays consolidateAfter after it is empty
    let tail_ms = i.consolidate_after_s.max(0) as f64 * 1000.0;
    let exec_nodes = (i.executor_ms.len() as f64 / per_node).ceil();
    let tail_usd = h(tail_ms)
        * (exec_nodes * exec_price
            + if i.driver_ms > 0 {
                i.driver_usd_per_hour
            } else {
                0.0
            });
    let executor_usd = executor_node_hours * exec_price;
    let driver_usd = driver_node_hours * i.driver_usd_per_hour;
    EksCost {
        executor_usd,
        driver_usd,
        tail_usd,
        total_usd: executor_usd + driver_usd + tail_usd,
        executor_node_hours,
        driver_node_hours,
        executor_usd_per_hour: exec_price,
        executor_price: source.into(),
        driver_usd_per_hour: i.driver_usd_per_hour,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_names_fit_emr_on_eks() {
        assert_eq!(
            run_name("aether job 3 config 7 job3-1764547200000"),
            "aether-job-3-config-7-job3-1764547200000"
        );
        let long = format!("aether job 1 config 2 {}", "x".repeat(80));
        let n = run_name(&long);
        assert_eq!(n.len(), 64);
        assert!(n.ends_with("xxxx"));
        assert!(
            run_name("a b\tc<>d")
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-/#".contains(c))
        );
    }

    #[test]
    fn submit_parameters_keep_the_platform_s_own() {
        let job = crate::JobDefinition::parse(
            "spark-submit --master yarn --deploy-mode cluster --py-files s3://c/lib.zip \
             --conf spark.eventLog.dir=hdfs:///x --conf spark.sql.shuffle.partitions=8 s3://c/job.py in out",
        )
        .unwrap();
        let mut conf = BTreeMap::new();
        conf.insert("spark.sql.shuffle.partitions".into(), "64".into());
        conf.insert(
            "spark.rapids.memory.pinnedPool.size".into(),
            "[FILL_IN_VALUE]".into(),
        );
        conf.insert("spark.executor.instances".into(), "3".into());
        let p = submit_parameters(&job, &conf, 2).unwrap();
        let text = p.join(" ");
        assert!(text.starts_with("--py-files s3://c/lib.zip "), "{text}");
        assert!(text.contains("spark.sql.shuffle.partitions=64"), "{text}");
        assert!(!text.contains("spark.sql.shuffle.partitions=8"), "{text}");
        // the run's executor count wins over the shape's; placeholders and the platform's keys go
        assert!(text.contains("spark.executor.instances=3"), "{text}");
        assert!(!text.contains("FILL_IN"), "{text}");
        assert!(!text.contains("eventLog"), "{text}");
        assert!(
            !text.contains("--master") && !text.contains("--deploy-mode"),
            "{text}"
        );
        assert!(
            text.contains("spark.executor.resource.gpu.vendor=nvidia.com"),
            "{text}"
        );
        assert!(
            text.contains("spark.plugins=com.nvidia.spark.SQLPlugin"),
            "{text}"
        );
        // one string that splits back into the same words
        let words = crate::jobdef::split_words(&join_words(&p));
        assert_eq!(words, p);
        let odd = vec!["--conf".to_string(), "spark.x=a b 'c'".to_string()];
        assert_eq!(crate::jobdef::split_words(&join_words(&odd)), odd);
    }

    #[test]
    fn the_cost_of_node_time() {
        // 3 executors on 1-GPU nodes: 600 s, 300 s and 120 s; driver 700 s; 30 s tail each
        let c = eks_cost(&EksCostInputs {
            executor_ms: vec![600_000, 300_000, 120_000],
            executors_per_node: 1,
            executor_spot_usd_per_hour: Some(0.36),
            executor_on_demand_usd_per_hour: 0.752,
            driver_usd_per_hour: 0.226,
            driver_ms: 700_000,
            consolidate_after_s: 30,
        });
        let exec = 1020.0 / 3600.0 * 0.36;
        let drv = 700.0 / 3600.0 * 0.226;
        let tail = 30.0 / 3600.0 * (3.0 * 0.36 + 0.226);
        assert!((c.executor_usd - exec).abs() < 1e-12, "{c:?}");
        assert!((c.driver_usd - drv).abs() < 1e-12);
        assert!((c.tail_usd - tail).abs() < 1e-12);
        assert!((c.total_usd - (exec + drv + tail)).abs() < 1e-12);
        assert_eq!(c.executor_price, "spot");
        // no spot price: on-demand; 4-GPU nodes hold 4 executors (a quarter node each)
        let c = eks_cost(&EksCostInputs {
            executor_ms: vec![3_600_000; 4],
            executors_per_node: 4,
            executor_spot_usd_per_hour: None,
            executor_on_demand_usd_per_hour: 4.0,
            driver_usd_per_hour: 0.2,
            driver_ms: 3_600_000,
            consolidate_after_s: 0,
        });
        assert!((c.executor_node_hours - 1.0).abs() < 1e-12);
        assert!((c.total_usd - 4.2).abs() < 1e-12, "{c:?}");
        assert!(c.executor_price.starts_with("on-demand"));
    }
}
