//! `aether profile` from the command line: GPU logs get the profiling AutoTuner's
//! recommendations (stored as a config `submit` can run, written with --output), a CPU log is
//! told it is not a GPU run, a log that cannot be read is named and the others go on.

mod common;

use common::{aether, err, out};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn datasets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/datasets/rapids-tools/spark-events-profiling")
}

#[test]
fn profile_recommends_records_and_writes() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let oom = datasets().join("gpu_oom_eventlog.zstd");
    let healthy = datasets().join("eventlog-gpu-dsv1.zstd");
    let cpu =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sample/local-1796009671201");
    let outdir = d.path().join("out");
    let o = aether(
        &home,
        &[
            "profile",
            "--event_log",
            oom.to_str().unwrap(),
            healthy.to_str().unwrap(),
            cpu.to_str().unwrap(),
            "--output",
            outdir.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        err(&o).contains("local-1796009671201 is not a GPU run"),
        "{}",
        err(&o)
    );
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let app = |id: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|a| a["app_id"] == id)
            .unwrap_or_else(|| panic!("{id} in {v}"))
            .clone()
    };
    let prop = |a: &serde_json::Value, k: &str| {
        a["properties"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["key"] == k)
            .map(|p| p["value"].as_str().unwrap().to_string())
    };
    // the run that spilled in its shuffle stages (a GPU OOM run) gets more partitions; the
    // healthy one keeps 200
    let o1 = app("app-20250305192829-0000");
    let h1 = app("local-1644936233661");
    assert_eq!(
        prop(&o1, "spark.sql.shuffle.partitions").as_deref(),
        Some("400")
    );
    assert!(o1["comments"].as_array().unwrap().iter().any(|c| {
        c.as_str()
            .unwrap()
            .contains("spilling occurred in shuffle stages")
    }));
    assert_eq!(prop(&h1, "spark.sql.shuffle.partitions"), None);
    assert_eq!(
        prop(
            &h1,
            "spark.sql.adaptive.coalescePartitions.initialPartitionNum"
        )
        .as_deref(),
        Some("200")
    );
    assert!(!h1["comments"].to_string().contains("spilling occurred"));
    // the OOM run (112 tasks failed on GPU out-of-memory) gets the remedies, the healthy one not
    assert_eq!(o1["gpu_oom_tasks"], 112);
    assert_eq!(
        o1["remedies"]["spark.rapids.sql.concurrentGpuTasks"], "2",
        "{}",
        o1["remedies"]
    );
    assert_eq!(o1["remedies"]["spark.sql.shuffle.partitions"], "800");
    assert_eq!(h1["gpu_oom_tasks"], 0);
    assert_eq!(h1["remedies"], serde_json::json!({}));
    assert_eq!(app("local-1796009671201")["gpu_run"], false);
    // why it was slow: the OOM run lost most of its task time in tasks that spilled
    let slow = &o1["slowness"][0];
    assert_eq!(slow["cause"], "spill", "{}", o1["slowness"]);
    assert!(slow["task_time_pct"].as_f64().unwrap() > 50.0, "{slow}");

    // each recommendation is a config of its job, with what submit needs
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let config = o1["config_id"].as_i64().unwrap();
    let (source, props): (String, String) = db
        .query_row(
            "SELECT source, properties_json FROM configs WHERE config_id = ?1",
            [config],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(source, "profile");
    let props: serde_json::Value = serde_json::from_str(&props).unwrap();
    assert_eq!(props["spark.executor.memory"], "32g");
    assert_eq!(props["spark.rapids.memory.pinnedPool.size"], "4915m");
    assert_eq!(
        props["spark.rapids.sql.concurrentGpuTasks"], "2",
        "the remedies are in the config"
    );
    let n: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM configs WHERE source = 'profile'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 2, "one config per GPU app, none for the CPU log");

    // --output: per app a spark-defaults file and section D, the summary and the JSON
    let conf =
        std::fs::read_to_string(outdir.join("app-20250305192829-0000/recommended.conf")).unwrap();
    assert!(conf.contains("\nspark.executor.memory 32g\n"), "{conf}");
    assert!(
        conf.contains("# spark.sql.adaptive.autoBroadcastJoinThreshold [FILL_IN_VALUE]\n"),
        "{conf}"
    );
    let d_text =
        std::fs::read_to_string(outdir.join("app-20250305192829-0000/profile.log")).unwrap();
    assert!(d_text.starts_with("### D. Recommended Configuration ###"));
    let summary = std::fs::read_to_string(outdir.join("tuning_summary.log")).unwrap();
    assert!(
        summary
            .contains("App ID: local-1796009671201\n\tSpark Properties:\n\t- No recommendations")
    );
    assert!(outdir.join("profile.json").is_file());
    // the tables, one CSV each: the reference's rows (its stage table has 38 lines)
    let stages = std::fs::read_to_string(
        outdir.join("app-20250305192829-0000/stage_level_aggregated_task_metrics.csv"),
    )
    .unwrap();
    assert_eq!(stages.lines().count(), 38, "{stages}");
    assert!(stages.starts_with("stageId,numTasks,Duration,"));
    let failed =
        std::fs::read_to_string(outdir.join("app-20250305192829-0000/failed_stages.csv")).unwrap();
    assert!(failed.contains("Stage cancelled because SparkContext was shut down"));
    // each view is read once and cut into its apps' rows: the OOM run's tables are the same,
    // byte for byte (rows in the same order), when it is profiled alone
    let alone = d.path().join("alone");
    let o = aether(
        &d.path().join("home2"),
        &[
            "profile",
            "--event_log",
            oom.to_str().unwrap(),
            "--output",
            alone.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let tables = |dir: &Path| -> BTreeMap<String, String> {
        std::fs::read_dir(dir.join("app-20250305192829-0000"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "csv"))
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect()
    };
    let (together, by_itself) = (tables(&outdir), tables(&alone));
    assert_eq!(together.len(), 23, "{:?}", together.keys());
    for (name, text) in &together {
        assert_eq!(Some(text), by_itself.get(name), "{name}");
        assert!(
            !text.contains("local-1644936233661"),
            "{name}: another app's rows"
        );
    }
}

#[test]
fn a_run_whose_operators_fell_back_to_the_cpu_is_told_so() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let log = datasets().join("rapids_join_eventlog.zstd");
    let o = aether(&home, &["profile", "--event_log", log.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    let first = text
        .lines()
        .find(|l| l.trim_start().starts_with("1. "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(first.contains("CPU fallbacks"), "{first}");
    assert!(first.contains("SerializeFromObject"), "{first}");
}

#[test]
fn cpu_only_and_unreadable_logs_are_told() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let cpu =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sample/local-1796009671201");
    let o = aether(&home, &["profile", "--event_log", cpu.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("is not a GPU run"), "{}", err(&o));
    assert!(out(&o).contains("Cannot recommend properties. See Comments."));

    let missing = d.path().join("no-such-log");
    let gpu = datasets().join("eventlog-gpu-dsv2.zstd");
    let o = aether(
        &home,
        &[
            "profile",
            "--event_log",
            missing.to_str().unwrap(),
            gpu.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("no-such-log"), "{}", err(&o));
    assert!(
        out(&o).contains("App ID: local-1645025251529"),
        "{}",
        out(&o)
    );
}

/// `profile` at a terminal width (`None`: unknown, as through a pipe).
fn profile_at(home: &Path, columns: Option<&str>, extra: &[&str]) -> String {
    let logs: Vec<String> = ["gpu_oom_eventlog.zstd", "rapids_join_eventlog.zstd"]
        .iter()
        .map(|log| datasets().join(log).display().to_string())
        .collect();
    let mut args = vec!["profile"];
    args.extend_from_slice(extra);
    for log in &logs {
        args.extend(["--event_log", log.as_str()]);
    }
    common::aether_at(home, columns, &args)
}

/// What a profile says, word by word, without the lines naming each app's log and config
/// (its path is cut to fit, on a line of its own when narrow; each run stores a config of its
/// own).
fn words(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.contains("Aether Config ID: ") && !l.starts_with("  (/"))
        .flat_map(str::split_whitespace)
        .collect()
}

/// The profile's text fits the terminal (120 columns when its width is unknown, COLUMNS when
/// set): prose wrapped under its marker, nothing lost; the `--conf` lines whole; a URL on a
/// line of its own, never cut; `--wide` as the lines come.
#[test]
fn profile_text_fits_the_terminal() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    let wide = profile_at(home, Some("80"), &["--wide"]);
    let widest = |t: &str| t.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest(&wide) > 200, "{wide}");
    let conf = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("--conf "))
            .map(String::from)
            .collect()
    };
    assert!(
        conf(&wide).contains(&"--conf spark.sql.shuffle.partitions=400".to_string()),
        "{wide}"
    );
    for (columns, width) in [(None, 120), (Some("100"), 100), (Some("72"), 72)] {
        let t = profile_at(home, columns, &[]);
        for l in t.lines() {
            // a property to copy and a word are never cut (at 72 some are wider)
            let whole = l.starts_with("--conf ") || !l.trim().contains(' ');
            assert!(l.chars().count() <= width || whole, "{columns:?}: {l}\n{t}");
        }
        assert_eq!(words(&t), words(&wide), "{columns:?}:\n{t}");
        assert_eq!(conf(&t), conf(&wide), "{columns:?}");
        // a remedy wrapped under its arrow; the app's log by its file name
        assert!(
            t.contains("\n     -> more shuffle partitions (spark.sql.shuffle.partitions),"),
            "{t}"
        );
        // the app's line with its config, its log (on a line of its own when narrow)
        let lines: Vec<&str> = t.lines().collect();
        let i = lines
            .iter()
            .position(|l| {
                l.starts_with("App ID: app-20250305192829-0000 ")
                    && l.contains("Aether Config ID: ")
            })
            .unwrap_or_else(|| panic!("{t}"));
        let head = format!("{} {}", lines[i], lines[i + 1]);
        assert!(head.contains("gpu_oom_eventlog.zstd)"), "{head}");
        assert!(
            t.lines().any(|l| l
                .trim()
                .starts_with("https://docs.nvidia.com/spark-rapids/")),
            "{t}"
        );
    }
}

/// `--target_cluster_info`: the reference's YAML or a GPU instance type sizes the
/// recommendations (the figures the reference profiler gives for that target on this log:
/// `tests/golden/target-cluster`), the CSV carries them, the written report says which worker;
/// a bad target is refused before any log is read, naming the file and the problem.
#[test]
fn a_target_cluster_sizes_the_recommendations() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let log = datasets().join("nds_q66_gpu.zstd");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/target-cluster");
    let run = |target: &str, format: &str| {
        let log = log.to_str().unwrap();
        let args = [
            "profile",
            "--event_log",
            log,
            "--target_cluster_info",
            target,
        ];
        aether(&home, &[&args[..], &["--format", format]].concat())
    };
    let csv = |target: &str| -> (BTreeMap<String, String>, String) {
        let o = run(target, "csv");
        assert!(o.status.success(), "{target}: {}", err(&o));
        let text = out(&o);
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let props = r
            .records()
            .map(|x| x.unwrap())
            .map(|x| (x[2].to_string(), x[3].to_string()))
            .collect();
        (props, err(&o))
    };
    // the reference's answers for this app (application_1701368813061_0008)
    let reference = |name: &str, key: &str| -> Option<String> {
        let text =
            std::fs::read_to_string(golden.join(format!("{name}.tuning_summary.log"))).unwrap();
        let block = text
            .split("App ID: application_1701368813061_0008")
            .nth(1)
            .unwrap();
        let block = block.split("App ID:").next().unwrap();
        block
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("--conf {key}=")))
            .map(String::from)
    };
    let t4 = golden.join("t4.yaml");
    let (p, note) = csv(t4.to_str().unwrap());
    assert!(
        note.contains("sized for") && note.contains("1 x T4"),
        "{note}"
    );
    for k in [
        "spark.rapids.sql.concurrentGpuTasks",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes",
        "spark.sql.adaptive.coalescePartitions.initialPartitionNum",
        "spark.sql.shuffle.partitions",
    ] {
        assert_eq!(p.get(k).cloned(), reference("t4", k), "T4: {k}");
    }
    assert_eq!(p["spark.sql.adaptive.advisoryPartitionSizeInBytes"], "32m");
    // an instance type: its vCPUs per GPU are the executor's cores
    let (p, note) = csv("g6.12xlarge");
    assert_eq!(p["spark.executor.cores"], "12", "{note}");
    assert_eq!(
        p.get("spark.executor.cores").cloned(),
        reference("g6.12xlarge", "spark.executor.cores")
    );
    // H100: beyond the reference, said so
    let h100 = d.path().join("h100.yaml");
    std::fs::write(
        &h100,
        "workerInfo:\n  cpuCores: 32\n  memoryGB: 256\n  gpu:\n    count: 2\n    name: H100\n",
    )
    .unwrap();
    let (p, note) = csv(h100.to_str().unwrap());
    assert!(note.contains("does not know this GPU"), "{note}");
    // 16 cores a GPU: a 32g heap; YARN's overhead is the rest of 256 GiB x 0.7 / 2 GPUs; an
    // H100's 80 GiB allows the most concurrent tasks, 4
    assert_eq!(p["spark.executor.memory"], "32g");
    assert_eq!(p["spark.executor.memoryOverhead"], "58982m");
    assert_eq!(p["spark.rapids.sql.concurrentGpuTasks"], "4");
    // refused: an unknown GPU, a file that is not there, a CPU instance type
    let bad = d.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "workerInfo:\n  cpuCores: 8\n  memoryGB: 32\n  gpu:\n    count: 1\n    name: b200\n",
    )
    .unwrap();
    for (target, want) in [
        (bad.to_str().unwrap(), "unknown GPU \"b200\""),
        ("/no/such/target.yaml", "no such file"),
        ("m5d.xlarge", "not a GPU instance type"),
    ] {
        let o = run(target, "table");
        assert_eq!(o.status.code(), Some(2), "{target}");
        assert!(
            err(&o).contains(want) && (err(&o).contains(target) || want.contains("GPU instance")),
            "{target}: {}",
            err(&o)
        );
    }
}
