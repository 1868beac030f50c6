//! The [`Workspace`]: settings → platform → backend → job history, resolved once per command
//! and passed to every workflow function (none reads the settings again).

use crate::cancel::Cancel;
use crate::error::{Result, bail, invalid};
use crate::events::{Event, Observer, Traced};
use aether_core::{ConfigFile, History, RunOn};
use aether_platform::ClusterBackend;
use std::path::PathBuf;
use std::sync::Arc;

/// What a workspace is opened from: the settings file and the per-command override.
#[derive(Clone, Debug, Default)]
pub struct WorkspaceOptions {
    /// The settings file (`--config`; default `$AETHER_HOME/config.toml`, else
    /// `~/.aether/config.toml`).
    pub config: Option<PathBuf>,
    /// Where runs go for this command (`--platform`), over `core.run_on` and
    /// `core.selected_platform`.
    pub platform: Option<RunOn>,
}

/// Where the run platform came from (named in errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlatformSource {
    /// `--platform` (or `run --backend`).
    Flag,
    /// The `core.run_on` setting.
    RunOn,
    /// Derived from `core.selected_platform`.
    SelectedPlatform,
}

impl PlatformSource {
    /// Where the platform `p` came from, in words (`core.run_on = local`).
    pub fn describe(self, p: Option<RunOn>) -> String {
        let p = p.map(|p| p.as_str()).unwrap_or("none");
        match self {
            PlatformSource::Flag => format!("--platform {p}"),
            PlatformSource::RunOn => format!("core.run_on = {p}"),
            PlatformSource::SelectedPlatform => {
                format!("{p}, from core.selected_platform")
            }
        }
    }
}

/// One command's resolved context.
pub struct Workspace {
    /// The settings as read.
    pub settings: ConfigFile,
    run_on: Option<RunOn>,
    source: PlatformSource,
    rt: tokio::runtime::Runtime,
    cancel: Cancel,
    observer: Arc<dyn Observer>,
}

impl Workspace {
    /// Read the settings and resolve where runs go: `opts.platform`, else `core.run_on`, else
    /// the selected platform's (emr → emr; onprem has none, which [`Workspace::platform`] says).
    pub fn open(opts: &WorkspaceOptions) -> Result<Workspace> {
        let path = ConfigFile::default_path(opts.config.as_deref());
        let settings = ConfigFile::load(&path)?;
        Workspace::from_settings(settings, opts.platform)
    }

    /// A workspace over settings already read (tests, services that hold their settings).
    pub fn from_settings(settings: ConfigFile, platform: Option<RunOn>) -> Result<Workspace> {
        let core = &settings.config.core;
        let (run_on, source) = match (platform, core.run_on) {
            (Some(p), _) => (Some(p), PlatformSource::Flag),
            (None, Some(p)) => (Some(p), PlatformSource::RunOn),
            (None, None) => (
                core.selected_platform.default_run_on(),
                PlatformSource::SelectedPlatform,
            ),
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        Ok(Workspace {
            settings,
            run_on,
            source,
            rt,
            cancel: Cancel::new(),
            observer: Arc::new(Traced),
        })
    }

    /// Events go to `o` (default: `tracing`).
    pub fn with_observer(mut self, o: Arc<dyn Observer>) -> Workspace {
        self.observer = o;
        self
    }

    /// The workspace's cancellation token: trip it to stop the work (clusters and steps the
    /// work started are ended).
    pub fn cancel(&self) -> &Cancel {
        &self.cancel
    }

    /// The async runtime the platform calls run on.
    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.rt
    }

    /// Where runs go; an error says how to choose when nothing does (`onprem`).
    pub fn platform(&self) -> Result<RunOn> {
        self.run_on.ok_or_else(|| {
            invalid!(
                "core.selected_platform is {}, which has no run backend: aether does not drive \
                 your own cluster. Choose where test runs go: `aether config set core.run_on \
                 local` (this machine's Spark), `emr` or `emr-eks`, or pass --platform",
                self.settings.config.core.selected_platform.as_str()
            )
        })
    }

    /// Where `platform()` came from.
    pub fn platform_source(&self) -> PlatformSource {
        self.source
    }

    /// The platform of a command about cluster `id`: the id names its platform (`j-…` EMR,
    /// `eks-…` EMR on EKS, `lc-…` local). An id of another platform than `--platform` is an
    /// error naming both; over the settings' choice the id wins (the cluster is where it is).
    pub fn platform_of_cluster(&self, id: &str) -> Result<RunOn> {
        let Some(of_id) = RunOn::of_cluster_id(id) else {
            return self.platform();
        };
        match self.run_on {
            Some(p) if p == of_id => Ok(p),
            Some(p) if self.source == PlatformSource::Flag => bail!(
                "cluster {id} is a{} {} cluster, but {} was given: drop --platform or pass \
                 --platform {}",
                if of_id == RunOn::Emr { "n" } else { "" },
                of_id,
                PlatformSource::Flag.describe(Some(p)),
                of_id
            ),
            Some(p) => {
                self.note(&format!(
                    "cluster {id} is on {of_id} (the settings choose {}): using {of_id}",
                    self.source.describe(Some(p))
                ));
                Ok(of_id)
            }
            None => Ok(of_id),
        }
    }

    /// The job history.
    pub fn history(&self) -> Result<History> {
        Ok(History::open(&self.history_path())?)
    }

    /// Where the job history is (`core.history_db`, else beside the settings).
    pub fn history_path(&self) -> PathBuf {
        self.settings.history_db()
    }

    /// aether's home folder (`$AETHER_HOME`, else `~/.aether`).
    pub fn home(&self) -> PathBuf {
        ConfigFile::home()
    }

    /// The backend of `platform`, with its settings.
    pub fn backend(&self, platform: RunOn) -> Result<Box<dyn ClusterBackend>> {
        Ok(match platform {
            RunOn::Local => Box::new(self.local_backend()?),
            RunOn::Emr => Box::new(self.emr_backend()),
            RunOn::EmrEks => Box::new(self.eks_backend()),
        })
    }

    /// This machine's Spark (spark-submit from SPARK_HOME or pyspark).
    pub fn local_backend(&self) -> Result<aether_platform::local::LocalBackend> {
        use aether_platform::local::{LocalBackend, find_spark_submit};
        let spark_submit = find_spark_submit().ok_or_else(|| {
            invalid!(
                "no spark-submit for the local platform: set SPARK_HOME, or put pyspark's on PATH \
                 (scripts/setup --test installs it in .venv: export PATH=$PWD/.venv/bin:$PATH); \
                 or run on EMR: aether config set core.run_on emr"
            )
        })?;
        let rapids = std::env::var_os("AETHER_RAPIDS_JAR").map(PathBuf::from);
        Ok(LocalBackend::new(self.home().join("local"), spark_submit).with_rapids_jar(rapids))
    }

    /// What an EMR cluster is made with: the `platform.emr.*` settings over the defaults
    /// (release, roles, buckets, primary node).
    pub fn emr_settings(&self) -> aether_platform::emr::EmrSettings {
        let e = &self.settings.config.platform.emr;
        let c = &e.cluster;
        let d = aether_platform::emr::EmrSettings::default();
        aether_platform::emr::EmrSettings {
            log_uri: e.cluster.log_path.clone(),
            artifacts_path: e.cluster.artifacts_path.clone(),
            spark_event_log_dir: e.spark_event_log_dir.clone(),
            release_label: e.release_label.clone().unwrap_or(d.release_label.clone()),
            idle_timeout_s: e.cluster.idle_timeout_s.unwrap_or(d.idle_timeout_s),
            service_role: c.service_role.clone().unwrap_or(d.service_role.clone()),
            job_flow_role: c
                .instance_profile
                .clone()
                .unwrap_or(d.job_flow_role.clone()),
            network: aether_platform::emr::Network {
                subnet_ids: c.subnet_ids.clone(),
                primary_security_group: c.primary_security_group.clone(),
                core_security_group: c.core_security_group.clone(),
                service_access_security_group: c.service_access_security_group.clone(),
                additional_security_groups: c.additional_security_groups.clone(),
                key_name: c.key_name.clone(),
            },
            security_configuration: c.security_configuration.clone(),
            tags: c
                .tags
                .iter()
                .filter_map(|t| t.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect(),
            ..d
        }
    }

    /// The EMR backend with the `platform.emr.*` settings.
    pub fn emr_backend(&self) -> aether_platform::emr::EmrBackend {
        self.rt.block_on(aether_platform::emr::EmrBackend::from_env(
            self.emr_region(),
            self.emr_settings(),
        ))
    }

    /// The EMR on EKS backend with the `platform.emr_eks.*` settings.
    pub fn eks_backend(&self) -> aether_platform::emr_eks::EmrEksBackend {
        use aether_platform::emr_eks::{DEFAULT_DRIVER_INSTANCE, DEFAULT_RELEASE, EmrEksSettings};
        let cfg = &self.settings.config;
        let e = &cfg.platform.emr_eks;
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
        self.rt
            .block_on(aether_platform::emr_eks::EmrEksBackend::from_env(
                self.eks_region(),
                settings,
                self.home().join("emr-eks/leases"),
            ))
    }

    /// CloudWatch (the runs' metrics and alarms) in the EMR region, else the EMR on EKS one;
    /// endpoint and credentials from the SDK's standard configuration, as for EMR.
    pub fn cloudwatch(&self) -> aether_platform::cloudwatch::CloudWatch {
        let p = &self.settings.config.platform;
        let region = p.emr.region.clone().or(p.emr_eks.region.clone());
        self.rt
            .block_on(aether_platform::cloudwatch::CloudWatch::from_env(region))
    }

    /// S3 access with the EMR region (for logs and artifacts).
    pub fn s3(&self) -> aether_ingest::S3Options {
        aether_ingest::S3Options {
            region: self.emr_region(),
            endpoint: None,
        }
    }

    /// The EMR region (`platform.emr.region`; `None`: the SDK's).
    pub fn emr_region(&self) -> Option<String> {
        self.settings.config.platform.emr.region.clone()
    }

    /// The EMR on EKS region (`platform.emr_eks.region`, else EMR's).
    pub fn eks_region(&self) -> Option<String> {
        let p = &self.settings.config.platform;
        p.emr_eks.region.clone().or(p.emr.region.clone())
    }

    /// The region of `platform`'s clusters where aether names one itself (prices, Karpenter
    /// manifests) instead of asking the SDK's chain: the setting ([`Self::eks_region`] for EMR on
    /// EKS, else [`Self::emr_region`]), else us-east-1.
    pub fn region_of(&self, platform: RunOn) -> String {
        let set = match platform {
            RunOn::EmrEks => self.eks_region(),
            RunOn::Emr | RunOn::Local => self.emr_region(),
        };
        set.unwrap_or_else(|| "us-east-1".into())
    }

    /// The EMR on EKS settings (virtual cluster, roles, the GPU node pool for Karpenter).
    pub fn eks_settings(&self) -> &aether_core::config::EmrEks {
        &self.settings.config.platform.emr_eks
    }

    /// The CloudWatch settings (alarm period and thresholds).
    pub fn monitoring(&self) -> &aether_core::config::Monitoring {
        &self.settings.config.monitoring
    }

    /// The GPU instance families qualify's cluster shapes come from
    /// (`platform.emr.gpu_instance_types`; empty: every family).
    pub fn gpu_families(&self) -> Vec<String> {
        self.settings.config.platform.emr.gpu_instance_types.clone()
    }

    /// The platform the jobs run on today (`core.selected_platform`): which QualX model judges
    /// them by default.
    pub fn selected_platform(&self) -> aether_core::Platform {
        self.settings.config.core.selected_platform
    }

    /// The prices every cost is at (`[prices]`, else AWS's list prices).
    pub fn price_terms(&self) -> aether_predict::prices::Terms {
        aether_predict::prices::Terms::of(&self.settings.config)
    }

    /// The prices of EMR on EKS runs: `[prices]`, `platform.emr_eks.pricing_file` over its file.
    pub fn eks_price_terms(&self) -> aether_predict::prices::Terms {
        let file = self.eks_settings().pricing_file.as_deref();
        self.price_terms().with_file(file.map(std::path::Path::new))
    }

    /// How long a finished step's logs are waited for: EMR copies step logs to S3 every few
    /// minutes (`platform.emr.cluster.log_wait_s`, `platform.emr_eks.log_wait_s`; 600 s); a
    /// local step's are there when it ends.
    pub fn log_wait(&self, platform: RunOn) -> std::time::Duration {
        let p = &self.settings.config.platform;
        let s = match platform {
            RunOn::Local => return std::time::Duration::ZERO,
            RunOn::Emr => p.emr.cluster.log_wait_s,
            RunOn::EmrEks => p.emr_eks.log_wait_s,
        };
        std::time::Duration::from_secs(s.unwrap_or(600) as u64)
    }

    /// Where a test run on `platform` writes its outputs, never over the CPU run's:
    /// `<artifacts path>/sandbox/<run_dir>` (on this machine, under aether's home).
    pub fn sandbox(&self, platform: RunOn, run_dir: &str) -> Result<String> {
        let p = &self.settings.config.platform;
        let (base, key) = match platform {
            RunOn::Local => {
                let d = self.home().join("local/sandbox").join(run_dir);
                return Ok(d.display().to_string());
            }
            RunOn::Emr => (
                p.emr.cluster.artifacts_path.as_deref(),
                "platform.emr.cluster.artifacts_path",
            ),
            RunOn::EmrEks => (
                p.emr_eks.artifacts_path.as_deref(),
                "platform.emr_eks.artifacts_path",
            ),
        };
        let base = base
            .ok_or_else(|| invalid!("{key} is not set: test runs write their outputs under it"))?;
        Ok(format!("{}/sandbox/{run_dir}", base.trim_end_matches('/')))
    }

    /// Hand an event to the observer.
    pub fn emit(&self, e: Event<'_>) {
        self.observer.event(&e);
    }

    /// A progress line.
    pub fn note(&self, m: &str) {
        self.emit(Event::Note(m));
    }

    /// A warning.
    pub fn warn(&self, m: &str) {
        self.emit(Event::Warning(m));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(text: &str) -> ConfigFile {
        let d = std::env::temp_dir().join(format!("aether-ws-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        ConfigFile {
            path: d.join("config.toml"),
            config: aether_core::Config::from_toml(text, "test").unwrap(),
        }
    }

    #[test]
    fn the_settings_choose_the_platform_and_a_flag_overrides_them() {
        let ws = Workspace::from_settings(settings(""), None).unwrap();
        assert_eq!(ws.platform().unwrap(), RunOn::Emr);
        assert_eq!(ws.platform_source(), PlatformSource::SelectedPlatform);
        let ws =
            Workspace::from_settings(settings("[core]\nrun_on = \"emr-eks\"\n"), None).unwrap();
        assert_eq!(ws.platform().unwrap(), RunOn::EmrEks);
        let ws = Workspace::from_settings(
            settings("[core]\nrun_on = \"emr-eks\"\n"),
            Some(RunOn::Local),
        )
        .unwrap();
        assert_eq!(ws.platform().unwrap(), RunOn::Local);
        assert_eq!(ws.platform_source(), PlatformSource::Flag);
        // onprem: no run backend, said with what to do
        let ws =
            Workspace::from_settings(settings("[core]\nselected_platform = \"onprem\"\n"), None)
                .unwrap();
        let e = ws.platform().unwrap_err().to_string();
        assert!(
            e.contains("onprem") && e.contains("core.run_on local"),
            "{e}"
        );
        let ws = Workspace::from_settings(
            settings("[core]\nselected_platform = \"onprem\"\nrun_on = \"local\"\n"),
            None,
        )
        .unwrap();
        assert_eq!(ws.platform().unwrap(), RunOn::Local);
    }

    /// What differs per platform is read from the settings here, once: how long logs are
    /// waited for, where a test run's outputs go, the regions.
    #[test]
    fn platform_settings_are_resolved_by_the_workspace() {
        let ws = Workspace::from_settings(
            settings(
                "[platform.emr.cluster]\nlog_wait_s = 30\nartifacts_path = \"s3://bucket-a/art/\"\n\
                 [platform.emr_eks]\nregion = \"eu-west-1\"\n",
            ),
            None,
        )
        .unwrap();
        let secs = std::time::Duration::from_secs;
        assert_eq!(ws.log_wait(RunOn::Emr), secs(30));
        assert_eq!(ws.log_wait(RunOn::EmrEks), secs(600));
        assert_eq!(ws.log_wait(RunOn::Local), secs(0));
        assert_eq!(
            ws.sandbox(RunOn::Emr, "job1-2").unwrap(),
            "s3://bucket-a/art/sandbox/job1-2"
        );
        let e = ws.sandbox(RunOn::EmrEks, "job1-2").unwrap_err().to_string();
        assert!(
            e.starts_with("platform.emr_eks.artifacts_path is not set"),
            "{e}"
        );
        assert!(
            ws.sandbox(RunOn::Local, "job1-2")
                .unwrap()
                .ends_with("local/sandbox/job1-2")
        );
        assert_eq!(ws.eks_region().as_deref(), Some("eu-west-1"));
        assert_eq!(ws.emr_region(), None);
        assert_eq!(ws.region_of(RunOn::EmrEks), "eu-west-1");
        assert_eq!(ws.region_of(RunOn::Emr), "us-east-1");
    }

    #[test]
    fn a_cluster_id_names_its_platform() {
        let ws = Workspace::from_settings(settings(""), None).unwrap();
        assert_eq!(ws.platform_of_cluster("j-ABC").unwrap(), RunOn::Emr);
        // the settings say emr, the id is local's: the id wins
        assert_eq!(ws.platform_of_cluster("lc-1a2b").unwrap(), RunOn::Local);
        assert_eq!(ws.platform_of_cluster("eks-1f-2").unwrap(), RunOn::EmrEks);
        // an id of no known form: the workspace's platform
        assert_eq!(ws.platform_of_cluster("mine").unwrap(), RunOn::Emr);
        // a flag that contradicts the id: an error naming both
        let ws = Workspace::from_settings(settings(""), Some(RunOn::Local)).unwrap();
        let e = ws.platform_of_cluster("j-ABC").unwrap_err().to_string();
        assert!(
            e.contains("j-ABC") && e.contains("emr") && e.contains("--platform local"),
            "{e}"
        );
    }
}
