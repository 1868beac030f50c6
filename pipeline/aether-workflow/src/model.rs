//! Train or evaluate a QualX-style booster on pairs of CPU and GPU event logs of the same
//! workloads (label: ln(CPU SQL duration / GPU SQL duration) per SQL; inputs: the CPU run's
//! QualX features, the platform model's feature names).

use crate::error::{Context, Result};
use aether_predict::model::Model;
use aether_predict::platform::ModelPlatform;
use aether_predict::train;
use std::path::Path;

/// What a training did.
pub struct Trained {
    /// SQL executions trained on.
    pub rows: usize,
    /// Pairs read.
    pub pairs: usize,
    /// Pairs or SQL executions left out, each with why.
    pub warnings: Vec<String>,
}

impl Trained {
    /// What the training did, in a line.
    pub fn summary(&self, rounds: u32, out: &Path) -> String {
        format!(
            "trained on {} SQL executions from {} pairs ({} skipped), {rounds} rounds: {}",
            self.rows,
            self.pairs,
            self.warnings.len(),
            out.display()
        )
    }
}

/// An evaluation as a table in `format`, and its summary line (MAPE).
pub fn evaluation_text(
    ev: &train::Evaluation,
    format: aether_engine::OutputFormat,
) -> Result<(String, String)> {
    let batch = aether_predict::report::evaluation(ev)?;
    let text = aether_engine::render(&batch.schema(), std::slice::from_ref(&batch), format)?;
    Ok((
        text.trim_end().to_string(),
        format!(
            "{} SQL executions: MAPE {:.1} %, duration-weighted {:.1} %",
            ev.sqls.len(),
            100.0 * ev.mape,
            100.0 * ev.weighted_mape
        ),
    ))
}

/// Train a booster of `rounds` rounds on the pairs of `pairs_csv`, written to `out`.
pub fn train(
    pairs_csv: &Path,
    out: &Path,
    rounds: u32,
    platform: ModelPlatform,
) -> Result<Trained> {
    let names = Model::builtin(platform)?.feature_names().to_vec();
    let pairs = train::read_pairs(pairs_csv)?;
    let (rows, warnings) = train::training_rows(&pairs, &names, platform)?;
    train::train(&rows, &names, rounds, out)?;
    Ok(Trained {
        rows: rows.len(),
        pairs: pairs.len(),
        warnings,
    })
}

/// Predicted against actual SQL speedups on the pairs of `pairs_csv`, with `model` (default:
/// the platform's built-in one); the pairs or SQLs left out.
pub fn evaluate(
    pairs_csv: &Path,
    model: Option<&Path>,
    platform: ModelPlatform,
) -> Result<(train::Evaluation, Vec<String>)> {
    let m = match model {
        Some(p) => Model::load(p),
        None => Model::builtin(platform),
    }?;
    let pairs = train::read_pairs(pairs_csv)?;
    let (rows, warnings) = train::training_rows(&pairs, m.feature_names(), platform)?;
    Ok((train::evaluate(&m, &rows)?, warnings))
}

/// Where `model calibrate --save` keeps the calibration: `<aether home>/calibration.json`.
pub fn calibration_path(ws: &crate::workspace::Workspace) -> std::path::PathBuf {
    ws.home().join("calibration.json")
}

/// The fleet's (predicted, measured) speedup pairs: every job of the history with a CPU run
/// and a successful GPU run, QualX's own prediction (before any calibration) beside the CPU
/// run's duration over the best GPU run's.
pub fn measured_pairs(h: &aether_core::History) -> Result<Vec<aether_predict::calibrate::Pair>> {
    // qualify asks this every run: a fleet never tested on GPUs costs one query, not the
    // whole overview
    if !h.has_measured_gpu_run()? {
        return Ok(Vec::new());
    }
    let qualx: std::collections::HashMap<i64, f64> = h
        .list()?
        .into_iter()
        .filter_map(|j| {
            let raw = j.range.as_ref().and_then(|r| r["qualx_speedup"].as_f64());
            Some((j.job_id, raw.or(j.speedup)?))
        })
        .collect();
    Ok(aether_report::model::overview(h)?
        .jobs
        .iter()
        .filter_map(|r| {
            Some(aether_predict::calibrate::Pair {
                id: format!("job {}", r.job_id),
                predicted: *qualx.get(&r.job_id)?,
                measured: r.measured_speedup?,
            })
        })
        .collect())
}

/// What qualify's ranges come from for `model`: its saved calibration, else the fleet's
/// measured pairs (a history or file that cannot be read is warned about: the prior then).
pub fn trust(ws: &crate::workspace::Workspace, model: &str) -> aether_predict::calibrate::Trust {
    let mut t = aether_predict::calibrate::Trust::default();
    let path = calibration_path(ws);
    match std::fs::read_to_string(&path) {
        Ok(text) => match serde_json::from_str::<aether_predict::calibrate::Calibration>(&text) {
            Ok(c) if c.model == model => t.calibration = Some(c),
            Ok(c) => ws.note(&format!(
                "{}: a calibration of {}, not of {model}: not used",
                path.display(),
                c.model
            )),
            Err(e) => ws.warn(&format!("{}: not a calibration: {e}", path.display())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => ws.warn(&format!("{}: {e}", path.display())),
    }
    if t.calibration.is_none() {
        match ws.history().and_then(|h| measured_pairs(&h)) {
            Ok(p) => t.pairs = p,
            Err(e) => ws.warn(&format!("the fleet's measured speedups: {e:#}")),
        }
    }
    t
}

/// What `model calibrate` did.
pub struct Calibrated {
    pub calibration: aether_predict::calibrate::Calibration,
    /// Pairs from the history and from the file.
    pub from_history: usize,
    pub from_file: usize,
    /// Where it was saved; else why not.
    pub saved: std::result::Result<std::path::PathBuf, String>,
}

impl Calibrated {
    pub fn text(&self) -> String {
        let c = &self.calibration;
        let h = &c.held_out;
        let pct = c.coverage * 100.0;
        let saved = match &self.saved {
            Ok(p) => format!(
                "saved: {}; later qualify runs with {} use it (and say so)",
                p.display(),
                c.model
            ),
            Err(why) => format!("not saved: {why}"),
        };
        format!(
            "calibration of {} on {} pairs ({} from the history, {} from the file): \
             speedup = {:.3} x QualX^{:.3}\n\
             held out ({}): QualX's error {:.1}% (mean |ln| {:.3}), calibrated {:.1}% ({:.3})\n\
             {pct:.0}% range: x{:.3} to x{:.3} of the calibrated speedup\n{saved}",
            c.model,
            c.pairs,
            self.from_history,
            self.from_file,
            c.a.exp(),
            c.b,
            h.scheme,
            h.qualx_mape * 100.0,
            h.qualx_log_error,
            h.calibrated_mape * 100.0,
            h.calibrated_log_error,
            c.residual_low.exp(),
            c.residual_high.exp(),
        )
    }
}

/// `model calibrate`: fit a correction of `model`'s speedups (default: the built-in model of
/// the settings' platform) on the history's measured pairs and `pairs` (a CSV), report its
/// held-out error against QualX's, and with `save` keep it for later qualify runs — only when
/// it predicts better held out. Too few pairs: an error saying so.
pub fn calibrate(
    ws: &crate::workspace::Workspace,
    pairs: Option<&Path>,
    save: bool,
) -> Result<Calibrated> {
    let model = format!("builtin:{}", ws.selected_platform().as_str());
    let mut all = measured_pairs(&ws.history()?)?;
    let from_history = all.len();
    if let Some(p) = pairs {
        let text = std::fs::read_to_string(p).context(p.display())?;
        all.extend(
            aether_predict::calibrate::read_pairs_csv(&text, &p.display().to_string())
                .map_err(|e| crate::error::invalid!("{e}"))?,
        );
    }
    let calibration = aether_predict::calibrate::fit(&all, &model, aether_platform::now_ms())
        .map_err(|e| crate::error::invalid!("not calibrated: {e}"))?;
    let saved = if !calibration.improves() {
        Err("held out, it predicts no better than QualX as is".to_string())
    } else if !save {
        Err("--save keeps it for later qualify runs".to_string())
    } else {
        let path = calibration_path(ws);
        aether_predict::report::write_atomic(
            &path,
            serde_json::to_string_pretty(&calibration)?.as_bytes(),
        )?;
        Ok(path)
    };
    Ok(Calibrated {
        from_file: all.len() - from_history,
        from_history,
        calibration,
        saved,
    })
}
