//! The settings file: a TOML document with the keys of [`KEYS`], each validated on `set`.

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Errors of the settings file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A key aether does not know.
    #[error("unknown key {key:?}; valid keys: {valid}")]
    UnknownKey {
        /// The key given.
        key: String,
        /// Every valid key, comma-separated.
        valid: String,
    },
    /// A value of the wrong form.
    #[error("{key}: {value:?} is not valid: expected {expected}")]
    BadValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What the key takes.
        expected: String,
    },
    /// The file could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The settings file.
        path: String,
        /// What went wrong.
        error: String,
    },
    /// The file is not a valid settings document.
    #[error("{path}: not a valid aether settings file: {error}")]
    Parse {
        /// The settings file.
        path: String,
        /// The parser's message.
        error: String,
    },
}

/// Result type of the settings.
pub type Result<T> = std::result::Result<T, ConfigError>;

/// Where aether runs its jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// Amazon EMR.
    #[default]
    Emr,
    /// Your own Spark cluster (on premises).
    Onprem,
}

/// Where aether's test clusters and runs go (`core.run_on`; `--platform` per command).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RunOn {
    /// Amazon EMR clusters and steps (aws-sdk-emr).
    #[serde(rename = "emr")]
    Emr,
    /// EMR on EKS job runs on a virtual cluster, GPU nodes from Karpenter.
    #[serde(rename = "emr-eks")]
    EmrEks,
    /// This machine's Spark (spark-submit): no GPU, no cloud.
    #[serde(rename = "local")]
    Local,
}

impl RunOn {
    /// Every run platform, as settings and flags name them.
    pub const ALL: [RunOn; 3] = [RunOn::Emr, RunOn::EmrEks, RunOn::Local];

    /// The name settings, flags and the history use: `emr`, `emr-eks`, `local`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOn::Emr => "emr",
            RunOn::EmrEks => "emr-eks",
            RunOn::Local => "local",
        }
    }

    /// The run platform named `s` (`emr_eks` too; any case).
    pub fn parse(s: &str) -> Option<RunOn> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "emr" => Some(RunOn::Emr),
            "emr-eks" | "eks" => Some(RunOn::EmrEks),
            "local" => Some(RunOn::Local),
            _ => None,
        }
    }

    /// The platform a cluster id names: `j-…` EMR, `eks-…` EMR on EKS (a lease on a virtual
    /// cluster), `lc-…` local; `None` for another form.
    pub fn of_cluster_id(id: &str) -> Option<RunOn> {
        let id = id.trim();
        if id.starts_with("j-") {
            Some(RunOn::Emr)
        } else if id.starts_with("eks-") {
            Some(RunOn::EmrEks)
        } else if id.starts_with("lc-") {
            Some(RunOn::Local)
        } else {
            None
        }
    }
}

impl std::fmt::Display for RunOn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Platform {
    /// The name settings use: `emr`, `onprem`.
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Emr => "emr",
            Platform::Onprem => "onprem",
        }
    }

    /// Where runs go when `core.run_on` is not set: EMR for `emr`; none for `onprem` (your own
    /// cluster is not driven by aether: set `core.run_on local` to try jobs on this machine).
    pub fn default_run_on(self) -> Option<RunOn> {
        match self {
            Platform::Emr => Some(RunOn::Emr),
            Platform::Onprem => None,
        }
    }
}

/// The whole settings document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `[core]`: settings of every phase.
    pub core: Core,
    /// `[platform.*]`: one section per platform.
    pub platform: Platforms,
    /// `[monitoring]`: the CloudWatch alarms of `aether report metrics --alarms`.
    pub monitoring: Monitoring,
    /// `[prices]`: what an instance hour costs you (AWS list prices when unset).
    pub prices: Prices,
}

/// The market a node is bought on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Market {
    /// On-demand (discounts apply: Savings Plans, reserved instances, a private rate).
    #[default]
    #[serde(rename = "on-demand")]
    OnDemand,
    /// Spot, at the prices file's `spot_usd_per_hour`.
    #[serde(rename = "spot")]
    Spot,
}

/// `[prices]`: your own terms over AWS's list prices. Unset, every cost is at list prices
/// (the committed catalog: on-demand EC2 + the EMR fee), and says so.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Prices {
    /// A prices CSV per region and instance type (on-demand EC2, EMR fee, optional spot price
    /// and discount %) over the catalog; default `platform.emr.pricing_file`.
    pub file: Option<String>,
    /// The market the worker nodes of a predicted cluster (CPU and GPU) are bought on; the
    /// primary node is on-demand. Measured runs are priced at the market their nodes ran on.
    pub market: Option<Market>,
    /// Your discount on on-demand EC2, in % (Savings Plans, EDP, reserved instances); a prices
    /// file's `discount_pct` column wins for its instance types. Spot and the EMR fee are not
    /// discounted.
    pub discount_pct: Option<f64>,
    /// The EMR fee as a % of the instance's on-demand EC2 list price, instead of the catalog's
    /// per-type EMR price.
    pub emr_uplift_pct: Option<f64>,
}

/// `[monitoring]`: thresholds of the alarms `aether report metrics --alarms` creates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Monitoring {
    /// A job's alarm on its GPU runs' shuffle write time: above this many ms.
    pub alarm_shuffle_write_ms: Option<i64>,
    /// A job's alarm on its GPU runs' longest SQL stage: above this many minutes.
    pub alarm_sql_stage_minutes: Option<i64>,
    /// The period the alarms look at, in seconds.
    pub alarm_period_s: Option<i64>,
    /// The SNS topic the alarms notify.
    pub alarm_topic_arn: Option<String>,
}

impl Monitoring {
    /// `alarm_shuffle_write_ms`, default 500.
    pub fn shuffle_write_ms(&self) -> i64 {
        self.alarm_shuffle_write_ms.unwrap_or(500)
    }
    /// `alarm_sql_stage_minutes`, default 30.
    pub fn sql_stage_minutes(&self) -> i64 {
        self.alarm_sql_stage_minutes.unwrap_or(30)
    }
    /// `alarm_period_s`, default one day.
    pub fn period_s(&self) -> i64 {
        self.alarm_period_s.unwrap_or(86_400)
    }
}

/// `[core]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Core {
    /// The platform the predictions, cluster shapes and costs are for, and (unless
    /// `run_on` says otherwise) where the workflow's clusters and runs go.
    pub selected_platform: Platform,
    /// Where test clusters and runs go: `emr`, `emr-eks` or `local`; default from
    /// `selected_platform` (emr -> emr; onprem has no run backend).
    pub run_on: Option<RunOn>,
    /// The job-history database (SQLite); default `<aether home>/history.db`.
    pub history_db: Option<String>,
}

/// `[platform]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Platforms {
    /// `[platform.emr]`.
    pub emr: Emr,
    /// `[platform.emr_eks]`.
    pub emr_eks: EmrEks,
}

/// `[platform.emr_eks]`: EMR on EKS, its GPU capacity from Karpenter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct EmrEks {
    /// The AWS region of the EKS cluster.
    pub region: Option<String>,
    /// The EKS cluster (its subnets and security groups are tagged karpenter.sh/discovery=<it>).
    pub eks_cluster_name: Option<String>,
    /// The IAM role of the nodes Karpenter launches.
    pub node_role: Option<String>,
    /// The one availability zone the test nodes go to.
    pub availability_zone: Option<String>,
    /// Seconds an empty node is kept before Karpenter removes it.
    pub consolidate_after_s: Option<i64>,
    /// Where aether puts the pod templates (and the sandboxed outputs) of its runs.
    pub artifacts_path: Option<String>,
    /// The EMR on EKS virtual cluster the runs go to.
    pub virtual_cluster_id: Option<String>,
    /// The IAM role of the job runs.
    pub execution_role_arn: Option<String>,
    /// The Kubernetes namespace of the virtual cluster (checked against it).
    pub namespace: Option<String>,
    /// The RAPIDS release label of the runs, e.g. `emr-7.9.0-spark-rapids-latest`.
    pub release_label: Option<String>,
    /// Where the runs write their Spark event logs (`s3://…`).
    pub spark_event_log_dir: Option<String>,
    /// The runs' S3 monitoring log URI (driver and executor logs).
    pub log_path: Option<String>,
    /// The instance type the driver pod's node is priced at.
    pub driver_instance_type: Option<String>,
    /// A prices CSV with spot prices (`spot_usd_per_hour`) over the catalog's.
    pub pricing_file: Option<String>,
    /// How long a finished run's logs are waited for in S3.
    pub log_wait_s: Option<i64>,
}

/// `[platform.emr]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Emr {
    /// The AWS region of the clusters (e.g. `us-east-1`).
    pub region: Option<String>,
    /// Where the CPU clusters write their Spark event logs (`s3://bucket/prefix` or a path).
    pub spark_event_log_dir: Option<String>,
    /// `[platform.emr.cluster]`.
    pub cluster: EmrCluster,
    /// GPU instance types (or families such as `g5`) the cluster shape may use.
    pub gpu_instance_types: Vec<String>,
    /// A prices file (CSV) overriding the committed catalog.
    pub pricing_file: Option<String>,
    /// The EMR release of the GPU test clusters (7.x, where the RAPIDS classifications apply).
    pub release_label: Option<String>,
}

impl Default for Emr {
    fn default() -> Self {
        Emr {
            region: None,
            spark_event_log_dir: None,
            cluster: EmrCluster::default(),
            gpu_instance_types: ["g4dn", "g5", "g6", "g6e", "p3", "p4d"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            pricing_file: None,
            release_label: None,
        }
    }
}

/// `[platform.emr.cluster]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct EmrCluster {
    /// Where aether puts its jobs' artifacts (`s3://bucket/prefix`).
    pub artifacts_path: Option<String>,
    /// Where the EMR clusters aether starts write their logs (`s3://bucket/prefix`).
    pub log_path: Option<String>,
    /// Idle seconds after which EMR ends a test cluster (its auto-termination policy).
    pub idle_timeout_s: Option<i64>,
    /// How long a finished step's logs are waited for in S3 (EMR copies step logs every few
    /// minutes).
    pub log_wait_s: Option<i64>,
    /// The subnets of the nodes (none: the region's default VPC).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subnet_ids: Vec<String>,
    /// The EMR-managed security group of the primary node.
    pub primary_security_group: Option<String>,
    /// The EMR-managed security group of the core and task nodes.
    pub core_security_group: Option<String>,
    /// The service access security group (clusters in private subnets).
    pub service_access_security_group: Option<String>,
    /// Security groups added to every node.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub additional_security_groups: Vec<String>,
    /// The EC2 key pair of the nodes.
    pub key_name: Option<String>,
    /// EMR's service role (default `EMR_DefaultRole`).
    pub service_role: Option<String>,
    /// The nodes' instance profile (default `EMR_EC2_DefaultRole`).
    pub instance_profile: Option<String>,
    /// An EMR security configuration, by name.
    pub security_configuration: Option<String>,
    /// Tags of every cluster, `key=value`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// The form a key's value takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// A file path (`~` expands).
    Path,
    /// A file that must exist.
    ExistingFile,
    /// An AWS region name.
    Region,
    /// `s3://bucket/prefix`.
    S3Url,
    /// `s3://bucket/prefix` or a local path.
    S3UrlOrPath,
    /// A comma-separated list of EC2 instance types or families.
    InstanceTypes,
    /// An EMR 7 release label, `emr-7.N.N`.
    EmrRelease,
    /// An EMR on EKS release label, `emr-N.N.N-[spark-rapids-]latest|YYYYMMDD`.
    EksRelease,
    /// One EC2 instance type, `family.size`.
    InstanceType,
    /// An IAM role ARN.
    RoleArn,
    /// Whole seconds within a range.
    Seconds(i64, i64),
    /// A whole number of a unit (`ms`, `minutes`) within a range.
    Whole(i64, i64, &'static str),
    /// A name: letters, digits and `-_.:/@`, no spaces.
    Name,
    /// An AWS resource id with this prefix (`sg-`).
    AwsId(&'static str),
    /// AWS resource ids with this prefix (`subnet-`), comma-separated.
    AwsIds(&'static str),
    /// Tags, `key=value` comma-separated.
    Tags,
    /// A percentage from 0 to this, decimals allowed.
    Percent(u8),
}

impl Kind {
    fn expected(self) -> String {
        match self {
            Kind::OneOf(words) => format!("one of {}", words.join(", ")),
            Kind::Path => "a file path".into(),
            Kind::ExistingFile => "the path of an existing file".into(),
            Kind::Region => "an AWS region such as us-east-1".into(),
            Kind::S3Url => "an S3 URL such as s3://bucket/prefix".into(),
            Kind::S3UrlOrPath => "an S3 URL such as s3://bucket/prefix, or a path".into(),
            Kind::InstanceTypes => {
                "EC2 GPU instance types or families, comma-separated, such as g5.xlarge,g6".into()
            }
            Kind::EmrRelease => "an EMR 7 release label such as emr-7.9.0".into(),
            Kind::EksRelease => {
                "an EMR on EKS release label such as emr-7.9.0-spark-rapids-latest".into()
            }
            Kind::InstanceType => "an EC2 instance type such as m5d.xlarge".into(),
            Kind::RoleArn => "an IAM role ARN such as arn:aws:iam::123456789012:role/name".into(),
            Kind::Seconds(lo, hi) => format!("whole seconds from {lo} to {hi}"),
            Kind::Whole(lo, hi, unit) => format!("a whole number of {unit} from {lo} to {hi}"),
            Kind::Name => "a name of letters, digits and -_.:/@ (no spaces)".into(),
            Kind::AwsId(p) => format!("an id such as {p}0a1b2c3d4e5f67890"),
            Kind::AwsIds(p) => format!("ids such as {p}0a1b2c3d4e5f67890, comma-separated"),
            Kind::Tags => "tags key=value, comma-separated, such as team=data,env=test".into(),
            Kind::Percent(max) => format!("a percentage from 0 to {max}, such as 12.5"),
        }
    }
}

/// A key of the settings file.
#[derive(Clone, Copy, Debug)]
pub struct KeySpec {
    /// Dotted name, e.g. `core.selected_platform`.
    pub key: &'static str,
    /// The form of its value.
    pub kind: Kind,
    /// What it means.
    pub doc: &'static str,
}

/// Every key, in file order (a section's keys together, sub-sections after them).
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "core.selected_platform",
        kind: Kind::OneOf(&["emr", "onprem"]),
        doc: "the platform predictions, cluster shapes and costs are for; the workflow's clusters and runs go there too unless core.run_on says otherwise",
    },
    KeySpec {
        key: "core.run_on",
        kind: Kind::OneOf(&["emr", "emr-eks", "local"]),
        doc: "where test clusters and runs go (cluster, submit, tune, run); default: emr for selected_platform emr; onprem has no run backend (set local to run on this machine's Spark)",
    },
    KeySpec {
        key: "core.history_db",
        kind: Kind::Path,
        doc: "the job-history database (SQLite); default <aether home>/history.db",
    },
    KeySpec {
        key: "platform.emr.region",
        kind: Kind::Region,
        doc: "the AWS region of the EMR clusters",
    },
    KeySpec {
        key: "platform.emr.spark_event_log_dir",
        kind: Kind::S3UrlOrPath,
        doc: "where the CPU clusters write their Spark event logs",
    },
    KeySpec {
        key: "platform.emr.gpu_instance_types",
        kind: Kind::InstanceTypes,
        doc: "GPU instance types or families the recommended cluster may use",
    },
    KeySpec {
        key: "platform.emr.pricing_file",
        kind: Kind::ExistingFile,
        doc: "a prices CSV over AWS list prices (the older name of prices.file, which wins)",
    },
    KeySpec {
        key: "platform.emr.release_label",
        kind: Kind::EmrRelease,
        doc: "the EMR release of the GPU test clusters; default emr-7.9.0",
    },
    KeySpec {
        key: "platform.emr.cluster.artifacts_path",
        kind: Kind::S3Url,
        doc: "where aether puts the artifacts of its EMR jobs",
    },
    KeySpec {
        key: "platform.emr.cluster.log_path",
        kind: Kind::S3Url,
        doc: "where the EMR clusters aether starts write their logs",
    },
    KeySpec {
        key: "platform.emr.cluster.idle_timeout_s",
        kind: Kind::Seconds(60, 7 * 24 * 3600),
        doc: "idle seconds after which EMR ends a test cluster (auto-termination); default 3600",
    },
    KeySpec {
        key: "platform.emr.cluster.log_wait_s",
        kind: Kind::Seconds(0, 3600),
        doc: "how long a finished step's logs are waited for in S3; default 600",
    },
    KeySpec {
        key: "platform.emr.cluster.subnet_ids",
        kind: Kind::AwsIds("subnet-"),
        doc: "the subnets of the nodes (several: EMR picks the one with capacity, as instance fleets); default: the region's default VPC",
    },
    KeySpec {
        key: "platform.emr.cluster.primary_security_group",
        kind: Kind::AwsId("sg-"),
        doc: "the EMR-managed security group of the primary node (EmrManagedMasterSecurityGroup); default: EMR makes one",
    },
    KeySpec {
        key: "platform.emr.cluster.core_security_group",
        kind: Kind::AwsId("sg-"),
        doc: "the EMR-managed security group of the core and task nodes (EmrManagedSlaveSecurityGroup); default: EMR makes one",
    },
    KeySpec {
        key: "platform.emr.cluster.service_access_security_group",
        kind: Kind::AwsId("sg-"),
        doc: "the service access security group of a cluster in a private subnet (ServiceAccessSecurityGroup)",
    },
    KeySpec {
        key: "platform.emr.cluster.additional_security_groups",
        kind: Kind::AwsIds("sg-"),
        doc: "security groups added to every node (AdditionalMaster/SlaveSecurityGroups)",
    },
    KeySpec {
        key: "platform.emr.cluster.key_name",
        kind: Kind::Name,
        doc: "the EC2 key pair of the nodes (Ec2KeyName); default: none, no SSH",
    },
    KeySpec {
        key: "platform.emr.cluster.service_role",
        kind: Kind::Name,
        doc: "EMR's service role; default EMR_DefaultRole (what aws emr create-default-roles makes)",
    },
    KeySpec {
        key: "platform.emr.cluster.instance_profile",
        kind: Kind::Name,
        doc: "the EC2 instance profile of the nodes (JobFlowRole); default EMR_EC2_DefaultRole",
    },
    KeySpec {
        key: "platform.emr.cluster.security_configuration",
        kind: Kind::Name,
        doc: "an EMR security configuration (encryption, authentication) by name; default none",
    },
    KeySpec {
        key: "platform.emr.cluster.tags",
        kind: Kind::Tags,
        doc: "tags of every cluster aether creates (cost allocation, owner), with aether's own",
    },
    KeySpec {
        key: "platform.emr_eks.region",
        kind: Kind::Region,
        doc: "the AWS region of the EKS cluster",
    },
    KeySpec {
        key: "platform.emr_eks.eks_cluster_name",
        kind: Kind::Name,
        doc: "the EKS cluster (subnets and security groups tagged karpenter.sh/discovery=<it>)",
    },
    KeySpec {
        key: "platform.emr_eks.node_role",
        kind: Kind::Name,
        doc: "the IAM role of the nodes Karpenter launches; default KarpenterNodeRole-<cluster>",
    },
    KeySpec {
        key: "platform.emr_eks.availability_zone",
        kind: Kind::Name,
        doc: "the one availability zone of the test nodes; default <region>a",
    },
    KeySpec {
        key: "platform.emr_eks.consolidate_after_s",
        kind: Kind::Seconds(0, 3600),
        doc: "seconds an empty node is kept before Karpenter removes it; default 30",
    },
    KeySpec {
        key: "platform.emr_eks.artifacts_path",
        kind: Kind::S3Url,
        doc: "where aether puts the pod templates and sandboxed outputs of its EMR on EKS runs",
    },
    KeySpec {
        key: "platform.emr_eks.virtual_cluster_id",
        kind: Kind::Name,
        doc: "the EMR on EKS virtual cluster the GPU test runs go to",
    },
    KeySpec {
        key: "platform.emr_eks.execution_role_arn",
        kind: Kind::RoleArn,
        doc: "the IAM role of the job runs",
    },
    KeySpec {
        key: "platform.emr_eks.namespace",
        kind: Kind::Name,
        doc: "the Kubernetes namespace of the virtual cluster (checked against it)",
    },
    KeySpec {
        key: "platform.emr_eks.release_label",
        kind: Kind::EksRelease,
        doc: "the RAPIDS release of the runs; default emr-7.9.0-spark-rapids-latest",
    },
    KeySpec {
        key: "platform.emr_eks.spark_event_log_dir",
        kind: Kind::S3Url,
        doc: "where the runs write their Spark event logs",
    },
    KeySpec {
        key: "platform.emr_eks.log_path",
        kind: Kind::S3Url,
        doc: "the runs' S3 monitoring log URI (driver and executor logs)",
    },
    KeySpec {
        key: "platform.emr_eks.driver_instance_type",
        kind: Kind::InstanceType,
        doc: "the on-demand instance the driver pod is priced at; default m5d.xlarge",
    },
    KeySpec {
        key: "platform.emr_eks.pricing_file",
        kind: Kind::ExistingFile,
        doc: "a prices CSV (with spot_usd_per_hour) over the catalog for EMR on EKS; default prices.file",
    },
    KeySpec {
        key: "platform.emr_eks.log_wait_s",
        kind: Kind::Seconds(0, 3600),
        doc: "how long a finished run's logs are waited for in S3; default 600",
    },
    KeySpec {
        key: "monitoring.alarm_shuffle_write_ms",
        kind: Kind::Whole(0, 86_400_000, "ms"),
        doc: "report metrics --alarms: a job's alarm fires when a GPU run's shuffle write time (ShuffleWriteTime) is above this; default 500",
    },
    KeySpec {
        key: "monitoring.alarm_sql_stage_minutes",
        kind: Kind::Whole(1, 10_080, "minutes"),
        doc: "report metrics --alarms: a job's alarm fires when a GPU run's longest SQL stage (LongestSqlStageDuration) is above this; default 30",
    },
    KeySpec {
        key: "monitoring.alarm_period_s",
        kind: Kind::Seconds(60, 86_400),
        doc: "the period the alarms evaluate (a whole number of minutes); default 86400, a breach by any run of the past day",
    },
    KeySpec {
        key: "monitoring.alarm_topic_arn",
        kind: Kind::Name,
        doc: "the SNS topic the alarms notify (arn:aws:sns:REGION:ACCOUNT:NAME); default none",
    },
    KeySpec {
        key: "prices.file",
        kind: Kind::ExistingFile,
        doc: "your prices CSV (region,instance,ec2_usd_per_hour,emr_usd_per_hour[,spot_usd_per_hour][,discount_pct]) over AWS's list prices; default platform.emr.pricing_file",
    },
    KeySpec {
        key: "prices.market",
        kind: Kind::OneOf(&["on-demand", "spot"]),
        doc: "the market predicted clusters' worker nodes are bought on (the primary node stays on-demand; spot needs spot_usd_per_hour in the prices file); default on-demand",
    },
    KeySpec {
        key: "prices.discount_pct",
        kind: Kind::Percent(95),
        doc: "your discount on on-demand EC2 in % (Savings Plans, EDP, reserved instances); not on spot or the EMR fee; default 0",
    },
    KeySpec {
        key: "prices.emr_uplift_pct",
        kind: Kind::Percent(100),
        doc: "the EMR fee as a % of the on-demand EC2 list price, instead of the catalog's per-type EMR price",
    },
];

fn spec(key: &str) -> Result<&'static KeySpec> {
    KEYS.iter()
        .find(|k| k.key == key)
        .ok_or_else(|| ConfigError::UnknownKey {
            key: key.to_string(),
            valid: KEYS.iter().map(|k| k.key).collect::<Vec<_>>().join(", "),
        })
}

fn is_region(v: &str) -> bool {
    // e.g. us-east-1, eu-central-2, us-gov-west-1, ap-southeast-3
    let parts: Vec<&str> = v.split('-').collect();
    (3..=4).contains(&parts.len())
        && parts[0].len() == 2
        && parts[0].bytes().all(|b| b.is_ascii_lowercase())
        && parts[1..parts.len() - 1]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
        && parts[parts.len() - 1].parse::<u8>().is_ok()
}

fn is_s3_url(v: &str) -> bool {
    v.strip_prefix("s3://").is_some_and(|rest| {
        let bucket = rest.split('/').next().unwrap_or("");
        (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    })
}

fn is_instance_type(v: &str) -> bool {
    let mut parts = v.splitn(2, '.');
    let family = parts.next().unwrap_or("");
    let size = parts.next();
    family.len() >= 2
        && family.as_bytes()[0].is_ascii_lowercase()
        && family
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && size.is_none_or(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// An AWS resource id: `prefix` then 8 or 17 hex digits (`subnet-0a1b2c3d`, `sg-…`).
pub fn is_aws_id(v: &str, prefix: &str) -> bool {
    v.strip_prefix(prefix).is_some_and(|h| {
        (h.len() == 8 || h.len() == 17) && h.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

/// Expand a leading `~/` to the home directory.
fn expand_home(v: &str) -> String {
    match (v.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest).display().to_string(),
        _ => v.to_string(),
    }
}

/// The value of `value` for `spec`, checked (a TOML value ready to store).
fn parse_value(spec: &KeySpec, value: &str) -> Result<toml::Value> {
    let v = value.trim();
    let bad = || ConfigError::BadValue {
        key: spec.key.to_string(),
        value: value.to_string(),
        expected: spec.kind.expected(),
    };
    Ok(match spec.kind {
        Kind::OneOf(words) => {
            let lower = v.to_ascii_lowercase();
            if !words.contains(&lower.as_str()) {
                return Err(bad());
            }
            toml::Value::String(lower)
        }
        Kind::Path => {
            if v.is_empty() {
                return Err(bad());
            }
            toml::Value::String(expand_home(v))
        }
        Kind::ExistingFile => {
            let p = expand_home(v);
            if v.is_empty() || !Path::new(&p).is_file() {
                return Err(bad());
            }
            toml::Value::String(p)
        }
        Kind::Region => {
            if !is_region(v) {
                return Err(bad());
            }
            toml::Value::String(v.to_string())
        }
        Kind::S3Url => {
            if !is_s3_url(v) {
                return Err(bad());
            }
            toml::Value::String(v.to_string())
        }
        Kind::S3UrlOrPath => {
            if v.is_empty() || (v.starts_with("s3:") && !is_s3_url(v)) {
                return Err(bad());
            }
            toml::Value::String(if v.starts_with("s3://") {
                v.to_string()
            } else {
                expand_home(v)
            })
        }
        Kind::EmrRelease => {
            let ok = v.strip_prefix("emr-7.").is_some_and(|r| {
                let p: Vec<&str> = r.split('.').collect();
                p.len() == 2
                    && p.iter()
                        .all(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()))
            });
            if !ok {
                return Err(bad());
            }
            toml::Value::String(v.to_string())
        }
        Kind::EksRelease => {
            let ok = v.strip_prefix("emr-").is_some_and(|r| {
                let (ver, tag) = r.split_once('-').unwrap_or((r, ""));
                let p: Vec<&str> = ver.split('.').collect();
                let tag = tag.strip_prefix("spark-rapids-").unwrap_or(tag);
                p.len() == 3
                    && p.iter()
                        .all(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()))
                    && (tag == "latest"
                        || (tag.len() == 8 && tag.bytes().all(|b| b.is_ascii_digit())))
            });
            if !ok {
                return Err(bad());
            }
            toml::Value::String(v.to_string())
        }
        Kind::InstanceType => {
            if !(is_instance_type(v) && v.contains('.')) {
                return Err(bad());
            }
            toml::Value::String(v.to_string())
        }
        Kind::RoleArn => {
            let ok = v.strip_prefix("arn:").is_some_and(|r| {
                let p: Vec<&str> = r.splitn(5, ':').collect();
                p.len() == 5
                    && p[1] == "iam"
                    && p[3].len() == 12
                    && p[3].bytes().all(|b| b.is_ascii_digit())
                    && p[4].strip_prefix("role/").is_some_and(|n| !n.is_empty())
            });
            if !ok {
                return Err(bad());
            }
            toml::Value::String(v.to_string())
        }
        Kind::Name => {
            let ok = !v.is_empty()
                && v.len() <= 256
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:/@".contains(c));
            if !ok {
                return Err(bad());
            }
            toml::Value::String(v.to_string())
        }
        Kind::AwsId(prefix) => {
            if !is_aws_id(v, prefix) {
                return Err(bad());
            }
            toml::Value::String(v.to_string())
        }
        Kind::AwsIds(_) | Kind::Tags => {
            let items: Vec<&str> = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            let ok = |i: &&str| match spec.kind {
                Kind::AwsIds(prefix) => is_aws_id(i, prefix),
                _ => i
                    .split_once('=')
                    .is_some_and(|(k, v)| !k.trim().is_empty() && k.len() <= 128 && v.len() <= 256),
            };
            if items.is_empty() || !items.iter().all(ok) {
                return Err(bad());
            }
            toml::Value::Array(
                items
                    .iter()
                    .map(|i| toml::Value::String(i.to_string()))
                    .collect(),
            )
        }
        Kind::Percent(max) => match v.trim_end_matches('%').trim().parse::<f64>() {
            Ok(x) if x.is_finite() && (0.0..=f64::from(max)).contains(&x) => toml::Value::Float(x),
            _ => return Err(bad()),
        },
        Kind::Seconds(lo, hi) | Kind::Whole(lo, hi, _) => match v.parse::<i64>() {
            Ok(n) if (lo..=hi).contains(&n) => toml::Value::Integer(n),
            _ => return Err(bad()),
        },
        Kind::InstanceTypes => {
            let items: Vec<&str> = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            if items.is_empty() || !items.iter().all(|i| is_instance_type(i)) {
                return Err(bad());
            }
            toml::Value::Array(
                items
                    .iter()
                    .map(|i| toml::Value::String(i.to_string()))
                    .collect(),
            )
        }
    })
}

fn path_get<'a>(root: &'a toml::Value, key: &str) -> Option<&'a toml::Value> {
    key.split('.').try_fold(root, |v, part| v.get(part))
}

fn path_set(root: &mut toml::Value, key: &str, value: Option<toml::Value>) {
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = root;
    for p in &parts[..parts.len() - 1] {
        let table = match cur {
            toml::Value::Table(t) => t,
            _ => return,
        };
        cur = table
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    }
    if let toml::Value::Table(t) = cur {
        let last = parts[parts.len() - 1].to_string();
        match value {
            Some(v) => {
                t.insert(last, v);
            }
            None => {
                t.remove(&last);
            }
        }
    }
}

fn display(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Array(a) => a.iter().map(display).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

impl Config {
    /// The value of `key` as text (lists comma-separated); `None` when unset.
    pub fn get(&self, key: &str) -> Result<Option<String>> {
        spec(key)?;
        let v = toml::Value::try_from(self).map_err(|e| ConfigError::Parse {
            path: String::new(),
            error: e.to_string(),
        })?;
        Ok(path_get(&v, key).map(display))
    }

    /// Set `key` to `value`, checked against the key's form.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let s = spec(key)?;
        let parsed = parse_value(s, value)?;
        self.put(key, Some(parsed))
    }

    /// Remove `key`'s value (back to its default).
    pub fn unset(&mut self, key: &str) -> Result<()> {
        spec(key)?;
        self.put(key, None)?;
        if key == "platform.emr.gpu_instance_types" {
            self.platform.emr.gpu_instance_types = Emr::default().gpu_instance_types;
        }
        Ok(())
    }

    fn put(&mut self, key: &str, value: Option<toml::Value>) -> Result<()> {
        let mut v = toml::Value::try_from(&*self).map_err(|e| ConfigError::Parse {
            path: String::new(),
            error: e.to_string(),
        })?;
        path_set(&mut v, key, value);
        *self = v
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Parse {
                path: String::new(),
                error: e.to_string(),
            })?;
        Ok(())
    }

    /// Every key with its value (`None` when unset), in file order.
    pub fn list(&self) -> Vec<(&'static KeySpec, Option<String>)> {
        KEYS.iter()
            .map(|k| (k, self.get(k.key).ok().flatten()))
            .collect()
    }

    /// The document as TOML, each key preceded by a comment saying what it means.
    pub fn to_toml(&self) -> String {
        let mut out = String::from("# aether settings (`aether config list` shows them all)\n");
        let mut section = "";
        for (k, v) in self.list() {
            let (sec, name) = k.key.rsplit_once('.').unwrap_or(("", k.key));
            if sec != section {
                let _ = writeln!(out, "\n[{sec}]");
                section = sec;
            }
            let _ = writeln!(out, "# {}; {}", k.doc, k.kind.expected());
            match v {
                None => {
                    let _ = writeln!(out, "# {name} =");
                }
                Some(_) => {
                    let raw = toml::Value::try_from(self)
                        .ok()
                        .and_then(|root| path_get(&root, k.key).cloned());
                    if let Some(raw) = raw {
                        let _ = writeln!(out, "{name} = {raw}");
                    }
                }
            }
        }
        out
    }

    /// Parse a settings document (unknown keys and wrong types are errors).
    pub fn from_toml(text: &str, path: &str) -> Result<Config> {
        let c: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_string(),
            error: e.to_string().trim().to_string(),
        })?;
        // the keys' forms hold in a hand-edited file too
        for (k, v) in c.list() {
            if let Some(v) = v
                && k.kind != Kind::ExistingFile
            {
                parse_value(k, &v)?;
            }
        }
        Ok(c)
    }
}

/// The settings file: where it is, and its settings.
#[derive(Clone, Debug)]
pub struct ConfigFile {
    /// The file.
    pub path: PathBuf,
    /// Its settings (defaults when the file does not exist yet).
    pub config: Config,
}

impl ConfigFile {
    /// aether's home: `$AETHER_HOME`, else `~/.aether`.
    pub fn home() -> PathBuf {
        if let Some(h) = std::env::var_os("AETHER_HOME") {
            return PathBuf::from(h);
        }
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        home.join(".aether")
    }

    /// `explicit` (from `--config`), else `<home>/config.toml`.
    pub fn default_path(explicit: Option<&Path>) -> PathBuf {
        explicit
            .map(Path::to_path_buf)
            .unwrap_or_else(|| Self::home().join("config.toml"))
    }

    /// Read the file at `path` (defaults when it does not exist).
    pub fn load(path: &Path) -> Result<ConfigFile> {
        let shown = path.display().to_string();
        let config = match std::fs::read_to_string(path) {
            Ok(text) => Config::from_toml(&text, &shown)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::default(),
            Err(e) => {
                return Err(ConfigError::Io {
                    path: shown,
                    error: e.to_string(),
                });
            }
        };
        Ok(ConfigFile {
            path: path.to_path_buf(),
            config,
        })
    }

    /// `key`'s value as `config list` shows it: the value; for an unset `core.history_db` the
    /// path it defaults to, marked ` (default)`; `None` when unset.
    pub fn shown(&self, key: &str) -> Result<Option<String>> {
        Ok(match self.config.get(key)? {
            Some(v) => Some(v),
            None if key == "core.history_db" => {
                Some(format!("{} (default)", self.history_db().display()))
            }
            None => None,
        })
    }

    /// The history database: the setting, else `<home>/history.db`.
    pub fn history_db(&self) -> PathBuf {
        self.config
            .core
            .history_db
            .as_ref()
            .map(PathBuf::from)
            .unwrap_or_else(|| Self::home().join("history.db"))
    }

    /// `aether config init`: the default settings written to `path`, unless a file is there
    /// (`force`: replaced); what was done, to say.
    pub fn init(path: &Path, force: bool) -> Result<String> {
        if path.exists() && !force {
            return Ok(format!(
                "{} exists; keeping it (--force to overwrite)",
                path.display()
            ));
        }
        ConfigFile {
            path: path.to_path_buf(),
            config: Default::default(),
        }
        .save()?;
        Ok(format!("wrote {}", path.display()))
    }

    /// Write the file (to a temporary file first, then renamed: a crash leaves the old one).
    pub fn save(&self) -> Result<()> {
        let io = |e: std::io::Error| ConfigError::Io {
            path: self.path.display().to_string(),
            error: e.to_string(),
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let tmp = self.path.with_extension("toml.tmp");
        std::fs::write(&tmp, self.config.to_toml()).map_err(io)?;
        std::fs::rename(&tmp, &self.path).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_round_trip() {
        let mut c = Config::default();
        assert_eq!(
            c.get("core.selected_platform").unwrap().as_deref(),
            Some("emr")
        );
        assert_eq!(c.get("platform.emr.region").unwrap(), None);
        c.set("platform.emr.region", "eu-west-1").unwrap();
        c.set("core.selected_platform", "ONPREM").unwrap();
        assert_eq!(c.core.run_on, None);
        c.set("core.run_on", "EMR-EKS").unwrap();
        assert_eq!(c.core.run_on, Some(RunOn::EmrEks));
        assert_eq!(c.get("core.run_on").unwrap().as_deref(), Some("emr-eks"));
        c.set("platform.emr.gpu_instance_types", "g5.2xlarge, g6")
            .unwrap();
        c.set("platform.emr.cluster.log_path", "s3://my-bucket/logs/")
            .unwrap();
        c.set("platform.emr.release_label", "emr-7.10.0").unwrap();
        c.set("platform.emr.cluster.idle_timeout_s", "900").unwrap();
        for (k, v) in [
            (
                "platform.emr_eks.release_label",
                "emr-7.9.0-spark-rapids-latest",
            ),
            ("platform.emr_eks.release_label", "emr-6.13.0-20230808"),
            (
                "platform.emr_eks.execution_role_arn",
                "arn:aws:iam::123456789012:role/emr-eks-job",
            ),
            (
                "platform.emr_eks.virtual_cluster_id",
                "a1b2c3d4e5f6g7h8i9j0k1l2m",
            ),
            ("platform.emr_eks.driver_instance_type", "m6i.xlarge"),
            ("monitoring.alarm_shuffle_write_ms", "250"),
            ("monitoring.alarm_sql_stage_minutes", "45"),
            (
                "monitoring.alarm_topic_arn",
                "arn:aws:sns:us-east-1:123456789012:gpu-alarms",
            ),
        ] {
            c.set(k, v).unwrap();
            assert_eq!(c.get(k).unwrap().as_deref(), Some(v));
        }
        assert_eq!(c.platform.emr.cluster.idle_timeout_s, Some(900));
        assert_eq!(
            (
                c.monitoring.shuffle_write_ms(),
                c.monitoring.sql_stage_minutes(),
                c.monitoring.period_s()
            ),
            (250, 45, 86_400)
        );
        let text = c.to_toml();
        let back = Config::from_toml(&text, "x").unwrap();
        assert_eq!(back, c);
        assert_eq!(
            back.get("platform.emr.gpu_instance_types")
                .unwrap()
                .as_deref(),
            Some("g5.2xlarge,g6")
        );
        assert!(text.contains("[platform.emr.cluster]"), "{text}");
        c.unset("platform.emr.region").unwrap();
        assert_eq!(c.get("platform.emr.region").unwrap(), None);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_explained() {
        let mut c = Config::default();
        let e = c.set("core.platform", "emr").unwrap_err().to_string();
        assert!(
            e.contains("unknown key") && e.contains("core.selected_platform"),
            "{e}"
        );
        for (k, v) in [
            ("core.selected_platform", "gcp"),
            ("core.run_on", "onprem"),
            ("core.run_on", "dataproc"),
            ("platform.emr.region", "mars-1"),
            ("platform.emr.region", "us-east"),
            ("platform.emr.cluster.artifacts_path", "/tmp/x"),
            ("platform.emr.cluster.artifacts_path", "s3://B/x"),
            ("platform.emr.gpu_instance_types", "G5.xlarge"),
            ("platform.emr.gpu_instance_types", ""),
            ("platform.emr.pricing_file", "/no/such/file.csv"),
            ("core.history_db", ""),
            ("platform.emr.release_label", "emr-6.15.0"),
            ("platform.emr.release_label", "emr-7.9"),
            ("platform.emr.cluster.idle_timeout_s", "30"),
            ("platform.emr.cluster.idle_timeout_s", "1h"),
            ("platform.emr.cluster.log_wait_s", "-1"),
            ("platform.emr_eks.release_label", "emr-7.9.0"),
            ("platform.emr_eks.release_label", "emr-7.9.0-spark-rapids"),
            ("platform.emr_eks.release_label", "emr-7.9-latest"),
            (
                "platform.emr_eks.execution_role_arn",
                "EMRContainers-JobExecutionRole",
            ),
            (
                "platform.emr_eks.execution_role_arn",
                "arn:aws:iam::12345:role/x",
            ),
            ("platform.emr_eks.driver_instance_type", "m5d"),
            ("monitoring.alarm_shuffle_write_ms", "500ms"),
            ("monitoring.alarm_shuffle_write_ms", "-1"),
            ("monitoring.alarm_sql_stage_minutes", "0"),
            ("monitoring.alarm_period_s", "30"),
            ("monitoring.alarm_topic_arn", "my topic"),
        ] {
            let e = c.set(k, v).unwrap_err().to_string();
            assert!(e.contains("expected"), "{k}={v}: {e}");
        }
        assert_eq!(c, Config::default(), "failed sets change nothing");
    }

    #[test]
    fn the_account_s_network_roles_and_tags() {
        let mut c = Config::default();
        c.set(
            "platform.emr.cluster.subnet_ids",
            "subnet-0a1b2c3d, subnet-0123456789abcdef0",
        )
        .unwrap();
        c.set("platform.emr.cluster.primary_security_group", "sg-0a1b2c3d")
            .unwrap();
        c.set("platform.emr.cluster.service_role", "EMR_DefaultRole_V2")
            .unwrap();
        c.set("platform.emr.cluster.tags", "team=data, cost-center=4711")
            .unwrap();
        let e = &c.platform.emr.cluster;
        assert_eq!(
            e.subnet_ids,
            ["subnet-0a1b2c3d", "subnet-0123456789abcdef0"]
        );
        assert_eq!(e.primary_security_group.as_deref(), Some("sg-0a1b2c3d"));
        assert_eq!(e.tags, ["team=data", "cost-center=4711"]);
        assert_eq!(
            c.get("platform.emr.cluster.subnet_ids").unwrap().as_deref(),
            Some("subnet-0a1b2c3d,subnet-0123456789abcdef0")
        );
        // the file round-trips, checked again when read
        let back = Config::from_toml(&c.to_toml(), "f.toml").unwrap();
        assert_eq!(back, c);
        for (k, v) in [
            ("platform.emr.cluster.subnet_ids", "sg-0a1b2c3d"),
            ("platform.emr.cluster.subnet_ids", "subnet-xyz"),
            (
                "platform.emr.cluster.core_security_group",
                "subnet-0a1b2c3d",
            ),
            ("platform.emr.cluster.tags", "team"),
            ("platform.emr.cluster.instance_profile", "my profile"),
        ] {
            let e = c.set(k, v).unwrap_err().to_string();
            assert!(e.contains(k), "{k}={v}: {e}");
        }
        c.unset("platform.emr.cluster.subnet_ids").unwrap();
        assert!(c.platform.emr.cluster.subnet_ids.is_empty());
        assert_eq!(c.get("platform.emr.cluster.subnet_ids").unwrap(), None);
    }

    #[test]
    fn hand_edited_files_are_checked() {
        let e = Config::from_toml("[core]\nplatform = \"emr\"\n", "f.toml").unwrap_err();
        assert!(e.to_string().contains("f.toml"), "{e}");
        let e = Config::from_toml("[platform.emr]\nregion = \"nowhere\"\n", "f.toml").unwrap_err();
        assert!(e.to_string().contains("AWS region"), "{e}");
        assert!(Config::from_toml("this is not toml", "f.toml").is_err());
    }

    #[test]
    fn save_and_load() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("sub/config.toml");
        let mut f = ConfigFile::load(&path).unwrap();
        assert_eq!(f.config, Config::default());
        f.config.set("platform.emr.region", "us-west-2").unwrap();
        f.save().unwrap();
        let g = ConfigFile::load(&path).unwrap();
        assert_eq!(g.config.platform.emr.region.as_deref(), Some("us-west-2"));
        assert!(!path.with_extension("toml.tmp").exists());
    }
}
