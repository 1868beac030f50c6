//! `aether tune` end to end on the local platform with a real spark-submit (pyspark 3.5): at
//! least 3 iterations of real runs, interrupted by Ctrl-C mid-run (the run is cancelled and
//! recorded, nothing is left running) and resumed by the same command, which continues the
//! session and keeps the fastest run.

mod common;

use common::err;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn aether(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_aether"));
    c.env("AETHER_HOME", home)
        .env("SPARK_LOCAL_IP", "127.0.0.1");
    c
}

/// Processes whose command line names `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(needle) && !c.contains("cargo") {
                out.push(c);
            }
        }
    }
    out
}

#[test]
fn tune_runs_iterations_survives_ctrl_c_and_resumes() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let log =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sample/local-1796009671201");
    let o = aether(&home)
        .args(["qualify", "--event_log", log.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let o = aether(&home)
        .args([
            "cluster",
            "create",
            "--platform",
            "local",
            "--local_cores",
            "2",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let cluster = String::from_utf8_lossy(&o.stdout)
        .split('\t')
        .next()
        .unwrap()
        .to_string();
    let script = d.path().join("tune_job.py");
    std::fs::write(
        &script,
        "from pyspark.sql import SparkSession\n\
         spark = SparkSession.builder.getOrCreate()\n\
         n = spark.range(0, 300000, 1, 4).selectExpr('id % 11 AS k').groupBy('k').count().count()\n\
         assert n == 11, n\n\
         spark.stop()\n",
    )
    .unwrap();
    let job = format!("spark-submit --name tune-test {}", script.display());
    let args = [
        "tune",
        "--aether_job_id",
        "1",
        "--cluster_id",
        &cluster,
        "--min_tuning_iterations",
        "3",
        "--max_tuning_iterations",
        "5",
        "--job",
        &job,
        "--allow_output_overwrite",
    ];
    let db = || rusqlite::Connection::open(home.join("history.db")).unwrap();
    let count = |sql: &str| -> i64 { db().query_row(sql, [], |r| r.get(0)).unwrap_or(0) };

    // 1. Ctrl-C during the second run
    let mut guard = common::Interrupt(Some(
        aether(&home)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let t = Instant::now();
    while !(count("SELECT COUNT(*) FROM tune_iterations") >= 1
        && count("SELECT COUNT(*) FROM runs WHERE status = 'RUNNING'") == 1)
    {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no second run started"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    let child = guard.0.take().unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", err(&o));
    let (status, decision): (String, String) = db()
        .query_row(
            "SELECT status, decision FROM tune_iterations WHERE iteration = 2",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(status, "INTERRUPTED");
    assert!(decision.contains("resume"), "{decision}");
    assert_eq!(
        count("SELECT COUNT(*) FROM tune_sessions WHERE status = 'INTERRUPTED'"),
        1
    );
    let script_name = script.display().to_string();
    assert!(
        processes_with(&script_name).is_empty(),
        "{:?}",
        processes_with(&script_name)
    );

    // 2. the same command resumes the session
    let o = aether(&home).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        err(&o)
    );
    assert!(err(&o).contains("resuming tune session 1"), "{}", err(&o));
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        stdout.contains("stopped: ") && stdout.contains("best: run "),
        "{stdout}"
    );
    let iterations = count("SELECT COUNT(*) FROM tune_iterations WHERE tune_id = 1");
    // the interrupted one, then 3 to 5 counted ones (min 3, max 5: whether a run improves the
    // best by 5 % depends on run times)
    assert!(
        (4..=6).contains(&iterations),
        "{iterations} iterations:\n{stdout}"
    );
    // the interrupted config ran again first
    let (c2, c3): (i64, i64) = db()
        .query_row(
            "SELECT (SELECT config_id FROM tune_iterations WHERE iteration = 2),
                    (SELECT config_id FROM tune_iterations WHERE iteration = 3)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(c2, c3);
    // at least 3 real completed runs; the best is the fastest of them
    let completed = count(
        "SELECT COUNT(*) FROM tune_iterations i JOIN runs r USING (run_id)
         WHERE i.status = 'COMPLETED' AND r.event_log IS NOT NULL AND r.duration_ms > 0",
    );
    assert!(completed >= 3, "{completed}");
    let (best, fastest): (i64, i64) = db()
        .query_row(
            "SELECT best_run_id, (SELECT run_id FROM runs WHERE kind = 'gpu-test' AND status = 'COMPLETED'
                                  ORDER BY duration_ms, run_id LIMIT 1)
             FROM tune_sessions WHERE tune_id = 1 AND status = 'DONE'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(best, fastest);
    assert!(processes_with(&script_name).is_empty());
}
