//! Reports from the job history (`aether report list | job | validation | ui`): one code path
//! builds typed reports from the history ([`model`]); the CLI's tables, CSV, JSON and Markdown
//! ([`render`]), the HTML files and the UI's pages ([`html`], with [`svg`] charts) all render
//! those same structs, so they cannot disagree.

pub mod html;
pub mod model;
pub mod render;
pub mod svg;
pub mod ui;

/// A report that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    History(#[from] aether_core::history::HistoryError),
}

pub type Result<T> = std::result::Result<T, Error>;

/// Now, in milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub use serde::Serialize;
