//! Qualify into the job history: the prediction platform's model, prices and GPU families from
//! the settings; logs (and a CPU run's step, read from the platform) judged; every app recorded
//! as soon as it is judged (a job, its cluster shape and its bootstrap config), and a step
//! recorded as the job's definition (what `submit` re-runs) and its CPU run.

use crate::error::{Context, Result, invalid};
use crate::workspace::Workspace;
use aether_core::RunOn;
use aether_predict::outputs::{Finished, Outputs};
use aether_predict::qualify::{AppQualification, QualifyOptions, Status};
use std::path::PathBuf;

/// What to qualify, and how.
#[derive(Default)]
pub struct QualifyRequest {
    /// CPU event logs: files, directories, globs, `.txt` lists, `s3://` URLs.
    pub event_log: Vec<String>,
    /// A CPU run on the platform: (cluster id, step id) — an EMR step on a `j-…` cluster, or an
    /// EMR on EKS job run on a virtual cluster.
    pub step: Option<(String, String)>,
    /// The platform to predict for (default `core.selected_platform`).
    pub platform: Option<aether_predict::platform::ModelPlatform>,
    /// A booster instead of the platform's built-in model.
    pub model: Option<PathBuf>,
    /// Thresholds and settings (`--set NAME=VALUE`).
    pub settings: aether_engine::AnalysisSettings,
    /// Top reasons (SHAP) kept per app.
    pub explain: usize,
    pub ingest: aether_ingest::IngestOptions,
    /// Small logs judged together, at most this many (0: the default).
    pub batch_logs: usize,
    /// Keep each app's derived tables (a fleet warehouse).
    pub derive: bool,
    /// `--output DIR`: the files of every app.
    pub output: Option<PathBuf>,
    /// What the console prints (a table shows up to `outputs::CONSOLE_APPS` apps).
    pub format: aether_engine::OutputFormat,
}

/// The options qualify runs with, resolved from the request and the settings; the model's
/// feature names; the model's name as the history records it.
pub fn options(
    ws: &Workspace,
    req: QualifyRequest,
) -> Result<(QualifyOptions, Vec<String>, String)> {
    let platform = req
        .platform
        .unwrap_or_else(|| ws.selected_platform().into());
    let model = match &req.model {
        Some(p) => aether_predict::model::Model::load(p),
        None => aether_predict::model::Model::builtin(platform),
    }?;
    let names = model.feature_names().to_vec();
    let model_name = req
        .model
        .as_deref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| format!("builtin:{platform}"));
    // a booster given by the user must need only features aether computes (the built-in ones
    // do: aether-predict's `builtin_models_need_only_computed_features`)
    if let Some(path) = &req.model
        && let Err(e) = aether_predict::qualx::check_features(&names)
    {
        return Err(invalid!("{}: {e}", path.display()));
    }
    let catalog = if platform.priced_as_emr() {
        let cat = aether_predict::cluster::Catalog::load(&ws.price_terms())?;
        ws.note(&format!("costs at {}", cat.prices.label));
        Some(cat)
    } else {
        None
    };
    let opts = QualifyOptions {
        platform,
        model: std::sync::Mutex::new(model),
        settings: req.settings,
        explain: req.explain,
        ingest: req.ingest,
        catalog,
        region: ws.region_of(RunOn::Emr),
        gpu_families: ws.gpu_families(),
        batch_logs: if req.batch_logs == 0 {
            aether_predict::qualify::BATCH_LOGS
        } else {
            req.batch_logs
        },
        derive: req.derive,
        trust: crate::model::trust(ws, &model_name),
    };
    ws.note(&opts.trust.describe());
    Ok((opts, names, model_name))
}

/// Results on their way out, from the worker threads: in batches of [`SINK_BATCH`] apps or
/// [`SINK_WAIT`], whichever comes first, each recorded in the history in one transaction (when
/// there is one), then handed to the outputs. A run killed midway keeps every batch it
/// recorded.
struct Sink<'a> {
    ws: &'a Workspace,
    outputs: Outputs,
    history: Option<(
        &'a std::sync::Mutex<aether_core::History>,
        &'a QualifyOptions,
        &'a str,
    )>,
    /// The step's event log: the job id recorded for it is kept.
    step_log: Option<&'a str>,
    step_jobs: std::sync::Mutex<Vec<i64>>,
    pending: std::sync::Mutex<Pending>,
    /// The first error the outputs met (no more is given to them after it).
    failed: std::sync::Mutex<Option<aether_predict::error::PredictError>>,
}

/// The apps not recorded yet (by key), and when the first of them came.
type Pending = (Vec<(u64, AppQualification)>, Option<std::time::Instant>);

/// Apps recorded in one history transaction at most…
const SINK_BATCH: usize = 64;
/// …and how long a batch collects apps (it is recorded with the first app after that).
const SINK_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

impl<'a> Sink<'a> {
    /// To the outputs alone (no history, no step).
    fn new(ws: &'a Workspace, outputs: Outputs) -> Sink<'a> {
        Sink {
            ws,
            outputs,
            history: None,
            step_log: None,
            step_jobs: Default::default(),
            pending: Default::default(),
            failed: Default::default(),
        }
    }

    /// The logs the selection left out, as SKIPPED results after the `judged` ones (the logs
    /// read and the unreadable inputs, keyed first by `qualify_logs`).
    fn left_out(&self, judged: usize, skipped: Vec<aether_ingest::Skipped>) {
        for (i, q) in aether_predict::qualify::left_out(skipped).enumerate() {
            self.add((judged + i) as u64, q);
        }
    }

    fn add(&self, key: u64, q: AppQualification) {
        let full = match self.pending.lock() {
            Ok(mut p) => {
                let (apps, since) = &mut *p;
                apps.push((key, q));
                let first = *since.get_or_insert_with(std::time::Instant::now);
                (apps.len() >= SINK_BATCH || first.elapsed() >= SINK_WAIT).then(|| {
                    *since = None;
                    std::mem::take(apps)
                })
            }
            Err(_) => None,
        };
        if let Some(batch) = full {
            self.flush(batch);
        }
    }

    fn flush(&self, mut batch: Vec<(u64, AppQualification)>) {
        if let Some((history, opts, model)) = self.history {
            let mut qualified: Vec<&mut AppQualification> = batch
                .iter_mut()
                .map(|(_, q)| q)
                .filter(|q| q.status == Status::Success)
                .collect();
            let errors =
                aether_predict::history::record_all(history, &mut qualified, opts.platform, model);
            for (i, e) in errors {
                let log = &qualified[i].event_log;
                self.ws.warn(&format!("{log}: not recorded: {e}"));
            }
        }
        if let Some(step) = self.step_log {
            let same = |l: &str| l.trim_end_matches('/') == step.trim_end_matches('/');
            if let Ok(mut jobs) = self.step_jobs.lock() {
                jobs.extend(
                    batch
                        .iter()
                        .filter(|(_, q)| same(&q.event_log))
                        .filter_map(|(_, q)| q.job_id),
                );
            }
        }
        // the apps' rows are rendered side by side (the outputs lock only to append them)
        let stopped = || self.failed.lock().map_or(true, |f| f.is_some());
        for (key, q) in batch {
            if stopped() {
                return;
            }
            if let Err(e) = self.outputs.add(key, q)
                && let Ok(mut f) = self.failed.lock()
            {
                f.get_or_insert(e);
            }
        }
    }

    /// The last batch flushed; what the outputs say at the end.
    fn finish(self) -> Result<(Finished, Vec<i64>)> {
        let rest = self
            .pending
            .lock()
            .map(|mut p| std::mem::take(&mut p.0))
            .unwrap_or_default();
        self.flush(rest);
        if let Some(e) = self.failed.into_inner().ok().flatten() {
            return Err(e.into());
        }
        let jobs = self.step_jobs.into_inner().unwrap_or_default();
        Ok((self.outputs.finish()?, jobs))
    }
}

/// Qualify the request's logs (and step) into the history, writing `--output DIR`'s files
/// (`req.output`) as the apps are judged; what the console shows, and the model's feature
/// names.
pub fn qualify(ws: &Workspace, mut req: QualifyRequest) -> Result<(Finished, Vec<String>)> {
    let step = req.step.take();
    let (output, format) = (req.output.take(), req.format);
    let mut inputs = std::mem::take(&mut req.event_log);
    let (opts, names, model_name) = options(ws, req)?;
    let history = std::sync::Mutex::new(ws.history()?);
    // a CPU run's step: its event log joins the inputs, its definition is recorded after
    let step = match &step {
        Some((cluster, step)) => {
            let s = crate::source::read_step(ws, cluster, step)?;
            inputs.push(s.event_log.clone());
            Some(s)
        }
        None => None,
    };
    let rt = aether_ingest::io_runtime();
    let found = aether_ingest::discover(&inputs, &opts.ingest, &rt);
    let mut sink = Sink::new(ws, Outputs::new(output.as_deref(), &names, format)?);
    sink.history = Some((&history, &opts, &model_name));
    sink.step_log = step.as_ref().map(|s| s.event_log.as_str());
    let judged = found.logs.len() + found.errors.len();
    aether_predict::qualify::qualify_logs(
        &found.logs,
        found.errors,
        &opts,
        &rt,
        |k, q, _, _, _| sink.add(k, q),
    );
    sink.left_out(judged, found.skipped);
    let (finished, step_jobs) = sink.finish()?;
    if let Some(src) = &step {
        let mut h = history.lock().unwrap_or_else(|e| e.into_inner());
        for job_id in step_jobs {
            if let Err(e) = crate::source::record_step_source(ws, &mut h, job_id, src) {
                ws.warn(&format!("step {}: not recorded: {e:#}", src.step.step_id));
            }
        }
    }
    Ok((finished, names))
}

/// What `qualify --warehouse` did.
pub struct WarehouseQualified {
    /// What the console shows of the apps judged.
    pub finished: Finished,
    /// Logs read and written.
    pub written: usize,
    /// …of which with tables (an app's events).
    pub with_tables: usize,
    /// Uncompressed bytes read.
    pub bytes: u64,
    /// Logs the warehouse already held (not read again).
    pub skipped: usize,
    /// Inputs that could not be listed or read.
    pub source_errors: Vec<aether_ingest::SourceError>,
    /// Logs judged but not written, each named with why.
    pub failures: Vec<String>,
}

impl WarehouseQualified {
    /// What was read, judged and skipped, in one line (`took`: the whole command's time).
    pub fn summary(&self, location: &str, took: std::time::Duration) -> String {
        aether_engine::ingested_line(
            (self.written, self.with_tables),
            Some(self.finished.qualified),
            self.bytes,
            took.as_secs_f64(),
            self.skipped,
            location,
        )
    }
}

/// `qualify --warehouse`: judge the logs the warehouse does not hold yet and write each one's
/// raw tables, derived tables and marker as soon as it is judged (a task killed midway keeps
/// what it finished; its retry skips it), each app's result to `outputs`. `force`: read again
/// the logs it holds.
pub fn qualify_to_warehouse(
    ws: &Workspace,
    location: &str,
    event_log: &[String],
    force: bool,
    opts: &QualifyOptions,
    names: &[String],
    outputs: Outputs,
) -> Result<WarehouseQualified> {
    let rt = aether_ingest::io_runtime();
    let wh = aether_engine::Warehouse::open(location, &opts.ingest.s3).context(location)?;
    let pending = wh
        .pending(event_log, &opts.ingest, force, &rt)
        .context(location)?;
    // (logs written, with tables, bytes)
    let written = std::sync::Mutex::new((0usize, 0usize, 0u64));
    let failures = std::sync::Mutex::new(Vec::<String>::new());
    let handle = rt.handle().clone();
    let sink = Sink::new(ws, outputs);
    let judged = pending.todo.len() + pending.source_errors.len();
    aether_predict::qualify::qualify_logs(
        &pending.todo,
        pending.source_errors.clone(),
        opts,
        &rt,
        |key, mut q, read, _, _| {
            if let Some((log, out)) = read {
                let res = aether_predict::report::warehouse_tables(&q, names).and_then(|t| {
                    handle
                        .block_on(wh.write_log(log, out, &t))
                        .map_err(aether_predict::error::PredictError::from)
                });
                if let Err(e) = res
                    && let Ok(mut f) = failures.lock()
                {
                    f.push(format!("{}: not written to {location}: {e:#}", log.display));
                }
                if let Ok(mut w) = written.lock() {
                    w.0 += 1;
                    w.1 += usize::from(out.app.is_some());
                    w.2 += out.bytes;
                }
            }
            // written: a fleet shard's memory stays bounded by its largest app
            q.derived = Vec::new();
            sink.add(key, q);
        },
    );
    if let Err(e) = rt.block_on(wh.write_source_errors(event_log, &pending.source_errors)) {
        ws.warn(&format!(
            "{location}: the unreadable inputs are not recorded: {e}"
        ));
    }
    sink.left_out(judged, pending.left_out);
    let (finished, _) = sink.finish()?;
    let (written, with_tables, bytes) = written.into_inner().unwrap_or_default();
    Ok(WarehouseQualified {
        finished,
        written,
        with_tables,
        bytes,
        skipped: pending.skipped.len(),
        source_errors: pending.source_errors,
        failures: failures.into_inner().unwrap_or_default(),
    })
}
