//! A real Spark event log written with Spark's LZF codec (bundled fixture) reads completely and
//! reproduces what Spark's REST API reported when it wrote it (`datasets/fixtures/lzf/record.json`).

mod common;

#[test]
fn lzf_log_from_spark_matches_spark_ground_truth() {
    let dir = common::repo().join("datasets/fixtures/lzf");
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("record.json")).unwrap()).unwrap();
    let app_id = record["app_id"].as_str().unwrap();
    let ing = aether_ingest::ingest(
        &[dir.join(format!("{app_id}.lzf")).display().to_string()],
        &Default::default(),
    );
    let log = &ing.logs[0];
    assert!(log.ok(), "{:?}", log.errors);
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    let r = &common::rows(
        &ctx,
        "SELECT app_id, app_name, spark_version, complete FROM applications",
    )[0];
    assert_eq!(r, &[app_id, "lzf_fixture", "4.3.0", "true"]);
    let got = &common::rows(
        &ctx,
        "SELECT (SELECT count(*) FROM jobs) AS c0, (SELECT count(*) FROM jobs WHERE status='succeeded') AS c1,
                (SELECT count(*) FROM stages) AS c2, (SELECT count(*) FROM stages WHERE status='complete') AS c3,
                (SELECT count(*) FROM stages WHERE status='skipped') AS c4, (SELECT count(*) FROM tasks WHERE status='success') AS c5,
                (SELECT sum(executor_run_time_ms) FROM tasks) AS c6, (SELECT sum(shuffle_records_written) FROM tasks) AS c7,
                (SELECT sum(shuffle_records_read) FROM tasks) AS c8, (SELECT count(*) FROM sql_executions) AS c9",
    )[0];
    let keys = [
        "gt_jobs",
        "gt_jobs_succeeded",
        "gt_stage_attempts",
        "gt_stages_complete",
        "gt_stages_skipped",
        "gt_tasks_completed",
        "gt_sum_executorRunTime",
        "gt_sum_shuffleWriteRecords",
        "gt_sum_shuffleReadRecords",
        "gt_sql_executions",
    ];
    for (k, g) in keys.iter().zip(got) {
        assert_eq!(
            g,
            &record["ground_truth"][k].as_i64().unwrap().to_string(),
            "{k}"
        );
    }
}
