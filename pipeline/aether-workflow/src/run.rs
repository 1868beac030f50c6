//! `run`: the whole workflow. Qualify the logs the history does not know yet; for each app
//! recommended for the GPU: tune it on a cluster of its recommended shape (made for the session
//! and ended with it, whatever happens), validate its best run against the CPU run; then the
//! report. Every phase's results are in the job history, so a second `run` after an
//! interruption continues there: a log already qualified, a job whose tune session is done, a
//! best run already validated are not done again. A stop (the workspace's cancel token) ends
//! the phase running (its run cancelled, its cluster ended) and the workflow.

use crate::cancel::Stop;
use crate::error::{Result, bail, invalid};
use crate::submit::Target;
use crate::tune::{TuneEnd, TuneParams, TuneRequest};
use crate::workspace::Workspace;
use aether_predict::qualify::Status;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// One `run`.
pub struct RunRequest {
    /// CPU event logs: files, directories, globs, `.txt` lists, `s3://` URLs.
    pub event_log: Vec<String>,
    /// Tuning runs per job before it may stop for lack of improvement.
    pub min_tuning_iterations: i64,
    /// Never more tuning runs per job (default: min + 3).
    pub max_tuning_iterations: Option<i64>,
    /// Give up on one run after this many seconds (default 6 h).
    pub timeout_s: Option<u64>,
    /// Qualify's settings (`--set NAME=VALUE`).
    pub settings: aether_engine::AnalysisSettings,
    /// Write overview.html and job-<id>.html here at the end.
    pub output: Option<PathBuf>,
}

/// How a run ended.
pub enum RunEnd {
    /// Every job went as far as it could; `failed` jobs did not reach a passing validation.
    Done {
        failed: usize,
        overview: Box<aether_report::model::Overview>,
    },
    /// Nothing was created: the caller did not confirm the paid resources.
    Declined,
    /// Stopped; `run` again continues from the history.
    Stopped(Stop),
}

/// Run the workflow; `confirm` is asked (with what will be created) before paid resources are
/// made (EMR clusters, EMR on EKS job runs), never for local runs.
pub fn run(
    ws: &Workspace,
    req: &RunRequest,
    confirm: &mut dyn FnMut(&str) -> Result<bool>,
) -> Result<RunEnd> {
    if req.min_tuning_iterations < 1 {
        bail!("--min_tuning_iterations must be at least 1");
    }
    let platform = ws.platform()?;
    let rt = ws.runtime();
    let stopped = |s: Stop| {
        ws.note("run: stopped by a signal; `aether run` again continues from the history");
        Ok(RunEnd::Stopped(s))
    };

    // 1. qualify the logs the history does not know yet
    let found = aether_ingest::discover(&req.event_log, &Default::default(), rt);
    let (logs, errors) = (found.logs, found.errors);
    for e in &errors {
        ws.warn(&format!("{}: {}", e.path, e.error));
    }
    if logs.is_empty() {
        bail!("no event log found in {}", req.event_log.join(" "));
    }
    let canonical = |d: &str| {
        std::fs::canonicalize(d)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| d.to_string())
    };
    let wanted: BTreeSet<String> = logs.iter().map(|l| canonical(&l.display)).collect();
    let done: BTreeSet<String> = ws
        .history()?
        .list()?
        .into_iter()
        .filter(|j| j.category.is_some())
        .map(|j| j.event_log)
        .collect();
    let new: Vec<String> = wanted
        .iter()
        .filter(|l| !done.contains(*l))
        .cloned()
        .collect();
    ws.note(&format!(
        "run [1/4] qualify: {} log(s), {} already qualified",
        wanted.len(),
        wanted.len() - new.len()
    ));
    if !new.is_empty() {
        let q = crate::qualify::QualifyRequest {
            event_log: new,
            settings: req.settings.clone(),
            explain: 5,
            ..Default::default()
        };
        match crate::qualify::qualify(ws, q) {
            Ok((done, _)) => {
                for (_, line) in done.lines.iter().filter(|(s, _)| *s != Status::Success) {
                    ws.warn(line);
                }
            }
            Err(e) => ws.warn(&format!(
                "run: qualify failed ({e:#}); going on with the logs it recorded"
            )),
        }
    }
    if let Some(s) = ws.cancel().stopped() {
        return stopped(s);
    }

    // 2. the jobs of these logs that qualify recommends for the GPU
    let jobs: Vec<_> = ws
        .history()?
        .list()?
        .into_iter()
        .filter(|j| wanted.contains(&j.event_log))
        .collect();
    let (gpu, cpu): (Vec<_>, Vec<_>) = jobs
        .into_iter()
        .partition(|j| aether_report::model::recommended_by_qualify(j.category.as_deref()));
    for j in &cpu {
        ws.note(&format!(
            "run: job {} ({}) stays on the CPU: {}",
            j.job_id,
            j.app_name,
            j.category.as_deref().unwrap_or("not qualified")
        ));
    }
    if gpu.is_empty() {
        ws.note("run: no job recommended for the GPU; nothing to tune");
    }
    // paid resources: confirmed first
    let paid = aether_platform::Capabilities::of(platform).paid_notice(gpu.len());
    if let Some(msg) = paid.filter(|_| !gpu.is_empty())
        && !confirm(&format!("run: {msg}"))?
    {
        ws.note("run: nothing created");
        return Ok(RunEnd::Declined);
    }
    let mut failed = 0;
    for (i, j) in gpu.iter().enumerate() {
        if let Some(s) = ws.cancel().stopped() {
            return stopped(s);
        }
        let tag = format!("job {} ({}) {}/{}", j.job_id, j.app_name, i + 1, gpu.len());
        let mut h = ws.history()?;
        // one writer per job: a job another aether works on is left to it
        let _held = match crate::lock::lock_job(ws, &mut h, j.job_id, "aether run") {
            Ok(g) => g,
            Err(e) => {
                ws.warn(&format!("run: {tag}: {e:#}"));
                failed += 1;
                continue;
            }
        };
        // 3. tune, unless a session of it is done
        let tuned = h
            .tune_sessions(j.job_id)?
            .iter()
            .any(|s| s.status == "DONE");
        if tuned {
            ws.note(&format!("run [2/4] tune {tag}: done before, not run again"));
        } else {
            let shape = h
                .latest_qualification_id(j.job_id)?
                .ok_or_else(|| invalid!("job {} has no qualification (its shape)", j.job_id))?;
            drop(h);
            ws.note(&format!(
                "run [2/4] tune {tag} on a {platform} cluster of shape {shape} (made for it, ended after it)"
            ));
            let t = TuneRequest {
                job_id: j.job_id,
                target: Target::Shape {
                    shape_id: shape,
                    config_file: None,
                    keep_cluster: false,
                },
                params: TuneParams::new(req.min_tuning_iterations, req.max_tuning_iterations, 5.0)?,
                timeout_s: req.timeout_s.unwrap_or(6 * 3600),
                job: None,
                allow_output_overwrite: false,
            };
            match crate::tune::tune(ws, &t) {
                Ok(TuneEnd::Interrupted(s)) => return stopped(s),
                Ok(TuneEnd::Done {
                    best_run: Some(_), ..
                }) => {}
                Ok(TuneEnd::Done {
                    best_run: None,
                    reason,
                }) => {
                    ws.warn(&format!(
                        "run: tune of {tag} stopped ({reason}) with no successful GPU run to validate"
                    ));
                    failed += 1;
                    continue;
                }
                Err(e) => {
                    ws.warn(&format!("run: tune of {tag} failed: {e:#}"));
                    failed += 1;
                    continue;
                }
            }
        }
        // 4. validate the best run, unless it is validated already
        let h = ws.history()?;
        let Some(best) = aether_core::history::best_gpu_run(&h.runs(j.job_id)?).cloned() else {
            ws.note(&format!("run [3/4] validate {tag}: no successful GPU run"));
            failed += 1;
            continue;
        };
        if let Some(v) = h
            .validations(j.job_id)?
            .into_iter()
            .rev()
            .find(|v| v.gpu_run_id == Some(best.run_id))
        {
            ws.note(&format!(
                "run [3/4] validate {tag}: run {} was validated before ({})",
                best.run_id, v.verdict
            ));
            failed += (v.verdict == "FAIL") as usize;
            continue;
        }
        drop(h);
        ws.note(&format!("run [3/4] validate {tag}: run {}", best.run_id));
        let checked = crate::validate::validate_job(
            ws,
            j.job_id,
            Some(best.run_id),
            &aether_validate::Options::default(),
        )
        .and_then(|(r, runs)| {
            crate::validate::record(ws, &runs, &r)?;
            Ok(r)
        });
        match checked {
            Ok(r) => {
                ws.note(&format!("run: validation of {tag}: {}", r.verdict));
                failed += (r.verdict == aether_validate::Verdict::Fail) as usize;
            }
            Err(e) => {
                ws.warn(&format!("run: validation of {tag} failed: {e:#}"));
                failed += 1;
            }
        }
    }

    // 5. the report
    ws.note("run [4/4] report");
    let h = ws.history()?;
    let o = aether_report::model::overview_of(&h, |j| wanted.contains(&j.event_log))?;
    if let Some(dir) = &req.output {
        std::fs::create_dir_all(dir)?;
        let hist = ws.history_path().display().to_string();
        let page = aether_report::html::overview(&o, &hist, aether_report::html::Mode::File);
        std::fs::write(dir.join("overview.html"), page)?;
        for j in &o.jobs {
            if let Some(d) = aether_report::model::job(&h, j.job_id)? {
                let page = aether_report::html::job(
                    &d,
                    o.generated_ms,
                    &hist,
                    aether_report::html::Mode::File,
                );
                std::fs::write(dir.join(format!("job-{}.html", j.job_id)), page)?;
            }
        }
        ws.note(&format!("run: reports in {}", dir.display()));
    }
    Ok(RunEnd::Done {
        failed,
        overview: Box::new(o),
    })
}
