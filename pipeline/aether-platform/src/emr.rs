//! The EMR backend (aws-sdk-emr): GPU test clusters for the RAPIDS Accelerator on EMR 7.
//!
//! Credentials, region and endpoints come from the SDK's standard configuration (the credential
//! chain and profiles, `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_EMR`, a profile's `endpoint_url`),
//! so every command works unchanged against an emulator. This part creates, describes, lists
//! and terminates clusters and submits, polls and cancels steps (`command-runner.jar`
//! spark-submit); fetching a step's event and driver logs from S3 comes next.
//!
//! A cluster is what AWS documents for the RAPIDS Accelerator on EMR 7: applications Hadoop and
//! Spark, the `spark` (enableSparkRapids), `yarn-site` (GPU resource plugin, cgroups mount),
//! `container-executor` (gpu, cgroups), `capacity-scheduler` (DominantResourceCalculator) and
//! `spark-defaults` (the plugin, the GPU discovery script, the event-log folder) classifications,
//! the cgroup bootstrap action, an on-demand primary node and on-demand GPU core nodes, kept
//! alive for steps but ended by an **idle auto-termination policy** (idle GPU nodes are the
//! largest avoidable cost of a migration's tests), tagged with aether's job id and request token.

use crate::{
    ClusterBackend, ClusterInfo, ClusterSpec, ClusterState, PlatformError, Result, StepInfo,
    StepRequest, StepState,
};
use async_trait::async_trait;
use aws_sdk_emr::Client;
use aws_sdk_emr::types::{
    ActionOnFailure, Application, AutoTerminationPolicy, BootstrapActionConfig,
    ClusterState as EmrState, Configuration, HadoopJarStepConfig, InstanceGroupConfig,
    InstanceRoleType, JobFlowInstancesConfig, MarketType, ScriptBootstrapActionConfig, StepConfig,
    StepState as EmrStepState, Tag,
};
use std::collections::HashMap;

/// What a cluster needs beyond its shape (the `platform.emr.*` settings).
#[derive(Clone, Debug)]
pub struct EmrSettings {
    /// EMR 7.x release label.
    pub release_label: String,
    /// `LogUri` (`platform.emr.cluster.log_path`).
    pub log_uri: Option<String>,
    /// Where the bootstrap action lives (`platform.emr.cluster.artifacts_path`).
    pub artifacts_path: Option<String>,
    /// `spark.eventLog.dir` of the cluster (`platform.emr.spark_event_log_dir`, S3).
    pub spark_event_log_dir: Option<String>,
    /// Idle seconds after which EMR ends the cluster.
    pub idle_timeout_s: i64,
    /// The primary node's instance type.
    pub primary_instance_type: String,
    pub service_role: String,
    pub job_flow_role: String,
}

impl Default for EmrSettings {
    fn default() -> Self {
        EmrSettings {
            release_label: "emr-7.9.0".into(),
            log_uri: None,
            artifacts_path: None,
            spark_event_log_dir: None,
            idle_timeout_s: 3600,
            primary_instance_type: "m5.xlarge".into(),
            service_role: "EMR_DefaultRole".into(),
            job_flow_role: "EMR_EC2_DefaultRole".into(),
        }
    }
}

/// The cgroup folder the RAPIDS Accelerator's YARN isolation uses on EMR 7.
const CGROUP_ROOT: &str = "/spark-rapids-cgroup";

/// The bootstrap action AWS documents for EMR 7 (cgroup v1 devices for YARN's GPU isolation).
pub const CGROUP_BOOTSTRAP: &str = "#!/bin/bash\nset -ex\n\
sudo mkdir -p /spark-rapids-cgroup/devices\n\
sudo mount -t cgroup -o devices cgroupv1-devices /spark-rapids-cgroup/devices\n\
sudo chmod a+rwx -R /spark-rapids-cgroup\n";

fn classification(name: &str, props: &[(&str, &str)]) -> Configuration {
    Configuration::builder()
        .classification(name)
        .set_properties(Some(
            props
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ))
        .build()
}

/// The configuration classifications of a RAPIDS GPU cluster on EMR 7.
pub fn rapids_configurations(s: &EmrSettings) -> Vec<Configuration> {
    let mut spark_defaults = vec![
        ("spark.plugins", "com.nvidia.spark.SQLPlugin"),
        (
            "spark.executor.resource.gpu.discoveryScript",
            "/usr/lib/spark/scripts/gpu/getGpusResources.sh",
        ),
        ("spark.eventLog.enabled", "true"),
    ];
    if let Some(d) = &s.spark_event_log_dir {
        spark_defaults.push(("spark.eventLog.dir", d.as_str()));
    }
    let container_executor = Configuration::builder()
        .classification("container-executor")
        .configurations(classification("gpu", &[("module.enabled", "true")]))
        .configurations(classification(
            "cgroups",
            &[("root", CGROUP_ROOT), ("yarn-hierarchy", "yarn")],
        ))
        .set_properties(Some(HashMap::new()))
        .build();
    vec![
        classification("spark", &[("enableSparkRapids", "true")]),
        classification(
            "yarn-site",
            &[
                ("yarn.nodemanager.resource-plugins", "yarn.io/gpu"),
                ("yarn.resource-types", "yarn.io/gpu"),
                (
                    "yarn.nodemanager.resource-plugins.gpu.allowed-gpu-devices",
                    "auto",
                ),
                (
                    "yarn.nodemanager.resource-plugins.gpu.path-to-discovery-executables",
                    "/usr/bin",
                ),
                (
                    "yarn.nodemanager.linux-container-executor.cgroups.mount",
                    "true",
                ),
                (
                    "yarn.nodemanager.linux-container-executor.cgroups.mount-path",
                    CGROUP_ROOT,
                ),
                (
                    "yarn.nodemanager.linux-container-executor.cgroups.hierarchy",
                    "yarn",
                ),
                (
                    "yarn.nodemanager.container-executor.class",
                    "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor",
                ),
            ],
        ),
        container_executor,
        classification(
            "capacity-scheduler",
            &[(
                "yarn.scheduler.capacity.resource-calculator",
                "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator",
            )],
        ),
        classification("spark-defaults", &spark_defaults),
    ]
}

fn other(e: impl std::fmt::Display) -> PlatformError {
    PlatformError::Other(e.to_string())
}

/// The full text of an SDK error (service code and message, not just "service error").
fn sdk(what: &str, e: impl std::error::Error) -> PlatformError {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    PlatformError::Other(format!("EMR {what}: {msg}"))
}

fn state_of(s: Option<&EmrState>) -> ClusterState {
    match s {
        Some(EmrState::Starting) | Some(EmrState::Bootstrapping) => ClusterState::Starting,
        Some(EmrState::Running) => ClusterState::Running,
        Some(EmrState::Waiting) => ClusterState::Waiting,
        Some(EmrState::Terminating) => ClusterState::Terminating,
        Some(EmrState::TerminatedWithErrors) => ClusterState::TerminatedWithErrors,
        Some(EmrState::Terminated) => ClusterState::Terminated,
        _ => ClusterState::Starting,
    }
}

/// The EMR backend.
pub struct EmrBackend {
    client: Client,
    settings: EmrSettings,
}

impl EmrBackend {
    /// A backend from the SDK's standard configuration, in `region` when given.
    pub async fn from_env(region: Option<String>, settings: EmrSettings) -> EmrBackend {
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
        if let Some(r) = region {
            loader = loader.region(aws_config::Region::new(r));
        }
        let conf = loader.load().await;
        EmrBackend {
            client: Client::new(&conf),
            settings,
        }
    }

    /// The cluster a request token already made, if any (its tag on a cluster not yet ended).
    async fn find_by_token(&self, token: &str) -> Result<Option<ClusterInfo>> {
        let mut pages = self
            .client
            .list_clusters()
            .cluster_states(EmrState::Starting)
            .cluster_states(EmrState::Bootstrapping)
            .cluster_states(EmrState::Running)
            .cluster_states(EmrState::Waiting)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| sdk("ListClusters", e))?;
            for c in page.clusters() {
                let Some(id) = c.id() else { continue };
                let info = self.describe(id).await?;
                if info
                    .spec
                    .tags
                    .get("aether:request-token")
                    .map(String::as_str)
                    == Some(token)
                {
                    return Ok(Some(info));
                }
            }
        }
        Ok(None)
    }
}

#[async_trait]
impl ClusterBackend for EmrBackend {
    fn name(&self) -> &'static str {
        "emr"
    }

    async fn create(&self, spec: &ClusterSpec, request_token: &str) -> Result<ClusterInfo> {
        // RunJobFlow is not idempotent: a retried create finds the cluster its token made
        if !request_token.is_empty()
            && let Some(c) = self.find_by_token(request_token).await?
        {
            return Ok(c);
        }
        let s = &self.settings;
        let instance_type = spec
            .instance_type
            .clone()
            .ok_or_else(|| other("an EMR cluster needs the GPU instance type of its shape"))?;
        let group = |name: &str, role: InstanceRoleType, ty: &str, n: i64| {
            InstanceGroupConfig::builder()
                .name(name)
                .instance_role(role)
                .market(MarketType::OnDemand)
                .instance_type(ty)
                .instance_count(n as i32)
                .build()
        };
        let instances = JobFlowInstancesConfig::builder()
            .instance_groups(group(
                "Primary",
                InstanceRoleType::Master,
                &s.primary_instance_type,
                1,
            ))
            .instance_groups(group(
                "Core GPU",
                InstanceRoleType::Core,
                &instance_type,
                spec.instance_count.max(1),
            ))
            .keep_job_flow_alive_when_no_steps(true)
            .build();
        let mut tags = spec.tags.clone();
        tags.insert("aether:request-token".into(), request_token.to_string());
        let mut req = self
            .client
            .run_job_flow()
            .name(&spec.name)
            .release_label(&s.release_label)
            .applications(Application::builder().name("Hadoop").build())
            .applications(Application::builder().name("Spark").build())
            .set_configurations(Some(rapids_configurations(s)))
            .instances(instances)
            .auto_termination_policy(
                AutoTerminationPolicy::builder()
                    .idle_timeout(s.idle_timeout_s)
                    .build(),
            )
            .service_role(&s.service_role)
            .job_flow_role(&s.job_flow_role)
            .visible_to_all_users(true)
            .set_tags(Some(
                tags.iter()
                    .map(|(k, v)| Tag::builder().key(k).value(v).build())
                    .collect(),
            ))
            .set_log_uri(s.log_uri.clone());
        if let Some(a) = &s.artifacts_path {
            req = req.bootstrap_actions(
                BootstrapActionConfig::builder()
                    .name("RAPIDS cgroup (YARN GPU isolation)")
                    .script_bootstrap_action(
                        ScriptBootstrapActionConfig::builder()
                            .path(format!(
                                "{}/cgroup-bootstrap-action.sh",
                                a.trim_end_matches('/')
                            ))
                            .build(),
                    )
                    .build(),
            );
        }
        let out = req.send().await.map_err(|e| sdk("RunJobFlow", e))?;
        let id = out
            .job_flow_id()
            .ok_or_else(|| other("EMR RunJobFlow answered without a cluster id"))?;
        // a create that fails after the cluster exists ends it: nothing is left running
        match self.describe(id).await {
            Ok(c) => Ok(c),
            Err(e) => {
                let _ = self.terminate(id).await;
                Err(e)
            }
        }
    }

    async fn describe(&self, cluster_id: &str) -> Result<ClusterInfo> {
        let out = self
            .client
            .describe_cluster()
            .cluster_id(cluster_id)
            .send()
            .await
            .map_err(|e| {
                let text = sdk("DescribeCluster", e).to_string();
                if text.contains("InvalidRequest")
                    || text.contains("not valid")
                    || text.contains("does not exist")
                {
                    PlatformError::UnknownCluster(cluster_id.to_string())
                } else {
                    PlatformError::Other(text)
                }
            })?;
        let c = out
            .cluster()
            .ok_or_else(|| PlatformError::UnknownCluster(cluster_id.to_string()))?;
        let status = c.status();
        let tl = status.and_then(|s| s.timeline());
        let ms = |t: Option<&aws_sdk_emr::primitives::DateTime>| t.and_then(|t| t.to_millis().ok());
        let tags = c
            .tags()
            .iter()
            .filter_map(|t| Some((t.key()?.to_string(), t.value().unwrap_or("").to_string())))
            .collect();
        Ok(ClusterInfo {
            cluster_id: cluster_id.to_string(),
            backend: "emr".into(),
            state: state_of(status.and_then(|s| s.state())),
            spec: ClusterSpec {
                name: c.name().unwrap_or("").to_string(),
                shape_id: None,
                instance_type: None,
                instance_count: 0,
                local_cores: 0,
                tags,
            },
            created_ms: ms(tl.and_then(|t| t.creation_date_time())).unwrap_or(0),
            ended_ms: ms(tl.and_then(|t| t.end_date_time())),
            state_reason: status
                .and_then(|s| s.state_change_reason())
                .and_then(|r| r.message())
                .map(String::from),
        })
    }

    async fn list(&self) -> Result<Vec<ClusterInfo>> {
        let mut out = Vec::new();
        let mut pages = self.client.list_clusters().into_paginator().send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| sdk("ListClusters", e))?;
            for c in page.clusters() {
                if let Some(id) = c.id() {
                    out.push(self.describe(id).await?);
                }
            }
        }
        out.sort_by_key(|c| c.created_ms);
        Ok(out)
    }

    async fn terminate(&self, cluster_id: &str) -> Result<ClusterInfo> {
        self.describe(cluster_id).await?;
        self.client
            .terminate_job_flows()
            .job_flow_ids(cluster_id)
            .send()
            .await
            .map_err(|e| sdk("TerminateJobFlows", e))?;
        self.describe(cluster_id).await
    }

    async fn submit(&self, cluster_id: &str, step: &StepRequest) -> Result<StepInfo> {
        let c = self.describe(cluster_id).await?;
        if c.state.is_ended() {
            return Err(PlatformError::NotRunning {
                cluster: cluster_id.to_string(),
                state: c.state.as_str().to_string(),
            });
        }
        // the job's confs and the run's over them; placeholders never reach Spark
        let conf: std::collections::BTreeMap<String, String> = step
            .conf
            .iter()
            .filter(|(_, v)| !crate::is_placeholder(v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut job = step.job.clone();
        job.conf.retain(|_, v| !crate::is_placeholder(v));
        let mut args = vec!["spark-submit".to_string()];
        args.extend(job.submit_args(&conf));
        let jar = HadoopJarStepConfig::builder()
            .jar("command-runner.jar")
            .set_args(Some(args))
            .build();
        let cfg = StepConfig::builder()
            .name(&step.name)
            .action_on_failure(ActionOnFailure::Continue)
            .hadoop_jar_step(jar)
            .build();
        let out = self
            .client
            .add_job_flow_steps()
            .job_flow_id(cluster_id)
            .steps(cfg)
            .send()
            .await
            .map_err(|e| sdk("AddJobFlowSteps", e))?;
        let id = out
            .step_ids()
            .first()
            .ok_or_else(|| other("EMR AddJobFlowSteps answered without a step id"))?;
        self.step(cluster_id, id).await
    }

    async fn step(&self, cluster_id: &str, step_id: &str) -> Result<StepInfo> {
        let out = self
            .client
            .describe_step()
            .cluster_id(cluster_id)
            .step_id(step_id)
            .send()
            .await
            .map_err(|e| {
                let text = sdk("DescribeStep", e).to_string();
                if text.contains("InvalidRequest") || text.contains("not valid") {
                    PlatformError::UnknownStep {
                        cluster: cluster_id.to_string(),
                        step: step_id.to_string(),
                    }
                } else {
                    PlatformError::Other(text)
                }
            })?;
        let s = out.step().ok_or_else(|| PlatformError::UnknownStep {
            cluster: cluster_id.to_string(),
            step: step_id.to_string(),
        })?;
        let status = s.status();
        let tl = status.and_then(|x| x.timeline());
        let ms = |t: Option<&aws_sdk_emr::primitives::DateTime>| t.and_then(|t| t.to_millis().ok());
        let state = match status.and_then(|x| x.state()) {
            Some(EmrStepState::Running) | Some(EmrStepState::CancelPending) => StepState::Running,
            Some(EmrStepState::Completed) => StepState::Completed,
            Some(EmrStepState::Failed) => StepState::Failed,
            Some(EmrStepState::Cancelled) => StepState::Cancelled,
            Some(EmrStepState::Interrupted) => StepState::Interrupted,
            _ => StepState::Pending,
        };
        let failure = status.and_then(|x| x.failure_details()).map(|f| {
            [f.reason(), f.message(), f.log_file()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("; ")
        });
        Ok(StepInfo {
            cluster_id: cluster_id.to_string(),
            step_id: step_id.to_string(),
            state,
            start_ms: ms(tl.and_then(|t| t.start_date_time()))
                .or_else(|| ms(tl.and_then(|t| t.creation_date_time()))),
            end_ms: ms(tl.and_then(|t| t.end_date_time())),
            failure_reason: failure.filter(|f| !f.is_empty()),
            args: s.config().map(|c| c.args().to_vec()).unwrap_or_default(),
        })
    }

    async fn cancel(&self, cluster_id: &str, step_id: &str) -> Result<StepInfo> {
        self.client
            .cancel_steps()
            .cluster_id(cluster_id)
            .step_ids(step_id)
            .send()
            .await
            .map_err(|e| sdk("CancelSteps", e))?;
        self.step(cluster_id, step_id).await
    }

    async fn event_log(&self, _cluster_id: &str, _step_id: &str) -> Result<Option<String>> {
        Err(steps_not_yet())
    }

    async fn driver_log(&self, _cluster_id: &str, _step_id: &str) -> Result<Option<String>> {
        Err(steps_not_yet())
    }
}

fn steps_not_yet() -> PlatformError {
    PlatformError::Other(
        "steps on EMR are not in this build yet (clusters are); run steps with --platform local"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rapids_classifications_of_emr_7() {
        let s = EmrSettings {
            spark_event_log_dir: Some("s3://b/spark-logs/".into()),
            ..Default::default()
        };
        let c = rapids_configurations(&s);
        let by = |n: &str| c.iter().find(|x| x.classification() == Some(n)).unwrap();
        let prop = |n: &str, k: &str| by(n).properties().and_then(|p| p.get(k)).cloned();
        assert_eq!(prop("spark", "enableSparkRapids").as_deref(), Some("true"));
        assert_eq!(
            prop("yarn-site", "yarn.nodemanager.resource-plugins").as_deref(),
            Some("yarn.io/gpu")
        );
        assert_eq!(
            prop(
                "yarn-site",
                "yarn.nodemanager.linux-container-executor.cgroups.mount-path"
            )
            .as_deref(),
            Some(CGROUP_ROOT)
        );
        assert!(
            prop(
                "capacity-scheduler",
                "yarn.scheduler.capacity.resource-calculator"
            )
            .unwrap()
            .ends_with("DominantResourceCalculator")
        );
        assert_eq!(
            prop("spark-defaults", "spark.plugins").as_deref(),
            Some("com.nvidia.spark.SQLPlugin")
        );
        assert_eq!(
            prop("spark-defaults", "spark.eventLog.dir").as_deref(),
            Some("s3://b/spark-logs/")
        );
        let ce = by("container-executor").configurations();
        assert_eq!(ce.len(), 2);
        assert!(CGROUP_BOOTSTRAP.contains("mount -t cgroup -o devices"));
    }
}
