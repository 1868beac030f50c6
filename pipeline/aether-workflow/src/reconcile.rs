//! Reconciliation: the job history brought up to the platform's truth after a crash.
//!
//! Every command that reads or continues a job (`tune`, `run`, `submit`, `validate`, `report`,
//! `cluster list / terminate`, `history check`) calls [`reconcile`] first. It looks at what the
//! history holds open — clusters not ended or with a call unanswered, runs `SUBMITTING`,
//! `PENDING` or `RUNNING` — whose owner process is gone (a live owner follows its own records),
//! asks the platform, and records what it says:
//!
//! - a cluster whose create was never answered is found by its request token (its EMR tag) and
//!   takes its id, or becomes `NOT_CREATED` when no cluster carries the token; a cluster whose
//!   terminate was asked and not answered is terminated; one the platform no longer knows
//!   becomes `LOST`; the others take the platform's state;
//! - a run whose submit was never answered is found by its step's name; a run whose step ended
//!   is completed as a followed run is (its event log read, its duration and cost; the same
//!   [`runs::complete`]); a run whose cancel was asked is cancelled; a step the platform no
//!   longer knows makes the run `LOST` with why.
//!
//! Each change is logged in the history (`reconciliations`), which `aether history check`
//! lists. A platform that cannot be asked (no network, no credentials) leaves the records as
//! they are, with a warning; nothing is guessed.

use crate::error::{Result, invalid};
use crate::runs::{self, RunSpec};
use crate::workspace::Workspace;
use aether_core::History;
use aether_core::RunOn;
use aether_core::history::{ClusterRecord, Run};
use aether_core::intent::{ClusterRow, Reconciled};
use aether_platform::{ClusterBackend, ClusterInfo, ClusterSpec, ClusterState, PlatformError};
use std::time::Duration;

/// What to reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every open cluster and run.
    All,
    /// Every open cluster, and the open runs of one job.
    Job(i64),
}

/// What one reconciliation did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// The changes it made (also logged in the history).
    pub changed: Vec<Reconciled>,
    /// Records left open, and why (a live owner follows them; the step still runs).
    pub open: Vec<String>,
    /// Platforms that could not be asked.
    pub errors: Vec<String>,
}

fn age(updated_ms: i64) -> Duration {
    Duration::from_millis((aether_platform::now_ms() - updated_ms).max(0) as u64)
}

fn owned(owner: Option<&str>, updated_ms: i64) -> bool {
    owner.is_some_and(|o| {
        o != aether_core::owner::me() && aether_core::owner::alive(o, age(updated_ms))
    })
}

/// A platform from a backend's name in the history.
fn platform_of(backend: &str) -> Option<RunOn> {
    RunOn::parse(backend)
}

/// A cluster's state in the history.
pub fn record(
    h: &mut History,
    b: &dyn ClusterBackend,
    c: &ClusterInfo,
    job_id: Option<i64>,
    token: Option<&str>,
) -> Result<()> {
    h.upsert_cluster(&ClusterRecord {
        cluster_id: &c.cluster_id,
        backend: b.name(),
        shape_id: c.spec.shape_id.as_deref(),
        job_id,
        request_token: token,
        state: c.state.as_str(),
        info: &serde_json::to_value(c)?,
    })?;
    Ok(())
}

/// The backends a reconciliation asked, made once each.
type Backends = Vec<(RunOn, Box<dyn ClusterBackend>)>;

/// The index in `backends` of the backend named `name` (made on first use).
fn backend(ws: &Workspace, backends: &mut Backends, name: &str) -> Result<usize> {
    let p = platform_of(name).ok_or_else(|| invalid!("unknown backend {name}"))?;
    if let Some(i) = backends.iter().position(|(q, _)| *q == p) {
        return Ok(i);
    }
    backends.push((p, ws.backend(p)?));
    Ok(backends.len() - 1)
}

/// Bring the history's open clusters and runs (of `scope`) up to the platform's truth.
pub fn reconcile(ws: &Workspace, h: &mut History, scope: Scope) -> Result<Outcome> {
    let mut out = Outcome::default();
    let clusters = h.open_clusters()?;
    let runs = h.open_runs(match scope {
        Scope::All => None,
        Scope::Job(j) => Some(j),
    })?;
    if clusters.is_empty() && runs.is_empty() {
        return Ok(out);
    }
    let mut backends: Backends = Vec::new();
    let me = aether_core::owner::me();
    for c in clusters {
        if owned(c.owner.as_deref(), c.updated_ms) && c.intent.is_some() {
            out.open.push(format!(
                "cluster {}: a {} by a live aether ({})",
                c.cluster_id,
                c.intent.as_deref().unwrap_or(""),
                c.owner.as_deref().unwrap_or("")
            ));
            continue;
        }
        // two reconciliations at once: the one that takes the record does it
        if c.owner.as_deref() != Some(me.as_str())
            && !h.claim_cluster(&c.cluster_id, c.owner.as_deref(), &me)?
        {
            continue;
        }
        let i = match backend(ws, &mut backends, &c.backend) {
            Ok(i) => i,
            Err(e) => {
                out.errors.push(format!("cluster {}: {e:#}", c.cluster_id));
                continue;
            }
        };
        let b = backends[i].1.as_ref();
        if let Err(e) = cluster(ws, h, b, &c, &mut out) {
            out.errors.push(format!("cluster {}: {e:#}", c.cluster_id));
        }
    }
    for (r, updated) in runs {
        if owned(r.owner.as_deref(), updated) {
            out.open.push(format!(
                "run {} of job {}: followed by a live aether ({})",
                r.run_id,
                r.job_id,
                r.owner.as_deref().unwrap_or("")
            ));
            continue;
        }
        if r.owner.as_deref() != Some(me.as_str())
            && !h.claim_run(r.run_id, r.owner.as_deref(), &me)?
        {
            continue;
        }
        let i = match backend(ws, &mut backends, r.backend.as_deref().unwrap_or("")) {
            Ok(i) => i,
            Err(e) => {
                out.errors.push(format!("run {}: {e:#}", r.run_id));
                continue;
            }
        };
        let (p, b) = (backends[i].0, backends[i].1.as_ref());
        if let Err(e) = run(ws, h, p, b, r.clone(), &mut out) {
            out.errors.push(format!("run {}: {e:#}", r.run_id));
        }
    }
    for e in &out.errors {
        ws.warn(&format!(
            "reconciling the history: {e}; the record is left as it was"
        ));
    }
    Ok(out)
}

fn log(h: &mut History, ws: &Workspace, out: &mut Outcome, r: Reconciled) -> Result<()> {
    ws.note(&format!(
        "reconciled {} {}{}: {} -> {} ({})",
        r.kind,
        r.target,
        r.job_id.map(|j| format!(" of job {j}")).unwrap_or_default(),
        r.before,
        r.after,
        r.reason
    ));
    h.add_reconciliation(&r)?;
    out.changed.push(r);
    Ok(())
}

fn change(
    kind: &str,
    target: &str,
    job_id: Option<i64>,
    before: &str,
    after: &str,
    reason: String,
) -> Reconciled {
    Reconciled {
        at_ms: aether_platform::now_ms(),
        kind: kind.into(),
        target: target.into(),
        job_id,
        before: before.into(),
        after: after.into(),
        reason,
    }
}

/// One open cluster of the history.
/// Record and tell a change of the cluster on record `c` (`target`: its id, or the id its
/// pending record became).
fn cluster_changed(
    h: &mut History,
    ws: &Workspace,
    out: &mut Outcome,
    c: &ClusterRow,
    target: &str,
    after: &str,
    reason: String,
) -> Result<()> {
    log(
        h,
        ws,
        out,
        change("cluster", target, c.job_id, &c.state, after, reason),
    )
}

fn cluster(
    ws: &Workspace,
    h: &mut History,
    b: &dyn ClusterBackend,
    c: &ClusterRow,
    out: &mut Outcome,
) -> Result<()> {
    let rt = ws.runtime();
    if c.is_pending() {
        let token = c.request_token.clone().unwrap_or_default();
        return match rt.block_on(b.find_created(&token, c.created_ms))? {
            Some(found) => {
                h.created_cluster(
                    &token,
                    &found.cluster_id,
                    found.state.as_str(),
                    &serde_json::to_value(&found)?,
                )?;
                if !found.state.is_ended() {
                    ws.warn(&format!(
                        "cluster {} was made by an interrupted `cluster create` and is {}: \
                         `aether cluster terminate --cluster_id {}` ends it (auto-termination \
                         ends it when idle)",
                        found.cluster_id,
                        found.state.as_str(),
                        found.cluster_id
                    ));
                }
                cluster_changed(
                    h,
                    ws,
                    out,
                    c,
                    &found.cluster_id,
                    found.state.as_str(),
                    format!("its create was never answered; found by its request token {token}"),
                )
            }
            None => {
                let why = format!(
                    "no cluster carries request token {token}: the create never reached {}",
                    b.name()
                );
                h.set_cluster_state(&c.cluster_id, "NOT_CREATED", &why)?;
                cluster_changed(h, ws, out, c, &c.cluster_id, "NOT_CREATED", why)
            }
        };
    }
    let now = match rt.block_on(b.describe(&c.cluster_id)) {
        Ok(i) => i,
        Err(PlatformError::UnknownCluster(_)) => {
            let why = format!("{} no longer knows the cluster", b.name());
            h.set_cluster_state(&c.cluster_id, "LOST", &why)?;
            return cluster_changed(h, ws, out, c, &c.cluster_id, "LOST", why);
        }
        Err(e) => return Err(e.into()),
    };
    if c.intent.as_deref() == Some("terminate") && !now.state.is_ended() {
        // a terminate was asked and never answered: finish it
        let t = rt.block_on(b.terminate(&c.cluster_id))?;
        record(h, b, &t, c.job_id, None)?;
        let reason = "its terminate was asked and never answered: terminated".to_string();
        return cluster_changed(h, ws, out, c, &c.cluster_id, t.state.as_str(), reason);
    }
    if now.state.as_str() != c.state || c.intent.is_some() {
        // (recording a state clears the intent)
        record(h, b, &now, c.job_id, None)?;
        // a cluster that ended (or whose call was never answered) is a change worth telling;
        // WAITING <-> RUNNING is only recorded
        if now.state.as_str() != c.state && (now.state.is_ended() || c.intent.is_some()) {
            let reason = now
                .state_reason
                .clone()
                .unwrap_or_else(|| format!("as {} says", b.name()));
            cluster_changed(h, ws, out, c, &c.cluster_id, now.state.as_str(), reason)?;
        }
    }
    Ok(())
}

/// The cluster a run ran on: the platform's description, else the history's (a cluster gone
/// still has its nodes on record, for the cost).
fn cluster_of(ws: &Workspace, h: &History, b: &dyn ClusterBackend, id: &str) -> ClusterInfo {
    if let Ok(c) = ws.runtime().block_on(b.describe(id)) {
        return c;
    }
    if let Ok(Some((_, _, info))) = h.cluster(id)
        && let Ok(c) = serde_json::from_value::<ClusterInfo>(info)
    {
        return c;
    }
    ClusterInfo {
        cluster_id: id.to_string(),
        backend: b.name().to_string(),
        release_label: None,
        custom_ami: None,
        state: ClusterState::Terminated,
        spec: ClusterSpec::default(),
        created_ms: 0,
        ended_ms: None,
        state_reason: None,
        groups: Vec::new(),
    }
}

/// One open run of the history whose owner is gone.
fn run(
    ws: &Workspace,
    h: &mut History,
    platform: RunOn,
    b: &dyn ClusterBackend,
    mut r: Run,
    out: &mut Outcome,
) -> Result<()> {
    let rt = ws.runtime();
    let before = r.status.clone();
    let target = r.run_id.to_string();
    let cid = r.cluster_id.clone().unwrap_or_default();
    let lost = |h: &mut History, out: &mut Outcome, mut r: Run, why: String| -> Result<()> {
        r.status = "LOST".into();
        r.intent = None;
        r.end_ms.get_or_insert(aether_platform::now_ms());
        r.failure_reason = Some(why.clone());
        h.finish_run(&r)?;
        log(
            h,
            ws,
            out,
            change("run", &target, Some(r.job_id), &before, "LOST", why),
        )
    };
    if !aether_core::history::OPEN_RUN_STATUSES.contains(&before.as_str()) {
        // a run ended on record whose cancel did not take: finish the cancel
        let sid = r.step_id.clone().unwrap_or_default();
        let mut info = match rt.block_on(b.step(&cid, &sid)) {
            Ok(i) => i,
            Err(PlatformError::UnknownStep { .. } | PlatformError::UnknownCluster(_)) => {
                return Ok(h.set_run_intent(r.run_id, None)?);
            }
            Err(e) => return Err(e.into()),
        };
        let was = info.state.as_str();
        if !info.state.is_final() {
            info = rt.block_on(b.cancel(&cid, &sid))?;
        }
        if !info.state.is_final() {
            out.open.push(format!(
                "run {} of job {}: its step {sid} is still {} after a cancel",
                r.run_id,
                r.job_id,
                info.state.as_str()
            ));
            return Ok(());
        }
        h.set_run_intent(r.run_id, None)?;
        if was == info.state.as_str() {
            return Ok(());
        }
        let reason = "its cancel had not taken: cancelled by reconciliation".to_string();
        return log(
            h,
            ws,
            out,
            change(
                "run",
                &target,
                Some(r.job_id),
                &format!("{before} (step {was})"),
                &format!("{before} (step {})", info.state.as_str()),
                reason,
            ),
        );
    }
    // the step: by its id, else by its name (a submit whose answer was never recorded)
    let found = match (&r.step_id, &r.token) {
        (Some(sid), _) => rt.block_on(b.step(&cid, sid)).map(Some),
        (None, Some(name)) => rt.block_on(b.find_step(&cid, name)),
        (None, None) => Ok(None),
    };
    let mut info = match found {
        Ok(Some(i)) => i,
        Ok(None) => {
            let why = format!(
                "no step named {:?} on {cid}: its submit never reached {}",
                r.token.as_deref().unwrap_or(""),
                b.name()
            );
            return lost(h, out, r, why);
        }
        Err(e @ (PlatformError::UnknownStep { .. } | PlatformError::UnknownCluster(_))) => {
            let why = format!("{} no longer knows it: {e}", b.name());
            return lost(h, out, r, why);
        }
        Err(e) => return Err(e.into()),
    };
    if r.step_id.is_none() {
        r.step_id = Some(info.step_id.clone());
        r.details["args"] = serde_json::json!(info.args);
        // the step's id on record; the status stays open until the run is complete
        h.submitted_run(&Run {
            start_ms: info.start_ms,
            ..r.clone()
        })?;
    }
    if !info.state.is_final() && r.intent.as_deref() == Some("cancel") {
        // a cancel was asked and never answered: finish it
        info = rt.block_on(b.cancel(&cid, &info.step_id))?;
        if info.state.is_final() {
            info.failure_reason.get_or_insert(
                "its cancel was asked and never answered: cancelled by reconciliation".into(),
            );
        }
    }
    if !info.state.is_final() {
        let now = info.state.as_str();
        if now != before {
            h.submitted_run(&Run {
                status: now.into(),
                start_ms: info.start_ms,
                ..r.clone()
            })?;
            log(
                h,
                ws,
                out,
                change(
                    "run",
                    &target,
                    Some(r.job_id),
                    &before,
                    now,
                    format!("its step {} is {now} on {}", info.step_id, b.name()),
                ),
            )?;
        }
        out.open.push(format!(
            "run {} of job {}: step {} still {now} on {cid}, no aether follows it (`aether tune` \
             or `aether run` on the job takes it up)",
            r.run_id, r.job_id, info.step_id
        ));
        return Ok(());
    }
    let status = match (r.intent.as_deref(), info.state) {
        (Some("cancel"), aether_platform::StepState::Cancelled) => "CANCELLED".to_string(),
        (_, s) => s.as_str().to_string(),
    };
    let cluster = cluster_of(ws, h, b, &cid);
    let spec = RunSpec {
        b,
        platform,
        cluster: &cluster,
        job_id: r.job_id,
        config_id: r.config_id.unwrap_or(0),
        timeout_s: 0,
        tune_id: r.tune_id,
    };
    // the event log: one look when the step ended longer ago than the logs take to arrive
    let full = ws.log_wait(platform);
    let since = Duration::from_millis(
        info.end_ms
            .map(|e| (aether_platform::now_ms() - e).max(0) as u64)
            .unwrap_or(u64::MAX),
    );
    // (at most half a minute: a report or a listing does not wait on logs; a log that comes
    // later is not read, and the duration is then the step's own)
    let wait = full.saturating_sub(since).min(Duration::from_secs(30));
    let reason = format!(
        "its step {} {} on {} while no aether followed it",
        info.step_id,
        info.state.as_str(),
        b.name()
    );
    runs::complete(ws, h, &spec, &mut r, status.clone(), &info, wait)?;
    log(
        h,
        ws,
        out,
        change("run", &target, Some(r.job_id), &before, &status, reason),
    )
}

/// `aether history check`: reconcile everything now, and what reconciliation changed since
/// `since_ms`, the job locks on record and the database's integrity.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Check {
    /// What this reconciliation changed (also in `changed`).
    pub changed_now: usize,
    /// Every change since `since_ms`, oldest first.
    pub changed: Vec<Reconciled>,
    /// Records left open, and why.
    pub open: Vec<String>,
    /// What could not be asked.
    pub errors: Vec<String>,
    /// (job, command, owner, whether its process lives).
    pub locks: Vec<(i64, String, String, bool)>,
    /// SQLite's `PRAGMA integrity_check` ("ok").
    pub integrity: String,
}

/// Reconcile the whole history and say what reconciliation changed in the period `since`
/// back from now (`7d`, `24h`, `90m`, `2w`).
pub fn check(ws: &Workspace, since: &str) -> Result<Check> {
    let back = aether_report::ui::parse_since(since).map_err(|e| invalid!("--since {e}"))?;
    let since_ms = aether_platform::now_ms() - back;
    let mut h = ws.history()?;
    let now = reconcile(ws, &mut h, Scope::All)?;
    let locks = h
        .job_locks()?
        .into_iter()
        .map(|l| {
            let alive = aether_core::owner::alive(&l.owner, age(l.since_ms));
            (l.job_id, l.command, l.owner, alive)
        })
        .collect();
    Ok(Check {
        changed_now: now.changed.len(),
        changed: h.reconciliations(since_ms)?,
        open: now.open,
        errors: now.errors,
        locks,
        integrity: h.integrity_check()?,
    })
}

impl Check {
    /// Whether everything on record could be brought up to the platform's truth.
    pub fn ok(&self) -> bool {
        self.errors.is_empty() && self.integrity == "ok"
    }

    /// As JSON, or as text.
    pub fn text(&self, json: bool) -> Result<String> {
        Ok(if json {
            serde_json::to_string_pretty(self)? + "\n"
        } else {
            self.render()
        })
    }

    /// As text, one line per fact.
    pub fn render(&self) -> String {
        let mut s = format!(
            "history: integrity {}; reconciliation changed {} record(s) now, {} in the period\n",
            self.integrity,
            self.changed_now,
            self.changed.len()
        );
        for r in &self.changed {
            s.push_str(&format!(
                "changed\t{}\t{} {}\t{}\t{} -> {}\t{}\n",
                aether_report::render::when(Some(r.at_ms)),
                r.kind,
                r.target,
                r.job_id
                    .map(|j| format!("job {j}"))
                    .unwrap_or_else(|| "-".into()),
                r.before,
                r.after,
                r.reason
            ));
        }
        for o in &self.open {
            s.push_str(&format!("open\t{o}\n"));
        }
        for e in &self.errors {
            s.push_str(&format!("error\t{e}\n"));
        }
        for (job, cmd, owner, alive) in &self.locks {
            s.push_str(&format!(
                "lock\tjob {job}\t{cmd}\t{owner}\t{}\n",
                if *alive {
                    "alive"
                } else {
                    "gone (the next command takes it over)"
                }
            ));
        }
        s
    }
}
