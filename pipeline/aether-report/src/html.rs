//! The HTML pages (askama templates, checked at compile time, every value escaped unless it is
//! one of our own SVG charts): the same pages are the UI's and the report files'.

use askama::Template;

use crate::model::{JobDetail, Overview, ValidationReport};
use crate::render::{kpi_lines, when};
use crate::svg;

/// Where a page is shown: in the UI (with its navigation and links) or as a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Ui,
    File,
}

#[derive(Template)]
#[template(path = "overview.html")]
struct OverviewPage<'a> {
    o: &'a Overview,
    kpis: Vec<(&'static str, String)>,
    charts: Vec<String>,
    job_href: &'a str,
    ui: bool,
    page: &'a str,
    generated: String,
    history: &'a str,
}

#[derive(Template)]
#[template(path = "jobs.html")]
struct JobsPage<'a> {
    o: &'a Overview,
    job_href: &'a str,
    ui: bool,
    page: &'a str,
    generated: String,
    history: &'a str,
}

#[derive(Template)]
#[template(path = "job.html")]
struct JobPage<'a> {
    d: &'a JobDetail,
    chart: String,
    ui: bool,
    page: &'a str,
    generated: String,
    history: &'a str,
}

#[derive(Template)]
#[template(path = "validation.html")]
struct ValidationPage<'a> {
    r: &'a ValidationReport,
    period: String,
    chart: String,
    ui: bool,
    page: &'a str,
    generated: String,
    history: &'a str,
}

impl ValidationReport {
    /// Whether the job's failure is new in this period.
    pub fn is_new(&self, job_id: &i64) -> bool {
        self.new_failures.contains(job_id)
    }
    /// Whether the job failed before the period and passes now.
    pub fn is_fixed(&self, job_id: &i64) -> bool {
        self.fixed.contains(job_id)
    }
}

fn href(mode: Mode) -> &'static str {
    match mode {
        Mode::Ui => "/jobs/",
        // a file has no job pages beside it: `aether report job --aether_job_id N`
        Mode::File => "#job-",
    }
}

fn render(t: &impl Template) -> String {
    t.render()
        .unwrap_or_else(|e| format!("<!DOCTYPE html><p>could not render the page: {e}</p>"))
}

/// The overview: KPI tiles, the charts, the job list.
pub fn overview(o: &Overview, history: &str, mode: Mode) -> String {
    render(&OverviewPage {
        o,
        kpis: kpi_lines(&o.kpis),
        charts: svg::overview_charts(o),
        job_href: href(mode),
        ui: mode == Mode::Ui,
        page: "overview",
        generated: when(Some(o.generated_ms)),
        history,
    })
}

/// The job list, sortable and filterable.
pub fn jobs(o: &Overview, history: &str, mode: Mode) -> String {
    render(&JobsPage {
        o,
        job_href: href(mode),
        ui: mode == Mode::Ui,
        page: "jobs",
        generated: when(Some(o.generated_ms)),
        history,
    })
}

/// A job's page: its runs over time, each run with its config changes, the config to use.
pub fn job(d: &JobDetail, generated_ms: i64, history: &str, mode: Mode) -> String {
    let runs: Vec<_> = d.runs.iter().filter(|r| r.duration_ms.is_some()).collect();
    let chart = svg::bars(
        "Duration of each run",
        &runs
            .iter()
            .map(|r| format!("run {} ({})", r.run_id, r.kind))
            .collect::<Vec<_>>(),
        &[svg::Series {
            name: "duration",
            color: "#1d4ed8",
        }],
        &runs
            .iter()
            .map(|r| vec![r.duration_ms.map(|d| d as f64 / 1000.0)])
            .collect::<Vec<_>>(),
        None,
        &|s| crate::render::duration(Some((s * 1000.0) as i64)),
    );
    render(&JobPage {
        d,
        chart,
        ui: mode == Mode::Ui,
        page: "jobs",
        generated: when(Some(generated_ms)),
        history,
    })
}

/// The validation report of a period.
pub fn validation(r: &ValidationReport, history: &str, mode: Mode) -> String {
    let chart = svg::parts(
        "Latest validation per job",
        &[
            ("PASS".to_string(), r.pass),
            ("WARN".to_string(), r.warn),
            ("FAIL".to_string(), r.fail),
        ],
        &["#15803d", "#d97706", "#b91c1c"],
    );
    render(&ValidationPage {
        r,
        period: format!("{} – {}", when(Some(r.since_ms)), when(Some(r.until_ms))),
        chart,
        ui: mode == Mode::Ui,
        page: "validations",
        generated: when(Some(r.until_ms)),
        history,
    })
}
