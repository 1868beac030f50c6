//! Fleet scale: `--shard i/n` splits the logs between n runners (each log read by exactly one,
//! whatever the order of the listing), a retried shard redoes nothing, and bad shards are
//! explained.

mod common;

use common::{err, out};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn inputs() -> Vec<String> {
    ["datasets/sample", "datasets/fixtures/analyze"]
        .iter()
        .map(|p| repo().join(p).display().to_string())
        .collect()
}

fn aether(home: &Path, args: &[&str]) -> std::process::Output {
    common::aether(home, args)
}

/// `SELECT … FROM applications` rows as sorted lines.
fn apps(home: &Path, source: &[&str]) -> Vec<String> {
    let mut args = vec!["sql"];
    args.extend_from_slice(source);
    args.extend_from_slice(&[
        "--format",
        "csv",
        "SELECT app_id, event_log FROM applications ORDER BY app_id",
    ]);
    let o = aether(home, &args);
    assert!(o.status.success(), "{}", err(&o));
    let mut rows: Vec<String> = out(&o).lines().skip(1).map(String::from).collect();
    rows.sort();
    rows
}

/// `aether ingest` of the fixture inputs into `wh` (with `extra` arguments), succeeded.
fn ingest(home: &Path, wh: &str, extra: &[&str]) -> std::process::Output {
    let ins = inputs();
    let mut args = vec!["ingest"];
    args.extend(ins.iter().map(String::as_str));
    args.extend(["--out", wh]);
    args.extend(extra);
    let o = aether(home, &args);
    assert!(o.status.success(), "ingest {extra:?}: {}", err(&o));
    o
}

fn ingested(o: &std::process::Output) -> (usize, usize) {
    let e = err(o);
    let n = |after: &str| -> usize {
        e.split(after)
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no {after:?} in {e}"))
    };
    (n("ingested "), n("skipped "))
}

#[test]
fn shards_split_the_logs_once_and_a_retried_shard_redoes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let ins = inputs();
    let ins: Vec<&str> = ins.iter().map(String::as_str).collect();
    let all_wh = d.path().join("all").display().to_string();
    let o = ingest(&home, &all_wh, &[]);
    let (total, _) = ingested(&o);
    assert!(total >= 10, "{}", err(&o));

    // three shards into one warehouse, as three runners would
    let wh = d.path().join("sharded").display().to_string();
    let mut per_shard = Vec::new();
    for i in 0..3 {
        let shard = format!("{i}/3");
        per_shard.push(ingested(&ingest(&home, &wh, &["--shard", &shard])).0);
    }
    assert_eq!(per_shard.iter().sum::<usize>(), total, "{per_shard:?}");
    assert!(per_shard.iter().all(|&n| n > 0), "{per_shard:?}");
    // the same applications as one unsharded ingest, none twice
    let sharded = apps(&home, &["--warehouse", &wh]);
    assert_eq!(sharded, apps(&home, &["--warehouse", &all_wh]));
    let mut ids: Vec<&str> = sharded
        .iter()
        .map(|r| r.split(',').next().unwrap())
        .collect();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "an app ingested twice: {sharded:?}");

    // a retried shard (the runner's retry after a crash) reads nothing again
    let o = ingest(&home, &wh, &["--shard", "1/3"]);
    assert_eq!(ingested(&o), (0, per_shard[1]), "{}", err(&o));

    // a shard is the same logs whatever the order of the inputs, for sql and analyze too
    let rev: Vec<&str> = ins.iter().rev().copied().collect();
    let shard_of = |inputs: &[&str]| {
        let mut a = vec!["--event_log"];
        a.extend(inputs);
        a.extend(["--shard", "2/3"]);
        apps(&home, &a)
    };
    let s2 = shard_of(&ins);
    assert_eq!(s2.len(), per_shard[2]);
    assert_eq!(s2, shard_of(&rev));
    let mut a = vec!["analyze", "--event_log"];
    a.extend(&ins);
    a.extend(["--shard", "2/3", "--format", "json"]);
    let o = aether(&home, &a);
    assert!(o.status.success(), "{}", err(&o));
    let reports: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let analyzed = reports
        .as_array()
        .map(|a| a.len())
        .unwrap_or_else(|| reports["apps"].as_array().map(|a| a.len()).unwrap_or(0));
    assert_eq!(analyzed, s2.len(), "{}", out(&o));

    // bad shards: said, nothing read
    for bad in ["3/3", "1", "x/2", "0/0"] {
        let o = aether(
            &home,
            &["sql", "--event_log", ins[0], "--shard", bad, "SELECT 1"],
        );
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(err(&o).contains("--shard"), "{bad}: {}", err(&o));
    }
}

/// A shell wrapper named `aether` around the real binary: `fail` is a shell test of its
/// arguments that, when true, makes the run exit 137 after aether's work (a task killed
/// after writing) once per marker in `marks`, or always (`always`).
fn wrapper(dir: &Path, marks: &Path, fail_when: &str, always: bool) -> PathBuf {
    let w = dir.join("aether");
    let real = env!("CARGO_BIN_EXE_aether");
    let once = if always {
        "exit 137".to_string()
    } else {
        format!(
            "m=\"{}/$(echo \"$*\" | md5sum | cut -c1-8)\"; if [ ! -e \"$m\" ]; then touch \"$m\"; exit 137; fi",
            marks.display()
        )
    };
    std::fs::write(
        &w,
        format!(
            "#!/bin/sh\n\"{real}\" \"$@\"; rc=$?\ncase \"$*\" in {fail_when}) {once};; esac\nexit $rc\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o755)).unwrap();
    w
}

fn spark_submit(args: &[&str]) -> std::process::Output {
    std::process::Command::new("spark-submit")
        .args(["--master", "local[2,3]", "--conf", "spark.ui.enabled=false"])
        .args(args)
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .output()
        .expect("spark-submit (scripts/setup --test installs pyspark)")
}

/// The fleet driver on a real (local) Spark: three shards as three tasks, the binary shipped as
/// an archive, one task killed after its work and retried by Spark (redoing nothing), and a shard
/// that fails every attempt failing the job, named.
#[test]
fn the_spark_fleet_driver_fans_out_retries_and_fails_loudly() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let ins = inputs();
    let driver = d.path().join("aether_fleet.py");
    let o = aether(
        &home,
        &["fleet", "driver", "--output", driver.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", err(&o));
    let all_wh = d.path().join("all").display().to_string();
    ingest(&home, &all_wh, &[]);

    // the bundle as `fleet submit` ships it: `aether` (here a wrapper) at the archive's root
    let marks = d.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    let pack = d.path().join("pack");
    std::fs::create_dir(&pack).unwrap();
    wrapper(&pack, &marks, "*--shard\\ 1/3*", false);
    let tar = d.path().join("aether-bundle.tar");
    let o = std::process::Command::new("tar")
        .arg("-cf")
        .arg(&tar)
        .arg("-C")
        .arg(&pack)
        .arg("aether")
        .output()
        .unwrap();
    assert!(o.status.success());
    let wh = d.path().join("wh").display().to_string();
    let summary = d.path().join("summary.jsonl");
    let archive = format!("{}#aether", tar.display());
    let mut a = vec![
        "--archives",
        &archive,
        driver.to_str().unwrap(),
        "--shards",
        "3",
        "--summary",
        summary.to_str().unwrap(),
        "--",
        "qualify",
        "--event_log",
    ];
    a.extend(ins.iter().map(String::as_str));
    a.extend(["--warehouse", wh.as_str(), "--threads", "1"]);
    let o = spark_submit(&a);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&summary)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[3]["retried"], 1, "{lines:?}");
    assert_eq!(lines[1]["shard"], 1);
    assert_eq!(lines[1]["attempt"], 1, "shard 1 ran again");
    assert!(
        lines[1]["summary"]
            .as_str()
            .unwrap()
            .starts_with("ingested 0 log(s)"),
        "the retry redid nothing: {:?}",
        lines[1]
    );
    // every log once: the same applications as one ingest
    assert_eq!(
        apps(&home, &["--warehouse", &wh]),
        apps(&home, &["--warehouse", &all_wh])
    );

    // a shard that fails every attempt: the job fails, naming it
    let bad = d.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    let w = wrapper(&bad, &marks, "*--shard\\ 2/3*", true);
    let wh2 = d.path().join("wh2").display().to_string();
    let mut a = vec![
        driver.to_str().unwrap(),
        "--shards",
        "3",
        "--binary",
        w.to_str().unwrap(),
        "--",
        "ingest",
    ];
    a.extend(ins.iter().map(String::as_str));
    a.extend(["--out", wh2.as_str(), "--threads", "1"]);
    let o = spark_submit(&a);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let last: serde_json::Value = serde_json::from_str(out(&o).lines().last().unwrap()).unwrap();
    assert_eq!(last["failed"], true);
    assert!(
        last["error"]
            .as_str()
            .unwrap()
            .contains("shard 2/3 attempt 2")
            && last["error"].as_str().unwrap().contains("exited 137"),
        "{last}"
    );
}

/// The Kubernetes Indexed Job's and the AWS Batch array job's command lines, run as their
/// indexes would run them: every log once.
#[test]
fn the_k8s_and_batch_manifests_cover_every_log_once() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let ins = inputs();
    let all_wh = d.path().join("all").display().to_string();
    ingest(&home, &all_wh, &[]);
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_aether")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for kind in ["k8s", "batch"] {
        let wh = d.path().join(kind).display().to_string();
        let mut a = vec!["fleet", "manifests", "--kind", kind];
        // k8s: the default image, the tag scripts/image builds
        let image = if kind == "k8s" {
            concat!("aether:", env!("CARGO_PKG_VERSION"))
        } else {
            a.extend(["--image", "acme/aether:1"]);
            "acme/aether:1"
        };
        a.push("--event_log");
        a.extend(ins.iter().map(String::as_str));
        a.extend([
            "--warehouse",
            wh.as_str(),
            "--shards",
            "4",
            "--threads_per_shard",
            "1",
        ]);
        let o = aether(&home, &a);
        assert!(o.status.success(), "{}", err(&o));
        let text = out(&o);
        for i in 0..4 {
            let mut cmd = if kind == "k8s" {
                // the kubelet: $(JOB_COMPLETION_INDEX) from the env the manifest declares
                let job: serde_json::Value = serde_yaml::from_str(&text).unwrap();
                let c = &job["spec"]["template"]["spec"]["containers"][0];
                assert_eq!(c["image"], image);
                assert_eq!(c["env"][0]["name"], "JOB_COMPLETION_INDEX");
                let words: Vec<String> = c["command"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| {
                        w.as_str()
                            .unwrap()
                            .replace("$(JOB_COMPLETION_INDEX)", &i.to_string())
                    })
                    .collect();
                let mut cmd = std::process::Command::new(&words[0]);
                cmd.args(&words[1..]);
                cmd
            } else {
                let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(
                    doc["registerJobDefinition"]["containerProperties"]["image"],
                    image
                );
                let words = doc["registerJobDefinition"]["containerProperties"]["command"]
                    .as_array()
                    .unwrap()
                    .clone();
                let mut cmd = std::process::Command::new(words[0].as_str().unwrap());
                cmd.args(words[1..].iter().map(|w| w.as_str().unwrap()))
                    .env("AWS_BATCH_JOB_ARRAY_INDEX", i.to_string());
                cmd
            };
            let o = cmd
                .env("PATH", &path)
                .env("AETHER_HOME", &home)
                .output()
                .unwrap();
            assert!(o.status.success(), "{kind} index {i}: {}", err(&o));
            assert!(
                err(&o).contains("ingested ")
                    || err(&o).contains(&format!("shard {i}/4 holds none of the logs")),
                "{}",
                err(&o)
            );
        }
        assert_eq!(
            apps(&home, &["--warehouse", &wh]),
            apps(&home, &["--warehouse", &all_wh]),
            "{kind}"
        );
    }
}

/// `fleet submit` on the EMR emulator: the bundle (this binary and libxgboost.so) and the
/// driver put under the artifacts path, one spark-submit step of N tasks on an existing
/// cluster, each shard ingesting from S3 into one S3 warehouse; every log once.
#[test]
fn fleet_submit_runs_the_shards_as_one_emr_step() {
    let emu = common::start_emulator(1.0);
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[platform.emr]\nregion = \"us-east-1\"\n\
         [platform.emr.cluster]\nartifacts_path = \"s3://art/aether\"\nlog_wait_s = 20\n",
    )
    .unwrap();
    // the fleet's logs in S3, and a running cluster
    let sample = repo().join("datasets/sample");
    let mut up =
        String::from("for b in ('logs', 'warehouse', 'art'): s3.create_bucket(Bucket=b)\n");
    let mut names = Vec::new();
    // every log of the sample, the rolling one as its folder of parts
    for e in std::fs::read_dir(&sample).unwrap() {
        let p = e.unwrap().path();
        let n = p.file_name().unwrap().to_string_lossy().to_string();
        if n.ends_with(".md") {
            continue;
        }
        let files: Vec<(PathBuf, String)> = if p.is_dir() {
            std::fs::read_dir(&p)
                .unwrap()
                .map(|f| {
                    let f = f.unwrap().path();
                    let k = format!("{n}/{}", f.file_name().unwrap().to_string_lossy());
                    (f, k)
                })
                .collect()
        } else {
            vec![(p.clone(), n.clone())]
        };
        for (f, k) in files {
            up.push_str(&format!(
                "s3.upload_file('{}', 'logs', 'fleet/{k}')\n",
                f.display()
            ));
        }
        names.push(n);
    }
    up.push_str(
        "c = emr.run_job_flow(Name='analytics', ReleaseLabel='emr-7.9.0', LogUri='s3://logs/emr/',\n\
           Instances={'KeepJobFlowAliveWhenNoSteps': True, 'MasterInstanceType': 'm5d.xlarge', 'SlaveInstanceType': 'm5d.2xlarge', 'InstanceCount': 3},\n\
           JobFlowRole='EMR_EC2_DefaultRole', ServiceRole='EMR_DefaultRole')\n\
         print(c['JobFlowId'])",
    );
    let cluster = emu.boto(&up);
    assert_eq!(names.len(), 7, "{names:?}");
    // nodes whose glibc is older than the binary's: refused before anything is uploaded
    let o = emu
        .aether(&home)
        .env("AETHER_NODE_GLIBC", "2.17")
        .args([
            "fleet",
            "submit",
            "--event_log",
            "s3://logs/fleet/",
            "--warehouse",
            "s3://warehouse/fleet",
            "--shards",
            "3",
            "--cluster_id",
            &cluster,
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        err(&o).contains("needs glibc 2.")
            && err(&o).contains("and the nodes of emr-7.9.0 have 2.17: every task would fail"),
        "{}",
        err(&o)
    );
    assert_eq!(
        emu.boto("print(len(s3.list_objects_v2(Bucket='art').get('Contents', [])))"),
        "0"
    );
    let started = std::time::Instant::now();
    let o = emu
        .aether(&home)
        .args([
            "fleet",
            "submit",
            "--event_log",
            "s3://logs/fleet/",
            "--warehouse",
            "s3://warehouse/fleet",
            "--shards",
            "3",
            "--threads_per_shard",
            "1",
            "--cluster_id",
            &cluster,
            "--wait",
        ])
        .output()
        .unwrap();
    eprintln!(
        "fleet submit on the emulator: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    // one line per shard from the driver, then the total
    let lines: Vec<serde_json::Value> = out(&o)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{}", out(&o));
    let ingested: usize = lines[..3]
        .iter()
        .map(|l| {
            let s = l["summary"].as_str().unwrap();
            s.split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(ingested, names.len(), "{lines:?}");
    // the step: spark-submit of the driver, the bundle as an archive, retries on
    let st = emu.state();
    let steps = st["clusters"][&cluster]["steps"].as_object().unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps.values().next().unwrap(), "COMPLETED");
    let listed = emu.boto(
        "print(sorted(o['Key'] for o in s3.list_objects_v2(Bucket='art', Prefix='aether/fleet/')['Contents']))",
    );
    assert!(
        listed.contains("aether/fleet/aether-bundle.tar")
            && listed.contains("aether/fleet/aether_fleet.py"),
        "{listed}"
    );
    // the bundle: this binary and the library, at the archive's root
    let o2 = emu.boto(
        "import tarfile, io\nb = s3.get_object(Bucket='art', Key='aether/fleet/aether-bundle.tar')['Body'].read()\n\
         t = tarfile.open(fileobj=io.BytesIO(b))\nprint(sorted((m.name, oct(m.mode)) for m in t.getmembers()))",
    );
    assert!(
        o2.contains("('aether', '0o755')")
            && o2.contains("('libxgboost.so', '0o755')")
            && o2.contains("('libgomp-"),
        "{o2}"
    );
    // the warehouse in S3 holds every app once
    let o = emu
        .aether(&home)
        .args([
            "sql",
            "--warehouse",
            "s3://warehouse/fleet",
            "--format",
            "csv",
            "SELECT count(*) AS n, count(DISTINCT app_id) AS apps FROM applications",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let local = aether(
        &home,
        &[
            "sql",
            "--event_log",
            sample.to_str().unwrap(),
            "--format",
            "csv",
            "SELECT count(*) AS n, count(DISTINCT app_id) AS apps FROM applications",
        ],
    );
    assert_eq!(out(&o), out(&local));
}

/// Figures over every table of a warehouse: what compaction must not change.
const FIGURES: &str = "SELECT (SELECT count(*) FROM applications) AS apps, \
    (SELECT count(*) FROM tasks) AS tasks, (SELECT sum(executor_run_time_ms) FROM tasks) AS run_ms, \
    (SELECT count(*) FROM stages) AS stages, (SELECT count(*) FROM jobs) AS jobs, \
    (SELECT count(*) FROM executors) AS executors, (SELECT count(*) FROM sql_plan_nodes) AS nodes, \
    (SELECT count(*) FROM sql_metrics) AS metrics, (SELECT count(*) FROM properties) AS props, \
    (SELECT count(*) FROM event_counts) AS events, (SELECT count(DISTINCT app_id) FROM tasks) AS task_apps";

fn figures(home: &Path, wh: &str) -> String {
    let o = aether(
        home,
        &["sql", "--warehouse", wh, "--format", "csv", FIGURES],
    );
    assert!(o.status.success(), "{}", err(&o));
    out(&o)
}

fn compact(home: &Path, wh: &str) -> String {
    let o = aether(home, &["warehouse", "compact", wh, "--target_mb", "1"]);
    assert!(o.status.success(), "{}", err(&o));
    err(&o)
}

fn parquet_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Compaction: the same rows before and after, in Hive-style day partitions Spark reads as a
/// partitioned table; incremental; a crash before the commit (orphan parts) or after it (staging
/// left) changes no query and is cleaned by the next run; a log changed after its compaction is
/// not counted twice once compacted again.
#[test]
fn compaction_keeps_every_row_and_survives_crashes() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let whp = d.path().join("wh");
    let wh = whp.display().to_string();
    ingest(&home, &wh, &[]);
    let before = figures(&home, &wh);
    let staging_before = parquet_under(&whp.join("tasks"));
    assert!(staging_before.len() >= 10);
    let saved = d.path().join("saved-staging.parquet");
    std::fs::copy(&staging_before[0], &saved).unwrap();

    let e = compact(&home, &wh);
    assert!(e.contains("manifest 1"), "{e}");
    assert_eq!(figures(&home, &wh), before);
    // staging gone; the parts in day partitions
    assert!(parquet_under(&whp.join("tasks")).is_empty());
    let parts = parquet_under(&whp.join("tables/tasks"));
    assert!(!parts.is_empty());
    for p in &parts {
        let rel = p.strip_prefix(&whp).unwrap().display().to_string();
        let day = rel
            .strip_prefix("tables/tasks/app_date=")
            .unwrap_or_else(|| panic!("{rel}"));
        assert!(
            day.len() > 10 && day.as_bytes()[4] == b'-' && day.as_bytes()[7] == b'-',
            "{rel}"
        );
        assert!(
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("part-")
        );
    }
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(whp.join("tables/_manifests/0000000001.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["absorbed"].as_object().unwrap().len(),
        std::fs::read_dir(whp.join("_logs")).unwrap().count()
    );

    // Spark SQL reads the layout as a partitioned table, with the log_key column
    let script = d.path().join("read.py");
    std::fs::write(
        &script,
        format!(
            "from pyspark.sql import SparkSession\n\
             s = SparkSession.builder.getOrCreate()\n\
             t = s.read.parquet('{}/tables/tasks')\n\
             print(t.count(), t.select('app_date').distinct().count(), t.select('log_key').distinct().count(), t.groupBy().sum('executor_run_time_ms').collect()[0][0])\n\
             s.stop()\n",
            wh
        ),
    )
    .unwrap();
    let o = std::process::Command::new("spark-submit")
        .args(["--master", "local[1]", "--conf", "spark.ui.enabled=false"])
        .arg(&script)
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let spark: Vec<i64> = out(&o)
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    let ours: Vec<&str> = before.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(spark[0], ours[1].parse::<i64>().unwrap(), "tasks");
    assert_eq!(spark[3], ours[2].parse::<i64>().unwrap(), "run time");
    assert!(spark[1] >= 2, "several days: {spark:?}");
    assert_eq!(
        spark[2],
        ours[10].parse::<i64>().unwrap(),
        "one log_key per app with tasks"
    );

    // incremental: a new log joins through staging, then the next compaction
    let extra = repo().join("../shared/datasets/real-spark-4.3.0/local-1796009685770");
    let o = aether(&home, &["ingest", extra.to_str().unwrap(), "--out", &wh]);
    assert!(err(&o).contains("ingested 1 log(s)"), "{}", err(&o));
    let with_extra = figures(&home, &wh);
    assert_ne!(with_extra, before);
    let e = compact(&home, &wh);
    assert!(
        e.contains("compacted 1 log(s)") && e.contains("manifest 2"),
        "{e}"
    );
    assert_eq!(figures(&home, &wh), with_extra);

    // a crash before a commit leaves parts no manifest names: never read, then deleted
    let orphan = parts[0].with_file_name("part-crashed-00001.parquet");
    std::fs::copy(&parts[0], &orphan).unwrap();
    // a crash after one leaves a staging file it absorbed: ignored, then deleted
    let left = whp
        .join("tasks")
        .join(staging_before[0].file_name().unwrap());
    std::fs::copy(&saved, &left).unwrap();
    assert_eq!(figures(&home, &wh), with_extra);
    let e = compact(&home, &wh);
    assert!(
        e.contains("compacted 0 log(s)")
            && e.contains("1 orphan part(s)")
            && e.contains("deleted 1 staging"),
        "{e}"
    );
    assert!(!orphan.exists() && !left.exists());
    assert_eq!(figures(&home, &wh), with_extra);

    // a log changed after its compaction: read again, its old rows dropped by the next run
    let copy = d.path().join("local-1796009685770");
    std::fs::copy(&extra, &copy).unwrap();
    let o = aether(&home, &["ingest", copy.to_str().unwrap(), "--out", &wh]);
    assert!(o.status.success());
    compact(&home, &wh);
    let f = std::fs::File::options().append(true).open(&copy).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(f);
    let o = aether(&home, &["ingest", copy.to_str().unwrap(), "--out", &wh]);
    assert!(err(&o).contains("ingested 1 log(s)"), "{}", err(&o));
    let e = compact(&home, &wh);
    assert!(
        e.contains("compacted 1 log(s)") && !e.contains("(0 rewritten"),
        "the parts holding its old rows are rewritten: {e}"
    );
    let once = figures(&home, &wh);
    let o = aether(
        &home,
        &[
            "sql",
            "--warehouse",
            &wh,
            "--format",
            "csv",
            "SELECT count(*) AS n FROM applications WHERE event_log LIKE '%/local-1796009685770'",
        ],
    );
    assert_eq!(
        out(&o).trim(),
        "n\n2",
        "the original and its copy, each once"
    );
    assert_ne!(once, with_extra);
}

/// `query`'s CSV output: its header and its rows, sorted.
fn csv_rows(home: &Path, source: &[&str], query: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut args = vec!["sql"];
    args.extend_from_slice(source);
    args.extend_from_slice(&["--format", "csv", query]);
    let o = aether(home, &args);
    assert!(o.status.success(), "{query}: {}", err(&o));
    let mut r = csv::Reader::from_reader(o.stdout.as_slice());
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let mut rows: Vec<Vec<String>> = r
        .records()
        .map(|x| x.unwrap().iter().map(String::from).collect())
        .collect();
    rows.sort();
    (header, rows)
}

/// The same rows, numbers equal to 1e-9 (relative): the same figures summed in another order.
fn assert_same_rows(got: &[Vec<String>], want: &[Vec<String>], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: row count");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.len(), w.len(), "{what}");
        for (a, b) in g.iter().zip(w) {
            let close = match (a.parse::<f64>(), b.parse::<f64>()) {
                (Ok(x), Ok(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
                _ => a == b,
            };
            assert!(close, "{what}: {g:?} vs {w:?}");
        }
    }
}

/// `qualify --warehouse --shard i/n`: each shard writes its logs' tables and their derived
/// tables (qualification, per-SQL predictions, QualX features, bottlenecks, operators,
/// unsupported operators); the warehouse's `derived.*` hold exactly what one local session
/// computes over the same logs, a retried shard redoes nothing, and compaction keeps every row.
#[test]
fn qualify_shards_write_the_derived_tables_a_local_run_computes() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let ins = inputs();
    let mut local: Vec<&str> = vec!["--event_log"];
    local.extend(ins.iter().map(String::as_str));
    let whp = d.path().join("wh");
    let wh = whp.display().to_string();
    let in_wh = ["--warehouse", wh.as_str()];

    // ground truth: the views over the same logs in one session, and qualify's own outputs
    let views = ["bottlenecks", "operators", "unsupported_summary"];
    let want: Vec<_> = views
        .iter()
        .map(|v| csv_rows(&home, &local, &format!("SELECT * FROM {v}")))
        .collect();
    let outdir = d.path().join("out");
    let mut a = vec!["qualify"];
    a.extend(&local);
    a.extend(["--output", outdir.to_str().unwrap(), "--format", "csv"]);
    let o = aether(&home, &a);
    assert!(o.status.success(), "{}", err(&o));
    let mut s = csv::Reader::from_path(outdir.join("qualification_summary.csv")).unwrap();
    let h = s.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|c| c == n).unwrap();
    let (ia, is, id) = (
        col("App ID"),
        col("Unrounded GPU Speedup"),
        col("Estimated GPU Duration"),
    );
    let mut speedups: Vec<Vec<String>> = s
        .records()
        .map(|r| {
            let r = r.unwrap();
            vec![r[ia].to_string(), r[is].to_string(), r[id].to_string()]
        })
        .collect();
    speedups.sort();
    assert!(speedups.len() >= 6, "{speedups:?}");
    let count = |f: &str| {
        csv::Reader::from_path(outdir.join(f))
            .unwrap()
            .records()
            .count()
    };
    let (per_sql, features) = (count("per_sql.csv"), count("features.csv"));

    // two shards into one warehouse
    let mut written = 0;
    for shard in ["0/2", "1/2"] {
        let mut a = vec!["qualify"];
        a.extend(&local);
        a.extend(["--warehouse", &wh, "--shard", shard, "--threads", "1"]);
        let o = aether(&home, &a);
        assert!(o.status.success(), "shard {shard}: {}", err(&o));
        assert!(out(&o).is_empty(), "a shard prints no table: {}", out(&o));
        written += ingested(&o).0;
    }
    let all_wh = d.path().join("all").display().to_string();
    assert_eq!(
        written,
        ingested(&ingest(&home, &all_wh, &[])).0,
        "every log once"
    );
    assert_eq!(apps(&home, &in_wh), apps(&home, &["--warehouse", &all_wh]));

    let check = |when: &str| {
        for (v, (header, rows)) in views.iter().zip(&want) {
            let (h, got) = csv_rows(&home, &in_wh, &format!("SELECT * FROM derived.{v}"));
            assert_eq!(&h, header, "{when}: derived.{v}");
            assert_same_rows(&got, rows, &format!("{when}: derived.{v}"));
        }
        let (_, got) = csv_rows(
            &home,
            &in_wh,
            "SELECT app_id, unrounded_gpu_speedup, estimated_gpu_duration \
             FROM derived.qualification WHERE status = 'SUCCESS'",
        );
        assert_same_rows(&got, &speedups, &format!("{when}: derived.qualification"));
        let (_, n) = csv_rows(
            &home,
            &in_wh,
            "SELECT (SELECT count(*) FROM derived.qualification_sql) AS sqls, \
             (SELECT count(*) FROM derived.qualx_features) AS featured, \
             (SELECT count(*) FROM derived.qualification) AS logs",
        );
        assert_eq!(n[0][0], per_sql.to_string(), "{when}: per-SQL rows");
        assert_eq!(n[0][1], features.to_string(), "{when}: features");
        assert_eq!(n[0][2], written.to_string(), "{when}: one row per log");
    };
    check("staging");

    // a retried shard redoes nothing
    let mut a = vec!["qualify"];
    a.extend(&local);
    a.extend(["--warehouse", &wh, "--shard", "1/2"]);
    let o = aether(&home, &a);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(ingested(&o).0, 0, "{}", err(&o));

    let e = compact(&home, &wh);
    assert!(e.contains("manifest 1"), "{e}");
    assert!(parquet_under(&whp.join("derived")).is_empty());
    assert!(!parquet_under(&whp.join("tables/derived/operators")).is_empty());
    check("compacted");
}
