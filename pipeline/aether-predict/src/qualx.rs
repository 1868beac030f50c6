//! QualX prediction: the `qualx_features` view → the booster → per-SQL and per-app GPU speedups,
//! with the reference tool's formulas (see `../shared/anchor/README.md`, "How QualX turns an event
//! log into a speedup").

use crate::error::{PredictError, Result};
use crate::invalid;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::prelude::SessionContext;

use crate::model::Model;
use crate::platform::ModelPlatform;

/// One feature row: a SQL execution (per executor resource profile).
#[derive(Clone, Debug)]
pub struct FeatureRow {
    pub app_id: String,
    pub app_attempt_id: Option<String>,
    pub sql_id: i64,
    pub app_name: String,
    pub app_duration_ms: i64,
    /// SQL wall time; `None` when the SQL never ended.
    pub duration_ms: Option<f64>,
    pub description: String,
    /// Share of the SQL's task time in stages whose operators all run on the GPU.
    pub fraction_supported: f64,
    /// The model's inputs, in the model's feature order.
    pub values: Vec<f64>,
}

/// The feature rows of every app in `ctx`, with values in the order of `names` (a model's
/// feature names).
///
/// Every feature the model names must be one aether computes (a `qualx_features` column or a
/// `platform_*` one-hot); otherwise the error lists the missing ones.
pub async fn feature_rows(
    ctx: &SessionContext,
    names: &[String],
    platform: ModelPlatform,
) -> Result<Vec<FeatureRow>> {
    let (_, batches) = aether_engine::query(
        ctx,
        "SELECT * FROM qualx_features ORDER BY app_id, app_attempt_id, sql_id, resource_profile_id",
    )
    .await?;
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => return Ok(Vec::new()),
    };
    enum Src {
        Col(usize),
        Const(f64),
    }
    let mut srcs = Vec::new();
    let mut missing = Vec::new();
    for f in names {
        if let Some(p) = f.strip_prefix("platform_") {
            srcs.push(Src::Const(if p == platform.as_str() { 1.0 } else { 0.0 }));
        } else if let Ok(i) = schema.index_of(f) {
            srcs.push(Src::Col(i));
        } else {
            missing.push(f.clone());
        }
    }
    if !missing.is_empty() {
        invalid!(
            "the model needs features aether does not compute: {}",
            missing.join(", ")
        );
    }
    let col = |name: &str| schema.index_of(name);
    let (c_app, c_att, c_sql, c_name, c_appdur, c_dur, c_desc, c_fs) = (
        col("app_id")?,
        col("app_attempt_id")?,
        col("sql_id")?,
        col("appName")?,
        col("appDuration")?,
        col("Duration")?,
        col("description")?,
        col("fraction_supported")?,
    );
    let mut out = Vec::new();
    for b in &batches {
        let f64s: Vec<_> = b
            .columns()
            .iter()
            .map(|c| cast(c, &DataType::Float64).ok())
            .collect();
        let num = |c: usize, r: usize| -> Option<f64> {
            let a = f64s[c].as_ref()?;
            (!a.is_null(r)).then(|| a.as_primitive::<Float64Type>().value(r))
        };
        let text = |c: usize, r: usize| -> Option<String> {
            let a = cast(b.column(c), &DataType::Utf8).ok()?;
            (!a.is_null(r)).then(|| a.as_string::<i32>().value(r).to_string())
        };
        for r in 0..b.num_rows() {
            let values = srcs
                .iter()
                .map(|s| match s {
                    Src::Col(c) => num(*c, r).unwrap_or(f64::NAN),
                    Src::Const(v) => *v,
                })
                .collect();
            out.push(FeatureRow {
                app_id: text(c_app, r).unwrap_or_default(),
                app_attempt_id: text(c_att, r),
                sql_id: num(c_sql, r).unwrap_or(-1.0) as i64,
                app_name: text(c_name, r).unwrap_or_default(),
                app_duration_ms: num(c_appdur, r).unwrap_or(0.0) as i64,
                duration_ms: num(c_dur, r),
                description: text(c_desc, r).unwrap_or_default(),
                fraction_supported: num(c_fs, r).unwrap_or(f64::NAN),
                values,
            });
        }
    }
    Ok(out)
}

/// The prediction for one SQL execution.
#[derive(Clone, Debug)]
pub struct SqlPrediction {
    pub row: FeatureRow,
    /// The booster's speedup for the SQL (exp of its margin).
    pub y_pred: f64,
    /// `Duration · (1 − fs + fs / y)`: only the supported part speeds up.
    pub duration_pred: f64,
    /// `Duration · fs`.
    pub duration_supported: f64,
    /// `Duration / duration_pred`.
    pub speedup_pred: f64,
    /// SHAP contributions (one per model feature, then the bias), in margin (log-speedup) units.
    pub contributions: Vec<f32>,
}

/// Predict every row with `model`.
pub fn predict_sqls(model: &Model, rows: Vec<FeatureRow>) -> Result<Vec<SqlPrediction>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let flat: Vec<f32> = rows
        .iter()
        .flat_map(|r| r.values.iter().map(|v| *v as f32))
        .collect();
    let margins = model.predict(&flat, rows.len())?;
    let contribs = model.contributions(&flat, rows.len())?;
    Ok(rows
        .into_iter()
        .zip(margins)
        .zip(contribs)
        .map(|((row, m), contributions)| {
            // XGBoost computes in f32: the speedup is exp of the f32 margin, as QualX reports it
            let y = (m.exp()) as f64;
            let d = row.duration_ms.unwrap_or(f64::NAN);
            let fs = row.fraction_supported;
            let duration_pred = d * (1.0 - fs + fs / y);
            SqlPrediction {
                y_pred: y,
                duration_pred,
                duration_supported: d * fs,
                speedup_pred: d / duration_pred,
                contributions,
                row,
            }
        })
        .collect())
}

/// The per-app speedup (QualX `per_app.csv`).
#[derive(Clone, Debug, PartialEq)]
pub struct AppSpeedup {
    /// App duration, raised to the SQL time when SQL time exceeds it (ms).
    pub app_duration_ms: i64,
    /// Σ SQL durations (ms).
    pub sql_duration_ms: i64,
    /// Σ predicted SQL durations (ms).
    pub sql_duration_pred_ms: i64,
    /// Σ supported SQL durations (ms).
    pub sql_duration_supported_ms: i64,
    /// Predicted app duration: non-SQL time unchanged (ms).
    pub app_duration_pred_ms: i64,
    pub speedup: f64,
    /// Supported SQL time over app duration.
    pub fraction_supported: f64,
    /// False when the app had no SQL to predict (speedup 1.0).
    pub was_predicted: bool,
}

/// Per app from its SQL predictions (`preds` all of one app); `app_duration_ms` is the app's
/// duration for apps without predictions.
pub fn app_speedup(preds: &[&SqlPrediction], app_duration_ms: i64) -> AppSpeedup {
    if preds.is_empty() {
        return AppSpeedup {
            app_duration_ms,
            sql_duration_ms: 0,
            sql_duration_pred_ms: 0,
            sql_duration_supported_ms: 0,
            app_duration_pred_ms: app_duration_ms,
            speedup: 1.0,
            fraction_supported: 0.0,
            was_predicted: false,
        };
    }
    // pandas sums skip NaN (SQLs without an end)
    let sum = |f: &dyn Fn(&SqlPrediction) -> f64| -> f64 {
        preds.iter().map(|p| f(p)).filter(|v| !v.is_nan()).sum()
    };
    let d = sum(&|p| p.row.duration_ms.unwrap_or(f64::NAN));
    let dp = sum(&|p| p.duration_pred);
    let ds = sum(&|p| p.duration_supported);
    let app = (preds[0].row.app_duration_ms as f64).max(d);
    let app_pred = app - d + dp;
    let long = |v: f64| if v.is_nan() { -1 } else { v as i64 };
    AppSpeedup {
        app_duration_ms: long(app),
        sql_duration_ms: long(d),
        sql_duration_pred_ms: long(dp),
        sql_duration_supported_ms: long(ds),
        app_duration_pred_ms: long(app_pred),
        speedup: app / app_pred,
        fraction_supported: ds / app,
        was_predicted: true,
    }
}

/// The features that moved an app's prediction most: SHAP contributions averaged over its SQLs,
/// weighted by SQL duration, largest magnitude first (`(feature, contribution)`; a positive value
/// raises the predicted speedup).
pub fn top_reasons(model: &Model, preds: &[&SqlPrediction], n: usize) -> Vec<(String, f64)> {
    let names = model.feature_names();
    let mut acc = vec![0.0f64; names.len()];
    let mut total_w = 0.0;
    for p in preds {
        let w = p.row.duration_ms.filter(|d| *d > 0.0).unwrap_or(1.0);
        total_w += w;
        for (a, c) in acc.iter_mut().zip(&p.contributions) {
            *a += w * *c as f64;
        }
    }
    if total_w == 0.0 {
        return Vec::new();
    }
    let mut out: Vec<(String, f64)> = names
        .iter()
        .cloned()
        .zip(acc.into_iter().map(|v| v / total_w))
        .filter(|(_, v)| *v != 0.0)
        .collect();
    out.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    out.truncate(n);
    out
}

/// The feature names aether computes (the `qualx_features` columns and the platform one-hots).
pub fn available_features() -> Result<Vec<String>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(PredictError::io("an async runtime"))?;
    rt.block_on(async {
        let ctx = aether_engine::session();
        aether_engine::register_ingested(&ctx, &aether_ingest::Ingested::default())?;
        // only the views the features read (planning all of them took ~0.7 s per command)
        aether_engine::views::register_settings(&ctx, &Default::default())?;
        const SQL: &str = "SELECT * FROM qualx_features";
        aether_engine::views::register_views_for(&ctx, SQL).await?;
        let df = ctx.sql(SQL).await?;
        let mut names: Vec<String> = df
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        names.extend(ModelPlatform::ALL.iter().map(|p| format!("platform_{p}")));
        Ok(names)
    })
}

/// Check that aether computes every feature a model needs; the error names the missing ones.
pub fn check_features(names: &[String]) -> Result<()> {
    let have = available_features()?;
    let missing: Vec<&str> = names
        .iter()
        .filter(|n| !have.contains(n))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        invalid!(
            "the model needs {} feature(s) aether does not compute: {}",
            missing.len(),
            missing.join(", ")
        );
    }
    Ok(())
}
