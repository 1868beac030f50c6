//! The job history: an embedded SQLite database (WAL) at `core.history_db`.
//!
//! One *job* per application run (app id, attempt, event log): qualifying the same log again
//! returns the same job id. Each qualification adds a row with the CPU run's figures, the
//! prediction, the GPU cluster shape, the Spark configs and the costs. The schema is versioned
//! (`PRAGMA user_version`) and upgraded by the migrations below, in order, each in one
//! transaction. Writers take the write lock up front (`BEGIN IMMEDIATE`) and wait up to 30 s for
//! another process's; every record is one transaction, so a process killed mid-run leaves
//! every completed record and nothing half-written.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

/// Errors of the job history, naming the database file.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("job history {path}: {error}")]
    Db { path: String, error: String },
    #[error(
        "job history {path}: schema version {found} is newer than this aether knows ({known}); upgrade aether"
    )]
    TooNew {
        path: String,
        found: i64,
        known: i64,
    },
}

pub type Result<T> = std::result::Result<T, HistoryError>;

/// The migrations, in order: migration *i* brings the schema from version *i* to *i + 1*.
const MIGRATIONS: &[&str] = &[
    // 1: jobs, their CPU runs and qualifications
    "CREATE TABLE jobs (
         job_id      INTEGER PRIMARY KEY,
         app_id      TEXT NOT NULL,
         attempt_id  TEXT NOT NULL DEFAULT '',
         event_log   TEXT NOT NULL,
         app_name    TEXT,
         created_ms  INTEGER NOT NULL,
         UNIQUE (app_id, attempt_id, event_log)
     );
     CREATE TABLE cpu_runs (
         job_id                     INTEGER PRIMARY KEY REFERENCES jobs(job_id),
         start_ms                   INTEGER,
         app_duration_ms            INTEGER,
         sql_stage_durations_sum_ms INTEGER,
         unsupported_stage_duration_ms INTEGER,
         metrics_json               TEXT,
         updated_ms                 INTEGER NOT NULL
     );
     CREATE TABLE qualifications (
         qualification_id       INTEGER PRIMARY KEY,
         job_id                 INTEGER NOT NULL REFERENCES jobs(job_id),
         created_ms             INTEGER NOT NULL,
         platform               TEXT NOT NULL,
         model                  TEXT NOT NULL,
         speedup                REAL,
         app_duration_pred_ms   INTEGER,
         category               TEXT,
         not_recommended_reason TEXT,
         unsupported_pct        REAL,
         reasons_json           TEXT,
         cpu_cluster_json       TEXT,
         gpu_cluster_json       TEXT,
         spark_conf             TEXT,
         cpu_cost_usd           REAL,
         gpu_cost_usd           REAL,
         savings_usd            REAL
     );
     CREATE INDEX qualifications_job ON qualifications(job_id, created_ms);",
    // 2: what a job is (to run it again), stored Spark configs, the clusters aether made and
    // the runs of each job (the CPU original and every GPU test)
    "CREATE TABLE job_definitions (
         job_id          INTEGER PRIMARY KEY REFERENCES jobs(job_id),
         source          TEXT NOT NULL,
         definition_json TEXT NOT NULL,
         updated_ms      INTEGER NOT NULL
     );
     CREATE TABLE configs (
         config_id        INTEGER PRIMARY KEY,
         job_id           INTEGER NOT NULL REFERENCES jobs(job_id),
         source           TEXT NOT NULL,
         qualification_id INTEGER REFERENCES qualifications(qualification_id),
         properties_json  TEXT NOT NULL,
         created_ms       INTEGER NOT NULL
     );
     CREATE INDEX configs_job ON configs(job_id, config_id);
     CREATE TABLE clusters (
         cluster_id    TEXT PRIMARY KEY,
         backend       TEXT NOT NULL,
         shape_id      TEXT,
         job_id        INTEGER REFERENCES jobs(job_id),
         request_token TEXT UNIQUE,
         state         TEXT NOT NULL,
         info_json     TEXT NOT NULL,
         created_ms    INTEGER NOT NULL,
         updated_ms    INTEGER NOT NULL
     );
     CREATE TABLE runs (
         run_id         INTEGER PRIMARY KEY,
         job_id         INTEGER NOT NULL REFERENCES jobs(job_id),
         kind           TEXT NOT NULL,
         backend        TEXT,
         cluster_id     TEXT,
         step_id        TEXT,
         config_id      INTEGER REFERENCES configs(config_id),
         status         TEXT NOT NULL,
         start_ms       INTEGER,
         end_ms         INTEGER,
         duration_ms    INTEGER,
         cost_usd       REAL,
         event_log      TEXT,
         failure_reason TEXT,
         driver_log     TEXT,
         details_json   TEXT,
         created_ms     INTEGER NOT NULL,
         updated_ms     INTEGER NOT NULL
     );
     CREATE INDEX runs_job ON runs(job_id, run_id);",
    // 3: tune sessions and their iterations (every run, config and decision of `aether tune`)
    "CREATE TABLE tune_sessions (
         tune_id      INTEGER PRIMARY KEY,
         job_id       INTEGER NOT NULL REFERENCES jobs(job_id),
         backend      TEXT NOT NULL,
         cluster_id   TEXT,
         status       TEXT NOT NULL,
         params_json  TEXT NOT NULL,
         best_run_id  INTEGER REFERENCES runs(run_id),
         stop_reason  TEXT,
         created_ms   INTEGER NOT NULL,
         updated_ms   INTEGER NOT NULL
     );
     CREATE TABLE tune_iterations (
         tune_id         INTEGER NOT NULL REFERENCES tune_sessions(tune_id),
         iteration       INTEGER NOT NULL,
         run_id          INTEGER REFERENCES runs(run_id),
         config_id       INTEGER NOT NULL REFERENCES configs(config_id),
         status          TEXT NOT NULL,
         duration_ms     INTEGER,
         cost_usd        REAL,
         changed_json    TEXT NOT NULL,
         decision        TEXT NOT NULL,
         next_config_id  INTEGER REFERENCES configs(config_id),
         created_ms      INTEGER NOT NULL,
         PRIMARY KEY (tune_id, iteration)
     );",
    "CREATE TABLE validations (
         validation_id INTEGER PRIMARY KEY,
         job_id        INTEGER NOT NULL REFERENCES jobs(job_id),
         cpu_run_id    INTEGER REFERENCES runs(run_id),
         gpu_run_id    INTEGER REFERENCES runs(run_id),
         verdict       TEXT NOT NULL,
         failed_checks INTEGER NOT NULL,
         report_json   TEXT NOT NULL,
         created_ms    INTEGER NOT NULL
     );
     CREATE INDEX validations_job ON validations(job_id, validation_id);",
    // 5: what `aether report metrics` published to CloudWatch, per run, namespace and metric
    // (so that publishing again sends only what is new)
    "CREATE TABLE published_metrics (
         run_id          INTEGER NOT NULL REFERENCES runs(run_id),
         namespace       TEXT NOT NULL,
         metric          TEXT NOT NULL,
         value           REAL NOT NULL,
         unit            TEXT NOT NULL,
         timestamp_ms    INTEGER NOT NULL,
         dimensions_json TEXT NOT NULL,
         published_ms    INTEGER NOT NULL,
         PRIMARY KEY (run_id, namespace, metric)
     );",
    // 6: crash safety. A run or cluster is recorded before the call that makes it (its token:
    // the step's name, the cluster's request token) by its owner (the process that follows
    // it: host:pid:start); `intent` names a call asked and not yet answered (create,
    // terminate, cancel). One writer per job (job_locks). What reconciliation changed.
    "ALTER TABLE runs ADD COLUMN token TEXT;
     ALTER TABLE runs ADD COLUMN tune_id INTEGER REFERENCES tune_sessions(tune_id);
     ALTER TABLE runs ADD COLUMN owner TEXT;
     ALTER TABLE runs ADD COLUMN intent TEXT;
     CREATE INDEX runs_status ON runs(status);
     ALTER TABLE clusters ADD COLUMN owner TEXT;
     ALTER TABLE clusters ADD COLUMN intent TEXT;
     CREATE TABLE job_locks (
         job_id   INTEGER PRIMARY KEY REFERENCES jobs(job_id),
         owner    TEXT NOT NULL,
         command  TEXT NOT NULL,
         since_ms INTEGER NOT NULL
     );
     CREATE TABLE reconciliations (
         reconciliation_id INTEGER PRIMARY KEY,
         at_ms     INTEGER NOT NULL,
         kind      TEXT NOT NULL,
         target    TEXT NOT NULL,
         job_id    INTEGER,
         before    TEXT NOT NULL,
         after     TEXT NOT NULL,
         reason    TEXT NOT NULL
     );
     CREATE INDEX reconciliations_at ON reconciliations(at_ms);",
    // 7: how far to trust a prediction: QualX's own speedup (before any calibration), the
    // range, its coverage and where it comes from
    "ALTER TABLE qualifications ADD COLUMN range_json TEXT;",
];

/// The schema version this aether writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// An open job history.
pub struct History {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
}

/// The CPU run of a job.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CpuRun {
    pub start_ms: Option<i64>,
    pub app_duration_ms: i64,
    pub sql_stage_durations_sum_ms: i64,
    pub unsupported_stage_duration_ms: i64,
    /// Further figures of the run (JSON object).
    pub metrics: serde_json::Value,
}

/// One qualification of a job.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Qualification {
    pub platform: String,
    pub model: String,
    pub speedup: f64,
    pub app_duration_pred_ms: i64,
    pub category: String,
    pub not_recommended_reason: String,
    pub unsupported_pct: f64,
    pub reasons: serde_json::Value,
    pub cpu_cluster: serde_json::Value,
    pub gpu_cluster: serde_json::Value,
    pub spark_conf: String,
    pub cpu_cost_usd: Option<f64>,
    pub gpu_cost_usd: Option<f64>,
    pub savings_usd: Option<f64>,
    /// `{"qualx_speedup", "low", "high", "coverage", "source"}`: QualX's own speedup (before a
    /// calibration) and the range around `speedup` (null before schema 7).
    pub range: serde_json::Value,
}

/// One app run's qualification, as [`History::record_all`] takes it: the app (app id, attempt
/// id, event log, app name), the CPU run read, the qualification, the AutoTuner's properties
/// and the job's definition.
pub struct Record<'a> {
    pub app: (&'a str, &'a str, &'a str, &'a str),
    pub run: &'a CpuRun,
    pub qualification: &'a Qualification,
    pub properties: &'a std::collections::BTreeMap<String, String>,
    pub definition: Option<&'a serde_json::Value>,
}

fn record_one(tx: &rusqlite::Transaction<'_>, r: &Record<'_>) -> rusqlite::Result<Recorded> {
    let (app_id, attempt_id, event_log, app_name) = r.app;
    let job_id = record_in(
        tx,
        app_id,
        attempt_id,
        event_log,
        app_name,
        r.run,
        r.qualification,
    )?;
    let qualification_id = tx.last_insert_rowid();
    let config_id = config_in(tx, job_id, "qualify", Some(qualification_id), r.properties)?;
    if let Some(d) = r.definition {
        definition_in(tx, job_id, "event_log", d)?;
    }
    Ok(Recorded {
        job_id,
        qualification_id,
        config_id,
    })
}

/// What [`History::record`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub job_id: i64,
    /// Also the id of the qualification's recommended GPU cluster shape
    /// (`cluster create --cluster_shape_id`).
    pub qualification_id: i64,
    /// The config of the AutoTuner's properties (`submit --config_id`).
    pub config_id: i64,
}

/// A stored set of Spark properties a run can use (`submit --config_id`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Config {
    pub config_id: i64,
    pub job_id: i64,
    /// Where it came from: `qualify` (the AutoTuner's bootstrap configs), `profile`, `user`.
    pub source: String,
    pub properties: std::collections::BTreeMap<String, String>,
}

/// One iteration of a tune session.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TuneIteration {
    pub tune_id: i64,
    pub iteration: i64,
    pub run_id: Option<i64>,
    pub config_id: i64,
    pub status: String,
    pub duration_ms: Option<i64>,
    pub cost_usd: Option<f64>,
    /// The properties this iteration's config changed from the one before.
    pub changed: serde_json::Value,
    /// What the loop decided after it (and why).
    pub decision: String,
    /// The config the next iteration runs.
    pub next_config_id: Option<i64>,
}

/// A tune session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TuneSession {
    pub tune_id: i64,
    pub job_id: i64,
    pub backend: String,
    pub cluster_id: Option<String>,
    /// RUNNING, INTERRUPTED, DONE.
    pub status: String,
    pub params: serde_json::Value,
    pub best_run_id: Option<i64>,
    pub stop_reason: Option<String>,
}

/// A cluster aether made, as the history keeps it.
#[derive(Clone, Debug)]
pub struct ClusterRecord<'a> {
    pub cluster_id: &'a str,
    pub backend: &'a str,
    pub shape_id: Option<&'a str>,
    pub job_id: Option<i64>,
    pub request_token: Option<&'a str>,
    pub state: &'a str,
    /// The backend's description of it.
    pub info: &'a serde_json::Value,
}

/// One run of a job: the CPU original or a GPU test run aether started.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Run {
    pub run_id: i64,
    pub job_id: i64,
    /// `cpu-original` or `gpu-test`.
    pub kind: String,
    pub backend: Option<String>,
    pub cluster_id: Option<String>,
    pub step_id: Option<String>,
    pub config_id: Option<i64>,
    /// SUBMITTING (recorded, the step being made), PENDING, RUNNING, COMPLETED, FAILED,
    /// CANCELLED, INTERRUPTED, TIMED_OUT, LOST (the platform no longer knows its step).
    pub status: String,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
    pub duration_ms: Option<i64>,
    pub cost_usd: Option<f64>,
    pub event_log: Option<String>,
    pub failure_reason: Option<String>,
    pub driver_log: Option<String>,
    pub details: serde_json::Value,
    /// How the run is found again on the platform when its id was never recorded: the step's
    /// name (EMR), the job run's name and client token (EMR on EKS), the local step's name.
    pub token: Option<String>,
    /// The tune session it is an iteration of, if any.
    pub tune_id: Option<i64>,
    /// The process that follows it (`host:pid:start`, [`crate::owner`]).
    pub owner: Option<String>,
    /// A call asked and not yet answered (`cancel`).
    pub intent: Option<String>,
}

/// Run statuses that may still change (the step is being made, waits or runs).
pub const OPEN_RUN_STATUSES: &[&str] = &["SUBMITTING", "PENDING", "RUNNING"];

/// One validation of a job, as `aether validate --aether_job_id` recorded it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Validation {
    pub validation_id: i64,
    pub job_id: i64,
    pub cpu_run_id: Option<i64>,
    pub gpu_run_id: Option<i64>,
    /// PASS, WARN or FAIL.
    pub verdict: String,
    pub failed_checks: i64,
    /// The whole report (checks, reasons).
    pub report: serde_json::Value,
    pub created_ms: i64,
}

/// A metric of a run as `aether report metrics` published it to CloudWatch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PublishedMetric {
    pub run_id: i64,
    pub namespace: String,
    pub metric: String,
    pub value: f64,
    /// CloudWatch's unit (`Milliseconds`, `Count`, `None`).
    pub unit: String,
    /// The data point's time.
    pub timestamp_ms: i64,
    /// (name, value) of the run's dimensions.
    pub dimensions: Vec<(String, String)>,
}

/// A job's best GPU run: its fastest successful GPU test run (ties: the cheaper).
pub fn best_gpu_run(runs: &[Run]) -> Option<&Run> {
    runs.iter()
        .filter(|r| r.kind == "gpu-test" && r.status == "COMPLETED" && r.duration_ms.is_some())
        .min_by(|a, b| {
            a.duration_ms.cmp(&b.duration_ms).then(
                a.cost_usd
                    .partial_cmp(&b.cost_usd)
                    .unwrap_or(std::cmp::Ordering::Equal),
            )
        })
}

/// A job with its latest qualification (`aether report list`).
#[derive(Clone, Debug, Serialize)]
pub struct JobSummary {
    pub job_id: i64,
    pub app_id: String,
    pub attempt_id: String,
    pub app_name: String,
    pub event_log: String,
    pub app_duration_ms: Option<i64>,
    pub qualified_ms: Option<i64>,
    pub platform: Option<String>,
    pub speedup: Option<f64>,
    pub category: Option<String>,
    pub gpu_cluster: Option<String>,
    pub cpu_cost_usd: Option<f64>,
    pub gpu_cost_usd: Option<f64>,
    pub savings_usd: Option<f64>,
    pub qualifications: i64,
    /// The job's newest config.
    pub config_id: Option<i64>,
    /// The latest qualification's range (see [`Qualification::range`]).
    pub range: Option<serde_json::Value>,
    /// The prices its costs are at (list prices, or the user's terms then).
    pub price_source: Option<String>,
}

fn db_error(path: &Path, e: impl std::fmt::Display) -> HistoryError {
    HistoryError::Db {
        path: path.display().to_string(),
        error: e.to_string(),
    }
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl History {
    /// Open (creating the file and its folder, and migrating the schema, as needed).
    pub fn open(path: &Path) -> Result<History> {
        let err = |e: &dyn std::fmt::Display| db_error(path, e);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| err(&e))?;
        }
        let conn = Connection::open(path).map_err(|e| err(&e))?;
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(|e| err(&e))?;
        // WAL: readers never block the writer; NORMAL sync is durable across process crashes.
        // Switching a new database to WAL takes its lock without the busy handler: another
        // aether opening the same new history at that moment is waited for, not an error.
        let t0 = std::time::Instant::now();
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Ok(()) => break,
                Err(rusqlite::Error::SqliteFailure(f, _))
                    if f.code == rusqlite::ErrorCode::DatabaseBusy
                        && t0.elapsed() < Duration::from_secs(30) =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(err(&e)),
            }
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| err(&e))?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(|e| err(&e))?;
        let mut h = History {
            conn,
            path: path.to_path_buf(),
        };
        h.migrate()?;
        Ok(h)
    }

    pub(crate) fn err(&self, e: impl std::fmt::Display) -> HistoryError {
        db_error(&self.path, e)
    }

    /// Run `f` in one transaction that holds the write lock from the start (`BEGIN IMMEDIATE`,
    /// waiting for another writer up to the busy timeout), committed when `f` succeeds.
    pub(crate) fn write<T>(
        &mut self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| db_error(path, e))?;
        let out = f(&tx).map_err(|e| db_error(path, e))?;
        tx.commit().map_err(|e| db_error(path, e))?;
        Ok(out)
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64> {
        self.conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// Apply the migrations the database lacks, each in its own transaction (a failed one is
    /// rolled back).
    fn migrate(&mut self) -> Result<()> {
        let path = &self.path;
        loop {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| db_error(path, e))?;
            let v: i64 = tx
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .map_err(|e| db_error(path, e))?;
            if v > SCHEMA_VERSION {
                return Err(HistoryError::TooNew {
                    path: path.display().to_string(),
                    found: v,
                    known: SCHEMA_VERSION,
                });
            }
            if v == SCHEMA_VERSION {
                return Ok(());
            }
            let db =
                |e: rusqlite::Error| db_error(path, format!("migration to version {}: {e}", v + 1));
            tx.execute_batch(MIGRATIONS[v as usize]).map_err(db)?;
            tx.pragma_update(None, "user_version", v + 1).map_err(db)?;
            tx.commit().map_err(db)?;
        }
    }

    /// The job of an app run, created on first sight; the same `(app_id, attempt_id,
    /// event_log)` always gives the same id.
    pub fn job_id(
        &mut self,
        app_id: &str,
        attempt_id: &str,
        event_log: &str,
        app_name: &str,
    ) -> Result<i64> {
        self.write(|tx| job_in(tx, app_id, attempt_id, event_log, app_name))
    }

    /// Record a qualification and the CPU run it read for an app run, with the AutoTuner's
    /// properties as a config of the job (source `qualify`) and the job's definition when the
    /// log holds one, in one transaction.
    pub fn record(
        &mut self,
        app: (&str, &str, &str, &str),
        run: &CpuRun,
        q: &Qualification,
        properties: &std::collections::BTreeMap<String, String>,
        definition: Option<&serde_json::Value>,
    ) -> Result<Recorded> {
        let r = Record {
            app,
            run,
            qualification: q,
            properties,
            definition,
        };
        self.write(|tx| record_one(tx, &r))
    }

    /// [`History::record`] of several app runs in one transaction (a fleet's qualification
    /// commits once per batch, not once per app); all or none are recorded.
    pub fn record_all(&mut self, records: &[Record<'_>]) -> Result<Vec<Recorded>> {
        self.write(|tx| records.iter().map(|r| record_one(tx, r)).collect())
    }

    /// The run (run id, job id, config id) whose event log is `event_log`, the latest if several.
    pub fn run_by_event_log(&self, event_log: &str) -> Result<Option<(i64, i64, Option<i64>)>> {
        self.conn
            .query_row(
                "SELECT run_id, job_id, config_id FROM runs WHERE event_log = ?1
                 ORDER BY run_id DESC LIMIT 1",
                params![event_log],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The event log of a job's CPU run (as recorded when it was qualified).
    pub fn job_event_log(&self, job_id: i64) -> Result<Option<String>> {
        self.conn
            .query_row(
                "SELECT event_log FROM jobs WHERE job_id = ?1",
                params![job_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The GPU cluster shape a qualification recommended: `(job id, gpu_cluster_json)`.
    pub fn shape(&self, shape_id: i64) -> Result<Option<(i64, serde_json::Value)>> {
        self.conn
            .query_row(
                "SELECT job_id, gpu_cluster_json FROM qualifications WHERE qualification_id = ?1",
                params![shape_id],
                |r| {
                    let g: Option<String> = r.get(1)?;
                    Ok((
                        r.get(0)?,
                        g.and_then(|g| serde_json::from_str(&g).ok())
                            .unwrap_or_default(),
                    ))
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Store a config for a job (source `profile` or `user`); returns its id.
    pub fn add_config(
        &mut self,
        job_id: i64,
        source: &str,
        properties: &std::collections::BTreeMap<String, String>,
    ) -> Result<i64> {
        self.write(|tx| config_in(tx, job_id, source, None, properties))
    }

    /// A stored config, `None` when no config has that id.
    pub fn config(&self, config_id: i64) -> Result<Option<Config>> {
        self.conn
            .query_row(
                "SELECT config_id, job_id, source, properties_json FROM configs WHERE config_id = ?1",
                params![config_id],
                |r| {
                    let props: String = r.get(3)?;
                    Ok(Config {
                        config_id: r.get(0)?,
                        job_id: r.get(1)?,
                        source: r.get(2)?,
                        properties: serde_json::from_str(&props).unwrap_or_default(),
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Set how the job is run again (source: `event_log`, `user`, `emr_step`).
    pub fn set_definition(
        &mut self,
        job_id: i64,
        source: &str,
        definition: &serde_json::Value,
    ) -> Result<()> {
        self.write(|tx| definition_in(tx, job_id, source, definition))
    }

    /// The job's definition and where it came from.
    pub fn definition(&self, job_id: i64) -> Result<Option<(String, serde_json::Value)>> {
        self.conn
            .query_row(
                "SELECT source, definition_json FROM job_definitions WHERE job_id = ?1",
                params![job_id],
                |r| {
                    let d: String = r.get(1)?;
                    Ok((r.get(0)?, serde_json::from_str(&d).unwrap_or_default()))
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// A cluster aether made: (shape id, state, the backend's description of it).
    pub fn cluster(
        &self,
        cluster_id: &str,
    ) -> Result<Option<(Option<String>, String, serde_json::Value)>> {
        self.conn
            .query_row(
                "SELECT shape_id, state, info_json FROM clusters WHERE cluster_id = ?1",
                params![cluster_id],
                |r| {
                    let info: String = r.get(2)?;
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        serde_json::from_str(&info).unwrap_or_default(),
                    ))
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Record a cluster aether made (or its new state: only state and info change).
    pub fn upsert_cluster(&mut self, c: &ClusterRecord<'_>) -> Result<()> {
        self.write(|tx| {
            let now = now_ms();
            tx.execute(
                "INSERT INTO clusters (cluster_id, backend, shape_id, job_id, request_token, state,
                                       info_json, created_ms, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
                 ON CONFLICT (cluster_id) DO UPDATE SET state = excluded.state,
                     info_json = excluded.info_json, updated_ms = excluded.updated_ms,
                     intent = NULL",
                params![
                    c.cluster_id,
                    c.backend,
                    c.shape_id,
                    c.job_id,
                    c.request_token,
                    c.state,
                    c.info.to_string(),
                    now
                ],
            )?;
            Ok(())
        })
    }

    /// Start recording a run (status as given, e.g. RUNNING); returns its id. Recorded before
    /// waiting, so a run whose aether process dies is still in the history.
    pub fn start_run(&mut self, r: &Run) -> Result<i64> {
        self.write(|tx| {
            let now = now_ms();
            tx.execute(
                "INSERT INTO runs (job_id, kind, backend, cluster_id, step_id, config_id, status,
                                   start_ms, details_json, created_ms, updated_ms, token,
                                   tune_id, owner, intent)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12, ?13, ?14)",
                params![
                    r.job_id,
                    r.kind,
                    r.backend,
                    r.cluster_id,
                    r.step_id,
                    r.config_id,
                    r.status,
                    r.start_ms,
                    r.details.to_string(),
                    now,
                    r.token,
                    r.tune_id,
                    r.owner,
                    r.intent
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Record a validation of a GPU run against the CPU run; returns its id.
    pub fn add_validation(
        &mut self,
        job_id: i64,
        cpu_run_id: Option<i64>,
        gpu_run_id: Option<i64>,
        verdict: &str,
        failed_checks: i64,
        report: &serde_json::Value,
    ) -> Result<i64> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO validations (job_id, cpu_run_id, gpu_run_id, verdict, failed_checks,
                                          report_json, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    job_id,
                    cpu_run_id,
                    gpu_run_id,
                    verdict,
                    failed_checks,
                    report.to_string(),
                    now_ms()
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Update a run with how it ended (and the call still asked of its step, if any: a cancel
    /// that did not take).
    pub fn finish_run(&mut self, r: &Run) -> Result<()> {
        self.write(|tx| {
            let n = tx.execute(
                "UPDATE runs SET status = ?2, start_ms = COALESCE(?3, start_ms), end_ms = ?4,
                     duration_ms = ?5, cost_usd = ?6, event_log = ?7, failure_reason = ?8,
                     driver_log = ?9, details_json = ?10, updated_ms = ?11, intent = ?13,
                     step_id = COALESCE(step_id, ?12)
                 WHERE run_id = ?1",
                params![
                    r.run_id,
                    r.status,
                    r.start_ms,
                    r.end_ms,
                    r.duration_ms,
                    r.cost_usd,
                    r.event_log,
                    r.failure_reason,
                    r.driver_log,
                    r.details.to_string(),
                    now_ms(),
                    r.step_id,
                    r.intent
                ],
            )?;
            if n == 0 {
                return Err(rusqlite::Error::QueryReturnedNoRows);
            }
            Ok(())
        })
    }

    /// Every run of a job, oldest first.
    pub fn runs(&self, job_id: i64) -> Result<Vec<Run>> {
        Ok(self
            .runs_where("job_id = ?1", params![job_id])?
            .into_iter()
            .map(|(r, _)| r)
            .collect())
    }

    /// The runs that match `cond` (SQL over the runs table), oldest first, each with its
    /// last update's time.
    pub(crate) fn runs_where(
        &self,
        cond: &str,
        args: impl rusqlite::Params,
    ) -> Result<Vec<(Run, i64)>> {
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT run_id, job_id, kind, backend, cluster_id, step_id, config_id, status,
                        start_ms, end_ms, duration_ms, cost_usd, event_log, failure_reason,
                        driver_log, details_json, token, tune_id, owner, intent, updated_ms
                 FROM runs WHERE {cond} ORDER BY run_id"
            ))
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map(args, |r| {
                let d: Option<String> = r.get(15)?;
                Ok((
                    Run {
                        run_id: r.get(0)?,
                        job_id: r.get(1)?,
                        kind: r.get(2)?,
                        backend: r.get(3)?,
                        cluster_id: r.get(4)?,
                        step_id: r.get(5)?,
                        config_id: r.get(6)?,
                        status: r.get(7)?,
                        start_ms: r.get(8)?,
                        end_ms: r.get(9)?,
                        duration_ms: r.get(10)?,
                        cost_usd: r.get(11)?,
                        event_log: r.get(12)?,
                        failure_reason: r.get(13)?,
                        driver_log: r.get(14)?,
                        details: d
                            .and_then(|d| serde_json::from_str(&d).ok())
                            .unwrap_or_default(),
                        token: r.get(16)?,
                        tune_id: r.get(17)?,
                        owner: r.get(18)?,
                        intent: r.get(19)?,
                    },
                    r.get(20)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    /// Whether any job has a GPU run that measured it (what [`best_gpu_run`] can pick: a
    /// completed `gpu-test` run with a duration).
    pub fn has_measured_gpu_run(&self) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM runs WHERE kind = 'gpu-test'
                     AND status = 'COMPLETED' AND duration_ms IS NOT NULL)",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// One run.
    pub fn run(&self, run_id: i64) -> Result<Option<Run>> {
        Ok(self
            .runs_where("run_id = ?1", params![run_id])?
            .into_iter()
            .next()
            .map(|(r, _)| r))
    }

    /// A job's latest qualification.
    pub fn qualification(&self, job_id: i64) -> Result<Option<Qualification>> {
        let json = |s: Option<String>| {
            s.and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or_default()
        };
        self.conn
            .query_row(
                "SELECT platform, model, speedup, app_duration_pred_ms, category,
                        not_recommended_reason, unsupported_pct, reasons_json, cpu_cluster_json,
                        gpu_cluster_json, spark_conf, cpu_cost_usd, gpu_cost_usd, savings_usd,
                        range_json
                 FROM qualifications WHERE job_id = ?1
                 ORDER BY qualification_id DESC LIMIT 1",
                params![job_id],
                |r| {
                    Ok(Qualification {
                        platform: r.get(0)?,
                        model: r.get(1)?,
                        speedup: r.get::<_, Option<f64>>(2)?.unwrap_or_default(),
                        app_duration_pred_ms: r.get::<_, Option<i64>>(3)?.unwrap_or_default(),
                        category: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                        not_recommended_reason: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                        unsupported_pct: r.get::<_, Option<f64>>(6)?.unwrap_or_default(),
                        reasons: json(r.get(7)?),
                        cpu_cluster: json(r.get(8)?),
                        gpu_cluster: json(r.get(9)?),
                        spark_conf: r.get::<_, Option<String>>(10)?.unwrap_or_default(),
                        cpu_cost_usd: r.get(11)?,
                        gpu_cost_usd: r.get(12)?,
                        savings_usd: r.get(13)?,
                        range: json(r.get(14)?),
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// A job's CPU run, as its event log told.
    pub fn cpu_run(&self, job_id: i64) -> Result<Option<CpuRun>> {
        self.conn
            .query_row(
                "SELECT start_ms, app_duration_ms, sql_stage_durations_sum_ms,
                        unsupported_stage_duration_ms, metrics_json
                 FROM cpu_runs WHERE job_id = ?1",
                params![job_id],
                |r| {
                    let m: Option<String> = r.get(4)?;
                    Ok(CpuRun {
                        start_ms: r.get(0)?,
                        app_duration_ms: r.get::<_, Option<i64>>(1)?.unwrap_or_default(),
                        sql_stage_durations_sum_ms: r.get::<_, Option<i64>>(2)?.unwrap_or_default(),
                        unsupported_stage_duration_ms: r
                            .get::<_, Option<i64>>(3)?
                            .unwrap_or_default(),
                        metrics: m
                            .and_then(|m| serde_json::from_str(&m).ok())
                            .unwrap_or_default(),
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    fn validations_where(&self, filter: &str, args: &[i64]) -> Result<Vec<Validation>> {
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT validation_id, job_id, cpu_run_id, gpu_run_id, verdict, failed_checks,
                        report_json, created_ms
                 FROM validations {filter} ORDER BY validation_id"
            ))
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args), |r| {
                let rep: String = r.get(6)?;
                Ok(Validation {
                    validation_id: r.get(0)?,
                    job_id: r.get(1)?,
                    cpu_run_id: r.get(2)?,
                    gpu_run_id: r.get(3)?,
                    verdict: r.get(4)?,
                    failed_checks: r.get(5)?,
                    report: serde_json::from_str(&rep).unwrap_or_default(),
                    created_ms: r.get(7)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    /// A job's validations, oldest first.
    pub fn validations(&self, job_id: i64) -> Result<Vec<Validation>> {
        self.validations_where("WHERE job_id = ?1", &[job_id])
    }

    /// Every validation, oldest first.
    pub fn all_validations(&self) -> Result<Vec<Validation>> {
        self.validations_where("", &[])
    }

    /// A job's tune sessions, oldest first.
    pub fn tune_sessions(&self, job_id: i64) -> Result<Vec<TuneSession>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT tune_id, job_id, backend, cluster_id, status, params_json, best_run_id,
                        stop_reason
                 FROM tune_sessions WHERE job_id = ?1 ORDER BY tune_id",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map(params![job_id], |r| {
                let p: String = r.get(5)?;
                Ok(TuneSession {
                    tune_id: r.get(0)?,
                    job_id: r.get(1)?,
                    backend: r.get(2)?,
                    cluster_id: r.get(3)?,
                    status: r.get(4)?,
                    params: serde_json::from_str(&p).unwrap_or_default(),
                    best_run_id: r.get(6)?,
                    stop_reason: r.get(7)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    /// The id of a job's latest qualification (also its GPU cluster shape's id).
    pub fn latest_qualification_id(&self, job_id: i64) -> Result<Option<i64>> {
        self.conn
            .query_row(
                "SELECT MAX(qualification_id) FROM qualifications WHERE job_id = ?1",
                params![job_id],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// Every tune iteration of a job (all its sessions), in order.
    pub fn job_iterations(&self, job_id: i64) -> Result<Vec<TuneIteration>> {
        let ids: Vec<i64> = {
            let mut st = self
                .conn
                .prepare("SELECT tune_id FROM tune_sessions WHERE job_id = ?1 ORDER BY tune_id")
                .map_err(|e| self.err(e))?;
            st.query_map(params![job_id], |r| r.get(0))
                .map_err(|e| self.err(e))?
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| self.err(e))?
        };
        let mut out = Vec::new();
        for id in ids {
            out.extend(self.iterations(id)?);
        }
        Ok(out)
    }

    /// The configs of a job, oldest first.
    pub fn configs(&self, job_id: i64) -> Result<Vec<Config>> {
        let ids: Vec<i64> = {
            let mut st = self
                .conn
                .prepare("SELECT config_id FROM configs WHERE job_id = ?1 ORDER BY config_id")
                .map_err(|e| self.err(e))?;
            st.query_map(params![job_id], |r| r.get(0))
                .map_err(|e| self.err(e))?
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| self.err(e))?
        };
        let mut out = Vec::new();
        for id in ids {
            if let Some(c) = self.config(id)? {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// A new tune session of a job.
    pub fn start_tune(
        &mut self,
        job_id: i64,
        backend: &str,
        cluster_id: Option<&str>,
        params: &serde_json::Value,
    ) -> Result<i64> {
        self.write(|tx| {
            let now = now_ms();
            tx.execute(
                "INSERT INTO tune_sessions (job_id, backend, cluster_id, status, params_json,
                                            created_ms, updated_ms)
                 VALUES (?1, ?2, ?3, 'RUNNING', ?4, ?5, ?5)",
                params![job_id, backend, cluster_id, params.to_string(), now],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// The job's latest tune session that did not finish (to resume), if any.
    pub fn unfinished_tune(&self, job_id: i64) -> Result<Option<TuneSession>> {
        Ok(self
            .tune_sessions(job_id)?
            .into_iter()
            .rev()
            .find(|s| s.status != "DONE"))
    }

    /// Record an iteration of a tune session.
    pub fn add_iteration(&mut self, it: &TuneIteration) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO tune_iterations (tune_id, iteration, run_id, config_id, status,
                     duration_ms, cost_usd, changed_json, decision, next_config_id, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    it.tune_id,
                    it.iteration,
                    it.run_id,
                    it.config_id,
                    it.status,
                    it.duration_ms,
                    it.cost_usd,
                    it.changed.to_string(),
                    it.decision,
                    it.next_config_id,
                    now_ms()
                ],
            )?;
            Ok(())
        })
    }

    /// The iterations of a tune session, in order.
    pub fn iterations(&self, tune_id: i64) -> Result<Vec<TuneIteration>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT tune_id, iteration, run_id, config_id, status, duration_ms, cost_usd,
                        changed_json, decision, next_config_id
                 FROM tune_iterations WHERE tune_id = ?1 ORDER BY iteration",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map(params![tune_id], |r| {
                let c: String = r.get(7)?;
                Ok(TuneIteration {
                    tune_id: r.get(0)?,
                    iteration: r.get(1)?,
                    run_id: r.get(2)?,
                    config_id: r.get(3)?,
                    status: r.get(4)?,
                    duration_ms: r.get(5)?,
                    cost_usd: r.get(6)?,
                    changed: serde_json::from_str(&c).unwrap_or_default(),
                    decision: r.get(8)?,
                    next_config_id: r.get(9)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    /// Mark a tune session's state (RUNNING, INTERRUPTED, DONE) with its best run and why it
    /// stopped.
    pub fn set_tune_status(
        &mut self,
        tune_id: i64,
        status: &str,
        best_run_id: Option<i64>,
        stop_reason: Option<&str>,
    ) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "UPDATE tune_sessions SET status = ?2, best_run_id = ?3, stop_reason = ?4,
                        updated_ms = ?5 WHERE tune_id = ?1",
                params![tune_id, status, best_run_id, stop_reason, now_ms()],
            )?;
            Ok(())
        })
    }

    /// Every job with its latest qualification, newest job first.
    pub fn list(&self) -> Result<Vec<JobSummary>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT j.job_id, j.app_id, j.attempt_id, COALESCE(j.app_name, ''), j.event_log,
                        c.app_duration_ms, q.created_ms, q.platform, q.speedup, q.category,
                        json_extract(q.gpu_cluster_json, '$.summary'), q.cpu_cost_usd,
                        q.gpu_cost_usd, q.savings_usd,
                        (SELECT COUNT(*) FROM qualifications x WHERE x.job_id = j.job_id),
                        (SELECT MAX(config_id) FROM configs k WHERE k.job_id = j.job_id),
                        q.range_json, json_extract(q.gpu_cluster_json, '$.price_source')
                 FROM jobs j
                 LEFT JOIN cpu_runs c ON c.job_id = j.job_id
                 LEFT JOIN qualifications q ON q.qualification_id = (
                     SELECT MAX(qualification_id) FROM qualifications y WHERE y.job_id = j.job_id)
                 ORDER BY j.job_id",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok(JobSummary {
                    job_id: r.get(0)?,
                    app_id: r.get(1)?,
                    attempt_id: r.get(2)?,
                    app_name: r.get(3)?,
                    event_log: r.get(4)?,
                    app_duration_ms: r.get(5)?,
                    qualified_ms: r.get(6)?,
                    platform: r.get(7)?,
                    speedup: r.get(8)?,
                    category: r.get(9)?,
                    gpu_cluster: r.get(10)?,
                    cpu_cost_usd: r.get(11)?,
                    gpu_cost_usd: r.get(12)?,
                    savings_usd: r.get(13)?,
                    qualifications: r.get(14)?,
                    config_id: r.get(15)?,
                    range: r
                        .get::<_, Option<String>>(16)?
                        .and_then(|t| serde_json::from_str(&t).ok()),
                    price_source: r.get(17)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    /// What was published to CloudWatch under `namespace`, by run and metric.
    pub fn published_metrics(&self, namespace: &str) -> Result<Vec<PublishedMetric>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT run_id, namespace, metric, value, unit, timestamp_ms, dimensions_json
                 FROM published_metrics WHERE namespace = ?1 ORDER BY run_id, metric",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map(params![namespace], |r| {
                let d: String = r.get(6)?;
                Ok(PublishedMetric {
                    run_id: r.get(0)?,
                    namespace: r.get(1)?,
                    metric: r.get(2)?,
                    value: r.get(3)?,
                    unit: r.get(4)?,
                    timestamp_ms: r.get(5)?,
                    dimensions: serde_json::from_str(&d).unwrap_or_default(),
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    /// Record metrics as published (replacing an earlier value of the same run, namespace and
    /// metric), in one transaction.
    pub fn record_published(&mut self, metrics: &[PublishedMetric]) -> Result<()> {
        self.write(|tx| {
            let now = now_ms();
            for m in metrics {
                tx.execute(
                    "INSERT INTO published_metrics (run_id, namespace, metric, value, unit,
                         timestamp_ms, dimensions_json, published_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                     ON CONFLICT (run_id, namespace, metric) DO UPDATE SET
                         value = excluded.value, unit = excluded.unit,
                         timestamp_ms = excluded.timestamp_ms,
                         dimensions_json = excluded.dimensions_json,
                         published_ms = excluded.published_ms",
                    params![
                        m.run_id,
                        m.namespace,
                        m.metric,
                        m.value,
                        m.unit,
                        m.timestamp_ms,
                        serde_json::to_string(&m.dimensions).unwrap_or_default(),
                        now
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// SQLite's own consistency check (`ok` when the file is sound).
    pub fn integrity_check(&self) -> Result<String> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }
}

fn config_in(
    tx: &rusqlite::Transaction<'_>,
    job_id: i64,
    source: &str,
    qualification_id: Option<i64>,
    properties: &std::collections::BTreeMap<String, String>,
) -> rusqlite::Result<i64> {
    tx.execute(
        "INSERT INTO configs (job_id, source, qualification_id, properties_json, created_ms)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            job_id,
            source,
            qualification_id,
            serde_json::to_string(properties).unwrap_or_default(),
            now_ms()
        ],
    )?;
    Ok(tx.last_insert_rowid())
}

fn definition_in(
    tx: &rusqlite::Transaction<'_>,
    job_id: i64,
    source: &str,
    definition: &serde_json::Value,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO job_definitions (job_id, source, definition_json, updated_ms)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (job_id) DO UPDATE SET source = excluded.source,
             definition_json = excluded.definition_json, updated_ms = excluded.updated_ms",
        params![job_id, source, definition.to_string(), now_ms()],
    )?;
    Ok(())
}

/// The CPU run and a qualification of an app run, in `tx`; returns the job id (the
/// qualification is `tx.last_insert_rowid()` after it).
fn record_in(
    tx: &rusqlite::Transaction<'_>,
    app_id: &str,
    attempt_id: &str,
    event_log: &str,
    app_name: &str,
    run: &CpuRun,
    q: &Qualification,
) -> rusqlite::Result<i64> {
    let job = job_in(tx, app_id, attempt_id, event_log, app_name)?;
    let now = now_ms();
    tx.execute(
        "INSERT INTO cpu_runs (job_id, start_ms, app_duration_ms, sql_stage_durations_sum_ms,
                   unsupported_stage_duration_ms, metrics_json, updated_ms)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
     ON CONFLICT (job_id) DO UPDATE SET
 start_ms = excluded.start_ms, app_duration_ms = excluded.app_duration_ms,
 sql_stage_durations_sum_ms = excluded.sql_stage_durations_sum_ms,
 unsupported_stage_duration_ms = excluded.unsupported_stage_duration_ms,
 metrics_json = excluded.metrics_json, updated_ms = excluded.updated_ms",
        params![
            job,
            run.start_ms,
            run.app_duration_ms,
            run.sql_stage_durations_sum_ms,
            run.unsupported_stage_duration_ms,
            run.metrics.to_string(),
            now
        ],
    )?;
    tx.execute(
        "INSERT INTO qualifications (job_id, created_ms, platform, model, speedup,
 app_duration_pred_ms, category, not_recommended_reason, unsupported_pct,
 reasons_json, cpu_cluster_json, gpu_cluster_json, spark_conf, cpu_cost_usd,
 gpu_cost_usd, savings_usd, range_json)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        params![
            job,
            now,
            q.platform,
            q.model,
            q.speedup,
            q.app_duration_pred_ms,
            q.category,
            q.not_recommended_reason,
            q.unsupported_pct,
            q.reasons.to_string(),
            q.cpu_cluster.to_string(),
            q.gpu_cluster.to_string(),
            q.spark_conf,
            q.cpu_cost_usd,
            q.gpu_cost_usd,
            q.savings_usd,
            (!q.range.is_null()).then(|| q.range.to_string())
        ],
    )?;
    Ok(job)
}

fn job_in(
    tx: &rusqlite::Transaction<'_>,
    app_id: &str,
    attempt_id: &str,
    event_log: &str,
    app_name: &str,
) -> rusqlite::Result<i64> {
    let found: Option<i64> = tx
        .query_row(
            "SELECT job_id FROM jobs WHERE app_id = ?1 AND attempt_id = ?2 AND event_log = ?3",
            params![app_id, attempt_id, event_log],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    tx.execute(
        "INSERT INTO jobs (app_id, attempt_id, event_log, app_name, created_ms)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![app_id, attempt_id, event_log, app_name, now_ms()],
    )?;
    Ok(tx.last_insert_rowid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_run_same_job_and_migrations_are_versioned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/history.db");
        let mut h = History::open(&path).unwrap();
        assert_eq!(h.schema_version().unwrap(), SCHEMA_VERSION);
        let a = h.job_id("app-1", "", "/logs/a", "etl").unwrap();
        let b = h.job_id("app-2", "", "/logs/b", "etl").unwrap();
        assert_ne!(a, b);
        let q = Qualification {
            platform: "emr".into(),
            speedup: 2.5,
            category: "Medium".into(),
            gpu_cluster: serde_json::json!({"summary": "2 x g6.4xlarge"}),
            ..Default::default()
        };
        let again = h
            .record(
                ("app-1", "", "/logs/a", "etl"),
                &CpuRun::default(),
                &q,
                &Default::default(),
                None,
            )
            .unwrap()
            .job_id;
        assert_eq!(again, a);
        drop(h);
        // reopening keeps everything and does not migrate again
        let h = History::open(&path).unwrap();
        let list = h.list().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].speedup, Some(2.5));
        assert_eq!(list[0].gpu_cluster.as_deref(), Some("2 x g6.4xlarge"));
        assert_eq!(list[1].qualifications, 0);
        assert_eq!(h.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn a_version_1_database_is_upgraded_in_place_and_runs_are_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.db");
        let c = Connection::open(&path).unwrap();
        c.execute_batch(MIGRATIONS[0]).unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
        c.execute(
            "INSERT INTO jobs (app_id, attempt_id, event_log, created_ms) VALUES ('a', '', '/l', 1)",
            [],
        )
        .unwrap();
        drop(c);
        let mut h = History::open(&path).unwrap();
        assert_eq!(h.schema_version().unwrap(), SCHEMA_VERSION);
        let job = h.job_id("a", "", "/l", "x").unwrap();
        assert_eq!(job, 1, "the job of version 1 is kept");
        let props = std::collections::BTreeMap::from([("k".to_string(), "v".to_string())]);
        let cfg = h.add_config(job, "user", &props).unwrap();
        assert_eq!(h.config(cfg).unwrap().unwrap().properties, props);
        assert_eq!(h.config(cfg + 1).unwrap(), None);
        let mut run = Run {
            job_id: job,
            kind: "gpu-test".into(),
            config_id: Some(cfg),
            status: "RUNNING".into(),
            ..Default::default()
        };
        run.run_id = h.start_run(&run).unwrap();
        run.status = "COMPLETED".into();
        run.duration_ms = Some(42);
        h.finish_run(&run).unwrap();
        let runs = h.runs(job).unwrap();
        assert_eq!(
            (runs.len(), runs[0].status.as_str(), runs[0].duration_ms),
            (1, "COMPLETED", Some(42))
        );
        run.run_id += 100;
        assert!(h.finish_run(&run).is_err(), "an unknown run is an error");
        assert_eq!(h.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn published_metrics_are_kept_per_run_namespace_and_metric() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = History::open(&dir.path().join("h.db")).unwrap();
        let job = h.job_id("a", "", "/l", "x").unwrap();
        let run = h
            .start_run(&Run {
                job_id: job,
                kind: "gpu-test".into(),
                status: "COMPLETED".into(),
                ..Default::default()
            })
            .unwrap();
        let m = |ns: &str, metric: &str, value: f64| PublishedMetric {
            run_id: run,
            namespace: ns.into(),
            metric: metric.into(),
            value,
            unit: "Milliseconds".into(),
            timestamp_ms: 7,
            dimensions: vec![("AetherJobId".into(), job.to_string())],
        };
        h.record_published(&[
            m("Spark/GPU", "RunDuration", 10.0),
            m("Other", "RunDuration", 1.0),
        ])
        .unwrap();
        // the same run, namespace and metric again: replaced, not added
        h.record_published(&[m("Spark/GPU", "RunDuration", 12.0)])
            .unwrap();
        assert_eq!(
            h.published_metrics("Spark/GPU").unwrap(),
            vec![m("Spark/GPU", "RunDuration", 12.0)]
        );
        assert_eq!(h.published_metrics("Other").unwrap().len(), 1);
        assert!(h.published_metrics("None").unwrap().is_empty());
        // a run that does not exist cannot be recorded (foreign key)
        let mut bad = m("Spark/GPU", "RunDuration", 1.0);
        bad.run_id += 100;
        assert!(h.record_published(&[bad]).is_err());
    }

    #[test]
    fn a_newer_schema_is_refused_with_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.db");
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", SCHEMA_VERSION + 5)
            .unwrap();
        drop(c);
        let e = History::open(&path).err().unwrap().to_string();
        assert!(e.contains("h.db") && e.contains("newer"), "{e}");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.db");
        std::fs::write(
            &path,
            "this is not sqlite, just text that is long enough to matter",
        )
        .unwrap();
        let e = History::open(&path).err().unwrap().to_string();
        assert!(e.contains("h.db"), "{e}");
    }
}
