//! Crash safety in the job history: intents recorded before the calls that make or change
//! something billable, the records a crash left open, one writer per job, and what
//! reconciliation changed.
//!
//! A cluster is on record before RunJobFlow is sent: a row `pending:<request token>` in state
//! `CREATING` with intent `create`, which the answer turns into the cluster's own id. A run is on
//! record before its step is submitted (status `SUBMITTING`, its `token` the step's name), and a
//! cancel or terminate is recorded as the row's `intent` before it is sent. Each is one
//! transaction. What a crash leaves open, reconciliation (aether-workflow) finds again by its
//! token and brings up to the platform's truth, logging each change here.

use crate::history::{History, OPEN_RUN_STATUSES, Result, Run, now_ms};
use rusqlite::{OptionalExtension, ToSql, params};
use serde::Serialize;

/// A cluster as the history keeps it (also one whose create has not answered yet).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClusterRow {
    /// The platform's id; `pending:<token>` until the create answered.
    pub cluster_id: String,
    pub backend: String,
    pub shape_id: Option<String>,
    pub job_id: Option<i64>,
    pub request_token: Option<String>,
    /// The platform's state as last seen (`CREATING` before the create answered; `LOST`, or
    /// `NOT_CREATED` when reconciliation found that no cluster carries the token).
    pub state: String,
    /// A call asked and not answered: `create`, `terminate`.
    pub intent: Option<String>,
    pub owner: Option<String>,
    /// The backend's description of it (a `ClusterInfo`), with reconciliation's reason.
    pub info: serde_json::Value,
    pub created_ms: i64,
    pub updated_ms: i64,
}

impl ClusterRow {
    /// Whether its create has not answered yet (no platform id on record).
    pub fn is_pending(&self) -> bool {
        self.cluster_id.starts_with(PENDING)
    }
    /// Whether the history holds it as gone (or never made).
    pub fn is_ended(&self) -> bool {
        CLUSTER_END_STATES.contains(&self.state.as_str())
    }
}

/// The id prefix of a cluster whose create has not answered.
pub const PENDING: &str = "pending:";

/// Cluster states after which nothing bills.
pub const CLUSTER_END_STATES: &[&str] = &[
    "TERMINATED",
    "TERMINATED_WITH_ERRORS",
    "LOST",
    "NOT_CREATED",
];

/// Who holds a job (`tune`, `run`, `submit` take it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobLock {
    pub job_id: i64,
    pub owner: String,
    pub command: String,
    pub since_ms: i64,
}

/// What [`History::lock_job`] found.
#[derive(Clone, Debug, PartialEq)]
pub enum Locked {
    /// The job is ours; `took_over`: the lock of a process that is gone, taken over;
    /// `reentrant`: this process held it already (an inner command of `run`).
    Acquired {
        took_over: Option<JobLock>,
        reentrant: bool,
    },
    /// Another live process holds it.
    Held(JobLock),
}

/// One change reconciliation made.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reconciled {
    pub at_ms: i64,
    /// `run` or `cluster`.
    pub kind: String,
    /// The run id or cluster id.
    pub target: String,
    pub job_id: Option<i64>,
    pub before: String,
    pub after: String,
    pub reason: String,
}

/// The records a process owns: runs and clusters.
#[derive(Clone, Copy)]
enum Owned {
    Run,
    Cluster,
}

impl Owned {
    /// Its table and key column.
    fn table(self) -> (&'static str, &'static str) {
        match self {
            Owned::Run => ("runs", "run_id"),
            Owned::Cluster => ("clusters", "cluster_id"),
        }
    }
}

const CLUSTER_COLUMNS: &str = "cluster_id, backend, shape_id, job_id, request_token, state, \
                               intent, owner, info_json, created_ms, updated_ms";

fn lock_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<JobLock> {
    Ok(JobLock {
        job_id: r.get(0)?,
        owner: r.get(1)?,
        command: r.get(2)?,
        since_ms: r.get(3)?,
    })
}

fn cluster_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ClusterRow> {
    let info: String = r.get(8)?;
    Ok(ClusterRow {
        cluster_id: r.get(0)?,
        backend: r.get(1)?,
        shape_id: r.get(2)?,
        job_id: r.get(3)?,
        request_token: r.get(4)?,
        state: r.get(5)?,
        intent: r.get(6)?,
        owner: r.get(7)?,
        info: serde_json::from_str(&info).unwrap_or_default(),
        created_ms: r.get(9)?,
        updated_ms: r.get(10)?,
    })
}

impl History {
    // ---- runs ----

    /// A run's step was made: its id and first state (the run was recorded `SUBMITTING`).
    pub fn submitted_run(&mut self, r: &Run) -> Result<()> {
        self.write(|tx| {
            let n = tx.execute(
                "UPDATE runs SET step_id = ?2, status = ?3, start_ms = COALESCE(?4, start_ms),
                     details_json = ?5, updated_ms = ?6
                 WHERE run_id = ?1",
                params![
                    r.run_id,
                    r.step_id,
                    r.status,
                    r.start_ms,
                    r.details.to_string(),
                    now_ms()
                ],
            )?;
            if n == 0 {
                return Err(rusqlite::Error::QueryReturnedNoRows);
            }
            Ok(())
        })
    }

    /// Record (or clear) a call asked of a run's step (`cancel`) before it is sent.
    /// (The process that asks it owns the run from then on.)
    pub fn set_run_intent(&mut self, run_id: i64, intent: Option<&str>) -> Result<()> {
        self.set_intent(Owned::Run, &run_id, intent)
    }

    /// A run recorded `SUBMITTING` whose submit the platform refused (no step was made):
    /// removed, as nothing happened. Only a run still `SUBMITTING` with no step is.
    pub fn drop_unsubmitted_run(&mut self, run_id: i64) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "DELETE FROM runs WHERE run_id = ?1 AND status = 'SUBMITTING' AND step_id IS NULL",
                params![run_id],
            )?;
            Ok(())
        })
    }

    /// Take over a run from `from` (its owner as read) for `to`: false when another process
    /// took it meanwhile (two reconciliations at once: one does it).
    pub fn claim_run(&mut self, run_id: i64, from: Option<&str>, to: &str) -> Result<bool> {
        self.claim(Owned::Run, &run_id, from, to)
    }

    /// As [`History::claim_run`], for a cluster.
    pub fn claim_cluster(
        &mut self,
        cluster_id: &str,
        from: Option<&str>,
        to: &str,
    ) -> Result<bool> {
        self.claim(Owned::Cluster, &cluster_id, from, to)
    }

    /// Set the intent of a run or cluster (a set one makes this process its owner).
    fn set_intent(&mut self, what: Owned, id: &dyn ToSql, intent: Option<&str>) -> Result<()> {
        let me = crate::owner::me();
        let (table, key) = what.table();
        self.write(|tx| {
            tx.execute(
                &format!(
                    "UPDATE {table} SET intent = ?2, updated_ms = ?3,
                         owner = CASE WHEN ?2 IS NULL THEN owner ELSE ?4 END
                     WHERE {key} = ?1"
                ),
                params![id, intent, now_ms(), me],
            )?;
            Ok(())
        })
    }

    /// Make `to` the owner of a run or cluster whose owner is still `from`.
    fn claim(&mut self, what: Owned, id: &dyn ToSql, from: Option<&str>, to: &str) -> Result<bool> {
        let (table, key) = what.table();
        self.write(|tx| {
            let n = tx.execute(
                &format!(
                    "UPDATE {table} SET owner = ?3, updated_ms = ?4 WHERE {key} = ?1 AND owner IS ?2"
                ),
                params![id, from, to, now_ms()],
            )?;
            Ok(n == 1)
        })
    }

    /// This process follows the run from now on (a resumed tune adopting a killed one's run).
    pub fn set_run_owner(&mut self, run_id: i64, owner: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "UPDATE runs SET owner = ?2, updated_ms = ?3 WHERE run_id = ?1",
                params![run_id, owner, now_ms()],
            )?;
            Ok(())
        })
    }

    /// The runs that may still change (`SUBMITTING`, `PENDING`, `RUNNING`, or with a call
    /// asked and not answered: a cancel that did not take), of one job or all, each with its
    /// last update's time.
    pub fn open_runs(&self, job_id: Option<i64>) -> Result<Vec<(Run, i64)>> {
        let statuses = OPEN_RUN_STATUSES
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let cond = format!(
            "(status IN ({statuses}) OR intent IS NOT NULL) AND (?1 IS NULL OR job_id = ?1)"
        );
        self.runs_where(&cond, params![job_id])
    }

    /// The runs of a tune session, oldest first.
    pub fn tune_runs(&self, tune_id: i64) -> Result<Vec<Run>> {
        Ok(self
            .runs_where("tune_id = ?1", params![tune_id])?
            .into_iter()
            .map(|(r, _)| r)
            .collect())
    }

    // ---- clusters ----

    /// Record a cluster about to be created (before the create is sent): `pending:<token>`,
    /// state `CREATING`, intent `create`. A token already on record keeps its row (a create
    /// retried with the same `--request_token`); a token whose cluster has ended is refused.
    #[allow(clippy::too_many_arguments)]
    pub fn intend_cluster(
        &mut self,
        token: &str,
        backend: &str,
        shape_id: Option<&str>,
        job_id: Option<i64>,
        owner: &str,
        info: &serde_json::Value,
    ) -> Result<()> {
        self.write(|tx| {
            let now = now_ms();
            // a token already on record: a cluster it made that has ended cannot be made
            // again under it (its record would be taken over)
            let used: Option<(String, String)> = tx
                .query_row(
                    "SELECT cluster_id, state FROM clusters WHERE request_token = ?1",
                    params![token],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            if let Some((id, state)) = used
                && !id.starts_with(PENDING)
                && CLUSTER_END_STATES.contains(&state.as_str())
            {
                return Err(rusqlite::Error::InvalidParameterName(format!(
                    "request token {token} made cluster {id}, which is {state}: use a new token"
                )));
            }
            tx.execute(
                "INSERT INTO clusters (cluster_id, backend, shape_id, job_id, request_token, state,
                                       info_json, created_ms, updated_ms, owner, intent)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'CREATING', ?6, ?7, ?7, ?8, 'create')
                 ON CONFLICT (request_token) DO UPDATE SET owner = excluded.owner,
                     updated_ms = excluded.updated_ms,
                     intent = CASE WHEN clusters.cluster_id LIKE 'pending:%' THEN 'create'
                                   ELSE clusters.intent END,
                     state = CASE WHEN clusters.cluster_id LIKE 'pending:%' THEN 'CREATING'
                                  ELSE clusters.state END",
                params![
                    format!("{PENDING}{token}"),
                    backend,
                    shape_id,
                    job_id,
                    token,
                    info.to_string(),
                    now,
                    owner
                ],
            )?;
            Ok(())
        })
    }

    /// The create of `token` answered: its row takes the cluster's id, state and description
    /// (a cluster already on record under that id absorbs the pending row).
    pub fn created_cluster(
        &mut self,
        token: &str,
        cluster_id: &str,
        state: &str,
        info: &serde_json::Value,
    ) -> Result<()> {
        self.write(|tx| {
            let now = now_ms();
            let pending: Option<String> = tx
                .query_row(
                    "SELECT cluster_id FROM clusters WHERE request_token = ?1",
                    params![token],
                    |r| r.get(0),
                )
                .optional()?;
            let existing: bool = tx
                .query_row(
                    "SELECT 1 FROM clusters WHERE cluster_id = ?1",
                    params![cluster_id],
                    |_| Ok(true),
                )
                .optional()?
                .unwrap_or(false);
            match pending {
                Some(p) if p != cluster_id && existing => {
                    tx.execute("DELETE FROM clusters WHERE cluster_id = ?1", params![p])?;
                }
                Some(p) => {
                    tx.execute(
                        "UPDATE clusters SET cluster_id = ?2 WHERE cluster_id = ?1",
                        params![p, cluster_id],
                    )?;
                }
                None if !existing => {
                    return Err(rusqlite::Error::QueryReturnedNoRows);
                }
                None => {}
            }
            tx.execute(
                "UPDATE clusters SET state = ?2, info_json = ?3, intent = NULL, updated_ms = ?4,
                     request_token = COALESCE(request_token, ?5)
                 WHERE cluster_id = ?1",
                params![cluster_id, state, info.to_string(), now, token],
            )?;
            Ok(())
        })
    }

    /// Record (or clear) a call asked of a cluster (`terminate`) before it is sent.
    /// (The process that asks it owns the cluster's record from then on.)
    pub fn set_cluster_intent(&mut self, cluster_id: &str, intent: Option<&str>) -> Result<()> {
        self.set_intent(Owned::Cluster, &cluster_id, intent)
    }

    /// A cluster's state as reconciliation found it, with why (`LOST`, `NOT_CREATED`, or the
    /// platform's state); its description keeps the reason as `state_reason`.
    pub fn set_cluster_state(&mut self, cluster_id: &str, state: &str, reason: &str) -> Result<()> {
        self.write(|tx| {
            let info: Option<String> = tx
                .query_row(
                    "SELECT info_json FROM clusters WHERE cluster_id = ?1",
                    params![cluster_id],
                    |r| r.get(0),
                )
                .optional()?;
            let mut info: serde_json::Value = info
                .and_then(|i| serde_json::from_str(&i).ok())
                .unwrap_or_else(|| serde_json::json!({}));
            if let Some(o) = info.as_object_mut() {
                o.insert("state_reason".into(), reason.into());
            }
            tx.execute(
                "UPDATE clusters SET state = ?2, info_json = ?3, intent = NULL, updated_ms = ?4
                 WHERE cluster_id = ?1",
                params![cluster_id, state, info.to_string(), now_ms()],
            )?;
            Ok(())
        })
    }

    /// Every cluster on record, oldest first.
    pub fn clusters(&self) -> Result<Vec<ClusterRow>> {
        self.cluster_rows("1 = 1")
    }

    /// The clusters that may still bill or change: not ended, or with a call unanswered.
    pub fn open_clusters(&self) -> Result<Vec<ClusterRow>> {
        let ended = CLUSTER_END_STATES
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(", ");
        self.cluster_rows(&format!("state NOT IN ({ended}) OR intent IS NOT NULL"))
    }

    fn cluster_rows(&self, cond: &str) -> Result<Vec<ClusterRow>> {
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT {CLUSTER_COLUMNS} FROM clusters WHERE {cond} ORDER BY created_ms, cluster_id"
            ))
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([], cluster_row).map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    // ---- one writer per job ----

    /// Take job `job_id` for `owner` (`command`: what it runs, for the message another
    /// process shows). A lock whose owner is gone ([`crate::owner::alive`]) is taken over.
    pub fn lock_job(&mut self, job_id: i64, owner: &str, command: &str) -> Result<Locked> {
        self.write(|tx| {
            let now = now_ms();
            let held: Option<JobLock> = tx
                .query_row(
                    "SELECT job_id, owner, command, since_ms FROM job_locks WHERE job_id = ?1",
                    params![job_id],
                    lock_row,
                )
                .optional()?;
            let took_over = match held {
                Some(l) if l.owner == owner => {
                    return Ok(Locked::Acquired {
                        took_over: None,
                        reentrant: true,
                    });
                }
                Some(l) => {
                    let age = std::time::Duration::from_millis((now - l.since_ms).max(0) as u64);
                    if crate::owner::alive(&l.owner, age) {
                        return Ok(Locked::Held(l));
                    }
                    Some(l)
                }
                None => None,
            };
            tx.execute(
                "INSERT INTO job_locks (job_id, owner, command, since_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (job_id) DO UPDATE SET owner = excluded.owner,
                     command = excluded.command, since_ms = excluded.since_ms",
                params![job_id, owner, command, now],
            )?;
            Ok(Locked::Acquired {
                took_over,
                reentrant: false,
            })
        })
    }

    /// Give job `job_id` back (only `owner`'s lock is removed).
    pub fn unlock_job(&mut self, job_id: i64, owner: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "DELETE FROM job_locks WHERE job_id = ?1 AND owner = ?2",
                params![job_id, owner],
            )?;
            Ok(())
        })
    }

    /// Every job lock on record (alive or not).
    pub fn job_locks(&self) -> Result<Vec<JobLock>> {
        let mut st = self
            .conn
            .prepare("SELECT job_id, owner, command, since_ms FROM job_locks ORDER BY job_id")
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([], lock_row).map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    // ---- what reconciliation changed ----

    /// Log a change reconciliation made.
    pub fn add_reconciliation(&mut self, r: &Reconciled) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO reconciliations (at_ms, kind, target, job_id, before, after, reason)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    r.at_ms, r.kind, r.target, r.job_id, r.before, r.after, r.reason
                ],
            )?;
            Ok(())
        })
    }

    /// The changes reconciliation made since `since_ms`, oldest first.
    pub fn reconciliations(&self, since_ms: i64) -> Result<Vec<Reconciled>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT at_ms, kind, target, job_id, before, after, reason FROM reconciliations
                 WHERE at_ms >= ?1 ORDER BY reconciliation_id",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map(params![since_ms], |r| {
                Ok(Reconciled {
                    at_ms: r.get(0)?,
                    kind: r.get(1)?,
                    target: r.get(2)?,
                    job_id: r.get(3)?,
                    before: r.get(4)?,
                    after: r.get(5)?,
                    reason: r.get(6)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history() -> (tempfile::TempDir, History) {
        let d = tempfile::tempdir().unwrap();
        let h = History::open(&d.path().join("h.db")).unwrap();
        (d, h)
    }

    #[test]
    fn a_cluster_is_on_record_before_its_create_and_takes_its_id_after() {
        let (_d, mut h) = history();
        let me = crate::owner::me();
        h.intend_cluster("tok-1", "emr", Some("3"), None, &me, &serde_json::json!({}))
            .unwrap();
        let open = h.open_clusters().unwrap();
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].cluster_id, "pending:tok-1");
        assert!(open[0].is_pending());
        assert_eq!(
            (open[0].state.as_str(), open[0].intent.as_deref()),
            ("CREATING", Some("create"))
        );
        // the same token again (a retried create): still one row
        h.intend_cluster("tok-1", "emr", Some("3"), None, &me, &serde_json::json!({}))
            .unwrap();
        assert_eq!(h.clusters().unwrap().len(), 1);
        h.created_cluster("tok-1", "j-ABC", "STARTING", &serde_json::json!({"x": 1}))
            .unwrap();
        let all = h.clusters().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].cluster_id, "j-ABC");
        assert_eq!(all[0].request_token.as_deref(), Some("tok-1"));
        assert_eq!(all[0].intent, None);
        assert_eq!(all[0].shape_id.as_deref(), Some("3"));
        // terminate asked, then found ended
        h.set_cluster_intent("j-ABC", Some("terminate")).unwrap();
        assert_eq!(h.open_clusters().unwrap().len(), 1);
        h.set_cluster_state("j-ABC", "TERMINATED", "terminated by aether")
            .unwrap();
        assert!(h.open_clusters().unwrap().is_empty());
        let c = &h.clusters().unwrap()[0];
        assert!(c.is_ended());
        assert_eq!(c.info["state_reason"], "terminated by aether");
        assert_eq!(c.info["x"], 1, "the description is kept");
    }

    #[test]
    fn a_pending_cluster_merges_into_a_row_of_the_same_id() {
        let (_d, mut h) = history();
        h.upsert_cluster(&crate::history::ClusterRecord {
            cluster_id: "j-1",
            backend: "emr",
            shape_id: None,
            job_id: None,
            request_token: None,
            state: "WAITING",
            info: &serde_json::json!({}),
        })
        .unwrap();
        h.intend_cluster("t", "emr", None, None, "x:1:1", &serde_json::json!({}))
            .unwrap();
        h.created_cluster("t", "j-1", "RUNNING", &serde_json::json!({}))
            .unwrap();
        let all = h.clusters().unwrap();
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(all[0].state, "RUNNING");
        assert_eq!(all[0].request_token.as_deref(), Some("t"));
        // the token of a cluster that has ended cannot make another
        h.set_cluster_state("j-1", "TERMINATED", "by hand").unwrap();
        let e = h
            .intend_cluster("t", "emr", None, None, "x:1:1", &serde_json::json!({}))
            .unwrap_err();
        assert!(e.to_string().contains("use a new token"), "{e}");
        // a token never recorded and no such cluster: an error, not a silent no-op
        assert!(
            h.created_cluster("nope", "j-2", "RUNNING", &serde_json::json!({}))
                .is_err()
        );
    }

    #[test]
    fn one_writer_per_job_and_a_dead_owner_is_taken_over() {
        let (_d, mut h) = history();
        h.conn
            .execute(
                "INSERT INTO jobs (job_id, app_id, event_log, created_ms) VALUES (1, 'a', 'l', 0)",
                [],
            )
            .unwrap();
        let me = crate::owner::me();
        assert_eq!(
            h.lock_job(1, &me, "aether tune").unwrap(),
            Locked::Acquired {
                took_over: None,
                reentrant: false
            }
        );
        assert_eq!(
            h.lock_job(1, &me, "aether run").unwrap(),
            Locked::Acquired {
                took_over: None,
                reentrant: true
            }
        );
        // a live other process (pid 1 of this host, with its real start time) holds it
        let init = format!(
            "{}:1:{}",
            crate::owner::host(),
            crate::owner::start_ticks(1).unwrap_or(0)
        );
        h.unlock_job(1, &me).unwrap();
        h.lock_job(1, &init, "aether tune").unwrap();
        match h.lock_job(1, &me, "aether tune").unwrap() {
            Locked::Held(l) => {
                assert_eq!((l.owner, l.command), (init.clone(), "aether tune".into()))
            }
            other => panic!("{other:?}"),
        }
        // unlock by someone else leaves it
        h.unlock_job(1, &me).unwrap();
        assert_eq!(h.job_locks().unwrap()[0].owner, init);
        // a dead owner (a reaped child's pid): taken over
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = format!("{}:{}:5", crate::owner::host(), c.id());
        c.wait().unwrap();
        h.conn
            .execute("UPDATE job_locks SET owner = ?1", [&dead])
            .unwrap();
        match h.lock_job(1, &me, "aether tune").unwrap() {
            Locked::Acquired {
                took_over: Some(l),
                reentrant: false,
            } => assert_eq!(l.owner, dead),
            other => panic!("{other:?}"),
        }
        assert_eq!(h.job_locks().unwrap()[0].owner, me);
    }

    #[test]
    fn open_runs_and_their_intents() {
        let (_d, mut h) = history();
        h.conn
            .execute(
                "INSERT INTO jobs (job_id, app_id, event_log, created_ms) VALUES (1, 'a', 'l', 0)",
                [],
            )
            .unwrap();
        let mut r = Run {
            job_id: 1,
            kind: "gpu-test".into(),
            status: "SUBMITTING".into(),
            token: Some("aether job 1 config 2 x".into()),
            owner: Some("h:1:1".into()),
            ..Default::default()
        };
        r.run_id = h.start_run(&r).unwrap();
        let open = h.open_runs(Some(1)).unwrap();
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].0.token, r.token);
        assert!(h.open_runs(Some(2)).unwrap().is_empty());
        r.step_id = Some("s-1".into());
        r.status = "RUNNING".into();
        h.submitted_run(&r).unwrap();
        h.set_run_intent(r.run_id, Some("cancel")).unwrap();
        let got = h.run(r.run_id).unwrap().unwrap();
        assert_eq!(
            (got.step_id.as_deref(), got.intent.as_deref()),
            (Some("s-1"), Some("cancel"))
        );
        r.status = "CANCELLED".into();
        h.finish_run(&r).unwrap();
        assert!(h.open_runs(None).unwrap().is_empty());
        assert_eq!(h.run(r.run_id).unwrap().unwrap().intent, None);
        h.add_reconciliation(&Reconciled {
            at_ms: 5,
            kind: "run".into(),
            target: r.run_id.to_string(),
            job_id: Some(1),
            before: "RUNNING".into(),
            after: "COMPLETED".into(),
            reason: "its step COMPLETED".into(),
        })
        .unwrap();
        assert_eq!(h.reconciliations(0).unwrap().len(), 1);
        assert!(h.reconciliations(6).unwrap().is_empty());
    }
}
