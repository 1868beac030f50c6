//! What the user sees when EMR misbehaves, against the project's EMR emulator (aws-sdk-emr over
//! the wire; faults injected in the emulator): lost and throttled answers, failed and endless
//! steps, Ctrl-C and SIGTERM mid-command, bad cluster files, unknown ids. Each is a clear error;
//! nothing is left running; the history holds what happened.
//!
//! The steps here never start Spark (the emulator fails them or holds them), so these tests are
//! quick; `emr_steps.rs` runs real ones.

mod common;

use common::{Emulator, err, out, wait_until};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

struct Setup {
    _dir: tempfile::TempDir,
    home: PathBuf,
    shape: String,
    config: String,
}

/// Buckets, settings, and the bundled sample log qualified (a job with a shape and a config).
fn setup(emu: &Emulator) -> Setup {
    emu.boto("for b in ('art', 'logs'): s3.create_bucket(Bucket=b)");
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[platform.emr]\nregion = \"us-east-1\"\nspark_event_log_dir = \"s3://logs/spark\"\n\
         [platform.emr.cluster]\nartifacts_path = \"s3://art/aether\"\nlog_path = \"s3://logs/emr\"\n\
         log_wait_s = 5\n",
    )
    .unwrap();
    let (_, shape, config) = emu.qualify_sample(&home);
    Setup {
        _dir: dir,
        home,
        shape,
        config,
    }
}

fn run(emu: &Emulator, s: &Setup, args: &[&str]) -> Output {
    emu.aether(&s.home).args(args).output().unwrap()
}

fn create(emu: &Emulator, s: &Setup, extra: &[&str]) -> Output {
    let mut a = vec![
        "cluster",
        "create",
        "--platform",
        "emr",
        "--cluster_shape_id",
        &s.shape,
    ];
    a.extend_from_slice(extra);
    run(emu, s, &a)
}

fn created_id(o: &Output) -> String {
    assert!(o.status.success(), "{}\n{}", out(o), err(o));
    out(o).split('\t').next().unwrap().to_string()
}

/// `submit` of a job given on the command line (the emulator fails or holds its step).
fn submit_args<'a>(s: &'a Setup, cluster: &'a str) -> Vec<&'a str> {
    vec![
        "submit",
        "--platform",
        "emr",
        "--config_id",
        &s.config,
        "--cluster_id",
        cluster,
        "--job",
        "spark-submit --deploy-mode cluster s3://art/jobs/etl.py s3://art/in/",
        "--allow_output_overwrite",
    ]
}

fn db(s: &Setup) -> rusqlite::Connection {
    rusqlite::Connection::open(s.home.join("history.db")).unwrap()
}

/// (status, failure_reason, driver_log) of the job's gpu-test runs, oldest first.
fn runs(s: &Setup) -> Vec<(String, Option<String>, Option<String>)> {
    let db = db(s);
    let mut q = db
        .prepare(
            "SELECT status, failure_reason, driver_log FROM runs WHERE kind = 'gpu-test' ORDER BY run_id",
        )
        .unwrap();
    q.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn clusters_in(st: &serde_json::Value) -> usize {
    st["clusters"].as_object().unwrap().len()
}

#[test]
fn lost_and_throttled_answers_make_one_cluster_and_one_step() {
    let emu = common::start_emulator(1.0);
    let s = setup(&emu);
    // RunJobFlow made the cluster but its answer was lost (500 after the work): the retry
    // finds the cluster by its request token instead of making a second one
    emu.fault(json!({"operation": "RunJobFlow", "status": 500, "when": "after"}));
    let cluster = created_id(&create(&emu, &s, &[]));
    let st = emu.state();
    assert_eq!(clusters_in(&st), 1, "{st}");
    assert_eq!(st["calls"]["RunJobFlow"], 1, "not sent twice: {st}");
    // refused before the work (503, then throttled): sent again, still one more cluster
    emu.fault(json!({"operation": "RunJobFlow", "status": 503, "code": "ServiceUnavailable"}));
    emu.fault(json!({"operation": "RunJobFlow", "status": 400, "code": "ThrottlingException", "message": "Rate exceeded"}));
    let second = created_id(&create(&emu, &s, &[]));
    let st = emu.state();
    assert_eq!(clusters_in(&st), 2, "{st}");
    assert_eq!(st["calls"]["RunJobFlow"], 4, "{st}");
    assert_eq!(
        common::cluster_state(&db(&s), &second),
        "WAITING",
        "recorded"
    );

    // throttled reads: the SDK's standard retries
    emu.fault(json!({"operation": "DescribeCluster", "status": 400, "code": "ThrottlingException", "message": "Rate exceeded", "count": 2}));
    let o = run(
        &emu,
        &s,
        &[
            "cluster",
            "describe",
            "--platform",
            "emr",
            "--cluster_id",
            &cluster,
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    // throttled for good: a clear error naming the call and the code
    emu.fault(json!({"operation": "DescribeCluster", "status": 400, "code": "ThrottlingException", "message": "Rate exceeded", "count": 50}));
    let o = run(
        &emu,
        &s,
        &[
            "cluster",
            "describe",
            "--platform",
            "emr",
            "--cluster_id",
            &cluster,
        ],
    );
    assert!(!o.status.success());
    assert!(
        err(&o).contains("DescribeCluster") && err(&o).contains("Rate exceeded"),
        "{}",
        err(&o)
    );
    emu.control("clear_faults", Some(json!({})));

    // AddJobFlowSteps added the step but its answer was lost: one step, and polls that are
    // throttled still see it end
    emu.fault(json!({"operation": "AddJobFlowSteps", "status": 500, "when": "after"}));
    emu.fault(json!({"operation": "DescribeStep", "status": 400, "code": "ThrottlingException", "count": 2}));
    emu.control("steps", Some(json!({"mode": "fail"})));
    let o = run(&emu, &s, &submit_args(&s, &cluster));
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let st = emu.state();
    assert_eq!(
        st["clusters"][&cluster]["steps"].as_object().unwrap().len(),
        1,
        "one step for one submit: {st}"
    );
    assert_eq!(st["calls"]["AddJobFlowSteps"], 1, "{st}");
    assert_eq!(runs(&s).len(), 1);

    for c in [&cluster, &second] {
        let o = run(
            &emu,
            &s,
            &[
                "cluster",
                "terminate",
                "--platform",
                "emr",
                "--cluster_id",
                c,
            ],
        );
        assert!(o.status.success(), "{}", err(&o));
    }
    let st = emu.state();
    assert!(
        st["clusters"]
            .as_object()
            .unwrap()
            .values()
            .all(|c| c["state"] == "TERMINATED"),
        "{st}"
    );
}

#[test]
fn failed_endless_and_interrupted_steps() {
    let emu = common::start_emulator(1.0);
    let s = setup(&emu);
    let cluster = created_id(&create(&emu, &s, &[]));

    // 1. a failed step: its reason and the end of its stderr reach the user and the history
    emu.control("steps", Some(json!({"mode": "fail"})));
    let o = run(&emu, &s, &submit_args(&s, &cluster));
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let e = err(&o);
    assert!(e.contains("FAILED"), "{e}");
    assert!(
        e.contains(
            "reason: Unknown Error.; Exception in thread \"main\" java.lang.OutOfMemoryError"
        ),
        "{e}"
    );
    assert!(
        e.contains(&format!("s3://logs/emr/{cluster}/steps/")),
        "{e}"
    );
    assert!(
        e.contains("    | ") && e.contains("Submitted application application_"),
        "the stderr's last lines: {e}"
    );
    let r = runs(&s);
    assert_eq!(r[0].0, "FAILED");
    assert!(
        r[0].1.as_deref().unwrap().contains("OutOfMemoryError"),
        "{r:?}"
    );
    assert!(r[0].2.as_deref().unwrap().ends_with("/stderr.gz"), "{r:?}");

    // 1b. polls failing beyond the SDK's retries (3 attempts each): the poll loop tries again
    emu.control("steps", Some(json!({"mode": "fail"})));
    emu.fault(json!({"operation": "DescribeStep", "status": 503, "code": "ServiceUnavailable", "count": 7}));
    let o = run(&emu, &s, &submit_args(&s, &cluster));
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        err(&o).contains("OutOfMemoryError"),
        "the step's own end, not a poll error: {}",
        err(&o)
    );
    assert_eq!(emu.state()["faults_left"], json!([]));
    assert_eq!(runs(&s).remove(1).0, "FAILED");
    let first_runs = 2;

    // 2. a step that never finishes: cancelled at the deadline
    emu.control("steps", Some(json!({"mode": "hang"})));
    let mut a = submit_args(&s, &cluster);
    a.extend(["--timeout_s", "3"]);
    let o = run(&emu, &s, &a);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(out(&o).contains("TIMED_OUT"), "{}", out(&o));
    let st = emu.state();
    let steps = st["clusters"][&cluster]["steps"].as_object().unwrap();
    assert_eq!(
        steps.values().filter(|v| *v == "CANCELLED").count(),
        1,
        "{st}"
    );
    assert_eq!(st["alive_steps"], json!([]), "{st}");
    assert_eq!(runs(&s)[first_runs].0, "TIMED_OUT");

    // 3. the cancel itself fails: said, recorded, the step left for terminate to end
    emu.control("steps", Some(json!({"mode": "hang"})));
    emu.fault(json!({"operation": "CancelSteps", "status": 500, "count": 20}));
    let o = run(&emu, &s, &a);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        err(&o).contains("cancelling step") && err(&o).contains("may still be running"),
        "{}",
        err(&o)
    );
    let r = runs(&s);
    assert_eq!(r[first_runs + 1].0, "TIMED_OUT");
    assert!(
        r[first_runs + 1]
            .1
            .as_deref()
            .unwrap()
            .contains("cancelling the step failed"),
        "{r:?}"
    );
    assert_eq!(emu.state()["alive_steps"].as_array().unwrap().len(), 1);
    emu.control("clear_faults", Some(json!({})));
    let o = run(
        &emu,
        &s,
        &[
            "cluster",
            "terminate",
            "--platform",
            "emr",
            "--cluster_id",
            &cluster,
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    wait_until("the terminated cluster's step stopped", 10, || {
        emu.state()["alive_steps"] == json!([])
    });

    // 4. Ctrl-C during a submit on a cluster made for it: the step is cancelled, the cluster
    // terminated, the run recorded as interrupted
    emu.control("steps", Some(json!({"mode": "hang"})));
    let mut a = submit_args(&s, "");
    a.retain(|x| *x != "--cluster_id" && !x.is_empty());
    a.extend(["--cluster_shape_id", &s.shape]);
    let child = emu
        .aether(&s.home)
        .args(&a)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut running = String::new();
    wait_until("a running step", 30, || {
        let st = emu.state();
        for (c, v) in st["clusters"].as_object().unwrap() {
            if v["steps"]
                .as_object()
                .unwrap()
                .values()
                .any(|x| x == "RUNNING")
            {
                running = c.clone();
                return true;
            }
        }
        false
    });
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(pid, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", err(&o));
    let st = emu.state();
    assert_eq!(st["clusters"][&running]["state"], "TERMINATED", "{st}");
    assert!(
        st["clusters"][&running]["steps"]
            .as_object()
            .unwrap()
            .values()
            .all(|x| x == "CANCELLED"),
        "{st}"
    );
    assert_eq!(st["alive_steps"], json!([]), "{st}");
    assert_eq!(runs(&s)[first_runs + 2].0, "INTERRUPTED");
    assert_eq!(common::cluster_state(&db(&s), &running), "TERMINATED");
}

#[test]
fn a_signal_during_create_ends_the_cluster_it_made() {
    let emu = common::start_emulator(1.0);
    let s = setup(&emu);
    // EMR makes the cluster but answers late: SIGTERM while the call is out
    emu.fault(json!({"operation": "RunJobFlow", "status": 200, "when": "after", "delay_s": 20}));
    let child = emu
        .aether(&s.home)
        .args([
            "cluster",
            "create",
            "--platform",
            "emr",
            "--cluster_shape_id",
            &s.shape,
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    wait_until("the cluster made", 20, || clusters_in(&emu.state()) == 1);
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{}", err(&o));
    assert!(
        err(&o).contains("SIGTERM: cluster create interrupted"),
        "{}",
        err(&o)
    );
    let st = emu.state();
    let (id, c) = st["clusters"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(c["state"], "TERMINATED", "{st}");
    assert_eq!(common::cluster_state(&db(&s), id), "TERMINATED");
}

#[test]
fn bad_files_unknown_ids_idle_clusters_and_spot_fleets() {
    // an hour of idleness is 3.6 s here
    let emu = common::start_emulator(0.001);
    let s = setup(&emu);
    let dir = tempfile::tempdir().unwrap();

    // a bad --config_file: refused naming the file and the field, nothing made
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "instanceGroups:\n  - {name: Primary, instanceType: m5d.xlarge, instanceCount: 1}\n  - {name: Core GPU, instanceTyp: g5.2xlarge, instanceCount: 2}\n",
    )
    .unwrap();
    let o = create(&emu, &s, &["--config_file", bad.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = err(&o);
    assert!(e.contains("bad.yaml") && e.contains("instanceTyp"), "{e}");
    std::fs::write(&bad, "emrRelease: emr-6.15.0\n").unwrap();
    let e = err(&create(&emu, &s, &["--config_file", bad.to_str().unwrap()]));
    assert!(e.contains("bad.yaml") && e.contains("emrRelease"), "{e}");
    assert_eq!(
        emu.state()["calls"].get("RunJobFlow"),
        None,
        "no cluster asked for"
    );

    // unknown ids: a clear error each, nothing recorded
    let e = err(&run(
        &emu,
        &s,
        &[
            "cluster",
            "describe",
            "--platform",
            "emr",
            "--cluster_id",
            "j-NOSUCHCLUSTER",
        ],
    ));
    assert!(e.contains("unknown cluster j-NOSUCHCLUSTER"), "{e}");
    let o = run(&emu, &s, &submit_args(&s, "j-NOSUCHCLUSTER"));
    assert!(!o.status.success());
    assert!(
        err(&o).contains("unknown cluster j-NOSUCHCLUSTER"),
        "{}",
        err(&o)
    );
    let mut a = submit_args(&s, "j-NOSUCHCLUSTER");
    a[4] = "999999";
    assert!(err(&run(&emu, &s, &a)).contains("unknown config id 999999"));
    let cluster = created_id(&create(&emu, &s, &[]));
    let o = run(
        &emu,
        &s,
        &[
            "qualify",
            "--platform_job_id",
            "s-NOSUCHSTEP",
            "--cluster_id",
            &cluster,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("unknown step s-NOSUCHSTEP"), "{}", err(&o));
    let o = run(
        &emu,
        &s,
        &[
            "qualify",
            "--platform_job_id",
            "s-NOSUCHSTEP",
            "--cluster_id",
            "j-NOSUCHCLUSTER",
        ],
    );
    assert!(
        err(&o).contains("unknown cluster j-NOSUCHCLUSTER"),
        "{}",
        err(&o)
    );
    assert!(runs(&s).is_empty(), "no run recorded");

    // the idle auto-termination policy ends a cluster left idle (EMR's idle timeout)
    let policy = emu.boto(&format!(
        "print(emr.get_auto_termination_policy(ClusterId='{cluster}')['AutoTerminationPolicy']['IdleTimeout'])"
    ));
    assert_eq!(policy, "3600");
    wait_until("the idle cluster ended", 30, || {
        emu.state()["clusters"][&cluster]["state"] == "TERMINATED"
    });

    // a cluster file with spot task nodes that fall back to on-demand: instance fleets
    let good = dir.path().join("spot.yaml");
    std::fs::write(
        &good,
        "emrRelease: emr-7.10.0\nidleTimeoutSeconds: 7200\ntags: {team: data}\ninstanceGroups:\n\
         \x20 - {name: Primary, instanceType: m5d.xlarge, instanceCount: 1}\n\
         \x20 - {name: Core GPU, instanceType: g5.2xlarge, instanceCount: 2, ebsConfiguration: {volumeType: gp3, sizeInGb: 200}}\n\
         \x20 - {name: Task GPU, instanceType: g5.2xlarge, instanceCount: 4, market: SPOT, onSpotUnavailable: SWITCH_TO_ON_DEMAND}\n",
    )
    .unwrap();
    let id = created_id(&create(
        &emu,
        &s,
        &["--config_file", good.to_str().unwrap()],
    ));
    let got = emu.boto(&format!(
        "c = emr.describe_cluster(ClusterId='{id}')['Cluster']\n\
         fs = emr.list_instance_fleets(ClusterId='{id}')['InstanceFleets']\n\
         p = emr.get_auto_termination_policy(ClusterId='{id}')['AutoTerminationPolicy']\n\
         print(json.dumps(dict(release=c['ReleaseLabel'], tags={{t['Key']: t['Value'] for t in c['Tags']}}, idle=p['IdleTimeout'],\n\
           fleets=[(f['InstanceFleetType'], f['TargetOnDemandCapacity'], f['TargetSpotCapacity'],\n\
                    f['LaunchSpecifications'].get('SpotSpecification', {{}}).get('TimeoutAction')) for f in fs])))"
    ));
    let v: serde_json::Value = serde_json::from_str(&got).unwrap();
    assert_eq!(v["release"], "emr-7.10.0");
    assert_eq!(v["idle"], 7200);
    assert_eq!(v["tags"]["team"], "data");
    assert_eq!(
        v["fleets"],
        json!([
            ["MASTER", 1, 0, null],
            ["CORE", 2, 0, null],
            ["TASK", 0, 4, "SWITCH_TO_ON_DEMAND"]
        ]),
        "{v}"
    );
    let o = run(
        &emu,
        &s,
        &[
            "cluster",
            "describe",
            "--platform",
            "emr",
            "--cluster_id",
            &id,
        ],
    );
    let d: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert!(
        d["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["role"] == "TASK" && g["market"] == "SPOT" && g["count"] == 4),
        "{d}"
    );
    let o = run(
        &emu,
        &s,
        &[
            "cluster",
            "terminate",
            "--platform",
            "emr",
            "--cluster_id",
            &id,
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
}

#[test]
fn the_event_log_of_a_step_in_each_layout_spark_writes() {
    let emu = common::start_emulator(1.0);
    let s = setup(&emu);
    // a step on a production cluster (failed fast by the emulator: its stderr names the YARN
    // application), whose event-log folder then holds that application's log in one layout
    emu.control("steps", Some(json!({"mode": "fail"})));
    let ids = emu.boto(
        "c = emr.run_job_flow(Name='prod', ReleaseLabel='emr-7.9.0', LogUri='s3://logs/prod/',\n\
           Instances={'KeepJobFlowAliveWhenNoSteps': True, 'MasterInstanceType': 'm5d.xlarge', 'InstanceCount': 1},\n\
           Configurations=[{'Classification': 'spark-defaults', 'Properties': {'spark.eventLog.dir': 's3://logs/prod-spark'}}],\n\
           JobFlowRole='r', ServiceRole='r')\n\
         st = emr.add_job_flow_steps(JobFlowId=c['JobFlowId'], Steps=[{'Name': 'etl', 'HadoopJarStep': {'Jar': 'command-runner.jar',\n\
           'Args': ['spark-submit', 's3://code/etl.py', 's3://data/in']}}])\n\
         for _ in range(100):\n\
         \x20   if emr.describe_step(ClusterId=c['JobFlowId'], StepId=st['StepIds'][0])['Step']['Status']['State'] == 'FAILED': break\n\
         \x20   time.sleep(0.2)\n\
         print(c['JobFlowId'], st['StepIds'][0])",
    );
    let (cluster, step) = ids.split_once(' ').unwrap();
    let stderr = emu.boto(&format!(
        "import gzip\nprint(gzip.decompress(s3.get_object(Bucket='logs', Key='prod/{cluster}/steps/{step}/stderr.gz')['Body'].read()).decode())"
    ));
    let app = stderr
        .split("Submitted application ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/sample/local-1796009671201")
        .display()
        .to_string();
    // (objects in the folder, the one that is the step's log)
    let layouts: Vec<(Vec<String>, String)> = vec![
        (
            vec![app.clone(), format!("{app}2"), "application_1_0001".into()],
            app.clone(),
        ),
        (
            vec![format!("{app}_1"), format!("{app}_2")],
            format!("{app}_2"),
        ),
        (
            vec![format!("{app}_1"), format!("{app}_2.inprogress")],
            format!("{app}_1"),
        ),
        (
            vec![format!("{app}.inprogress")],
            format!("{app}.inprogress"),
        ),
        (
            vec![
                format!("eventlog_v2_{app}/events_1_{app}"),
                format!("eventlog_v2_{app}/appstatus_{app}"),
            ],
            format!("eventlog_v2_{app}"),
        ),
    ];
    for (objects, expected) in layouts {
        let keys = serde_json::to_string(&objects).unwrap();
        emu.boto(&format!(
            "for o in s3.list_objects_v2(Bucket='logs', Prefix='prod-spark/').get('Contents', []): s3.delete_object(Bucket='logs', Key=o['Key'])\n\
             for k in json.loads('{keys}'):\n\
             \x20   s3.upload_file('{sample}', 'logs', 'prod-spark/' + k) if 'appstatus' not in k else s3.put_object(Bucket='logs', Key='prod-spark/' + k, Body=b'')"
        ));
        let o = run(
            &emu,
            &s,
            &[
                "qualify",
                "--platform_job_id",
                step,
                "--cluster_id",
                cluster,
            ],
        );
        assert!(o.status.success(), "{objects:?}: {}", err(&o));
        let want = format!("event log s3://logs/prod-spark/{expected}\n");
        assert!(
            err(&o).contains(&want),
            "{objects:?}: want {want}: {}",
            err(&o)
        );
        assert!(err(&o).contains("warning: step") && err(&o).contains("FAILED"));
    }
    // a GPU run's step: profile finds its event log the same way
    let gpu = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/datasets/rapids-tools/spark-events-profiling/eventlog-gpu-dsv1.zstd")
        .display()
        .to_string();
    emu.boto(&format!(
        "for o in s3.list_objects_v2(Bucket='logs', Prefix='prod-spark/').get('Contents', []): s3.delete_object(Bucket='logs', Key=o['Key'])\n\
         s3.upload_file('{gpu}', 'logs', 'prod-spark/{app}.zstd')"
    ));
    let o = run(
        &emu,
        &s,
        &[
            "profile",
            "--platform_job_id",
            step,
            "--cluster_id",
            cluster,
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        err(&o).contains(&format!("event log s3://logs/prod-spark/{app}.zstd")),
        "{}",
        err(&o)
    );
    assert!(
        out(&o).contains("App ID: local-1644936233661"),
        "{}",
        out(&o)
    );
    assert!(
        out(&o).contains("--conf spark.executor.memory=32g"),
        "{}",
        out(&o)
    );

    // the step's definition is the job's: what submit re-runs
    let (source, def): (String, String) = db(&s)
        .query_row(
            "SELECT source, definition_json FROM job_definitions d JOIN runs r USING (job_id) WHERE r.step_id = ?1 LIMIT 1",
            [step],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(source, "emr-step");
    assert!(def.contains("s3://code/etl.py"), "{def}");
}

#[test]
fn tune_with_unknown_ids_and_a_cluster_terminated_mid_loop() {
    let emu = common::start_emulator(1.0);
    let s = setup(&emu);
    let job_arg = "spark-submit --deploy-mode cluster s3://art/jobs/etl.py s3://art/in/";
    let e = err(&run(
        &emu,
        &s,
        &[
            "tune",
            "--platform",
            "emr",
            "--aether_job_id",
            "999",
            "--cluster_id",
            "j-X",
            "--job",
            job_arg,
        ],
    ));
    assert!(e.contains("unknown job id 999"), "{e}");
    let e = err(&run(
        &emu,
        &s,
        &[
            "tune",
            "--platform",
            "emr",
            "--aether_job_id",
            "1",
            "--cluster_id",
            "j-NOSUCHCLUSTER",
            "--job",
            job_arg,
        ],
    ));
    assert!(e.contains("unknown cluster j-NOSUCHCLUSTER"), "{e}");

    // the cluster goes away while a run is on it
    let cluster = created_id(&create(&emu, &s, &[]));
    emu.control("steps", Some(json!({"mode": "hang", "count": 5})));
    let child = emu
        .aether(&s.home)
        .args([
            "tune",
            "--platform",
            "emr",
            "--aether_job_id",
            "1",
            "--cluster_id",
            &cluster,
            "--job",
            job_arg,
            "--allow_output_overwrite",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("a running step", 30, || {
        emu.state()["clusters"][&cluster]["steps"]
            .as_object()
            .is_some_and(|m| m.values().any(|x| x == "RUNNING"))
    });
    emu.boto(&format!(
        "emr.terminate_job_flows(JobFlowIds=['{cluster}'])"
    ));
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}\n{}", out(&o), err(&o));
    assert!(
        err(&o).contains(&format!("cluster {cluster} is TERMINATED")),
        "{}",
        err(&o)
    );
    let st = emu.state();
    assert_eq!(st["alive_steps"], json!([]), "{st}");
    // the cancelled run and its iteration are recorded; the session can be resumed elsewhere
    let r = runs(&s);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].0, "CANCELLED");
    let (status, it_status): (String, String) = db(&s)
        .query_row(
            "SELECT s.status, i.status FROM tune_sessions s JOIN tune_iterations i USING (tune_id)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (status.as_str(), it_status.as_str()),
        ("RUNNING", "CANCELLED")
    );
}
