//! The 958 MB log, read straight from its `.zstd` (streamed, parsed in parallel chunks), must
//! reproduce Spark's ground truth (`real-spark-4.3.0-big/record.json`) and the exact number of
//! bytes, lines and events of each kind.

mod common;

#[test]
fn big_zstd_log_matches_spark_ground_truth() {
    let dir = common::shared().join("datasets/real-spark-4.3.0-big");
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("record.json")).unwrap()).unwrap();
    let gt = &record["ground_truth"];
    let ing = aether_ingest::ingest(
        &[dir.join("local-1796010440595.zstd").display().to_string()],
        &Default::default(),
    );
    assert_eq!(ing.logs.len(), 1);
    let log = &ing.logs[0];
    assert!(log.ok(), "{:?}", log.errors);
    assert_eq!(
        log.bytes,
        record["size_bytes"].as_u64().unwrap(),
        "uncompressed bytes"
    );
    assert_eq!(log.lines, record["num_lines"].as_u64().unwrap(), "lines");

    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    common::assert_ground_truth(&ctx, gt, common::GT_CHECKS);
    common::assert_ground_truth(
        &ctx,
        gt,
        &[
            (
                "gt_tasks_failed",
                "SELECT count(*) FROM tasks WHERE status = 'failed'",
            ),
            (
                "gt_sum_shuffleWriteBytes",
                "SELECT sum(shuffle_bytes_written) FROM tasks",
            ),
        ],
    );
    // every event kind counted exactly (read or skipped)
    let counts = common::rows(&ctx, "SELECT event, count FROM event_counts");
    let derived = record["derived"].as_object().unwrap();
    assert_eq!(counts.len(), derived.len(), "{counts:?}");
    for (name, n) in derived {
        let short = name
            .strip_prefix("org.apache.spark.sql.execution.ui.")
            .unwrap_or(name);
        let got = counts
            .iter()
            .find(|c| c[0] == short)
            .unwrap_or_else(|| panic!("{short} not counted"));
        assert_eq!(got[1], n.as_i64().unwrap().to_string(), "{short}");
    }
    // fields aether does not read are listed, sampled in every chunk of the log (of a TaskStart
    // only the task's executor is read)
    let ignored = common::rows(
        &ctx,
        "SELECT sampled_events FROM ignored_fields WHERE event = 'SparkListenerTaskStart' AND field = 'Stage ID'",
    );
    assert_eq!(ignored.len(), 1, "{ignored:?}");
    assert!(
        ignored[0][0].parse::<i64>().unwrap() > 100,
        "one sample per 4 MiB chunk: {ignored:?}"
    );
}
