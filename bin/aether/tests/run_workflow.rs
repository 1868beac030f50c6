//! `aether run --backend local` end to end with real Spark: two jobs' CPU runs (spark-submit with
//! event logs), then the workflow (qualify, tune on a cluster made for each job, validate, report)
//! interrupted by SIGINT during its first GPU run (no cluster left running, the run recorded as
//! stopped), run again (it continues: nothing qualified twice, the interrupted session resumed,
//! both jobs validated), and a third time (nothing run again).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{err, out};

fn run_args(logs: &Path, report: &Path) -> Vec<String> {
    [
        "run",
        "--event_log",
        logs.to_str().unwrap(),
        "--backend",
        "local",
        "--min_tuning_iterations",
        "1",
        "--max_tuning_iterations",
        "1",
        // tiny local jobs: let qualify recommend them
        "--set",
        "gpu_speedup_min=0.1",
        "--set",
        "category_small_min=0.1",
        "--output",
        report.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

fn count(db: &rusqlite::Connection, sql: &str) -> i64 {
    db.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn run_is_interrupted_resumed_and_then_has_nothing_left_to_do() {
    let d = tempfile::tempdir().unwrap();
    let (home, logs) = (d.path().join("home"), d.path().join("logs"));
    std::fs::create_dir_all(&logs).unwrap();
    for (name, n) in [("sums.py", 200_000), ("counts.py", 100_000)] {
        let script = d.path().join(name);
        std::fs::write(
            &script,
            format!(
                "import sys\nfrom pyspark.sql import SparkSession\n\
                 spark = SparkSession.builder.getOrCreate()\n\
                 spark.range(0, {n}, 1, 4).selectExpr('id % 7 AS k', 'id * 1.5 AS v')\
                 .groupBy('k').sum('v').write.mode('overwrite').parquet(sys.argv[1])\n\
                 spark.stop()\n"
            ),
        )
        .unwrap();
        let output = d.path().join("prod").join(name);
        common::cpu_run(&logs, &script, &[output.to_str().unwrap()], &[]);
    }
    let report = d.path().join("report");
    let aether = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_aether"));
        c.env("AETHER_HOME", &home);
        c
    };

    // 1. interrupted during its first GPU run
    let mut guard = common::Interrupt(Some(
        aether()
            .args(run_args(&logs, &report))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let db_path = home.join("history.db");
    let t0 = Instant::now();
    loop {
        let running = db_path.exists()
            && rusqlite::Connection::open(&db_path)
                .ok()
                .and_then(|db| {
                    db.query_row(
                        "SELECT count(*) FROM runs WHERE status = 'RUNNING'",
                        [],
                        |r| r.get::<_, i64>(0),
                    )
                    .ok()
                })
                .unwrap_or(0)
                > 0;
        if running {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no GPU run started"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let child = guard.0.take().unwrap();
    // SAFETY: a signal to the child this test started
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", err(&o));
    assert!(
        err(&o).contains("again continues from the history"),
        "{}",
        err(&o)
    );
    let db = rusqlite::Connection::open(&db_path).unwrap();
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM clusters WHERE state NOT IN ('TERMINATED', 'TERMINATED_WITH_ERRORS')"
        ),
        0,
        "a cluster was left running"
    );
    assert!(count(&db, "SELECT count(*) FROM clusters") >= 1);
    assert_eq!(
        count(&db, "SELECT count(*) FROM runs WHERE status = 'RUNNING'"),
        0
    );
    assert_eq!(count(&db, "SELECT count(*) FROM qualifications"), 2);

    // 2. again: it continues
    let o = aether().args(run_args(&logs, &report)).output().unwrap();
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(1),
        "{}",
        err(&o)
    );
    let e = err(&o);
    assert!(e.contains("2 log(s), 2 already qualified"), "{e}");
    assert!(e.contains("resuming tune session"), "{e}");
    assert_eq!(count(&db, "SELECT count(*) FROM qualifications"), 2);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM runs WHERE kind = 'gpu-test' AND status = 'COMPLETED'"
        ),
        2
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(DISTINCT job_id) FROM validations WHERE verdict = 'PASS'"
        ),
        2
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM clusters WHERE state NOT IN ('TERMINATED', 'TERMINATED_WITH_ERRORS')"
        ),
        0
    );
    // the report: both jobs measured and validated
    let table = out(&o);
    assert!(
        table.contains("Tested on GPU") && table.contains("PASS"),
        "{table}"
    );
    assert!(report.join("overview.html").exists());
    let jobs: Vec<i64> = db
        .prepare("SELECT job_id FROM jobs ORDER BY job_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    for j in &jobs {
        assert!(report.join(format!("job-{j}.html")).exists());
    }

    // 3. a third time: nothing left to run
    let runs = count(&db, "SELECT count(*) FROM runs");
    let vals = count(&db, "SELECT count(*) FROM validations");
    let o = aether().args(run_args(&logs, &report)).output().unwrap();
    let e = err(&o);
    assert_eq!(e.matches("done before, not run again").count(), 2, "{e}");
    assert_eq!(e.matches("was validated before (PASS)").count(), 2, "{e}");
    assert_eq!(count(&db, "SELECT count(*) FROM runs"), runs);
    assert_eq!(count(&db, "SELECT count(*) FROM validations"), vals);
    assert_eq!(o.status.code(), Some(0), "{e}");
}
