//! Qualification of one event log: status (is it a CPU Spark app we can judge?), the QualX
//! prediction, the unsupported-operator share and the speedup category.

use std::collections::{BTreeMap, HashMap};

use crate::error::{PredictError, Result};
use aether_engine::{AnalysisSettings, SessionContext};
use datafusion::arrow::record_batch::RecordBatch;
use serde::Serialize;
use serde_json::Value;

use crate::model::Model;
use crate::platform::ModelPlatform;
use crate::qualx::{self, AppSpeedup, SqlPrediction};
use crate::rows::{Row, f, i, rows_by_app, s};
use aether_ingest::engine::Engine;

/// The outcome of qualifying one log, as the reference tool's `status.csv` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// Qualified.
    Success,
    /// Not a log aether could read at all.
    Failure,
    /// A log the qualification does not apply to (GPU run, streaming, Photon, older attempt).
    Skipped,
    /// A log without the application's start.
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "SUCCESS",
            Status::Failure => "FAILURE",
            Status::Skipped => "SKIPPED",
            Status::Unknown => "UNKNOWN",
        }
    }
}

/// Everything the qualification found for one app (one log).
#[derive(Clone, Debug)]
pub struct AppQualification {
    /// The job history's id for this app (set once the result is recorded).
    pub job_id: Option<i64>,
    /// The history's config of the AutoTuner's properties for this app (`submit --config_id`).
    pub config_id: Option<i64>,
    /// The id of the recommended GPU cluster shape (`cluster create --cluster_shape_id`).
    pub shape_id: Option<i64>,
    pub event_log: String,
    pub status: Status,
    /// Why the log was skipped or failed; warnings for a qualified log.
    pub status_reason: String,
    pub app_id: String,
    pub attempt_id: Option<String>,
    pub app_name: String,
    pub start_ms: Option<i64>,
    /// ApplicationEnd − ApplicationStart (or the last SQL/job end when the log is cut short).
    pub app_duration_ms: i64,
    pub sql_stage_durations_sum_ms: i64,
    pub unsupported_stage_duration_ms: i64,
    pub unsupported_stage_duration_pct: f64,
    pub speedup: AppSpeedup,
    /// QualX's own speedup (`speedup.speedup` is calibrated when a calibration is saved).
    pub qualx_speedup: f64,
    /// The speedup's range, for predicted apps.
    pub range: Option<crate::calibrate::Range>,
    pub category: String,
    /// The category the whole range clears (from its low end).
    pub sure_category: String,
    /// Where the range lies against the speedup a migration must clear (`gpu_speedup_min`).
    pub confidence: Option<crate::calibrate::Confidence>,
    pub not_recommended_reason: String,
    pub skip_by_heuristics: bool,
    pub sqls: Vec<SqlPrediction>,
    /// The features that moved the prediction most (SHAP, log-speedup units).
    pub reasons: Vec<(String, f64)>,
    /// Spark properties of the app (for the cluster shape and the tuned configs).
    pub spark_properties: BTreeMap<String, String>,
    /// The driver's command line (`sun.java.command`): the spark-submit that ran the job.
    pub java_command: Option<String>,
    /// What the log shows of the executors.
    pub executors: crate::cluster::ExecutorFacts,
    /// The CPU cluster, the recommended GPU cluster and their costs.
    pub cluster: Option<crate::cluster::ClusterRecommendation>,
    /// The bootstrap Spark configs for the recommended GPU cluster.
    pub tuning: Vec<crate::tuner::Setting>,
    /// The same, as a spark-defaults file with the reasons as comments.
    pub spark_conf: String,
    /// With [`QualifyOptions::derive`]: this app's rows of the derived views
    /// ([`DERIVED_VIEWS`]), by view.
    pub derived: Vec<(String, RecordBatch)>,
}

impl AppQualification {
    /// What a summary of many apps keeps of this one: all but its Spark properties, configs,
    /// per-SQL predictions and derived rows (what only its own files need).
    pub fn into_head(mut self) -> AppQualification {
        self.spark_properties = BTreeMap::new();
        self.java_command = None;
        self.tuning = Vec::new();
        self.spark_conf = String::new();
        self.sqls = Vec::new();
        self.derived = Vec::new();
        self
    }
}

fn lock(m: &std::sync::Mutex<Model>) -> Result<std::sync::MutexGuard<'_, Model>> {
    m.lock()
        .map_err(|_| PredictError::Invalid("the model lock is poisoned".into()))
}

/// A log that could not be qualified.
pub fn not_qualified(event_log: &str, status: Status, reason: String) -> AppQualification {
    AppQualification {
        job_id: None,
        config_id: None,
        shape_id: None,
        event_log: event_log.to_string(),
        status,
        status_reason: reason,
        app_id: String::new(),
        attempt_id: None,
        app_name: String::new(),
        start_ms: None,
        app_duration_ms: 0,
        sql_stage_durations_sum_ms: 0,
        unsupported_stage_duration_ms: 0,
        unsupported_stage_duration_pct: 0.0,
        speedup: qualx::app_speedup(&[], 0),
        qualx_speedup: 0.0,
        range: None,
        category: String::new(),
        sure_category: String::new(),
        confidence: None,
        not_recommended_reason: String::new(),
        skip_by_heuristics: false,
        sqls: Vec::new(),
        reasons: Vec::new(),
        spark_properties: BTreeMap::new(),
        java_command: None,
        executors: Default::default(),
        cluster: None,
        tuning: Vec::new(),
        spark_conf: String::new(),
        derived: Vec::new(),
    }
}

/// Each app of a session, as [`SessionFacts`] reads it.
const APPS_SQL: &str =
    "SELECT app_id, attempt_id, app_name, start_ms, spark_version FROM applications";
/// The properties qualification reads, as [`SessionFacts`] reads them.
const PROPS_SQL: &str = "SELECT app_id, key, value, category FROM properties
     WHERE category = 'spark' OR (category = 'system' AND key = 'sun.java.command')";

/// The result of a query run as a task of its own.
async fn joined<T>(task: tokio::task::JoinHandle<Result<T>>) -> Result<T> {
    task.await?
}

/// What qualification reads from one session's tables and views, for every app in it (one
/// query each, whatever the number of apps), by app id.
struct SessionFacts {
    apps: HashMap<String, Vec<Row>>,
    props: HashMap<String, Vec<Row>>,
    gpu_nodes: HashMap<String, Vec<Row>>,
    streaming: HashMap<String, Vec<Row>>,
    unsupported: HashMap<String, Vec<Row>>,
    /// Every app's feature rows (one per SQL), in the order read.
    features: Vec<qualx::FeatureRow>,
    /// The predictions of every app's features ([`SessionFacts::predict`]).
    predictions: HashMap<String, Vec<SqlPrediction>>,
    spill: HashMap<String, Vec<Row>>,
    heap: HashMap<String, Vec<Row>>,
    tuner: HashMap<String, crate::tuner::Inputs>,
}

impl SessionFacts {
    async fn read(ctx: &SessionContext, o: &QualifyOptions) -> Result<SessionFacts> {
        // every query planned and run side by side, each a task of its own: planning is
        // single-threaded work, and these are the last of a session
        let names = lock(&o.model)?.feature_names().to_vec();
        let spawn = |sql: String| {
            let ctx = ctx.clone();
            tokio::spawn(async move { rows_by_app(&ctx, &sql).await })
        };
        let apps = spawn(APPS_SQL.into());
        let props = spawn(PROPS_SQL.into());
        let gpu_nodes = spawn(
            "SELECT app_id, COUNT(*) AS n FROM sql_plan_nodes
             WHERE starts_with(node_name, 'Gpu') GROUP BY app_id"
                .into(),
        );
        let streaming = spawn(
            "SELECT app_id, COUNT(*) AS n FROM event_counts
             WHERE event LIKE '%StreamingQueryListener%' GROUP BY app_id"
                .into(),
        );
        let unsupported = spawn("SELECT * FROM unsupported_summary".into());
        let spill = spawn(format!(
            "WITH spills AS (
                 SELECT app_id, stage_id, SUM(memory_bytes_spilled) AS spilled
                 FROM tasks GROUP BY app_id, stage_id
             ),
             allowed AS (
                 SELECT DISTINCT app_id, UNNEST(stage_ids) AS stage_id FROM operators
                 WHERE node_name LIKE '%Aggregate%' OR node_name LIKE '%Join%'
                    OR node_name LIKE '%Sort%'
             )
             SELECT s.app_id, COUNT(*) AS n FROM spills s
             WHERE s.spilled > {}
               AND NOT EXISTS (SELECT 1 FROM allowed a
                               WHERE a.app_id = s.app_id AND a.stage_id = s.stage_id)
             GROUP BY s.app_id",
            o.settings.spill_heuristic_min_bytes
        ));
        let heap = spawn(
            "SELECT app_id, executor_memory_mib FROM resource_profiles
             WHERE resource_profile_id = 0"
                .into(),
        );
        let tuner = {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                crate::tuner::inputs(&ctx, crate::tuner::Mode::Qualification).await
            })
        };
        let features = {
            let (ctx, platform) = (ctx.clone(), o.platform);
            tokio::spawn(async move { qualx::feature_rows(&ctx, &names, platform).await })
        };
        Ok(SessionFacts {
            apps: joined(apps).await?,
            props: joined(props).await?,
            gpu_nodes: joined(gpu_nodes).await?,
            streaming: joined(streaming).await?,
            unsupported: joined(unsupported).await?,
            features: joined(features).await?,
            predictions: HashMap::new(),
            spill: joined(spill).await?,
            heap: joined(heap).await?,
            tuner: joined(tuner).await?,
        })
    }

    /// What the start of a log tells (the application and its properties): enough for the
    /// verdicts of logs whose reading stopped early ([`stop_rule`]); no view is read.
    async fn read_start(ctx: &SessionContext) -> Result<SessionFacts> {
        Ok(SessionFacts {
            apps: rows_by_app(ctx, APPS_SQL).await?,
            props: rows_by_app(ctx, PROPS_SQL).await?,
            gpu_nodes: HashMap::new(),
            streaming: HashMap::new(),
            unsupported: HashMap::new(),
            features: Vec::new(),
            predictions: HashMap::new(),
            spill: HashMap::new(),
            heap: HashMap::new(),
            tuner: HashMap::new(),
        })
    }

    /// Predict the features of every app at once: one call of the booster for the session
    /// (it spreads the rows over the cores) instead of one per app, each of which set the
    /// booster up again. Each row's prediction is the row's alone; they are grouped by app
    /// here, each app's in the order its rows were read.
    fn predict(&mut self, model: &std::sync::Mutex<Model>) -> Result<()> {
        let rows = std::mem::take(&mut self.features);
        for p in qualx::predict_sqls(&*lock(model)?, rows)? {
            self.predictions
                .entry(p.row.app_id.clone())
                .or_default()
                .push(p);
        }
        Ok(())
    }

    /// The first row `app` has in `rows`.
    fn first<'a>(rows: &'a HashMap<String, Vec<Row>>, app: &str) -> Option<&'a Row> {
        rows.get(app).and_then(|r| r.first())
    }

    /// The count (`n`) a grouped query found for `app` (0 when it has no row).
    fn count(rows: &HashMap<String, Vec<Row>>, app: &str) -> i64 {
        i(Self::first(rows, app).and_then(|r| r.get("n"))).unwrap_or(0)
    }
}

/// Qualify the app `app_id` (the log `event_log`, its rows keyed by `key` in the session) from
/// what was read of its session (its predictions and AutoTuner inputs are taken out of `facts`).
fn qualify_app(
    facts: &mut SessionFacts,
    key: &str,
    app_id: &str,
    event_log: &str,
    o: &QualifyOptions,
) -> Result<AppQualification> {
    let (model, platform, settings, explain) = (&o.model, o.platform, &o.settings, o.explain);
    let Some(app) = SessionFacts::first(&facts.apps, key) else {
        return Ok(not_qualified(
            event_log,
            Status::Unknown,
            "no application in the log (no SparkListenerApplicationStart)".into(),
        ));
    };
    let mut q = not_qualified(event_log, Status::Success, String::new());
    q.app_id = app_id.to_string();
    q.attempt_id = app
        .get("attempt_id")
        .and_then(Value::as_str)
        .map(String::from);
    q.app_name = s(app.get("app_name"));
    q.start_ms = i(app.get("start_ms"));
    let spark_version = s(app.get("spark_version"));
    if q.start_ms.is_none() {
        q.status = Status::Unknown;
        q.status_reason =
            "the log has no SparkListenerApplicationStart (application start unknown)".into();
        return Ok(q);
    }
    for r in facts.props.get(key).into_iter().flatten() {
        if s(r.get("category")) == "system" {
            q.java_command = Some(s(r.get("value")));
        } else {
            q.spark_properties
                .insert(s(r.get("key")), s(r.get("value")));
        }
    }
    let engine = Engine::of(|k| q.spark_properties.get(k).map(String::as_str));
    // the properties' verdicts first, as the reference decides them at the environment
    // update, before any later event (and as a log whose reading stopped there is judged)
    let skipped = if engine == Engine::Rapids || SessionFacts::count(&facts.gpu_nodes, key) > 0 {
        Some(GPU_RUN.to_string())
    } else if let Some(r) = missing_runtime(&engine, platform) {
        Some(r)
    } else if SessionFacts::count(&facts.streaming, key) > 0 {
        Some("a Spark Structured Streaming app: not qualified".to_string())
    } else {
        None
    };
    if let Some(reason) = skipped {
        q.status = Status::Skipped;
        q.status_reason = reason;
        return Ok(q);
    }

    if let Some(u) = SessionFacts::first(&facts.unsupported, key) {
        q.app_duration_ms = i(u.get("app_duration_ms")).unwrap_or(0);
        q.sql_stage_durations_sum_ms = i(u.get("sql_stage_durations_sum_ms")).unwrap_or(0);
        q.unsupported_stage_duration_ms = i(u.get("unsupported_stage_duration_ms")).unwrap_or(0);
        q.unsupported_stage_duration_pct =
            f(u.get("unsupported_stage_duration_pct")).unwrap_or(0.0);
    }

    q.sqls = facts.predictions.remove(key).unwrap_or_default();
    for p in q.sqls.iter_mut() {
        p.row.app_id = app_id.to_string();
    }
    {
        let refs: Vec<&SqlPrediction> = q.sqls.iter().collect();
        q.speedup = qualx::app_speedup(&refs, q.app_duration_ms);
        q.reasons = qualx::top_reasons(&*lock(model)?, &refs, explain);
    }
    // how far to trust it: a range (and the calibrated speedup, with a saved calibration)
    q.qualx_speedup = q.speedup.speedup;
    if q.speedup.was_predicted {
        let r = o.trust.range(q.speedup.speedup);
        if matches!(r.source, crate::calibrate::Source::Calibrated { .. }) && r.speedup > 0.0 {
            q.speedup.speedup = r.speedup;
            q.speedup.app_duration_pred_ms =
                (q.speedup.app_duration_ms as f64 / r.speedup).round() as i64;
        }
        q.range = Some(r);
    }

    if SessionFacts::count(&facts.spill, key) > 0 {
        q.skip_by_heuristics = true;
        q.not_recommended_reason = format!(
            "Skipping due to total data spill in stages exceeding {}",
            human_bytes(settings.spill_heuristic_min_bytes)
        );
    }
    let mut tuner = facts.tuner.remove(key).unwrap_or_default();
    tuner.props = q.spark_properties.clone();
    tuner.spark_version = spark_version;
    let heap = SessionFacts::first(&facts.heap, key).and_then(|r| i(r.get("executor_memory_mib")));
    q.executors = executor_facts(heap, &q.spark_properties, &tuner);
    let target = match &o.catalog {
        Some(cat) => {
            let mut rec = crate::cluster::recommend(
                cat,
                &o.region,
                &o.gpu_families,
                &q.executors,
                q.app_duration_ms,
                q.speedup.app_duration_pred_ms,
            );
            if let Some(r) = &q.range {
                rec.with_range(q.speedup.speedup, r.low, r.high);
            }
            let t = rec.recommended.clone();
            q.cluster = Some(rec);
            t
        }
        None => crate::cluster::reference_shape(&q.executors),
    };
    q.tuning = crate::tuner::bootstrap(&tuner, &target.worker());
    q.spark_conf = crate::tuner::render_bootstrap(&q.app_id, &target.summary(), &q.tuning);
    let (category, reason) = categorize(
        q.speedup.speedup,
        q.unsupported_stage_duration_pct,
        q.skip_by_heuristics,
        &q.not_recommended_reason,
        settings,
    );
    q.category = category;
    q.not_recommended_reason = reason;
    q.sure_category = match &q.range {
        Some(r) => {
            categorize(
                r.low,
                q.unsupported_stage_duration_pct,
                q.skip_by_heuristics,
                "",
                settings,
            )
            .0
        }
        None => q.category.clone(),
    };
    q.confidence = q
        .range
        .as_ref()
        .map(|r| r.against(settings.gpu_speedup_min));
    Ok(q)
}

const GPU_RUN: &str = "a GPU run (the RAPIDS plugin ran it): nothing to qualify";

/// Why the app cannot be qualified as a CPU Spark app on `platform` (Databricks Photon
/// elsewhere; Gluten's native engine anywhere), if so.
fn missing_runtime(engine: &Engine, platform: ModelPlatform) -> Option<String> {
    match engine {
        Engine::Photon if !platform.has_photon() => Some(format!(
            "a Databricks Photon app: platform '{platform}' has no Photon"
        )),
        Engine::Gluten { .. } => Some(format!(
            "a {engine} app: its SQL ran on Gluten's native engine, not Spark's CPU operators the \
             qualification judges"
        )),
        _ => None,
    }
}

/// Ends a log's reading once its Spark properties settle its verdict (a GPU run, a runtime
/// the platform lacks): the rest of the log cannot change it, and is not read.
pub fn stop_rule(platform: ModelPlatform) -> aether_ingest::StopRule {
    aether_ingest::StopRule(std::sync::Arc::new(move |props: &[(String, String)]| {
        // the last value of a key counts, as in the properties table
        match Engine::of_list(props) {
            Engine::Rapids => Some(GPU_RUN.to_string()),
            engine => missing_runtime(&engine, platform),
        }
    }))
}

/// Executors, cores, hosts (as the AutoTuner's inputs count them) and heap (the default
/// resource profile's executor memory, else `spark.executor.memory`) from the log.
fn executor_facts(
    heap_mib: Option<i64>,
    props: &BTreeMap<String, String>,
    tuner: &crate::tuner::Inputs,
) -> crate::cluster::ExecutorFacts {
    let heap = heap_mib
        .or_else(|| {
            props
                .get("spark.executor.memory")
                .and_then(|v| aether_udfs::parse_size::parse(v, "m"))
                .map(|b| b >> 20)
        })
        .unwrap_or(1024);
    let (cores, execs) = tuner.cores_and_executors().unwrap_or((1, 0));
    crate::cluster::ExecutorFacts {
        cores_per_executor: cores,
        num_executors: execs,
        hosts: tuner.hosts,
        heap_mib: heap,
        dynamic_allocation: props
            .get("spark.dynamicAllocation.enabled")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
    }
}

/// The speedup category and the not-recommended reason, with the reference tool's rules: the
/// category from the speedup's range, then `Not Recommended` when the speedup or the unsupported
/// share is out of bounds or a heuristic skipped the app.
pub fn categorize(
    speedup: f64,
    unsupported_pct: f64,
    skipped_by_heuristics: bool,
    heuristic_reason: &str,
    s: &AnalysisSettings,
) -> (String, String) {
    let mut category = if speedup < s.category_small_min {
        "Not Applicable"
    } else if speedup < s.category_medium_min {
        "Small"
    } else if speedup < s.category_large_min {
        "Medium"
    } else {
        "Large"
    };
    let mut reasons: Vec<String> = Vec::new();
    if !heuristic_reason.is_empty() {
        reasons.push(heuristic_reason.to_string());
    }
    if !(s.gpu_speedup_min..=s.gpu_speedup_max).contains(&speedup) {
        reasons.push("GPU SpeedUp < Qualifying Threshold (More is qualified)".into());
        category = "Not Recommended";
    }
    if !(0.0..=s.unsupported_pct_max).contains(&unsupported_pct) {
        reasons.push(
            "Unsupported Operators Stage Duration Percent > Qualifying Threshold (Less is qualified)"
                .into(),
        );
        category = "Not Recommended";
    }
    if skipped_by_heuristics {
        category = "Not Recommended";
    }
    let reason = if reasons.is_empty() {
        "N/A".to_string()
    } else {
        reasons.join(", ")
    };
    (category.to_string(), reason)
}

fn human_bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2} {}", units[u])
}

/// How to qualify many logs.
pub struct QualifyOptions {
    pub platform: ModelPlatform,
    pub model: std::sync::Mutex<Model>,
    pub settings: AnalysisSettings,
    /// How many top reasons (SHAP) to keep per app.
    pub explain: usize,
    pub ingest: aether_ingest::IngestOptions,
    /// Instance specs and prices for the cluster shapes (EMR); `None`: no shapes.
    pub catalog: Option<crate::cluster::Catalog>,
    /// The AWS region the prices are for.
    pub region: String,
    /// GPU instance families (or types) the recommendation may use.
    pub gpu_families: Vec<String>,
    /// Small logs judged together in one session, at most this many (1: one session per log;
    /// default [`BATCH_LOGS`]).
    pub batch_logs: usize,
    /// What the speedup ranges (and a calibrated speedup) come from.
    pub trust: crate::calibrate::Trust,
    /// Keep each app's rows of [`DERIVED_VIEWS`] in [`AppQualification::derived`] (the per-app
    /// tables a fleet warehouse holds).
    pub derive: bool,
}

/// Logs judged together in one session: at most this many logs by default…
pub const BATCH_LOGS: usize = 64;
/// …and this many bytes of (uncompressed) log text. A larger log is judged at once, with the
/// fullest batch still open (see [`Batcher::add`]).
const BATCH_BYTES: u64 = 128 << 20;

/// Groups logs as they are read into batches judged together: at most `max_logs` logs and
/// `max_bytes` bytes of log text each (logs of one app id may share a batch: each is judged
/// under its own key, see [`qualify_session`]).
struct Batcher<T> {
    open: Vec<Batch<T>>,
    max_logs: usize,
    max_bytes: u64,
    /// Batches kept open at once; beyond it the fullest is handed over, so memory stays
    /// bounded.
    max_open: usize,
}

struct Batch<T> {
    items: Vec<T>,
    bytes: u64,
}

impl<T> Batcher<T> {
    fn new(max_logs: usize, max_bytes: u64, max_open: usize) -> Self {
        Batcher {
            open: Vec::new(),
            max_logs: max_logs.max(1),
            max_bytes,
            max_open: max_open.max(1),
        }
    }

    /// Add a log of `bytes` bytes; returns a batch ready to be judged, if any. A log as large
    /// as a batch is judged without waiting, together with the fullest open batch (an open
    /// batch always has room for one more log): one session instead of two, since a session's
    /// planning costs as much as judging dozens of small logs.
    fn add(&mut self, item: T, bytes: u64) -> Option<Vec<T>> {
        if bytes >= self.max_bytes || self.max_logs == 1 {
            let mut batch = self.take_fullest().unwrap_or_default();
            batch.push(item);
            return Some(batch);
        }
        let (max_logs, max_bytes) = (self.max_logs, self.max_bytes);
        let i = match self
            .open
            .iter()
            .position(|b| b.bytes + bytes <= max_bytes && b.items.len() < max_logs)
        {
            Some(i) => i,
            None => {
                self.open.push(Batch {
                    items: Vec::new(),
                    bytes: 0,
                });
                self.open.len() - 1
            }
        };
        let b = &mut self.open[i];
        b.items.push(item);
        b.bytes += bytes;
        if b.items.len() >= max_logs || b.bytes >= max_bytes {
            return Some(self.open.remove(i).items);
        }
        if self.open.len() > self.max_open {
            return self.take_fullest();
        }
        None
    }

    /// The batch holding the most (the oldest of equals), taken out of the open ones.
    fn take_fullest(&mut self) -> Option<Vec<T>> {
        let fullest = (0..self.open.len())
            .rev()
            .max_by_key(|&j| (self.open[j].bytes, self.open[j].items.len()))?;
        Some(self.open.remove(fullest).items)
    }

    /// The batches still open.
    fn finish(self) -> Vec<Vec<T>> {
        self.open.into_iter().map(|b| b.items).collect()
    }
}

/// Qualify every log named by `inputs` (paths, globs, directories, `s3://` URLs), several at a
/// time (see [`qualify_logs`]), into one list in input order: the selection's left-out logs
/// last, and of several attempts of one app only the newest qualified (the older ones become
/// SKIPPED). `each(result, done, total)` is called (from worker threads) as soon as each log
/// is judged. Every result is kept: for a fleet, [`qualify_logs`] into
/// [`crate::outputs::Outputs`] keeps memory flat instead.
pub fn qualify_inputs(
    inputs: &[String],
    o: &QualifyOptions,
    each: impl Fn(&mut AppQualification, usize, usize) + Sync,
) -> Vec<AppQualification> {
    let rt = aether_ingest::io_runtime();
    let found = aether_ingest::discover(inputs, &o.ingest, &rt);
    let results: std::sync::Mutex<Vec<(u64, AppQualification)>> = Default::default();
    qualify_logs(
        &found.logs,
        found.errors,
        o,
        &rt,
        |key, mut q, _, done, total| {
            each(&mut q, done, total);
            if let Ok(mut r) = results.lock() {
                r.push((key, q));
            }
        },
    );
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|(k, _)| *k);
    let mut out: Vec<AppQualification> = results.into_iter().map(|(_, q)| q).collect();
    skip_older_attempts(&mut out);
    out.extend(left_out(found.skipped));
    out
}

/// The logs the selection left out, as results: `SKIPPED` with the reason.
pub fn left_out(skipped: Vec<aether_ingest::Skipped>) -> impl Iterator<Item = AppQualification> {
    skipped
        .into_iter()
        .map(|s| not_qualified(&s.log, Status::Skipped, s.reason))
}

/// Judge logs already discovered, several at a time. Small logs are judged in batches (one
/// session, each query run once for all the apps in it: planning costs far more than the work
/// on a small log); a log larger than [`BATCH_BYTES`] is judged as soon as it is read, together
/// with the fullest batch still open (if any). Memory stays bounded by the logs in flight and
/// one batch: nothing is kept here once `each` has it.
///
/// `each(key, result, read, done, total)` is called (from worker threads) as soon as each log
/// is judged, `key` its place in `logs` (the unreadable inputs of `source_errors` after them:
/// `logs.len() + i`); with `o.derive` it also gets the log and what was read of it (its
/// tables), to keep them in a warehouse (else `None`: nothing is kept past its batch). Of
/// several attempts of one app, each is given as qualified: which is newest is known only at
/// the end ([`crate::outputs::Outputs::finish`]).
pub fn qualify_logs(
    logs: &[aether_ingest::LogSource],
    source_errors: Vec<aether_ingest::SourceError>,
    o: &QualifyOptions,
    rt: &tokio::runtime::Runtime,
    each: impl Fn(
        u64,
        AppQualification,
        Option<(&aether_ingest::LogSource, &aether_ingest::LogOutcome)>,
        usize,
        usize,
    ) + Sync,
) {
    let index: HashMap<&str, usize> = logs
        .iter()
        .enumerate()
        .map(|(i, l)| (l.display.as_str(), i))
        .collect();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let judge = |batch: Vec<(aether_ingest::LogSource, aether_ingest::LogOutcome)>| {
        // what was read of each log, for a caller keeping it (its batches shared, not copied)
        let read: HashMap<String, (aether_ingest::LogSource, aether_ingest::LogOutcome)> =
            if o.derive {
                batch
                    .iter()
                    .map(|(l, lo)| (l.display.clone(), (l.clone(), lo.clone())))
                    .collect()
            } else {
                HashMap::new()
            };
        for (name, q) in qualify_batch(batch, o) {
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let src = read.get(&name).map(|(l, lo)| (l, lo));
            each(index[name.as_str()] as u64, q, src, n, logs.len());
        }
    };
    let threads = match o.ingest.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let batcher = std::sync::Mutex::new(Batcher::new(o.batch_logs, BATCH_BYTES, 2 * threads));
    // a warehouse keeps every log's tables whole; else a log is read only as far as it matters
    let mut ingest = o.ingest.clone();
    if !o.derive {
        ingest.stop = Some(stop_rule(o.platform));
    }
    let read = |log: &aether_ingest::LogSource, out: aether_ingest::LogOutcome| {
        let bytes = out.bytes;
        let item = (log.clone(), out);
        // a log stopped early is judged at once, from its start alone (no views to compute)
        let batched = item.1.app.is_some() && item.1.stopped.is_none();
        let ready = match batcher.lock() {
            Ok(mut b) if batched => b.add(item, bytes),
            _ => Some(vec![item]),
        };
        if let Some(batch) = ready {
            judge(batch);
        }
    };
    // a reader with no log left to start judges the open batches while the others still read
    // (the largest logs are read first and last longest)
    let idle = || {
        while let Some(batch) = batcher.lock().ok().and_then(|mut b| b.take_fullest()) {
            judge(batch);
        }
    };
    aether_ingest::read_logs_then(logs, &ingest, rt, read, idle);
    // the batches left, several at a time
    let rest = batcher
        .into_inner()
        .map(Batcher::finish)
        .unwrap_or_default();
    let queue = std::sync::Mutex::new(rest.into_iter());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while let Some(batch) = queue.lock().ok().and_then(|mut q| q.next()) {
                    judge(batch);
                }
            });
        }
    });
    for (i, e) in source_errors.into_iter().enumerate() {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let q = not_qualified(&e.path, Status::Failure, e.error);
        each((logs.len() + i) as u64, q, None, n, logs.len());
    }
}

/// An app's attempt number (`attempt_id`, 0 when absent or not a number): of several qualified
/// logs of one app id, only the highest counts.
pub fn attempt(q: &AppQualification) -> i64 {
    q.attempt_id
        .as_deref()
        .and_then(|a| a.trim().parse::<i64>().ok())
        .unwrap_or(0)
}

/// Why a qualified app's older attempt is SKIPPED.
pub fn older_attempt(app_id: &str, attempt: i64) -> String {
    format!("app {app_id}: attempt {attempt} skipped, a newer attempt is qualified")
}

/// Of qualified apps given as (key, app id, attempt), the keys of those a newer attempt of the
/// same app id supersedes: of several qualified logs of one app, only the newest counts.
pub fn older_attempts<'a, I>(apps: I) -> std::collections::HashSet<u64>
where
    I: IntoIterator<Item = (u64, &'a str, i64)>,
    I::IntoIter: Clone,
{
    let apps = apps.into_iter();
    let mut newest: HashMap<&str, i64> = HashMap::new();
    for (_, id, a) in apps.clone() {
        let e = newest.entry(id).or_insert(a);
        *e = (*e).max(a);
    }
    apps.filter(|(_, id, a)| *a < newest[id])
        .map(|(k, _, _)| k)
        .collect()
}

/// Of several qualified logs of one app id with different attempt ids, keep the newest attempt
/// ([`older_attempts`]): the older ones become SKIPPED.
fn skip_older_attempts(out: &mut [AppQualification]) {
    let older = older_attempts(
        out.iter()
            .enumerate()
            .filter(|(_, q)| q.status == Status::Success)
            .map(|(i, q)| (i as u64, q.app_id.as_str(), attempt(q))),
    );
    for (i, q) in out.iter_mut().enumerate() {
        if older.contains(&(i as u64)) {
            q.status = Status::Skipped;
            q.status_reason = older_attempt(&q.app_id, attempt(q));
        }
    }
}

/// Judge logs already read, in one session (distinct app ids). When the session fails, each
/// log is judged on its own, so that one bad log fails alone.
fn qualify_batch(
    batch: Vec<(aether_ingest::LogSource, aether_ingest::LogOutcome)>,
    o: &QualifyOptions,
) -> Vec<(String, AppQualification)> {
    let mut out = Vec::new();
    let mut readable = Vec::new();
    for (log, lo) in batch {
        match &lo.app {
            Some(app) => readable.push((log, app.app_id.clone(), lo)),
            None => {
                let reason = lo
                    .errors
                    .first()
                    .map(|e| e.error.clone())
                    .unwrap_or_else(|| "no Spark events in the file".into());
                out.push((
                    log.display.clone(),
                    not_qualified(&log.display, Status::Failure, reason),
                ));
            }
        }
    }
    if readable.is_empty() {
        return out;
    }
    let t0 = std::time::Instant::now();
    let res = qualify_session(&readable, o);
    tracing::debug!(
        logs = readable.len(),
        elapsed_ms = t0.elapsed().as_millis() as u64,
        "qualified"
    );
    match res {
        Ok(qs) => out.extend(qs),
        Err(e) if readable.len() == 1 => {
            let name = readable[0].0.display.clone();
            out.push((
                name.clone(),
                not_qualified(&name, Status::Failure, format!("{e:#}")),
            ));
        }
        Err(e) => {
            tracing::debug!(error = %format!("{e:#}"), "a batch failed: judging its logs one by one");
            for (log, _, lo) in readable {
                out.extend(qualify_batch(vec![(log, lo)], o));
            }
        }
    }
    out
}

/// Every view qualification reads (materialized once per session; the others are not
/// registered).
const QUALIFY_VIEWS: &[&str] = &[
    "operators",
    "stage_jobs",
    "stage_wall",
    "app_duration",
    "unsupported_summary",
    "qualx_stage_agg",
    "qualx_node_metrics",
    "qualx_node_stages",
    "qualx_plan_nodes",
    "qualx_sql_agg",
    "qualx_op_flags",
    "qualx_features",
    "profile_shuffle_skew_check",
];

/// The views whose rows [`QualifyOptions::derive`] keeps per app.
pub const DERIVED_VIEWS: &[&str] = &["bottlenecks", "operators", "unsupported_summary"];

/// Judge logs (each with its app id) in one session. Each log's rows are keyed by its app id,
/// or, for a second log of the same app (another attempt, a copy), by a key of its own.
fn qualify_session(
    logs: &[(aether_ingest::LogSource, String, aether_ingest::LogOutcome)],
    o: &QualifyOptions,
) -> Result<Vec<(String, AppQualification)>> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut keys = Vec::with_capacity(logs.len());
    let mut outcomes = Vec::with_capacity(logs.len());
    for (log, app_id, lo) in logs {
        let n = seen.entry(app_id.as_str()).or_insert(0);
        *n += 1;
        let mut lo = lo.clone();
        let key = if *n == 1 {
            app_id.clone()
        } else {
            // not a character of any app id Spark makes
            let key = format!("{app_id}\u{1f}{n}");
            if let Some(app) = lo.app.as_mut() {
                for (_, b) in app.batches.iter_mut() {
                    *b = aether_engine::with_value(b, "app_id", &key)?;
                }
                app.app_id = key.clone();
            }
            key
        };
        keys.push(key);
        outcomes.push((log, lo));
    }
    let ing = aether_ingest::ingested_batch(outcomes);
    // the views computed side by side once what they read is (aether_engine::define_views):
    // a session alone at the end of a run (the largest log's) has the cores to itself
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.ingest.threads())
        .build()
        .map_err(PredictError::io("an async runtime"))?;
    let (mut facts, derived) = rt.block_on(async {
        // plans kept from the process's earlier sessions (the first plans them)
        let ctx = aether_engine::plans::session_with_cached_plans(1);
        aether_engine::register_ingested(&ctx, &ing)?;
        if logs.iter().all(|(_, _, lo)| lo.stopped.is_some()) {
            return Ok::<_, PredictError>((SessionFacts::read_start(&ctx).await?, Vec::new()));
        }
        let mut views = QUALIFY_VIEWS.to_vec();
        if o.derive {
            let extra: Vec<&str> = DERIVED_VIEWS
                .iter()
                .copied()
                .filter(|v| !QUALIFY_VIEWS.contains(v))
                .collect();
            views.extend(extra);
        }
        aether_engine::views::register_views_materialized(&ctx, &o.settings, &views).await?;
        let facts = SessionFacts::read(&ctx, o).await?;
        // each derived view's rows for every app of the session, as one batch
        let mut derived: Vec<(&str, RecordBatch)> = Vec::new();
        if o.derive {
            for v in DERIVED_VIEWS {
                let (schema, batches) =
                    aether_engine::query(&ctx, &format!("SELECT * FROM {v}")).await?;
                let schema = aether_engine::nullable(&schema, false);
                let batches = batches
                    .into_iter()
                    .map(|b| b.with_schema(schema.clone()))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                let all = datafusion::arrow::compute::concat_batches(&schema, &batches)?;
                derived.push((v, all));
            }
        }
        Ok::<_, PredictError>((facts, derived))
    })?;
    facts.predict(&o.model)?;
    logs.iter()
        .zip(&keys)
        .map(|((log, app_id, lo), key)| {
            let name = log.display.clone();
            let mut q = qualify_app(&mut facts, key, app_id, &name, o)?;
            if o.derive {
                q.derived = derived
                    .iter()
                    .map(|(v, all)| {
                        let rows = aether_engine::rows_where(all, "app_id", key)?;
                        Ok((
                            v.to_string(),
                            aether_engine::with_value(&rows, "app_id", app_id)?,
                        ))
                    })
                    .collect::<Result<_>>()?;
            }
            if let (Some(first), Status::Success) = (lo.errors.first(), q.status) {
                q.status_reason = format!(
                    "{} unreadable line(s) skipped, first: {}",
                    lo.errors.len(),
                    first.error
                );
            }
            Ok((name, q))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Of several qualified logs of one app id only the newest attempt counts (a missing or
    /// unreadable attempt id is 0); logs not qualified take no part.
    #[test]
    fn only_an_apps_newest_attempt_is_qualified() {
        let app = |id: &str, attempt: Option<&str>, status: Status| {
            let mut q = not_qualified("/logs/x", status, String::new());
            q.app_id = id.into();
            q.attempt_id = attempt.map(Into::into);
            q
        };
        let mut out = vec![
            app("a", Some("1"), Status::Success),
            app("a", Some("3"), Status::Failure),
            app("a", Some("2"), Status::Success),
            app("b", None, Status::Success),
            app("b", Some("x"), Status::Success),
            app("c", Some("1"), Status::Success),
            app("c", None, Status::Success),
        ];
        skip_older_attempts(&mut out);
        let status: Vec<Status> = out.iter().map(|q| q.status).collect();
        use Status::{Failure, Skipped, Success};
        assert_eq!(
            status,
            [
                Skipped, Failure, Success, Success, Success, Success, Skipped
            ]
        );
        assert_eq!(out[0].status_reason, older_attempt("a", 1));
        assert_eq!(out[6].status_reason, older_attempt("c", 0));
    }

    #[test]
    fn batches_hold_logs_within_bounds() {
        let mut b = Batcher::new(3, 100, 2);
        assert_eq!(b.add(1, 10), None);
        assert_eq!(b.add(2, 10), None);
        // the first batch is full at 3 logs
        assert_eq!(b.add(3, 10), Some(vec![1, 2, 3]));
        // a log as large as a batch, no batch open: judged alone
        assert_eq!(b.add(4, 100), Some(vec![4]));
        assert_eq!(b.add(5, 10), None);
        // 10 + 95 > 100 bytes: another batch
        assert_eq!(b.add(6, 95), None);
        // the first batch with room: full at 100 bytes
        assert_eq!(b.add(7, 90), Some(vec![5, 7]));
        assert_eq!(b.add(8, 60), None);
        // at most 2 batches stay open: the one holding the most bytes is handed over
        assert_eq!(b.add(9, 60), Some(vec![6]));
        // of equals, the oldest
        assert_eq!(b.add(10, 50), Some(vec![8]));
        // a log as large as a batch takes the fullest open batch with it
        assert_eq!(b.add(11, 100), Some(vec![9, 11]));
        assert_eq!(b.add(12, 500), Some(vec![10, 12]));
        assert_eq!(b.add(13, 100), Some(vec![13]));
        assert_eq!(b.add(14, 10), None);
        assert_eq!(b.add(15, 10), None);
        assert_eq!(b.add(16, 85), None);
        assert_eq!(b.finish(), vec![vec![14, 15], vec![16]]);
        // one log per batch
        let mut one = Batcher::new(1, 100, 2);
        assert_eq!(one.add(1, 1), Some(vec![1]));
        assert!(one.finish().is_empty());
    }

    fn options() -> QualifyOptions {
        QualifyOptions {
            platform: ModelPlatform::Emr,
            model: std::sync::Mutex::new(Model::builtin(ModelPlatform::Emr).unwrap()),
            settings: Default::default(),
            explain: 3,
            ingest: Default::default(),
            catalog: None,
            region: "us-east-1".into(),
            gpu_families: vec!["g6".into()],
            batch_logs: BATCH_LOGS,
            derive: false,
            trust: Default::default(),
        }
    }

    /// The properties that settle a verdict stop the reading, with the verdict qualify gives
    /// the app; others (or Photon on a platform that has it) do not.
    #[test]
    fn the_stop_rule_stops_at_gpu_runs_and_missing_runtimes() {
        let props = |kv: &[(&str, &str)]| -> Vec<(String, String)> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let plugin = ("spark.plugins", "com.nvidia.spark.SQLPlugin");
        let photon = ("spark.databricks.clusterUsageTags.runtimeEngine", "PHOTON");
        let emr = stop_rule(ModelPlatform::Emr);
        assert_eq!((emr.0)(&props(&[plugin])).as_deref(), Some(GPU_RUN));
        assert_eq!(
            (emr.0)(&props(&[plugin, ("spark.rapids.sql.enabled", "false")])),
            None
        );
        // the last value of a key counts
        let off_then_on = [
            plugin,
            ("spark.rapids.sql.enabled", "false"),
            ("spark.rapids.sql.enabled", "true"),
        ];
        assert_eq!((emr.0)(&props(&off_then_on)).as_deref(), Some(GPU_RUN));
        assert_eq!(
            (emr.0)(&props(&[photon])).as_deref(),
            Some("a Databricks Photon app: platform 'emr' has no Photon")
        );
        assert_eq!(
            (stop_rule(ModelPlatform::DatabricksAws).0)(&props(&[photon])),
            None
        );
        assert_eq!((emr.0)(&props(&[("spark.master", "yarn")])), None);
        // Gluten: on every platform, named with its backend
        let gluten = [
            ("spark.plugins", "org.apache.gluten.GlutenPlugin"),
            ("spark.gluten.sql.columnar.backend.lib", "velox"),
        ];
        for platform in [ModelPlatform::Emr, ModelPlatform::DatabricksAws] {
            assert_eq!(
                (stop_rule(platform).0)(&props(&gluten)).as_deref(),
                Some(
                    "a Gluten (Velox) app: its SQL ran on Gluten's native engine, not Spark's \
                     CPU operators the qualification judges"
                )
            );
        }
    }

    /// The bundled sample logs, read.
    fn sample_read(
        o: &QualifyOptions,
    ) -> Vec<(aether_ingest::LogSource, aether_ingest::LogOutcome)> {
        let rt = aether_ingest::io_runtime();
        let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/sample");
        let found = aether_ingest::discover(&[sample.to_string()], &o.ingest, &rt);
        let (logs, errors) = (found.logs, found.errors);
        assert!(errors.is_empty() && logs.len() >= 4, "{errors:?}");
        let read = std::sync::Mutex::new(Vec::new());
        aether_ingest::read_logs(&logs, &o.ingest, &rt, |l, out| {
            read.lock().unwrap().push((l.clone(), out))
        });
        let mut batch = read.into_inner().unwrap();
        batch.sort_by(|a, b| a.0.display.cmp(&b.0.display));
        batch
    }

    /// Logs of one app id (here each sample log twice, as two files) judged in one session get
    /// exactly what each gets alone: a second log's rows are keyed apart from the first's, and
    /// its results (app id, per-SQL rows, the Spark configs) name the app, not that key.
    #[test]
    fn logs_of_one_app_in_one_session_judged_as_alone() {
        let mut o = options();
        o.derive = true;
        let read = sample_read(&o);
        let alone: Vec<(String, AppQualification)> = read
            .iter()
            .flat_map(|item| qualify_batch(vec![item.clone()], &o))
            .collect();
        assert!(alone.iter().all(|(_, q)| q.status == Status::Success));
        let mut batch = Vec::new();
        for (log, lo) in &read {
            batch.push((log.clone(), lo.clone()));
            let mut copy = log.clone();
            copy.display = format!("{}-copy", log.display);
            batch.push((copy, lo.clone()));
        }
        let got = qualify_batch(batch, &o);
        assert_eq!(got.len(), 2 * alone.len());
        for (name, want) in &alone {
            for copy in [name.clone(), format!("{name}-copy")] {
                let (_, q) = got.iter().find(|(n, _)| *n == copy).unwrap();
                let mut q = format!("{q:?}");
                if copy != *name {
                    q = q.replace(&copy, name);
                }
                assert!(
                    !q.contains('\u{1f}'),
                    "{copy}: a session key in the results"
                );
                assert_eq!(q, format!("{want:?}"), "{copy}");
            }
        }
    }

    /// A batch whose session cannot be built (here: one log's `tasks` table has another
    /// table's columns) is judged again one log per session: that log fails with the reason,
    /// the others get exactly their own results.
    #[test]
    fn a_failed_batch_is_judged_one_log_per_session() {
        let o = options();
        let mut batch = sample_read(&o);
        let alone: Vec<(String, AppQualification)> = batch
            .iter()
            .flat_map(|item| qualify_batch(vec![item.clone()], &o))
            .collect();
        assert!(alone.iter().all(|(_, q)| q.status == Status::Success));

        let (mut log, mut broken) = batch[0].clone();
        log.display = "broken-log".into();
        let app = broken.app.as_mut().unwrap();
        app.app_id = "broken-app".into();
        let jobs = app
            .batches
            .iter()
            .find(|(n, _)| *n == "jobs")
            .unwrap()
            .1
            .clone();
        for (name, b) in app.batches.iter_mut() {
            if *name == "tasks" {
                *b = jobs.clone();
            }
        }
        batch.insert(1, (log, broken));
        let got = qualify_batch(batch, &o);
        assert_eq!(got.len(), alone.len() + 1);
        let (name, q) = got.iter().find(|(n, _)| n == "broken-log").unwrap();
        assert_eq!((name.as_str(), q.status), ("broken-log", Status::Failure));
        assert!(
            q.status_reason.contains("tasks") || q.status_reason.contains("schema"),
            "{}",
            q.status_reason
        );
        for (name, want) in &alone {
            let (_, q) = got.iter().find(|(n, _)| n == name).unwrap();
            assert_eq!(format!("{q:?}"), format!("{want:?}"), "{name}");
        }
    }
}
