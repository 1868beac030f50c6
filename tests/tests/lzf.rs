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
    common::assert_ground_truth(&ctx, &record["ground_truth"], common::GT_CHECKS);
}
