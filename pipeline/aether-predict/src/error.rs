//! The errors of qualification, profiling and the model, typed (the binary adds context with
//! anyhow; a library caller can match them).

/// What went wrong, with what it was about.
#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    /// A query over the event-log tables.
    #[error(transparent)]
    Engine(#[from] aether_engine::EngineError),
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error(transparent)]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    /// A prices file.
    #[error(transparent)]
    Price(#[from] crate::prices::PriceError),
    /// XGBoost (loading, predicting with or training a booster), with what it was doing.
    #[error("{what}: {source}")]
    Model {
        what: String,
        #[source]
        source: xgb::XGBError,
    },
    /// A file that could not be read or written.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A CSV file that cannot be read, at a line.
    #[error("{what}: {source}")]
    Csv {
        what: String,
        #[source]
        source: csv::Error,
    },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The job history.
    #[error(transparent)]
    History(#[from] aether_core::HistoryError),
    /// A background task (a session's queries) that did not finish.
    #[error("a session query's task: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// An input aether cannot use, and why (a log, a model, a pairs file, the history).
    #[error("{0}")]
    Invalid(String),
}

impl PredictError {
    /// XGBoost's error while doing `what`.
    pub fn model(what: impl Into<String>) -> impl FnOnce(xgb::XGBError) -> PredictError {
        let what = what.into();
        move |source| PredictError::Model { what, source }
    }

    /// A file error while doing `what`.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> PredictError {
        let what = what.into();
        move |source| PredictError::Io { what, source }
    }
}

/// Result of aether-predict.
pub type Result<T> = std::result::Result<T, PredictError>;

/// Stop with an [`PredictError::Invalid`] made from a format string.
#[macro_export]
macro_rules! invalid {
    ($($t:tt)*) => {
        return Err($crate::error::PredictError::Invalid(format!($($t)*)))
    };
}
