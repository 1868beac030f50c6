//! `aether report ui`: the read-only web UI, served by the binary (axum, HTTP/1). Every page is
//! rendered from the history at the request ([`crate::html`], the same pages as the report
//! files); nothing is loaded from elsewhere (styles, the job list's small script and the SVG
//! charts are in the page). Only GET: nothing in the history can be changed from here.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::html::{self, Mode};
use crate::model;

#[derive(Clone)]
struct App {
    history: Arc<PathBuf>,
}

/// A duration back from now: `7d`, `24h`, `90m`, `2w`, `3600s`; in milliseconds.
pub fn parse_since(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: i64 = n
        .parse()
        .map_err(|_| format!("{s:?}: a number and a unit (7d, 24h, 90m, 2w, 3600s)"))?;
    let ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" | "" => 86_400_000,
        "w" => 7 * 86_400_000,
        u => return Err(format!("{s:?}: unknown unit {u:?} (s, m, h, d, w)")),
    };
    Ok(n.saturating_mul(ms))
}

fn page(status: StatusCode, body: String) -> Response {
    let mut r = (status, body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; form-action 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

fn json(v: &impl serde::Serialize) -> Response {
    let body = serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    let mut r = (StatusCode::OK, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn error_page(status: StatusCode, what: &str) -> Response {
    // `what` may quote a request: escaped like everything else
    let esc = crate::svg::esc(what);
    page(
        status,
        format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{status}</title></head>\
             <body><h1>{status}</h1><p>{esc}</p><p><a href=\"/\">Overview</a></p></body></html>"
        ),
    )
}

/// Read the history off the async threads.
async fn with_history<T: Send + 'static>(
    app: &App,
    f: impl FnOnce(&aether_core::History, &str) -> crate::Result<T> + Send + 'static,
) -> Result<T, Response> {
    let path = app.history.clone();
    tokio::task::spawn_blocking(move || {
        let h = aether_core::History::open(&path)?;
        f(&h, &path.display().to_string())
    })
    .await
    .map_err(|e| error_page(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))?
    .map_err(|e| error_page(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))
}

async fn overview(State(app): State<App>) -> Response {
    match with_history(&app, |h, p| {
        Ok(html::overview(&model::overview(h)?, p, Mode::Ui))
    })
    .await
    {
        Ok(b) => page(StatusCode::OK, b),
        Err(r) => r,
    }
}

async fn jobs(State(app): State<App>) -> Response {
    match with_history(&app, |h, p| {
        Ok(html::jobs(&model::overview(h)?, p, Mode::Ui))
    })
    .await
    {
        Ok(b) => page(StatusCode::OK, b),
        Err(r) => r,
    }
}

async fn job(State(app): State<App>, Path(id): Path<String>) -> Response {
    let Ok(job_id) = id.parse::<i64>() else {
        return error_page(StatusCode::NOT_FOUND, &format!("no job {id}"));
    };
    match with_history(&app, move |h, p| {
        Ok(model::job(h, job_id)?.map(|d| html::job(&d, crate::now_ms(), p, Mode::Ui)))
    })
    .await
    {
        Ok(Some(b)) => page(StatusCode::OK, b),
        Ok(None) => error_page(StatusCode::NOT_FOUND, &format!("no job {job_id}")),
        Err(r) => r,
    }
}

#[derive(serde::Deserialize)]
struct Since {
    since: Option<String>,
}

async fn validations(State(app): State<App>, Query(q): Query<Since>) -> Response {
    let since = match parse_since(q.since.as_deref().unwrap_or("7d")) {
        Ok(ms) => crate::now_ms() - ms,
        Err(e) => return error_page(StatusCode::BAD_REQUEST, &e),
    };
    match with_history(&app, move |h, p| {
        Ok(html::validation(
            &model::validation_report(h, since)?,
            p,
            Mode::Ui,
        ))
    })
    .await
    {
        Ok(b) => page(StatusCode::OK, b),
        Err(r) => r,
    }
}

async fn api_overview(State(app): State<App>) -> Response {
    match with_history(&app, |h, _| model::overview(h)).await {
        Ok(o) => json(&o),
        Err(r) => r,
    }
}

async fn api_job(State(app): State<App>, Path(id): Path<i64>) -> Response {
    match with_history(&app, move |h, _| model::job(h, id)).await {
        Ok(Some(d)) => json(&d),
        Ok(None) => error_page(StatusCode::NOT_FOUND, &format!("no job {id}")),
        Err(r) => r,
    }
}

/// The UI's routes over the history at `history`.
pub fn router(history: PathBuf) -> Router {
    Router::new()
        .route("/", get(overview))
        .route("/jobs", get(jobs))
        .route("/jobs/{id}", get(job))
        .route("/validations", get(validations))
        .route("/api/overview", get(api_overview))
        .route("/api/jobs/{id}", get(api_job))
        .route("/healthz", get(|| async { "ok" }))
        .fallback(|| async { error_page(StatusCode::NOT_FOUND, "no such page") })
        .with_state(App {
            history: Arc::new(history),
        })
}

/// Serve the UI on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    history: PathBuf,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(history))
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods() {
        assert_eq!(parse_since("7d"), Ok(7 * 86_400_000));
        assert_eq!(parse_since("24h"), Ok(86_400_000));
        assert_eq!(parse_since("2w"), Ok(14 * 86_400_000));
        assert_eq!(parse_since("90m"), Ok(5_400_000));
        assert!(parse_since("soon").is_err());
        assert!(parse_since("3y").is_err());
    }
}
