//! One run of a job on a cluster: planned (its outputs moved to a sandbox, never over the CPU
//! run's), submitted, recorded before it is waited for, waited for (cancelled at its deadline
//! or when the workspace is cancelled), its logs fetched, its duration and cost computed.

use crate::cancel::Stop;
use crate::error::{Context, Result, bail, invalid};
use crate::events::Event;
use crate::workspace::Workspace;
use aether_core::history::Run;
use aether_core::{History, RunOn};
use aether_platform::{ClusterBackend, ClusterInfo, JobDefinition, Poll, StepRequest, StepState};
use std::collections::BTreeMap;
use std::time::Duration;

/// `f` until it finds something or `wait` has passed (polling with backoff).
pub(crate) fn wait_for<'a, T>(
    rt: &tokio::runtime::Runtime,
    wait: Duration,
    mut f: impl FnMut() -> std::pin::Pin<
        Box<dyn std::future::Future<Output = aether_platform::Result<Option<T>>> + Send + 'a>,
    >,
) -> aether_platform::Result<Option<T>> {
    let start = std::time::Instant::now();
    let mut every = Duration::from_millis(250);
    loop {
        if let Some(v) = rt.block_on(f())? {
            return Ok(Some(v));
        }
        let left = wait.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Ok(None);
        }
        std::thread::sleep(every.min(left));
        every = (every * 2).min(Duration::from_secs(15));
    }
}

/// What a run cost: its hours times the hourly price (EC2 + EMR) of the cluster's nodes at
/// your prices (`[prices]`, else AWS's list prices), each group at the market it ran on (spot
/// nodes at the prices file's spot price, else on-demand: an upper bound, no spot price history
/// offline); `None` on the local backend or for an instance type without a price.
pub(crate) fn run_cost(ws: &Workspace, c: &ClusterInfo, duration_ms: i64) -> Option<f64> {
    if c.groups.is_empty() {
        return None;
    }
    let book = aether_predict::prices::PriceBook::load(&ws.price_terms()).ok()?;
    let region = &ws.region_of(RunOn::Emr);
    let mut per_hour = 0.0;
    for g in &c.groups {
        let market = if g.market.eq_ignore_ascii_case("SPOT") {
            aether_core::config::Market::Spot
        } else {
            aether_core::config::Market::OnDemand
        };
        per_hour += book.hourly(region, &g.instance_type, market, true)?.usd * g.count as f64;
    }
    Some(per_hour * duration_ms as f64 / 3_600_000.0)
}

/// A finished run's figures from its event log.
#[derive(Default)]
pub struct Figures {
    /// The application's duration.
    pub duration_ms: Option<i64>,
    /// Its executors' idle capacity (the `executor_idle` view summed: executors,
    /// allocated_ms, idle_ms, idle_ms_scale_to_zero_60s).
    pub idle: Option<serde_json::Value>,
    /// Each executor's allocated time (what EMR on EKS bills as node time).
    pub executor_ms: Vec<i64>,
}

/// The figures of a run's event log; none where the log cannot be read (a warning names it).
pub fn run_figures(ws: &Workspace, event_log: &str) -> Figures {
    let rt = ws.runtime();
    let read = || -> Result<Figures> {
        let ing = aether_ingest::ingest(&[event_log.to_string()], &Default::default());
        if let Some(e) = ing.source_errors.first() {
            bail!("{}: {}", e.path, e.error);
        }
        let ctx = aether_engine::session();
        aether_engine::register_ingested(&ctx, &ing)?;
        rt.block_on(aether_engine::views::register_views_materialized(
            &ctx,
            &Default::default(),
            &["executor_idle"],
        ))?;
        let q = |sql: &str| rt.block_on(aether_engine::analyze::json_rows(&ctx, sql));
        let duration_ms = q("SELECT duration_ms FROM applications")?
            .first()
            .and_then(|r| r.get("duration_ms")?.as_i64());
        let idle = q(
            "SELECT COUNT(*) AS executors, SUM(allocated_ms) AS allocated_ms,
                             SUM(idle_ms) AS idle_ms,
                             SUM(idle_ms_scale_to_zero_60s) AS idle_ms_scale_to_zero_60s
                      FROM executor_idle",
        )?
        .into_iter()
        .next()
        .filter(|r| r.get("executors").and_then(|v| v.as_i64()).unwrap_or(0) > 0)
        .map(serde_json::Value::Object);
        let executor_ms = q("SELECT allocated_ms FROM executor_idle ORDER BY executor_id")?
            .iter()
            .filter_map(|r| r.get("allocated_ms")?.as_i64())
            .collect();
        Ok(Figures {
            duration_ms,
            idle,
            executor_ms,
        })
    };
    match read() {
        Ok(f) => f,
        Err(e) => {
            ws.warn(&format!("{event_log}: {e:#}"));
            Figures::default()
        }
    }
}

/// What a run on EMR on EKS cost: its executors' node time at the GPU pool's price (spot from
/// the prices file, else on-demand), the driver's on-demand node, the consolidateAfter tail.
pub fn eks_run_cost(
    ws: &Workspace,
    c: &ClusterInfo,
    f: &Figures,
) -> Option<aether_platform::emr_eks::EksCost> {
    use aether_core::config::Market;
    let book = aether_predict::prices::PriceBook::load(&ws.eks_price_terms()).ok()?;
    let region = &ws.region_of(RunOn::EmrEks);
    let group = |role: &str| c.groups.iter().find(|g| g.role == role);
    // no EMR-on-EC2 fee on EKS: EC2 prices (on-demand less your discount; spot from the file)
    let exec_type = &group("EXECUTOR")?.instance_type;
    let exec = book.hourly(region, exec_type, Market::OnDemand, false)?;
    let exec_spot = book
        .hourly(region, exec_type, Market::Spot, false)
        .filter(|h| h.market == Market::Spot)
        .map(|h| h.usd);
    let driver = book.hourly(
        region,
        &group("DRIVER")?.instance_type,
        Market::OnDemand,
        false,
    )?;
    Some(aether_platform::emr_eks::eks_cost(
        &aether_platform::emr_eks::EksCostInputs {
            executor_ms: f.executor_ms.clone(),
            executors_per_node: c
                .spec
                .tags
                .get("aether:gpus-per-node")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1),
            executor_spot_usd_per_hour: exec_spot,
            executor_on_demand_usd_per_hour: exec.usd,
            driver_usd_per_hour: driver.usd,
            driver_ms: f.duration_ms.unwrap_or(0),
            consolidate_after_s: ws.eks_settings().consolidate_after_s.unwrap_or(30),
        },
    ))
}

/// The writes of a CPU run, from its event log's plans (tables resolved as `validate` does).
fn cpu_writes(
    rt: &tokio::runtime::Runtime,
    event_log: &str,
) -> Result<Vec<aether_platform::sandbox::WriteTarget>> {
    let ing = aether_ingest::ingest(&[event_log.to_string()], &Default::default());
    if let Some(e) = ing.source_errors.first() {
        bail!("the CPU run's event log {}: {}", e.path, e.error);
    }
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing)?;
    let mut out: Vec<_> = rt
        .block_on(aether_validate::logs::writes(&ctx))
        .with_context(|| format!("the CPU run's event log {event_log}"))?
        .into_iter()
        .map(|(_, _, t)| t)
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path).then(a.table.cmp(&b.table)));
    out.dedup();
    Ok(out)
}

/// A run's job and properties with its outputs moved to the sandbox.
pub struct PlannedRun {
    job: JobDefinition,
    properties: BTreeMap<String, String>,
    outputs: serde_json::Value,
    tables: Vec<String>,
    run_dir: String,
}

/// Where a run goes and how long it may take.
pub struct RunSpec<'a> {
    pub b: &'a dyn ClusterBackend,
    pub platform: RunOn,
    pub cluster: &'a ClusterInfo,
    pub job_id: i64,
    pub config_id: i64,
    pub timeout_s: u64,
    /// The tune session the run is an iteration of.
    pub tune_id: Option<i64>,
}

/// How a run ended.
pub struct RunOutcome {
    pub run: Run,
    pub state: StepState,
    pub signal: Option<Stop>,
}

/// Sandbox a run of `job`: its outputs go under a prefix of its own, never over the CPU run's;
/// refused (an error) when the CPU run wrote where no argument names.
#[allow(clippy::too_many_arguments)]
pub fn plan(
    ws: &Workspace,
    h: &mut History,
    platform: RunOn,
    job_id: i64,
    job: JobDefinition,
    mut properties: BTreeMap<String, String>,
    allow_output_overwrite: bool,
) -> Result<PlannedRun> {
    let cpu_log = h
        .job_event_log(job_id)?
        .ok_or_else(|| invalid!("job {job_id} is not in the history"))?;
    let writes = match cpu_writes(ws.runtime(), &cpu_log) {
        Ok(w) => w,
        Err(e) if allow_output_overwrite => {
            ws.warn(&format!("{e:#}; running anyway (--allow_output_overwrite)"));
            Vec::new()
        }
        Err(e) => bail!(
            "{e:#}: cannot tell where the job writes; refusing to run (--allow_output_overwrite to run anyway)"
        ),
    };
    let run_dir = format!("job{job_id}-{}", aether_platform::now_ms());
    let prefix = ws.sandbox(platform, &run_dir)?;
    let sb = aether_platform::sandbox::sandbox(&job, &writes, &prefix);
    if !sb.unmapped.is_empty() {
        let list = sb.unmapped.join(", ");
        if !allow_output_overwrite {
            bail!(
                "the CPU run wrote {list}, which no argument of the job names: this run would write \
                 there too (production outputs); refusing (pass the output as an argument, or \
                 --allow_output_overwrite)"
            );
        }
        ws.warn(&format!(
            "this run may overwrite {list} (--allow_output_overwrite)"
        ));
    }
    if !sb.tables.is_empty() {
        // a local run's metastore lives in its own folder: its tables go to the sandbox
        if !aether_platform::Capabilities::of(platform).own_metastore {
            bail!(
                "the CPU run wrote the tables {}: a shared metastore cannot be sandboxed on {platform}; refusing",
                sb.tables.join(", "),
            );
        }
        properties.insert(
            "spark.sql.warehouse.dir".into(),
            format!("{prefix}/warehouse"),
        );
    }
    for (from, to) in &sb.rewritten {
        ws.note(&format!("  output {from} -> {to}"));
    }
    let outputs = serde_json::to_value(&sb.rewritten)?;
    let job = sb.job;
    Ok(PlannedRun {
        job,
        properties,
        outputs,
        tables: sb.tables,
        run_dir,
    })
}

/// Run a planned job on the spec's cluster: the run recorded before its step is submitted (its
/// token the step's name), submitted, waited for (cancelled at the deadline or on a signal),
/// its logs fetched, its duration and cost recorded.
pub fn execute(
    ws: &Workspace,
    h: &mut History,
    s: &RunSpec<'_>,
    p: PlannedRun,
) -> Result<RunOutcome> {
    let (rt, b, cluster) = (ws.runtime(), s.b, s.cluster);
    let (job_id, config_id) = (s.job_id, s.config_id);
    let PlannedRun {
        job,
        properties,
        outputs,
        tables,
        run_dir,
    } = p;
    let req = StepRequest {
        // unique per run: a retried AddJobFlowSteps, and reconciliation after a crash, find
        // the step by it
        name: format!("aether job {job_id} config {config_id} {run_dir}"),
        job,
        conf: properties,
    };
    // intent before action: the run is on record before the step exists
    let mut run = Run {
        job_id,
        kind: "gpu-test".into(),
        backend: Some(b.name().into()),
        cluster_id: Some(cluster.cluster_id.clone()),
        config_id: Some(config_id),
        status: "SUBMITTING".into(),
        start_ms: Some(aether_platform::now_ms()),
        details: serde_json::json!({
            "cluster": cluster.state_reason,
            "outputs": outputs,
            "tables_sandboxed": tables,
        }),
        token: Some(req.name.clone()),
        tune_id: s.tune_id,
        owner: Some(aether_core::owner::me()),
        ..Default::default()
    };
    run.run_id = h.start_run(&run)?;
    aether_core::owner::crash_point("submit:before-call");
    let step = match rt.block_on(b.submit(&cluster.cluster_id, &req)) {
        Ok(step) => step,
        Err(e) => {
            // the answer may have been lost after the step was made: look for it by its name
            match rt.block_on(b.find_step(&cluster.cluster_id, &req.name)) {
                Ok(Some(step)) => {
                    ws.note(&format!(
                        "submit answered {e}, but step {} exists (found by its name): following it",
                        step.step_id
                    ));
                    step
                }
                // refused, and no step of its name: nothing happened, nothing is recorded
                Ok(None) => {
                    h.drop_unsubmitted_run(run.run_id)?;
                    return Err(e.into());
                }
                // the platform cannot say: the run stays SUBMITTING, for reconciliation to find
                Err(e2) => {
                    return Err(e).context(format!(
                        "run {} is kept as SUBMITTING: whether its step exists could not be told ({e2}); \
                         the next command on the job finds it by its name",
                        run.run_id
                    ));
                }
            }
        }
    };
    aether_core::owner::crash_point("submit:after-answer");
    run.step_id = Some(step.step_id.clone());
    run.status = step.state.as_str().into();
    run.start_ms = step.start_ms.or(run.start_ms);
    run.details["args"] = serde_json::json!(step.args);
    if let Err(e) = h.submitted_run(&run) {
        // a run that cannot be recorded is not left running
        let _ = rt.block_on(b.cancel(&cluster.cluster_id, &step.step_id));
        return Err(e).context(format!(
            "step {} cancelled: the run could not be recorded",
            step.step_id
        ));
    }
    aether_core::owner::crash_point("submit:after-record");
    ws.note(&format!(
        "run {} of job {job_id}: step {} on {} ({}) with config {config_id}",
        run.run_id,
        step.step_id,
        cluster.cluster_id,
        b.name()
    ));
    follow(ws, h, s, run, step)
}

/// Wait for a recorded run's step (cancelled at the deadline or on a signal), then complete
/// the record ([`complete`]). Also what a resumed tune does with a run a killed one left
/// running.
pub fn follow(
    ws: &Workspace,
    h: &mut History,
    s: &RunSpec<'_>,
    mut run: Run,
    step: aether_platform::StepInfo,
) -> Result<RunOutcome> {
    let (rt, b) = (ws.runtime(), s.b);
    let poll = Poll {
        deadline: Duration::from_secs(s.timeout_s),
        ..Poll::default()
    };
    let (cid, sid) = (s.cluster.cluster_id.clone(), step.step_id.clone());
    let cancel = ws.cancel().clone();
    let waited = rt.block_on(async {
        let wait = aether_platform::wait_step(b, &cid, &sid, poll, |s, t| {
            ws.emit(Event::StepState {
                step_id: &s.step_id,
                state: s.state.as_str(),
                elapsed: t,
            })
        });
        tokio::select! {
            r = wait => Ok(r),
            s = cancel.cancelled() => Err(s),
        }
    });
    let signal: Option<Stop> = waited.as_ref().err().copied();
    let run_id = run.run_id;
    // a step given up on is cancelled (the intent recorded first); a failed cancel is said and
    // recorded, never lost
    let mut cancel = |why: &str| -> (String, aether_platform::StepInfo) {
        if let Err(e) = h.set_run_intent(run_id, Some("cancel")) {
            ws.warn(&format!(
                "run {run_id}: the cancel could not be recorded: {e}"
            ));
        }
        aether_core::owner::crash_point("cancel:before-call");
        match rt.block_on(b.cancel(&cid, &sid)) {
            Ok(i) if i.state.is_final() => (why.to_string(), i),
            Ok(mut i) => {
                let still = i.state.as_str();
                i.end_ms = Some(aether_platform::now_ms());
                i.failure_reason = Some(format!("{why}; the cancelled step is still {still}"));
                ws.warn(&format!(
                    "step {sid} was cancelled but is still {still}; it may still be running"
                ));
                (why.to_string(), i)
            }
            Err(e) => {
                let mut i = step.clone();
                i.end_ms = Some(aether_platform::now_ms());
                i.failure_reason = Some(format!("{why}; cancelling the step failed: {e}"));
                ws.warn(&format!(
                    "cancelling step {sid} failed: {e}; it may still be running"
                ));
                (why.to_string(), i)
            }
        }
    };
    let (status, info) = match waited {
        // interrupted: the step is cancelled, the run recorded as such
        Err(sig) => {
            ws.note(&format!("{}: cancelling step {sid}", sig.name()));
            let (st, mut i) = cancel("INTERRUPTED");
            i.failure_reason
                .get_or_insert(format!("{}: cancelled", sig.name()));
            (st, i)
        }
        Ok(Err(aether_platform::PlatformError::Deadline { .. })) => {
            let (st, mut i) = cancel("TIMED_OUT");
            i.failure_reason.get_or_insert(format!(
                "did not finish within --timeout_s {} s: cancelled",
                s.timeout_s
            ));
            (st, i)
        }
        Ok(Err(e)) => {
            // polling failed: the step is not left running unwatched
            let (_, i) = cancel("FAILED");
            run.status = "FAILED".into();
            run.end_ms = i.end_ms;
            run.failure_reason = Some(match i.failure_reason {
                Some(ref c) if c.contains("cancelling the step failed") => format!("{e}; {c}"),
                _ => format!("{e}; the step was cancelled"),
            });
            keep_cancel(ws, &mut run, &i);
            h.finish_run(&run)?;
            return Err(e.into());
        }
        Ok(Ok(i)) => (i.state.as_str().to_string(), i),
    };
    aether_core::owner::crash_point("follow:after-end");
    complete(ws, h, s, &mut run, status, &info, ws.log_wait(s.platform))?;
    Ok(RunOutcome {
        state: info.state,
        run,
        signal,
    })
}

/// The cancel a run's record keeps asked: none when its step has stopped; `cancel` when it
/// still runs after one (the next command's reconciliation finishes it), said.
fn keep_cancel(ws: &Workspace, run: &mut Run, info: &aether_platform::StepInfo) {
    run.intent = (!info.state.is_final()).then(|| "cancel".to_string());
    if run.intent.is_some() {
        ws.warn(&format!(
            "run {}: its step {} may still run; the next aether command on the history \
             cancels it again (aether history check)",
            run.run_id, info.step_id
        ));
    }
}

/// Complete the record of a run whose step ended (`info`; `status` as recorded): its logs
/// (a completed run's event log waited for up to `wait`, a failed run's stderr), its duration
/// from its event log, its cost; recorded, and told. The one path for a run followed to its
/// end and for one reconciliation found ended.
pub fn complete(
    ws: &Workspace,
    h: &mut History,
    s: &RunSpec<'_>,
    run: &mut Run,
    status: String,
    info: &aether_platform::StepInfo,
    wait: Duration,
) -> Result<()> {
    let (rt, b, cluster) = (ws.runtime(), s.b, s.cluster);
    let (cid, sid) = (cluster.cluster_id.clone(), info.step_id.clone());
    run.status = status;
    run.step_id.get_or_insert(sid.clone());
    run.start_ms = info.start_ms.or(run.start_ms);
    run.end_ms = info.end_ms;
    run.failure_reason = info.failure_reason.clone();
    // the logs: a completed run's event log is waited for, a failed run's stderr
    let completed = info.state == StepState::Completed;
    // (a step cancelled on a deadline or a signal gets one look, no wait)
    let (ev_wait, drv_wait) = match info.state {
        StepState::Completed => (wait, Duration::ZERO),
        StepState::Failed => (Duration::ZERO, wait.min(Duration::from_secs(120))),
        _ => (Duration::ZERO, Duration::ZERO),
    };
    let mut log_errors = Vec::new();
    match wait_for(rt, drv_wait, || b.driver_log(&cid, &sid)) {
        Ok(l) => run.driver_log = l,
        Err(e) => log_errors.push(format!("driver log: {e}")),
    }
    match wait_for(rt, ev_wait, || b.event_log(&cid, &sid)) {
        Ok(l) => run.event_log = l,
        Err(e) => log_errors.push(format!("event log: {e}")),
    }
    if completed && run.event_log.is_none() && log_errors.is_empty() {
        log_errors.push(format!(
            "event log: none found within {} s",
            ev_wait.as_secs()
        ));
    }
    for e in &log_errors {
        ws.warn(&format!("run {}: {e}", run.run_id));
    }
    if !log_errors.is_empty() {
        run.details["log_errors"] = serde_json::json!(log_errors);
    }
    let mut figures = Figures::default();
    if completed && let Some(l) = run.event_log.as_deref() {
        figures = run_figures(ws, l);
        run.duration_ms = figures.duration_ms;
        if let Some(idle) = &figures.idle {
            run.details["idle"] = idle.clone();
        }
    }
    if run.duration_ms.is_none() {
        run.duration_ms = info.start_ms.zip(info.end_ms).map(|(s, e)| e - s);
    }
    let mut eks_cost = None;
    if aether_platform::Capabilities::of(s.platform).cost == aether_platform::CostBasis::PodShare {
        if figures.duration_ms.is_none() {
            // no event log (a failed run): its wall time as the driver's and one executor's
            figures.duration_ms = run.duration_ms;
            figures.executor_ms = run.duration_ms.into_iter().collect();
        }
        eks_cost = eks_run_cost(ws, cluster, &figures);
        if let Some(c) = &eks_cost {
            run.cost_usd = Some(c.total_usd);
            run.details["cost"] = serde_json::to_value(c)?;
        }
    } else {
        run.cost_usd = run.duration_ms.and_then(|d| run_cost(ws, cluster, d));
    }
    keep_cancel(ws, run, info);
    h.finish_run(run)?;
    ws.emit(Event::RunFinished(run));
    if let Some(c) = &eks_cost {
        ws.note(&format!(
            "  cost: ${:.4} = executors ${:.4} ({:.4} node-h at ${:.3}/h, {}) + driver ${:.4} \
             ({:.4} node-h on-demand) + consolidateAfter tail ${:.4}",
            c.total_usd,
            c.executor_usd,
            c.executor_node_hours,
            c.executor_usd_per_hour,
            c.executor_price,
            c.driver_usd,
            c.driver_node_hours,
            c.tail_usd
        ));
    } else if let Some(c) = run.cost_usd {
        let spot = cluster.groups.iter().any(|g| g.market == "SPOT");
        ws.note(&format!(
            "  cost: ${c:.4} (the run's hours x the cluster's nodes' hourly EC2 + EMR price{})",
            if spot {
                "; spot nodes at the on-demand price, an upper bound"
            } else {
                ""
            }
        ));
    }
    if let Some(r) = &run.failure_reason {
        ws.note(&format!("  reason: {r}"));
        if let Some(l) = &run.driver_log {
            ws.note(&format!("  driver log: {l}"));
            if let Ok(lines) = rt.block_on(aether_platform::log_tail(l, &ws.s3(), 12)) {
                for line in lines {
                    ws.note(&format!("    | {line}"));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use aether_core::ConfigFile;
    use aether_platform::ClusterSpec;

    /// The EKS cost of a real standalone log whose executors were added and removed, against
    /// the lifetimes read straight from its JSON events (ExecutorAdded until ExecutorRemoved,
    /// else ApplicationEnd; the app from ApplicationStart to ApplicationEnd).
    #[test]
    fn eks_cost_of_a_log_with_executors_added_and_removed() {
        let log = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../datasets/fixtures/analyze/app-20261130040123-0000.zstd"
        );
        let raw = zstd::decode_all(std::fs::File::open(log).unwrap()).unwrap();
        let (mut added, mut removed) = (BTreeMap::new(), BTreeMap::new());
        let (mut start, mut end) = (0i64, 0i64);
        for line in String::from_utf8(raw).unwrap().lines() {
            let e: serde_json::Value = serde_json::from_str(line).unwrap();
            let ts = e["Timestamp"].as_i64();
            match e["Event"].as_str().unwrap_or("") {
                "SparkListenerExecutorAdded" => {
                    added.insert(e["Executor ID"].as_str().unwrap().to_string(), ts.unwrap());
                }
                "SparkListenerExecutorRemoved" => {
                    removed.insert(e["Executor ID"].as_str().unwrap().to_string(), ts.unwrap());
                }
                "SparkListenerApplicationStart" => start = ts.unwrap(),
                "SparkListenerApplicationEnd" => end = ts.unwrap(),
                _ => {}
            }
        }
        assert!(!removed.is_empty(), "the fixture has executors removed");
        let lifetimes: Vec<i64> = added
            .iter()
            .map(|(id, a)| removed.get(id).copied().unwrap_or(end) - a)
            .collect();

        let ws = crate::workspace::Workspace::from_settings(
            ConfigFile::load(std::path::Path::new("/nonexistent/config.toml")).unwrap(),
            None,
        )
        .unwrap();
        let f = run_figures(&ws, log);
        let mut got = f.executor_ms.clone();
        let mut want = lifetimes.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want);
        assert_eq!(f.duration_ms, Some(end - start));

        let d = tempfile::tempdir().unwrap();
        let prices = d.path().join("spot.csv");
        std::fs::write(
            &prices,
            "region,instance,ec2_usd_per_hour,emr_usd_per_hour,spot_usd_per_hour\n\
             us-east-1,g4dn.2xlarge,0.752,0.188,0.2256\n",
        )
        .unwrap();
        let mut cfg = ConfigFile::load(&d.path().join("config.toml")).unwrap();
        cfg.config
            .set(
                "platform.emr_eks.pricing_file",
                &prices.display().to_string(),
            )
            .unwrap();
        cfg.config
            .set("platform.emr_eks.consolidate_after_s", "45")
            .unwrap();
        let group = |role: &str, t: &str, market: &str| aether_platform::NodeGroup {
            role: role.into(),
            instance_type: t.into(),
            count: 1,
            market: market.into(),
        };
        let cluster = ClusterInfo {
            cluster_id: "eks-1".into(),
            backend: "emr-eks".into(),
            release_label: None,
            custom_ami: None,
            state: aether_platform::ClusterState::Waiting,
            spec: ClusterSpec::default(),
            created_ms: 0,
            ended_ms: None,
            state_reason: None,
            groups: vec![
                group("DRIVER", "m5d.xlarge", "ON_DEMAND"),
                group("EXECUTOR", "g4dn.2xlarge", "SPOT"),
            ],
        };
        let ws = Workspace::from_settings(cfg, None).unwrap();
        let c = eks_run_cost(&ws, &cluster, &f).unwrap();
        let h = |ms: i64| ms as f64 / 3_600_000.0;
        let exec = h(lifetimes.iter().sum()) * 0.2256;
        // the driver at m5d.xlarge's EC2 price (the catalog's), on-demand
        let drv = h(end - start) * 0.226;
        let tail = 45.0 / 3600.0 * (lifetimes.len() as f64 * 0.2256 + 0.226);
        assert!((c.executor_usd - exec).abs() < 1e-12, "{c:?}");
        assert!((c.driver_usd - drv).abs() < 1e-12, "{c:?}");
        assert!((c.tail_usd - tail).abs() < 1e-12, "{c:?}");
        assert!((c.total_usd - (exec + drv + tail)).abs() < 1e-12);
        assert_eq!(c.executor_price, "spot");

        // no spot price for the pool: on-demand EC2 (no EMR uplift on EKS)
        let mut on_demand = cluster.clone();
        on_demand.groups[1].instance_type = "g5.xlarge".into();
        let c = eks_run_cost(&ws, &on_demand, &f).unwrap();
        assert!(c.executor_price.starts_with("on-demand"), "{c:?}");
        assert!(
            (c.executor_usd - h(lifetimes.iter().sum()) * 1.006).abs() < 1e-12,
            "{c:?}"
        );
    }
}
