//! `aether profile`: what a GPU run tells, and how it is written: the reference profiler's
//! (spark-rapids-tools 26.08.4, `../shared/anchor/PROFILE.md`) tables, and the profiling
//! AutoTuner's recommendation ([`crate::tuner::recommend`]) as section D of `profile.log`, a
//! `tuning_summary.log` block and a spark-defaults file.
//!
//! A recommendation lists only the properties it adds, changes, removes or cannot resolve
//! (values equal to the run's, or to Spark's default where the run left one unset, are not
//! shown); each added property gets a comment (`'<key>' was not set.`, or the tuning table's
//! own text), and rules add their own comments.

use std::collections::BTreeSet;

use crate::error::Result;
use aether_engine::SessionContext;

pub use crate::tuner::{Change, Recommended, Tuning, Worker};

/// The reference's section D of `profile.log`.
pub fn render_section_d(t: &Tuning) -> String {
    let mut s = String::from("### D. Recommended Configuration ###\n\n");
    if !t.recommended {
        s.push_str("Cannot recommend properties. See Comments.\n");
        return s;
    }
    s.push_str("Spark Properties:\n");
    for p in &t.properties {
        s.push_str(&format!("--conf {}={}\n", p.key, p.value));
    }
    s.push_str("\nComments:\n");
    for c in &t.comments {
        s.push_str(&format!("- {}\n", c.replace('\n', "\n  ")));
    }
    s
}

/// One app's block of the reference's `tuning_summary.log`.
pub fn render_summary(app_id: &str, t: &Tuning) -> String {
    let mut s = format!("App ID: {app_id}\n\tSpark Properties:\n");
    if t.properties.is_empty() {
        s.push_str("\t- No recommendations\n");
    }
    for p in &t.properties {
        s.push_str(&format!("\t--conf {}={}\n", p.key, p.value));
    }
    s.push_str("\tComments:\n");
    if t.comments.is_empty() {
        s.push_str("\t- No comments\n");
    }
    for c in &t.comments {
        s.push_str(&format!("\t- {}\n", c.replace('\n', "\n\t")));
    }
    s
}

/// A spark-defaults file: each property after the comments that concern it.
pub fn render_conf(app_id: &str, w: &Worker, t: &Tuning) -> String {
    let mut s = format!(
        "# Spark properties for {app_id} on {} (aether profile; the RAPIDS profiling AutoTuner's rules)\n",
        w.instance
    );
    if !t.recommended {
        s.push_str("# not a GPU run with the RAPIDS plugin enabled: nothing to recommend\n");
        return s;
    }
    let mut used = BTreeSet::new();
    for p in &t.properties {
        let quoted = format!("'{}", p.key);
        for (i, c) in t.comments.iter().enumerate() {
            if c.contains(&quoted) && used.insert(i) {
                for line in c.lines() {
                    s.push_str(&format!("# {line}\n"));
                }
            }
        }
        let what = match p.change {
            Change::Added => "added",
            Change::Changed => "changed",
            Change::Removed => "remove (the run's value is shown)",
            Change::Unresolved => "fill in",
        };
        let had = p
            .source
            .as_deref()
            .map(|v| {
                let short: String = v.chars().take(60).collect();
                let more = if short.len() < v.len() { "…" } else { "" };
                format!(" (the run had {short}{more})")
            })
            .unwrap_or_default();
        match p.change {
            // not a value Spark can take: left commented out
            Change::Removed | Change::Unresolved => {
                s.push_str(&format!("# {what}{had}\n# {} {}\n", p.key, p.value))
            }
            _ => s.push_str(&format!("# {what}{had}\n{} {}\n", p.key, p.value)),
        }
    }
    let rest: Vec<&String> = t
        .comments
        .iter()
        .enumerate()
        .filter(|(i, _)| !used.contains(i))
        .map(|(_, c)| c)
        .collect();
    if !rest.is_empty() {
        s.push_str("\n# Also:\n");
        for c in rest {
            for line in c.lines() {
                s.push_str(&format!("# {line}\n"));
            }
        }
    }
    s
}

/// The reference profiler's per-app tables aether writes the same: (table, view); each view
/// (`sql/profile_<table>.sql`) equals the reference's CSV of that name.
pub const REFERENCE_TABLES: &[(&str, &str)] = &[
    ("application_information", "profile_application_information"),
    ("executor_information", "profile_executor_information"),
    ("job_information", "profile_job_information"),
    (
        "stage_level_aggregated_task_metrics",
        "profile_stage_level_aggregated_task_metrics",
    ),
    (
        "job_level_aggregated_task_metrics",
        "profile_job_level_aggregated_task_metrics",
    ),
    (
        "sql_level_aggregated_task_metrics",
        "profile_sql_level_aggregated_task_metrics",
    ),
    (
        "sql_plan_metrics_for_application",
        "profile_sql_plan_metrics_for_application",
    ),
    ("failed_stages", "profile_failed_stages"),
    ("removed_executors", "profile_removed_executors"),
    ("removed_blockmanagers", "profile_removed_blockmanagers"),
    ("shuffle_skew_check", "profile_shuffle_skew_check"),
    ("failed_jobs", "profile_failed_jobs"),
    ("failed_tasks", "profile_failed_tasks"),
    (
        "gpu_stage_level_aggregated_task_metrics",
        "profile_gpu_stage_level_aggregated_task_metrics",
    ),
    (
        "gpu_sql_level_aggregated_task_metrics",
        "profile_gpu_sql_level_aggregated_task_metrics",
    ),
    (
        "gpu_app_level_aggregated_task_metrics",
        "profile_gpu_app_level_aggregated_task_metrics",
    ),
    ("io_metrics", "profile_io_metrics"),
    (
        "sql_to_stage_information",
        "profile_sql_to_stage_information",
    ),
    ("system_properties", "profile_system_properties"),
    (
        "spark_rapids_parameters_set_explicitly",
        "profile_spark_rapids_parameters_set_explicitly",
    ),
];

/// What a GPU run tells beyond the reference's tables: (table, view); list columns are written
/// by their text twin (`stage_ids` as `stages`).
pub const BEYOND_TABLES: &[(&str, &str)] = &[
    ("cpu_fallbacks", "profile_cpu_fallbacks"),
    ("slowness", "profile_slowness"),
    ("health", "profile_health"),
];

/// Register what [`crate::tuner::inputs`] reads over the base tables of `ctx`.
pub async fn prepare(ctx: &SessionContext) -> Result<()> {
    aether_engine::views::register_views_materialized(
        ctx,
        &Default::default(),
        &[
            "stage_jobs",
            "profile_shuffle_skew_check",
            "profile_sql_plan_metrics_for_application",
        ],
    )
    .await?;
    Ok(())
}

/// Register what [`crate::tuner::inputs`] and every table of `aether profile` read, each view computed once.
pub async fn prepare_tables(ctx: &SessionContext) -> Result<()> {
    // (profile_shuffle_skew_check, which inputs also read, is a reference table)
    let views: Vec<&str> = std::iter::once("stage_jobs")
        .chain(
            REFERENCE_TABLES
                .iter()
                .chain(BEYOND_TABLES)
                .map(|(_, v)| *v),
        )
        .collect();
    aether_engine::views::register_views_materialized(ctx, &Default::default(), &views).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_run_gets_nothing() {
        let t = crate::tuner::recommend(&Default::default(), &Worker::default());
        assert!(!t.recommended);
        assert!(render_section_d(&t).contains("Cannot recommend properties. See Comments."));
    }
}
