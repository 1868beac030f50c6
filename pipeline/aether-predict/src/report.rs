//! What `aether qualify` prints and writes: the per-app summary (as an Arrow batch, so the
//! engine's table / CSV / JSON renderers print it), and the files of `--output DIR`.

use std::path::Path;
use std::sync::Arc;

use crate::error::{PredictError, Result};
use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};

use crate::qualify::{AppQualification, Status};

/// One column of a summary: its name and values.
enum Col {
    S(&'static str, Vec<Option<String>>),
    I(&'static str, Vec<Option<i64>>),
    F(&'static str, Vec<Option<f64>>),
}

fn batch(cols: Vec<Col>) -> Result<RecordBatch> {
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for c in cols {
        match c {
            Col::S(n, v) => {
                fields.push(Field::new(n, DataType::Utf8, true));
                arrays.push(Arc::new(StringArray::from(v)));
            }
            Col::I(n, v) => {
                fields.push(Field::new(n, DataType::Int64, true));
                arrays.push(Arc::new(Int64Array::from(v)));
            }
            Col::F(n, v) => {
                fields.push(Field::new(n, DataType::Float64, true));
                arrays.push(Arc::new(Float64Array::from(v)));
            }
        }
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// The console view of [`qualification_summary`]: the columns a decision needs, some renamed
/// (console name, summary column).
const CONSOLE_COLUMNS: &[(&str, &str)] = &[
    ("Aether Job ID", "Aether Job ID"),
    ("Aether Shape ID", "Aether Shape ID"),
    ("Aether Config ID", "Aether Config ID"),
    ("App ID", "App ID"),
    ("App Name", "App Name"),
    ("Estimated GPU Speedup", "Estimated GPU Speedup"),
    ("Speedup Low", "Speedup Low"),
    ("Speedup High", "Speedup High"),
    ("Category", "Estimated GPU Speedup Category"),
    ("Range vs Threshold", "Range vs Threshold"),
    ("Estimated GPU Duration", "Estimated GPU Duration"),
    ("App Duration", "App Duration"),
    (
        "Unsupported Operators Stage Duration Percent",
        "Unsupported Operators Stage Duration Percent",
    ),
    ("Recommended GPU Cluster", "Recommended GPU Cluster"),
    ("CPU Cost USD", "Estimated CPU Cost USD"),
    ("GPU Cost USD", "Estimated GPU Cost USD"),
    ("Savings USD", "Estimated Savings USD"),
    ("Savings Low USD", "Estimated Savings Low USD"),
    ("Savings High USD", "Estimated Savings High USD"),
    ("Not Recommended Reason", "Not Recommended Reason"),
    ("Speedup Range Source", "Speedup Range Source"),
];

/// The narrow table's columns (how each gives way: `aether_core::table`; the ids, what the
/// next commands take, never do), each with the column of [`summary`] it shows.
fn narrow_columns() -> Vec<(aether_core::table::Column, &'static str)> {
    use aether_core::table::Column;
    vec![
        (Column::new("Job").right(), "Aether Job ID"),
        (Column::new("Shape").right(), "Aether Shape ID"),
        (Column::new("Config").right(), "Aether Config ID"),
        (Column::new("App ID"), "App ID"),
        (Column::new("App Name").shrink(8).optional(1), "App Name"),
        (Column::new("Speedup").right(), "Estimated GPU Speedup"),
        (Column::new("Range").optional(1), "Speedup Low"),
        (Column::new("Recommendation"), "Category"),
        (
            Column::new("Savings USD").right().optional(2),
            "Savings USD",
        ),
        (Column::new("Savings Range").optional(4), "Savings Low USD"),
        (
            Column::new("GPU Cluster").optional(3),
            "Recommended GPU Cluster",
        ),
    ]
}

/// The summary for a terminal of `width` columns: the ids (Job, Shape, Config: what the
/// next commands take), the app, its speedup and recommendation, the savings per run and the
/// GPU cluster; long names cut, the last columns left out when they do not fit.
fn narrow_table(summary: &RecordBatch, width: usize) -> Result<String> {
    use datafusion::arrow::array::Array;
    use datafusion::arrow::util::display::array_value_to_string;
    let (columns, sources): (Vec<_>, Vec<_>) = narrow_columns().into_iter().unzip();
    let mut t = aether_core::table::Table::new(columns);
    let schema = summary.schema();
    let cols = sources
        .iter()
        .map(|n| Ok(summary.column(schema.index_of(n)?).clone()))
        .collect::<Result<Vec<ArrayRef>>>()?;
    let high = summary.column(schema.index_of("Speedup High")?).clone();
    let high = high.as_any().downcast_ref::<Float64Array>();
    let savings_high = summary.column(schema.index_of("Savings High USD")?).clone();
    let savings_high = savings_high.as_any().downcast_ref::<Float64Array>();
    for row in 0..summary.num_rows() {
        let mut cells = Vec::new();
        for (name, col) in sources.iter().zip(&cols) {
            let f = col.as_any().downcast_ref::<Float64Array>();
            cells.push(match (f, *name) {
                (Some(_), _) if col.is_null(row) => String::new(),
                // speedups to the hundredth and dollars to the ten-thousandth (as rounded),
                // so that the points line up
                (Some(f), "Estimated GPU Speedup") => format!("{:.2}", f.value(row)),
                // the 80 % range, low to high, to the tenth (the CSV has hundredths)
                (Some(f), "Speedup Low") => match high.filter(|h| !h.is_null(row)) {
                    Some(h) => format!("{:.1}-{:.1}", f.value(row), h.value(row)),
                    None => String::new(),
                },
                // savings at the range's ends, to the cent
                (Some(f), "Savings Low USD") => match savings_high.filter(|h| !h.is_null(row)) {
                    Some(h) => format!("{:.2} to {:.2}", f.value(row), h.value(row)),
                    None => String::new(),
                },
                (Some(f), _) => format!("{:.4}", f.value(row)),
                (None, _) => array_value_to_string(col, row)?,
            });
        }
        t.row(cells);
    }
    Ok(t.render(width))
}

/// What a terminal shows of a qualification: the summary table (in `format`; as a table,
/// fitted to `width` columns, or every column with `None`), and with `explain` each app's top
/// reasons (SHAP contributions) under it.
pub fn summary_text(
    results: &[AppQualification],
    format: aether_engine::OutputFormat,
    explain: bool,
    width: Option<usize>,
) -> Result<String> {
    let summary = summary(results)?;
    let mut text = match (format, width) {
        (aether_engine::OutputFormat::Table, Some(w)) => narrow_table(&summary, w)?,
        _ => aether_engine::render(&summary.schema(), std::slice::from_ref(&summary), format)?,
    }
    .trim_end()
    .to_string();
    let why = if explain {
        reasons_text(results)
    } else {
        String::new()
    };
    match (format, width) {
        (aether_engine::OutputFormat::Table, Some(w)) => {
            text.push_str(&aether_core::table::wrap(&why, w))
        }
        _ => text.push_str(&why),
    }
    Ok(text)
}

/// Each qualified app's top reasons (SHAP contributions), as `--explain` prints them under the
/// summary.
pub fn reasons_text(results: &[AppQualification]) -> String {
    use std::fmt::Write as _;
    let mut why = String::new();
    for q in results.iter().filter(|q| q.status == Status::Success) {
        let _ = write!(
            why,
            "\n\n{} ({}): speedup {:.2}",
            q.app_id, q.app_name, q.speedup.speedup
        );
        for (f, v) in &q.reasons {
            let way = if *v > 0.0 {
                "raises the speedup"
            } else {
                "lowers it"
            };
            let _ = write!(why, "\n  {f:<40} {v:+.4} ({way})");
        }
    }
    why
}

/// The qualified apps, one row each (the console view: the figures a decision needs).
pub fn summary(results: &[AppQualification]) -> Result<RecordBatch> {
    let full = qualification_summary(results)?;
    let schema = full.schema();
    let mut fields = Vec::new();
    let mut cols = Vec::new();
    for (shown, src) in CONSOLE_COLUMNS {
        let i = schema.index_of(src)?;
        fields.push(schema.field(i).clone().with_name(*shown));
        cols.push(full.column(i).clone());
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

fn gpu_cluster(q: &AppQualification) -> String {
    q.cluster
        .as_ref()
        .map(|c| c.summary.clone())
        .unwrap_or_default()
}

fn cost(
    q: &AppQualification,
    f: impl Fn(&crate::cluster::ClusterRecommendation) -> Option<f64>,
) -> Option<f64> {
    q.cluster
        .as_ref()
        .and_then(f)
        .map(|v| (v * 10000.0).round() / 10000.0)
}

/// One row per log: its status and why (SKIPPED / FAILURE / UNKNOWN explained).
pub fn status(results: &[AppQualification]) -> Result<RecordBatch> {
    let s = |f: &dyn Fn(&AppQualification) -> String| -> Vec<Option<String>> {
        results.iter().map(|q| Some(f(q))).collect()
    };
    batch(vec![
        Col::S("Event Log", s(&|q| q.event_log.clone())),
        Col::S("Status", s(&|q| q.status.as_str().to_string())),
        Col::S("App ID", s(&|q| q.app_id.clone())),
        Col::S(
            "Attempt ID",
            s(&|q| q.attempt_id.clone().unwrap_or_default()),
        ),
        Col::S("App Name", s(&|q| q.app_name.clone())),
        Col::S("Description", s(&|q| q.status_reason.clone())),
    ])
}

/// The successful apps' values of a column.
struct Cols<'a>(Vec<&'a AppQualification>);

impl<'a> Cols<'a> {
    fn s(&self, f: &dyn Fn(&AppQualification) -> String) -> Vec<Option<String>> {
        self.0.iter().map(|q| Some(f(q))).collect()
    }
    fn i(&self, f: &dyn Fn(&AppQualification) -> i64) -> Vec<Option<i64>> {
        self.0.iter().map(|q| Some(f(q))).collect()
    }
    fn iter(&self) -> impl Iterator<Item = &&'a AppQualification> {
        self.0.iter()
    }
}

/// `qualification_summary.csv`: the reference tool's columns (its names), then aether's.
pub fn qualification_summary(results: &[AppQualification]) -> Result<RecordBatch> {
    let c = Cols(
        results
            .iter()
            .filter(|q| q.status == Status::Success)
            .collect(),
    );
    let mut cols = reference_columns(&c);
    cols.extend(cost_columns(&c));
    cols.extend(trust_columns(&c));
    batch(cols)
}

/// The reference tool's columns of qualification_summary.csv.
fn reference_columns<'a>(c: &Cols<'a>) -> Vec<Col> {
    vec![
        Col::S("App Name", c.s(&|q| q.app_name.clone())),
        Col::S("App ID", c.s(&|q| q.app_id.clone())),
        Col::F(
            "Estimated GPU Speedup",
            c.iter().map(|q| Some(round2(q.speedup.speedup))).collect(),
        ),
        Col::I(
            "Estimated GPU Duration",
            c.i(&|q| q.speedup.app_duration_pred_ms),
        ),
        Col::I("App Duration", c.i(&|q| q.app_duration_ms)),
        Col::I(
            "SQL Stage Durations Sum",
            c.i(&|q| q.sql_stage_durations_sum_ms),
        ),
        Col::I(
            "Unsupported Operators Stage Duration",
            c.i(&|q| q.unsupported_stage_duration_ms),
        ),
        Col::F(
            "Unsupported Operators Stage Duration Percent",
            c.iter()
                .map(|q| Some(round2(q.unsupported_stage_duration_pct)))
                .collect(),
        ),
        Col::S(
            "Skip by Heuristics",
            c.s(&|q| {
                if q.skip_by_heuristics {
                    "True"
                } else {
                    "False"
                }
                .into()
            }),
        ),
        Col::S(
            "Not Recommended Reason",
            c.s(&|q| q.not_recommended_reason.clone()),
        ),
        Col::S("Spark Runtime", c.s(&|_| "SPARK".into())),
        Col::S(
            "Estimated GPU Speedup Category",
            c.s(&|q| q.category.clone()),
        ),
    ]
}

/// aether's ids, clusters and costs (at the ends of the speedup range too, and the prices).
fn cost_columns<'a>(c: &Cols<'a>) -> Vec<Col> {
    vec![
        // aether's columns
        Col::I("Aether Job ID", c.iter().map(|q| q.job_id).collect()),
        Col::I("Aether Shape ID", c.iter().map(|q| q.shape_id).collect()),
        Col::I("Aether Config ID", c.iter().map(|q| q.config_id).collect()),
        Col::S("Recommended GPU Cluster", c.s(&|q| gpu_cluster(q))),
        Col::S(
            "CPU Cluster",
            c.s(&|q| {
                q.cluster
                    .as_ref()
                    .and_then(|c| {
                        c.source
                            .worker_instance
                            .as_ref()
                            .map(|w| format!("{} x {w}", c.source.num_worker_nodes))
                    })
                    .unwrap_or_default()
            }),
        ),
        Col::F(
            "Estimated CPU Cost USD",
            c.iter().map(|q| cost(q, |c| c.cpu_cost_usd)).collect(),
        ),
        Col::F(
            "Estimated GPU Cost USD",
            c.iter().map(|q| cost(q, |c| c.gpu_cost_usd)).collect(),
        ),
        Col::F(
            "Estimated Savings USD",
            c.iter().map(|q| cost(q, |c| c.savings_usd)).collect(),
        ),
        Col::F(
            "Estimated Savings Percent",
            c.iter().map(|q| cost(q, |c| c.savings_pct)).collect(),
        ),
        // the costs at the ends of the speedup range, and the prices they are at
        Col::F(
            "Estimated GPU Cost Low USD",
            c.iter().map(|q| cost(q, |c| c.gpu_cost_low_usd)).collect(),
        ),
        Col::F(
            "Estimated GPU Cost High USD",
            c.iter().map(|q| cost(q, |c| c.gpu_cost_high_usd)).collect(),
        ),
        Col::F(
            "Estimated Savings Low USD",
            c.iter().map(|q| cost(q, |c| c.savings_low_usd)).collect(),
        ),
        Col::F(
            "Estimated Savings High USD",
            c.iter().map(|q| cost(q, |c| c.savings_high_usd)).collect(),
        ),
        Col::S(
            "Prices",
            c.iter()
                .map(|q| q.cluster.as_ref().map(|c| c.price_source.clone()))
                .collect(),
        ),
        Col::S(
            "Attempt ID",
            c.s(&|q| q.attempt_id.clone().unwrap_or_default()),
        ),
        Col::S("Event Log", c.s(&|q| q.event_log.clone())),
    ]
}

/// How far to trust the speedup (docs/predictions.md), and why it is what it is.
fn trust_columns<'a>(c: &Cols<'a>) -> Vec<Col> {
    vec![
        // how far to trust the speedup (docs/predictions.md)
        Col::F(
            "QualX GPU Speedup",
            c.iter().map(|q| Some(round2(q.qualx_speedup))).collect(),
        ),
        Col::F(
            "Speedup Low",
            c.iter()
                .map(|q| q.range.as_ref().map(|r| round2(r.low)))
                .collect(),
        ),
        Col::F(
            "Speedup High",
            c.iter()
                .map(|q| q.range.as_ref().map(|r| round2(r.high)))
                .collect(),
        ),
        Col::F(
            "Speedup Range Coverage",
            c.iter()
                .map(|q| q.range.as_ref().map(|r| r.coverage))
                .collect(),
        ),
        Col::S(
            "Speedup Range Source",
            c.iter()
                .map(|q| q.range.as_ref().map(|r| r.source.label()))
                .collect(),
        ),
        Col::S(
            "Range vs Threshold",
            c.iter()
                .map(|q| q.confidence.map(|c| c.as_str().to_string()))
                .collect(),
        ),
        Col::S("Category At Range Low", c.s(&|q| q.sure_category.clone())),
        Col::F(
            "Unrounded GPU Speedup",
            c.iter().map(|q| Some(q.speedup.speedup)).collect(),
        ),
        Col::S(
            "Was Predicted",
            c.s(&|q| {
                if q.speedup.was_predicted {
                    "True"
                } else {
                    "False"
                }
                .into()
            }),
        ),
        Col::S(
            "Top Reasons",
            c.s(&|q| {
                q.reasons
                    .iter()
                    .map(|(f, v)| format!("{f} {v:+.3}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            }),
        ),
    ]
}

/// `per_sql.csv`: QualX's per-SQL predictions.
pub fn per_sql(results: &[AppQualification]) -> Result<RecordBatch> {
    let rows: Vec<_> = results.iter().flat_map(|q| q.sqls.iter()).collect();
    let s = |f: &dyn Fn(&crate::qualx::SqlPrediction) -> String| -> Vec<Option<String>> {
        rows.iter().map(|p| Some(f(p))).collect()
    };
    let fl = |f: &dyn Fn(&crate::qualx::SqlPrediction) -> f64| -> Vec<Option<f64>> {
        rows.iter()
            .map(|p| Some(f(p)).filter(|v| !v.is_nan()))
            .collect()
    };
    batch(vec![
        Col::S("appName", s(&|p| p.row.app_name.clone())),
        Col::S("appId", s(&|p| p.row.app_id.clone())),
        Col::I(
            "appDuration",
            rows.iter().map(|p| Some(p.row.app_duration_ms)).collect(),
        ),
        Col::I("sqlID", rows.iter().map(|p| Some(p.row.sql_id)).collect()),
        Col::F("Duration", fl(&|p| p.row.duration_ms.unwrap_or(f64::NAN))),
        Col::S("description", s(&|p| p.row.description.clone())),
        Col::F("y_pred", fl(&|p| p.y_pred)),
        Col::F("Duration_pred", fl(&|p| p.duration_pred)),
        Col::F("Duration_supported", fl(&|p| p.duration_supported)),
        Col::F("speedup_pred", fl(&|p| p.speedup_pred)),
        Col::F("fraction_supported", fl(&|p| p.row.fraction_supported)),
    ])
}

/// `features.csv`: `appId`, `sqlID`, then the model's features by name.
pub fn features(results: &[AppQualification], names: &[String]) -> Result<RecordBatch> {
    let rows: Vec<_> = results.iter().flat_map(|q| q.sqls.iter()).collect();
    let mut fields = vec![
        Field::new("appId", DataType::Utf8, true),
        Field::new("sqlID", DataType::Int64, true),
    ];
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(
            rows.iter()
                .map(|p| Some(p.row.app_id.clone()))
                .collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from(
            rows.iter().map(|p| Some(p.row.sql_id)).collect::<Vec<_>>(),
        )),
    ];
    for (k, n) in names.iter().enumerate() {
        fields.push(Field::new(n, DataType::Float64, true));
        arrays.push(Arc::new(Float64Array::from(
            rows.iter()
                .map(|p| p.row.values.get(k).copied().filter(|v| !v.is_nan()))
                .collect::<Vec<_>>(),
        )));
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

/// The job history, one row per job (`aether report list`).
pub fn jobs(jobs: &[aether_core::history::JobSummary]) -> Result<RecordBatch> {
    batch(vec![
        Col::I("Job ID", jobs.iter().map(|j| Some(j.job_id)).collect()),
        Col::I("Config ID", jobs.iter().map(|j| j.config_id).collect()),
        Col::S(
            "App ID",
            jobs.iter().map(|j| Some(j.app_id.clone())).collect(),
        ),
        Col::S(
            "App Name",
            jobs.iter().map(|j| Some(j.app_name.clone())).collect(),
        ),
        Col::I(
            "App Duration",
            jobs.iter().map(|j| j.app_duration_ms).collect(),
        ),
        Col::F(
            "Estimated GPU Speedup",
            jobs.iter().map(|j| j.speedup.map(round2)).collect(),
        ),
        Col::S(
            "Category",
            jobs.iter().map(|j| j.category.clone()).collect(),
        ),
        Col::S(
            "GPU Cluster",
            jobs.iter().map(|j| j.gpu_cluster.clone()).collect(),
        ),
        Col::F(
            "CPU Cost USD",
            jobs.iter().map(|j| j.cpu_cost_usd.map(round2)).collect(),
        ),
        Col::F(
            "GPU Cost USD",
            jobs.iter().map(|j| j.gpu_cost_usd.map(round2)).collect(),
        ),
        Col::F(
            "Savings USD",
            jobs.iter().map(|j| j.savings_usd.map(round2)).collect(),
        ),
        Col::S(
            "Platform",
            jobs.iter().map(|j| j.platform.clone()).collect(),
        ),
        Col::I(
            "Qualifications",
            jobs.iter().map(|j| Some(j.qualifications)).collect(),
        ),
        Col::S(
            "Event Log",
            jobs.iter().map(|j| Some(j.event_log.clone())).collect(),
        ),
    ])
}

/// `aether model evaluate`: one row per SQL.
pub fn evaluation(ev: &crate::train::Evaluation) -> Result<RecordBatch> {
    let r = &ev.sqls;
    batch(vec![
        Col::S("App ID", r.iter().map(|s| Some(s.app_id.clone())).collect()),
        Col::I("SQL ID", r.iter().map(|s| Some(s.sql_id)).collect()),
        Col::S(
            "Description",
            r.iter().map(|s| Some(s.description.clone())).collect(),
        ),
        Col::F(
            "CPU Duration",
            r.iter().map(|s| Some(s.cpu_duration_ms)).collect(),
        ),
        Col::F(
            "Actual Speedup",
            r.iter().map(|s| Some(round2(s.actual_speedup))).collect(),
        ),
        Col::F(
            "Predicted Speedup",
            r.iter()
                .map(|s| Some(round2(s.predicted_speedup)))
                .collect(),
        ),
    ])
}

/// Write through a temporary file and rename, so a reader never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(PredictError::io(format!("writing {}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(PredictError::io(format!("writing {}", path.display())))?;
    Ok(())
}

/// A column name as a warehouse table has it: snake case (`Estimated GPU Speedup` →
/// `estimated_gpu_speedup`, `sqlID` → `sql_id`).
pub fn snake_case(name: &str) -> String {
    let mut out = String::new();
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase()
                && prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
            {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
        prev = Some(c);
    }
    out.trim_end_matches('_').to_string()
}

/// `b` with its columns renamed by `rename` and every column nullable.
fn renamed(b: &RecordBatch, rename: impl Fn(&str) -> String) -> Result<RecordBatch> {
    let fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| Field::new(rename(f.name()), f.data_type().clone(), true))
        .collect();
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        b.columns().to_vec(),
    )?)
}

/// The per-app tables a fleet warehouse keeps of one log (`derived/<table>/`), by table:
/// `qualification` (one row: the log's status and, when qualified, the figures of
/// `qualification_summary.csv` in snake case), `qualification_sql` (QualX's per-SQL
/// predictions), `qualx_features` (the features the model was given) and the rows of the
/// derived views kept by [`crate::qualify::QualifyOptions::derive`].
pub fn warehouse_tables(
    q: &AppQualification,
    names: &[String],
) -> Result<Vec<(String, RecordBatch)>> {
    let one = std::slice::from_ref(q);
    let st = status(one)?;
    let st_names = [
        "event_log",
        "status",
        "app_id",
        "attempt_id",
        "app_name",
        "status_reason",
    ];
    let mut fields: Vec<Field> = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for (i, n) in st_names.iter().enumerate() {
        fields.push(Field::new(*n, DataType::Utf8, true));
        cols.push(st.column(i).clone());
    }
    fields.push(Field::new("start_ms", DataType::Int64, true));
    cols.push(Arc::new(Int64Array::from(vec![q.start_ms])));
    // the summary's figures (no row unless qualified: then NULL)
    let sum = qualification_summary(one)?;
    for (f, c) in sum.schema().fields().iter().zip(sum.columns()) {
        let n = snake_case(f.name());
        if st_names.contains(&n.as_str()) || n.starts_with("aether_") {
            continue;
        }
        fields.push(Field::new(n, f.data_type().clone(), true));
        cols.push(if c.len() == 1 {
            c.clone()
        } else {
            datafusion::arrow::array::new_null_array(f.data_type(), 1)
        });
    }
    let qualification = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?;
    let key_names = |n: &str| match n {
        "appId" => "app_id".to_string(),
        "sqlID" => "sql_id".to_string(),
        n => n.to_string(),
    };
    let mut out = vec![
        ("qualification".to_string(), qualification),
        (
            "qualification_sql".to_string(),
            renamed(&per_sql(one)?, snake_case)?,
        ),
        (
            "qualx_features".to_string(),
            renamed(&features(one, names)?, key_names)?,
        ),
    ];
    out.extend(q.derived.iter().cloned());
    Ok(out)
}
