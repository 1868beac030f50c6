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
];

/// The schema version this aether writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// An open job history.
pub struct History {
    conn: Connection,
    path: PathBuf,
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
}

fn db_error(path: &Path, e: impl std::fmt::Display) -> HistoryError {
    HistoryError::Db {
        path: path.display().to_string(),
        error: e.to_string(),
    }
}

fn now_ms() -> i64 {
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
        // WAL: readers never block the writer; NORMAL sync is durable across process crashes
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| err(&e))?;
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

    fn err(&self, e: impl std::fmt::Display) -> HistoryError {
        db_error(&self.path, e)
    }

    /// Run `f` in one transaction that holds the write lock from the start (`BEGIN IMMEDIATE`,
    /// waiting for another writer up to the busy timeout), committed when `f` succeeds.
    fn write<T>(
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

    /// Record a qualification (and the CPU run it read) for an app run, in one transaction;
    /// returns the job id.
    pub fn record(
        &mut self,
        app_id: &str,
        attempt_id: &str,
        event_log: &str,
        app_name: &str,
        run: &CpuRun,
        q: &Qualification,
    ) -> Result<i64> {
        self.write(|tx| {
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
                 gpu_cost_usd, savings_usd)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
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
                    q.savings_usd
                ],
            )?;
            Ok(job)
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
                        (SELECT COUNT(*) FROM qualifications x WHERE x.job_id = j.job_id)
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
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    /// SQLite's own consistency check (`ok` when the file is sound).
    pub fn integrity_check(&self) -> Result<String> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }
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
            .record("app-1", "", "/logs/a", "etl", &CpuRun::default(), &q)
            .unwrap();
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
