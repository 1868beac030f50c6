//! `submit`: one run of a job with a stored config, on a running cluster or on one made for it
//! (ended after it, whatever happens to the run).

use crate::cancel::Stop;
use crate::cluster::{self, CreateOpts};
use crate::error::{Context, Result, bail, invalid};
use crate::runs::{self, RunOutcome, RunSpec};
use crate::workspace::Workspace;
use aether_platform::JobDefinition;
use std::collections::BTreeMap;

/// Where the run goes: a running cluster, or one of a shape made for it.
#[derive(Clone, Debug)]
pub enum Target {
    /// A running cluster (its id names its platform).
    Cluster(String),
    /// A cluster of this qualified shape, made for the run and ended after it unless kept.
    Shape {
        shape_id: i64,
        /// The cluster's `--config_file` (EMR).
        config_file: Option<std::path::PathBuf>,
        keep_cluster: bool,
    },
}

/// One submit.
#[derive(Clone, Debug)]
pub struct SubmitRequest {
    /// The stored Spark configs to run with ("Aether Config ID").
    pub config_id: i64,
    pub target: Target,
    /// The job as a spark-submit command line, when its log does not hold one (recorded).
    pub job: Option<String>,
    /// Spark properties over the config's (stored as a new config, source `user`).
    pub conf: BTreeMap<String, String>,
    /// Run even when the CPU run wrote outputs no argument names.
    pub allow_output_overwrite: bool,
    /// Give up waiting after this many seconds (the step is cancelled).
    pub timeout_s: u64,
}

/// How a submit ended: the run, or the stop that came before a cluster was made.
pub enum Submitted {
    Ran(Box<RunOutcome>),
    /// Stopped while the cluster made for the run was being created (it is ended).
    StoppedCreating(Stop),
}

/// `--conf KEY=VALUE` items as properties.
pub fn parse_conf(items: &[String]) -> Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| invalid!("--conf {kv:?}: expected KEY=VALUE"))?;
            if k.trim().is_empty() {
                bail!("--conf {kv:?}: empty key");
            }
            Ok((k.trim().to_string(), v.to_string()))
        })
        .collect()
}

/// Run the job of config `req.config_id` on the target, recorded in the history.
pub fn submit(ws: &Workspace, req: &SubmitRequest) -> Result<Submitted> {
    let platform = match &req.target {
        Target::Cluster(id) => ws.platform_of_cluster(id)?,
        Target::Shape { .. } => ws.platform()?,
    };
    let b = ws.backend(platform)?;
    let mut h = ws.history()?;
    let base = h.config(req.config_id)?.ok_or_else(|| {
        invalid!(
            "unknown config id {} (see `aether report list`)",
            req.config_id
        )
    })?;
    let job_id = base.job_id;
    let _held = crate::lock::lock_job(ws, &mut h, job_id, "aether submit")?;
    crate::reconcile::reconcile(ws, &mut h, crate::reconcile::Scope::Job(job_id))?;
    // the job: given now (and kept), else recorded from its log or an earlier --job
    let job: JobDefinition = match &req.job {
        Some(line) => {
            let d = JobDefinition::parse(line).with_context(|| format!("--job {line:?}"))?;
            h.set_definition(job_id, "user", &serde_json::to_value(&d)?)?;
            d
        }
        None => match h.definition(job_id)? {
            Some((_, d)) => serde_json::from_value(d)?,
            None => bail!(
                "job {job_id} has no definition to run: its event log holds no spark-submit command line \
                 (an interactive shell or notebook ran it); give it as --job \"spark-submit … job.py args\""
            ),
        },
    };
    let mut properties = base.properties;
    let config_id = if req.conf.is_empty() {
        req.config_id
    } else {
        properties.extend(req.conf.clone());
        h.add_config(job_id, "user", &properties)?
    };
    let planned = runs::plan(
        ws,
        &mut h,
        platform,
        job_id,
        job,
        properties,
        req.allow_output_overwrite,
    )?;
    let (cluster, created, keep) = match &req.target {
        Target::Cluster(id) => (ws.runtime().block_on(b.describe(id))?, false, true),
        Target::Shape {
            shape_id,
            config_file,
            keep_cluster,
        } => {
            let o = CreateOpts {
                shape_id: Some(*shape_id),
                config_file: config_file.clone(),
                keep_cluster: *keep_cluster,
                ..Default::default()
            };
            match cluster::create(ws, b.as_ref(), &mut h, &o)? {
                Ok(c) => {
                    ws.note(&format!(
                        "cluster {} made for this run ({}{})",
                        c.cluster_id,
                        c.state.as_str(),
                        if *keep_cluster {
                            ", kept after it: --keep_cluster"
                        } else {
                            ", terminated after it"
                        }
                    ));
                    (c, true, *keep_cluster)
                }
                Err(sig) => return Ok(Submitted::StoppedCreating(sig)),
            }
        }
    };
    let outcome = runs::execute(
        ws,
        &mut h,
        &RunSpec {
            b: b.as_ref(),
            platform,
            cluster: &cluster,
            job_id,
            config_id,
            timeout_s: req.timeout_s,
            tune_id: None,
        },
        planned,
    );
    // a cluster made for this run ends with it, whatever happened to the run
    if created && !keep {
        cluster::end(ws, b.as_ref(), &mut h, &cluster.cluster_id);
    }
    Ok(Submitted::Ran(Box::new(outcome?)))
}
