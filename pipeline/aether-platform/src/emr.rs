//! The EMR backend (aws-sdk-emr): GPU test clusters for the RAPIDS Accelerator on EMR 7.
//!
//! Credentials, region and endpoints come from the SDK's standard configuration (the credential
//! chain and profiles, `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_EMR`, a profile's `endpoint_url`),
//! so every command works unchanged against an emulator (`tests/emr-emulator`). It creates,
//! describes, lists and terminates clusters, submits, polls and cancels steps
//! (`command-runner.jar` spark-submit), and finds a step's logs in S3: its stderr under
//! `LogUri/<cluster>/steps/<step>/stderr.gz`, the YARN application id in it, and the event log
//! of that application under the cluster's `spark.eventLog.dir`.
//!
//! RunJobFlow and AddJobFlowSteps are not idempotent: they are sent without the SDK's retries
//! and retried here only after looking for what the lost attempt may have made (the cluster by
//! its request-token tag, the step by its name). Every other call has the SDK's standard
//! retries for throttling and 5xx answers.
//!
//! A cluster is what AWS documents for the RAPIDS Accelerator on EMR 7: applications Hadoop and
//! Spark, the `spark` (enableSparkRapids), `yarn-site` (GPU resource plugin, cgroups mount),
//! `container-executor` (gpu, cgroups), `capacity-scheduler` (DominantResourceCalculator) and
//! `spark-defaults` (the plugin, the GPU discovery script, the event-log folder) classifications,
//! the cgroup bootstrap action, an on-demand primary node and on-demand GPU core nodes, kept
//! alive for steps but ended by an **idle auto-termination policy** (idle GPU nodes are the
//! largest avoidable cost of a migration's tests), tagged with aether's job id and request token.

use crate::clusterfile::GroupSpec;
use crate::{
    ClusterBackend, ClusterInfo, ClusterSpec, ClusterState, PlatformError, Result, StepInfo,
    StepRequest, StepState, io,
};
use async_trait::async_trait;
use aws_sdk_emr::Client;
use aws_sdk_emr::types::{
    ActionOnFailure, Application, AutoTerminationPolicy, BootstrapActionConfig,
    ClusterState as EmrState, Configuration, HadoopJarStepConfig, InstanceGroupConfig,
    InstanceRoleType, JobFlowInstancesConfig, MarketType, ScriptBootstrapActionConfig, StepConfig,
    StepState as EmrStepState, Tag,
};
use std::collections::{BTreeMap, HashMap};

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
    /// EMR's service role (`ServiceRole`).
    pub service_role: String,
    /// The nodes' EC2 instance profile (`JobFlowRole`).
    pub job_flow_role: String,
    /// The account's network: subnets, security groups, key pair.
    pub network: Network,
    /// An EMR security configuration (encryption, Kerberos, …) by name.
    pub security_configuration: Option<String>,
    /// Tags every cluster carries (the account's cost allocation, owner, …).
    pub tags: std::collections::BTreeMap<String, String>,
}

/// Where a cluster's nodes go (`JobFlowInstancesConfig`): none set is AWS's default, the
/// region's default VPC, which many production accounts do not have.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Network {
    /// One subnet (`Ec2SubnetId`), or several for EMR to pick the one with capacity
    /// (`Ec2SubnetIds`: the cluster is then made of instance fleets, which take them).
    pub subnet_ids: Vec<String>,
    /// `EmrManagedMasterSecurityGroup`.
    pub primary_security_group: Option<String>,
    /// `EmrManagedSlaveSecurityGroup`.
    pub core_security_group: Option<String>,
    /// `ServiceAccessSecurityGroup` (private subnets).
    pub service_access_security_group: Option<String>,
    /// `AdditionalMasterSecurityGroups` and `AdditionalSlaveSecurityGroups`.
    pub additional_security_groups: Vec<String>,
    /// `Ec2KeyName`: the EC2 key pair for SSH to the nodes.
    pub key_name: Option<String>,
}

impl EmrSettings {
    /// These settings with a `--config_file`'s fields over them (the file wins field by field).
    pub fn with_file(&self, f: &crate::clusterfile::ClusterFile) -> EmrSettings {
        let mut s = self.clone();
        if let Some(r) = &f.emr_release {
            s.release_label = r.clone();
        }
        if let Some(t) = f.idle_timeout_seconds {
            s.idle_timeout_s = t;
        }
        if let Some(v) = &f.ec2_subnet_ids {
            s.network.subnet_ids = v.clone();
        }
        let n = &mut s.network;
        for (to, from) in [
            (
                &mut n.primary_security_group,
                &f.emr_managed_master_security_group,
            ),
            (
                &mut n.core_security_group,
                &f.emr_managed_slave_security_group,
            ),
            (
                &mut n.service_access_security_group,
                &f.service_access_security_group,
            ),
            (&mut n.key_name, &f.ec2_key_name),
            (&mut s.security_configuration, &f.security_configuration),
        ] {
            if from.is_some() {
                to.clone_from(from);
            }
        }
        if let Some(v) = &f.additional_security_groups {
            s.network.additional_security_groups = v.clone();
        }
        if let Some(r) = &f.service_role {
            s.service_role = r.clone();
        }
        if let Some(r) = &f.job_flow_role {
            s.job_flow_role = r.clone();
        }
        s.tags.extend(f.tags.clone());
        s
    }
}

impl Default for EmrSettings {
    fn default() -> Self {
        EmrSettings {
            release_label: "emr-7.9.0".into(),
            log_uri: None,
            artifacts_path: None,
            spark_event_log_dir: None,
            idle_timeout_s: 3600,
            primary_instance_type: "m5d.xlarge".into(),
            service_role: DEFAULT_SERVICE_ROLE.into(),
            job_flow_role: DEFAULT_INSTANCE_PROFILE.into(),
            network: Network::default(),
            security_configuration: None,
            tags: Default::default(),
        }
    }
}

/// EMR's service role when none is set: the one `aws emr create-default-roles` makes.
pub const DEFAULT_SERVICE_ROLE: &str = "EMR_DefaultRole";
/// The nodes' instance profile when none is set (`aws emr create-default-roles`).
pub const DEFAULT_INSTANCE_PROFILE: &str = "EMR_EC2_DefaultRole";

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
    let mut spark_defaults = crate::rapids::cluster_defaults();
    spark_defaults.push(("spark.eventLog.enabled", "true"));
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

/// The full text of an SDK error (service code and message, not just "service error"), for
/// any AWS SDK client (they share the smithy error types): `<service> <what>: <code>: <message>`.
pub(crate) fn sdk_error<E, R>(
    service: &str,
    what: &str,
    e: aws_sdk_emr::error::SdkError<E, R>,
) -> PlatformError
where
    E: aws_sdk_emr::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    use aws_sdk_emr::error::ProvideErrorMetadata;
    if let (Some(code), Some(message)) = (e.code(), e.message()) {
        return PlatformError::Other(format!("{service} {what}: {code}: {message}"));
    }
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    PlatformError::Other(format!("{service} {what}: {msg}"))
}

fn sdk<E, R>(what: &str, e: aws_sdk_emr::error::SdkError<E, R>) -> PlatformError
where
    E: aws_sdk_emr::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    sdk_error("EMR", what, e)
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
    /// S3 (step logs, event logs): the same region and endpoint settings.
    s3: aether_ingest::S3Options,
    /// The instance types each release supports, as EMR answered (asked once per release: the
    /// workflow's `check` and `create`'s own ask the same).
    supported: std::sync::Mutex<HashMap<String, BTreeMap<String, i32>>>,
}

impl EmrBackend {
    /// A backend from the SDK's standard configuration, in `region` when given.
    pub async fn from_env(region: Option<String>, settings: EmrSettings) -> EmrBackend {
        let conf = crate::aws_loader(region).load().await;
        EmrBackend {
            client: Client::new(&conf),
            s3: aether_ingest::S3Options {
                region: conf.region().map(|r| r.to_string()),
                endpoint: None,
            },
            settings,
            supported: Default::default(),
        }
    }

    /// The instance types EMR `release` supports in the region, with their vCPUs.
    async fn supported_types(&self, release: &str) -> Result<BTreeMap<String, i32>> {
        let known = self
            .supported
            .lock()
            .ok()
            .and_then(|m| m.get(release).cloned());
        if let Some(t) = known {
            return Ok(t);
        }
        let types: BTreeMap<String, i32> = supported_instance_types(&self.client, release)
            .await?
            .into_iter()
            .collect();
        if let Ok(mut m) = self.supported.lock() {
            m.insert(release.to_string(), types.clone());
        }
        Ok(types)
    }

    /// A step of the cluster named `name`, if any (the newest).
    async fn find_step_id(&self, cluster_id: &str, name: &str) -> Result<Option<String>> {
        let mut pages = self
            .client
            .list_steps()
            .cluster_id(cluster_id)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| sdk("ListSteps", e))?;
            if let Some(s) = page.steps().iter().find(|s| s.name() == Some(name)) {
                return Ok(s.id().map(String::from));
            }
        }
        Ok(None)
    }

    /// The first cluster `req` lists that carries request token `token`.
    async fn tagged(
        &self,
        req: aws_sdk_emr::operation::list_clusters::builders::ListClustersFluentBuilder,
        token: &str,
    ) -> Result<Option<ClusterInfo>> {
        let mut pages = req.into_paginator().send();
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

    /// `LogUri/<cluster>/steps/<step>/<file>`, where EMR puts a step's logs.
    async fn step_log_url(
        &self,
        cluster_id: &str,
        step_id: &str,
        file: &str,
    ) -> Result<Option<String>> {
        let c = self.raw_cluster(cluster_id).await?;
        let Some(uri) = c
            .log_uri()
            .map(String::from)
            .or_else(|| self.settings.log_uri.clone())
        else {
            return Ok(None);
        };
        Ok(Some(format!(
            "{}/{cluster_id}/steps/{step_id}/{file}",
            uri.trim_end_matches('/')
        )))
    }

    /// The YARN application id of a step, from its stderr (`None` until EMR put the log).
    pub async fn application_id(&self, cluster_id: &str, step_id: &str) -> Result<Option<String>> {
        let Some(url) = self.step_log_url(cluster_id, step_id, "stderr.gz").await? else {
            return Err(other(format!(
                "cluster {cluster_id} has no LogUri (platform.emr.cluster.log_path): its steps' logs, \
                 and so their application ids, are not kept"
            )));
        };
        let Some(bytes) = read_object(&self.s3, &url).await? else {
            return Ok(None);
        };
        let mut text = String::new();
        use std::io::Read;
        flate2::read::MultiGzDecoder::new(bytes.as_slice())
            .read_to_string(&mut text)
            .map_err(|e| io(&url, e))?;
        application_id_in(&text)
            .map(Some)
            .ok_or_else(|| other(format!("{url}: no YARN application id (\"Submitted application application_…\") in the step's stderr")))
    }

    /// A `spark-defaults` property the cluster was made with.
    async fn cluster_conf(&self, cluster_id: &str, key: &str) -> Result<Option<String>> {
        let c = self.raw_cluster(cluster_id).await?;
        Ok(c.configurations()
            .iter()
            .filter(|x| x.classification() == Some("spark-defaults"))
            .find_map(|x| x.properties().and_then(|p| p.get(key)).cloned()))
    }

    async fn raw_cluster(&self, cluster_id: &str) -> Result<aws_sdk_emr::types::Cluster> {
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
        out.cluster
            .ok_or_else(|| PlatformError::UnknownCluster(cluster_id.to_string()))
    }
}

impl EmrBackend {
    /// The settings a cluster of `spec` is made with: the backend's, its `--config_file`'s
    /// over them.
    fn settings_for(&self, spec: &ClusterSpec) -> EmrSettings {
        match &spec.file {
            Some(f) => self.settings.with_file(f),
            None => self.settings.clone(),
        }
    }

    /// Puts the cgroup bootstrap action under the artifacts path: its URL.
    async fn put_bootstrap(&self, s: &EmrSettings) -> Result<String> {
        use object_store::ObjectStoreExt;
        let url = bootstrap_url(s)?;
        let loc = aether_ingest::source::s3_location(&url, &self.s3).map_err(|e| io(&url, e))?;
        loc.store
            .put(
                &object_store::path::Path::from(loc.prefix.as_str()),
                object_store::PutPayload::from(CGROUP_BOOTSTRAP.as_bytes().to_vec()),
            )
            .await
            .map_err(|e| io(format!("putting the bootstrap action to {url}"), e))?;
        Ok(url)
    }
}

/// Where a cluster's cgroup bootstrap action goes: every RAPIDS cluster on EMR 7 needs it (its
/// YARN GPU isolation mounts `/spark-rapids-cgroup`), so no artifacts path, no cluster.
fn bootstrap_url(s: &EmrSettings) -> Result<String> {
    let a = s.artifacts_path.as_deref().ok_or_else(|| {
        other(
            "platform.emr.cluster.artifacts_path is not set: the cluster's cgroup bootstrap \
             action (YARN GPU isolation) is put there (aether config set \
             platform.emr.cluster.artifacts_path s3://bucket/prefix)",
        )
    })?;
    Ok(format!(
        "{}/cgroup-bootstrap-action.sh",
        a.trim_end_matches('/')
    ))
}

/// The nodes of a cluster: the `--config_file`'s groups, else an on-demand primary and the
/// shape's GPU core nodes.
fn groups_of(spec: &ClusterSpec, s: &EmrSettings) -> Result<Vec<GroupSpec>> {
    if let Some(g) = spec.file.as_ref().and_then(|f| f.instance_groups.clone()) {
        return Ok(g);
    }
    let instance_type = spec.instance_type.clone().ok_or_else(|| {
        other("an EMR cluster needs the GPU instance type of its shape (or instanceGroups in --config_file)")
    })?;
    Ok(vec![
        GroupSpec {
            name: "Primary".into(),
            role: Some("MASTER".into()),
            instance_type: s.primary_instance_type.clone(),
            instance_count: 1,
            ..Default::default()
        },
        GroupSpec {
            name: "Core GPU".into(),
            role: Some("CORE".into()),
            instance_type,
            instance_count: spec.instance_count.max(1),
            ..Default::default()
        },
    ])
}

/// NVIDIA GPU instance families the RAPIDS Accelerator runs on.
const NVIDIA_FAMILIES: &[&str] = &[
    "g4dn", "g5", "g6", "g6e", "gr6", "p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en",
];

/// What to use instead of refused types: the supported sizes of their families, else the
/// supported NVIDIA GPU families.
fn alternatives(groups: &[GroupSpec], supported: &BTreeMap<String, i32>) -> String {
    let family = |t: &str| t.split('.').next().unwrap_or("").to_string();
    let mut same: Vec<String> = vec![];
    for g in groups
        .iter()
        .filter(|g| !supported.contains_key(&g.instance_type))
    {
        let f = family(&g.instance_type);
        let mut sizes: Vec<(&String, &i32)> =
            supported.iter().filter(|(t, _)| family(t) == f).collect();
        sizes.sort_by_key(|(_, v)| **v);
        same.extend(sizes.iter().map(|(t, v)| format!("{t} ({v} vCPUs)")));
    }
    if !same.is_empty() {
        return format!("supported instead: {}", same.join(", "));
    }
    let mut families: Vec<String> = supported
        .keys()
        .map(|t| family(t))
        .filter(|f| NVIDIA_FAMILIES.contains(&f.as_str()))
        .collect();
    families.dedup();
    if families.is_empty() {
        "no NVIDIA GPU instance type is supported there".into()
    } else {
        format!("NVIDIA GPU families supported: {}", families.join(", "))
    }
}

/// EMR ListSupportedInstanceTypes: the instance types `release` runs on in the client's
/// region, with their vCPUs.
pub(crate) async fn supported_instance_types(
    client: &Client,
    release: &str,
) -> Result<Vec<(String, i32)>> {
    let mut types = Vec::new();
    let mut marker = None;
    loop {
        let out = client
            .list_supported_instance_types()
            .release_label(release)
            .set_marker(marker)
            .send()
            .await
            .map_err(|e| sdk("ListSupportedInstanceTypes", e))?;
        types.extend(
            out.supported_instance_types()
                .iter()
                .filter_map(|t| Some((t.r#type()?.to_string(), t.vcpu().unwrap_or(0)))),
        );
        marker = out.marker().map(String::from);
        if marker.is_none() {
            return Ok(types);
        }
    }
}

#[async_trait]
impl ClusterBackend for EmrBackend {
    fn platform(&self) -> aether_core::config::RunOn {
        aether_core::config::RunOn::Emr
    }

    async fn check(&self, spec: &ClusterSpec) -> Result<()> {
        let s = self.settings_for(spec);
        let groups = groups_of(spec, &s)?;
        bootstrap_url(&s)?;
        let supported = self.supported_types(&s.release_label).await?;
        let region = self.s3.region.as_deref().unwrap_or("this region");
        let refused: Vec<String> = groups
            .iter()
            .filter(|g| !supported.contains_key(&g.instance_type))
            .map(|g| format!("{} ({})", g.instance_type, g.name))
            .collect();
        if refused.is_empty() {
            return Ok(());
        }
        Err(other(format!(
            "{} not supported by EMR {} in {region} (ListSupportedInstanceTypes): no cluster was \
             made; {}",
            refused.join(", "),
            s.release_label,
            alternatives(&groups, &supported)
        )))
    }

    async fn create(&self, spec: &ClusterSpec, request_token: &str) -> Result<ClusterInfo> {
        // RunJobFlow is not idempotent: a retried create finds the cluster its token made
        if !request_token.is_empty()
            && let Some(c) = self.find_by_token(request_token).await?
        {
            return Ok(c);
        }
        // what EMR would refuse (instance types) or a GPU cluster cannot lack (its bootstrap
        // action), before the call that costs money
        self.check(spec).await?;
        let s = &self.settings_for(spec);
        let file = spec.file.clone().unwrap_or_default();
        let groups = groups_of(spec, s)?;
        let bootstrap = self.put_bootstrap(s).await?;
        let n = &s.network;
        // several subnets: EMR picks the one with capacity, which only instance fleets take
        let fleets = file.uses_fleets() || n.subnet_ids.len() > 1;
        let mut instances = JobFlowInstancesConfig::builder()
            .keep_job_flow_alive_when_no_steps(true)
            .set_ec2_key_name(n.key_name.clone())
            .set_emr_managed_master_security_group(n.primary_security_group.clone())
            .set_emr_managed_slave_security_group(n.core_security_group.clone())
            .set_service_access_security_group(n.service_access_security_group.clone());
        if !n.additional_security_groups.is_empty() {
            instances = instances
                .set_additional_master_security_groups(Some(n.additional_security_groups.clone()))
                .set_additional_slave_security_groups(Some(n.additional_security_groups.clone()));
        }
        if fleets {
            if !n.subnet_ids.is_empty() {
                instances = instances.set_ec2_subnet_ids(Some(n.subnet_ids.clone()));
            }
            for g in &groups {
                instances = instances.instance_fleets(fleet_config(g));
            }
        } else {
            instances = instances.set_ec2_subnet_id(n.subnet_ids.first().cloned());
            for g in &groups {
                instances = instances.instance_groups(group_config(g));
            }
        }
        let instances = instances.build();
        // the account's tags, then aether's (its job id and request token find the cluster)
        let mut tags = s.tags.clone();
        tags.extend(spec.tags.clone());
        tags.insert("aether:request-token".into(), request_token.to_string());
        let apps = file
            .applications
            .clone()
            .unwrap_or_else(|| vec!["Hadoop".into(), "Spark".into()]);
        let req = self
            .client
            .run_job_flow()
            .name(&spec.name)
            .release_label(&s.release_label)
            .set_applications(Some(
                apps.iter()
                    .map(|a| Application::builder().name(a).build())
                    .collect(),
            ))
            .set_configurations(Some(rapids_configurations(s)))
            .instances(instances)
            .auto_termination_policy(
                AutoTerminationPolicy::builder()
                    .idle_timeout(s.idle_timeout_s)
                    .build(),
            )
            .service_role(&s.service_role)
            .job_flow_role(&s.job_flow_role)
            .set_security_configuration(s.security_configuration.clone())
            .visible_to_all_users(true)
            .set_tags(Some(
                tags.iter()
                    .map(|(k, v)| Tag::builder().key(k).value(v).build())
                    .collect(),
            ))
            .set_log_uri(s.log_uri.clone())
            .bootstrap_actions(
                BootstrapActionConfig::builder()
                    .name("RAPIDS cgroup (YARN GPU isolation)")
                    .script_bootstrap_action(
                        ScriptBootstrapActionConfig::builder()
                            .path(bootstrap)
                            .build(),
                    )
                    .build(),
            );
        // RunJobFlow is sent without the SDK's retries: an answer lost after EMR made the
        // cluster would make a second one. Each retry first looks for the token's cluster.
        let mut attempt = 0;
        let out = loop {
            match req
                .clone()
                .customize()
                .config_override(no_retries())
                .send()
                .await
            {
                Ok(o) => break o,
                Err(e) if attempt + 1 < SEND_ATTEMPTS && transient(&e) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                    if !request_token.is_empty()
                        && let Some(c) = self.find_by_token(request_token).await?
                    {
                        return Ok(c);
                    }
                }
                Err(e) => return Err(sdk("RunJobFlow", e)),
            }
        };
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

    /// The cluster a request token already made, if any (its tag on a cluster not yet ended).
    async fn find_by_token(&self, token: &str) -> Result<Option<ClusterInfo>> {
        let req = self
            .client
            .list_clusters()
            .cluster_states(EmrState::Starting)
            .cluster_states(EmrState::Bootstrapping)
            .cluster_states(EmrState::Running)
            .cluster_states(EmrState::Waiting);
        self.tagged(req, token).await
    }

    async fn find_created(&self, token: &str, since_ms: i64) -> Result<Option<ClusterInfo>> {
        // every state, created since the intent (a minute of clock skew allowed)
        let after = aws_sdk_emr::primitives::DateTime::from_millis(since_ms - 60_000);
        self.tagged(self.client.list_clusters().created_after(after), token)
            .await
    }

    async fn describe(&self, cluster_id: &str) -> Result<ClusterInfo> {
        let c = &self.raw_cluster(cluster_id).await?;
        let status = c.status();
        let tl = status.and_then(|s| s.timeline());
        let ms = |t: Option<&aws_sdk_emr::primitives::DateTime>| t.and_then(|t| t.to_millis().ok());
        let tags = c
            .tags()
            .iter()
            .filter_map(|t| Some((t.key()?.to_string(), t.value().unwrap_or("").to_string())))
            .collect();
        let mut groups = Vec::new();
        let mut pages = self
            .client
            .list_instance_groups()
            .cluster_id(cluster_id)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| sdk("ListInstanceGroups", e))?;
            for g in page.instance_groups() {
                groups.push(crate::NodeGroup {
                    role: g
                        .instance_group_type()
                        .map(|t| t.as_str().to_string())
                        .unwrap_or_default(),
                    instance_type: g.instance_type().unwrap_or("").to_string(),
                    count: g
                        .requested_instance_count()
                        .or(g.running_instance_count())
                        .unwrap_or(0) as i64,
                    market: g
                        .market()
                        .map(|m| m.as_str().to_string())
                        .unwrap_or_default(),
                });
            }
        }
        if c.instance_collection_type()
            == Some(&aws_sdk_emr::types::InstanceCollectionType::InstanceFleet)
        {
            // a cluster of instance fleets
            let out = self
                .client
                .list_instance_fleets()
                .cluster_id(cluster_id)
                .send()
                .await
                .map_err(|e| sdk("ListInstanceFleets", e))?;
            for f in out.instance_fleets() {
                let spot = f.target_spot_capacity().unwrap_or(0) as i64;
                let on_demand = f.target_on_demand_capacity().unwrap_or(0) as i64;
                groups.push(crate::NodeGroup {
                    role: f
                        .instance_fleet_type()
                        .map(|t| t.as_str().to_string())
                        .unwrap_or_default(),
                    instance_type: f
                        .instance_type_specifications()
                        .first()
                        .and_then(|t| t.instance_type())
                        .unwrap_or("")
                        .to_string(),
                    count: spot + on_demand,
                    market: if spot > 0 { "SPOT" } else { "ON_DEMAND" }.into(),
                });
            }
        }
        let core = groups.iter().find(|g| g.role == "CORE");
        Ok(ClusterInfo {
            groups: groups.clone(),
            cluster_id: cluster_id.to_string(),
            backend: "emr".into(),
            release_label: c.release_label().map(str::to_string),
            custom_ami: c.custom_ami_id().map(str::to_string),
            state: state_of(status.and_then(|s| s.state())),
            spec: ClusterSpec {
                name: c.name().unwrap_or("").to_string(),
                shape_id: None,
                instance_type: core.map(|g| g.instance_type.clone()),
                instance_count: core.map(|g| g.count).unwrap_or(0),
                local_cores: 0,
                tags,
                file: None,
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
        // the job's confs and the run's over them; placeholders never reach Spark; the GPU
        // settings every RAPIDS step needs, checked before anything is sent
        let mut conf: std::collections::BTreeMap<String, String> = step
            .conf
            .iter()
            .filter(|(_, v)| !crate::is_placeholder(v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut job = step.job.clone();
        job.conf.retain(|_, v| !crate::is_placeholder(v));
        let gpu = crate::rapids::gpu_conf(&job.conf, &conf, crate::rapids::Runtime::Yarn)
            .map_err(|e| other(format!("step {}: {e}", step.name)))?;
        conf.extend(gpu);
        let c = self.describe(cluster_id).await?;
        if c.state.is_ended() {
            return Err(PlatformError::NotRunning {
                cluster: cluster_id.to_string(),
                state: c.state.as_str().to_string(),
            });
        }
        let mut args = vec!["spark-submit".to_string()];
        args.extend(job.submit_args(&conf));
        let jar = HadoopJarStepConfig::builder()
            .jar("command-runner.jar")
            .set_args(Some(args.clone()))
            .build();
        let cfg = StepConfig::builder()
            .name(&step.name)
            .action_on_failure(ActionOnFailure::Continue)
            .hadoop_jar_step(jar)
            .build();
        // AddJobFlowSteps is not idempotent either: a retry first looks for the step by its
        // name (unique per run), so a lost answer does not run the job twice
        let req = self
            .client
            .add_job_flow_steps()
            .job_flow_id(cluster_id)
            .steps(cfg);
        let mut attempt = 0;
        let id =
            loop {
                match req
                    .clone()
                    .customize()
                    .config_override(no_retries())
                    .send()
                    .await
                {
                    Ok(out) => {
                        break out.step_ids().first().cloned().ok_or_else(|| {
                            other("EMR AddJobFlowSteps answered without a step id")
                        })?;
                    }
                    Err(e) if attempt + 1 < SEND_ATTEMPTS && transient(&e) => {
                        attempt += 1;
                        tokio::time::sleep(backoff(attempt)).await;
                        if let Some(id) = self.find_step_id(cluster_id, &step.name).await? {
                            break id;
                        }
                    }
                    Err(e) => return Err(sdk("AddJobFlowSteps", e)),
                }
            };
        // the step exists now: a failed describe must not lose it (the caller records and
        // watches it; its polls retry)
        Ok(self
            .step(cluster_id, &id)
            .await
            .unwrap_or_else(|_| StepInfo {
                cluster_id: cluster_id.to_string(),
                step_id: id.clone(),
                state: StepState::Pending,
                start_ms: Some(crate::now_ms()),
                end_ms: None,
                failure_reason: None,
                args,
            }))
    }

    async fn find_step(&self, cluster_id: &str, name: &str) -> Result<Option<StepInfo>> {
        match self.find_step_id(cluster_id, name).await? {
            Some(id) => Ok(Some(self.step(cluster_id, &id).await?)),
            None => Ok(None),
        }
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
            });
        let out = match out {
            Ok(o) => o,
            // an unknown cluster is told as such, whatever DescribeStep answered
            Err(e) => {
                return Err(match self.raw_cluster(cluster_id).await {
                    Err(u @ PlatformError::UnknownCluster(_)) => u,
                    _ => e,
                });
            }
        };
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
        // CANCEL_PENDING until the step has stopped: wait for it, so that nothing is left
        // running unknown
        let mut every = std::time::Duration::from_millis(250);
        let deadline = std::time::Instant::now() + CANCEL_WAIT;
        loop {
            let s = self.step(cluster_id, step_id).await?;
            if s.state.is_final() || std::time::Instant::now() >= deadline {
                return Ok(s);
            }
            tokio::time::sleep(every).await;
            every = (every * 2).min(std::time::Duration::from_secs(5));
        }
    }

    async fn event_log(&self, cluster_id: &str, step_id: &str) -> Result<Option<String>> {
        let Some(app) = self.application_id(cluster_id, step_id).await? else {
            return Ok(None);
        };
        let dir = self
            .cluster_conf(cluster_id, "spark.eventLog.dir")
            .await?
            .or_else(|| self.settings.spark_event_log_dir.clone())
            .ok_or_else(|| {
                other(format!(
                    "cluster {cluster_id} has no spark.eventLog.dir and platform.emr.spark_event_log_dir is not set: \
                     the step's event log cannot be found"
                ))
            })?;
        if !(dir.starts_with("s3://") || dir.starts_with("s3a://")) {
            return Err(other(format!(
                "cluster {cluster_id} writes event logs to {dir}, which does not outlive the cluster: \
                 set platform.emr.spark_event_log_dir to an s3:// folder"
            )));
        }
        find_event_log(&self.s3, &dir, &app).await
    }

    async fn driver_log(&self, cluster_id: &str, step_id: &str) -> Result<Option<String>> {
        let Some(url) = self.step_log_url(cluster_id, step_id, "stderr.gz").await? else {
            return Ok(None);
        };
        Ok(read_object(&self.s3, &url).await?.map(|_| url))
    }
}

fn role_of(g: &GroupSpec) -> InstanceRoleType {
    match g.role() {
        Some("MASTER") => InstanceRoleType::Master,
        Some("TASK") => InstanceRoleType::Task,
        _ => InstanceRoleType::Core,
    }
}

fn ebs_of(g: &GroupSpec) -> Option<aws_sdk_emr::types::EbsConfiguration> {
    use aws_sdk_emr::types::{EbsBlockDeviceConfig, EbsConfiguration, VolumeSpecification};
    let e = g.ebs_configuration.as_ref()?;
    let volume = VolumeSpecification::builder()
        .volume_type(&e.volume_type)
        .size_in_gb(e.size_in_gb as i32)
        .set_iops(e.iops.map(|i| i as i32))
        .build();
    Some(
        EbsConfiguration::builder()
            .ebs_block_device_configs(
                EbsBlockDeviceConfig::builder()
                    .volume_specification(volume)
                    .volumes_per_instance(e.volumes_per_instance.unwrap_or(1) as i32)
                    .build(),
            )
            .build(),
    )
}

/// An instance group (on-demand unless the file says SPOT).
fn group_config(g: &GroupSpec) -> InstanceGroupConfig {
    InstanceGroupConfig::builder()
        .name(&g.name)
        .instance_role(role_of(g))
        .market(if g.is_spot() {
            MarketType::Spot
        } else {
            MarketType::OnDemand
        })
        .set_bid_price(g.bid_price.clone())
        .instance_type(&g.instance_type)
        .instance_count(g.instance_count as i32)
        .set_ebs_configuration(ebs_of(g))
        .build()
}

/// An instance fleet: on-demand capacity, or spot capacity with a provisioning timeout after
/// which EMR switches to on-demand (or ends the cluster), as the file asks.
fn fleet_config(g: &GroupSpec) -> aws_sdk_emr::types::InstanceFleetConfig {
    use aws_sdk_emr::types::{
        InstanceFleetConfig, InstanceFleetProvisioningSpecifications, InstanceFleetType,
        InstanceTypeConfig, SpotProvisioningAllocationStrategy, SpotProvisioningSpecification,
        SpotProvisioningTimeoutAction,
    };
    let ty = match g.role() {
        Some("MASTER") => InstanceFleetType::Master,
        Some("TASK") => InstanceFleetType::Task,
        _ => InstanceFleetType::Core,
    };
    let n = g.instance_count as i32;
    let mut f = InstanceFleetConfig::builder()
        .name(&g.name)
        .instance_fleet_type(ty)
        .instance_type_configs(
            InstanceTypeConfig::builder()
                .instance_type(&g.instance_type)
                .weighted_capacity(1)
                .set_bid_price(g.bid_price.clone())
                .set_ebs_configuration(ebs_of(g))
                .build(),
        );
    if g.is_spot() {
        let action = match g.on_spot_unavailable.as_deref() {
            Some("TERMINATE_CLUSTER") => SpotProvisioningTimeoutAction::TerminateCluster,
            _ => SpotProvisioningTimeoutAction::SwitchToOnDemand,
        };
        f = f.target_spot_capacity(n).launch_specifications(
            InstanceFleetProvisioningSpecifications::builder()
                .spot_specification(
                    SpotProvisioningSpecification::builder()
                        .timeout_duration_minutes(SPOT_TIMEOUT_MIN)
                        .timeout_action(action)
                        .allocation_strategy(SpotProvisioningAllocationStrategy::CapacityOptimized)
                        .build(),
                )
                .build(),
        );
    } else {
        f = f.target_on_demand_capacity(n);
    }
    f.build()
}

/// Minutes EMR waits for spot capacity before the timeout action.
const SPOT_TIMEOUT_MIN: i32 = 10;

/// How long a cancelled step is watched until it has stopped.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// How often RunJobFlow and AddJobFlowSteps are sent at most (each retry after a lookup).
const SEND_ATTEMPTS: u32 = 4;

fn no_retries() -> aws_sdk_emr::config::Builder {
    aws_sdk_emr::config::Builder::default()
        .retry_config(aws_sdk_emr::config::retry::RetryConfig::disabled())
}

fn backoff(attempt: u32) -> std::time::Duration {
    std::time::Duration::from_millis(200 * 2u64.pow(attempt.min(6)))
}

/// Whether an SDK error (of any AWS SDK client) may pass on a retry: throttling, 5xx, timeouts,
/// lost connections.
pub(crate) fn transient<E: aws_sdk_emr::error::ProvideErrorMetadata>(
    e: &aws_sdk_emr::error::SdkError<E, aws_sdk_emr::config::http::HttpResponse>,
) -> bool {
    use aws_sdk_emr::error::SdkError;
    match e {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            true
        }
        SdkError::ServiceError(s) => {
            let status = s.raw().status().as_u16();
            let code = aws_sdk_emr::error::ProvideErrorMetadata::code(s.err()).unwrap_or("");
            status >= 500
                || status == 429
                || code.contains("Throttl")
                || code == "RequestLimitExceeded"
                || code == "InternalFailure"
        }
        _ => false,
    }
}

/// An object's bytes, `None` when it does not exist.
pub(crate) async fn read_object(
    s3: &aether_ingest::S3Options,
    url: &str,
) -> Result<Option<Vec<u8>>> {
    use object_store::ObjectStoreExt;
    let loc = aether_ingest::source::s3_location(url, s3).map_err(|e| io(url, e))?;
    match loc
        .store
        .get(&object_store::path::Path::from(loc.prefix.as_str()))
        .await
    {
        Ok(r) => Ok(Some(r.bytes().await.map_err(|e| io(url, e))?.to_vec())),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(io(url, e)),
    }
}

/// The YARN application id a step's spark-submit printed (`Submitted application …`).
pub fn application_id_in(stderr: &str) -> Option<String> {
    let token = |s: &str| -> Option<String> {
        let id: String = s
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let mut parts = id.split('_');
        (parts.next() == Some("application")
            && parts
                .next()
                .is_some_and(|p| p.chars().all(|c| c.is_ascii_digit()))
            && parts
                .next()
                .is_some_and(|p| p.chars().all(|c| c.is_ascii_digit())))
        .then_some(id)
    };
    let submitted = stderr
        .match_indices("Submitted application ")
        .find_map(|(i, m)| token(&stderr[i + m.len()..]));
    submitted.or_else(|| {
        stderr
            .match_indices("application_")
            .find_map(|(i, _)| token(&stderr[i..]))
    })
}

/// The event log of application `app` in the S3 folder `dir`: a plain file (`app`, with a
/// codec suffix or not), the last attempt (`app_N`), a rolling folder (`eventlog_v2_app[_N]`),
/// a finished one before one still `.inprogress`.
pub async fn find_event_log(
    s3: &aether_ingest::S3Options,
    dir: &str,
    app: &str,
) -> Result<Option<String>> {
    let loc = aether_ingest::source::s3_location(dir, s3).map_err(|e| io(dir, e))?;
    let prefix =
        (!loc.prefix.is_empty()).then(|| object_store::path::Path::from(loc.prefix.as_str()));
    let listed = loc
        .store
        .list_with_delimiter(prefix.as_ref())
        .await
        .map_err(|e| io(dir, e))?;
    let name_of = |p: &object_store::path::Path| p.filename().unwrap_or("").to_string();
    let mut found: Vec<(String, bool)> = listed
        .objects
        .iter()
        .map(|o| (name_of(&o.location), false))
        .chain(listed.common_prefixes.iter().map(|p| (name_of(p), true)))
        .filter(|(n, is_dir)| event_log_rank(n, app, *is_dir).is_some())
        .collect();
    found.sort_by_key(|(n, is_dir)| event_log_rank(n, app, *is_dir));
    Ok(found.pop().map(|(n, _)| {
        let base = format!("s3://{}", loc.bucket);
        if loc.prefix.is_empty() {
            format!("{base}/{n}")
        } else {
            format!("{base}/{}/{n}", loc.prefix)
        }
    }))
}

/// How well a name in the event-log folder matches application `app` (higher: better), `None`
/// when it is another application's: finished before in progress, then the latest attempt.
fn event_log_rank(name: &str, app: &str, is_dir: bool) -> Option<(bool, u32)> {
    let rest = if is_dir {
        name.strip_prefix("eventlog_v2_")?.strip_prefix(app)?
    } else {
        name.strip_prefix(app)?
    };
    let (rest, in_progress) = match rest.strip_suffix(".inprogress") {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let codec = |r: &str| ["", ".lz4", ".lzf", ".snappy", ".zstd", ".gz"].contains(&r);
    let attempt = match rest.strip_prefix('_') {
        Some(r) => {
            let n: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
            if n.is_empty() || !codec(&r[n.len()..]) {
                return None;
            }
            n.parse().ok()?
        }
        None if codec(rest) => 0,
        None => return None,
    };
    Some((!in_progress, attempt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_application_id_of_a_step_from_its_stderr() {
        let log = "26/01/01 10:00:00 INFO RMProxy: Connecting to ResourceManager\n\
            26/01/01 10:00:01 INFO Client: Submitted application application_1700000000000_0042\n\
            26/01/01 10:00:02 INFO Client: Application report for application_1700000000000_0042 (state: ACCEPTED)\n";
        assert_eq!(
            application_id_in(log).as_deref(),
            Some("application_1700000000000_0042")
        );
        // only a report line (the submit line rolled off): still found
        assert_eq!(
            application_id_in(
                "INFO Client: Application report for application_17_0003 (state: RUNNING)"
            )
            .as_deref(),
            Some("application_17_0003")
        );
        assert_eq!(
            application_id_in("Submitted application application_x_1"),
            None
        );
        assert_eq!(application_id_in("no id here"), None);
    }

    #[test]
    fn event_log_names_of_an_application() {
        let app = "application_17_0001";
        let r = |n: &str, d: bool| event_log_rank(n, app, d);
        assert_eq!(r(app, false), Some((true, 0)));
        assert_eq!(r("application_17_0001.zstd", false), Some((true, 0)));
        assert_eq!(r("application_17_0001_2", false), Some((true, 2)));
        assert_eq!(
            r("application_17_0001_2.lz4.inprogress", false),
            Some((false, 2))
        );
        assert_eq!(r("eventlog_v2_application_17_0001", true), Some((true, 0)));
        assert_eq!(
            r("eventlog_v2_application_17_0001_1", true),
            Some((true, 1))
        );
        // another application whose id starts the same
        assert_eq!(r("application_17_00012", false), None);
        assert_eq!(r("application_17_0001x", false), None);
        assert_eq!(r("eventlog_v2_application_17_0001", false), None);
        // a finished attempt wins over a later one still in progress
        assert!(r("application_17_0001_1", false) > r("application_17_0001_2.inprogress", false));
    }

    #[test]
    fn no_cluster_without_its_bootstrap_action() {
        let e = bootstrap_url(&EmrSettings::default()).unwrap_err();
        assert!(
            e.to_string()
                .contains("platform.emr.cluster.artifacts_path"),
            "{e}"
        );
        let s = EmrSettings {
            artifacts_path: Some("s3://b/aether/".into()),
            ..Default::default()
        };
        assert_eq!(
            bootstrap_url(&s).unwrap(),
            "s3://b/aether/cgroup-bootstrap-action.sh"
        );
    }

    #[test]
    fn a_cluster_file_over_the_settings() {
        let s = EmrSettings {
            network: Network {
                subnet_ids: vec!["subnet-0a1b2c3d".into()],
                key_name: Some("k".into()),
                ..Default::default()
            },
            tags: [("team".to_string(), "a".to_string())].into(),
            ..Default::default()
        };
        let f = crate::clusterfile::ClusterFile::parse(
            "ec2SubnetIds: [subnet-0e1f2a3b]\nserviceRole: R\ntags: {owner: o}\nemrRelease: emr-7.10.0\n",
        )
        .unwrap();
        let m = s.with_file(&f);
        assert_eq!(m.network.subnet_ids, ["subnet-0e1f2a3b"]);
        assert_eq!(m.network.key_name.as_deref(), Some("k"));
        assert_eq!(m.service_role, "R");
        assert_eq!(m.job_flow_role, DEFAULT_INSTANCE_PROFILE);
        assert_eq!(m.release_label, "emr-7.10.0");
        assert_eq!(m.tags.len(), 2);
    }

    #[test]
    fn refused_types_come_with_alternatives() {
        let supported: BTreeMap<String, i32> = [
            ("g5.xlarge", 4),
            ("g5.2xlarge", 8),
            ("g4dn.xlarge", 4),
            ("m5d.xlarge", 4),
        ]
        .iter()
        .map(|(t, v)| (t.to_string(), *v))
        .collect();
        let g = |t: &str| GroupSpec {
            name: "Core GPU".into(),
            instance_type: t.into(),
            instance_count: 1,
            ..Default::default()
        };
        assert_eq!(
            alternatives(&[g("g5.48xlarge")], &supported),
            "supported instead: g5.xlarge (4 vCPUs), g5.2xlarge (8 vCPUs)"
        );
        assert_eq!(
            alternatives(&[g("g4ad.xlarge")], &supported),
            "NVIDIA GPU families supported: g4dn, g5"
        );
        assert!(alternatives(&[g("g4ad.xlarge")], &BTreeMap::new()).starts_with("no NVIDIA"));
    }

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
        assert_eq!(
            prop("spark-defaults", "spark.executor.resource.gpu.amount").as_deref(),
            Some("1")
        );
        assert_eq!(
            prop("spark-defaults", "spark.executor.extraLibraryPath").as_deref(),
            Some(crate::rapids::CUDA_LIBRARY_PATH)
        );
        let ce = by("container-executor").configurations();
        assert_eq!(ce.len(), 2);
        assert!(CGROUP_BOOTSTRAP.contains("mount -t cgroup -o devices"));
    }
}
