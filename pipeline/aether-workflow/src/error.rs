//! The workflow's errors: what it refuses or cannot do, in words ([`WorkflowError::Invalid`]),
//! what it was doing when another crate's error happened ([`WorkflowError::Context`], that error
//! kept as the source), and the typed errors of the crates it calls. The binary decides how to
//! show them; nothing here flattens an error into text.

use std::fmt::Display;

/// Any error kept as a source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a workflow call failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    /// Refused or impossible, in words that name the input (a flag, a setting, an id).
    #[error("{0}")]
    Invalid(String),
    /// What was being done, and the error that stopped it.
    #[error("{context}")]
    Context {
        context: String,
        #[source]
        source: BoxError,
    },
    #[error(transparent)]
    Config(#[from] aether_core::ConfigError),
    #[error(transparent)]
    History(#[from] aether_core::HistoryError),
    #[error(transparent)]
    Platform(#[from] aether_platform::PlatformError),
    #[error(transparent)]
    JobDefinition(#[from] aether_platform::JobDefinitionError),
    #[error(transparent)]
    Predict(#[from] aether_predict::error::PredictError),
    #[error(transparent)]
    Engine(#[from] aether_engine::EngineError),
    #[error(transparent)]
    Target(#[from] aether_predict::target::TargetError),
    #[error(transparent)]
    Validate(#[from] aether_validate::Error),
    #[error(transparent)]
    Report(#[from] aether_report::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

pub type Result<T, E = WorkflowError> = std::result::Result<T, E>;

/// A [`WorkflowError::Invalid`] from a format string.
macro_rules! invalid {
    ($($t:tt)*) => {
        $crate::error::WorkflowError::Invalid(format!($($t)*))
    };
}

/// Return a [`WorkflowError::Invalid`] from a format string.
macro_rules! bail {
    ($($t:tt)*) => {
        return Err($crate::error::invalid!($($t)*).into())
    };
}

pub(crate) use {bail, invalid};

/// What was being done when an error happened, kept with it (the source stays typed).
pub trait Context<T> {
    fn context(self, what: impl Display) -> Result<T>;
    fn with_context<C: Display>(self, what: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: std::error::Error + Send + Sync + 'static> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|e| WorkflowError::Context {
            context: what.to_string(),
            source: Box::new(e),
        })
    }

    fn with_context<C: Display>(self, what: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| WorkflowError::Context {
            context: what().to_string(),
            source: Box::new(e),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, what: impl Display) -> Result<T> {
        self.ok_or_else(|| WorkflowError::Invalid(what.to_string()))
    }

    fn with_context<C: Display>(self, what: impl FnOnce() -> C) -> Result<T> {
        self.ok_or_else(|| WorkflowError::Invalid(what().to_string()))
    }
}

/// An error and its sources in one line, each source after a colon unless the text before
/// already says it (an error that writes its source into its own message).
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    while let Some(src) = next {
        let t = src.to_string();
        if !t.is_empty() && !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        next = src.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_the_typed_source_and_describe_says_each_once() {
        let io = std::fs::read("/no/such/file").context("reading the plan");
        let e = io.unwrap_err();
        let WorkflowError::Context { source, .. } = &e else {
            panic!("{e:?}")
        };
        assert!(source.downcast_ref::<std::io::Error>().is_some());
        assert!(
            describe(&e).starts_with("reading the plan: No such file"),
            "{}",
            describe(&e)
        );
        // a message that already contains its source's text is not repeated
        let inner = WorkflowError::Invalid("bad port".into());
        let outer = WorkflowError::Context {
            context: "connecting: bad port".into(),
            source: Box::new(inner),
        };
        assert_eq!(describe(&outer), "connecting: bad port");
        assert_eq!(
            None::<i64>.context("no step").unwrap_err().to_string(),
            "no step"
        );
    }
}
