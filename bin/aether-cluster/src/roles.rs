//! The scheduler, the executor and the client, each with aether's functions and aether's S3.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Result, anyhow};
use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use datafusion::error::DataFusionError;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use datafusion::execution::registry::FunctionRegistry;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};
use object_store::ObjectStore;
use url::Url;

/// Object stores by URL, as aether resolves them: an `s3://bucket` (or `s3a://`) not yet
/// registered gets a store built from the AWS environment and aether's S3 options.
pub struct AetherStores {
    inner: DefaultObjectStoreRegistry,
    s3: aether_ingest::S3Options,
}

impl AetherStores {
    pub fn new(s3: aether_ingest::S3Options) -> Arc<Self> {
        Arc::new(AetherStores {
            inner: DefaultObjectStoreRegistry::new(),
            s3,
        })
    }
}

impl std::fmt::Debug for AetherStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AetherStores")
            .field("inner", &self.inner)
            .field("s3_endpoint", &self.s3.endpoint)
            .finish()
    }
}

impl ObjectStoreRegistry for AetherStores {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.inner.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        self.inner.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        match self.inner.get_store(url) {
            Ok(s) => Ok(s),
            Err(e) => {
                let (scheme, Some(bucket)) = (url.scheme(), url.host_str()) else {
                    return Err(e);
                };
                if scheme != "s3" && scheme != "s3a" {
                    return Err(e);
                }
                let store = aether_ingest::source::s3_store(bucket, &self.s3)
                    .map_err(|m| DataFusionError::Execution(format!("s3://{bucket}: {m}")))?;
                let base = Url::parse(&format!("{scheme}://{bucket}"))
                    .map_err(|e| DataFusionError::Execution(format!("s3://{bucket}: {e}")))?;
                self.inner.register_store(&base, store.clone());
                Ok(store)
            }
        }
    }
}

/// A runtime whose object stores resolve S3 as aether does (and whose spill files go to
/// `temp`, when given).
fn runtime_env(
    stores: Arc<AetherStores>,
    temp: Option<&str>,
) -> datafusion::error::Result<Arc<RuntimeEnv>> {
    let mut b = RuntimeEnvBuilder::new().with_object_store_registry(stores);
    if let Some(t) = temp {
        b = b.with_temp_file_path(t);
    }
    b.build_arc()
}

/// Ballista's session state for `config`, with aether's functions and `runtime`.
fn state_with_aether(
    config: SessionConfig,
    runtime: Arc<RuntimeEnv>,
) -> datafusion::error::Result<datafusion::execution::SessionState> {
    let state = ballista_core::utils::default_session_builder(config)?;
    let mut state = SessionStateBuilder::new_from_existing(state)
        .with_runtime_env(runtime)
        .build();
    for f in aether_udfs::functions() {
        state.register_udf(f)?;
    }
    Ok(state)
}

/// The scheduler's configuration: Ballista's defaults, sessions built with aether's functions
/// and stores.
pub fn scheduler_config(
    bind: &str,
    port: u16,
    external_host: Option<String>,
    s3: aether_ingest::S3Options,
) -> SchedulerConfig {
    let stores = AetherStores::new(s3);
    let mut cfg = SchedulerConfig {
        bind_host: bind.to_string(),
        bind_port: port,
        ..Default::default()
    };
    if let Some(h) = external_host {
        cfg.external_host = h;
    }
    cfg.override_session_builder = Some(Arc::new(move |config: SessionConfig| {
        state_with_aether(config, runtime_env(stores.clone(), None)?)
    }));
    cfg
}

/// Run a scheduler until it is stopped.
pub async fn scheduler(cfg: SchedulerConfig, addr: SocketAddr) -> Result<()> {
    let cluster = BallistaCluster::new_from_config(&cfg)
        .await
        .map_err(|e| anyhow!("scheduler: {e}"))?;
    eprintln!(
        "aether-cluster scheduler listening on {addr} (clients: df://{}:{})",
        cfg.external_host, cfg.bind_port
    );
    ballista_scheduler::scheduler_process::start_server(cluster, addr, Arc::new(cfg))
        .await
        .map_err(|e| anyhow!("scheduler on {addr}: {e}"))
}

/// What an executor is started with.
pub struct ExecutorSpec {
    pub scheduler_host: String,
    pub scheduler_port: u16,
    pub bind: String,
    pub external_host: Option<String>,
    pub port: u16,
    pub grpc_port: u16,
    pub tasks: usize,
    pub work_dir: String,
    pub memory_bytes: Option<u64>,
    pub s3: aether_ingest::S3Options,
}

/// The executor's configuration: Ballista's defaults, aether's functions in its registry and
/// aether's stores in every task's runtime.
pub fn executor_config(spec: ExecutorSpec) -> Result<ExecutorProcessConfig> {
    let stores = AetherStores::new(spec.s3);
    let functions = state_with_aether(
        SessionConfig::new_with_ballista(),
        runtime_env(stores.clone(), None)?,
    )?;
    let work_dir = spec.work_dir.clone();
    let external_host = spec
        .external_host
        .or_else(|| (spec.bind != "0.0.0.0" && spec.bind != "::").then(|| spec.bind.clone()));
    Ok(ExecutorProcessConfig {
        scheduler_host: spec.scheduler_host,
        scheduler_port: spec.scheduler_port,
        bind_host: spec.bind,
        external_host,
        port: spec.port,
        grpc_port: spec.grpc_port,
        vcores: spec.tasks,
        work_dir: Some(spec.work_dir),
        memory_pool_size: spec.memory_bytes,
        print_thread_info: false,
        override_function_registry: Some(Arc::new(BallistaFunctionRegistry::from(&functions))),
        override_runtime_producer: Some(Arc::new(move |_: &SessionConfig| {
            runtime_env(stores.clone(), Some(&work_dir))
        })),
        ..Default::default()
    })
}

/// Run an executor until it is stopped (Ctrl-C, SIGTERM or the scheduler).
pub async fn executor(cfg: ExecutorProcessConfig) -> Result<()> {
    let at = format!("{}:{}", cfg.scheduler_host, cfg.scheduler_port);
    eprintln!(
        "aether-cluster executor on {}:{} (tasks {}), scheduler {at}",
        cfg.bind_host, cfg.port, cfg.vcores
    );
    start_executor_process(Arc::new(cfg))
        .await
        .map_err(|e| anyhow!("executor (scheduler {at}): {e}"))
}

/// A client session on the cluster at `url` over `warehouse`: its tables, its `derived.*`
/// tables and aether's views (the settings as a view of literals: in-memory tables do not
/// travel to the cluster). aether's functions are registered after the session is made remote
/// (Ballista's upgrade replaces the function list).
pub async fn client(
    url: &str,
    warehouse: &str,
    s3: &aether_ingest::S3Options,
) -> Result<SessionContext> {
    let config = SessionConfig::new_with_ballista()
        .with_information_schema(true)
        .with_default_catalog_and_schema("aether", "public");
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .with_runtime_env(runtime_env(AetherStores::new(s3.clone()), None)?)
        .build();
    let ctx = SessionContext::remote_with_state(url, state)
        .await
        .map_err(|e| anyhow!("{url}: {e}"))?;
    aether_udfs::register(&ctx);
    let wh =
        aether_engine::Warehouse::open(warehouse, s3).map_err(|e| anyhow!("{warehouse}: {e}"))?;
    wh.register(&ctx)
        .await
        .map_err(|e| anyhow!("{warehouse}: {e}"))?;
    aether_engine::views::register_views_portable(
        &ctx,
        &aether_engine::AnalysisSettings::default(),
    )
    .await
    .map_err(|e| anyhow!("{e}"))?;
    Ok(ctx)
}
