//! GPU test clusters: created from a qualified shape (recorded in the history, ended when the
//! create is interrupted), listed, described, terminated.

use crate::cancel::Stop;
use crate::workspace::Workspace;
use aether_core::History;
use aether_core::RunOn;
use aether_core::history::ClusterRecord;
use aether_platform::{ClusterBackend, ClusterInfo, ClusterSpec};
use anyhow::{Context, Result, anyhow, bail};
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

/// Create a cluster of a qualified shape (and the `config_file` over it) on `platform`,
/// recorded in the history. A stop during the create ends the cluster the interrupted call
/// made (unless `keep_cluster`): `Ok(Err(stop))`.
pub fn create(
    ws: &Workspace,
    b: &dyn ClusterBackend,
    platform: RunOn,
    h: &mut History,
    o: &CreateOpts,
) -> Result<std::result::Result<ClusterInfo, Stop>> {
    let rt = ws.runtime();
    let mut spec = ClusterSpec {
        name: "aether GPU test".into(),
        local_cores: o.local_cores,
        instance_count: 1,
        ..Default::default()
    };
    if let Some(path) = &o.config_file {
        if platform != RunOn::Emr {
            bail!("--config_file describes an EMR cluster: use it on emr, not {platform}");
        }
        spec.file = Some(
            aether_platform::clusterfile::ClusterFile::load(path)
                .map_err(|e| anyhow!("--config_file {e}"))?,
        );
    }
    let mut job_id = None;
    if let Some(id) = o.shape_id {
        let (job, gpu) = h
            .shape(id)?
            .ok_or_else(|| anyhow!("unknown cluster shape id {id} (see `aether report list`)"))?;
        let shape = &gpu["shape"];
        spec.shape_id = Some(id.to_string());
        spec.name = format!("aether job {job} shape {id}");
        spec.instance_type = shape["instance"].as_str().map(String::from);
        spec.instance_count = shape["nodes"].as_i64().unwrap_or(1);
        spec.tags.insert("aether:job-id".into(), job.to_string());
        job_id = Some(job);
        if platform == RunOn::EmrEks {
            // the shape's NodePool and pod templates, which the lease's runs use
            let w = crate::eks::write_capacity(ws, id, o.output.clone(), o.apply)?;
            spec.tags
                .insert("aether:gpus-per-node".into(), w.gpus_per_node.to_string());
        }
    } else if platform != RunOn::Local
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
    if platform == RunOn::Emr {
        upload_bootstrap(ws)?;
    }
    let cancel = ws.cancel().clone();
    let made = rt.block_on(async {
        tokio::select! {
            r = b.create(&spec, &token) => Ok(r),
            s = cancel.cancelled() => Err(s),
        }
    });
    match made {
        Ok(c) => {
            let c = c?;
            record(h, b, &c, job_id, Some(&token))?;
            Ok(Ok(c))
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
                    record(h, b, &c, job_id, Some(&token))?;
                    ws.note(&format!("cluster {} kept (--keep_cluster)", c.cluster_id));
                }
                Some(c) => {
                    record(h, b, &c, job_id, Some(&token))?;
                    end(ws, b, h, &c.cluster_id);
                }
                None => ws.note(&format!("no cluster was made for request token {token}")),
            }
            Ok(Err(sig))
        }
    }
}

/// Terminate a cluster the workflow made and record its state; a failure is told (with what to
/// run), never silent.
pub fn end(ws: &Workspace, b: &dyn ClusterBackend, h: &mut History, cluster_id: &str) {
    match ws.runtime().block_on(b.terminate(cluster_id)) {
        Ok(c) => {
            ws.note(&format!("cluster {cluster_id} {}", c.state.as_str()));
            if let Err(e) = record(h, b, &c, None, None) {
                ws.warn(&format!("cluster {cluster_id}: not recorded: {e:#}"));
            }
        }
        Err(e) => ws.warn(&format!(
            "terminating cluster {cluster_id} failed: {e}; it may still be running: \
             aether cluster terminate --cluster_id {cluster_id}"
        )),
    }
}

/// Terminate a cluster by hand (`cluster terminate`): ended, and recorded in the history when
/// it can be (a history that cannot take it is told; the cluster is gone either way).
pub fn terminate(ws: &Workspace, b: &dyn ClusterBackend, cluster_id: &str) -> Result<ClusterInfo> {
    let c = ws.runtime().block_on(b.terminate(cluster_id))?;
    let recorded = ws
        .history()
        .and_then(|mut h| record(&mut h, b, &c, None, None));
    if let Err(e) = recorded {
        ws.warn(&format!(
            "cluster {cluster_id} terminated but not recorded: {e:#}"
        ));
    }
    Ok(c)
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

/// Puts the cgroup bootstrap action an EMR 7 RAPIDS cluster needs under the artifacts path
/// (`s3://bucket/prefix/cgroup-bootstrap-action.sh`), where `cluster create` points EMR to it.
fn upload_bootstrap(ws: &Workspace) -> Result<()> {
    use object_store::ObjectStoreExt;
    let url = ws.settings.config.platform.emr.cluster.artifacts_path.as_deref().ok_or_else(|| {
        anyhow!(
            "platform.emr.cluster.artifacts_path is not set: the cluster's bootstrap action is put there \
             (aether config set platform.emr.cluster.artifacts_path s3://bucket/prefix)"
        )
    })?;
    let s3 = aether_ingest::source::s3_location(url, &ws.s3())
        .map_err(|e| anyhow!("platform.emr.cluster.artifacts_path {url}: {e}"))?;
    let key = object_store::path::Path::from(
        format!("{}/cgroup-bootstrap-action.sh", s3.prefix).trim_start_matches('/'),
    );
    let store = s3.store;
    ws.runtime()
        .block_on(store.put(
            &key,
            object_store::PutPayload::from(
                aether_platform::emr::CGROUP_BOOTSTRAP.as_bytes().to_vec(),
            ),
        ))
        .with_context(|| format!("putting the bootstrap action to {url}"))?;
    Ok(())
}
