//! A CPU run that already happened on the platform, read by `qualify` and `profile` from its
//! step: an EMR step (DescribeStep, the YARN application id in its stderr, the application's
//! event log) or an EMR on EKS job run (DescribeJobRun, `spark-<id>` in its event-log folder).

use crate::error::{Context, Result, bail, invalid};
use crate::runs::{run_cost, run_figures, wait_for};
use crate::workspace::Workspace;
use aether_core::history::Run;
use aether_core::{History, RunOn};
use aether_platform::{CostBasis, JobDefinition, StepState};

/// A finished EMR step, as `qualify --platform_job_id` reads it.
pub struct StepSource {
    pub step: aether_platform::StepInfo,
    pub event_log: String,
    pub driver_log: Option<String>,
    /// The job the step ran (`None` when it was not a spark-submit).
    pub job: Option<JobDefinition>,
    /// The step's hours times its cluster's hourly price.
    pub cost_usd: Option<f64>,
    /// Its executors' idle capacity (as a GPU run's: `executor_idle` summed).
    pub idle: Option<serde_json::Value>,
    /// The platform it ran on: `emr` (an EMR step), `emr-eks` (an EMR on EKS job run),
    /// `local`.
    pub backend: &'static str,
}

/// The event log and job of step `step_id` of cluster `cluster_id`. The id names the
/// platform: an EMR cluster (`j-…`: DescribeStep, the YARN application id in the step's
/// stderr, the application's log in the event-log folder), an EMR on EKS lease aether made
/// (`eks-…`: the job run on its virtual cluster), a local cluster (`lc-…`).
///
/// Another `cluster_id` is an EMR on EKS virtual cluster's and `step_id` one of its job runs:
/// DescribeJobRun, the event log `spark-<id>` in the run's event-log folder.
pub fn step_source(ws: &Workspace, cluster_id: &str, step_id: &str) -> Result<StepSource> {
    let Some(platform) = RunOn::of_cluster_id(cluster_id) else {
        return job_run_source(ws, cluster_id, step_id);
    };
    let rt = ws.runtime();
    let b = ws.backend(platform)?;
    let step = rt.block_on(b.step(cluster_id, step_id))?;
    finished(ws, &step, &format!("step {step_id} on {cluster_id}"))?;
    let wait = ws.log_wait(platform);
    let event_log = wait_for(rt, wait, || b.event_log(cluster_id, step_id))?.ok_or_else(|| {
        invalid!(
            "step {step_id} on {cluster_id}: no event log found within {} s (its stderr names no \
                 application yet, or the application's log is not in the event-log folder)",
            wait.as_secs()
        )
    })?;
    let driver_log = rt
        .block_on(b.driver_log(cluster_id, step_id))
        .ok()
        .flatten();
    let job = JobDefinition::from_args(&step.args).ok();
    // what the CPU run cost, from its cluster's nodes (the baseline of the GPU runs' costs);
    // an EMR on EKS run's nodes are Karpenter's: qualify's estimate stands for it
    let cost_usd = match b.capabilities().cost {
        CostBasis::ClusterNodes => rt
            .block_on(b.describe(cluster_id))
            .ok()
            .zip(step.start_ms.zip(step.end_ms))
            .and_then(|(c, (s, e))| run_cost(ws, &c, e - s)),
        CostBasis::PodShare | CostBasis::Free => None,
    };
    let idle = run_figures(ws, &event_log).idle;
    Ok(StepSource {
        step,
        event_log,
        driver_log,
        job,
        cost_usd,
        idle,
        backend: b.name(),
    })
}

/// [`step_source`] as `qualify` and `profile` read a step they are given: its error names the
/// flags, where it was found is told.
pub fn read_step(ws: &Workspace, cluster_id: &str, step_id: &str) -> Result<StepSource> {
    let s = step_source(ws, cluster_id, step_id)
        .with_context(|| format!("--platform_job_id {step_id} --cluster_id {cluster_id}"))?;
    ws.note(&format!(
        "step {step_id} on {cluster_id}: {} event log {}",
        s.step.state.as_str(),
        s.event_log
    ));
    Ok(s)
}

/// A source step must have ended to be read; one that did not complete is read with a warning.
fn finished(ws: &Workspace, step: &aether_platform::StepInfo, what: &str) -> Result<()> {
    if !step.state.is_final() {
        bail!(
            "{what} is {}: qualify it once it has finished",
            step.state.as_str()
        );
    }
    if step.state != StepState::Completed {
        ws.warn(&format!(
            "{what} {}{}: qualifying the log it left",
            step.state.as_str(),
            step.failure_reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ));
    }
    Ok(())
}

/// A finished EMR on EKS job run, as [`step_source`] reads it (no cost: the nodes Karpenter
/// gave a CPU run are not known; qualify's estimate stands for it).
fn job_run_source(ws: &Workspace, virtual_cluster: &str, run_id: &str) -> Result<StepSource> {
    let rt = ws.runtime();
    let b = ws.eks_backend();
    let run = rt.block_on(b.job_run(virtual_cluster, run_id))?;
    let step = run.step.clone();
    finished(
        ws,
        &step,
        &format!("job run {run_id} on virtual cluster {virtual_cluster}"),
    )?;
    let wait = ws.log_wait(RunOn::EmrEks);
    let event_log = wait_for(rt, wait, || Box::pin(b.job_run_event_log(&run)))?.ok_or_else(|| {
        invalid!(
            "job run {run_id}: no event log spark-{run_id} found within {} s in {}",
            wait.as_secs(),
            run.event_log_dir.as_deref().unwrap_or(
                "(the run sets no spark.eventLog.dir and platform.emr_eks.spark_event_log_dir is not set)"
            )
        )
    })?;
    let driver_log = rt.block_on(b.job_run_driver_log(&run)).ok().flatten();
    let job = JobDefinition::from_args(&step.args).ok();
    let idle = run_figures(ws, &event_log).idle;
    Ok(StepSource {
        step,
        event_log,
        driver_log,
        job,
        cost_usd: None,
        idle,
        backend: "emr-eks",
    })
}

/// Records what qualify read from an EMR step: the step as the job's definition (what `submit`
/// re-runs) and the CPU run itself.
pub fn record_step_source(
    ws: &Workspace,
    h: &mut History,
    job_id: i64,
    src: &StepSource,
) -> Result<()> {
    if let Some(job) = &src.job {
        let source = match src.backend {
            "emr" => "emr-step",
            "emr-eks" => "emr-eks-job-run",
            _ => "local-step",
        };
        h.set_definition(job_id, source, &serde_json::to_value(job)?)?;
    } else {
        ws.warn(&format!(
            "step {} is not a spark-submit step ({}): submit needs --job for this job",
            src.step.step_id,
            src.step.args.join(" ")
        ));
    }
    let s = &src.step;
    let mut run = Run {
        job_id,
        kind: "cpu-original".into(),
        backend: Some(src.backend.into()),
        cluster_id: Some(s.cluster_id.clone()),
        step_id: Some(s.step_id.clone()),
        status: s.state.as_str().into(),
        start_ms: s.start_ms,
        end_ms: s.end_ms,
        duration_ms: s.start_ms.zip(s.end_ms).map(|(a, b)| b - a),
        event_log: Some(src.event_log.clone()),
        driver_log: src.driver_log.clone(),
        cost_usd: src.cost_usd,
        failure_reason: s.failure_reason.clone(),
        details: serde_json::json!({ "args": s.args }),
        ..Default::default()
    };
    if let Some(idle) = &src.idle {
        run.details["idle"] = idle.clone();
    }
    run.run_id = h.start_run(&run)?;
    h.finish_run(&run)?;
    Ok(())
}
