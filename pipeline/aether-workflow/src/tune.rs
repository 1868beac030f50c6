//! The tune loop: run a job, profile the run, make a new config and run again,
//! keeping the fastest successful run (ties: the cheaper). Every run, config and decision is in
//! the job history (`tune_sessions`, `tune_iterations`); re-running the same command after an
//! interruption continues the session.

use crate::cancel::Stop;
use crate::error::{Context, Result, bail, invalid};
use crate::events::Event;
use crate::props::{Props, int_of, mib, partitions, remedies, set_partitions};
use crate::runs::{self, RunSpec};
use crate::workspace::Workspace;
use aether_core::history::{Run, TuneIteration};
use aether_core::{History, RunOn};
use aether_platform::{ClusterBackend, ClusterInfo, JobDefinition, StepState};

/// When the loop stops.
#[derive(Clone, Debug)]
pub struct TuneParams {
    pub min: i64,
    pub max: i64,
    pub improvement_pct: f64,
    pub time_budget_ms: Option<i64>,
    pub cost_budget_usd: Option<f64>,
}

/// Where the loop's runs go.
pub struct TuneEnv<'a> {
    pub b: &'a dyn ClusterBackend,
    pub platform: RunOn,
    pub cluster: &'a ClusterInfo,
    pub timeout_s: u64,
    pub allow_output_overwrite: bool,
    /// The cluster was made for this session (and is ended after it): a session resumed
    /// after a crash ends it once done with it.
    pub cluster_made: bool,
}

/// How a session ended.
#[derive(Debug, PartialEq)]
pub enum TuneEnd {
    Done {
        best_run: Option<i64>,
        reason: String,
    },
    Interrupted(Stop),
}

/// The properties `b` sets differently from `a` (`null`: removed).
fn changed(a: &Props, b: &Props) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (k, v) in b {
        if a.get(k) != Some(v) {
            m.insert(k.clone(), v.clone().into());
        }
    }
    for k in a.keys() {
        if !b.contains_key(k) {
            m.insert(k.clone(), serde_json::Value::Null);
        }
    }
    serde_json::Value::Object(m)
}

/// Configs near `p` to try when the profile proposes nothing new: shuffle partitions ×2 and
/// ÷2, concurrent GPU tasks ±1, file partitions ×2 and ÷2.
fn neighbours(p: &Props) -> Vec<(String, Props)> {
    let mut out = Vec::new();
    let n = partitions(p);
    for (what, m) in [("doubled", n * 2), ("halved", (n / 2).max(1))] {
        let mut q = p.clone();
        set_partitions(&mut q, m);
        out.push((format!("shuffle partitions {what} ({n} -> {m})"), q));
    }
    let c = int_of(p, "spark.rapids.sql.concurrentGpuTasks").unwrap_or(2);
    for m in [c + 1, c - 1] {
        if (1..=8).contains(&m) {
            let mut q = p.clone();
            q.insert("spark.rapids.sql.concurrentGpuTasks".into(), m.to_string());
            out.push((format!("concurrent GPU tasks {c} -> {m}"), q));
        }
    }
    let key = "spark.sql.files.maxPartitionBytes";
    let cur = p.get(key).and_then(|v| mib(v, false)).unwrap_or(512);
    for m in [(cur * 2).min(4096), (cur / 2).max(16)] {
        if m != cur {
            let mut q = p.clone();
            q.insert(key.into(), format!("{m}m"));
            out.push((format!("file partitions {cur}m -> {m}m"), q));
        }
    }
    out
}

/// The profiling AutoTuner's proposal after a run: its event log's metrics, the run's config
/// where the log lacks a property (a local or emulated run leaves the GPU settings out).
/// It is sized for the worker `w` (the session's cluster's GPU nodes).
fn profile_proposal(
    ws: &Workspace,
    event_log: &str,
    base: &Props,
    w: &aether_predict::profile::Worker,
) -> Result<Props> {
    let rt = ws.runtime();
    let ing = aether_ingest::ingest(&[event_log.to_string()], &Default::default());
    if let Some(e) = ing.source_errors.first() {
        bail!("{}: {}", e.path, e.error);
    }
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing)?;
    rt.block_on(aether_predict::profile::prepare(&ctx))?;
    let inputs = rt.block_on(aether_predict::tuner::inputs(
        &ctx,
        aether_predict::tuner::Mode::Profiling,
    ))?;
    let mut inp = inputs
        .into_values()
        .next()
        .ok_or_else(|| invalid!("{event_log}: no application"))?;
    for (k, v) in base {
        inp.props.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let t = aether_predict::tuner::recommend(&inp, w);
    Ok(crate::props::config_properties(base.clone(), &t))
}

/// The job's best GPU run: its fastest successful GPU test run (ties: the cheaper).
pub fn best_gpu_run(h: &History, job_id: i64) -> Result<Option<Run>> {
    Ok(aether_core::history::best_gpu_run(&h.runs(job_id)?).cloned())
}

/// The job's best config to start from: the config of its fastest successful GPU test run,
/// else its newest config.
fn starting_config(h: &History, job_id: i64) -> Result<i64> {
    let best = best_gpu_run(h, job_id)?;
    if let Some(c) = best.and_then(|r| r.config_id) {
        return Ok(c);
    }
    h.configs(job_id)?
        .last()
        .map(|c| c.config_id)
        .ok_or_else(|| invalid!("job {job_id} has no config: qualify or profile it first"))
}

/// Faster, or as fast and cheaper.
fn better(a: &TuneIteration, b: &TuneIteration) -> bool {
    match (a.duration_ms, b.duration_ms) {
        (Some(x), Some(y)) => {
            x < y || (x == y && a.cost_usd.unwrap_or(f64::MAX) < b.cost_usd.unwrap_or(f64::MAX))
        }
        (Some(_), None) => true,
        _ => false,
    }
}

/// The run of config `config_id` that a killed tune of session `tune_id` started and never
/// made an iteration of: followed to its end when its step still runs, as it ended when it
/// ended (reconciled). A run that never reached the platform (LOST) or was cancelled is not an
/// iteration: its config runs again.
fn adopt(
    ws: &Workspace,
    h: &mut History,
    env: &TuneEnv<'_>,
    tune_id: i64,
    config_id: i64,
    its: &[TuneIteration],
) -> Result<Option<runs::RunOutcome>> {
    let counted: Vec<i64> = its.iter().filter_map(|i| i.run_id).collect();
    let runs = h.tune_runs(tune_id)?;
    // a submit never answered that reconciliation could not settle: its step may exist, so
    // the config is not submitted again until the platform can say
    if let Some(r) = runs.iter().find(|r| r.status == "SUBMITTING") {
        bail!(
            "run {} of tune session {tune_id} is still SUBMITTING (its submit was never answered and \
             {} could not be asked whether its step exists): run the command again when it answers",
            r.run_id,
            env.b.name()
        );
    }
    let Some(run) = runs.into_iter().rev().find(|r| {
        !counted.contains(&r.run_id)
            && r.config_id == Some(config_id)
            && r.step_id.is_some()
            && matches!(
                r.status.as_str(),
                "COMPLETED" | "FAILED" | "TIMED_OUT" | "PENDING" | "RUNNING"
            )
    }) else {
        return Ok(None);
    };
    let state = match run.status.as_str() {
        "COMPLETED" => StepState::Completed,
        "FAILED" | "TIMED_OUT" => StepState::Failed,
        _ => {
            // still running with no aether following it: this process follows it now
            let cid = run.cluster_id.clone().unwrap_or_default();
            let sid = run.step_id.clone().unwrap_or_default();
            let other;
            let cluster = if cid == env.cluster.cluster_id {
                env.cluster
            } else {
                other = ws.runtime().block_on(env.b.describe(&cid))?;
                &other
            };
            h.set_run_owner(run.run_id, &aether_core::owner::me())?;
            let step = ws.runtime().block_on(env.b.step(&cid, &sid))?;
            ws.note(&format!(
                "run {} (step {sid}, left running by an interrupted tune) is this iteration's: following it",
                run.run_id
            ));
            let spec = RunSpec {
                b: env.b,
                platform: env.platform,
                cluster,
                job_id: run.job_id,
                config_id,
                timeout_s: env.timeout_s,
                tune_id: Some(tune_id),
            };
            return Ok(Some(runs::follow(ws, h, &spec, run, step)?));
        }
    };
    ws.note(&format!(
        "run {} ({}, left by an interrupted tune) is this iteration's",
        run.run_id, run.status
    ));
    Ok(Some(runs::RunOutcome {
        run,
        state,
        signal: None,
    }))
}

/// The loop. Resumes the job's unfinished session if there is one.
pub fn tune_loop(
    ws: &Workspace,
    h: &mut History,
    env: &TuneEnv<'_>,
    job_id: i64,
    p: &TuneParams,
) -> Result<TuneEnd> {
    let job: JobDefinition = match h.definition(job_id)? {
        Some((_, d)) => serde_json::from_value(d)?,
        None => bail!(
            "job {job_id} has no definition to run: its event log holds no spark-submit command line; give it as --job \"spark-submit … job.py args\""
        ),
    };
    // (and the session's first config as it started: a run a killed session left is of it)
    let (tune_id, mut its, first) = match h.unfinished_tune(job_id)? {
        Some(s) => {
            let its = h.iterations(s.tune_id)?;
            ws.note(&format!(
                "resuming tune session {} of job {job_id} after {} iterations ({})",
                s.tune_id,
                its.len(),
                s.status
            ));
            (s.tune_id, its, s.params["first_config_id"].as_i64())
        }
        None => {
            let first = starting_config(h, job_id)?;
            let params = serde_json::json!({
                "min": p.min, "max": p.max, "improvement_pct": p.improvement_pct,
                "time_budget_ms": p.time_budget_ms, "cost_budget_usd": p.cost_budget_usd,
                "cluster_made": env.cluster_made,
                "first_config_id": first,
            });
            let id = h.start_tune(job_id, env.b.name(), Some(&env.cluster.cluster_id), &params)?;
            ws.note(&format!(
                "tune session {id} of job {job_id} on {}",
                env.cluster.cluster_id
            ));
            (id, Vec::new(), Some(first))
        }
    };
    h.set_tune_status(tune_id, "RUNNING", None, None)?;
    // the proposals are sized for the session's cluster: its GPU nodes (else g6.4xlarge, e.g.
    // a local run)
    let worker = aether_predict::cluster::Catalog::load(&aether_predict::prices::Terms::list())
        .ok()
        .and_then(|cat| {
            let nodes = env.cluster.groups.iter().map(|g| g.instance_type.as_str());
            aether_predict::target::of_nodes(&cat, nodes)
        })
        .unwrap_or_default();
    let mut tried: Vec<Props> = Vec::new();
    for it in &its {
        if let Some(c) = h.config(it.config_id)? {
            tried.push(c.properties);
        }
    }
    let mut next = match its.last() {
        Some(last) => last.next_config_id.unwrap_or(last.config_id),
        None => match first {
            Some(c) => c,
            None => starting_config(h, job_id)?,
        },
    };
    let best_of = |its: &[TuneIteration]| -> Option<TuneIteration> {
        its.iter()
            .filter(|i| i.status == "COMPLETED")
            .fold(None, |b: Option<&TuneIteration>, i| match b {
                Some(b) if !better(i, b) => Some(b),
                _ => Some(i),
            })
            .cloned()
    };
    let done = |h: &mut History, its: &[TuneIteration], reason: String| -> Result<TuneEnd> {
        let best = best_of(its).and_then(|b| b.run_id);
        h.set_tune_status(tune_id, "DONE", best, Some(&reason))?;
        Ok(TuneEnd::Done {
            best_run: best,
            reason,
        })
    };
    loop {
        let i = its.len() as i64 + 1;
        // interrupted runs are not iterations the bounds count
        let n = its.iter().filter(|i| i.status != "INTERRUPTED").count() as i64 + 1;
        if n > p.max {
            return done(
                h,
                &its,
                format!("--max_tuning_iterations {} reached", p.max),
            );
        }
        let spent_ms: i64 = its.iter().filter_map(|i| i.duration_ms).sum();
        if let Some(b) = p.time_budget_ms
            && spent_ms >= b
        {
            return done(
                h,
                &its,
                format!("time budget spent ({spent_ms} ms of runs)"),
            );
        }
        let spent_usd: f64 = its.iter().filter_map(|i| i.cost_usd).sum();
        if let Some(b) = p.cost_budget_usd
            && spent_usd >= b
        {
            return done(
                h,
                &its,
                format!("cost budget spent (${spent_usd:.4} of runs)"),
            );
        }
        let config = h
            .config(next)?
            .ok_or_else(|| invalid!("config {next} is not in the history"))?;
        let prev_props = its
            .last()
            .and_then(|l| h.config(l.config_id).ok().flatten())
            .map(|c| c.properties)
            .unwrap_or_default();
        // a stop between runs ends the session before the next run starts
        if let Some(sig) = ws.cancel().stopped() {
            h.set_tune_status(
                tune_id,
                "INTERRUPTED",
                best_of(&its).and_then(|b| b.run_id),
                None,
            )?;
            return Ok(TuneEnd::Interrupted(sig));
        }
        let o = match adopt(ws, h, env, tune_id, next, &its)? {
            // a run of this iteration that a killed tune left: it counts, once
            Some(o) => o,
            None => {
                let planned = runs::plan(
                    ws,
                    h,
                    env.platform,
                    job_id,
                    job.clone(),
                    config.properties.clone(),
                    env.allow_output_overwrite,
                )?;
                let spec = RunSpec {
                    b: env.b,
                    platform: env.platform,
                    cluster: env.cluster,
                    job_id,
                    config_id: next,
                    timeout_s: env.timeout_s,
                    tune_id: Some(tune_id),
                };
                runs::execute(ws, h, &spec, planned)?
            }
        };
        let run: &Run = &o.run;
        let mut it = TuneIteration {
            tune_id,
            iteration: i,
            run_id: Some(run.run_id),
            config_id: next,
            status: run.status.clone(),
            duration_ms: run.duration_ms,
            cost_usd: run.cost_usd,
            changed: changed(&prev_props, &config.properties),
            ..Default::default()
        };
        tried.push(config.properties.clone());
        if let Some(sig) = o.signal {
            it.decision = format!(
                "{}: stopped; run the same command to resume (this config runs again)",
                sig.name()
            );
            it.next_config_id = Some(next);
            h.add_iteration(&it)?;
            ws.emit(Event::Iteration(&it));
            h.set_tune_status(
                tune_id,
                "INTERRUPTED",
                best_of(&its).and_then(|b| b.run_id),
                None,
            )?;
            return Ok(TuneEnd::Interrupted(sig));
        }
        let best_before = best_of(&its);
        let ok = o.state == StepState::Completed;
        let improved = ok
            && match best_before.as_ref().and_then(|b| b.duration_ms) {
                None => true,
                Some(b) => {
                    (run.duration_ms.unwrap_or(i64::MAX) as f64)
                        < b as f64 * (1.0 - p.improvement_pct / 100.0)
                }
            };
        let failed_twice = !ok
            && its
                .last()
                .is_some_and(|l| l.status != "COMPLETED" && l.config_id == next);
        // the next config
        let base_props = if ok {
            config.properties.clone()
        } else {
            remedies(&config.properties)
        };
        let proposal = match run.event_log.as_deref() {
            Some(l) if ok => profile_proposal(ws, l, &base_props, &worker).unwrap_or_else(|e| {
                ws.warn(&format!("profiling run {}: {e:#}", run.run_id));
                base_props.clone()
            }),
            _ => base_props.clone(),
        };
        let best_props = {
            let mut with_this = its.clone();
            with_this.push(it.clone());
            best_of(&with_this)
                .and_then(|b| h.config(b.config_id).ok().flatten())
                .map(|c| c.properties)
                .unwrap_or_else(|| config.properties.clone())
        };
        let (why, props) = if !tried.contains(&proposal) {
            (
                if ok {
                    "the profile of this run".to_string()
                } else {
                    format!(
                        "the run {}: fewer concurrent GPU tasks, more partitions, more overhead",
                        run.status
                    )
                },
                Some(proposal),
            )
        } else {
            match neighbours(&best_props)
                .into_iter()
                .find(|(_, q)| !tried.contains(q))
            {
                Some((what, q)) => (format!("near the best: {what}"), Some(q)),
                None => ("every nearby config was tried".to_string(), None),
            }
        };
        let stop = if failed_twice {
            Some(format!("config {next} failed twice in a row"))
        } else if props.is_none() {
            Some(format!("config repeats: {why}"))
        } else if n >= p.min && ok && !improved {
            // (a failed run never ends the loop by itself: its remedies run next)
            Some(format!(
                "iteration {i} did not improve the best run by {}%",
                p.improvement_pct
            ))
        } else {
            None
        };
        match (&stop, props) {
            (None, Some(q)) => {
                let id = h.add_config(job_id, "tune", &q)?;
                it.next_config_id = Some(id);
                it.decision = format!(
                    "{}; next: config {id} from {why}",
                    if improved {
                        "new best"
                    } else if ok {
                        "not better"
                    } else {
                        "failed"
                    }
                );
                next = id;
            }
            (Some(s), _) => it.decision = format!("stop: {s}"),
            (None, None) => unreachable!("no next config is a stop"),
        }
        h.add_iteration(&it)?;
        ws.emit(Event::Iteration(&it));
        its.push(it);
        if let Some(s) = stop {
            return done(h, &its, s);
        }
    }
}

/// One tune session of a job.
#[derive(Clone, Debug)]
pub struct TuneRequest {
    /// The job to tune ("Aether Job ID").
    pub job_id: i64,
    /// Where its runs go: a running cluster, or one of a shape made for the session (ended
    /// after it, also when interrupted, unless kept).
    pub target: crate::submit::Target,
    pub params: TuneParams,
    /// Give up on one run after this many seconds (cancelled, recorded TIMED_OUT).
    pub timeout_s: u64,
    /// The job as a spark-submit command line, when the history has no definition (recorded).
    pub job: Option<String>,
    /// Run even when the CPU run wrote outputs no argument names.
    pub allow_output_overwrite: bool,
}

impl TuneParams {
    /// The bounds, checked: `min` at least 1, `max` (default `min + 3`) not below it.
    pub fn new(min: i64, max: Option<i64>, improvement_pct: f64) -> Result<TuneParams> {
        if min < 1 {
            bail!("--min_tuning_iterations must be at least 1");
        }
        let max = max.unwrap_or(min + 3);
        if max < min {
            bail!("--max_tuning_iterations {max} is below --min_tuning_iterations {min}");
        }
        Ok(TuneParams {
            min,
            max,
            improvement_pct,
            time_budget_ms: None,
            cost_budget_usd: None,
        })
    }
}

/// Tune a job: its cluster (made when the target is a shape), the loop, the cluster ended.
pub fn tune(ws: &Workspace, req: &TuneRequest) -> Result<TuneEnd> {
    use crate::submit::Target;
    let platform = match &req.target {
        Target::Cluster(id) => ws.platform_of_cluster(id)?,
        Target::Shape { .. } => ws.platform()?,
    };
    let mut h = ws.history()?;
    let job_id = req.job_id;
    if h.job_event_log(job_id)?.is_none() {
        bail!("unknown job id {job_id} (see `aether report list`)");
    }
    // one writer per job; then what a killed command left is brought up to the platform's
    // truth (a run it left can be taken up as an iteration below)
    let _held = crate::lock::lock_job(ws, &mut h, job_id, "aether tune")?;
    crate::reconcile::reconcile(ws, &mut h, crate::reconcile::Scope::Job(job_id))?;
    // a session left unfinished on another platform resumes there, not here
    let unfinished = h.unfinished_tune(job_id)?;
    if let Some(s) = &unfinished
        && s.backend != platform.as_str()
        && RunOn::parse(&s.backend).is_some()
    {
        bail!(
            "job {job_id} has an unfinished tune session {} on {} (cluster {}), but this              command runs on {platform}: resume it with --platform {}",
            s.tune_id,
            s.backend,
            s.cluster_id.as_deref().unwrap_or("-"),
            s.backend
        );
    }
    // a session a killed command left, on a cluster it made for the session
    let stale_cluster = unfinished
        .filter(|s| s.params["cluster_made"] == true && s.backend == platform.as_str())
        .and_then(|s| s.cluster_id);
    if let Some(line) = &req.job {
        let d = JobDefinition::parse(line).with_context(|| format!("--job {line:?}"))?;
        h.set_definition(job_id, "user", &serde_json::to_value(&d)?)?;
    }
    let b = ws.backend(platform)?;
    let (cluster, created, keep) = match &req.target {
        Target::Cluster(id) => {
            let c = ws.runtime().block_on(b.describe(id))?;
            if c.state.is_ended() {
                bail!("cluster {id} is {}: it takes no steps", c.state.as_str());
            }
            (c, false, true)
        }
        Target::Shape { keep_cluster, .. }
            if let Some(c) = stale_cluster.as_deref().and_then(|id| {
                ws.runtime()
                    .block_on(b.describe(id))
                    .ok()
                    .filter(|c| !c.state.is_ended())
            }) =>
        {
            // the cluster a killed command made for this session: the session resumes on it
            ws.note(&format!(
                "resuming on cluster {}, made for this session by a command that was killed",
                c.cluster_id
            ));
            (c, true, *keep_cluster)
        }
        Target::Shape {
            shape_id,
            config_file,
            keep_cluster,
        } => {
            let o = crate::cluster::CreateOpts {
                shape_id: Some(*shape_id),
                config_file: config_file.clone(),
                keep_cluster: *keep_cluster,
                ..Default::default()
            };
            match crate::cluster::create(ws, b.as_ref(), &mut h, &o)? {
                Ok(c) => (c, true, *keep_cluster),
                Err(sig) => return Ok(TuneEnd::Interrupted(sig)),
            }
        }
    };
    let env = TuneEnv {
        b: b.as_ref(),
        platform,
        cluster: &cluster,
        timeout_s: req.timeout_s,
        allow_output_overwrite: req.allow_output_overwrite,
        cluster_made: created && !keep,
    };
    let end = tune_loop(ws, &mut h, &env, job_id, &req.params);
    if created && !keep {
        crate::cluster::end(ws, b.as_ref(), &mut h, &cluster.cluster_id);
    }
    // the cluster a killed command made for the session it left: its runs are done now
    if let Some(id) = stale_cluster.filter(|id| *id != cluster.cluster_id)
        && ws
            .runtime()
            .block_on(b.describe(&id))
            .is_ok_and(|c| !c.state.is_ended())
    {
        ws.note(&format!(
            "cluster {id} was made for this session by a command that was killed: ending it"
        ));
        crate::cluster::end(ws, b.as_ref(), &mut h, &id);
    }
    end
}

/// The session's outcome against the CPU run.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneSummary {
    /// The best run (none: no successful run).
    pub best: Option<Run>,
    /// The CPU run's duration (its recorded run, else the qualified app's).
    pub cpu_ms: Option<i64>,
    /// The CPU run's cost.
    pub cpu_cost_usd: Option<f64>,
}

/// The best run of a session and the CPU run it is measured against.
pub fn summary(h: &History, job_id: i64, best_run: Option<i64>) -> Result<TuneSummary> {
    let best = best_run.and_then(|r| h.run(r).ok().flatten());
    let job = h.list()?.into_iter().find(|j| j.job_id == job_id);
    let cpu_run = h
        .runs(job_id)?
        .into_iter()
        .find(|r| r.kind == "cpu-original");
    Ok(TuneSummary {
        best,
        cpu_ms: cpu_run
            .as_ref()
            .and_then(|r| r.duration_ms)
            .or(job.as_ref().and_then(|j| j.app_duration_ms)),
        cpu_cost_usd: cpu_run
            .as_ref()
            .and_then(|r| r.cost_usd)
            .or(job.as_ref().and_then(|j| j.cpu_cost_usd)),
    })
}

#[cfg(test)]
mod tests {
    //! The loop's decisions, deterministic and fast: a scripted backend runs nothing; each
    //! "run" is a copy of a real GPU event log whose duration the config decides (fastest at
    //! 800 shuffle partitions), and one config fails as a GPU OOM would.
    use super::*;
    use aether_platform::{
        ClusterSpec, ClusterState, PlatformError, StepInfo, StepRequest, now_ms,
    };
    use async_trait::async_trait;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    const TEMPLATE: &str =
        "../../../shared/datasets/rapids-tools/spark-events-profiling/eventlog_minimal_events";

    fn template() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(TEMPLATE)
    }

    struct Scripted {
        dir: std::path::PathBuf,
        steps: Mutex<BTreeMap<String, (StepInfo, Option<String>)>>,
        submitted: Mutex<Vec<Props>>,
    }

    /// The scripted job: fastest at 800 partitions; at 400 it fails (as a GPU OOM would).
    fn duration(p: &Props) -> Option<i64> {
        let n = partitions(p);
        (n != 400).then(|| 10_000 + (n - 800).abs() * 5)
    }

    fn cluster() -> ClusterInfo {
        ClusterInfo {
            cluster_id: "sc-1".into(),
            backend: "scripted".into(),
            release_label: None,
            custom_ami: None,
            state: ClusterState::Waiting,
            spec: ClusterSpec::default(),
            created_ms: 0,
            ended_ms: None,
            state_reason: None,
            groups: Vec::new(),
        }
    }

    #[async_trait]
    impl ClusterBackend for Scripted {
        fn platform(&self) -> RunOn {
            RunOn::Local
        }
        fn name(&self) -> &'static str {
            "scripted"
        }
        async fn create(&self, _: &ClusterSpec, _: &str) -> aether_platform::Result<ClusterInfo> {
            Ok(cluster())
        }
        async fn find_by_token(&self, _: &str) -> aether_platform::Result<Option<ClusterInfo>> {
            Ok(None)
        }
        async fn describe(&self, _: &str) -> aether_platform::Result<ClusterInfo> {
            Ok(cluster())
        }
        async fn list(&self) -> aether_platform::Result<Vec<ClusterInfo>> {
            Ok(vec![cluster()])
        }
        async fn terminate(&self, _: &str) -> aether_platform::Result<ClusterInfo> {
            Ok(cluster())
        }
        async fn submit(&self, c: &str, r: &StepRequest) -> aether_platform::Result<StepInfo> {
            let mut steps = self.steps.lock().unwrap();
            let id = format!("ss-{}", steps.len() + 1);
            self.submitted.lock().unwrap().push(r.conf.clone());
            let now = now_ms();
            let (state, log, end) = match duration(&r.conf) {
                Some(d) => {
                    // the template's app, ending `d` ms after it started
                    let text = std::fs::read_to_string(template()).unwrap();
                    let start: i64 = text
                        .lines()
                        .find(|l| l.contains("SparkListenerApplicationStart"))
                        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                        .and_then(|v| v["Timestamp"].as_i64())
                        .unwrap();
                    let out: Vec<String> = text
                        .lines()
                        .map(|l| {
                            if l.contains("SparkListenerApplicationEnd") {
                                format!(
                                    "{{\"Event\":\"SparkListenerApplicationEnd\",\"Timestamp\":{}}}",
                                    start + d
                                )
                            } else if l.contains("SparkListenerEnvironmentUpdate") {
                                // the run's confs, as Spark logs them
                                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                                for (k, x) in &r.conf {
                                    v["Spark Properties"][k] = x.clone().into();
                                }
                                v.to_string()
                            } else {
                                l.to_string()
                            }
                        })
                        .collect();
                    let path = self.dir.join(&id);
                    std::fs::write(&path, out.join("\n") + "\n").unwrap();
                    (
                        StepState::Completed,
                        Some(path.display().to_string()),
                        now + d,
                    )
                }
                None => (StepState::Failed, None, now + 1000),
            };
            let info = StepInfo {
                cluster_id: c.into(),
                step_id: id.clone(),
                state,
                start_ms: Some(now),
                end_ms: Some(end),
                failure_reason: (state == StepState::Failed)
                    .then(|| "GpuSplitAndRetryOOM: GPU OutOfMemory (scripted)".to_string()),
                args: vec![],
            };
            steps.insert(id, (info.clone(), log));
            Ok(info)
        }
        async fn find_step(&self, _: &str, _: &str) -> aether_platform::Result<Option<StepInfo>> {
            Ok(None)
        }
        async fn step(&self, _: &str, s: &str) -> aether_platform::Result<StepInfo> {
            self.steps
                .lock()
                .unwrap()
                .get(s)
                .map(|x| x.0.clone())
                .ok_or_else(|| PlatformError::UnknownStep {
                    cluster: "sc-1".into(),
                    step: s.into(),
                })
        }
        async fn cancel(&self, c: &str, s: &str) -> aether_platform::Result<StepInfo> {
            self.step(c, s).await
        }
        async fn event_log(&self, _: &str, s: &str) -> aether_platform::Result<Option<String>> {
            Ok(self.steps.lock().unwrap().get(s).and_then(|x| x.1.clone()))
        }
        async fn driver_log(&self, _: &str, _: &str) -> aether_platform::Result<Option<String>> {
            Ok(None)
        }
    }

    /// A history in `dir` with the template's job and a definition to run.
    fn history_with_job(dir: &std::path::Path) -> (History, i64) {
        let mut h = History::open(&dir.join("history.db")).unwrap();
        let log = template().display().to_string();
        let job = h
            .job_id("local-1619631016646", "", &log, "Spark shell")
            .unwrap();
        h.set_definition(
            job,
            "user",
            &serde_json::to_value(JobDefinition::parse("spark-submit job.py").unwrap()).unwrap(),
        )
        .unwrap();
        (h, job)
    }

    /// A workspace in `dir` (a library user's: no CLI) and a scripted backend writing there.
    fn scripted(dir: &std::path::Path) -> (Workspace, Scripted) {
        let cfg = aether_core::ConfigFile::load(&dir.join("config.toml")).unwrap();
        let ws = Workspace::from_settings(cfg, Some(RunOn::Local)).unwrap();
        let b = Scripted {
            dir: dir.to_path_buf(),
            steps: Mutex::default(),
            submitted: Mutex::default(),
        };
        (ws, b)
    }

    /// The loop's runs on the scripted backend's cluster.
    fn env_of<'a>(b: &'a Scripted, c: &'a ClusterInfo) -> TuneEnv<'a> {
        TuneEnv {
            b,
            platform: RunOn::Local,
            cluster: c,
            timeout_s: 60,
            allow_output_overwrite: true,
            cluster_made: false,
        }
    }

    #[test]
    fn the_loop_keeps_the_fastest_run_survives_a_failure_and_stops() {
        let d = tempfile::tempdir().unwrap();
        let (mut h, job) = history_with_job(d.path());
        let start: Props = [
            ("spark.plugins", "com.nvidia.spark.SQLPlugin"),
            ("spark.sql.shuffle.partitions", "200"),
            ("spark.rapids.sql.concurrentGpuTasks", "2"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let first = h.add_config(job, "qualify", &start).unwrap();
        let (ws, b) = scripted(d.path());
        let c = cluster();
        let env = env_of(&b, &c);
        let p = TuneParams {
            min: 3,
            max: 8,
            improvement_pct: 5.0,
            time_budget_ms: None,
            cost_budget_usd: None,
        };
        let end = tune_loop(&ws, &mut h, &env, job, &p).unwrap();
        let session = h.unfinished_tune(job).unwrap();
        assert!(session.is_none(), "the session is DONE");
        let its = h.iterations(1).unwrap();
        let parts: Vec<i64> = its
            .iter()
            .map(|i| partitions(&h.config(i.config_id).unwrap().unwrap().properties))
            .collect();
        let statuses: Vec<&str> = its.iter().map(|i| i.status.as_str()).collect();
        let durations: Vec<Option<i64>> = its.iter().map(|i| i.duration_ms).collect();
        // 200 (the start) -> the profile's proposal (same partitions, not faster) -> near the
        // best: 400, which fails -> remedies: 800 partitions, fewer GPU tasks: the new best ->
        // the profile of that run, not faster: stop
        assert_eq!(parts, [200, 200, 400, 800, 800], "{its:#?}");
        assert_eq!(
            statuses,
            ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED", "COMPLETED"]
        );
        assert_eq!(
            durations,
            [
                Some(13000),
                Some(13000),
                Some(1000),
                Some(10000),
                Some(10000)
            ]
        );
        assert_eq!(its[0].config_id, first);
        assert!(its[0].decision.contains("profile"), "{}", its[0].decision);
        assert!(
            its[1]
                .decision
                .contains("near the best: shuffle partitions doubled"),
            "{}",
            its[1].decision
        );
        assert!(
            its[2].decision.starts_with("failed")
                && its[2].decision.contains("fewer concurrent GPU tasks"),
            "{}",
            its[2].decision
        );
        let remedy = h.config(its[3].config_id).unwrap().unwrap().properties;
        assert_eq!(
            remedy["spark.rapids.sql.concurrentGpuTasks"], "1",
            "fewer GPU tasks after the OOM"
        );
        assert!(
            its[3].decision.starts_with("new best"),
            "{}",
            its[3].decision
        );
        assert!(
            its[4].decision.contains("did not improve"),
            "{}",
            its[4].decision
        );
        let best = its[3].run_id;
        assert_eq!(
            end,
            TuneEnd::Done {
                best_run: best,
                reason: "iteration 5 did not improve the best run by 5%".into()
            }
        );
        // every run is in the history, with the config it ran
        let runs = h.runs(job).unwrap();
        assert_eq!(runs.len(), 5);
        assert_eq!(b.submitted.lock().unwrap().len(), 5);
        for (r, i) in runs.iter().zip(&its) {
            assert_eq!(Some(r.run_id), i.run_id);
            assert_eq!(r.config_id, Some(i.config_id));
        }
        // a second command finds no unfinished session: a new one starts from the best config
        assert_eq!(starting_config(&h, job).unwrap(), its[3].config_id);
    }

    /// A tune killed (SIGKILL) while its first run's step ran left the run RUNNING and no
    /// iteration; the same tune again takes that run as the iteration instead of running the
    /// config a second time, once the step has ended.
    /// A run's proposal is sized for the session's cluster: on 4 x T4 nodes of 48 vCPUs
    /// (g4dn.12xlarge) a GPU's executor gets 12 cores and T4 concurrency (15,109 MiB / 7,500:
    /// 2, what the run already had, so no change is proposed); on the default g6.4xlarge, 16
    /// cores and 3.
    #[test]
    fn a_proposal_is_sized_for_the_sessions_cluster() {
        let d = tempfile::tempdir().unwrap();
        let (ws, _) = scripted(d.path());
        let log = format!(
            "{}/../../../shared/datasets/rapids-tools/spark-events-profiling/rapids_join_eventlog.zstd",
            env!("CARGO_MANIFEST_DIR")
        );
        let cat =
            aether_predict::cluster::Catalog::load(&aether_predict::prices::Terms::list()).unwrap();
        let t4 = aether_predict::target::of_nodes(&cat, ["m5d.xlarge", "g4dn.12xlarge"]).unwrap();
        let p = profile_proposal(&ws, &log, &Props::new(), &t4).unwrap();
        assert_eq!(
            p.get("spark.executor.cores").map(String::as_str),
            Some("12"),
            "{p:?}"
        );
        assert_eq!(p.get("spark.rapids.sql.concurrentGpuTasks"), None, "{p:?}");
        let l4 = profile_proposal(&ws, &log, &Props::new(), &Default::default()).unwrap();
        assert_eq!(
            l4.get("spark.executor.cores").map(String::as_str),
            Some("16")
        );
        assert_eq!(
            l4.get("spark.rapids.sql.concurrentGpuTasks")
                .map(String::as_str),
            Some("3")
        );
    }

    #[test]
    fn a_killed_tunes_run_is_the_resumed_tunes_iteration() {
        let d = tempfile::tempdir().unwrap();
        let (mut h, job) = history_with_job(d.path());
        let start: Props = [("spark.sql.shuffle.partitions", "200")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let first = h.add_config(job, "qualify", &start).unwrap();
        let (ws, b) = scripted(d.path());
        let c = cluster();
        // what the killed tune left: its session RUNNING, its run RUNNING by a gone process
        let tune_id = h
            .start_tune(job, "scripted", Some("sc-1"), &serde_json::json!({}))
            .unwrap();
        let req = StepRequest {
            name: "aether job 1 config 1 x".into(),
            conf: start.clone(),
            ..Default::default()
        };
        let step = ws.runtime().block_on(b.submit("sc-1", &req)).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = format!("{}:{}:1", aether_core::owner::host(), child.id());
        child.wait().unwrap();
        let orphan = h
            .start_run(&Run {
                job_id: job,
                kind: "gpu-test".into(),
                backend: Some("scripted".into()),
                cluster_id: Some("sc-1".into()),
                step_id: Some(step.step_id.clone()),
                config_id: Some(first),
                status: "RUNNING".into(),
                token: Some(req.name.clone()),
                tune_id: Some(tune_id),
                owner: Some(dead),
                ..Default::default()
            })
            .unwrap();
        let env = env_of(&b, &c);
        let p = TuneParams::new(1, Some(2), 5.0).unwrap();
        tune_loop(&ws, &mut h, &env, job, &p).unwrap();
        let its = h.iterations(tune_id).unwrap();
        assert_eq!(its[0].run_id, Some(orphan), "{its:#?}");
        assert_eq!(its[0].status, "COMPLETED");
        assert_eq!(its[0].duration_ms, Some(13000), "the step's own figures");
        let r = h.run(orphan).unwrap().unwrap();
        assert_eq!(
            (r.status.as_str(), r.duration_ms),
            ("COMPLETED", Some(13000))
        );
        assert_eq!(
            r.owner,
            Some(aether_core::owner::me()),
            "this process followed it"
        );
        // the killed run's config was not run a second time: one submit (the orphan's) plus
        // the second iteration's
        let submitted = b.submitted.lock().unwrap();
        assert_eq!(submitted.len(), its.len(), "{its:#?}");
        assert_eq!(h.runs(job).unwrap().len(), its.len());
        assert!(its.len() == 2 && its[1].config_id != first, "{its:#?}");
    }
}
