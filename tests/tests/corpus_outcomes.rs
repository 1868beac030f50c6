//! Every log of `rapids-tools/` and `spark-tests/` (Spark 1.2 – 3.5, Databricks, GPU, broken
//! ones) is read with the expected per-file outcome: the application id the reference tool found
//! (its `status.csv` in `../shared/anchor/golden/dev/`), and for the broken inputs the problem
//! named with the file.

mod common;

use aether_ingest::Ingested;
use std::collections::HashMap;
use std::path::Path;

fn report<'a>(ing: &'a Ingested, path: &Path) -> &'a aether_ingest::LogReport {
    let p = path.display().to_string();
    ing.logs
        .iter()
        .find(|l| l.source.trim_end_matches('/') == p.trim_end_matches('/'))
        .unwrap_or_else(|| {
            panic!(
                "no report for {p}; have {:?}",
                ing.logs.iter().map(|l| &l.source).collect::<Vec<_>>()
            )
        })
}

#[test]
fn rapids_tools_logs_have_the_reference_app_ids_and_bad_ones_are_named() {
    let shared = common::shared();
    let datasets = shared.join("datasets");
    let root = datasets.join("rapids-tools");
    let ing = aether_ingest::ingest(
        &[
            root.join("spark-events-qualification")
                .display()
                .to_string(),
            root.join("spark-events-profiling").display().to_string(),
            root.join("e2e-event-logs").display().to_string(),
            // skipped in directory scans (a .md is never a log); named explicitly, it is reported
            root.join("e2e-event-logs/onprem/README.md")
                .display()
                .to_string(),
        ],
        &Default::default(),
    );

    // the reference tool's per-file status: event log → app id (where it found one)
    let mut rdr =
        csv::Reader::from_path(shared.join("anchor/golden/dev/qual_core_output/status.csv"))
            .unwrap();
    let mut expected: HashMap<String, String> = HashMap::new();
    for rec in rdr.records() {
        let rec = rec.unwrap();
        if rec[0].starts_with("rapids-tools/") && &rec[2] != "N/A" {
            expected.insert(rec[0].to_string(), rec[2].to_string());
        }
    }
    assert_eq!(
        expected.len(),
        39,
        "rapids-tools rows with an app id in status.csv"
    );
    for (file, app_id) in &expected {
        let r = report(&ing, &datasets.join(file));
        assert_eq!(
            r.app_id.as_deref(),
            Some(app_id.as_str()),
            "{file}: {:?}",
            r.errors
        );
    }

    // the reference tool skips GPU / streaming / Photon logs; aether still reads them into tables
    for f in [
        "e2e-event-logs/gpu_eventlog.zstd",
        "e2e-event-logs/streaming_eventlog.zstd",
        "e2e-event-logs/photon_eventlog.zstd",
        "spark-events-profiling/nds_q66_gpu.zstd",
    ] {
        let r = report(&ing, &root.join(f));
        assert!(r.ok(), "{f}: {:?}", r.errors);
    }

    // broken inputs: one clear problem naming the file, good lines kept
    let malformed = report(
        &ing,
        &root.join("spark-events-profiling/malformed_json_eventlog.zstd"),
    );
    assert!(
        malformed.app_id.is_some(),
        "good lines before the damage are kept"
    );
    assert!(
        !malformed.errors.is_empty()
            && malformed
                .errors
                .iter()
                .all(|e| e.line.is_some() && e.file.ends_with("malformed_json_eventlog.zstd")),
        "{:?}",
        malformed.errors
    );

    let driverlog = report(&ing, &root.join("spark-events-profiling/driverlog"));
    assert!(driverlog.app_id.is_none());
    assert_eq!(driverlog.errors.len(), 1, "{:?}", driverlog.errors);
    assert!(
        driverlog.errors[0].error.contains("not a Spark event log"),
        "{:?}",
        driverlog.errors
    );

    let readme = report(&ing, &root.join("e2e-event-logs/onprem/README.md"));
    assert!(
        readme.app_id.is_none() && readme.errors[0].error.contains("not a Spark event log"),
        "{:?}",
        readme.errors
    );

    let no_app = report(
        &ing,
        &root.join("e2e-event-logs/incorrect_app_status_eventlog.zstd"),
    );
    assert!(
        no_app
            .errors
            .iter()
            .any(|e| e.error.contains("ApplicationStart")),
        "{:?}",
        no_app.errors
    );

    let truncated = report(
        &ing,
        &root.join("spark-events-qualification/truncated_eventlog"),
    );
    assert_eq!(truncated.app_id.as_deref(), Some("local-1622043423018"));

    // multiple attempts of one app: all kept, each with its attempt id
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    let attempts = common::rows(
        &ctx,
        "SELECT attempt_id FROM applications WHERE app_id = 'application_1724877841851_0016' AND event_log LIKE '%multiple_attempts%' ORDER BY attempt_id",
    );
    assert_eq!(attempts, vec![vec!["1"], vec!["2"], vec!["3"], vec!["4"]]);

    // the Databricks rolled directory is one log (its two files in time order)
    let db = report(
        &ing,
        &root.join("spark-events-qualification/db_sim_eventlog"),
    );
    assert!(db.ok(), "{:?}", db.errors);
    // every error row names a file that exists under the inputs
    for l in &ing.logs {
        for e in &l.errors {
            assert!(e.file.starts_with(root.to_str().unwrap()), "{e:?}");
        }
    }
}

#[test]
fn spark_history_server_logs_all_read() {
    let shared = common::shared();
    let root = shared.join("datasets/spark-tests");
    let ing = aether_ingest::ingest(&[root.display().to_string()], &Default::default());
    assert!(ing.source_errors.is_empty(), "{:?}", ing.source_errors);
    assert_eq!(
        ing.logs.len(),
        25,
        "{:?}",
        ing.logs.iter().map(|l| &l.source).collect::<Vec<_>>()
    );
    for l in &ing.logs {
        assert!(l.ok(), "{}: {:?}", l.source, l.errors);
        // Spark's history-server fixtures are named after their app id (plus _<attempt>)
        let name = Path::new(&l.source)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let app = l.app_id.as_deref().unwrap();
        // (local-1426633911242 is the second attempt of local-1426533911241 in Spark's fixtures)
        assert!(
            name.starts_with(app)
                || (name == "local-1426633911242" && app == "local-1426533911241"),
            "{name} vs {app}"
        );
    }
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    // the broken fixtures: in each pair one attempt never ended
    let rows = common::rows(
        &ctx,
        "SELECT regexp_replace(event_log, '.*/spark-events-broken/', ''), attempt_id, complete FROM applications WHERE event_log LIKE '%spark-events-broken%' ORDER BY 1",
    );
    assert_eq!(
        rows,
        vec![
            vec![
                "last-attempt-incomplete/application_1656321732247_0006_1",
                "1",
                "true"
            ],
            vec![
                "last-attempt-incomplete/application_1656321732247_0006_2",
                "2",
                "false"
            ],
            vec![
                "previous-attempt-incomplete/application_1656321732247_0006_1",
                "1",
                "false"
            ],
            vec![
                "previous-attempt-incomplete/application_1656321732247_0006_2",
                "2",
                "true"
            ],
        ]
    );
    // Spark 1.2 logs (no LogStart, no SQL) still give tasks with metrics
    let t = common::rows(
        &ctx,
        "SELECT count(*), sum(executor_run_time_ms) > 0 FROM tasks WHERE app_id = 'local-1422981759269'",
    );
    assert_eq!(t[0][1], "true");
    assert_ne!(t[0][0], "0");
}
