//! The analysis views on every log of `real-spark-4.3.0/` against Spark's own numbers (the
//! manifest's `gt_*` columns and `facts_json`): per-app totals of `app_summary`, rows written of
//! `row_counts`, and the findings of `bottlenecks` the workloads were built to show.

mod common;

use std::collections::HashMap;

#[test]
fn views_match_spark_ground_truth_and_name_the_planted_problems() {
    let (rows, inputs) = common::real_spark_logs();
    let ing = aether_ingest::ingest(&inputs, &Default::default());
    let ctx = common::session_with_views(&ing);

    // app_summary totals = Spark's AppStatusStore (the in-progress log's snapshot predates its
    // last events, see ground_truth.rs)
    let cols = [
        ("gt_jobs", "jobs_count"),
        ("gt_jobs_failed", "jobs_failed_count"),
        ("gt_stage_attempts", "stage_attempts_count"),
        ("gt_tasks_total", "tasks_count"),
        ("gt_tasks_failed", "tasks_failed_count"),
        ("gt_tasks_killed", "tasks_killed_count"),
        ("gt_sql_executions", "sql_count"),
        ("gt_sql_failed", "sql_failed_count"),
        ("gt_sum_executorRunTime", "run_time_ms"),
        (
            "gt_sum_executorCpuTime",
            "CAST(round(cpu_time_ms * 1000000) AS BIGINT)",
        ),
        ("gt_sum_inputBytes", "bytes_read"),
        ("gt_sum_inputRecords", "rows_read"),
        ("gt_sum_outputBytes", "bytes_written"),
        ("gt_sum_outputRecords", "rows_written"),
        ("gt_sum_shuffleReadBytes", "shuffle_read_bytes"),
        ("gt_sum_shuffleWriteBytes", "shuffle_write_bytes"),
        ("gt_sum_memoryBytesSpilled", "memory_spill_bytes"),
        ("gt_sum_diskBytesSpilled", "disk_spill_bytes"),
        ("gt_sum_jvmGcTime", "gc_time_ms"),
    ];
    let select: Vec<String> = cols
        .iter()
        .map(|(_, c)| format!("CAST({c} AS VARCHAR)"))
        .collect();
    let summary: HashMap<String, Vec<String>> = common::rows(
        &ctx,
        &format!("SELECT app_id, {} FROM app_summary", select.join(", ")),
    )
    .into_iter()
    .map(|mut r| (r.remove(0), r))
    .collect();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for r in &rows {
        if r["file"].ends_with(".inprogress") {
            continue;
        }
        let got = summary
            .get(&r["app_id"])
            .unwrap_or_else(|| panic!("{} not in app_summary", r["app_id"]));
        for (i, (gt, col)) in cols.iter().enumerate() {
            checked += 1;
            if got[i] != r[*gt] {
                wrong.push(format!(
                    "{} ({}): {col} = {}, Spark {gt} = {}",
                    r["app_name"], r["app_id"], got[i], r[*gt]
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(checked >= 37 * cols.len());

    // rows written, from SQL metrics too, equal Spark's facts
    let facts = |name: &str| -> serde_json::Value {
        let r = rows.iter().find(|r| r["app_name"] == name).unwrap();
        serde_json::from_str(&r["facts_json"]).unwrap()
    };
    let written = |name: &str| -> Vec<String> {
        common::rows(
            &ctx,
            &format!(
                "SELECT CAST(r.rows_written_task AS VARCHAR), CAST(r.rows_written_sql AS VARCHAR)
                 FROM row_counts r JOIN applications a USING (app_id)
                 WHERE a.app_name = '{name}' AND r.sql_id IS NULL"
            ),
        )
        .remove(0)
    };
    let f = facts("parquet_write");
    let want = f["rows_written_customer_copy"].as_i64().unwrap()
        + f["rows_written_partitioned_parquet"].as_i64().unwrap();
    assert_eq!(
        written("parquet_write"),
        vec![want.to_string(), want.to_string()]
    );
    let f = facts("etl_csv_parquet_json_table");
    let etl = written("etl_csv_parquet_json_table");
    assert_eq!(etl[0], etl[1]);
    assert!(
        f["rows_written_json"].as_i64().unwrap()
            + f["rows_written_by_nation_month"].as_i64().unwrap()
            <= etl[1].parse::<i64>().unwrap()
    );

    // the planted problems are found, and only where planted
    let findings: Vec<Vec<String>> = common::rows(
        &ctx,
        "SELECT a.app_name, b.kind, CAST(b.stage_id AS VARCHAR)
         FROM bottlenecks b JOIN applications a USING (app_id)",
    );
    let has = |app: &str, kind: &str| findings.iter().any(|f| f[0] == app && f[1] == kind);
    let stage_of = |app: &str, kind: &str| -> Vec<String> {
        findings
            .iter()
            .filter(|f| f[0] == app && f[1] == kind)
            .map(|f| f[2].clone())
            .collect()
    };
    // the skewed join stage: the one with the longest task relative to its median
    let skewed: Vec<String> = common::rows(
        &ctx,
        "SELECT CAST(s.stage_id AS VARCHAR) FROM stage_summary s JOIN applications a USING (app_id)
         WHERE a.app_name = 'skew_join_aqe_off' ORDER BY s.skew_ratio DESC NULLS LAST LIMIT 1",
    )
    .remove(0);
    assert_eq!(stage_of("skew_join_aqe_off", "TaskSkew"), skewed);
    assert!(!has("skew_join_aqe_skew", "TaskSkew"));
    assert!(has("spill_sort", "SpillToDisk") && has("spill_sort", "MemorySpill"));
    for app in ["python_udf", "pandas_udf", "pandas_udf__zstd"] {
        assert!(has(app, "PythonUdf"), "{app}");
    }
    assert!(has("failing_tasks", "FailedTasks"));
    assert!(has("cluster_executor_lost", "ExecutorLost"));
    for f in &findings {
        if f[0].starts_with("tpch_q") {
            assert!(
                !["FailedTasks", "ExecutorLost", "SpillToDisk", "KilledTasks"]
                    .contains(&f[1].as_str()),
                "false alarm: {f:?}"
            );
        }
    }
}
