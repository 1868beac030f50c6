//! Training and evaluating QualX-style boosters on pairs of runs of the same workload: a CPU event
//! log and a GPU (RAPIDS) event log. As QualX does, each SQL execution of the CPU run is matched to
//! the GPU run's SQL with the same id and description; the label is
//! `ln(CPU SQL duration / GPU SQL duration)` and the inputs are the CPU run's features.

use std::path::{Path, PathBuf};

use crate::error::{PredictError, Result};
use crate::invalid;
use serde::Serialize;
use xgb::{Booster, DMatrix, parameters::BoosterParameters};

use crate::model::Model;

/// A CPU log and a GPU log of the same workload.
#[derive(Clone, Debug)]
pub struct Pair {
    pub cpu_log: String,
    pub gpu_log: String,
}

/// Read `PAIRS.csv` (columns `cpu_log,gpu_log`; relative paths are relative to the file).
pub fn read_pairs(path: &Path) -> Result<Vec<Pair>> {
    let shown = path.display().to_string();
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut r = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_path(path)
        .map_err(|source| PredictError::Csv {
            what: format!("pairs {shown}: cannot read"),
            source,
        })?;
    let h = r
        .headers()
        .map_err(|source| PredictError::Csv {
            what: format!("pairs {shown}"),
            source,
        })?
        .clone();
    let col = |n: &str| {
        h.iter().position(|c| c == n).ok_or_else(|| {
            PredictError::Invalid(format!(
                "pairs {shown}: missing column {n:?} (expected cpu_log,gpu_log)"
            ))
        })
    };
    let (c, g) = (col("cpu_log")?, col("gpu_log")?);
    let resolve = |p: &str| -> String {
        let pb = PathBuf::from(p);
        if pb.is_absolute() || p.contains("://") {
            p.to_string()
        } else {
            base.join(pb).to_string_lossy().into_owned()
        }
    };
    let mut out = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let rec = rec.map_err(|source| PredictError::Csv {
            what: format!("pairs {shown}:{}", i + 2),
            source,
        })?;
        let (cpu, gpu) = (rec.get(c).unwrap_or(""), rec.get(g).unwrap_or(""));
        if cpu.is_empty() || gpu.is_empty() {
            invalid!(
                "pairs {shown}:{}: both cpu_log and gpu_log are needed",
                i + 2
            );
        }
        out.push(Pair {
            cpu_log: resolve(cpu),
            gpu_log: resolve(gpu),
        });
    }
    Ok(out)
}

/// One matched SQL: the CPU run's features and both durations.
#[derive(Clone, Debug, Serialize)]
pub struct TrainingRow {
    pub app_id: String,
    pub app_name: String,
    pub sql_id: i64,
    pub description: String,
    #[serde(skip)]
    pub features: Vec<f64>,
    pub cpu_duration_ms: f64,
    pub gpu_duration_ms: f64,
}

impl TrainingRow {
    /// `ln(cpu / gpu)`.
    pub fn label(&self) -> f64 {
        (self.cpu_duration_ms / self.gpu_duration_ms).ln()
    }
}

/// A session over one log (read outside any async context: ingest has its own runtime).
fn one_log_session(
    rt: &tokio::runtime::Runtime,
    log: &str,
) -> Result<aether_engine::SessionContext> {
    let ing = aether_ingest::ingest(&[log.to_string()], &Default::default());
    if !ing.any_app() {
        let why = ing
            .source_errors
            .first()
            .map(|e| e.error.clone())
            .or_else(|| {
                ing.logs
                    .first()
                    .and_then(|l| l.errors.first())
                    .map(|e| e.error.clone())
            })
            .unwrap_or_else(|| "no Spark application in it".into());
        invalid!("{log}: {why}");
    }
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing)?;
    rt.block_on(aether_engine::register_views(&ctx, &Default::default()))?;
    Ok(ctx)
}

/// The matched SQLs of every pair, with features in the order of `names`; a pair that cannot be
/// read or matched gives a warning, not an error.
pub fn training_rows(
    pairs: &[Pair],
    names: &[String],
    platform: crate::platform::ModelPlatform,
) -> Result<(Vec<TrainingRow>, Vec<String>)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(PredictError::io("an async runtime"))?;
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    for p in pairs {
        let sessions = one_log_session(&rt, &p.cpu_log)
            .and_then(|c| Ok((c, one_log_session(&rt, &p.gpu_log)?)));
        let (cpu, gpu) = match sessions {
            Ok(x) => x,
            Err(e) => {
                warnings.push(format!("{e:#}"));
                continue;
            }
        };
        let res: Result<Vec<TrainingRow>> = rt.block_on(async {
            let feats = crate::qualx::feature_rows(&cpu, names, platform).await?;
            let gsql = aether_engine::analyze::json_rows(
                &gpu,
                "SELECT sql_id, COALESCE(description, '') AS description, duration_ms
                 FROM sql_executions WHERE duration_ms > 0",
            )
            .await?;
            let mut out = Vec::new();
            for f in feats {
                let Some(cpu_ms) = f.duration_ms.filter(|d| *d > 0.0) else {
                    continue;
                };
                let hit = gsql.iter().find(|g| {
                    g.get("sql_id").and_then(|v| v.as_i64()) == Some(f.sql_id)
                        && g.get("description").and_then(|v| v.as_str()) == Some(&f.description)
                });
                if let Some(g) = hit {
                    out.push(TrainingRow {
                        app_id: f.app_id.clone(),
                        app_name: f.app_name.clone(),
                        sql_id: f.sql_id,
                        description: f.description.clone(),
                        features: f.values.clone(),
                        cpu_duration_ms: cpu_ms,
                        gpu_duration_ms: g
                            .get("duration_ms")
                            .and_then(|v| v.as_f64())
                            .unwrap_or(0.0),
                    });
                }
            }
            Ok(out)
        });
        match res {
            Ok(r) if r.is_empty() => warnings.push(format!(
                "{} / {}: no SQL of the CPU run matches the GPU run (same id and description)",
                p.cpu_log, p.gpu_log
            )),
            Ok(r) => rows.extend(r),
            Err(e) => warnings.push(format!("{e:#}")),
        }
    }
    Ok((rows, warnings))
}

/// The rows' features, row-major, as XGBoost's f32.
fn flat(rows: &[TrainingRow]) -> Vec<f32> {
    rows.iter()
        .flat_map(|r| r.features.iter().map(|v| *v as f32))
        .collect()
}

fn matrix(rows: &[TrainingRow], names: &[String]) -> Result<DMatrix> {
    let flat = flat(rows);
    let mut dm =
        DMatrix::from_dense(&flat, rows.len()).map_err(PredictError::model("training rows"))?;
    let labels: Vec<f32> = rows.iter().map(|r| r.label() as f32).collect();
    dm.set_labels(&labels)
        .map_err(PredictError::model("training labels"))?;
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    dm.set_feature_names(&refs)
        .map_err(PredictError::model("feature names"))?;
    Ok(dm)
}

/// Train a booster (`reg:squarederror` on the log speedup, QualX's objective) and save it as JSON.
pub fn train(rows: &[TrainingRow], names: &[String], rounds: u32, out: &Path) -> Result<()> {
    if rows.is_empty() {
        invalid!("no training rows: no SQL of the CPU logs matched a SQL of the GPU logs");
    }
    let dm = matrix(rows, names)?;
    let mut bst = Booster::new_with_cached_dmats(&BoosterParameters::default(), &[&dm])
        .map_err(PredictError::model("a new booster"))?;
    // start from the mean log speedup (what QualX's boost_from_average does for this objective)
    let mean = rows.iter().map(TrainingRow::label).sum::<f64>() / rows.len() as f64;
    let base = format!("{mean}");
    for (k, v) in [
        ("base_score", base.as_str()),
        ("objective", "reg:squarederror"),
        ("max_depth", "6"),
        ("eta", "0.1"),
        ("min_child_weight", "1"),
        ("subsample", "1"),
        ("seed", "0"),
        ("nthread", "1"),
    ] {
        bst.set_param(k, v)
            .map_err(PredictError::model(format!("booster parameter {k}")))?;
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    bst.set_feature_names(&refs)
        .map_err(PredictError::model("feature names"))?;
    for i in 0..rounds as i32 {
        bst.update(&dm, i)
            .map_err(PredictError::model(format!("training round {i}")))?;
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(PredictError::io(format!("creating {}", dir.display())))?;
    }
    bst.save(out)
        .map_err(PredictError::model(format!("saving {}", out.display())))?;
    Ok(())
}

/// One SQL's predicted and actual speedup.
#[derive(Clone, Debug, Serialize)]
pub struct Scored {
    pub app_id: String,
    pub sql_id: i64,
    pub description: String,
    pub actual_speedup: f64,
    pub predicted_speedup: f64,
    pub cpu_duration_ms: f64,
}

/// How well a model predicts the pairs.
#[derive(Clone, Debug, Serialize)]
pub struct Evaluation {
    pub sqls: Vec<Scored>,
    /// Mean absolute percentage error of the SQL speedups.
    pub mape: f64,
    /// The same, weighted by CPU duration.
    pub weighted_mape: f64,
}

pub fn evaluate(model: &Model, rows: &[TrainingRow]) -> Result<Evaluation> {
    let flat = flat(rows);
    let margins = if rows.is_empty() {
        Vec::new()
    } else {
        model.predict(&flat, rows.len())?
    };
    let sqls: Vec<Scored> = rows
        .iter()
        .zip(margins)
        .map(|(r, m)| Scored {
            app_id: r.app_id.clone(),
            sql_id: r.sql_id,
            description: r.description.clone(),
            actual_speedup: r.cpu_duration_ms / r.gpu_duration_ms,
            predicted_speedup: (m as f64).exp(),
            cpu_duration_ms: r.cpu_duration_ms,
        })
        .collect();
    let err = |s: &Scored| (s.predicted_speedup - s.actual_speedup).abs() / s.actual_speedup;
    let n = sqls.len().max(1) as f64;
    let w: f64 = sqls
        .iter()
        .map(|s| s.cpu_duration_ms)
        .sum::<f64>()
        .max(1e-9);
    Ok(Evaluation {
        mape: sqls.iter().map(err).sum::<f64>() / n,
        weighted_mape: sqls.iter().map(|s| err(s) * s.cpu_duration_ms).sum::<f64>() / w,
        sqls,
    })
}
