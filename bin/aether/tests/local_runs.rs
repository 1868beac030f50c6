//! `aether cluster` and `aether submit` on the local platform, with a real spark-submit (pyspark
//! 3.5, installed by `scripts/setup --test`): a qualified job runs twice with different configs,
//! both runs are recorded with their event logs, and each log shows the config it ran with.

mod common;

use common::{aether, err, out};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `event log PATH` of submit's summary line.
fn event_log(o: &Output) -> String {
    out(o)
        .split("event log ")
        .nth(1)
        .unwrap_or_else(|| panic!("no event log in {:?}", out(o)))
        .trim()
        .to_string()
}

fn property(home: &Path, log: &str, key: &str) -> String {
    let o = aether(
        home,
        &[
            "sql",
            "--event_log",
            log,
            "--format",
            "csv",
            &format!("SELECT value FROM properties WHERE category = 'spark' AND key = '{key}'"),
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    out(&o).lines().nth(1).unwrap_or("").to_string()
}

#[test]
fn a_job_runs_twice_locally_with_two_configs_and_both_runs_are_recorded() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let log = repo().join("datasets/sample/local-1796009671201");
    let o = aether(&home, &["qualify", "--event_log", log.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let (job, config, props): (i64, i64, String) = db
        .query_row(
            "SELECT job_id, config_id, properties_json FROM configs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let props: serde_json::Value = serde_json::from_str(&props).unwrap();
    let tuned_partitions = props["spark.sql.shuffle.partitions"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(props["spark.plugins"], "com.nvidia.spark.SQLPlugin");

    let o = aether(
        &home,
        &[
            "cluster",
            "create",
            "--platform",
            "local",
            "--local_cores",
            "2",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let cluster = out(&o).split('\t').next().unwrap().to_string();
    assert!(
        out(&o).contains("WAITING") && out(&o).contains("no GPU"),
        "{}",
        out(&o)
    );

    // the log was a pyspark shell: no job to run again until one is given
    let c = config.to_string();
    let o = aether(
        &home,
        &["submit", "--config_id", &c, "--cluster_id", &cluster],
    );
    assert!(!o.status.success());
    assert!(
        err(&o).contains("--job") && err(&o).contains(&format!("job {job}")),
        "{}",
        err(&o)
    );

    let script = d.path().join("job.py");
    std::fs::write(
        &script,
        "from pyspark.sql import SparkSession\n\
         spark = SparkSession.builder.getOrCreate()\n\
         n = spark.range(0, 100000, 1, 4).selectExpr('id % 7 AS k').groupBy('k').count().count()\n\
         assert n == 7, n\n\
         spark.stop()\n",
    )
    .unwrap();
    let job_line = format!("spark-submit --name local-test {}", script.display());
    let t = std::time::Instant::now();
    let first = aether(
        &home,
        &[
            "submit",
            "--config_id",
            &c,
            "--cluster_id",
            &cluster,
            "--job",
            &job_line,
        ],
    );
    let first_s = t.elapsed().as_secs_f64();
    assert!(first.status.success(), "{}\n{}", out(&first), err(&first));
    assert!(out(&first).contains("COMPLETED"), "{}", out(&first));
    // the definition is kept: the second run needs no --job
    let second = aether(
        &home,
        &[
            "submit",
            "--config_id",
            &c,
            "--cluster_id",
            &cluster,
            "--conf",
            "spark.sql.shuffle.partitions=3",
        ],
    );
    assert!(
        second.status.success(),
        "{}\n{}",
        out(&second),
        err(&second)
    );
    println!("one local submit: {first_s:.1} s");

    let (l1, l2) = (event_log(&first), event_log(&second));
    assert_ne!(l1, l2);
    assert_eq!(
        property(&home, &l1, "spark.sql.shuffle.partitions"),
        tuned_partitions
    );
    assert_eq!(property(&home, &l2, "spark.sql.shuffle.partitions"), "3");
    // no GPU here: the RAPIDS plugin was kept out of both runs
    assert_eq!(property(&home, &l1, "spark.plugins"), "");
    assert_eq!(property(&home, &l1, "spark.app.name"), "local-test");

    let runs: Vec<(i64, String, i64, String, i64)> = db
        .prepare(
            "SELECT job_id, status, config_id, event_log, duration_ms FROM runs ORDER BY run_id",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(
        runs.iter()
            .all(|r| r.0 == job && r.1 == "COMPLETED" && r.4 > 0),
        "{runs:?}"
    );
    assert_eq!(runs[0].2, config);
    assert_ne!(runs[1].2, config, "the --conf run has a config of its own");
    assert_eq!(
        (runs[0].3.as_str(), runs[1].3.as_str()),
        (l1.as_str(), l2.as_str())
    );
    // the app's duration from the run's own event log (not the wall time of the step)
    let o = aether(
        &home,
        &[
            "sql",
            "--event_log",
            &l1,
            "--format",
            "csv",
            "SELECT duration_ms FROM applications",
        ],
    );
    assert_eq!(
        out(&o).lines().nth(1).unwrap().parse::<i64>().unwrap(),
        runs[0].4
    );

    let o = aether(
        &home,
        &[
            "cluster",
            "terminate",
            "--platform",
            "local",
            "--cluster_id",
            &cluster,
        ],
    );
    assert!(
        o.status.success() && out(&o).contains("TERMINATED"),
        "{}",
        err(&o)
    );
    let o = aether(
        &home,
        &["submit", "--config_id", &c, "--cluster_id", &cluster],
    );
    assert!(
        !o.status.success() && err(&o).contains("TERMINATED"),
        "{}",
        err(&o)
    );
    assert_eq!(common::cluster_state(&db, &cluster), "TERMINATED");
    let o = aether(
        &home,
        &["submit", "--config_id", "999", "--cluster_id", &cluster],
    );
    assert!(err(&o).contains("unknown config id 999"), "{}", err(&o));
}

/// SIGINT during `submit`: the step (spark-submit, its JVM, its Python) is cancelled, the run is
/// recorded INTERRUPTED with exit status 130; `--timeout_s` cancels a step that runs too long
/// and records TIMED_OUT. Nothing is left running either way.
#[test]
fn interrupted_and_timed_out_submits_leave_nothing_running() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let log = repo().join("datasets/sample/local-1796009671201");
    assert!(
        aether(&home, &["qualify", "--event_log", log.to_str().unwrap()])
            .status
            .success()
    );
    // runs go to this machine's Spark, as a user sets it once
    assert!(
        aether(&home, &["config", "set", "core.run_on", "local"])
            .status
            .success()
    );
    let o = aether(&home, &["cluster", "create", "--local_cores", "1"]);
    let cluster = out(&o).split('\t').next().unwrap().to_string();
    let script = d.path().join("slow.py");
    std::fs::write(
        &script,
        "import time\nfrom pyspark.sql import SparkSession\n\
         spark = SparkSession.builder.getOrCreate()\ntime.sleep(120)\n",
    )
    .unwrap();
    let job = format!("spark-submit {}", script.display());
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let step_pid = |step: &str| -> i32 {
        let p = home.join(format!("local/clusters/{cluster}/steps/{step}/pid"));
        std::fs::read_to_string(p).unwrap().trim().parse().unwrap()
    };
    // members of the step's process group that are not zombies
    let group_alive = |pid: i32| aether_platform::local::group_running(pid) > 0;

    /// Kills what the test started (aether, and the step's process group once known) when
    /// the test ends, also when an assertion fails first.
    struct Cleanup {
        child: Option<std::process::Child>,
        group: i32,
    }
    impl Drop for Cleanup {
        fn drop(&mut self) {
            if let Some(c) = self.child.as_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
            if self.group > 0 {
                // SAFETY: SIGKILL to the step's own process group
                unsafe {
                    libc::kill(-self.group, libc::SIGKILL);
                }
            }
        }
    }
    let mut cleanup = Cleanup {
        child: None,
        group: 0,
    };
    let child = Command::new(env!("CARGO_BIN_EXE_aether"))
        .args([
            "submit",
            "--config_id",
            "1",
            "--cluster_id",
            &cluster,
            "--job",
            &job,
        ])
        .env("AETHER_HOME", &home)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let aether_pid = child.id() as i32;
    cleanup.child = Some(child);
    // wait until the run is recorded RUNNING, then give Spark a moment to start its JVM
    let t = std::time::Instant::now();
    let step: String = loop {
        let s: Option<String> = db
            .query_row(
                "SELECT step_id FROM runs WHERE status = 'RUNNING'",
                [],
                |r| r.get(0),
            )
            .ok();
        if let Some(s) = s {
            break s;
        }
        assert!(t.elapsed().as_secs() < 60, "no RUNNING run");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    std::thread::sleep(std::time::Duration::from_secs(3));
    let pid = step_pid(&step);
    cleanup.group = pid;
    assert!(group_alive(pid), "spark-submit is running");
    // SAFETY: SIGINT to the aether child only (spark-submit has its own process group)
    unsafe {
        libc::kill(aether_pid, libc::SIGINT);
    }
    let o = cleanup.child.take().unwrap().wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", err(&o));
    let status: String = db
        .query_row("SELECT status FROM runs WHERE step_id = ?1", [&step], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(status, "INTERRUPTED");
    assert!(
        !group_alive(pid),
        "the step's processes outlived the interrupt"
    );

    let o = aether(
        &home,
        &[
            "submit",
            "--config_id",
            "1",
            "--cluster_id",
            &cluster,
            "--timeout_s",
            "8",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let (step, status): (String, String) = db
        .query_row(
            "SELECT step_id, status FROM runs ORDER BY run_id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(status, "TIMED_OUT");
    assert!(
        !group_alive(step_pid(&step)),
        "the timed-out step is still running"
    );
}

/// A real CPU run that writes Parquet where its argument says, then a test run of it: the
/// output moves under the sandbox and the production output stays as it was. A job whose
/// output path is written in its code (no argument names it) is refused.
#[test]
fn test_runs_write_to_the_sandbox_never_over_production_outputs() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let logs = d.path().join("cpu-logs");
    std::fs::create_dir_all(&logs).unwrap();
    let prod = d.path().join("prod");
    let hard = prod.join("hard");
    let script = |name: &str, target: &str, table: bool| {
        let p = d.path().join(name);
        // a managed table too (saveAsTable): it lives in the warehouse, which the sandbox moves
        let table = if table {
            "spark.range(0, 1000, 1, 2).selectExpr('id % 3 AS k').groupBy('k').count()\
             .write.mode('overwrite').saveAsTable('t_summary')\n"
        } else {
            ""
        };
        std::fs::write(
            &p,
            format!(
                "import sys\nfrom pyspark.sql import SparkSession\n\
                 spark = SparkSession.builder.getOrCreate()\n\
                 spark.range(0, 1000, 1, 2).selectExpr('id', 'id % 3 AS k')\
                 .write.mode('overwrite').parquet({target})\n{table}spark.stop()\n"
            ),
        )
        .unwrap();
        p
    };
    let by_arg = script("by_arg.py", "sys.argv[1]", true);
    let hard_coded = script(
        "hard.py",
        &format!("{:?}", hard.display().to_string()),
        false,
    );
    let warehouse = prod.join("warehouse");
    // the CPU runs, as production ran them: spark-submit with an event log
    let cpu_run = |job: &Path, args: &[&str]| {
        common::cpu_run(
            &logs,
            job,
            args,
            &[format!(
                "spark.sql.warehouse.dir=file://{}",
                warehouse.display()
            )],
        )
    };
    let out_dir = prod.join("out");
    cpu_run(&by_arg, &[out_dir.to_str().unwrap()]);
    cpu_run(&hard_coded, &[]);
    // production's outputs, as a later reader sees them
    std::fs::write(out_dir.join("KEEP"), "production").unwrap();
    std::fs::write(hard.join("KEEP"), "production").unwrap();

    let o = aether(&home, &["qualify", "--event_log", logs.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    // the definitions came from the logs (sun.java.command): no --job needed
    let config_of = |script: &Path| -> String {
        db.query_row(
            "SELECT c.config_id FROM configs c JOIN job_definitions d USING (job_id)
             WHERE d.definition_json LIKE ?1",
            [format!("%{}%", script.display())],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
        .to_string()
    };
    // runs go to this machine's Spark, as a user sets it once
    assert!(
        aether(&home, &["config", "set", "core.run_on", "local"])
            .status
            .success()
    );
    let o = aether(&home, &["cluster", "create", "--local_cores", "1"]);
    let cluster = out(&o).split('\t').next().unwrap().to_string();

    let o = aether(
        &home,
        &[
            "submit",
            "--config_id",
            &config_of(&by_arg),
            "--cluster_id",
            &cluster,
        ],
    );
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert_eq!(
        std::fs::read_to_string(out_dir.join("KEEP")).unwrap(),
        "production"
    );
    let (details, log): (String, String) = db
        .query_row("SELECT details_json, event_log FROM runs", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let details: serde_json::Value = serde_json::from_str(&details).unwrap();
    // the run's idle executor capacity, from its event log
    let idle = &details["idle"];
    assert!(idle["executors"].as_i64().unwrap() >= 1, "{details:#}");
    let (alloc, idle_ms) = (
        idle["allocated_ms"].as_i64().unwrap(),
        idle["idle_ms"].as_i64().unwrap(),
    );
    assert!(alloc > 0 && (0..=alloc).contains(&idle_ms), "{details:#}");
    let moved = details["outputs"][0][1].as_str().unwrap().to_string();
    assert_eq!(details["outputs"][0][0], out_dir.display().to_string());
    assert!(
        moved.starts_with(&home.join("local/sandbox").display().to_string()),
        "{moved}"
    );
    // the test run wrote its Parquet there (the run's own log says so too)
    assert!(
        std::fs::read_dir(&moved)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
    );
    let o = aether(
        &home,
        &[
            "sql",
            "--event_log",
            &log,
            "--format",
            "csv",
            "SELECT count(*) FROM sql_plan_nodes WHERE node_name LIKE 'Execute InsertIntoHadoopFsRelationCommand%' AND strpos(description, 'sandbox') > 0",
        ],
    );
    assert_ne!(out(&o).lines().nth(1), Some("0"), "{}", out(&o));

    let o = aether(
        &home,
        &[
            "submit",
            "--config_id",
            &config_of(&hard_coded),
            "--cluster_id",
            &cluster,
        ],
    );
    assert!(!o.status.success());
    assert!(
        err(&o).contains(&hard.display().to_string())
            && err(&o).contains("--allow_output_overwrite"),
        "{}",
        err(&o)
    );
    assert_eq!(
        std::fs::read_to_string(hard.join("KEEP")).unwrap(),
        "production"
    );
    let runs: i64 = db
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(runs, 1, "the refused run was not started");

    // validate the test run against the CPU run: the event logs and the output against its
    // sandbox copy; recorded in the history
    let job: i64 = db
        .query_row(
            "SELECT job_id FROM configs WHERE config_id = ?1",
            [config_of(&by_arg)],
            |r| r.get(0),
        )
        .unwrap();
    let validate = || {
        aether(
            &home,
            &[
                "validate",
                "--aether_job_id",
                &job.to_string(),
                "--report_format",
                "json",
            ],
        )
    };
    let o = validate();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", out(&o), err(&o));
    let r: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(r["verdict"], "PASS", "{:#}", r["reasons"]);
    let compared = |r: &serde_json::Value, what: &str| {
        r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == "output compared" && c["column"] == what)
            .unwrap_or_else(|| panic!("{what}: {r:#}"))
            .clone()
    };
    let c = compared(&r, &out_dir.display().to_string());
    assert_eq!(
        (&c["cpu"], &c["gpu"]),
        (&out_dir.display().to_string().into(), &moved.clone().into())
    );
    // the table: the CPU run's warehouse against the test run's own (sandboxed) warehouse
    let sandbox_table = Path::new(&moved)
        .ancestors()
        .find(|p| p.parent() == Some(home.join("local/sandbox").as_path()))
        .unwrap()
        .join("warehouse/t_summary");
    let c = compared(&r, "default.t_summary");
    assert_eq!(c["cpu"], warehouse.join("t_summary").display().to_string());
    assert_eq!(c["gpu"], sandbox_table.display().to_string());
    assert_eq!(c["verdict"], "PASS");
    assert!(
        !warehouse
            .join("t_summary")
            .starts_with(home.join("local/sandbox"))
    );
    // 1000 rows to the folder, the table's 3
    assert!(
        r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["layer"] == "event log"
                && c["check"] == "rows written"
                && c["cpu"] == "1003"),
        "{r:#}"
    );
    // the sandbox copy loses a part file: the output check fails, the logs still agree
    let part = std::fs::read_dir(&moved)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
        .unwrap();
    std::fs::remove_file(part.path()).unwrap();
    // and the table's copy is gone: that output fails, the other is still compared
    std::fs::remove_dir_all(&sandbox_table).unwrap();
    let o = validate();
    assert_eq!(o.status.code(), Some(1), "{}\n{}", out(&o), err(&o));
    let r: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let reasons = r["reasons"].to_string();
    assert!(reasons.contains("FAIL row count"), "{reasons}");
    assert!(!reasons.contains("rows written"), "{reasons}");
    let c = compared(&r, "default.t_summary");
    assert_eq!(c["verdict"], "FAIL");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("could not be compared"),
        "{c:#}"
    );
    let recorded: Vec<(String, i64)> = db
        .prepare("SELECT verdict, failed_checks FROM validations WHERE job_id = ?1 ORDER BY validation_id")
        .unwrap()
        .query_map([job], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0], ("PASS".to_string(), 0));
    assert_eq!(recorded[1].0, "FAIL");
    assert!(recorded[1].1 > 0);
    // no GPU run of the other job yet
    let other: i64 = db
        .query_row(
            "SELECT job_id FROM configs WHERE config_id = ?1",
            [config_of(&hard_coded)],
            |r| r.get(0),
        )
        .unwrap();
    let o = aether(&home, &["validate", "--aether_job_id", &other.to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("no successful GPU test run"),
        "{}",
        err(&o)
    );
}
