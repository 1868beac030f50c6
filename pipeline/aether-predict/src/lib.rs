//! Predict phase: QualX features and XGBoost speedups, speedup categories, and the
//! qualification of many event logs at once.
pub mod calibrate;
pub mod cluster;
pub mod error;
pub mod history;
pub mod model;
pub mod outputs;
pub mod platform;
pub mod prices;
pub mod profile;
pub mod qualify;
pub mod qualx;
pub mod report;
mod rows;
pub mod target;
pub mod train;
pub mod tuner;
pub mod units;
pub mod version;
pub mod worker;
