//! XGBoost boosters (QualX JSON models): loading, checking feature names, predicting.
use std::path::Path;

use crate::error::{PredictError, Result};
use crate::invalid;
use crate::platform::ModelPlatform;
use xgb::{Booster, DMatrix};

/// A loaded booster and the feature names it was trained on.
pub struct Model {
    booster: Booster,
    features: Vec<String>,
}

impl Model {
    /// Loads a booster saved as JSON or UBJSON by XGBoost.
    pub fn load(path: &Path) -> Result<Model> {
        if !path.is_file() {
            invalid!("model {}: no such file", path.display());
        }
        let booster = Booster::load(path).map_err(PredictError::model(format!(
            "model {}: not an XGBoost booster",
            path.display()
        )))?;
        let features = booster
            .get_feature_names()
            .map_err(PredictError::model(format!(
                "model {}: cannot read feature names",
                path.display()
            )))?;
        if features.is_empty() {
            invalid!("model {}: the booster has no feature names", path.display());
        }
        Ok(Model { booster, features })
    }

    pub fn feature_names(&self) -> &[String] {
        &self.features
    }

    /// Raw margin (log speedup) for each row of `rows` (row-major, `feature_names()` order).
    pub fn predict(&self, rows: &[f32], n_rows: usize) -> Result<Vec<f32>> {
        let dm = DMatrix::from_dense(rows, n_rows).map_err(PredictError::model("feature rows"))?;
        self.booster
            .predict(&dm)
            .map_err(PredictError::model("predicting"))
    }
}

impl Model {
    /// SHAP contributions (XGBoost `pred_contribs`): per row, one value per feature and the bias
    /// last; each row sums to the raw margin.
    pub fn contributions(&self, rows: &[f32], n_rows: usize) -> Result<Vec<Vec<f32>>> {
        let dm = DMatrix::from_dense(rows, n_rows).map_err(PredictError::model("feature rows"))?;
        let (data, (n, cols)) = self
            .booster
            .predict_contributions(&dm)
            .map_err(PredictError::model("SHAP contributions"))?;
        Ok((0..n)
            .map(|i| data[i * cols..(i + 1) * cols].to_vec())
            .collect())
    }
}

/// The QualX boosters shipped with aether (`models/qualx/`), by platform.
const BUILTIN: &[(ModelPlatform, &[u8])] = &[
    (
        ModelPlatform::Emr,
        include_bytes!("../../../models/qualx/emr.json"),
    ),
    (
        ModelPlatform::Onprem,
        include_bytes!("../../../models/qualx/onprem.json"),
    ),
];

impl Model {
    /// The platforms with a built-in model.
    pub fn builtin_platforms() -> Vec<ModelPlatform> {
        BUILTIN.iter().map(|(p, _)| *p).collect()
    }

    /// The built-in QualX model of `platform`.
    pub fn builtin(platform: ModelPlatform) -> Result<Model> {
        let Some((_, bytes)) = BUILTIN.iter().find(|(p, _)| *p == platform) else {
            let have: Vec<_> = BUILTIN.iter().map(|(p, _)| p.as_str()).collect();
            invalid!(
                "no built-in model for platform {platform} (built in: {}): give a booster trained for it with --model",
                have.join(", ")
            );
        };
        let what = format!("built-in model {platform}");
        let booster = Booster::load_buffer(bytes).map_err(PredictError::model(&what))?;
        let features = booster
            .get_feature_names()
            .map_err(PredictError::model(what))?;
        Ok(Model { booster, features })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn root() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    /// Qualify checks only a user's booster against the features aether computes: every
    /// built-in one must need only those (and the same ones the engine's view defines).
    #[test]
    fn builtin_models_need_only_computed_features() {
        let have = crate::qualx::available_features().unwrap();
        assert!(have.iter().any(|f| f == "platform_emr"), "{have:?}");
        for p in Model::builtin_platforms() {
            let m = Model::builtin(p).unwrap();
            assert!(!m.feature_names().is_empty(), "{p}");
            crate::qualx::check_features(m.feature_names()).unwrap();
        }
        let mut bogus = have.clone();
        bogus.push("no_such_feature".into());
        let e = crate::qualx::check_features(&bogus)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("1 feature(s)") && e.contains("no_such_feature"),
            "{e}"
        );
    }

    /// The committed QualX booster, evaluated by the XGBoost library on the reference tool's own
    /// feature rows, gives the reference tool's per-SQL predictions.
    #[test]
    fn emr_booster_reproduces_reference_predictions() {
        let m = Model::load(&root().join("models/qualx/emr.json")).unwrap();
        assert_eq!(m.feature_names().len(), 118);
        let gold = root().join("../shared/anchor/golden/dev/xgboost_predictions");
        let mut feats = csv::Reader::from_path(gold.join("features.csv")).unwrap();
        let header = feats.headers().unwrap().clone();
        let cols: Vec<usize> = m
            .feature_names()
            .iter()
            .map(|f| header.iter().position(|h| h == f).unwrap())
            .collect();
        let mut rows = Vec::new();
        let mut n = 0;
        for r in feats.records() {
            let r = r.unwrap();
            for &c in &cols {
                let v = &r[c];
                rows.push(match v {
                    "" | "False" => 0.0,
                    "True" => 1.0,
                    _ => v.parse::<f64>().unwrap() as f32,
                });
            }
            n += 1;
        }
        let pred = m.predict(&rows, n).unwrap();
        let mut sql = csv::Reader::from_path(gold.join("per_sql.csv")).unwrap();
        let y = sql.headers().unwrap().iter().position(|h| h == "y_pred");
        let y = y.unwrap();
        let want: Vec<f64> = sql
            .records()
            .map(|r| r.unwrap()[y].parse().unwrap())
            .collect();
        assert_eq!(want.len(), n);
        let mut worst = 0f64;
        for (p, w) in pred.iter().zip(&want) {
            worst = worst.max(((*p as f64).exp() - w).abs() / w);
        }
        assert!(worst < 1e-6, "worst relative error {worst}");
        let contrib = m.contributions(&rows, n).unwrap();
        for (c, p) in contrib.iter().zip(&pred) {
            assert_eq!(c.len(), 119);
            let s: f32 = c.iter().sum();
            assert!((s - p).abs() < 1e-4, "contributions sum {s} vs margin {p}");
        }
    }

    #[test]
    fn rejects_files_that_are_not_boosters() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.json");
        std::fs::write(&p, "{\"hello\": 1}").unwrap();
        let err = Model::load(&p).err().unwrap();
        // typed: XGBoost's own error kept as the source
        assert!(matches!(err, PredictError::Model { .. }), "{err:?}");
        assert!(std::error::Error::source(&err).is_some());
        let e = err.to_string();
        assert!(e.contains("not an XGBoost booster"), "{e}");
        let e = Model::load(&dir.path().join("none.json"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no such file"), "{e}");
    }
}
