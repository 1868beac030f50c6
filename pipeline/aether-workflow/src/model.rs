//! Train or evaluate a QualX-style booster on pairs of CPU and GPU event logs of the same
//! workloads (label: ln(CPU SQL duration / GPU SQL duration) per SQL; inputs: the CPU run's
//! QualX features, the platform model's feature names).

use aether_predict::model::Model;
use aether_predict::train;
use anyhow::Result;
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
pub fn train(pairs_csv: &Path, out: &Path, rounds: u32, platform: &str) -> Result<Trained> {
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
    platform: &str,
) -> Result<(train::Evaluation, Vec<String>)> {
    let m = match model {
        Some(p) => Model::load(p),
        None => Model::builtin(platform),
    }?;
    let pairs = train::read_pairs(pairs_csv)?;
    let (rows, warnings) = train::training_rows(&pairs, m.feature_names(), platform)?;
    Ok((train::evaluate(&m, &rows)?, warnings))
}
