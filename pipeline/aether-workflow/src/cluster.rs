//! GPU test clusters: created from a qualified shape (recorded in the history, ended when the
//! create is interrupted), listed, described, terminated.

use crate::cancel::Stop;
use crate::error::{Result, bail, invalid};
use crate::workspace::Workspace;
use aether_core::{History, RunOn};
use aether_platform::{ClusterBackend, ClusterInfo, ClusterSpec};
use std::time::Duration;

/// What a cluster is made from (`cluster create`, a cluster made for one submit or tune).
#[derive(Clone, Debug, Default)]
pub struct CreateOpts {
    /// The shape qualify recommended ("Aether Shape ID"); none: this machine as is (local).
    pub shape_id: Option<i64>,
    /// Cores for local Spark (`local[N]`); 0: all.
    pub local_cores: i64,
    /// A token that makes a retried create return the cluster made the first time.
    pub request_token: Option<String>,
    /// A YAML file over the EMR defaults (release, applications, instance groups, …).
    pub config_file: Option<std::path::PathBuf>,
    /// Keep a cluster whose create was interrupted.
    pub keep_cluster: bool,
    /// EMR on EKS: where the capacity manifests go, and whether kubectl applies them.
    pub output: Option<std::path::PathBuf>,
    pub apply: bool,
}

/// What `cluster create` made.
pub enum Created {
    /// A cluster, on record.
    Cluster(Box<ClusterInfo>),
    /// A platform whose capacity is Karpenter's with no virtual cluster to run on (EMR on EKS
    /// without `platform.emr_eks.virtual_cluster_id`): the shape's NodePool and pod templates
    /// only, for a platform team to apply.
    Capacity(crate::eks::Written),
    /// A stop during the create (the cluster the interrupted call made is ended, unless kept).
    Stopped(Stop),
}

/// `cluster create` on `platform`: a cluster of the qualified shape ([`create`]), or, where the
/// platform's capacity comes from Karpenter and no virtual cluster is set, that capacity only.
pub fn create_on(ws: &Workspace, platform: RunOn, o: &CreateOpts) -> Result<Created> {
    let can = aether_platform::Capabilities::of(platform);
    if can.karpenter_capacity && ws.eks_settings().virtual_cluster_id.is_none() {
        let shape = o
            .shape_id
            .ok_or_else(|| invalid!("--cluster_shape_id is needed to size the capacity"))?;
        let w = crate::eks::write_capacity(ws, shape, o.output.clone(), o.apply)?;
        return Ok(Created::Capacity(w));
    }
    let b = ws.backend(platform)?;
    let mut h = ws.history()?;
    Ok(match create(ws, b.as_ref(), &mut h, o)? {
        Ok(c) => Created::Cluster(Box::new(c)),
        Err(stop) => Created::Stopped(stop),
    })
}

/// Create a cluster of a qualified shape (and the `config_file` over it) on `b`'s platform,
/// recorded in the history. A stop during the create ends the cluster the interrupted call
/// made (unless `keep_cluster`): `Ok(Err(stop))`.
pub fn create(
    ws: &Workspace,
    b: &dyn ClusterBackend,
    h: &mut History,
    o: &CreateOpts,
) -> Result<std::result::Result<ClusterInfo, Stop>> {
    let rt = ws.runtime();
    let can = b.capabilities();
    let platform = b.name();
    let mut spec = ClusterSpec {
        name: "aether GPU test".into(),
        local_cores: o.local_cores,
        instance_count: 1,
        ..Default::default()
    };
    if let Some(path) = &o.config_file {
        if !can.cluster_file {
            bail!("--config_file describes an EMR cluster: use it on emr, not {platform}");
        }
        spec.file = Some(
            aether_platform::clusterfile::ClusterFile::load(path)
                .map_err(|e| invalid!("--config_file {e}"))?,
        );
    }
    let mut job_id = None;
    if let Some(id) = o.shape_id {
        let (job, gpu) = h
            .shape(id)?
            .ok_or_else(|| invalid!("unknown cluster shape id {id} (see `aether report list`)"))?;
        let shape = &gpu["shape"];
        spec.shape_id = Some(id.to_string());
        spec.name = format!("aether job {job} shape {id}");
        spec.instance_type = shape["instance"].as_str().map(String::from);
        spec.instance_count = shape["nodes"].as_i64().unwrap_or(1);
        spec.tags.insert("aether:job-id".into(), job.to_string());
        job_id = Some(job);
        if can.karpenter_capacity {
            // the shape's NodePool and pod templates, which the lease's runs use
            let w = crate::eks::write_capacity(ws, id, o.output.clone(), o.apply)?;
            spec.tags
                .insert("aether:gpus-per-node".into(), w.gpus_per_node.to_string());
        }
    } else if can.needs_size
        && spec
            .file
            .as_ref()
            .is_none_or(|f| f.instance_groups.is_none())
    {
        bail!(
            "--cluster_shape_id (or instanceGroups in --config_file) is needed to size a cluster on {platform}"
        );
    }
    let token = o.request_token.clone().unwrap_or_else(|| {
        format!(
            "aether-{}-{}",
            std::process::id(),
            aether_platform::now_ms()
        )
    });
    spec.tags
        .insert("aether:request-token".into(), token.clone());
    // what the platform would refuse (an instance type it does not support, no place for the
    // bootstrap action): said before anything is recorded or made
    rt.block_on(b.check(&spec))?;
    // intent before action: the cluster is on record (by its request token) before it exists
    h.intend_cluster(
        &token,
        b.name(),
        spec.shape_id.as_deref(),
        job_id,
        &aether_core::owner::me(),
        &serde_json::json!({ "spec": &spec }),
    )?;
    aether_core::owner::crash_point("create:before-call");
    let cancel = ws.cancel().clone();
    let made = rt.block_on(async {
        tokio::select! {
            r = b.create(&spec, &token) => Ok(r),
            s = cancel.cancelled() => Err(s),
        }
    });
    match made {
        Ok(Ok(c)) => {
            aether_core::owner::crash_point("create:after-answer");
            made_by(h, &c, &token)?;
            Ok(Ok(c))
        }
        Ok(Err(e)) => {
            // refused, or an answer lost for good: a cluster its token made is still recorded
            match rt.block_on(b.find_created(&token, aether_platform::now_ms() - 3_600_000)) {
                Ok(Some(c)) => {
                    made_by(h, &c, &token)?;
                    ws.warn(&format!(
                        "the create answered {e}, but cluster {} carries its request token: recorded; ending it",
                        c.cluster_id
                    ));
                    end(ws, b, h, &c.cluster_id);
                }
                Ok(None) => h.set_cluster_state(
                    &format!("{}{token}", aether_core::intent::PENDING),
                    "NOT_CREATED",
                    &format!("the create failed: {e}"),
                )?,
                Err(e2) => ws.warn(&format!(
                    "the create failed ({e}) and looking for its cluster by request token {token} \
                     failed too ({e2}): the history keeps it pending; the next command reconciles it"
                )),
            }
            Err(e.into())
        }
        Err(sig) => {
            ws.note(&format!(
                "{}: cluster create interrupted (request token {token})",
                sig.name()
            ));
            // the interrupted call may have made the cluster: find it by its token
            let mut found = None;
            for _ in 0..3 {
                if let Ok(Some(c)) = rt.block_on(b.find_by_token(&token)) {
                    found = Some(c);
                    break;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            match found {
                Some(c) if o.keep_cluster => {
                    made_by(h, &c, &token)?;
                    ws.note(&format!("cluster {} kept (--keep_cluster)", c.cluster_id));
                }
                Some(c) => {
                    made_by(h, &c, &token)?;
                    end(ws, b, h, &c.cluster_id);
                }
                // the call may still land: the pending record stays for reconciliation
                None => ws.note(&format!(
                    "no cluster was made for request token {token} (yet)"
                )),
            }
            Ok(Err(sig))
        }
    }
}

/// The create of `token` answered `c`: its pending record takes the cluster's id and state.
fn made_by(h: &mut History, c: &ClusterInfo, token: &str) -> Result<()> {
    h.created_cluster(
        token,
        &c.cluster_id,
        c.state.as_str(),
        &serde_json::to_value(c)?,
    )?;
    Ok(())
}

/// Terminate a cluster the workflow made and record its state; a failure is told (with what to
/// run), never silent.
pub fn end(ws: &Workspace, b: &dyn ClusterBackend, h: &mut History, cluster_id: &str) {
    match terminate_recorded(ws, b, h, cluster_id) {
        Ok(c) => ws.note(&format!("cluster {cluster_id} {}", c.state.as_str())),
        Err(e) => ws.warn(&format!(
            "terminating cluster {cluster_id} failed: {e}; it may still be running: \
             aether cluster terminate --cluster_id {cluster_id}"
        )),
    }
}

/// Terminate a cluster by hand (`cluster terminate`): ended, and recorded in the history when
/// it can be (a history that cannot take it is told; the cluster is gone either way).
pub fn terminate(ws: &Workspace, b: &dyn ClusterBackend, cluster_id: &str) -> Result<ClusterInfo> {
    match ws.history() {
        Ok(mut h) => {
            reconciled(ws, &mut h);
            terminate_recorded(ws, b, &mut h, cluster_id)
        }
        Err(e) => {
            let c = ws.runtime().block_on(b.terminate(cluster_id))?;
            ws.warn(&format!(
                "cluster {cluster_id} terminated but not recorded: {e:#}"
            ));
            Ok(c)
        }
    }
}

/// Terminate a cluster, the terminate on record before the call (a terminate cut short is
/// finished by reconciliation; a cluster not on record has no row to mark) and its new state
/// after; a history that cannot take either is told, the platform's answer decides.
fn terminate_recorded(
    ws: &Workspace,
    b: &dyn ClusterBackend,
    h: &mut History,
    cluster_id: &str,
) -> Result<ClusterInfo> {
    if let Err(e) = h.set_cluster_intent(cluster_id, Some("terminate")) {
        ws.warn(&format!(
            "cluster {cluster_id}: the terminate could not be recorded first: {e}"
        ));
    }
    aether_core::owner::crash_point("terminate:before-call");
    let c = ws.runtime().block_on(b.terminate(cluster_id))?;
    if let Err(e) = record(h, b, &c, None, None) {
        ws.warn(&format!(
            "cluster {cluster_id} terminated but not recorded: {e:#}"
        ));
    }
    Ok(c)
}

/// Reconcile the whole history first (a cluster a killed create made, a run a killed tune
/// left); what cannot be reconciled is warned about, never fatal to the command.
fn reconciled(ws: &Workspace, h: &mut History) {
    if let Err(e) = crate::reconcile::reconcile(ws, h, crate::reconcile::Scope::All) {
        ws.warn(&format!("reconciling the history: {e:#}"));
    }
}

/// A cluster as `cluster list` shows it.
#[derive(Clone, Debug)]
pub struct Listed {
    pub info: ClusterInfo,
    /// Made by aether (on record in the history, or tagged with an aether request token).
    pub ours: bool,
    pub job_id: Option<i64>,
    /// Since it was created, until it ended (or now).
    pub age_ms: i64,
    /// Its nodes' price over its age (EMR; none where the price catalog lacks a type).
    pub cost_usd: Option<f64>,
}

/// A cluster in a line: id, platform, state, name, reason (tab-separated).
pub fn info_line(c: &ClusterInfo) -> String {
    format!(
        "{}\t{}\t{}\t{}\t{}",
        c.cluster_id,
        c.backend,
        c.state.as_str(),
        c.spec.name,
        c.state_reason.as_deref().unwrap_or("")
    )
}

impl Listed {
    /// `cluster list`'s line: id, platform, state, whose, age, cost so far, name, reason
    /// (tab-separated).
    pub fn line(&self) -> String {
        let c = &self.info;
        let secs = self.age_ms / 1000;
        let whose = match (self.ours, self.job_id) {
            (true, Some(j)) => format!("aether job {j}"),
            (true, None) => "aether".into(),
            (false, _) => "other".into(),
        };
        format!(
            "{}\t{}\t{}\t{whose}\t{}h{:02}m{:02}s\t{}\t{}\t{}",
            c.cluster_id,
            c.backend,
            c.state.as_str(),
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            self.cost_usd
                .map(|c| format!("${c:.2}"))
                .unwrap_or_else(|| "-".into()),
            c.spec.name,
            c.state_reason.as_deref().unwrap_or("")
        )
    }
}

/// The clusters of a platform (aether's own; `all`: the account's others too), after
/// reconciling the history; aether's own that the platform no longer lists are shown as the
/// history holds them.
pub fn list(ws: &Workspace, b: &dyn ClusterBackend, all: bool) -> Result<Vec<Listed>> {
    let mut h = ws.history()?;
    reconciled(ws, &mut h);
    let rows: Vec<_> = h
        .clusters()?
        .into_iter()
        .filter(|r| r.backend == b.name())
        .collect();
    let now = aether_platform::now_ms();
    let listed = |info: ClusterInfo, ours: bool, job_id: Option<i64>| {
        let age_ms = (info.ended_ms.unwrap_or(now) - info.created_ms).max(0);
        let cost_usd = (info.created_ms > 0)
            .then(|| crate::runs::run_cost(ws, &info, age_ms))
            .flatten();
        Listed {
            info,
            ours,
            job_id,
            age_ms,
            cost_usd,
        }
    };
    let mut out = Vec::new();
    let platform = ws.runtime().block_on(b.list())?;
    for c in platform {
        let row = rows.iter().find(|r| r.cluster_id == c.cluster_id);
        let ours = row.is_some() || c.spec.tags.contains_key("aether:request-token");
        if ours || all {
            let job = row.and_then(|r| r.job_id).or_else(|| {
                c.spec
                    .tags
                    .get("aether:job-id")
                    .and_then(|j| j.parse().ok())
            });
            out.push(listed(c, ours, job));
        }
    }
    for r in rows {
        if r.is_ended() || out.iter().any(|l| l.info.cluster_id == r.cluster_id) {
            continue;
        }
        if let Ok(c) = serde_json::from_value::<ClusterInfo>(r.info.clone()) {
            out.push(listed(c, true, r.job_id));
        }
    }
    out.sort_by_key(|l| l.info.created_ms);
    Ok(out)
}

/// End aether's idle clusters of a platform (WAITING: no step runs; no run of the history on
/// them followed by a live aether). Returns them as ended.
pub fn terminate_idle(ws: &Workspace, b: &dyn ClusterBackend) -> Result<Vec<ClusterInfo>> {
    let mut h = ws.history()?;
    let on_record: Vec<String> = h.clusters()?.into_iter().map(|r| r.cluster_id).collect();
    // a job a live aether works on keeps its clusters (a tune's cluster is idle between runs)
    let busy_jobs: Vec<i64> = h
        .job_locks()?
        .into_iter()
        .filter(|l| aether_core::owner::alive(&l.owner, Duration::ZERO))
        .map(|l| l.job_id)
        .collect();
    let mut busy_clusters: Vec<String> = Vec::new();
    for j in &busy_jobs {
        busy_clusters.extend(
            h.tune_sessions(*j)?
                .into_iter()
                .filter_map(|s| s.cluster_id),
        );
    }
    let idle: Vec<_> = list(ws, b, false)?
        .into_iter()
        .filter(|l| {
            // only clusters this history made
            on_record.contains(&l.info.cluster_id)
                && l.info.state == aether_platform::ClusterState::Waiting
        })
        .collect();
    let open = h.open_runs(None)?;
    let mut ended = Vec::new();
    for l in idle {
        let id = &l.info.cluster_id;
        if l.job_id.is_some_and(|j| busy_jobs.contains(&j)) || busy_clusters.contains(id) {
            ws.note(&format!(
                "cluster {id}: its job is being worked on by a live aether; kept"
            ));
            continue;
        }
        if open
            .iter()
            .any(|(r, _)| r.cluster_id.as_deref() == Some(id.as_str()))
        {
            ws.note(&format!(
                "cluster {id}: a run on record is still open on it; kept"
            ));
            continue;
        }
        ended.push(terminate_recorded(ws, b, &mut h, id)?);
    }
    Ok(ended)
}

/// A cluster's state in the history (reconciliation records with it too).
pub use crate::reconcile::record;
