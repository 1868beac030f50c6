//! EMR steps end to end against the project's EMR emulator (moto's EMR and S3 over the wire,
//! a ticker that runs each step with the local Spark; never real AWS): a CPU job that ran as a
//! step on a production cluster is qualified from its step id, then re-run with qualify's
//! AutoTuner config on a GPU test cluster aether creates, its outputs in the sandbox, its run
//! and event log recorded, and the cluster terminated with no step left running.

mod common;

use common::{err, out};
use std::path::Path;

/// Settings of a user whose test clusters log to `s3://logs` and put artifacts in `s3://art`.
fn settings(home: &Path) {
    std::fs::create_dir_all(home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[platform.emr]\nregion = \"us-east-1\"\nspark_event_log_dir = \"s3://logs/gpu-spark\"\n\
         [platform.emr.cluster]\nartifacts_path = \"s3://art/aether\"\nlog_path = \"s3://logs/aether\"\n\
         log_wait_s = 20\n",
    )
    .unwrap();
}

#[test]
fn a_step_qualified_then_rerun_on_a_gpu_test_cluster() {
    let emu = common::start_emulator(1.0);
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    settings(&home);
    // production: data and code in S3, a CPU cluster whose steps log to s3://logs/emr and whose
    // event logs go to s3://logs/cpu-spark (rolling logs, as with spark.eventLog.rolling.enabled)
    emu.control("layout", Some(serde_json::json!({"layout": "rolling"})));
    let (cpu_cluster, cpu_step) =
        emu.production_step(d.path(), "emr-steps-etl", "s3://logs/cpu-spark/");
    let (cpu_cluster, cpu_step) = (cpu_cluster.as_str(), cpu_step.as_str());
    let prod_before = emu.production_outputs();
    assert!(prod_before.contains(".parquet"), "{prod_before}");

    // 1. qualify from the step id: DescribeStep -> stderr.gz -> application id -> event log
    let o = emu
        .aether(&home)
        .args([
            "qualify",
            "--platform_job_id",
            cpu_step,
            "--cluster_id",
            cpu_cluster,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(
        err(&o).contains("s3://logs/cpu-spark/eventlog_v2_application_"),
        "the rolling event log of the step's application: {}",
        err(&o)
    );
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let (job_id, source, def): (i64, String, String) = db
        .query_row(
            "SELECT job_id, source, definition_json FROM job_definitions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(source, "emr-step");
    let def: serde_json::Value = serde_json::from_str(&def).unwrap();
    assert_eq!(def["main"], "s3://code/jobs/etl.py");
    assert_eq!(
        def["args"],
        serde_json::json!(["s3://data/in/", "s3://data/out/agg"])
    );
    assert_eq!(def["conf"]["spark.sql.shuffle.partitions"], "8");
    let (kind, status, step_col, cpu_log): (String, String, String, String) = db
        .query_row(
            "SELECT kind, status, step_id, event_log FROM runs WHERE job_id = ?1",
            [job_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(
        (kind.as_str(), status.as_str(), step_col.as_str()),
        ("cpu-original", "COMPLETED", cpu_step)
    );
    // the app qualify read is the step's: its id is the YARN id the step's stderr names
    let stderr = emu.boto(&format!(
        "import gzip\nprint(gzip.decompress(s3.get_object(Bucket='logs', Key='emr/{cpu_cluster}/steps/{cpu_step}/stderr.gz')['Body'].read()).decode())"
    ));
    let app = stderr
        .split("Submitted application ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert!(
        cpu_log.ends_with(&format!("eventlog_v2_{app}")),
        "{cpu_log}"
    );
    let app_in_db: String = db
        .query_row("SELECT app_id FROM jobs WHERE job_id = ?1", [job_id], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(app_in_db, app);
    let (shape, config): (i64, i64) = db
        .query_row(
            "SELECT q.qualification_id, c.config_id FROM qualifications q JOIN configs c USING (job_id)
             WHERE q.job_id = ?1 AND c.source = 'qualify'",
            [job_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();

    // 2. a GPU test cluster of qualify's shape
    emu.control("layout", Some(serde_json::json!({"layout": "attempt"})));
    let o = emu
        .aether(&home)
        .args([
            "cluster",
            "create",
            "--platform",
            "emr",
            "--cluster_shape_id",
            &shape.to_string(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let gpu_cluster = out(&o).split('\t').next().unwrap().to_string();

    // 3. submit: the step's job with the AutoTuner config, outputs in the sandbox
    let started = std::time::Instant::now();
    let o = emu
        .aether(&home)
        .args([
            "submit",
            "--platform",
            "emr",
            "--config_id",
            &config.to_string(),
            "--cluster_id",
            &gpu_cluster,
        ])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    eprintln!("emulated submit took {:.1} s", took.as_secs_f64());
    let run: (String, String, String, i64, f64, String) = db
        .query_row(
            "SELECT status, step_id, event_log, duration_ms, cost_usd, details_json FROM runs
             WHERE job_id = ?1 AND kind = 'gpu-test'",
            [job_id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )
        .unwrap();
    let (status, gpu_step, gpu_log, duration_ms, cost, details) = run;
    assert_eq!(status, "COMPLETED");
    assert!(
        gpu_log.starts_with("s3://logs/gpu-spark/application_") && gpu_log.ends_with("_1"),
        "the step's application's last attempt under platform.emr.spark_event_log_dir: {gpu_log}"
    );
    // the duration is the run's application's, read from its event log
    let o = emu
        .aether(&home)
        .args([
            "sql",
            "--event_log",
            &gpu_log,
            "--format",
            "json",
            "SELECT duration_ms FROM applications",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let rows: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(rows[0]["duration_ms"].as_i64(), Some(duration_ms));
    // cost: the run's hours x (primary m5d.xlarge + the shape's GPU nodes), catalog prices
    let prices = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/reference/emr/prices.csv"),
    )
    .unwrap();
    let price = |ty: &str| -> f64 {
        let l = prices
            .lines()
            .find(|l| l.starts_with(&format!("us-east-1,{ty},")))
            .unwrap_or_else(|| panic!("{ty} in prices.csv"));
        let f: Vec<&str> = l.split(',').collect();
        f[2].parse::<f64>().unwrap() + f[3].parse::<f64>().unwrap()
    };
    let (instance, nodes): (String, i64) = db
        .query_row(
            "SELECT json_extract(gpu_cluster_json, '$.shape.instance'), json_extract(gpu_cluster_json, '$.shape.nodes')
             FROM qualifications WHERE qualification_id = ?1",
            [shape],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let expected =
        (price("m5d.xlarge") + nodes as f64 * price(&instance)) * duration_ms as f64 / 3.6e6;
    // the CPU run's, from the production cluster's nodes (1 x m5d.xlarge, 2 x m5d.2xlarge)
    let (cpu_ms, cpu_cost): (i64, f64) = db
        .query_row(
            "SELECT duration_ms, cost_usd FROM runs WHERE job_id = ?1 AND kind = 'cpu-original'",
            [job_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let cpu_expected = (price("m5d.xlarge") + 2.0 * price("m5d.2xlarge")) * cpu_ms as f64 / 3.6e6;
    assert!(
        (cpu_cost - cpu_expected).abs() < 1e-9,
        "CPU run cost {cpu_cost} != {cpu_expected}"
    );
    assert!(
        (cost - expected).abs() < 1e-9,
        "cost {cost} != {expected} ({nodes} x {instance})"
    );
    // the step ran the recorded job with the config's GPU settings, outputs moved
    let details: serde_json::Value = serde_json::from_str(&details).unwrap();
    let args: Vec<String> = serde_json::from_value(details["args"].clone()).unwrap();
    assert_eq!(args[0], "spark-submit");
    assert!(
        args.iter().any(|a| a.starts_with("spark.rapids.")),
        "{args:?}"
    );
    assert!(args.contains(&"s3://code/jobs/etl.py".to_string()));
    assert!(args.contains(&"s3://data/in/".to_string()));
    let sandboxed = args
        .iter()
        .find(|a| a.starts_with("s3://art/aether/sandbox/"))
        .unwrap_or_else(|| panic!("output in the sandbox: {args:?}"));
    assert!(!args.contains(&"s3://data/out/agg".to_string()));
    let (b, k) = sandboxed
        .trim_start_matches("s3://")
        .split_once('/')
        .unwrap();
    let written = emu.boto(&format!(
        "print(sum(1 for o in s3.list_objects_v2(Bucket='{b}', Prefix='{k}/')['Contents'] if o['Key'].endswith('.parquet')))"
    ));
    assert!(written.parse::<i64>().unwrap() >= 1, "{written}");
    let prod_after = emu.production_outputs();
    assert_eq!(prod_before, prod_after, "production outputs untouched");

    // 4. tune: more real runs on the cluster, each profiled into the next config; the second
    // is forced to fail (the emulator's step dies of an OutOfMemoryError): recorded, and its
    // remedies are the next config, the loop goes on
    emu.control("steps", Some(serde_json::json!({"mode": "normal"})));
    emu.control("steps", Some(serde_json::json!({"mode": "fail"})));
    let o = emu
        .aether(&home)
        .args([
            "tune",
            "--platform",
            "emr",
            "--aether_job_id",
            &job_id.to_string(),
            "--cluster_id",
            &gpu_cluster,
            "--min_tuning_iterations",
            "3",
            "--max_tuning_iterations",
            "4",
        ])
        .output()
        .unwrap();
    let stdout = out(&o);
    assert!(o.status.success(), "{stdout}\n{}", err(&o));
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("iteration "))
        .collect();
    assert!(lines.len() >= 3, "{stdout}");
    assert!(lines[1].contains("FAILED"), "{stdout}");
    assert!(stdout.contains("best: run "), "{stdout}");
    let (n, done, best): (i64, String, i64) = db
        .query_row(
            "SELECT (SELECT COUNT(*) FROM tune_iterations i JOIN runs r USING (run_id)
                     WHERE i.status = 'COMPLETED' AND r.event_log LIKE 's3://logs/gpu-spark/%'),
                    status, best_run_id FROM tune_sessions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (n, done.as_str()),
        (lines.len() as i64 - 1, "DONE"),
        "{stdout}"
    );
    let (failed_status, decision, next_config, failed_config): (String, String, i64, i64) = db
        .query_row(
            "SELECT r.status, i.decision,
                    (SELECT config_id FROM tune_iterations WHERE tune_id = 1 AND iteration = 3),
                    i.config_id
             FROM tune_iterations i JOIN runs r USING (run_id)
             WHERE i.tune_id = 1 AND i.iteration = 2",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(failed_status, "FAILED");
    assert!(decision.starts_with("failed"), "{decision}");
    assert_ne!(next_config, failed_config, "the remedies are a new config");
    let fastest: i64 = db
        .query_row(
            "SELECT run_id FROM tune_iterations WHERE tune_id = 1 AND status = 'COMPLETED'
             ORDER BY duration_ms, run_id LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(best, fastest);

    // 5. terminate: nothing left running
    let o = emu
        .aether(&home)
        .args([
            "cluster",
            "terminate",
            "--platform",
            "emr",
            "--cluster_id",
            &gpu_cluster,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let st = emu.state();
    assert_eq!(st["clusters"][&gpu_cluster]["state"], "TERMINATED", "{st}");
    assert_eq!(
        st["clusters"][&gpu_cluster]["steps"][&gpu_step], "COMPLETED",
        "{st}"
    );
    assert_eq!(st["alive_steps"], serde_json::json!([]), "{st}");
    assert_eq!(common::cluster_state(&db, &gpu_cluster), "TERMINATED");
    // one step each: the CPU run, submit's, and each tune iteration's (3 or 4: whether the
    // third run improves the best decides, and run times vary)
    assert_eq!(
        st["calls"]["AddJobFlowSteps"],
        2 + lines.len() as i64,
        "one step each: {st}"
    );

    // 6. the whole workflow on EMR for the same step, in another history: qualify it from its
    // step (the job's definition), then `aether run` on its event log, which knows the log and
    // goes on: asks before creating a cluster, then tunes on one of the job's shape (ended
    // after it), validates the best run's S3 output against production's, reports
    emu.control("steps", Some(serde_json::json!({"mode": "normal"})));
    let home2 = d.path().join("home2");
    settings(&home2);
    let o = emu
        .aether(&home2)
        .args([
            "qualify",
            "--platform_job_id",
            cpu_step,
            "--cluster_id",
            cpu_cluster,
        ])
        // a tiny job: let qualify recommend it
        .args(common::RECOMMEND_TINY)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let category: String = rusqlite::Connection::open(home2.join("history.db"))
        .unwrap()
        .query_row("SELECT category FROM qualifications", [], |r| r.get(0))
        .unwrap();
    assert!(
        category != "Not Recommended" && category != "Not Applicable",
        "{category}"
    );
    let run = |yes: bool| {
        let mut c = emu.aether(&home2);
        c.args([
            "run",
            "--event_log",
            &cpu_log,
            "--backend",
            "emr",
            "--min_tuning_iterations",
            "1",
            "--max_tuning_iterations",
            "1",
        ]);
        if yes {
            c.arg("--yes");
        }
        c.stdin(std::process::Stdio::null()).output().unwrap()
    };
    let clusters_before = emu.state()["calls"]["RunJobFlow"].clone();
    let o = run(false);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("pass --yes"), "{}", err(&o));
    assert_eq!(
        emu.state()["calls"]["RunJobFlow"],
        clusters_before,
        "nothing created"
    );
    let o = run(true);
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{}\n{e}", out(&o));
    assert!(e.contains("1 log(s), 1 already qualified"), "{e}");
    let db2 = rusqlite::Connection::open(home2.join("history.db")).unwrap();
    let (made, verdict): (String, String) = db2
        .query_row(
            "SELECT r.cluster_id, v.verdict FROM validations v JOIN runs r ON r.run_id = v.gpu_run_id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(verdict, "PASS", "{e}");
    let st = emu.state();
    assert_eq!(st["clusters"][&made]["state"], "TERMINATED", "{st}");
    assert_eq!(st["alive_steps"], serde_json::json!([]), "{st}");
    assert!(out(&o).contains("PASS"), "{}", out(&o));
    assert_eq!(
        prod_before,
        emu.production_outputs(),
        "production outputs untouched"
    );
}
