//! End-to-end tests of the `aether` binary: SQL over the bundled samples, output formats, exit
//! codes and warnings for bad input, the Parquet warehouse, and S3 input through a local
//! moto server (never real AWS).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sample() -> String {
    repo().join("datasets/sample").display().to_string()
}

fn aether(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aether"))
        .args(args)
        .output()
        .expect("run aether")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn sql_over_the_bundled_sample() {
    let o = aether(&[
        "sql",
        "--event_log",
        &sample(),
        "--format",
        "csv",
        "SELECT app_name, complete FROM applications ORDER BY app_name",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        "app_name,complete\nfailing_tasks,true\npandas_udf__zstd,true\nsales_report,true\ntpch_q18__defaults,true\ntpch_q1__snappy,true\ntpch_q3,true\ntpch_q3__lz4,true"
    );
    assert!(
        stderr(&o).is_empty(),
        "no warnings expected: {}",
        stderr(&o)
    );
}

#[test]
fn several_paths_after_one_flag_and_the_dash_spelling() {
    let s = repo().join("datasets/sample");
    let a = s.join("local-1796009671201").display().to_string();
    let b = s.join("local-1796009829641.lz4").display().to_string();
    let c = s.join("local-1796009848199.snappy").display().to_string();
    let o = aether(&[
        "sql",
        "--event_log",
        &a,
        &b,
        "--event-log",
        &c,
        "--format",
        "json",
        "SELECT count(*) AS n FROM applications",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), r#"[{"n":3}]"#);
}

/// JSON rows carry every column, `null` where NULL: scripts read the same keys from each row.
#[test]
fn sql_json_rows_have_every_column() {
    let o = aether(&[
        "sql",
        "--event_log",
        &sample(),
        "--format",
        "json",
        "SELECT app_id, sql_id, error FROM sql_executions ORDER BY app_id, sql_id",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(&stdout(&o)).unwrap();
    assert!(rows.len() > 10);
    for r in &rows {
        let keys: Vec<&str> = r.keys().map(String::as_str).collect();
        assert_eq!(keys, ["app_id", "error", "sql_id"], "{r:?}");
    }
    // the failing job's SQL has an error, the others a null one
    let errors = rows.iter().filter(|r| r["error"].is_string()).count();
    let nulls = rows.iter().filter(|r| r["error"].is_null()).count();
    assert!(
        errors >= 1 && nulls > errors,
        "errors {errors}, nulls {nulls}"
    );
}

#[test]
fn bad_inputs_are_named_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let driver = dir.path().join("driver.log");
    std::fs::write(
        &driver,
        "26/11/30 10:00:00 INFO SparkContext: Running Spark version 4.3.0\n",
    )
    .unwrap();
    let fake_lz4 = dir.path().join("x.lz4");
    std::fs::write(&fake_lz4, "{\"Event\":\"SparkListenerLogStart\"}\n").unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    let good = repo()
        .join("datasets/sample/local-1796009671201")
        .display()
        .to_string();
    // a truncated copy of a good log: the good lines are kept
    let text = std::fs::read_to_string(&good).unwrap();
    let cut = dir.path().join("cut");
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    // a real lz4 log with one byte flipped near its end: a checksum error, earlier lines kept
    let mut lz4 = std::fs::read(repo().join("datasets/sample/local-1796009829641.lz4")).unwrap();
    let at = lz4.len() * 4 / 5;
    lz4[at] ^= 0x5a;
    let corrupt = dir.path().join("corrupt.lz4");
    std::fs::write(&corrupt, &lz4).unwrap();
    let missing = dir.path().join("nope").display().to_string();
    let args = [
        "sql",
        "--event_log",
        &good,
        driver.to_str().unwrap(),
        fake_lz4.to_str().unwrap(),
        empty.to_str().unwrap(),
        cut.to_str().unwrap(),
        corrupt.to_str().unwrap(),
        &missing,
        "--format",
        "csv",
        "SELECT count(*) AS apps FROM applications",
    ];
    let o = aether(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    // the good log, the good half of the cut log, the good blocks of the corrupt one
    assert_eq!(stdout(&o).trim(), "apps\n3");
    let err = stderr(&o);
    for (file, what) in [
        (driver.to_str().unwrap(), "not a Spark event log"),
        (fake_lz4.to_str().unwrap(), "lz4"),
        (empty.to_str().unwrap(), "empty"),
        (cut.to_str().unwrap(), "cut off"),
        (corrupt.to_str().unwrap(), "lz4 block"),
        (missing.as_str(), "no such file"),
    ] {
        assert!(
            err.lines().any(|l| l.contains(file) && l.contains(what)),
            "no warning for {file} ({what}) in:\n{err}"
        );
    }
    // the problems are a table too
    let mut q = args.to_vec();
    *q.last_mut().unwrap() = "SELECT count(DISTINCT event_log) AS files FROM ingest_errors";
    let o = aether(&q);
    assert_eq!(stdout(&o).trim(), "files\n6");
    // --strict turns any problem into exit 2
    let mut strict = args.to_vec();
    strict.insert(1, "--strict");
    assert_eq!(aether(&strict).status.code(), Some(2));
    // nothing readable: exit 2
    let o = aether(&["sql", "--event_log", driver.to_str().unwrap(), "SELECT 1"]);
    assert_eq!(o.status.code(), Some(2));
    // a query error: exit 2 with the message
    let o = aether(&["sql", "--event_log", &good, "SELECT nope FROM applications"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));
}

#[test]
fn warehouse_round_trip_and_incremental_reingest() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh").display().to_string();
    let o = aether(&["ingest", &sample(), "--out", &wh]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("ingested 7 log(s)"), "{}", stderr(&o));
    let q = "SELECT (SELECT count(*) FROM tasks) AS tasks, (SELECT count(*) FROM stages) AS stages, (SELECT sum(executor_run_time_ms) FROM tasks) AS run_ms, (SELECT count(*) FROM sql_plan_nodes) AS nodes";
    let from_logs = aether(&["sql", "--event_log", &sample(), "--format", "csv", q]);
    let from_wh = aether(&["sql", "--warehouse", &wh, "--format", "csv", q]);
    assert!(from_wh.status.success(), "{}", stderr(&from_wh));
    assert_eq!(stdout(&from_logs), stdout(&from_wh));
    // again: nothing to read
    let o = aether(&["ingest", &sample(), "--out", &wh]);
    assert!(
        stderr(&o).contains("ingested 0 log(s)") && stderr(&o).contains("skipped 7"),
        "{}",
        stderr(&o)
    );
    // a new log joins the warehouse without re-reading the others
    let extra = repo().join("../shared/datasets/real-spark-4.3.0/local-1796009685770");
    assert!(
        extra.exists(),
        "the shared datasets are missing at {}",
        extra.display()
    );
    let o = aether(&["ingest", &sample(), extra.to_str().unwrap(), "--out", &wh]);
    assert!(
        stderr(&o).contains("ingested 1 log(s)") && stderr(&o).contains("skipped 7"),
        "{}",
        stderr(&o)
    );
    let o = aether(&[
        "sql",
        "--warehouse",
        &wh,
        "--format",
        "csv",
        "SELECT count(*) AS n FROM applications",
    ]);
    assert_eq!(stdout(&o).trim(), "n\n8");
    // a changed log (new mtime) is read again; an unchanged one is skipped
    let copy = dir.path().join("local-1796009685770");
    std::fs::copy(&extra, &copy).unwrap();
    let o = aether(&["ingest", copy.to_str().unwrap(), "--out", &wh]);
    assert!(stderr(&o).contains("ingested 1 log(s)"), "{}", stderr(&o));
    let o = aether(&["ingest", copy.to_str().unwrap(), "--out", &wh]);
    assert!(stderr(&o).contains("skipped 1"), "{}", stderr(&o));
    let f = std::fs::File::options().append(true).open(&copy).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(f);
    let o = aether(&["ingest", copy.to_str().unwrap(), "--out", &wh]);
    assert!(
        stderr(&o).contains("ingested 1 log(s)"),
        "a changed mtime means a re-read: {}",
        stderr(&o)
    );
}

use common::start_moto;

fn upload(endpoint: &str, bucket: &str, files: &[(&Path, &str)]) {
    let mut script = format!(
        "import boto3\ns3 = boto3.client('s3', endpoint_url='{endpoint}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\ns3.create_bucket(Bucket='{bucket}')\n"
    );
    for (path, key) in files {
        script.push_str(&format!(
            "s3.upload_file(r'{}', '{bucket}', '{key}')\n",
            path.display()
        ));
    }
    let o = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "upload failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn aether_s3(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aether"))
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_PROFILE")
        .output()
        .unwrap()
}

#[test]
fn s3_inputs_and_warehouse_through_a_local_moto_server() {
    let moto = start_moto();
    let s = repo().join("datasets/sample");
    let roll = s.join("eventlog_v2_local-1796009941265");
    upload(
        &moto.endpoint,
        "aether-logs",
        &[
            (&s.join("local-1796009671201"), "fleet/local-1796009671201"),
            (
                &s.join("local-1796009829641.lz4"),
                "fleet/local-1796009829641.lz4",
            ),
            (
                &roll.join("events_1_local-1796009941265.zstd"),
                "fleet/eventlog_v2_local-1796009941265/events_1_local-1796009941265.zstd",
            ),
            (
                &roll.join("appstatus_local-1796009941265"),
                "fleet/eventlog_v2_local-1796009941265/appstatus_local-1796009941265",
            ),
        ],
    );
    let q = "SELECT app_name, (SELECT count(*) FROM tasks t WHERE t.app_id = a.app_id) AS tasks FROM applications a ORDER BY app_name";
    let from_s3 = aether_s3(&[
        "sql",
        "--event_log",
        "s3://aether-logs/fleet/",
        "--s3-endpoint",
        &moto.endpoint,
        "--format",
        "csv",
        q,
    ]);
    assert!(from_s3.status.success(), "{}", stderr(&from_s3));
    let local = aether(&[
        "sql",
        "--event_log",
        s.join("local-1796009671201").to_str().unwrap(),
        s.join("local-1796009829641.lz4").to_str().unwrap(),
        roll.to_str().unwrap(),
        "--format",
        "csv",
        q,
    ]);
    assert_eq!(stdout(&from_s3), stdout(&local));
    assert_eq!(stdout(&from_s3).lines().count(), 4, "{}", stdout(&from_s3));

    // a warehouse on S3
    upload(&moto.endpoint, "aether-wh", &[]);
    let o = aether_s3(&[
        "ingest",
        "s3://aether-logs/fleet/",
        "--out",
        "s3://aether-wh/aether",
        "--s3-endpoint",
        &moto.endpoint,
    ]);
    assert!(
        o.status.success() && stderr(&o).contains("ingested 3 log(s)"),
        "{}",
        stderr(&o)
    );
    let o = aether_s3(&[
        "sql",
        "--warehouse",
        "s3://aether-wh/aether",
        "--s3-endpoint",
        &moto.endpoint,
        "--format",
        "csv",
        q,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), stdout(&local));

    // the selection over S3: a nested folder left out by --no_recursion (the rolling log's
    // folder still counts), an app name, the objects' LastModified as file times
    upload(
        &moto.endpoint,
        "aether-logs",
        &[(
            &s.join("local-1796009848199.snappy"),
            "fleet/older/local-1796009848199.snappy",
        )],
    );
    let dry = |extra: &[&str]| {
        let mut args: Vec<&str> = vec![
            "qualify",
            "--event_log",
            "s3://aether-logs/fleet/",
            "--s3-endpoint",
            &moto.endpoint,
            "--dry_run",
            "--format",
            "csv",
        ];
        args.extend_from_slice(extra);
        let o = aether_s3(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let h = r.headers().unwrap().clone();
        let at = |n: &str| h.iter().position(|c| c == n).unwrap();
        let (log, sel, time) = (at("Event Log"), at("Selected"), at("File Time (UTC)"));
        let mut rows: Vec<(String, String, String)> = r
            .records()
            .map(|x| {
                let x = x.unwrap();
                (x[log].to_string(), x[sel].to_string(), x[time].to_string())
            })
            .collect();
        rows.sort();
        rows
    };
    let all = dry(&[]);
    assert_eq!(all.len(), 4, "{all:?}");
    assert!(all.iter().all(|(_, _, t)| t.starts_with("20")), "{all:?}");
    let picked: Vec<(String, String)> = dry(&["--no_recursion", "--application_name", "tpch_q3"])
        .into_iter()
        .map(|(l, s, _)| (l, s))
        .collect();
    assert_eq!(
        picked,
        [
            (
                "s3://aether-logs/fleet/eventlog_v2_local-1796009941265".into(),
                "no".into()
            ),
            (
                "s3://aether-logs/fleet/local-1796009671201".into(),
                "yes".into()
            ),
            (
                "s3://aether-logs/fleet/local-1796009829641.lz4".into(),
                "yes".into()
            ),
        ]
    );

    // a .zip kept in S3 is named (listed or given), and the other logs are qualified
    upload(
        &moto.endpoint,
        "aether-logs",
        &[(&s.join("local-1796009671201"), "zipped/logs.zip")],
    );
    let o = aether_s3(&[
        "qualify",
        "--event_log",
        "s3://aether-logs/zipped/",
        "s3://aether-logs/zipped/logs.zip",
        "s3://aether-logs/fleet/local-1796009671201",
        "--s3-endpoint",
        &moto.endpoint,
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let named = "FAILURE: s3://aether-logs/zipped/logs.zip: a .zip archive in S3 is not opened";
    assert_eq!(err.matches(named).count(), 2, "{err}");
    assert!(stdout(&o).contains("local-1796009671201"), "{}", stdout(&o));

    // a missing bucket is a named problem, not a crash
    let o = aether_s3(&[
        "sql",
        "--event_log",
        "s3://no-such-bucket/x/",
        "--s3-endpoint",
        &moto.endpoint,
        "SELECT 1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("s3://no-such-bucket/x/"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_txt_list_of_paths_and_a_glob() {
    let dir = tempfile::tempdir().unwrap();
    let s = repo().join("datasets/sample");
    std::fs::copy(
        s.join("local-1796009671201"),
        dir.path().join("local-1796009671201"),
    )
    .unwrap();
    let list = dir.path().join("logs.txt");
    // a relative path (to the list's folder), an absolute one, a comment and a blank line
    std::fs::write(
        &list,
        format!(
            "# fleet\nlocal-1796009671201\n\n{}\n",
            s.join("local-1796009829641.lz4").display()
        ),
    )
    .unwrap();
    let glob = format!("{}/*.snappy", s.display());
    let o = aether(&[
        "sql",
        "--event_log",
        list.to_str().unwrap(),
        &glob,
        "--format",
        "csv",
        "SELECT app_name FROM applications ORDER BY app_name",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        "app_name\ntpch_q1__snappy\ntpch_q3\ntpch_q3__lz4"
    );
}

fn fixtures() -> String {
    repo()
        .join("datasets/fixtures/analyze")
        .display()
        .to_string()
}

/// How many logs `datasets/fixtures/analyze/` holds.
fn fixture_count() -> usize {
    std::fs::read_dir(fixtures())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "zstd")
        })
        .count()
}

#[test]
fn analyze_reports_each_app_with_its_bottlenecks() {
    let failing = repo().join("datasets/sample/local-1796009777604");
    let o = aether(&[
        "analyze",
        "--event_log",
        &fixtures(),
        failing.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let apps: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let apps = apps.as_array().expect("an array of apps");
    assert_eq!(apps.len(), fixture_count() + 1);
    let by_name = |n: &str| {
        apps.iter()
            .find(|a| a["summary"]["app_name"] == n)
            .unwrap_or_else(|| panic!("{n} missing"))
    };
    let kinds = |n: &str| -> Vec<(String, Option<i64>)> {
        by_name(n)["bottlenecks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["kind"].as_str().unwrap().to_string(),
                    f["stage_id"].as_i64(),
                )
            })
            .collect()
    };
    assert!(kinds("skew_join_aqe_off").contains(&("TaskSkew".into(), Some(2))));
    assert!(
        !kinds("skew_join_aqe_skew")
            .iter()
            .any(|k| k.0 == "TaskSkew")
    );
    assert!(kinds("spill_sort").contains(&("SpillToDisk".into(), Some(3))));
    assert!(kinds("python_udf").iter().any(|k| k.0 == "PythonUdf"));
    assert!(kinds("failing_tasks").iter().any(|k| k.0 == "FailedTasks"));
    assert!(
        kinds("cluster_executor_lost")
            .iter()
            .any(|k| k.0 == "ExecutorLost")
    );
    // Spark's facts: rows written, and the reference tool's unsupported share
    assert_eq!(by_name("parquet_write")["summary"]["rows_written"], 357791);
    let gpu = &by_name("python_udf")["gpu"];
    assert_eq!(gpu["unsupported_stage_duration_ms"], 7079);
    assert!(
        !by_name("spill_sort")["slowest_stages"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // the human report names the same things
    let o = aether(&["analyze", "--event_log", &fixtures(), "--top", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for needle in [
        "spill_sort (local-1796009817145)",
        "SpillToDisk",
        "ExecutorLost",
        "slowest stages:",
        "slowest SQL:",
        "GPU (RAPIDS): 97.8% of SQL stage time",
        // sizes in the units of the rest of the report (Spark: 35651232 and 7341585 bytes)
        "tasks spilled 7.3 MB to disk",
    ] {
        assert!(text.contains(needle), "{needle:?} not in:\n{text}");
    }
    assert!(!text.contains(" bytes"), "raw byte counts in:\n{text}");

    // csv for scripts: long form with a header
    let o = aether(&["analyze", "--event_log", &fixtures(), "--format", "csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = stdout(&o);
    assert!(csv.starts_with("app_id,app_attempt_id,section,rank,name,value,detail"));
    assert!(
        csv.lines()
            .any(|l| l.contains(",bottleneck,") && l.contains("TaskSkew"))
    );
}

#[test]
fn analyze_thresholds_are_settings() {
    let skewed = repo().join("datasets/fixtures/analyze/local-1796009731709.zstd");
    let skewed = skewed.to_str().unwrap();
    let o = aether(&[
        "analyze",
        "--event_log",
        skewed,
        "--set",
        "skew_ratio_min=8",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let apps: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(apps[0]["bottlenecks"].as_array().unwrap().len(), 0);

    let o = aether(&["analyze", "--event_log", skewed, "--set", "skew_ratio=8"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("unknown setting") && e.contains("skew_ratio_min"),
        "{e}"
    );
    let o = aether(&["analyze", "--event_log", skewed, "--set", "gc_ratio_min"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("NAME=VALUE"));
    let o = aether(&["analyze"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn analyze_over_a_warehouse_equals_analyze_over_the_logs() {
    let wh = tempfile::tempdir().unwrap();
    let wh_path = wh.path().to_str().unwrap();
    let o = aether(&["ingest", &fixtures(), "--out", wh_path]);
    assert!(o.status.success(), "{}", stderr(&o));
    let from_logs = aether(&["analyze", "--event_log", &fixtures(), "--format", "json"]);
    let from_wh = aether(&["analyze", "--warehouse", wh_path, "--format", "json"]);
    assert!(from_wh.status.success(), "{}", stderr(&from_wh));
    let a: serde_json::Value = serde_json::from_str(&stdout(&from_logs)).unwrap();
    let b: serde_json::Value = serde_json::from_str(&stdout(&from_wh)).unwrap();
    assert_eq!(a.as_array().unwrap().len(), fixture_count());
    assert_eq!(a, b);
}

fn aether_home(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aether"))
        .args(args)
        .env("AETHER_HOME", home)
        .output()
        .expect("run aether")
}

#[test]
fn config_init_list_get_set_and_refusals() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    let o = aether_home(home, &["config", "init"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(home.join("config.toml").exists());

    let o = aether_home(home, &["config", "set", "platform.emr.region", "eu-west-1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = aether_home(home, &["config", "get", "platform.emr.region"]);
    assert_eq!(stdout(&o).trim(), "eu-west-1");
    let o = aether_home(
        home,
        &[
            "config",
            "set",
            "platform.emr.gpu_instance_types",
            "g5.2xlarge,g6.4xlarge",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));

    let list = stdout(&aether_home(home, &["config", "list"]));
    for key in [
        "core.selected_platform = emr",
        "core.history_db = ",
        "platform.emr.region = eu-west-1",
        "platform.emr.spark_event_log_dir = (unset)",
        "platform.emr.cluster.artifacts_path = (unset)",
        "platform.emr.cluster.log_path = (unset)",
        "platform.emr.gpu_instance_types = g5.2xlarge,g6.4xlarge",
        "platform.emr.pricing_file = (unset)",
    ] {
        assert!(list.contains(key), "{key:?} not in:\n{list}");
    }
    assert!(list.contains(&home.join("history.db").display().to_string()));

    // unset keys: nothing printed, exit 1
    let o = aether_home(home, &["config", "get", "platform.emr.pricing_file"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).is_empty());

    // unknown keys list the valid ones; bad values say the expected form; nothing changes
    let o = aether_home(home, &["config", "set", "core.platform", "emr"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("unknown key") && e.contains("core.selected_platform"),
        "{e}"
    );
    let o = aether_home(home, &["config", "set", "core.selected_platform", "gcp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("one of emr, onprem"), "{}", stderr(&o));
    let o = aether_home(
        home,
        &["config", "set", "platform.emr.cluster.log_path", "logs/"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("s3://bucket/prefix"));
    let o = aether_home(home, &["config", "get", "platform.emr.region"]);
    assert_eq!(stdout(&o).trim(), "eu-west-1");

    // --config points elsewhere; a broken file is named
    let other = home.join("other.toml");
    std::fs::write(&other, "[core]\nselected_platform = \"mainframe\"\n").unwrap();
    let o = aether_home(
        home,
        &["config", "--config", other.to_str().unwrap(), "list"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("other.toml"), "{}", stderr(&o));

    // init keeps an existing file
    let o = aether_home(home, &["config", "init"]);
    assert!(o.status.success());
    let o = aether_home(home, &["config", "get", "platform.emr.region"]);
    assert_eq!(stdout(&o).trim(), "eu-west-1");
}

/// `aether qualify` on the bundled sample: the reference tool's speedup for tpch_q3
/// (`local-1796009671201`, golden per_app.csv), the output files, --explain, and clear errors
/// for a file that is not a booster, a model needing a feature aether lacks, and an unknown
/// platform.
#[test]
fn qualify_the_sample_writes_reports_and_refuses_bad_models() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("out");
    let o = aether_home(
        home.path(),
        &[
            "qualify",
            "--event_log",
            &sample(),
            "--output",
            out.to_str().unwrap(),
            "--format",
            "csv",
            "--explain",
            "3",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with(
            "Aether Job ID,Aether Shape ID,Aether Config ID,App ID,App Name,Estimated GPU Speedup,Speedup Low,Speedup High,Category"
        ),
        "{text}"
    );
    assert!(
        text.contains("raises the speedup") || text.contains("lowers it"),
        "{text}"
    );

    // the reference tool's per-app speedup of tpch_q3
    let golden = repo().join("../shared/anchor/golden/dev/xgboost_predictions/per_app.csv");
    let mut r = csv::Reader::from_path(&golden).unwrap();
    let h = r.headers().unwrap().clone();
    let (ia, is) = (
        h.iter().position(|c| c == "appId").unwrap(),
        h.iter().position(|c| c == "speedup").unwrap(),
    );
    let want: f64 = r
        .records()
        .map(|x| x.unwrap())
        .find(|x| &x[ia] == "local-1796009671201")
        .map(|x| x[is].parse().unwrap())
        .unwrap();
    let mut s = csv::Reader::from_path(out.join("qualification_summary.csv")).unwrap();
    let h = s.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|c| c == n).unwrap();
    let (ia, is) = (col("App ID"), col("Unrounded GPU Speedup"));
    let rows: Vec<csv::StringRecord> = s.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 7, "seven sample apps");
    let got: f64 = rows
        .iter()
        .find(|x| &x[ia] == "local-1796009671201")
        .map(|x| x[is].parse().unwrap())
        .unwrap();
    assert!((got - want).abs() < 1e-3 * want, "{got} vs {want}");
    // the sample job (datasets/sample-job) is recommended, in the reference tool's category
    let reference = repo().join("datasets/sample-job/reference/qualification_summary.csv");
    let mut r = csv::Reader::from_path(&reference).unwrap();
    let h = r.headers().unwrap().clone();
    let rc = |n: &str| h.iter().position(|c| c == n).unwrap();
    let want = r.records().next().unwrap().unwrap();
    let want_category = &want[rc("Estimated GPU Speedup Category")];
    let job = rows
        .iter()
        .find(|x| x[ia] == want[rc("App ID")])
        .expect("the sample job's app");
    assert_eq!(&job[col("App Name")], "sales_report");
    assert_eq!(&job[col("Estimated GPU Speedup Category")], want_category);
    assert_eq!(
        &job[col("Estimated GPU Speedup")],
        &want[rc("Estimated GPU Speedup")]
    );
    assert!(
        ["Small", "Medium", "Large"].contains(&want_category),
        "{want_category}"
    );

    let f = std::fs::read_to_string(out.join("features.csv")).unwrap();
    let header: Vec<&str> = f.lines().next().unwrap().split(',').collect();
    assert_eq!(&header[..3], &["appId", "sqlID", "numTasks_sum"]);
    assert_eq!(header.len(), 2 + 118);
    assert!(out.join("per_sql.csv").exists() && out.join("status.csv").exists());
    // per app: Spark configs (spark-defaults, each value with its reason) and the cluster shape
    let conf = std::fs::read_to_string(out.join("local-1796009671201.conf")).unwrap();
    assert!(
        conf.contains("\nspark.plugins com.nvidia.spark.SQLPlugin\n"),
        "{conf}"
    );
    assert!(
        conf.lines().filter(|l| l.starts_with("# ")).count() > 10,
        "{conf}"
    );
    let shape: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("local-1796009671201-cluster.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(shape["source"]["worker_instance"], "m5d.large");
    assert_eq!(shape["reference"]["instance"], "g6.4xlarge");
    assert!(shape["recommended"]["fits_memory"].as_bool().unwrap());
    assert!(shape["gpu_cost_usd"].as_f64().unwrap() > 0.0);

    // not a booster
    let bad = home.path().join("bad.json");
    std::fs::write(&bad, "{\"not\": \"a model\"}").unwrap();
    let o = aether_home(
        home.path(),
        &[
            "qualify",
            "--event_log",
            &sample(),
            "--model",
            bad.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not an XGBoost booster"),
        "{}",
        stderr(&o)
    );
    // a booster whose features include one aether does not compute
    let model = std::fs::read_to_string(repo().join("models/qualx/emr.json")).unwrap();
    let odd = home.path().join("odd.json");
    std::fs::write(&odd, model.replacen("\"scan_bw\"", "\"gpu_magic\"", 1)).unwrap();
    let o = aether_home(
        home.path(),
        &[
            "qualify",
            "--event_log",
            &sample(),
            "--model",
            odd.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("gpu_magic"), "{}", stderr(&o));
    // a refused --platform: exit 2, the reason on stderr
    let refused = |platform: &str, why: &str| {
        let o = aether_home(
            home.path(),
            &["qualify", "--event_log", &sample(), "--platform", platform],
        );
        assert_eq!(o.status.code(), Some(2), "{platform}");
        assert!(stderr(&o).contains(why), "{}", stderr(&o));
    };
    // unknown platform
    refused(
        "mainframe",
        "unknown platform \"mainframe\"; known: emr, onprem, dataproc",
    );
    // a platform QualX knows but aether has no built-in model for: a booster is asked for
    refused(
        "Databricks_AWS",
        "no built-in model for platform databricks-aws (built in: emr, onprem): give a booster",
    );
    // a broken pricing file (platform.emr.pricing_file): the file and line are named
    let prices = home.path().join("prices.csv");
    std::fs::write(
        &prices,
        "region,instance,ec2_usd_per_hour,emr_usd_per_hour\nus-east-1,g6.4xlarge,free,0\n",
    )
    .unwrap();
    let o = aether_home(
        home.path(),
        &[
            "config",
            "set",
            "platform.emr.pricing_file",
            prices.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = aether_home(home.path(), &["qualify", "--event_log", &sample()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("prices.csv:2"), "{}", stderr(&o));
    // a good one changes the costs
    std::fs::write(
        &prices,
        "region,instance,ec2_usd_per_hour,emr_usd_per_hour\nus-east-1,g6.4xlarge,0.001,0\n",
    )
    .unwrap();
    let o = aether_home(
        home.path(),
        &["qualify", "--event_log", &sample(), "--format", "csv"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("1 x g6.4xlarge"), "{}", stdout(&o));
}

/// Logs of other engines are named in the status, not scored as plain Spark: a Gluten (Velox)
/// log and a Databricks Photon log, each the sample's tpch_q3 log with the properties those
/// engines set at launch; and the dry run names their engines.
#[test]
fn gluten_and_photon_logs_are_named() {
    let home = tempfile::tempdir().unwrap();
    let logs = home.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let q3 = std::fs::read_to_string(repo().join("datasets/sample/local-1796009671201")).unwrap();
    let with = |props: &str| {
        q3.replacen(
            "\"Spark Properties\":{",
            &format!("\"Spark Properties\":{{{props},"),
            1,
        )
    };
    std::fs::write(
        logs.join("gluten-app"),
        with("\"spark.plugins\":\"org.apache.gluten.GlutenPlugin\",\"spark.gluten.sql.columnar.backend.lib\":\"velox\""),
    )
    .unwrap();
    std::fs::write(
        logs.join("photon-app"),
        with("\"spark.databricks.clusterUsageTags.runtimeEngine\":\"PHOTON\""),
    )
    .unwrap();
    let o = aether_home(
        home.path(),
        &["qualify", "--event_log", logs.to_str().unwrap()],
    );
    let err = stderr(&o);
    let dir = logs.display();
    assert!(
        err.contains(&format!(
            "SKIPPED: {dir}/gluten-app: a Gluten (Velox) app: its SQL ran on Gluten's native \
             engine, not Spark's CPU operators the qualification judges"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "SKIPPED: {dir}/photon-app: a Databricks Photon app: platform 'emr' has no Photon"
        )),
        "{err}"
    );
    let dry = aether_home(
        home.path(),
        &[
            "qualify",
            "--event_log",
            logs.to_str().unwrap(),
            "--dry_run",
            "--format",
            "json",
        ],
    );
    assert!(dry.status.success(), "{}", stderr(&dry));
    let rows: serde_json::Value = serde_json::from_str(&stdout(&dry)).unwrap();
    let engine = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["Event Log"].as_str().unwrap().ends_with(name))
            .map(|r| r["Engine"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(engine("gluten-app"), "Gluten (Velox)");
    assert_eq!(engine("photon-app"), "Databricks Photon");
}

/// The selection flags on `qualify`: the N newest apps qualified and the rest reported as
/// SKIPPED with the reason (stderr and status.csv); `--dry_run` lists what a negated name picks,
/// with each log's app and codec, and writes nothing (no history).
#[test]
fn qualify_selects_apps_and_dry_runs() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("out");
    let o = aether_home(
        home.path(),
        &[
            "qualify",
            "--event_log",
            &sample(),
            "--filter-criteria",
            "2-newest",
            "--format",
            "csv",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let mut apps: Vec<String> = stdout(&o)
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(4).unwrap().to_string())
        .collect();
    apps.sort();
    assert_eq!(apps, ["sales_report", "tpch_q18__defaults"]);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "SKIPPED: {}/local-1796009671201: not among the 2 newest by application start \
             (--filter_criteria 2-newest)",
            sample()
        )),
        "{err}"
    );
    let status = std::fs::read_to_string(out.join("status.csv")).unwrap();
    assert_eq!(status.matches("SKIPPED").count(), 5, "{status}");

    let dry = aether_home(
        home.path(),
        &[
            "qualify",
            "--event_log",
            &sample(),
            "--application_name",
            "~tpch",
            "--dry_run",
            "--format",
            "csv",
        ],
    );
    assert!(dry.status.success(), "{}", stderr(&dry));
    let text = stdout(&dry);
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let h = r.headers().unwrap().clone();
    let col = |n: &str| {
        h.iter()
            .position(|c| c == n)
            .unwrap_or_else(|| panic!("{n}: {h:?}"))
    };
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 7);
    let mut picked: Vec<&str> = rows
        .iter()
        .filter(|x| &x[col("Selected")] == "yes")
        .map(|x| &x[col("App Name")])
        .collect();
    picked.sort();
    assert_eq!(
        picked,
        ["failing_tasks", "pandas_udf__zstd", "sales_report"]
    );
    let lz4 = rows
        .iter()
        .find(|x| x[col("Event Log")].ends_with(".lz4"))
        .unwrap();
    assert_eq!(&lz4[col("Selected")], "no");
    assert_eq!(&lz4[col("Codec")], "lz4");
    assert_eq!(&lz4[col("App Name")], "tpch_q3__lz4");
    assert_eq!(
        &lz4[col("Reason")],
        "app name \"tpch_q3__lz4\" is not selected by --application_name ~tpch"
    );
    assert!(
        stderr(&dry).contains("dry run: 3 log(s) selected"),
        "{}",
        stderr(&dry)
    );
    // nothing written: a dry run in a new home leaves it empty (no history, no settings)
    let dry_home = tempfile::tempdir().unwrap();
    let o = aether_home(
        dry_home.path(),
        &["qualify", "--event_log", &sample(), "--dry_run"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let left: Vec<_> = std::fs::read_dir(dry_home.path()).unwrap().collect();
    assert!(left.is_empty(), "a dry run wrote {left:?}");
}

/// `qualify` at a terminal width (`None`: unknown, as through a pipe).
fn qualify_at(home: &Path, columns: Option<&str>, extra: &[&str]) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_aether"));
    c.env("AETHER_HOME", home)
        .args(["qualify", "--event_log", &sample()])
        .args(extra);
    match columns {
        Some(n) => c.env("COLUMNS", n),
        None => c.env_remove("COLUMNS"),
    };
    let o = c.output().expect("run aether");
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

/// The widest line, in characters (what a terminal shows).
fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Whether a table line shows `name` whole, or cut (`…`) after at least its first character.
fn shows(line: &str, name: &str) -> bool {
    line.contains(name)
        || (1..name.len())
            .filter(|k| name.is_char_boundary(*k))
            .any(|k| line.contains(&format!("{}…", &name[..k])))
}

/// qualify's terminal table fits the terminal: 120 columns when its width is unknown,
/// `COLUMNS` when set; each app with its ids, speedup, recommendation and savings (the
/// figures of the CSV); `--wide` is the full table; CSV ignores the width.
#[test]
fn qualify_table_fits_the_terminal() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let csv_text = qualify_at(home, Some("40"), &["--format", "csv"]);
    assert!(
        csv_text.starts_with("Aether Job ID,Aether Shape ID,Aether Config ID,App ID,App Name,Estimated GPU Speedup,Speedup Low,Speedup High,Category,Range vs Threshold,Estimated GPU Duration,App Duration,Unsupported Operators Stage Duration Percent,Recommended GPU Cluster,CPU Cost USD,GPU Cost USD,Savings USD,Savings Low USD,Savings High USD,Not Recommended Reason,Speedup Range Source\n"),
        "{csv_text}"
    );
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|c| c == n).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert!(rows.len() >= 6, "the sample's apps: {csv_text}");
    assert!(
        widest(&csv_text) > 120,
        "CSV rows are never fitted: {csv_text}"
    );

    for (columns, width) in [(None, 120), (Some("100"), 100), (Some("80"), 80)] {
        let text = qualify_at(home, columns, &[]);
        assert!(widest(&text) <= width, "{columns:?}:\n{text}");
        let header = text.lines().next().unwrap();
        assert!(
            header.starts_with("Job  Shape  Config  App ID ")
                && header.contains("  Speedup  ")
                && header.contains("  Recommendation"),
            "{header}"
        );
        // at 120 every column of the summary a decision needs; narrower, the cluster and
        // then the savings and the speedup's range give way
        assert_eq!(header.contains("GPU Cluster"), width == 120, "{header}");
        assert_eq!(header.contains("Savings USD"), width >= 100, "{header}");
        assert_eq!(header.contains("  Range  "), width >= 100, "{header}");
        assert_eq!(text.lines().count(), rows.len() + 1, "{text}");
        for row in &rows {
            let app = &row[col("App ID")];
            let line = text
                .lines()
                .find(|l| l.contains(app))
                .unwrap_or_else(|| panic!("{app} in\n{text}"));
            let ids: Vec<&str> = line.split_whitespace().take(4).collect();
            // the job keeps its id; shapes and configs are stored anew by each qualify
            assert_eq!(ids[0], &row[col("Aether Job ID")], "{line}");
            assert!(ids[1].parse::<i64>().is_ok() && ids[2].parse::<i64>().is_ok());
            assert_eq!(ids[3], app, "{line}");
            assert!(shows(line, &row[col("App Name")]), "{line}");
            let speedup: f64 = row[col("Estimated GPU Speedup")].parse().unwrap();
            let category = &row[col("Category")];
            let range = if width >= 100 {
                let f = |c: &str| row[col(c)].parse::<f64>().unwrap();
                format!("{:.1}-{:.1}  ", f("Speedup Low"), f("Speedup High"))
            } else {
                String::new()
            };
            assert!(
                line.contains(&format!(" {speedup:.2}  {range}{category}")),
                "{speedup} {range}{category}: {line}"
            );
            if width >= 100 {
                let savings: f64 = row[col("Savings USD")].parse().unwrap();
                assert!(line.contains(&format!(" {savings:.4}")), "{line}");
            }
            if width == 120 {
                assert!(
                    line.ends_with(&row[col("Recommended GPU Cluster")]),
                    "{line}"
                );
            }
        }
    }

    // --wide: every column of the summary, as before (whatever the terminal)
    let wide = qualify_at(home, Some("80"), &["--wide"]);
    assert!(wide.starts_with("+---"), "{wide}");
    assert!(
        wide.contains("| Aether Job ID | Aether Shape ID | Aether Config ID | App ID "),
        "{wide}"
    );
    for c in [
        "Estimated GPU Duration",
        "Unsupported Operators Stage Duration Percent",
        "CPU Cost USD",
        "Not Recommended Reason",
    ] {
        assert!(wide.contains(c), "{c}: {wide}");
    }
    assert!(widest(&wide) > 120, "{wide}");
    for row in &rows {
        assert!(wide.contains(&row[col("Not Recommended Reason")]), "{wide}");
    }
}

fn report_jobs(home: &Path) -> Vec<(String, String, String)> {
    let o = aether_home(home, &["report", "list", "--format", "csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut r = csv::Reader::from_reader(o.stdout.as_slice());
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|c| c == n).unwrap();
    let (id, log, n) = (col("Job ID"), col("Event Log"), col("Qualifications"));
    r.records()
        .map(|x| {
            let x = x.unwrap();
            (x[id].to_string(), x[log].to_string(), x[n].to_string())
        })
        .collect()
}

/// Two `aether qualify` processes writing the job history at once: every app is recorded once
/// as a job, each with both qualifications, and the same log keeps its job id.
#[test]
fn job_history_with_two_writers_at_once() {
    let home = tempfile::tempdir().unwrap();
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_aether"))
            .args(["qualify", "--event_log", &sample(), "--threads", "1"])
            .env("AETHER_HOME", home.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for c in [a, b] {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let jobs = report_jobs(home.path());
    assert_eq!(jobs.len(), 7, "{jobs:?}");
    assert!(jobs.iter().all(|(_, _, n)| n == "2"), "{jobs:?}");
    // once more: the same job ids
    let o = aether_home(home.path(), &["qualify", "--event_log", &sample()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let again = report_jobs(home.path());
    let ids = |j: &[(String, String, String)]| {
        j.iter()
            .map(|(i, l, _)| (i.clone(), l.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&again), ids(&jobs));
    assert!(again.iter().all(|(_, _, n)| n == "3"));
}

/// A qualify run killed midway keeps every app it recorded (the database stays sound), and the
/// next run gives those logs the same job ids.
#[test]
fn job_history_survives_a_killed_run() {
    let home = tempfile::tempdir().unwrap();
    let logs = repo().join("../shared/datasets/rapids-tools");
    let mut child = Command::new(env!("CARGO_BIN_EXE_aether"))
        .args([
            "qualify",
            "--event_log",
            logs.to_str().unwrap(),
            "--threads",
            "1",
            // many small sessions, so that it is killed midway (a batch of up to 64 logs is
            // recorded at once, often the whole run before a poll sees its first apps)
            "--batch-logs",
            "2",
        ])
        .env("AETHER_HOME", home.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let db = home.path().join("history.db");
    let t0 = std::time::Instant::now();
    // wait until a few apps are recorded, then kill it hard
    loop {
        if db.exists() && report_jobs(home.path()).len() >= 3 {
            break;
        }
        assert!(t0.elapsed().as_secs() < 120, "nothing recorded");
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before it could be killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = report_jobs(home.path());
    assert!(before.len() >= 3);
    let o = aether_home(
        home.path(),
        &["qualify", "--event_log", logs.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let after = report_jobs(home.path());
    assert!(after.len() > before.len());
    for (id, log, _) in &before {
        assert!(
            after.iter().any(|(i, l, _)| i == id && l == log),
            "job {id} ({log}) changed"
        );
    }
}

/// `aether model train` / `evaluate` on the reference tool's CPU/GPU log pairs (the only pairs
/// in the datasets: two SQL executions match by id and description). The trained booster loads
/// with the platform's 118 feature names, and fits its training data better than the built-in
/// model does; an unmatched pair is a warning, a broken pairs file an error.
#[test]
fn model_train_and_evaluate_on_cpu_gpu_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let r = repo().join("../shared/datasets/rapids-tools");
    let pairs = dir.path().join("pairs.csv");
    std::fs::write(
        &pairs,
        format!(
            "cpu_log,gpu_log\n{0}/spark-events-profiling/eventlog_dsv1.zstd,{0}/spark-events-profiling/eventlog-gpu-dsv1.zstd\n\
             {0}/spark-events-profiling/eventlog_dsv2.zstd,{0}/spark-events-profiling/eventlog-gpu-dsv2.zstd\n\
             {0}/spark-events-qualification/dsAndDf_eventlog.zstd,{0}/spark-events-qualification/gpu_eventlog\n",
            r.display()
        ),
    )
    .unwrap();
    let model = dir.path().join("m.json");
    let o = aether(&[
        "model",
        "train",
        "--pairs",
        pairs.to_str().unwrap(),
        "--out",
        model.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("trained on 2 SQL executions from 3 pairs (1 skipped)"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("no SQL of the CPU run matches"),
        "{}",
        stderr(&o)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(
        json["learner"]["feature_names"].as_array().unwrap().len(),
        118
    );

    let mape = |extra: &[&str]| -> f64 {
        let mut args = vec![
            "model",
            "evaluate",
            "--pairs",
            pairs.to_str().unwrap(),
            "--format",
            "csv",
        ];
        args.extend_from_slice(extra);
        let o = aether(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let e = stderr(&o);
        let m = e.split("MAPE ").nth(1).unwrap().split(' ').next().unwrap();
        assert_eq!(stdout(&o).lines().count(), 3, "{}", stdout(&o));
        m.parse().unwrap()
    };
    let builtin = mape(&[]);
    let trained = mape(&["--model", model.to_str().unwrap()]);
    assert!(
        trained < builtin,
        "trained {trained} % vs built-in {builtin} %"
    );

    std::fs::write(&pairs, "cpu,gpu\na,b\n").unwrap();
    let o = aether(&[
        "model",
        "train",
        "--pairs",
        pairs.to_str().unwrap(),
        "--out",
        model.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("missing column \"cpu_log\""),
        "{}",
        stderr(&o)
    );
}

/// The settings choose where the workflow runs: `onprem` has no run backend (said, with what
/// to set), `core.run_on` chooses one, an id names its platform and one that contradicts
/// `--platform` is an error naming both; ids are taken as printed (`aether-1` or `1`).
#[test]
fn workflow_commands_follow_the_settings_and_take_ids_as_printed() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    let set = |k: &str, v: &str| {
        let o = aether_home(home, &["config", "set", k, v]);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    set("core.selected_platform", "onprem");
    let o = aether_home(home, &["cluster", "list"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("onprem") && e.contains("no run backend") && e.contains("core.run_on local"),
        "{e}"
    );
    // the run backend, as a user sets it; `config list` shows it
    set("core.run_on", "local");
    let list = stdout(&aether_home(home, &["config", "list"]));
    assert!(list.contains("core.run_on = local"), "{list}");
    let o = aether_home(home, &["config", "set", "core.run_on", "dataproc"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("one of emr, emr-eks, local"),
        "{}",
        stderr(&o)
    );
    let o = aether_home(home, &["cluster", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // an EMR cluster id with --platform local: both named, nothing run
    let o = aether_home(
        home,
        &[
            "cluster",
            "terminate",
            "--platform",
            "local",
            "--cluster_id",
            "j-1ABCDEFGHIJK",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("j-1ABCDEFGHIJK") && e.contains("emr") && e.contains("--platform local"),
        "{e}"
    );
    // ids as printed
    let o = aether_home(home, &["qualify", "--event_log", &sample()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let plain = aether_home(home, &["report", "job", "--aether_job_id", "1"]);
    assert!(plain.status.success(), "{}", stderr(&plain));
    let prefixed = aether_home(home, &["report", "job", "--aether_job_id", "aether-1"]);
    assert!(prefixed.status.success(), "{}", stderr(&prefixed));
    let first = |o: &Output| stdout(o).lines().next().unwrap_or("").to_string();
    assert!(first(&plain).starts_with("job 1: "), "{}", stdout(&plain));
    assert_eq!(first(&plain), first(&prefixed));
    let o = aether_home(home, &["report", "job", "--aether_job_id", "first"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("aether-12"), "{}", stderr(&o));
}

/// A fleet larger than the console's table (120 copies of a real log, each its own app id, and
/// one broken log): every log is in status.csv in path order, every qualified app in
/// qualification_summary.csv, the history and `--format csv`'s output; the table shows the
/// 100 with the highest speedup and says so; no spill folder is left in the output folder.
#[test]
fn a_fleet_beyond_the_console_streams_every_app_out() {
    let d = tempfile::tempdir().unwrap();
    let (logs, out, home) = (
        d.path().join("logs"),
        d.path().join("out"),
        d.path().join("h"),
    );
    std::fs::create_dir(&logs).unwrap();
    let original = "local-1796009671201";
    let text = std::fs::read_to_string(repo().join("datasets/sample").join(original)).unwrap();
    for i in 0..120 {
        let app = format!("local-17961{i:08}");
        std::fs::write(logs.join(&app), text.replace(original, &app)).unwrap();
    }
    std::fs::write(logs.join("local-1796199999999"), "not an event log\n").unwrap();
    let args = ["qualify", "--event_log", logs.to_str().unwrap(), "--output"];
    let o = aether_home(&home, &[&args[..], &[out.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o)
            .contains("100 of 120 qualified apps shown, those with the highest estimated speedup"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("FAILURE: "), "{}", stderr(&o));
    let column = |file: &str, name: &str| -> Vec<String> {
        let mut r = csv::Reader::from_path(out.join(file)).unwrap();
        let at = r.headers().unwrap().iter().position(|c| c == name).unwrap();
        r.records().map(|x| x.unwrap()[at].to_string()).collect()
    };
    let logs_in_status = column("status.csv", "Event Log");
    let mut sorted = logs_in_status.clone();
    sorted.sort();
    assert_eq!(logs_in_status.len(), 121);
    assert_eq!(logs_in_status, sorted, "status.csv in path order");
    let apps = column("qualification_summary.csv", "App ID");
    assert_eq!(apps.len(), 120);
    assert_eq!(apps[0], "local-1796100000000");
    let jobs = column("qualification_summary.csv", "Aether Job ID");
    assert!(jobs.iter().all(|j| !j.is_empty()), "{jobs:?}");
    assert_eq!(report_jobs(&home).len(), 120, "a job per qualified app");
    let spills: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".spill"))
        .collect();
    assert!(spills.is_empty());
    // the machine-readable console: every app
    let o = aether_home(
        &home,
        &[
            "qualify",
            "--event_log",
            logs.to_str().unwrap(),
            "--format",
            "csv",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 1 + 120);
}
