//! Validate a job: its best GPU test run (or a given one) against its CPU run — the rows the
//! logs say each read and wrote, and the output data in the run's sandbox — recorded in the
//! history (what `report validation` and `run` read).

use crate::error::{Result, invalid};
use crate::workspace::Workspace;

/// The runs a job's validation compared.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRuns {
    pub job_id: i64,
    /// The CPU run recorded (none when the job came from a log alone).
    pub cpu_run: Option<i64>,
    pub cpu_event_log: String,
    pub gpu_run: i64,
    /// The outputs the GPU run wrote to its sandbox, each beside the CPU run's.
    pub outputs: Vec<(String, String)>,
}

/// The CPU run and the GPU run (`run_id`, else the job's best) of `job_id`, from the history.
pub fn job_runs(ws: &Workspace, job_id: i64, run_id: Option<i64>) -> Result<JobRuns> {
    let mut h = ws.history()?;
    // a run a killed command left is brought up to the platform's truth (it may be the best)
    crate::reconcile::reconcile(ws, &mut h, crate::reconcile::Scope::Job(job_id))?;
    let runs = h.runs(job_id)?;
    let cpu = runs
        .iter()
        .find(|r| r.kind == "cpu-original" && r.event_log.is_some());
    let cpu_event_log = match cpu.and_then(|r| r.event_log.clone()) {
        Some(l) => l,
        None => h.job_event_log(job_id)?.ok_or_else(|| {
            invalid!("unknown job id {job_id} (aether report list shows the jobs)")
        })?,
    };
    let gpu = match run_id {
        Some(id) => {
            let r = h.run(id)?.ok_or_else(|| invalid!("unknown run id {id}"))?;
            if r.job_id != job_id || r.kind != "gpu-test" {
                return Err(invalid!("run {id} is not a GPU test run of job {job_id}"));
            }
            r
        }
        None => aether_core::history::best_gpu_run(&h.runs(job_id)?).cloned().ok_or_else(|| {
            invalid!(
                "job {job_id} has no successful GPU test run yet: run `aether submit` or `aether tune` first"
            )
        })?,
    };
    Ok(JobRuns {
        job_id,
        cpu_run: cpu.map(|r| r.run_id),
        cpu_event_log,
        gpu_run: gpu.run_id,
        outputs: serde_json::from_value(gpu.details["outputs"].clone()).unwrap_or_default(),
    })
}

fn gpu_event_log(ws: &Workspace, runs: &JobRuns) -> Result<String> {
    let gpu = ws
        .history()?
        .run(runs.gpu_run)?
        .ok_or_else(|| invalid!("unknown run id {}", runs.gpu_run))?;
    gpu.event_log
        .clone()
        .ok_or_else(|| invalid!("GPU run {} has no event log", gpu.run_id))
}

/// Where a job's GPU run (`run_id`, else its best) first diverges from its CPU run, phase by
/// phase, from the two event logs ([`aether_validate::phases`]); nothing is recorded.
pub fn job_phases(
    ws: &Workspace,
    job_id: i64,
    run_id: Option<i64>,
    choice: aether_validate::phases::PhaseChoice,
) -> Result<aether_validate::phases::PhaseReport> {
    let runs = job_runs(ws, job_id, run_id)?;
    let gpu_log = gpu_event_log(ws, &runs)?;
    ws.note(&format!(
        "validate: job {job_id}: the phases of CPU run {} against GPU run {}",
        runs.cpu_event_log, runs.gpu_run
    ));
    ws.runtime()
        .block_on(aether_validate::phases::phases(
            &runs.cpu_event_log,
            &gpu_log,
            choice,
        ))
        .map_err(crate::error::WorkflowError::from)
}

/// Validate a job's GPU run against its CPU run (record the report with [`record`]).
pub fn validate_job(
    ws: &Workspace,
    job_id: i64,
    run_id: Option<i64>,
    o: &aether_validate::Options,
) -> Result<(aether_validate::Report, JobRuns)> {
    let runs = job_runs(ws, job_id, run_id)?;
    let gpu_log = gpu_event_log(ws, &runs)?;
    ws.note(&format!(
        "validate: job {job_id}: CPU run {} against GPU run {} ({} outputs in its sandbox)",
        runs.cpu_event_log,
        runs.gpu_run,
        runs.outputs.len()
    ));
    let r = ws.runtime().block_on(aether_validate::validate_run(
        &runs.cpu_event_log,
        &gpu_log,
        &runs.outputs,
        o,
    ))?;
    Ok((r, runs))
}

/// Record a validation of a job's runs; its id.
pub fn record(ws: &Workspace, runs: &JobRuns, r: &aether_validate::Report) -> Result<i64> {
    let failed = r
        .checks
        .iter()
        .filter(|c| c.verdict == aether_validate::Verdict::Fail)
        .count() as i64;
    let mut h = ws.history()?;
    let id = h.add_validation(
        runs.job_id,
        runs.cpu_run,
        Some(runs.gpu_run),
        &r.verdict.to_string(),
        failed,
        &serde_json::to_value(r)?,
    )?;
    ws.note(&format!(
        "validate: recorded as validation {id} of job {} (GPU run {})",
        runs.job_id, runs.gpu_run
    ));
    Ok(id)
}
