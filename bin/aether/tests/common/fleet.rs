//! A job history with several jobs and runs, written through the history's own API (as qualify,
//! submit, tune and validate write it), with figures chosen so every KPI of the reports can be
//! worked out by hand (see `report.rs`).

use std::collections::BTreeMap;
use std::path::Path;

use aether_core::History;
use aether_core::history::{CpuRun, Qualification, Run};

pub const DAY_MS: i64 = 86_400_000;

/// The app name no page may run as markup.
pub const HOSTILE: &str = "<script>alert('x')</script><img src=x onerror=alert(1)>";

/// The jobs of [`fleet`].
pub struct Fleet {
    /// 100 s on the CPU ($10), GPU runs of 60 s ($6) then 40 s ($5) with fewer shuffle
    /// partitions; validated PASS (after a FAIL 10 days ago): migrate.
    pub etl: i64,
    pub etl_runs: (i64, i64),
    /// The same app 15 days later, 90 s, predicted 30 s ($9 → $3); not tested.
    pub etl_again: i64,
    /// Not recommended by qualify.
    pub tiny: i64,
    /// 80 s on the CPU ($8), 50 s on the GPU ($4), validated FAIL now (PASS 10 days ago).
    pub joins: i64,
    /// A hostile app name; its one GPU run failed.
    pub hostile: i64,
}

fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// What qualify records as the prices of its costs by default.
pub const LIST_PRICES: &str = "AWS list prices (on-demand EC2 + EMR fee, Nov 2026, built in)";

pub fn qualified(
    h: &mut History,
    app: &str,
    name: &str,
    start_ms: i64,
    cpu_ms: i64,
    q: (&str, f64, i64, f64, f64),
) -> (i64, i64) {
    let (category, speedup, pred_ms, cpu_cost, gpu_cost) = q;
    let r = h
        .record(
            (app, "", &format!("/logs/{app}"), name),
            &CpuRun {
                start_ms: Some(start_ms),
                app_duration_ms: cpu_ms,
                sql_stage_durations_sum_ms: cpu_ms / 2,
                unsupported_stage_duration_ms: 0,
                metrics: serde_json::json!({}),
            },
            &Qualification {
                platform: "emr".into(),
                model: "onprem".into(),
                speedup,
                app_duration_pred_ms: pred_ms,
                category: category.into(),
                not_recommended_reason: if category == "Not Recommended" {
                    "GPU SpeedUp < Qualifying Threshold (More is qualified)".into()
                } else {
                    "N/A".into()
                },
                unsupported_pct: 0.0,
                reasons: serde_json::json!([]),
                // as qualify records them: the CPU cluster inferred from the log, the GPU shape
                cpu_cluster: serde_json::json!({"cores_per_executor": 4,
                    "driver_instance": "i3.2xlarge", "dynamic_allocation": false,
                    "executor_heap_mib": 14848, "executors_per_node": 4, "num_executors": 16,
                    "num_worker_nodes": 4, "worker_instance": "m5d.4xlarge",
                    "worker_instance_match": "exact"}),
                gpu_cluster: serde_json::json!({"summary": "1 x g6.4xlarge", "shape": {
                    "instance": "g6.4xlarge", "gpu": "L4", "gpu_memory_mib": 24576, "nodes": 1,
                    "gpus_per_node": 1, "executors": 1, "cores_per_executor": 16,
                    "node_memory_mib": 65536, "hourly_usd": 1.323, "cost_usd": gpu_cost,
                    "fits_memory": true}, "price_source": LIST_PRICES}),
                spark_conf: String::new(),
                cpu_cost_usd: Some(cpu_cost),
                gpu_cost_usd: Some(gpu_cost),
                savings_usd: Some(cpu_cost - gpu_cost),
                // the prior's range, as qualify records it with no measured pairs
                range: serde_json::json!({"speedup": speedup, "low": speedup / 1.3,
                    "high": speedup * 1.3, "coverage": 0.8}),
            },
            &props(&[
                ("spark.plugins", "com.nvidia.spark.SQLPlugin"),
                ("spark.sql.shuffle.partitions", "200"),
            ]),
            None,
        )
        .unwrap();
    (r.job_id, r.config_id)
}

pub fn gpu_run(
    h: &mut History,
    job_id: i64,
    config_id: i64,
    status: &str,
    start_ms: i64,
    duration_ms: i64,
    cost: f64,
) -> i64 {
    let mut r = Run {
        job_id,
        kind: "gpu-test".into(),
        backend: Some("local".into()),
        cluster_id: Some("local-1".into()),
        step_id: Some(format!("step-{start_ms}")),
        config_id: Some(config_id),
        status: "RUNNING".into(),
        start_ms: Some(start_ms),
        ..Default::default()
    };
    r.run_id = h.start_run(&r).unwrap();
    r.status = status.into();
    r.end_ms = Some(start_ms + duration_ms);
    if status == "COMPLETED" {
        r.duration_ms = Some(duration_ms);
        r.cost_usd = Some(cost);
        // what execute_run records from the run's event log (the executor_idle view): a quarter
        // of the executor time idle, an eighth of it in gaps beyond 60 s
        r.details = serde_json::json!({"idle": {"executors": 2, "allocated_ms": 80_000,
            "idle_ms": 20_000, "idle_ms_scale_to_zero_60s": 10_000}});
    } else {
        r.failure_reason = Some("java.lang.OutOfMemoryError: GPU OOM".into());
    }
    h.finish_run(&r).unwrap();
    r.run_id
}

fn validation(h: &mut History, job_id: i64, gpu_run: i64, verdict: &str, failed: i64) -> i64 {
    let reasons: Vec<String> = if verdict == "FAIL" {
        vec![
            "FAIL row count: 20000 in the CPU output, 19999 in the GPU output".into(),
            "FAIL rows only in the CPU output: 1 (id=12345)".into(),
        ]
    } else {
        Vec::new()
    };
    h.add_validation(
        job_id,
        None,
        Some(gpu_run),
        verdict,
        failed,
        &serde_json::json!({"verdict": verdict, "reasons": reasons, "checks": []}),
    )
    .unwrap()
}

/// Write the fleet into the history at `db`; validations older than the period are dated 10
/// days back.
pub fn fleet(db: &Path) -> Fleet {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let t0 = now - 20 * DAY_MS;
    let mut h = History::open(db).unwrap();
    let (etl, c1) = qualified(
        &mut h,
        "app-etl-1",
        "etl_daily",
        t0,
        100_000,
        ("Large", 3.1, 32_000, 10.0, 4.0),
    );
    let c2 = h
        .add_config(
            etl,
            "profile",
            &props(&[
                ("spark.plugins", "com.nvidia.spark.SQLPlugin"),
                ("spark.sql.shuffle.partitions", "64"),
                ("spark.rapids.sql.concurrentGpuTasks", "2"),
            ]),
        )
        .unwrap();
    h.upsert_cluster(&aether_core::history::ClusterRecord {
        cluster_id: "local-1",
        backend: "local",
        shape_id: Some("1"),
        job_id: Some(etl),
        request_token: None,
        state: "TERMINATED",
        info: &serde_json::json!({"backend": "local", "groups": [
            {"role": "MASTER", "instance_type": "m5d.xlarge", "count": 1, "market": "ON_DEMAND"},
            {"role": "CORE", "instance_type": "g6.4xlarge", "count": 2, "market": "ON_DEMAND"}]}),
    })
    .unwrap();
    let a = gpu_run(&mut h, etl, c1, "COMPLETED", t0 + DAY_MS, 60_000, 6.0);
    let b = gpu_run(&mut h, etl, c2, "COMPLETED", t0 + 2 * DAY_MS, 40_000, 5.0);
    let tune = h
        .start_tune(etl, "local", Some("local-1"), &serde_json::json!({}))
        .unwrap();
    for (i, (run, cfg, d, dec)) in [
        (a, c1, 60_000, "faster: keep going"),
        (b, c2, 40_000, "best so far: stop"),
    ]
    .into_iter()
    .enumerate()
    {
        h.add_iteration(&aether_core::history::TuneIteration {
            tune_id: tune,
            iteration: i as i64 + 1,
            run_id: Some(run),
            config_id: cfg,
            status: "COMPLETED".into(),
            duration_ms: Some(d),
            cost_usd: None,
            changed: serde_json::json!({}),
            decision: dec.into(),
            next_config_id: None,
        })
        .unwrap();
    }
    let (etl_again, _) = qualified(
        &mut h,
        "app-etl-2",
        "etl_daily",
        t0 + 15 * DAY_MS,
        90_000,
        ("Large", 3.0, 30_000, 9.0, 3.0),
    );
    let (tiny, _) = qualified(
        &mut h,
        "app-tiny",
        "tiny_report",
        t0,
        5_000,
        ("Not Recommended", 0.9, 5_500, 0.5, 0.6),
    );
    let (joins, cj) = qualified(
        &mut h,
        "app-joins",
        "joins",
        t0,
        80_000,
        ("Medium", 1.8, 44_000, 8.0, 4.5),
    );
    let j = gpu_run(&mut h, joins, cj, "COMPLETED", t0 + DAY_MS, 50_000, 4.0);
    let (hostile, ch) = qualified(
        &mut h,
        "app-hostile",
        HOSTILE,
        t0,
        60_000,
        ("Small", 1.2, 50_000, 6.0, 5.0),
    );
    gpu_run(&mut h, hostile, ch, "FAILED", t0 + DAY_MS, 10_000, 0.0);
    // before the period: etl failed, joins passed; in it: etl passes, joins fails
    let old = [
        validation(&mut h, etl, a, "FAIL", 2),
        validation(&mut h, joins, j, "PASS", 0),
    ];
    validation(&mut h, etl, b, "PASS", 0);
    validation(&mut h, joins, j, "FAIL", 2);
    drop(h);
    let db = rusqlite::Connection::open(db).unwrap();
    for id in old {
        db.execute(
            "UPDATE validations SET created_ms = ?1 WHERE validation_id = ?2",
            rusqlite::params![now - 10 * DAY_MS, id],
        )
        .unwrap();
    }
    Fleet {
        etl,
        etl_runs: (a, b),
        etl_again,
        tiny,
        joins,
        hostile,
    }
}

/// A history of small jobs as the EMR emulator's tune leaves them: cents and fractions of a
/// cent per run. The first, whose id this returns, $0.0137 on the CPU and $0.0018 on the GPU,
/// validated PASS: migrate; the second, with a long name and app id, not recommended ($0.0041
/// on the CPU, an estimated $0.0049 on the GPU).
pub fn small_costs(db: &Path) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let t0 = now - DAY_MS;
    let mut h = History::open(db).unwrap();
    let (job, config) = qualified(
        &mut h,
        "application_1796362888574_0001",
        "sales-etl",
        t0,
        7_575,
        ("Not Recommended", 0.99, 7_650, 0.0137, 0.0026),
    );
    let run = gpu_run(&mut h, job, config, "COMPLETED", t0 + 60_000, 5_450, 0.0018);
    validation(&mut h, job, run, "PASS", 0);
    qualified(
        &mut h,
        "application_1701368813061_0008",
        "Rapids Spark Profiling Tool Unit Tests",
        t0,
        61_000,
        ("Not Recommended", 1.0, 61_000, 0.0041, 0.0049),
    );
    job
}
