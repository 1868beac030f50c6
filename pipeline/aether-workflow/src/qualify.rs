//! Qualify into the job history: the prediction platform's model, prices and GPU families from
//! the settings; logs (and a CPU run's step, read from the platform) judged; every app recorded
//! as soon as it is judged (a job, its cluster shape and its bootstrap config), and a step
//! recorded as the job's definition (what `submit` re-runs) and its CPU run.

use crate::error::{Context, Result, invalid};
use crate::workspace::Workspace;
use aether_core::RunOn;
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

/// Qualify the request's logs (and step) into the history; every app's result, and the
/// model's feature names (what `--output` writes).
pub fn qualify(
    ws: &Workspace,
    mut req: QualifyRequest,
) -> Result<(Vec<AppQualification>, Vec<String>)> {
    let step = req.step.take();
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
    let results = aether_predict::qualify::qualify_inputs(&inputs, &opts, |q, _done, _total| {
        // each app is recorded as soon as it is judged: a run killed midway keeps what it did
        if q.status == Status::Success {
            match aether_predict::history::record(&history, q, opts.platform, &model_name) {
                Ok(r) => {
                    q.job_id = Some(r.job_id);
                    q.shape_id = Some(r.qualification_id);
                    q.config_id = Some(r.config_id);
                }
                Err(e) => ws.warn(&format!("{}: not recorded: {e}", q.event_log)),
            }
        }
    });
    if let Some(src) = &step {
        let same = |l: &str| l.trim_end_matches('/') == src.event_log.trim_end_matches('/');
        let mut h = history.lock().unwrap_or_else(|e| e.into_inner());
        for q in results.iter().filter(|q| same(&q.event_log)) {
            let Some(job_id) = q.job_id else { continue };
            if let Err(e) = crate::source::record_step_source(ws, &mut h, job_id, src) {
                ws.warn(&format!("step {}: not recorded: {e:#}", src.step.step_id));
            }
        }
    }
    Ok((results, names))
}

/// What `qualify --warehouse` did.
pub struct WarehouseQualified {
    /// Every app judged.
    pub results: Vec<AppQualification>,
    /// The logs read and written (with their problems).
    pub written: Vec<aether_ingest::LogReport>,
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
        let tables = self.written.iter().filter(|r| r.app_id.is_some()).count();
        let bytes: u64 = self.written.iter().map(|r| r.bytes).sum();
        let judged = self.results.iter().filter(|r| r.status == Status::Success);
        format!(
            "ingested {} log(s) ({} with tables, {} qualified, {:.1} MB uncompressed, {:.2} s), skipped {} already in {}",
            self.written.len(),
            tables,
            judged.count(),
            bytes as f64 / 1e6,
            took.as_secs_f64(),
            self.skipped,
            location
        )
    }
}

/// `qualify --warehouse`: judge the logs the warehouse does not hold yet and write each one's
/// raw tables, derived tables and marker as soon as it is judged (a task killed midway keeps
/// what it finished; its retry skips it). `force`: read again the logs it holds.
pub fn qualify_to_warehouse(
    ws: &Workspace,
    location: &str,
    event_log: &[String],
    force: bool,
    opts: &QualifyOptions,
    names: &[String],
) -> Result<WarehouseQualified> {
    let rt = aether_ingest::io_runtime();
    let wh = aether_engine::Warehouse::open(location, &opts.ingest.s3).context(location)?;
    let pending = wh
        .pending(event_log, &opts.ingest, force, &rt)
        .context(location)?;
    let written = std::sync::Mutex::new(Vec::new());
    let failures = std::sync::Mutex::new(Vec::<String>::new());
    let handle = rt.handle().clone();
    let results = aether_predict::qualify::qualify_logs(
        &pending.todo,
        pending.source_errors.clone(),
        opts,
        &rt,
        |q, read, _, _| {
            let Some((log, out)) = read else { return };
            let res = aether_predict::report::warehouse_tables(q, names).and_then(|t| {
                handle
                    .block_on(wh.write_log(log, out, &t))
                    .map_err(aether_predict::error::PredictError::from)
            });
            if let Err(e) = res
                && let Ok(mut f) = failures.lock()
            {
                f.push(format!("{}: not written to {location}: {e:#}", log.display));
            }
            // written: a fleet shard's memory stays bounded by its largest app
            q.derived = Vec::new();
            if let Ok(mut w) = written.lock() {
                w.push(aether_ingest::LogReport::of(log, out.clone()));
            }
        },
    );
    if let Err(e) = rt.block_on(wh.write_source_errors(event_log, &pending.source_errors)) {
        ws.warn(&format!(
            "{location}: the unreadable inputs are not recorded: {e}"
        ));
    }
    let mut results = results;
    results.extend(aether_predict::qualify::left_out(pending.left_out));
    Ok(WarehouseQualified {
        results,
        written: written.into_inner().unwrap_or_default(),
        skipped: pending.skipped.len(),
        source_errors: pending.source_errors,
        failures: failures.into_inner().unwrap_or_default(),
    })
}
