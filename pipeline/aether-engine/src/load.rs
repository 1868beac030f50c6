//! One session over event logs and/or a warehouse, as `aether sql` and `aether analyze` open
//! it: the logs read (each problem a line naming its file), the warehouse's tables registered,
//! the views defined (all at once, or each when a statement first reads it), and apps found in
//! several logs told (their rows would be mixed).

use crate::{AnalysisSettings, SessionContext};
use aether_ingest::{IngestOptions, LogReport, SourceError};

/// When a session's views are defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Views {
    /// All of them, up front (`analyze` reads most of them).
    All,
    /// Each when a statement first reads it (`sql`: a query plans only the views it needs).
    OnDemand,
}

/// A session, and what went wrong on the way that did not stop it.
pub struct Loaded {
    pub ctx: SessionContext,
    /// One line per file or line that could not be read (`path[:line]: error`).
    pub problems: Vec<String>,
    /// One line per app found in several logs.
    pub duplicates: Vec<String>,
}

/// The problems of a read, one line each (`path[:line]: error`).
pub fn problem_lines(sources: &[SourceError], reports: &[LogReport]) -> Vec<String> {
    let mut out: Vec<String> = sources
        .iter()
        .map(|e| format!("{}: {}", e.path, e.error))
        .collect();
    for r in reports {
        for e in &r.errors {
            out.push(match e.line {
                Some(l) => format!("{}:{}: {}", e.file, l, e.error),
                None => format!("{}: {}", e.file, e.error),
            });
        }
    }
    out
}

/// Why no session could be opened: the problems met on the way (one line each) and the error.
#[derive(Debug)]
pub struct LoadError {
    pub problems: Vec<String>,
    pub error: String,
}

impl LoadError {
    fn of(error: impl std::fmt::Display) -> LoadError {
        LoadError {
            problems: Vec::new(),
            error: error.to_string(),
        }
    }
}

/// Open a session over `event_log` (any inputs `aether_ingest::ingest` takes) and/or the
/// warehouse at `warehouse`; an error when nothing could be loaded.
pub fn load(
    rt: &tokio::runtime::Runtime,
    event_log: &[String],
    warehouse: Option<&str>,
    opts: &IngestOptions,
    settings: &AnalysisSettings,
    views: Views,
) -> Result<Loaded, LoadError> {
    let ctx = crate::session();
    let mut problems = Vec::new();
    // several apps' rows may be mixed only with more than one log or a warehouse
    let mut apps_may_repeat = warehouse.is_some();
    if !event_log.is_empty() {
        let ing = aether_ingest::ingest(event_log, opts);
        apps_may_repeat |= ing.logs.len() > 1;
        problems = problem_lines(&ing.source_errors, &ing.logs);
        problems.extend(
            ing.not_selected
                .iter()
                .map(|s| format!("{}: not selected: {}", s.log, s.reason)),
        );
        if !ing.any_app() {
            return Err(LoadError {
                problems,
                error: "no event log could be read".into(),
            });
        }
        tracing::info!(
            logs = ing.logs.len(),
            bytes = ing.bytes,
            elapsed_ms = ing.elapsed.as_millis() as u64,
            "ingested"
        );
        crate::register_ingested(&ctx, &ing).map_err(LoadError::of)?;
    }
    if let Some(w) = warehouse {
        let wh =
            crate::Warehouse::open(w, &opts.s3).map_err(|e| LoadError::of(format!("{w}: {e}")))?;
        rt.block_on(wh.register(&ctx))
            .map_err(|e| LoadError::of(format!("{w}: {e}")))?;
    }
    let registered = match views {
        Views::All => rt.block_on(crate::register_views(&ctx, settings)),
        Views::OnDemand => crate::views::register_settings(&ctx, settings),
    };
    registered.map_err(LoadError::of)?;
    // the tables are keyed by app id and attempt: two logs of one app would be mixed
    let dup =
        "SELECT app_id, COALESCE(attempt_id, '') AS attempt, string_agg(event_log, ', ') AS logs
               FROM applications GROUP BY app_id, attempt_id HAVING COUNT(*) > 1 ORDER BY app_id";
    let mut duplicates = Vec::new();
    if apps_may_repeat && let Ok(rows) = rt.block_on(crate::analyze::json_rows(&ctx, dup)) {
        for r in rows {
            let f = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
            duplicates.push(format!(
                "app {}{} is in several logs ({}): their rows are mixed in the tables; query them separately",
                f("app_id"),
                if f("attempt").is_empty() {
                    String::new()
                } else {
                    format!(" attempt {}", f("attempt"))
                },
                f("logs")
            ));
        }
    }
    Ok(Loaded {
        ctx,
        problems,
        duplicates,
    })
}
