//! The derived views of `sql/` and the analysis settings they read.
//!
//! Each `.sql` file holds one SELECT; it is registered as a view named after the file, after the
//! views it mentions (dependency order, found by whole-word matches of the other view names).

pub use crate::sqltext::skip_leading_comments;
use crate::sqltext::{lists_catalog, mentions};
use crate::{EngineError, Result};
use datafusion::arrow::array::{ArrayRef, Float64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

include!(concat!(env!("OUT_DIR"), "/views.rs"));

/// Name of the one-row table holding the [`AnalysisSettings`].
pub const SETTINGS_TABLE: &str = "analysis_settings";

/// Thresholds of the `bottlenecks` view and of qualification (one row, one column each, in table
/// `analysis_settings`). Bottleneck defaults are what a Spark engineer would flag by eye; the
/// qualification ones are the reference tool's.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AnalysisSettings {
    /// Task skew: longest successful task over the median one, at least this.
    pub skew_ratio_min: f64,
    /// Task skew is only worth a finding when the longest task runs at least this long.
    pub skew_task_min_ms: f64,
    /// Spill to disk: a stage spilling at least this many bytes to disk.
    pub disk_spill_min_bytes: f64,
    /// Memory spill: a stage spilling at least this many bytes (in-memory size) to disk.
    pub memory_spill_min_bytes: f64,
    /// Ratio findings (GC, fetch wait) only for stages whose tasks ran at least this long in all.
    pub stage_min_run_time_ms: f64,
    /// GC pressure: JVM GC time over executor run time of a stage, at least this.
    pub gc_ratio_min: f64,
    /// Shuffle-fetch wait: fetch wait over executor run time of a stage, at least this.
    pub fetch_wait_ratio_min: f64,
    /// Small tasks: a stage with at least this many tasks …
    pub small_tasks_min_count: f64,
    /// … whose median task takes less than this.
    pub small_task_max_ms: f64,
    /// Too few tasks: a stage running for at least this long …
    pub few_tasks_stage_min_ms: f64,
    /// … with fewer tasks than this fraction of the peak cores.
    pub few_tasks_cores_ratio_max: f64,
    /// Straggler executor: its mean task run time over the app's median executor, at least this.
    pub straggler_ratio_min: f64,
    /// Straggler executor: only executors that ran at least this many tasks.
    pub straggler_min_tasks: f64,
    /// Driver-side time: SQL wall time with no job running, at least this share …
    pub driver_time_ratio_min: f64,
    /// … and at least this long.
    pub driver_time_min_ms: f64,
    /// Python UDF: time executing Python code over the SQL's task time, at least this share
    /// (Spark 4 times the Python code; on Spark 3.5 and older the task time of the stages the
    /// Python operators ran in stands in for it, an upper bound).
    pub python_time_ratio_min: f64,
    /// Failed / killed / speculative tasks: at least this many in a stage.
    pub failed_tasks_min_count: f64,
    /// Qualification: an app is recommended for the GPU only with an estimated speedup of at
    /// least this …
    pub gpu_speedup_min: f64,
    /// … and at most this (larger estimates are not credible).
    pub gpu_speedup_max: f64,
    /// Qualification: not recommended when stages with unsupported operators take more than this
    /// percent of the app's duration.
    pub unsupported_pct_max: f64,
    /// Qualification: speedup category Small from this speedup …
    pub category_small_min: f64,
    /// … Medium from this …
    pub category_medium_min: f64,
    /// … and Large from this.
    pub category_large_min: f64,
    /// Qualification: not recommended when a stage spills more than this many bytes in memory
    /// without an aggregate, join or sort in it (the reference tool's spill heuristic, 1 TiB).
    pub spill_heuristic_min_bytes: f64,
}

impl Default for AnalysisSettings {
    fn default() -> Self {
        AnalysisSettings {
            skew_ratio_min: 4.0,
            skew_task_min_ms: 500.0,
            disk_spill_min_bytes: 1048576.0,
            memory_spill_min_bytes: 1048576.0,
            stage_min_run_time_ms: 1000.0,
            gc_ratio_min: 0.1,
            fetch_wait_ratio_min: 0.2,
            small_tasks_min_count: 200.0,
            small_task_max_ms: 100.0,
            few_tasks_stage_min_ms: 10000.0,
            few_tasks_cores_ratio_max: 0.5,
            straggler_ratio_min: 2.0,
            straggler_min_tasks: 5.0,
            driver_time_ratio_min: 0.3,
            driver_time_min_ms: 5000.0,
            python_time_ratio_min: 0.1,
            failed_tasks_min_count: 1.0,
            gpu_speedup_min: 1.3,
            gpu_speedup_max: 1_000_000.0,
            unsupported_pct_max: 25.0,
            category_small_min: 1.3,
            category_medium_min: 2.0,
            category_large_min: 3.0,
            spill_heuristic_min_bytes: 1_099_511_627_776.0,
        }
    }
}

impl AnalysisSettings {
    /// The settings as `(name, value)` pairs, in declaration order.
    pub fn pairs(&self) -> Vec<(String, f64)> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m
                .into_iter()
                .filter_map(|(k, v)| v.as_f64().map(|f| (k, f)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Change one setting by name (`skew_ratio_min=5`); unknown names and non-numbers are errors.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let v: f64 = value.trim().parse().map_err(|_| {
            EngineError::Other(format!("setting {name}: {value:?} is not a number"))
        })?;
        let mut m = match serde_json::to_value(&*self) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => return Err(EngineError::Other("settings".into())),
        };
        if !m.contains_key(name) {
            let names: Vec<String> = m.keys().cloned().collect();
            return Err(EngineError::Other(format!(
                "unknown setting {name:?}; valid: {}",
                names.join(", ")
            )));
        }
        m.insert(name.to_string(), serde_json::json!(v));
        *self = serde_json::from_value(serde_json::Value::Object(m))
            .map_err(|e| EngineError::Other(e.to_string()))?;
        Ok(())
    }
}

fn settings_batch(s: &AnalysisSettings) -> Result<(SchemaRef, RecordBatch)> {
    let pairs = s.pairs();
    let schema = Arc::new(Schema::new(
        pairs
            .iter()
            .map(|(k, _)| Field::new(k, DataType::Float64, false))
            .collect::<Vec<_>>(),
    ));
    let cols: Vec<ArrayRef> = pairs
        .iter()
        .map(|(_, v)| Arc::new(Float64Array::from(vec![*v])) as ArrayRef)
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), cols)
        .map_err(|e| EngineError::Other(e.to_string()))?;
    Ok((schema, batch))
}

/// The views each view mentions (whole words): worked out once per process, since the views
/// are fixed (some two thousand searches over their text, a few milliseconds, which every
/// statement and session paid three or four times).
static MENTIONED: std::sync::LazyLock<BTreeMap<&'static str, BTreeSet<&'static str>>> =
    std::sync::LazyLock::new(|| {
        VIEW_FILES
            .iter()
            .map(|(name, sql)| {
                let d = VIEW_FILES
                    .iter()
                    .filter(|(other, _)| other != name && mentions(sql, other))
                    .map(|(other, _)| *other)
                    .collect();
                (*name, d)
            })
            .collect()
    });

/// The views `name` mentions (none for a name that is not a view).
fn mentioned(name: &str) -> Option<&'static BTreeSet<&'static str>> {
    MENTIONED.get(name)
}

/// The views in dependency order, or the cycle that prevents one: worked out once per process.
static ORDERED: std::sync::LazyLock<
    std::result::Result<Vec<(&'static str, &'static str)>, String>,
> = std::sync::LazyLock::new(|| {
    let deps = &*MENTIONED;
    let mut done: Vec<(&'static str, &'static str)> = Vec::new();
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    while placed.len() < VIEW_FILES.len() {
        let before = placed.len();
        for (name, sql) in VIEW_FILES {
            if !placed.contains(name) && deps[name].iter().all(|d| placed.contains(d)) {
                placed.insert(name);
                done.push((name, sql));
            }
        }
        if placed.len() == before {
            let stuck: Vec<&str> = VIEW_FILES
                .iter()
                .map(|(n, _)| *n)
                .filter(|n| !placed.contains(n))
                .collect();
            return Err(format!(
                "the views {stuck:?} depend on each other in a cycle"
            ));
        }
    }
    Ok(done)
});

/// The views in an order where each comes after those it mentions.
pub fn ordered_views() -> Result<Vec<(&'static str, &'static str)>> {
    ORDERED.clone().map_err(EngineError::Other)
}

/// Register the settings table and every view (after the base tables are registered).
pub async fn register_views(ctx: &SessionContext, settings: &AnalysisSettings) -> Result<()> {
    register_views_materialized(ctx, settings, &[]).await
}

/// Register the settings table alone: with it, [`register_views_for`] can define views on
/// demand.
pub fn register_settings(ctx: &SessionContext, settings: &AnalysisSettings) -> Result<()> {
    let (schema, batch) = settings_batch(settings)?;
    let Some((schema, batches)) =
        crate::plans::register_slot(ctx, SETTINGS_TABLE, schema, vec![batch])?
    else {
        return Ok(());
    };
    ctx.deregister_table(SETTINGS_TABLE)?;
    ctx.register_table(
        SETTINGS_TABLE,
        Arc::new(MemTable::try_new(schema, vec![batches])?),
    )?;
    Ok(())
}

/// Set the settings and forget every view defined so far (a view's plan holds the settings
/// table it was planned with): [`register_views_for`] defines them again as statements need them.
pub fn reset_views(ctx: &SessionContext, settings: &AnalysisSettings) -> Result<()> {
    for (name, _) in VIEW_FILES {
        ctx.deregister_table(*name)?;
    }
    register_settings(ctx, settings)
}

/// The views a statement needs, in dependency order: those it mentions (whole words, any case)
/// and the views those mention, transitively; every view when it lists the catalog
/// (`information_schema`, `SHOW …`), which names them all.
/// A statement that creates a view or table named like one of aether's (`CREATE OR REPLACE
/// VIEW stage_summary AS …`) replaces it: aether's is not defined for it.
pub fn views_needed(sql: &str) -> Result<Vec<&'static str>> {
    let lower = sql.to_ascii_lowercase();
    let ordered = ordered_views()?;
    if lists_catalog(&lower) {
        return Ok(ordered.iter().map(|(n, _)| *n).collect());
    }
    let created = created_name(skip_leading_comments(&lower));
    let mut needed: BTreeSet<&str> = ordered
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| mentions(&lower, n) && created.as_deref() != Some(*n))
        .collect();
    close_over_dependencies(&ordered, &mut needed);
    Ok(ordered
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| needed.contains(n))
        .collect())
}

/// Whether `sql` may read any of `tables`: it names one (whole word, any case), a view it needs
/// ([`views_needed`]) names one, or it lists the catalog. A reader that knows its statements
/// up front can leave the others' data unread.
pub fn may_read(sql: &str, tables: &[&str]) -> Result<bool> {
    let lower = sql.to_ascii_lowercase();
    if lists_catalog(&lower) || tables.iter().any(|t| mentions(&lower, t)) {
        return Ok(true);
    }
    let views = views_needed(sql)?;
    Ok(VIEW_FILES
        .iter()
        .filter(|(name, _)| views.contains(name))
        .any(|(_, text)| {
            let text = text.to_ascii_lowercase();
            tables.iter().any(|t| mentions(&text, t))
        }))
}

/// The name (lower case, without schema or quotes) of the view or table a `CREATE … VIEW|TABLE`
/// statement makes; `head` in lower case, without leading comments.
fn created_name(head: &str) -> Option<String> {
    let mut words = head
        .split(|c: char| c.is_whitespace() || c == '(')
        .filter(|w| !w.is_empty());
    if words.next()? != "create" {
        return None;
    }
    loop {
        match words.next()? {
            "or" | "replace" | "temp" | "temporary" | "external" | "unbounded" => {}
            "view" | "table" => break,
            _ => return None,
        }
    }
    let mut name = words.next()?;
    if name == "if" {
        // IF NOT EXISTS
        let _ = (words.next(), words.next());
        name = words.next()?;
    }
    let last = name.rsplit('.').next()?;
    Some(last.trim_matches(|c| c == '"' || c == '`').to_string())
}

/// Add to `needed` every view that a view of it mentions, transitively (`ordered` in
/// dependency order, so one walk from the end suffices).
fn close_over_dependencies(ordered: &[(&'static str, &'static str)], needed: &mut BTreeSet<&str>) {
    for (name, _) in ordered.iter().rev() {
        if needed.contains(name)
            && let Some(deps) = mentioned(name)
        {
            needed.extend(deps.iter().filter(|d| ordered.iter().any(|(o, _)| o == *d)));
        }
    }
}

/// Define the views `sql` needs ([`views_needed`]) that the session does not have yet (after
/// [`register_settings`]); returns the views defined now. A session that defines views on
/// demand plans only what its statements read: `SELECT 1` plans none.
///
/// For a statement that lists the catalog, a view that cannot be defined (one that reads a
/// view the user replaced with their own) is left out, not an error: the listing shows the rest.
pub async fn register_views_for(ctx: &SessionContext, sql: &str) -> Result<Vec<&'static str>> {
    let mut missing = Vec::new();
    for name in views_needed(sql)? {
        if !ctx.table_exist(name)? {
            missing.push(name);
        }
    }
    if missing.is_empty() {
        return Ok(missing);
    }
    if !lists_catalog(&sql.to_ascii_lowercase()) {
        define_views(ctx, &[], Some(&missing)).await?;
        return Ok(missing);
    }
    let mut defined = Vec::new();
    for name in missing {
        match define_views(ctx, &[], Some(&[name])).await {
            Ok(()) => defined.push(name),
            Err(e) => tracing::debug!(view = name, error = %e, "left out of the listing"),
        }
    }
    Ok(defined)
}

/// Like [`register_views`], but each view named in `materialize` is computed once, right after
/// it is defined, and kept as an in-memory table that the views after it read; and only those
/// views and the views they need are registered. For a session over one small log this saves
/// planning views nobody reads and re-running shared views in every query.
pub async fn register_views_materialized(
    ctx: &SessionContext,
    settings: &AnalysisSettings,
    materialize: &[&str],
) -> Result<()> {
    register_settings(ctx, settings)?;
    define_views(ctx, materialize, None).await
}

/// Views a Ballista 55 cluster does not answer as local DataFusion does, with why: a cluster
/// session leaves them (and the views over them) out; their per-app rows are in the warehouse's
/// `derived.*` tables, computed locally by each shard.
pub const LOCAL_ONLY: &[(&str, &str)] = &[
    ("unsupported_summary", UNNEST),
    ("profile_job_level_aggregated_task_metrics", UNNEST),
    ("profile_sql_level_aggregated_task_metrics", UNNEST),
    ("profile_stage_level_aggregated_task_metrics", UNNEST),
    ("profile_io_metrics", UNNEST),
    ("profile_gpu_app_level_aggregated_task_metrics", UNNEST),
    ("executor_idle", INTERLEAVE),
    ("bottlenecks", HANG),
    ("qualx_sql_agg", HANG),
    ("qualx_stage_agg", HANG),
    ("qualx_features", HANG),
    ("unsupported_operators", HANG),
    ("profile_slowness", HANG),
    ("profile_gpu_task_metrics", HANG),
    ("profile_health", HANG),
];
const UNNEST: &str = "its UNNEST does not survive Ballista's plan serialization (the scheduler cannot decode the plan: no field __unnest_placeholder)";
const INTERLEAVE: &str =
    "its UNION is re-planned by the scheduler into an InterleaveExec that fails (can_interleave)";
const HANG: &str = "its job never finishes on Ballista 55 (the executors' task metrics do not match the scheduler's plan, or its stages stay pending)";

/// Like [`register_views`] for a session whose plans leave the process (a Ballista cluster):
/// the settings are a view of literals, since in-memory tables do not serialize, and the
/// views of [`LOCAL_ONLY`] (and those over them) are left out.
pub async fn register_views_portable(
    ctx: &SessionContext,
    settings: &AnalysisSettings,
) -> Result<()> {
    ctx.deregister_table(SETTINGS_TABLE)?;
    let cols: Vec<String> = settings
        .pairs()
        .iter()
        .map(|(k, v)| format!("CAST({v:?} AS DOUBLE) AS {k}"))
        .collect();
    ctx.sql(&format!(
        "CREATE VIEW {SETTINGS_TABLE} AS SELECT {}",
        cols.join(", ")
    ))
    .await?;
    define_views(ctx, &[], Some(&portable_views()?)).await
}

/// The views a cluster session has: all but [`LOCAL_ONLY`] and the views over them.
pub fn portable_views() -> Result<Vec<&'static str>> {
    let mut left_out: BTreeSet<&str> = LOCAL_ONLY.iter().map(|(v, _)| *v).collect();
    let mut keep = Vec::new();
    for (name, sql) in ordered_views()? {
        if left_out.contains(name) || left_out.iter().any(|o| mentions(sql, o)) {
            left_out.insert(name);
        } else {
            keep.push(name);
        }
    }
    Ok(keep)
}

/// Define the views (see [`register_views_materialized`]) once the settings are registered:
/// those of `only` when given. Each view is defined once the views it mentions are; on a
/// multi-threaded runtime the materialized views whose inputs are ready are computed side by
/// side (planning a view is single-threaded work, and most of the cost for small logs).
async fn define_views(
    ctx: &SessionContext,
    materialize: &[&str],
    only: Option<&[&str]>,
) -> Result<()> {
    let ordered = ordered_views()?;
    // the views needed: those named, and (walking back in dependency order) what they mention
    let mut needed: BTreeSet<&str> = BTreeSet::new();
    if let Some(only) = only {
        needed.extend(only.iter().copied());
    } else if materialize.is_empty() {
        needed.extend(ordered.iter().map(|(n, _)| *n));
    } else {
        needed.extend(materialize.iter().copied());
        close_over_dependencies(&ordered, &mut needed);
    }
    let todo: Vec<(&'static str, &'static str)> = ordered
        .into_iter()
        .filter(|(n, _)| needed.contains(n))
        .collect();
    // of the views defined here, those each one mentions
    let deps: Vec<Vec<usize>> = todo
        .iter()
        .map(|(name, _)| {
            let uses = mentioned(name);
            (0..todo.len())
                .filter(|&j| uses.is_some_and(|m| m.contains(todo[j].0)))
                .collect()
        })
        .collect();
    // on a multi-threaded runtime, views are computed side by side, as many at once as it has
    // workers, each on a thread of its own with a current-thread runtime: a plan's partitions
    // (a UNION's inputs) are then merged in the same order every run, as when computed in turn
    let side_by_side = tokio::runtime::Handle::try_current()
        .ok()
        .filter(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
        .map(|h| h.metrics().num_workers().max(1));
    let mut state = vec![Defined::No; todo.len()];
    let mut running: tokio::task::JoinSet<(usize, Result<()>)> = tokio::task::JoinSet::new();
    loop {
        // every view whose inputs are defined: plain views now, materialized ones computed
        let mut progressed = true;
        while progressed {
            progressed = false;
            for i in 0..todo.len() {
                if state[i] != Defined::No || deps[i].iter().any(|&d| state[d] != Defined::Yes) {
                    continue;
                }
                let (name, sql) = todo[i];
                let computed = materialize.contains(&name);
                // every slot taken: computed once one is free
                if computed && side_by_side.is_some_and(|slots| running.len() >= slots) {
                    continue;
                }
                ctx.deregister_table(name)?;
                let body = sql.trim().trim_end_matches(';');
                if computed {
                    state[i] = Defined::Computing;
                    if side_by_side.is_some() {
                        let ctx = ctx.clone();
                        running.spawn_blocking(move || (i, materialized_alone(&ctx, name, body)));
                    } else {
                        materialized(ctx, name, body).await?;
                        state[i] = Defined::Yes;
                        progressed = true;
                    }
                } else {
                    ctx.sql(&format!("CREATE VIEW {name} AS {body}"))
                        .await
                        .map_err(|e| view_error(name, e))?;
                    state[i] = Defined::Yes;
                    progressed = true;
                }
            }
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        let (i, registered) =
            done.map_err(|e| EngineError::Other(format!("a view's task: {e}")))?;
        registered?;
        state[i] = Defined::Yes;
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Defined {
    No,
    Computing,
    Yes,
}

fn view_error(name: &str, e: datafusion::error::DataFusionError) -> EngineError {
    EngineError::Other(format!("view {name} (sql/{name}.sql): {e}"))
}

/// [`materialized`] on this thread, with a current-thread runtime of its own.
fn materialized_alone(ctx: &SessionContext, name: &str, body: &str) -> Result<()> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| EngineError::Other(format!("view {name}: a runtime: {e}")))?
        .block_on(materialized(ctx, name, body))
}

/// The rows of view `name` (its SQL `body`), computed, registered as an in-memory table (a
/// slot, in a session of [`crate::plans::session_with_cached_plans`]).
async fn materialized(ctx: &SessionContext, name: &str, body: &str) -> Result<()> {
    let t0 = std::time::Instant::now();
    let (schema, batches) = crate::plans::collect(ctx, body)
        .await
        .map_err(|e| match e {
            EngineError::DataFusion(e) => view_error(name, e),
            e => e,
        })?;
    tracing::debug!(
        view = name,
        elapsed_us = t0.elapsed().as_micros() as u64,
        "materialized"
    );
    // the batches' own schema (a plan's declared nullability may differ from theirs)
    let schema = batches.first().map(|b| b.schema()).unwrap_or(schema);
    let Some((schema, batches)) = crate::plans::register_slot(ctx, name, schema, batches)? else {
        return Ok(());
    };
    let table = MemTable::try_new(schema, vec![batches]).map_err(|e| view_error(name, e))?;
    ctx.register_table(name, Arc::new(table))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_word_mentions() {
        assert!(mentions("FROM stage_summary s", "stage_summary"));
        assert!(!mentions("FROM stage_summary_x s", "stage_summary"));
        assert!(!mentions("FROM my_stage_summary", "stage_summary"));
    }

    #[test]
    fn leading_comments_show_and_create() {
        assert_eq!(
            skip_leading_comments("  -- a\n/* b /* c */ d */ SHOW TABLES"),
            "SHOW TABLES"
        );
        assert_eq!(skip_leading_comments("/* open"), "");
        assert_eq!(skip_leading_comments("SELECT 1 -- x"), "SELECT 1 -- x");
        // a comment before SHOW still lists every view
        let all = views_needed("SHOW TABLES").unwrap();
        assert_eq!(views_needed("-- the tables\nSHOW TABLES").unwrap(), all);
        assert_eq!(views_needed("/* x */ show tables").unwrap(), all);
        // a statement that makes a view named like aether's does not define aether's first
        for sql in [
            "CREATE VIEW stage_summary AS SELECT 1 AS x",
            "-- mine\ncreate or replace view aether.public.\"stage_summary\" as select 1 as x",
            "CREATE TABLE IF NOT EXISTS stage_summary AS VALUES (1)",
        ] {
            let needed = views_needed(sql).unwrap();
            assert!(!needed.contains(&"stage_summary"), "{sql}: {needed:?}");
        }
        // what such a view reads is still defined
        let needed = views_needed("CREATE VIEW stage_summary AS SELECT * FROM stage_jobs").unwrap();
        assert_eq!(needed, vec!["stage_jobs"]);
        assert_eq!(
            created_name("create view v2 as select 1"),
            Some("v2".into())
        );
        assert_eq!(created_name("select 1"), None);
    }

    /// `may_read` is what planning says: over a session whose accumulable tables were left out,
    /// exactly the views it calls free of them plan; and it sees through views, any case, and
    /// catalog listings.
    #[test]
    fn may_read_agrees_with_planning_without_the_tables() {
        let tables = aether_ingest::TASK_ACCUMULABLE_TABLES;
        let ing = aether_ingest::Ingested {
            left_out: tables.to_vec(),
            ..Default::default()
        };
        let (mut free, mut reading) = (0, 0);
        for (v, _) in VIEW_FILES {
            let sql = format!("SELECT * FROM {v}");
            let reads = may_read(&sql, &tables).unwrap();
            let ctx = crate::session();
            crate::register_ingested(&ctx, &ing).unwrap();
            register_settings(&ctx, &AnalysisSettings::default()).unwrap();
            let planned = block_on(async {
                register_views_for(&ctx, &sql).await?;
                ctx.sql(&sql).await?;
                Ok::<_, EngineError>(())
            });
            assert_eq!(planned.is_ok(), !reads, "{v}: {planned:?}");
            if reads { reading += 1 } else { free += 1 }
        }
        assert!(free > 10 && reading > 3, "{free} free, {reading} reading");
        assert!(may_read("select * from SQL_METRICS", &tables).unwrap());
        assert!(may_read("SELECT count(*) FROM qualx_features", &tables).unwrap());
        assert!(may_read("SHOW TABLES", &tables).unwrap());
        assert!(may_read("select * from information_schema.columns", &tables).unwrap());
        assert!(!may_read("SELECT stage_id, count(*) FROM tasks GROUP BY 1", &tables).unwrap());
        assert!(!may_read("SELECT * FROM sql_metrics_of_mine", &tables).unwrap());
    }

    #[test]
    fn views_are_ordered_by_dependency() {
        let order: Vec<&str> = ordered_views().unwrap().iter().map(|(n, _)| *n).collect();
        let pos = |n: &str| order.iter().position(|x| *x == n).unwrap();
        assert!(pos("stage_jobs") < pos("stage_summary"));
        assert!(pos("stage_summary") < pos("sql_summary"));
        assert!(pos("sql_summary") < pos("row_counts"));
        assert!(pos("app_summary") < pos("row_counts"));
    }

    /// A session over empty tables, with the settings and no view yet.
    fn bare_session() -> SessionContext {
        let ctx = crate::session();
        crate::register_ingested(&ctx, &Default::default()).unwrap();
        register_settings(&ctx, &AnalysisSettings::default()).unwrap();
        ctx
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn views_computed_side_by_side_equal_views_computed_in_turn() {
        // a real log (the bundled sample job's), views at several depths of the dependency order
        let log = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../datasets/sample/local-1796393658133.zstd"
        );
        let ing = aether_ingest::ingest(&[log.to_string()], &Default::default());
        assert!(ing.source_errors.is_empty(), "{:?}", ing.source_errors);
        let views = [
            "stage_jobs",
            "stage_summary",
            "profile_stage_level_aggregated_task_metrics",
            "profile_sql_to_stage_information",
            "qualx_features",
            "bottlenecks",
            "operators",
            "profile_sql_plan_metrics_for_application",
        ];
        let tables = |rt: tokio::runtime::Runtime| -> Vec<String> {
            let ctx = crate::session_with_partitions(1);
            crate::register_ingested(&ctx, &ing).unwrap();
            rt.block_on(async {
                register_views_materialized(&ctx, &AnalysisSettings::default(), &views)
                    .await
                    .unwrap();
                let mut out = Vec::new();
                for v in views {
                    let (schema, batches) = crate::query(&ctx, &format!("SELECT * FROM {v}"))
                        .await
                        .unwrap();
                    out.push(crate::render(&schema, &batches, crate::OutputFormat::Csv).unwrap());
                }
                out
            })
        };
        let side_by_side = tables(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .build()
                .unwrap(),
        );
        let in_turn = tables(
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap(),
        );
        for ((v, a), b) in views.iter().zip(&side_by_side).zip(&in_turn) {
            assert!(a.lines().count() > 1, "{v}: no rows\n{a}");
            assert_eq!(a, b, "{v}");
        }
    }

    #[test]
    fn a_statement_defines_only_the_views_it_reads() {
        block_on(async {
            let ctx = bare_session();
            assert_eq!(
                register_views_for(&ctx, "SELECT 1").await.unwrap(),
                Vec::<&str>::new()
            );
            let all: Vec<&str> = VIEW_FILES.iter().map(|(n, _)| *n).collect();
            assert!(all.iter().all(|v| !ctx.table_exist(*v).unwrap()));

            // any case; the view and what it reads, in dependency order, nothing else
            let defined = register_views_for(&ctx, "select count(*) from SQL_SUMMARY")
                .await
                .unwrap();
            let pos = |n: &str| defined.iter().position(|x| *x == n);
            assert!(pos("stage_jobs") < pos("stage_summary"), "{defined:?}");
            assert!(pos("stage_summary") < pos("sql_summary"), "{defined:?}");
            assert_eq!(defined.last(), Some(&"sql_summary"));
            for v in &all {
                assert_eq!(ctx.table_exist(*v).unwrap(), defined.contains(v), "{v}");
            }
            assert!(!defined.contains(&"bottlenecks") && !defined.contains(&"qualx_features"));
            ctx.sql("SELECT count(*) FROM sql_summary")
                .await
                .unwrap()
                .collect()
                .await
                .unwrap();
            // defined once: the next statement over it defines nothing
            assert!(
                register_views_for(
                    &ctx,
                    "SELECT * FROM sql_summary s JOIN stage_summary t USING (app_id)"
                )
                .await
                .unwrap()
                .is_empty()
            );
            // listing the catalog defines every view, so the listing is whole
            let rest = register_views_for(&ctx, "SHOW TABLES").await.unwrap();
            assert_eq!(rest.len() + defined.len(), all.len());

            // every view, each in a session of its own, plans and runs with only what it pulled in
            for v in &all {
                let ctx = bare_session();
                let defined = register_views_for(&ctx, &format!("SELECT * FROM {v}"))
                    .await
                    .unwrap();
                assert_eq!(defined.last(), Some(v));
                let df = ctx
                    .sql(&format!("SELECT * FROM {v}"))
                    .await
                    .unwrap_or_else(|e| panic!("{v} with {defined:?}: {e}"));
                df.collect()
                    .await
                    .unwrap_or_else(|e| panic!("{v} with {defined:?}: {e}"));
            }
        });
    }

    #[test]
    fn settings_set_and_reject() {
        let mut s = AnalysisSettings::default();
        s.set("skew_ratio_min", "6.5").unwrap();
        assert_eq!(s.skew_ratio_min, 6.5);
        let e = s.set("nope", "1").unwrap_err().to_string();
        assert!(
            e.contains("unknown setting") && e.contains("skew_ratio_min"),
            "{e}"
        );
        assert!(s.set("gc_ratio_min", "lots").is_err());
    }
}
