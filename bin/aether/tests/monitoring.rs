//! `aether report metrics --cloudwatch [--alarms]` against moto's CloudWatch (behind
//! `tests/emr-emulator/cloudwatch_cbor.py`, which speaks the Rust SDK's RPC v2 CBOR): a job
//! history of real runs — two CPU logs qualified by `aether qualify`, GPU test runs on the real
//! GPU logs of NVIDIA's tools (`rapids-tools/spark-events-profiling`) recorded as the workflow
//! records them — published through the library and the CLI, read back with boto3 and compared
//! with figures taken independently: the runs' durations and SQL stage durations, shuffle write
//! times and GPU task metrics from the reference profiler's own output on those logs
//! (`anchor/golden/profile-dev`), costs from the committed price catalog, the CPU baseline from
//! the history. Publishing again sends nothing new; a validation made since sends one metric.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use aether_core::History;
use aether_core::history::Run;
use aether_platform::cloudwatch::{CloudWatch, sdk};
use aether_workflow::monitoring::{MetricsRequest, publish};
use aether_workflow::{Event, Observer, Workspace};
use common::{err, out};
use serde_json::Value;

const NS: &str = "Spark/GPU";
const TOPIC: &str = "arn:aws:sns:us-east-1:123456789012:gpu-alarms";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn profiling_log(name: &str) -> String {
    let p = repo().join("../shared/datasets/rapids-tools/spark-events-profiling");
    std::fs::canonicalize(p.join(name))
        .unwrap_or_else(|e| panic!("{name} in {}: {e}", p.display()))
        .display()
        .to_string()
}

/// moto with CloudWatch in the SDK's CBOR, on a free port, stopped on drop.
struct Server {
    child: std::process::Child,
    endpoint: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_cloudwatch() -> Server {
    use std::io::BufRead;
    let mut child = Command::new("python3")
        .arg(repo().join("tests/emr-emulator/cloudwatch_cbor.py"))
        .args(["--port", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 with moto[server] (scripts/setup --test installs it)");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let endpoint = line
        .trim()
        .strip_prefix("READY ")
        .unwrap_or_else(|| panic!("cloudwatch_cbor.py did not start: {line:?}"))
        .to_string();
    Server { child, endpoint }
}

/// The reference profiler's output for an app (NVIDIA spark-rapids-tools on the same logs).
fn reference(app: &str) -> PathBuf {
    repo()
        .join("../shared/anchor/golden/profile-dev/rapids_4_spark_profile")
        .join(app)
}

fn csv_rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let Ok(mut r) = csv::Reader::from_path(path) else {
        return Vec::new(); // the profiler writes no file for what an app lacks
    };
    let h = r.headers().unwrap().clone();
    r.records()
        .map(|x| {
            let x = x.unwrap();
            h.iter()
                .zip(x.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// A GPU log's figures as the reference profiler reports them: (start, end, duration) and the
/// metrics `report metrics` takes from a log.
struct Expected {
    app: String,
    start_ms: i64,
    end_ms: i64,
    duration_ms: i64,
    log: BTreeMap<&'static str, f64>,
}

fn expected(app: &str) -> Expected {
    let d = reference(app);
    let info = &csv_rows(&d.join("application_information.csv"))[0];
    let n = |k: &str| info[k].parse::<i64>().unwrap();
    let mut log = BTreeMap::new();
    // the stage-level sw_writeTime_sum, summed over the stages
    let sw: f64 = csv_rows(&d.join("stage_level_aggregated_task_metrics.csv"))
        .iter()
        .map(|r| r["sw_writeTime_sum"].parse::<f64>().unwrap())
        .sum();
    log.insert("ShuffleWriteTime", sw);
    let longest = csv_rows(&d.join("sql_to_stage_information.csv"))
        .iter()
        .filter_map(|r| r["Stage Duration"].parse::<f64>().ok())
        .fold(f64::NAN, f64::max);
    log.insert("LongestSqlStageDuration", longest);
    for r in csv_rows(&d.join("gpu_app_level_aggregated_task_metrics.csv")) {
        let name = match r["metricName"].as_str() {
            "gpuSemaphoreWait" => "GpuSemaphoreWait",
            "gpuRetryCount" => "GpuRetryCount",
            "gpuSplitAndRetryCount" => "GpuSplitAndRetryCount",
            _ => continue,
        };
        log.insert(name, r["sum"].parse().unwrap());
    }
    Expected {
        app: app.to_string(),
        start_ms: n("startTime"),
        end_ms: n("endTime"),
        duration_ms: n("duration"),
        log,
    }
}

/// The hourly EC2 + EMR price of one node from the committed catalog (what a run on EMR is
/// charged per node).
fn node_usd_per_hour(instance: &str) -> f64 {
    let rows = csv_rows(&repo().join("datasets/reference/emr/prices.csv"));
    let r = rows
        .iter()
        .find(|r| r["region"] == "us-east-1" && r["instance"] == instance)
        .unwrap();
    r["ec2_usd_per_hour"].parse::<f64>().unwrap() + r["emr_usd_per_hour"].parse::<f64>().unwrap()
}

/// One published GPU run: its ids and the metrics it must have in CloudWatch.
struct Published {
    run_id: i64,
    job_id: i64,
    cluster: String,
    app: String,
    metrics: BTreeMap<&'static str, f64>,
}

struct Setup {
    home: tempfile::TempDir,
    runs: Vec<Published>,
    /// The NDS job (no CPU log qualified) and its GPU run with out-of-memory retries.
    nds_job: i64,
    oom_run: i64,
}

/// A completed GPU test run recorded as `submit` records it: its duration from its event log,
/// its cost (when priced) the hours times one node's hourly price; ended at `ended_ms`.
fn record(
    h: &mut History,
    job: i64,
    cluster: &str,
    log: &str,
    e: &Expected,
    ended_ms: i64,
    usd_per_hour: Option<f64>,
) -> Published {
    let cost = usd_per_hour.map(|p| e.duration_ms as f64 / 3_600_000.0 * p);
    let mut run = Run {
        job_id: job,
        kind: "gpu-test".into(),
        backend: Some("emr".into()),
        cluster_id: Some(cluster.into()),
        step_id: Some(format!("s-{cluster}")),
        status: "RUNNING".into(),
        start_ms: Some(ended_ms - e.duration_ms),
        ..Default::default()
    };
    run.run_id = h.start_run(&run).unwrap();
    run.status = "COMPLETED".into();
    run.end_ms = Some(ended_ms);
    run.duration_ms = Some(e.duration_ms);
    run.cost_usd = cost;
    run.event_log = Some(log.to_string());
    h.finish_run(&run).unwrap();
    let mut metrics = e.log.clone();
    metrics.insert("RunDuration", e.duration_ms as f64);
    if let Some(c) = cost {
        metrics.insert("EstimatedCost", c);
    }
    Published {
        run_id: run.run_id,
        job_id: job,
        cluster: cluster.into(),
        app: e.app.clone(),
        metrics,
    }
}

/// The history: `aether qualify` of two CPU logs; GPU test runs recorded as the workflow does.
fn history() -> Setup {
    let home = tempfile::tempdir().unwrap();
    let (cpu1, cpu2) = (
        profiling_log("eventlog_dsv1.zstd"),
        profiling_log("eventlog_dsv2.zstd"),
    );
    let o = common::aether(home.path(), &["qualify", "--event_log", &cpu1, &cpu2]);
    assert!(o.status.success(), "qualify: {}", err(&o));
    let mut h = History::open(&home.path().join("history.db")).unwrap();
    let jobs = h.list().unwrap();
    let job_of = |log: &str| jobs.iter().find(|j| j.event_log == log).unwrap().clone();
    let price = node_usd_per_hour("g4dn.4xlarge");
    let now = aether_platform::now_ms();
    let mut runs = Vec::new();
    // the two qualified jobs: a GPU run each, ended 3 h and 2 h ago, on 1 x g4dn.4xlarge
    for (cpu_log, gpu_log, app, cluster, ago_h, verdict) in [
        (
            &cpu1,
            "eventlog-gpu-dsv1.zstd",
            "local-1644936233661",
            "j-DSV1GPU",
            3,
            "PASS",
        ),
        (
            &cpu2,
            "eventlog-gpu-dsv2.zstd",
            "local-1645025251529",
            "j-DSV2GPU",
            2,
            "FAIL",
        ),
    ] {
        let job = job_of(cpu_log);
        let e = expected(app);
        let p = record(
            &mut h,
            job.job_id,
            cluster,
            &profiling_log(gpu_log),
            &e,
            now - ago_h * 3_600_000,
            Some(price),
        );
        let run = p.run_id;
        runs.push(p);
        h.add_validation(
            job.job_id,
            None,
            Some(run),
            verdict,
            (verdict == "FAIL") as i64,
            &serde_json::json!({"reasons": []}),
        )
        .unwrap();
        // the CPU baseline as the history holds it (the qualified log's duration, qualify's
        // cost estimate)
        let cpu_ms = h.cpu_run(job.job_id).unwrap().unwrap().app_duration_ms as f64;
        let cpu_cost = h
            .qualification(job.job_id)
            .unwrap()
            .unwrap()
            .cpu_cost_usd
            .unwrap();
        let p = runs.last_mut().unwrap();
        p.metrics.insert("Speedup", cpu_ms / e.duration_ms as f64);
        p.metrics
            .insert("EstimatedSavings", cpu_cost - p.metrics["EstimatedCost"]);
        p.metrics
            .insert("ValidationVerdict", (verdict == "PASS") as i64 as f64);
        // a failed run and a run still going: not published
        for status in ["FAILED", "RUNNING"] {
            h.start_run(&Run {
                job_id: job.job_id,
                kind: "gpu-test".into(),
                cluster_id: Some(cluster.into()),
                status: status.into(),
                duration_ms: Some(1_000),
                ..Default::default()
            })
            .unwrap();
        }
    }
    // a job known from its step only (no CPU log qualified: no speedup, no savings): the NDS
    // power run, on two clusters, at the logs' own times (older than CloudWatch takes)
    let nds = h
        .job_id(
            "app-nds-cpu",
            "",
            "s3://prod/spark-logs/app-nds-cpu",
            "NDS - Power Run",
        )
        .unwrap();
    let e = expected("app-20250305192829-0000");
    let p = record(
        &mut h,
        nds,
        "j-NDSOOM",
        &profiling_log("gpu_oom_eventlog.zstd"),
        &e,
        e.end_ms,
        Some(price),
    );
    let oom_run = p.run_id;
    runs.push(p);
    let e = expected("application_1701368813061_0008");
    runs.push(record(
        &mut h,
        nds,
        "j-NDSQ66",
        &profiling_log("nds_q66_gpu.zstd"),
        &e,
        e.end_ms,
        None,
    ));
    assert!(e.start_ms < e.end_ms);
    // a completed run whose event log is gone: skipped, with a warning
    let mut gone = Run {
        job_id: nds,
        kind: "gpu-test".into(),
        cluster_id: Some("j-GONE".into()),
        status: "COMPLETED".into(),
        duration_ms: Some(5_000),
        ..Default::default()
    };
    gone.run_id = h.start_run(&gone).unwrap();
    gone.event_log = Some(home.path().join("no-such-log").display().to_string());
    h.finish_run(&gone).unwrap();
    Setup {
        home,
        runs,
        nds_job: nds,
        oom_run,
    }
}

/// A series: a metric and its dimensions (name -> value).
type Series = (String, BTreeMap<String, String>);

/// What moto holds, read with boto3: per metric and dimension set, the statistics.
#[derive(Debug)]
struct Readback {
    /// Series -> (sample count, sum, min, max) of the data points with exactly the run's three
    /// dimensions.
    series: BTreeMap<Series, (f64, f64, f64, f64)>,
    /// Data points of every metric of the namespace, all dimensions.
    datapoints: f64,
    alarms: Vec<Value>,
}

fn read_back(endpoint: &str) -> Readback {
    let script = format!(
        r#"
import boto3, json, datetime
cw = boto3.client('cloudwatch', endpoint_url='{endpoint}', region_name='us-east-1',
                  aws_access_key_id='testing', aws_secret_access_key='testing')
now = datetime.datetime.now(datetime.timezone.utc)
span = dict(StartTime=now - datetime.timedelta(days=15), EndTime=now + datetime.timedelta(hours=3),
            Period=60 * 60 * 24 * 20, Statistics=['SampleCount', 'Sum', 'Minimum', 'Maximum'])
def stats(name, dims):
    pts = cw.get_metric_statistics(Namespace='{NS}', MetricName=name, Dimensions=dims, **span)['Datapoints']
    return [sum(p['SampleCount'] for p in pts), sum(p['Sum'] for p in pts),
            min([p['Minimum'] for p in pts], default=None), max([p['Maximum'] for p in pts], default=None)]
metrics = [m for page in cw.get_paginator('list_metrics').paginate(Namespace='{NS}') for m in page['Metrics']]
series = [dict(name=m['MetricName'], dims={{d['Name']: d['Value'] for d in m['Dimensions']}},
               stats=stats(m['MetricName'], m['Dimensions'])) for m in metrics]
names = sorted({{m['MetricName'] for m in metrics}})
total = sum(stats(n, [])[0] for n in names)
alarms = cw.describe_alarms(AlarmNamePrefix='aether/')['MetricAlarms']
print(json.dumps(dict(series=series, total=total, alarms=alarms), default=str))
"#
    );
    let o = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(o.status.success(), "boto3: {}", err(&o));
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    let mut series = BTreeMap::new();
    for s in v["series"].as_array().unwrap() {
        let dims: BTreeMap<String, String> = s["dims"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        let st = &s["stats"];
        let f = |i: usize| st[i].as_f64().unwrap();
        if dims.len() == 3 {
            series.insert(
                (s["name"].as_str().unwrap().to_string(), dims),
                (f(0), f(1), f(2), f(3)),
            );
        } else {
            // the job's own series: its one dimension (moto matches dimension subsets, so its
            // statistics include the run series' points and are not compared here)
            assert_eq!(
                dims.keys().collect::<Vec<_>>(),
                vec!["AetherJobId"],
                "{s:#}"
            );
        }
    }
    Readback {
        series,
        datapoints: v["total"].as_f64().unwrap(),
        alarms: v["alarms"].as_array().unwrap().clone(),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Every run's metrics are in moto with exactly its dimensions and values, one data point each,
/// and nothing else is there.
fn assert_published(rb: &Readback, runs: &[Published]) {
    let mut want = BTreeMap::new();
    for p in runs {
        let dims = BTreeMap::from([
            ("AetherJobId".to_string(), p.job_id.to_string()),
            ("AppId".to_string(), p.app.clone()),
            ("ClusterId".to_string(), p.cluster.clone()),
        ]);
        for (m, v) in &p.metrics {
            want.insert((m.to_string(), dims.clone()), *v);
        }
    }
    assert_eq!(
        rb.series.keys().collect::<BTreeSet<_>>(),
        want.keys().collect::<BTreeSet<_>>(),
        "the metrics and dimensions in CloudWatch"
    );
    for (k, v) in &want {
        let (n, sum, min, max) = rb.series[k];
        assert_eq!(n, 1.0, "{k:?}: one data point");
        assert!(
            close(sum, *v) && close(min, *v) && close(max, *v),
            "{k:?}: {sum} in CloudWatch, {v} expected"
        );
    }
    // each metric twice: the run's dimensions and the job's
    assert_eq!(rb.datapoints, 2.0 * want.len() as f64);
}

fn client(endpoint: &str) -> CloudWatch {
    let conf = sdk::Config::builder()
        .behavior_version(sdk::config::BehaviorVersion::latest())
        .region(sdk::config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .http_client(aether_platform::https_client())
        .credentials_provider(sdk::config::Credentials::new(
            "testing", "testing", None, None, "tests",
        ))
        .build();
    CloudWatch::new(sdk::Client::from_conf(conf))
}

#[derive(Default)]
struct Collected(Mutex<Vec<String>>);

impl Observer for Collected {
    fn event(&self, e: &Event<'_>) {
        let line = match e {
            Event::Note(m) => format!("note: {m}"),
            Event::Warning(m) => format!("warning: {m}"),
            _ => return,
        };
        self.0.lock().unwrap().push(line);
    }
}

fn workspace(home: &Path, events: Arc<Collected>) -> Workspace {
    let mut s = aether_core::ConfigFile::load(&home.join("config.toml")).unwrap();
    for (k, v) in [
        (
            "core.history_db",
            home.join("history.db").display().to_string(),
        ),
        ("monitoring.alarm_sql_stage_minutes", "1".into()),
        ("monitoring.alarm_topic_arn", TOPIC.into()),
    ] {
        s.config.set(k, &v).unwrap();
    }
    s.save().unwrap();
    Workspace::from_settings(s, None)
        .unwrap()
        .with_observer(events)
}

#[test]
fn gpu_runs_are_published_once_with_their_figures_and_their_alarms() {
    let server = start_cloudwatch();
    let mut setup = history();
    let events = Arc::new(Collected::default());
    let ws = workspace(setup.home.path(), events.clone());
    let cw = client(&server.endpoint);
    let req = MetricsRequest {
        namespace: NS.into(),
        alarms: true,
    };
    let t0 = std::time::Instant::now();
    let o = publish(&ws, &cw, &req).unwrap();
    eprintln!("first publish: {:?}", t0.elapsed());
    // 2 + 2 + 3 runs completed (one without its log); 7 + 7 + 7 + 4 metrics
    assert_eq!(
        (o.runs, o.runs_published, o.runs_skipped),
        (5, 4, 1),
        "{o:#?}"
    );
    assert_eq!((o.metrics_published, o.metrics_unchanged), (25, 0));
    assert_eq!(o.datapoints, 50);
    // the NDS runs ended in 2023 and 2025: their 11 metrics are timed now
    assert_eq!(o.retimed, 22);
    let ev = events.0.lock().unwrap().clone();
    assert!(
        ev.iter()
            .any(|l| l.starts_with("warning: run") && l.contains("no-such-log")),
        "{ev:#?}"
    );
    let rb = read_back(&server.endpoint);
    assert_published(&rb, &setup.runs);
    // the data points of the recent runs are at their end; the history says what went out
    let h = History::open(&setup.home.path().join("history.db")).unwrap();
    let recorded = h.published_metrics(NS).unwrap();
    assert_eq!(recorded.len(), 25);
    for p in &setup.runs[..2] {
        let end = h.run(p.run_id).unwrap().unwrap().end_ms.unwrap();
        let d = recorded
            .iter()
            .find(|m| m.run_id == p.run_id && m.metric == "RunDuration")
            .unwrap();
        assert_eq!(d.timestamp_ms, end);
    }

    // the alarms: per job, for the metrics published, thresholds from the settings
    let alarm = |job: i64, metric: &str| {
        rb.alarms
            .iter()
            .find(|a| a["AlarmName"] == format!("aether/{NS}/job-{job}/{metric}"))
            .unwrap_or_else(|| panic!("no alarm for job {job} {metric}: {:#?}", rb.alarms))
            .clone()
    };
    let jobs: BTreeSet<i64> = setup.runs.iter().map(|p| p.job_id).collect();
    let dsv: Vec<i64> = jobs
        .iter()
        .copied()
        .filter(|j| *j != setup.nds_job)
        .collect();
    assert_eq!(rb.alarms.len(), 3 + 3 + 2, "{:#?}", rb.alarms);
    for job in &jobs {
        for (metric, stat, op, threshold) in [
            ("ShuffleWriteTime", "Maximum", "GreaterThanThreshold", 500.0),
            (
                "LongestSqlStageDuration",
                "Maximum",
                "GreaterThanThreshold",
                60_000.0,
            ),
        ] {
            let a = alarm(*job, metric);
            assert_eq!(
                (
                    a["Namespace"].as_str(),
                    a["MetricName"].as_str(),
                    a["Statistic"].as_str(),
                    a["ComparisonOperator"].as_str(),
                    a["Threshold"].as_f64(),
                    a["Period"].as_i64(),
                    a["EvaluationPeriods"].as_i64(),
                ),
                (
                    Some(NS),
                    Some(metric),
                    Some(stat),
                    Some(op),
                    Some(threshold),
                    Some(86_400),
                    Some(1)
                ),
                "{a:#}"
            );
            assert_eq!(
                a["Dimensions"],
                serde_json::json!([{"Name": "AetherJobId", "Value": job.to_string()}])
            );
            assert_eq!(a["AlarmActions"], serde_json::json!([TOPIC]));
        }
    }
    for job in &dsv {
        let a = alarm(*job, "ValidationVerdict");
        assert_eq!(
            (
                a["Statistic"].as_str(),
                a["ComparisonOperator"].as_str(),
                a["Threshold"].as_f64()
            ),
            (Some("Minimum"), Some("LessThanThreshold"), Some(1.0))
        );
    }

    // again: nothing new is sent, the alarms are up to date
    let o = publish(&ws, &cw, &req).unwrap();
    assert_eq!(
        (o.metrics_published, o.metrics_unchanged),
        (0, 25),
        "{o:#?}"
    );
    assert_eq!(
        (o.alarms_created, o.alarms_updated, o.alarms_unchanged),
        (0, 0, 8)
    );
    assert!(
        o.summary().starts_with("nothing new to publish"),
        "{}",
        o.summary()
    );
    assert_eq!(read_back(&server.endpoint).datapoints, 50.0);

    // the OOM run validated since: its verdict alone goes out, with its job's verdict alarm
    let mut hw = History::open(&setup.home.path().join("history.db")).unwrap();
    hw.add_validation(
        setup.nds_job,
        None,
        Some(setup.oom_run),
        "PASS",
        0,
        &serde_json::json!({"reasons": []}),
    )
    .unwrap();
    let o = publish(&ws, &cw, &req).unwrap();
    assert_eq!((o.metrics_published, o.datapoints), (1, 2), "{o:#?}");
    assert_eq!((o.alarms_created, o.alarms_unchanged), (1, 8));
    let p = setup
        .runs
        .iter_mut()
        .find(|p| p.run_id == setup.oom_run)
        .unwrap();
    p.metrics.insert("ValidationVerdict", 1.0);
    let rb = read_back(&server.endpoint);
    assert_published(&rb, &setup.runs);
    assert_eq!(rb.alarms.len(), 9);
}

#[test]
fn the_cli_publishes_once_and_says_so_the_second_time() {
    let server = start_cloudwatch();
    let setup = history();
    let home = setup.home.path();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_aether"))
            .args(args)
            .env("AETHER_HOME", home)
            .env("AWS_ENDPOINT_URL", &server.endpoint)
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_REGION", "us-east-1")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_ENDPOINT_URL_CLOUDWATCH")
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}\n{}", out(&o), err(&o));
        (out(&o), err(&o))
    };
    let (stdout, stderr) = run(&["report", "metrics", "--cloudwatch"]);
    assert!(
        stdout.starts_with(&format!(
            "published 25 metric(s) of 4 GPU run(s) to CloudWatch namespace {NS} (50 data points)"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("1 GPU run(s) skipped"), "{stdout}");
    assert!(stderr.contains("no-such-log"), "{stderr}");
    for p in &setup.runs {
        assert!(
            stderr.contains(&format!("run {} of job {} ({}", p.run_id, p.job_id, p.app)),
            "{stderr}"
        );
    }
    let rb = read_back(&server.endpoint);
    assert_published(&rb, &setup.runs);
    assert!(rb.alarms.is_empty(), "no --alarms, no alarms");
    let (stdout, _) = run(&["report", "metrics", "--cloudwatch"]);
    assert!(
        stdout.starts_with("nothing new to publish: the 25 metric(s) of 4 GPU run(s)"),
        "{stdout}"
    );
    assert_eq!(read_back(&server.endpoint).datapoints, 50.0);
    // a namespace CloudWatch reserves: refused, naming it
    let o = Command::new(env!("CARGO_BIN_EXE_aether"))
        .args([
            "report",
            "metrics",
            "--cloudwatch",
            "--namespace",
            "AWS/EMR",
        ])
        .env("AETHER_HOME", home)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        err(&o).contains("AWS/EMR") && err(&o).contains("reserved"),
        "{}",
        err(&o)
    );
}
