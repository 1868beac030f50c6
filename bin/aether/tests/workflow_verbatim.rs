//! The README's migration workflow, command for command as written there (the block between
//! `workflow:begin` and `workflow:end`), with no `--platform` anywhere: the settings choose the
//! platform. Each id a command needs is read from what an earlier command printed (qualify's
//! table, `cluster create`'s line, `submit`'s run line). Run on the project's EMR emulator (moto's
//! EMR, EMR on EKS and S3 over the wire, steps and job runs executed by the local Spark; never
//! real AWS) for `emr` (the block as it is), `emr-eks` (plus `core.run_on emr-eks`) and `local`
//! (plus `core.run_on local`, the CPU job run by spark-submit and qualified from its log); then
//! nothing is left running and production's output is unchanged.

mod common;

use common::{err, out};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The README's workflow commands, in order.
fn readme_workflow() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let begin = readme
        .find("<!-- workflow:begin")
        .expect("README has the workflow block");
    let end = readme[begin..].find("<!-- workflow:end -->").unwrap() + begin;
    let lines: Vec<String> = readme[begin..end]
        .lines()
        .filter(|l| l.starts_with("aether "))
        .map(String::from)
        .collect();
    assert!(lines.len() >= 10, "{lines:?}");
    lines
}

/// `line` with each `$NAME` replaced by its value; its words (the block quotes nothing).
fn words(line: &str, vars: &BTreeMap<&str, String>) -> Vec<String> {
    line.split_whitespace()
        .skip(1)
        .map(|w| match w.strip_prefix('$') {
            Some(name) => vars
                .get(name)
                .unwrap_or_else(|| panic!("{line}: ${name} was not printed by an earlier command"))
                .clone(),
            None => w.to_string(),
        })
        .collect()
}

/// The ids qualify prints first in its table (Job, Shape, Config), of its first row.
fn printed_ids(text: &str) -> Vec<String> {
    let mut lines = text.lines();
    lines
        .find(|l| l.split_whitespace().take(3).eq(["Job", "Shape", "Config"]))
        .unwrap_or_else(|| panic!("no Job, Shape, Config columns in:\n{text}"));
    let row = lines.next().unwrap_or_else(|| panic!("no row in:\n{text}"));
    let ids: Vec<String> = row.split_whitespace().take(3).map(String::from).collect();
    assert!(
        ids.len() == 3 && ids.iter().all(|i| i.parse::<i64>().is_ok()),
        "{row}"
    );
    ids
}

/// What a workflow left behind, for the checks after it.
struct Ran {
    job_id: String,
    gpu_cluster: String,
    listed: String,
}

/// Run the README's commands in order (the qualify line swapped for `qualify` when given).
fn run_workflow(
    emu: &common::Emulator,
    home: &Path,
    mut vars: BTreeMap<&'static str, String>,
    qualify: Option<Vec<String>>,
) -> Ran {
    let mut listed = String::new();
    for line in readme_workflow() {
        assert!(
            !line
                .split_whitespace()
                .any(|w| w == "--platform" || w == "--backend"),
            "{line}: the README names no platform"
        );
        let args = match &qualify {
            Some(q) if line.starts_with("aether qualify ") => q.clone(),
            _ => words(&line, &vars),
        };
        let started = std::time::Instant::now();
        let o: Output = emu
            .aether(home)
            .args(&args)
            .args(if args[0] == "qualify" {
                // a tiny job: let qualify recommend it
                common::RECOMMEND_TINY.to_vec()
            } else {
                Vec::new()
            })
            .env("SPARK_LOCAL_IP", "127.0.0.1")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        eprintln!(
            "$ aether {} ({:.1} s)",
            args.join(" "),
            started.elapsed().as_secs_f64()
        );
        assert!(
            o.status.success(),
            "aether {}: {:?}\n{}\n{}",
            args.join(" "),
            o.status,
            out(&o),
            err(&o)
        );
        let stdout = out(&o);
        match (args[0].as_str(), args.get(1).map(String::as_str)) {
            ("qualify", _) => {
                let ids = printed_ids(&stdout);
                vars.insert("JOB_ID", ids[0].clone());
                vars.insert("SHAPE_ID", ids[1].clone());
                vars.insert("CONFIG_ID", ids[2].clone());
            }
            ("cluster", Some("create")) => {
                let id = stdout.lines().last().unwrap().split('\t').next().unwrap();
                vars.insert("GPU_CLUSTER_ID", id.to_string());
            }
            ("cluster", Some("list")) => listed = stdout,
            ("submit", _) => {
                let run = stdout
                    .lines()
                    .find(|l| l.starts_with("run "))
                    .unwrap_or_else(|| panic!("no run line: {stdout}"));
                assert!(run.contains("COMPLETED"), "{run}");
                let step = run
                    .split('\t')
                    .find_map(|f| f.strip_prefix("step "))
                    .unwrap();
                vars.insert("GPU_STEP_ID", step.to_string());
            }
            ("validate", _) => assert!(
                stdout.contains("PASS") || stdout.contains("WARN"),
                "{stdout}"
            ),
            _ => {}
        }
    }
    Ran {
        job_id: vars["JOB_ID"].clone(),
        gpu_cluster: vars["GPU_CLUSTER_ID"].clone(),
        listed,
    }
}

fn db(home: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(home.join("history.db")).unwrap()
}

fn one<T: rusqlite::types::FromSql>(home: &Path, sql: &str) -> T {
    db(home).query_row(sql, [], |r| r.get(0)).unwrap()
}

/// What every platform's run must have done: the runs on the platform, a finished tune
/// session, a validation, the cluster ended and listed, nothing left running.
fn check_history(home: &Path, ran: &Ran, backend: &str) {
    let gpu_runs: i64 = one(
        home,
        &format!(
            "SELECT COUNT(*) FROM runs WHERE kind = 'gpu-test' AND status = 'COMPLETED' AND backend = '{backend}'"
        ),
    );
    assert!(gpu_runs >= 2, "submit's run and tune's: {gpu_runs}");
    assert_eq!(
        one::<i64>(
            home,
            "SELECT COUNT(*) FROM runs WHERE kind = 'gpu-test' AND backend <> (SELECT backend FROM runs WHERE kind = 'gpu-test' LIMIT 1)"
        ),
        0,
        "every run on one platform"
    );
    assert_eq!(
        one::<String>(home, "SELECT status || ' ' || backend FROM tune_sessions"),
        format!("DONE {backend}")
    );
    assert_eq!(
        one::<i64>(
            home,
            "SELECT COUNT(*) FROM configs WHERE source = 'profile'"
        ),
        1,
        "profile stored the GPU run's recommendation"
    );
    let verdict: String = one(home, "SELECT verdict FROM validations");
    assert!(verdict == "PASS" || verdict == "WARN", "{verdict}");
    assert_eq!(
        one::<String>(home, "SELECT CAST(job_id AS TEXT) FROM validations"),
        ran.job_id
    );
    assert!(
        ran.listed.contains(&ran.gpu_cluster) && ran.listed.contains(&format!("\t{backend}\t")),
        "cluster list shows the {backend} cluster: {}",
        ran.listed
    );
    assert_eq!(
        common::cluster_state(&db(home), &ran.gpu_cluster),
        "TERMINATED"
    );
    assert_eq!(
        one::<i64>(home, "SELECT COUNT(*) FROM runs WHERE status = 'RUNNING'"),
        0
    );
}

#[test]
fn the_readme_workflow_runs_as_written_on_emr() {
    let emu = common::start_emulator(1.0);
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let (cpu_cluster, cpu_step) =
        emu.production_step(d.path(), "verbatim-etl", "s3://logs/cpu-spark/");
    emu.boto("s3.create_bucket(Bucket='my-bucket')");
    let prod_before = emu.production_outputs();
    let vars = BTreeMap::from([("CPU_CLUSTER_ID", cpu_cluster), ("CPU_STEP_ID", cpu_step)]);
    let ran = run_workflow(&emu, &home, vars, None);
    assert!(ran.gpu_cluster.starts_with("j-"), "{}", ran.gpu_cluster);
    check_history(&home, &ran, "emr");
    let st = emu.state();
    assert_eq!(
        st["clusters"][&ran.gpu_cluster]["state"], "TERMINATED",
        "{st}"
    );
    assert_eq!(st["alive_steps"], serde_json::json!([]), "{st}");
    assert_eq!(
        prod_before,
        emu.production_outputs(),
        "production outputs untouched"
    );
}

#[test]
fn the_readme_workflow_runs_as_written_on_emr_eks() {
    let emu = common::start_emulator(1.0);
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let (cpu_cluster, cpu_step) =
        emu.production_step(d.path(), "verbatim-eks-etl", "s3://logs/cpu-spark/");
    emu.boto("s3.create_bucket(Bucket='my-bucket')");
    let vc = emu.boto(
        "print(eks.create_virtual_cluster(name='gpu-tests', containerProvider={'id': 'analytics', 'type': 'EKS',\n\
           'info': {'eksInfo': {'namespace': 'spark-gpu'}}})['id'])",
    );
    let prod_before = emu.production_outputs();
    // the EMR on EKS user's settings: runs go to EMR on EKS
    common::set_eks_settings(&home, &vc);
    let o = common::aether(&home, &["config", "set", "core.run_on", "emr-eks"]);
    assert!(o.status.success(), "{}", err(&o));
    let vars = BTreeMap::from([("CPU_CLUSTER_ID", cpu_cluster), ("CPU_STEP_ID", cpu_step)]);
    let ran = run_workflow(&emu, &home, vars, None);
    assert!(ran.gpu_cluster.starts_with("eks-"), "{}", ran.gpu_cluster);
    check_history(&home, &ran, "emr-eks");
    let runs = emu.state()["job_runs"].clone();
    assert!(
        runs.as_object().is_some_and(|m| m.len() >= 2
            && m.values()
                .all(|r| r["state"] != "RUNNING" && r["state"] != "PENDING")),
        "every job run ended: {runs}"
    );
    assert_eq!(
        emu.state()["calls"]["RunJobFlow"].as_i64().unwrap_or(0),
        1,
        "no EMR cluster but production's"
    );
    assert_eq!(prod_before, emu.production_outputs());
}

#[test]
fn the_readme_workflow_runs_as_written_on_local() {
    let emu = common::start_emulator(1.0);
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    // production: a CPU job run with spark-submit on this machine, its event log kept
    let logs = d.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let script = d.path().join("etl.py");
    std::fs::write(
        &script,
        "import sys\nfrom pyspark.sql import SparkSession\n\
         spark = SparkSession.builder.appName('verbatim-local').getOrCreate()\n\
         spark.range(0, 100000, 1, 4).selectExpr('id % 7 AS k', 'id * 1.5 AS v')\
         .groupBy('k').sum('v').write.mode('overwrite').parquet(sys.argv[1])\n\
         spark.stop()\n",
    )
    .unwrap();
    let prod = d.path().join("prod/agg");
    common::cpu_run(&logs, &script, &[prod.to_str().unwrap()], &[]);
    let listing = |p: &PathBuf| -> Vec<(String, u64)> {
        let mut v: Vec<_> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().to_string(),
                    e.metadata().unwrap().len(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let prod_before = listing(&prod);
    let o = common::aether(&home, &["config", "set", "core.run_on", "local"]);
    assert!(o.status.success(), "{}", err(&o));
    let qualify = vec![
        "qualify".to_string(),
        "--event_log".into(),
        logs.display().to_string(),
    ];
    let ran = run_workflow(&emu, &home, BTreeMap::new(), Some(qualify));
    assert!(ran.gpu_cluster.starts_with("lc-"), "{}", ran.gpu_cluster);
    check_history(&home, &ran, "local");
    assert_eq!(
        emu.state()["calls"]["RunJobFlow"].as_i64().unwrap_or(0),
        0,
        "nothing on EMR"
    );
    assert_eq!(listing(&prod), prod_before, "production output untouched");
}
