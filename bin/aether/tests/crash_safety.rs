//! Crash safety against the project's EMR emulator: aether killed with SIGKILL at each
//! boundary of `cluster create`, `submit`, `tune` and `cluster terminate` (before the call;
//! during the call, after EMR did the work and before the answer; after the answer, before the
//! record; during the poll), and two commands on one job at once. Each case asserts from
//! observed state — the emulator's clusters and steps, the job history — that nothing is lost,
//! duplicated, misreported or left running once the next command has reconciled the history.
//!
//! The boundaries no timing can hit reliably are reached with `AETHER_CRASH_POINT` (the process
//! SIGKILLs itself there, `aether_core::owner::crash_point`); the others with a late answer
//! (the emulator's `delay_s` fault) and a SIGKILL from here. Steps replay a real event log
//! (the emulator's `replay` mode) or hang: no Spark starts, so these tests are quick.

mod common;

use common::{Emulator, err, out, wait_until};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};

/// The bundled sample log: the CPU job qualified, and what its GPU runs replay.
fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sample/local-1796009671201")
}

/// The sample log's application duration (ApplicationStart to ApplicationEnd), from its JSON.
fn sample_duration_ms() -> i64 {
    let text = std::fs::read_to_string(sample()).unwrap();
    let ts = |ev: &str| -> i64 {
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|v| v["Event"] == ev)
            .and_then(|v| v["Timestamp"].as_i64())
            .unwrap()
    };
    ts("SparkListenerApplicationEnd") - ts("SparkListenerApplicationStart")
}

struct Setup {
    _dir: tempfile::TempDir,
    home: PathBuf,
    shape: String,
    config: String,
    job: String,
}

const JOB: &str = "spark-submit --deploy-mode cluster s3://art/jobs/etl.py s3://art/in/";

/// Buckets, and an aether home whose settings run on the emulated EMR.
fn emr_home(emu: &Emulator) -> (tempfile::TempDir, PathBuf) {
    emu.boto("for b in ('art', 'logs'): s3.create_bucket(Bucket=b)");
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[core]\nselected_platform = \"emr\"\n\
         [platform.emr]\nregion = \"us-east-1\"\nspark_event_log_dir = \"s3://logs/spark\"\n\
         [platform.emr.cluster]\nartifacts_path = \"s3://art/aether\"\nlog_path = \"s3://logs/emr\"\n\
         log_wait_s = 5\n",
    )
    .unwrap();
    (dir, home)
}

fn setup(emu: &Emulator) -> Setup {
    let (dir, home) = emr_home(emu);
    let (job, shape, config) = emu.qualify_sample(&home);
    Setup {
        _dir: dir,
        home,
        shape,
        config,
        job,
    }
}

fn aether(emu: &Emulator, s: &Setup, args: &[&str]) -> Output {
    emu.aether(&s.home).args(args).output().unwrap()
}

/// `aether` killed at a crash point.
fn crash_at(emu: &Emulator, s: &Setup, point: &str, args: &[&str]) -> Output {
    let o = emu
        .aether(&s.home)
        .env("AETHER_CRASH_POINT", point)
        .args(args)
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        o.status.signal(),
        Some(libc::SIGKILL),
        "killed at {point}: {}\n{}",
        out(&o),
        err(&o)
    );
    o
}

/// An `aether` started in the background, killed (SIGKILL) when dropped: a failing test
/// leaves no aether behind.
struct Running(Child);

impl Running {
    fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

fn spawn_in(emu: &Emulator, home: &Path, args: &[&str]) -> Running {
    Running(
        emu.aether(home)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

fn spawn(emu: &Emulator, s: &Setup, args: &[&str]) -> Running {
    spawn_in(emu, &s.home, args)
}

/// kill -9 it now.
fn kill9(c: Running) {
    drop(c);
}

fn db(s: &Setup) -> rusqlite::Connection {
    rusqlite::Connection::open(s.home.join("history.db")).unwrap()
}

fn one<T: rusqlite::types::FromSql>(s: &Setup, sql: &str) -> T {
    db(s)
        .query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The emulator's clusters: id -> (state, step id -> state).
fn clusters(emu: &Emulator) -> serde_json::Map<String, serde_json::Value> {
    emu.state()["clusters"].as_object().unwrap().clone()
}

fn steps_of(emu: &Emulator, cluster: &str) -> Vec<String> {
    clusters(emu)[cluster]["steps"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn create_args(s: &Setup) -> Vec<&str> {
    vec!["cluster", "create", "--cluster_shape_id", &s.shape]
}

fn created_id(o: &Output) -> String {
    assert!(o.status.success(), "{}\n{}", out(o), err(o));
    out(o).split('\t').next().unwrap().to_string()
}

/// `cluster create` killed before RunJobFlow, during it (EMR made the cluster, the answer not
/// back), and after the answer before the record; `cluster terminate` killed before
/// TerminateJobFlows. The next command puts every cluster made on record as aether's, marks
/// the create that made nothing, finishes the terminate; `--all_idle` ends the rest.
#[test]
fn a_cluster_create_killed_anywhere_leaves_the_cluster_on_record() {
    let emu = common::start_emulator(1.0);
    let s = setup(&emu);

    // before the call: nothing made, the intent on record
    crash_at(&emu, &s, "create:before-call", &create_args(&s));
    assert!(clusters(&emu).is_empty());
    assert_eq!(
        one::<String>(&s, "SELECT state FROM clusters"),
        "CREATING",
        "the intent is on record before the call"
    );

    // during the call: EMR made the cluster; its answer is late and the process dies
    emu.fault(json!({"operation": "RunJobFlow", "status": 200, "when": "after", "delay_s": 30}));
    let c = spawn(&emu, &s, &create_args(&s));
    wait_until("RunJobFlow done", 30, || clusters(&emu).len() == 1);
    kill9(c);
    emu.control("clear_faults", Some(json!({})));
    let during = clusters(&emu).keys().next().unwrap().clone();

    // after the answer, before the record
    crash_at(&emu, &s, "create:after-answer", &create_args(&s));
    let after = clusters(&emu)
        .keys()
        .find(|k| **k != during)
        .unwrap()
        .clone();
    assert_eq!(clusters(&emu).len(), 2, "no duplicate clusters");
    assert_eq!(
        one::<i64>(
            &s,
            "SELECT COUNT(*) FROM clusters WHERE cluster_id LIKE 'pending:%'"
        ),
        3,
        "three creates on record, none answered"
    );

    // the next command reconciles: both clusters on record as aether's, the first create
    // marked as having made nothing
    let o = aether(&emu, &s, &["cluster", "list"]);
    assert!(o.status.success(), "{}", err(&o));
    let listed = out(&o);
    for id in [&during, &after] {
        let line = listed
            .lines()
            .find(|l| l.starts_with(id.as_str()))
            .unwrap_or_else(|| panic!("{id} listed: {listed}"));
        assert!(
            line.contains("\temr\tWAITING\taether job "),
            "as aether's: {line}"
        );
    }
    let states: Vec<(String, String)> = {
        let db = db(&s);
        let mut q = db
            .prepare("SELECT cluster_id, state FROM clusters ORDER BY created_ms")
            .unwrap();
        q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(states.len(), 3, "{states:?}");
    assert!(states[0].0.starts_with("pending:") && states[0].1 == "NOT_CREATED");
    assert_eq!(states[1], (during.clone(), "WAITING".into()));
    assert_eq!(states[2], (after.clone(), "WAITING".into()));
    assert_eq!(
        one::<i64>(
            &s,
            "SELECT COUNT(*) FROM reconciliations WHERE kind = 'cluster'"
        ),
        3
    );
    // `history check` lists what reconciliation changed
    let o = aether(&emu, &s, &["history", "check"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains("integrity ok")
            && out(&o).contains(&format!("cluster {during}"))
            && out(&o).contains("NOT_CREATED"),
        "{}",
        out(&o)
    );

    // terminate killed before TerminateJobFlows: the intent is finished by the next command
    crash_at(
        &emu,
        &s,
        "terminate:before-call",
        &["cluster", "terminate", "--cluster_id", &during],
    );
    assert_eq!(clusters(&emu)[&during]["state"], "WAITING");
    let o = aether(&emu, &s, &["report", "list"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(clusters(&emu)[&during]["state"], "TERMINATED");
    assert_eq!(common::cluster_state(&db(&s), &during), "TERMINATED");

    // the account's other clusters are left alone; aether's idle ones end
    let prod = emu.boto(
        "print(emr.run_job_flow(Name='prod', ReleaseLabel='emr-7.9.0', Instances={'KeepJobFlowAliveWhenNoSteps': True, 'MasterInstanceType': 'm5.xlarge', 'InstanceCount': 1}, JobFlowRole='r', ServiceRole='r')['JobFlowId'])",
    );
    let o = aether(&emu, &s, &["cluster", "list"]);
    assert!(!out(&o).contains(&prod), "{}", out(&o));
    let o = aether(&emu, &s, &["cluster", "list", "--all"]);
    assert!(
        out(&o).contains(&format!("{prod}\temr\tWAITING\tother")),
        "{}",
        out(&o)
    );
    let o = aether(&emu, &s, &["cluster", "terminate", "--all_idle"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains(&after), "{}", out(&o));
    let c = clusters(&emu);
    assert_eq!(c[&after]["state"], "TERMINATED");
    assert_eq!(c[&prod]["state"], "WAITING", "not aether's: untouched");
    assert_eq!(
        one::<i64>(
            &s,
            "SELECT COUNT(*) FROM clusters WHERE state NOT IN ('TERMINATED', 'NOT_CREATED')"
        ),
        0
    );
}

/// `submit` killed before AddJobFlowSteps, after its answer before the record, and before the
/// cancel of a step it gave up on; a second submit while the first holds the job. The run is
/// LOST (never submitted), found by its step's name and COMPLETED with its real figures, and
/// cancelled; never two steps for one run.
#[test]
fn a_submit_killed_anywhere_is_found_again_by_its_step_name() {
    let emu = common::start_emulator(1.0);
    let s = setup(&emu);
    let cluster = created_id(&aether(&emu, &s, &create_args(&s)));
    let submit = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "submit",
            "--config_id",
            &s.config,
            "--cluster_id",
            &cluster,
            "--job",
            JOB,
            "--allow_output_overwrite",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    };
    let args = submit(&[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // before the call: no step; the run is on record, then LOST with why
    crash_at(&emu, &s, "submit:before-call", &args);
    assert!(steps_of(&emu, &cluster).is_empty());
    assert_eq!(one::<String>(&s, "SELECT status FROM runs"), "SUBMITTING");
    let o = aether(&emu, &s, &["report", "job", "--aether_job_id", &s.job]);
    assert!(o.status.success(), "{}", err(&o));
    let (status, why): (String, String) = db(&s)
        .query_row("SELECT status, failure_reason FROM runs", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(status, "LOST");
    assert!(why.contains("never reached emr"), "{why}");

    // after the answer, before the record: the step runs (a replayed real log); the run has
    // no step id until the next command finds it by its name, and then its real figures
    emu.control(
        "steps",
        Some(json!({"mode": "replay", "event_log": sample(), "sleep_s": 2})),
    );
    crash_at(&emu, &s, "submit:after-answer", &args);
    assert_eq!(steps_of(&emu, &cluster).len(), 1);
    let run2: i64 = one(&s, "SELECT MAX(run_id) FROM runs");
    assert_eq!(
        one::<Option<String>>(
            &s,
            &format!("SELECT step_id FROM runs WHERE run_id = {run2}")
        ),
        None
    );
    wait_until("the step ends", 60, || {
        steps_of(&emu, &cluster) == ["COMPLETED"]
    });
    let o = aether(&emu, &s, &["report", "job", "--aether_job_id", &s.job]);
    assert!(o.status.success(), "{}", err(&o));
    let (status, step, duration, cost, log): (String, Option<String>, Option<i64>, Option<f64>, Option<String>) = db(&s)
        .query_row(
            &format!("SELECT status, step_id, duration_ms, cost_usd, event_log FROM runs WHERE run_id = {run2}"),
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .unwrap();
    assert_eq!(status, "COMPLETED");
    let sid = clusters(&emu)[&cluster]["steps"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    assert_eq!(step.as_deref(), Some(sid.as_str()));
    assert_eq!(
        duration,
        Some(sample_duration_ms()),
        "the event log's duration"
    );
    assert!(cost.is_some_and(|c| c > 0.0), "{cost:?}");
    assert!(log.is_some_and(|l| l.starts_with("s3://logs/spark/")));
    assert!(
        !out(&o).contains("RUNNING") && !out(&o).contains("SUBMITTING"),
        "{}",
        out(&o)
    );

    // a step given up on (--timeout_s) and the process killed before its CancelSteps: the
    // cancel was on record and the next command finishes it
    emu.control("steps", Some(json!({"mode": "hang"})));
    let a = submit(&["--timeout_s", "2"]);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    crash_at(&emu, &s, "cancel:before-call", &a);
    let run3: i64 = one(&s, "SELECT MAX(run_id) FROM runs");
    assert_eq!(
        one::<String>(
            &s,
            &format!("SELECT intent FROM runs WHERE run_id = {run3}")
        ),
        "cancel"
    );
    assert!(steps_of(&emu, &cluster).contains(&"RUNNING".to_string()));
    let o = aether(&emu, &s, &["history", "check"]);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert_eq!(
        one::<String>(
            &s,
            &format!("SELECT status FROM runs WHERE run_id = {run3}")
        ),
        "CANCELLED"
    );
    assert!(!steps_of(&emu, &cluster).contains(&"RUNNING".to_string()));
    assert_eq!(emu.state()["alive_steps"], json!([]));

    // a cancel EMR refuses (CancelSteps failing): the run ends on record with why, the cancel
    // stays asked, and the next command finishes it
    emu.control("steps", Some(json!({"mode": "hang"})));
    emu.fault(json!({"operation": "CancelSteps", "status": 500, "count": 20}));
    let o = aether(&emu, &s, &a);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("may still run"), "{}", err(&o));
    emu.control("clear_faults", Some(json!({})));
    let (status, intent, why): (String, Option<String>, String) = db(&s)
        .query_row(
            "SELECT status, intent, failure_reason FROM runs ORDER BY run_id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (status.as_str(), intent.as_deref()),
        ("TIMED_OUT", Some("cancel"))
    );
    assert!(why.contains("cancelling the step failed"), "{why}");
    assert!(steps_of(&emu, &cluster).contains(&"RUNNING".to_string()));
    let o = aether(&emu, &s, &["history", "check"]);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(out(&o).contains("its cancel had not taken"), "{}", out(&o));
    assert!(!steps_of(&emu, &cluster).contains(&"RUNNING".to_string()));
    assert_eq!(
        one::<i64>(&s, "SELECT COUNT(*) FROM runs WHERE intent IS NOT NULL"),
        0
    );

    // two submits on one job: the second is refused, naming the first
    emu.control("steps", Some(json!({"mode": "hang"})));
    let first = spawn(&emu, &s, &args);
    wait_until("the first submit's step", 30, || {
        steps_of(&emu, &cluster).contains(&"RUNNING".to_string())
    });
    let o = aether(&emu, &s, &args);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains(&format!("job {} is busy", s.job))
            && err(&o).contains(&format!("pid {}", first.id()))
            && err(&o).contains("aether submit"),
        "{}",
        err(&o)
    );
    kill9(first);
    // the killed holder's lock is taken over, said, and its step cancelled by nobody: the
    // run stays RUNNING while its step runs (the truth), and `history check` says so
    let o = aether(&emu, &s, &["history", "check"]);
    assert!(out(&o).contains("still RUNNING"), "{}", out(&o));
    assert!(
        out(&o).contains("gone (the next command takes it over)"),
        "{}",
        out(&o)
    );
    // every step on the emulator is a run on record, once
    let on_record: i64 = one(&s, "SELECT COUNT(*) FROM runs WHERE step_id IS NOT NULL");
    assert_eq!(on_record as usize, steps_of(&emu, &cluster).len());
    let o = aether(
        &emu,
        &s,
        &["cluster", "terminate", "--cluster_id", &cluster],
    );
    assert!(o.status.success(), "{}", err(&o));
    wait_until("the cluster's steps cancelled", 30, || {
        !steps_of(&emu, &cluster).contains(&"RUNNING".to_string())
    });
    let o = aether(&emu, &s, &["history", "check"]);
    assert_eq!(
        one::<i64>(
            &s,
            "SELECT COUNT(*) FROM runs WHERE status IN ('SUBMITTING', 'PENDING', 'RUNNING')"
        ),
        0,
        "{}",
        out(&o)
    );
}

/// `tune` killed while its step runs (during the poll), then: a report while the step still
/// runs (RUNNING: the truth), a report after it ended (COMPLETED with its real duration and
/// cost), the same tune again (the killed run is its first iteration: no second step); the
/// tune killed again mid-step and resumed at once (it follows the running step). Every step
/// on the emulator is one run and one iteration.
#[test]
fn a_tune_killed_mid_step_is_reconciled_and_resumed() {
    let emu = common::start_emulator(1.0);
    let s = setup(&emu);
    let cluster = created_id(&aether(&emu, &s, &create_args(&s)));
    let tune = |max: &str| -> Vec<String> {
        [
            "tune",
            "--aether_job_id",
            &s.job,
            "--cluster_id",
            &cluster,
            "--job",
            JOB,
            "--allow_output_overwrite",
            "--min_tuning_iterations",
            "1",
            "--max_tuning_iterations",
            max,
        ]
        .iter()
        .map(|x| x.to_string())
        .collect()
    };
    let t1 = tune("1");
    let t1: Vec<&str> = t1.iter().map(String::as_str).collect();
    emu.control(
        "steps",
        Some(json!({"mode": "replay", "event_log": sample(), "sleep_s": 12, "count": 3})),
    );
    let c = spawn(&emu, &s, &t1);
    wait_until("a running step", 30, || {
        steps_of(&emu, &cluster) == ["RUNNING"]
    });
    // a second tune of the job meanwhile: refused, naming the first
    let o = aether(&emu, &s, &t1);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("is busy") && err(&o).contains("aether tune"),
        "{}",
        err(&o)
    );
    kill9(c);
    assert_eq!(one::<String>(&s, "SELECT status FROM runs"), "RUNNING");

    // the step still runs: a report says RUNNING (the truth)
    let o = aether(&emu, &s, &["report", "job", "--aether_job_id", &s.job]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(one::<String>(&s, "SELECT status FROM runs"), "RUNNING");
    wait_until("the step ends", 60, || {
        steps_of(&emu, &cluster) == ["COMPLETED"]
    });
    let o = aether(&emu, &s, &["report", "job", "--aether_job_id", &s.job]);
    assert!(o.status.success(), "{}", err(&o));
    let (status, duration, cost): (String, Option<i64>, Option<f64>) = db(&s)
        .query_row("SELECT status, duration_ms, cost_usd FROM runs", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(status, "COMPLETED");
    assert_eq!(duration, Some(sample_duration_ms()));
    assert!(cost.is_some_and(|c| c > 0.0));
    assert!(!out(&o).contains("RUNNING"), "{}", out(&o));

    // the same tune again: the killed run is its iteration; no second step
    let o = aether(&emu, &s, &t1);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert_eq!(steps_of(&emu, &cluster).len(), 1);
    let (its, run_id): (i64, i64) = db(&s)
        .query_row(
            "SELECT COUNT(*), MIN(run_id) FROM tune_iterations",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (its, run_id),
        (1, one::<i64>(&s, "SELECT run_id FROM runs"))
    );
    assert_eq!(
        one::<String>(&s, "SELECT status FROM tune_sessions"),
        "DONE"
    );

    // a new session killed mid-step and resumed at once: it follows the running step
    let t2 = tune("2");
    let t2: Vec<&str> = t2.iter().map(String::as_str).collect();
    let c = spawn(&emu, &s, &t2);
    wait_until("a second running step", 30, || {
        steps_of(&emu, &cluster).contains(&"RUNNING".to_string())
    });
    kill9(c);
    let o = aether(&emu, &s, &t2);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(
        err(&o).contains("left running by an interrupted tune"),
        "{}",
        err(&o)
    );
    let steps = steps_of(&emu, &cluster);
    let runs: i64 = one(&s, "SELECT COUNT(*) FROM runs");
    let iterations: i64 = one(&s, "SELECT COUNT(*) FROM tune_iterations");
    assert_eq!(runs as usize, steps.len(), "one run per step: {steps:?}");
    assert_eq!(iterations, runs, "one iteration per run");
    assert!(steps.iter().all(|s| s == "COMPLETED"), "{steps:?}");
    assert_eq!(
        one::<i64>(&s, "SELECT COUNT(*) FROM runs WHERE status <> 'COMPLETED'"),
        0
    );
    assert_eq!(
        one::<i64>(&s, "SELECT COUNT(*) FROM job_locks"),
        0,
        "given back"
    );
}

/// `aether run` killed while its tune's step runs on the cluster it made for the job, then
/// `aether run` again: the session resumes on that cluster (no second cluster), takes up the
/// killed command's step (no second step), ends the cluster; nothing is left running.
#[test]
fn a_run_killed_mid_step_resumes_on_its_cluster_and_leaves_nothing_running() {
    let emu = common::start_emulator(1.0);
    let (_dir, home) = emr_home(&emu);
    // the sample job the README migrates (recommended for the GPU); its GPU run replays a
    // real log
    let cpu = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/sample/local-1796393658133.zstd")
        .display()
        .to_string();
    let args = [
        "run",
        "--event_log",
        &cpu,
        "--min_tuning_iterations",
        "1",
        "--max_tuning_iterations",
        "1",
        "--yes",
    ];
    emu.control(
        "steps",
        Some(json!({"mode": "replay", "event_log": sample(), "sleep_s": 8, "count": 2})),
    );
    let c = spawn_in(&emu, &home, &args);
    wait_until("a running step", 60, || {
        clusters(&emu).values().any(|c| {
            c["steps"]
                .as_object()
                .is_some_and(|m| m.values().any(|s| s == "RUNNING"))
        })
    });
    kill9(c);
    let made = clusters(&emu).keys().next().unwrap().clone();
    let o = emu
        .aether(&home)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        err(&o).contains(&format!("resuming on cluster {made}")),
        "{}",
        err(&o)
    );
    let st = emu.state();
    assert_eq!(st["calls"]["RunJobFlow"], 1, "no second cluster: {st}");
    let c = clusters(&emu);
    assert_eq!(c[&made]["state"], "TERMINATED", "{st}");
    assert_eq!(
        c[&made]["steps"].as_object().unwrap().len(),
        1,
        "no second step: {st}"
    );
    assert_eq!(st["alive_steps"], json!([]));
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let q = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(q("SELECT COUNT(*) FROM runs WHERE kind = 'gpu-test'"), 1);
    assert_eq!(
        q("SELECT COUNT(*) FROM runs WHERE kind = 'gpu-test' AND status = 'COMPLETED'"),
        1
    );
    assert_eq!(q("SELECT COUNT(*) FROM tune_iterations"), 1);
    assert_eq!(
        q("SELECT COUNT(*) FROM clusters WHERE state <> 'TERMINATED'"),
        0,
        "{}",
        err(&o)
    );
}
