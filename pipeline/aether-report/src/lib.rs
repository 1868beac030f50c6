//! Reports from the job history (`aether report list | job | validation | ui`): one code path
//! builds typed reports from the history ([`model`]); the CLI's tables, CSV, JSON and Markdown
//! ([`render`]), the HTML files and the UI's pages ([`html`], with [`svg`] charts) all render
//! those same structs, so they cannot disagree.

pub mod html;
pub mod model;
pub mod money;
pub mod render;
pub mod svg;
pub mod ui;

/// A report that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    History(#[from] aether_core::history::HistoryError),
    /// A report file that could not be written.
    #[error("{path}: {error}")]
    Write { path: String, error: std::io::Error },
}

/// Write a report file whole: to a temporary file beside it, renamed over it (a failure leaves
/// an earlier file as it was); its folder made.
pub fn save(path: &std::path::Path, text: &str) -> Result<()> {
    let fail = |p: &std::path::Path| {
        let path = p.display().to_string();
        move |error| Error::Write { path, error }
    };
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(fail(d))?;
    }
    let tmp = path.with_extension("tmp-aether");
    std::fs::write(&tmp, text).map_err(fail(&tmp))?;
    std::fs::rename(&tmp, path).map_err(fail(path))
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
