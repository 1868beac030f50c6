//! Predict phase: QualX boosters evaluated with the XGBoost library.
pub mod model;
