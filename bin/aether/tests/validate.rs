//! `aether validate` on outputs real Spark wrote (tests/validate/make_outputs.py): the same rows
//! laid out differently PASS (partitioning, file count, row and array order, INT96 timestamps,
//! CSV, JSON lines, Hive partitions, empty outputs); a float 1 ulp off on a third of the rows
//! PASS within the tolerance; one injected difference each FAILs, naming the column and the
//! check that caught it; unreadable inputs are errors (exit 2).

mod common;

use common::err;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn validate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aether"))
        .arg("validate")
        .args(args)
        .output()
        .unwrap()
}

fn fixtures(dir: &Path) {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/validate/make_outputs.py");
    let o = Command::new("python3")
        .arg(&script)
        .arg(dir)
        .output()
        .expect("python3 with pyspark (scripts/setup --test installs it)");
    assert!(o.status.success(), "{}", err(&o));
}

struct Case {
    report: Value,
    code: Option<i32>,
}

impl Case {
    fn run(dir: &Path, cpu: &str, gpu: &str, extra: &[&str]) -> Case {
        let c = dir.join(cpu).display().to_string();
        let g = dir.join(gpu).display().to_string();
        let mut args = vec![
            "--cpu_output",
            &c,
            "--gpu_output",
            &g,
            "--report_format",
            "json",
        ];
        args.extend_from_slice(extra);
        Case::of(validate(&args), &format!("{cpu} vs {gpu}"))
    }

    /// The JSON report and exit code of a finished `aether validate`.
    fn of(o: Output, what: &str) -> Case {
        let report: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{what}: {e}\n{}", err(&o)));
        Case {
            report,
            code: o.status.code(),
        }
    }

    fn verdict(&self) -> &str {
        self.report["verdict"].as_str().unwrap()
    }

    /// The checks with this verdict, as (check, column, detail).
    fn with(&self, verdict: &str) -> Vec<(String, String, String)> {
        self.report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["verdict"] == verdict)
            .map(|c| {
                (
                    c["check"].as_str().unwrap().to_string(),
                    c["column"].as_str().unwrap_or("").to_string(),
                    c["detail"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    fn failed(&self, check: &str, column: &str) -> String {
        self.with("FAIL")
            .into_iter()
            .find(|(c, col, _)| c == check && col == column)
            .map(|(_, _, d)| d)
            .unwrap_or_else(|| {
                panic!(
                    "no FAIL {check} of {column:?}: {:#}",
                    self.report["reasons"]
                )
            })
    }

    fn passes(&self) {
        assert_eq!(self.verdict(), "PASS", "{:#}", self.report["reasons"]);
        assert_eq!(self.code, Some(0));
    }

    fn fails(&self) {
        assert_eq!(self.verdict(), "FAIL");
        assert_eq!(self.code, Some(1));
    }
}

#[test]
fn validate_catches_each_injected_difference_and_passes_equal_outputs() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    fixtures(dir);

    // the same rows: PASS, every layer ran
    let same = Case::run(dir, "base", "same", &[]);
    same.passes();
    assert_eq!(
        same.report["key"],
        serde_json::json!(["id"]),
        "a unique column is the key"
    );
    let passed: Vec<String> = same.with("PASS").into_iter().map(|c| c.0).collect();
    for check in [
        "row count",
        "every row (hash multiset)",
        "hash sample of keys",
        "keyed comparison",
        "Kolmogorov-Smirnov",
    ] {
        assert!(passed.iter().any(|c| c == check), "{check} ran: {passed:?}");
    }
    // equal multisets of rows: each column's distribution is the same, D = 0 without a sort
    let ks: Vec<_> = same.report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"] == "Kolmogorov-Smirnov")
        .collect();
    assert!(!ks.is_empty());
    for c in ks {
        assert_eq!(c["cpu"], "D=0.000000", "{c}");
        assert!(c["detail"].as_str().unwrap().contains("not sorted"), "{c}");
    }
    let int96 = Case::run(dir, "base", "int96", &[]);
    int96.passes();
    assert!(
        int96
            .with("PASS")
            .iter()
            .any(|(c, col, d)| c == "type" && col == "ts" && d.contains("UTC instants")),
        "{:#}",
        int96.report
    );
    Case::run(dir, "base", "ulp", &[]).passes();
    Case::run(dir, "part_a", "part_b", &[]).passes();
    Case::run(dir, "csv_a", "csv_b", &["--format", "csv"]).passes();
    Case::run(dir, "json_a", "json_b", &["--format", "json"]).passes();
    Case::run(dir, "orc_a", "orc_b", &["--format", "orc"]).passes();
    let c = Case::run(dir, "orc_a", "orc_changed", &["--format", "orc"]);
    c.fails();
    assert!(
        c.failed("values by key", "name")
            .contains("id=777: CPU n277 GPU CHANGED")
    );
    Case::run(dir, "orc_part_a", "orc_part_b", &["--format", "orc"]).passes();
    let c = Case::run(dir, "orc_part_a", "orc_part_dropped", &["--format", "orc"]);
    c.fails();
    c.failed("row count", "");
    assert!(
        c.failed("rows only in the CPU output", "")
            .contains("id=4242")
    );
    Case::run(dir, "empty_a", "empty_b", &[]).passes();

    // one difference each
    let c = Case::run(dir, "base", "dropped", &[]);
    c.fails();
    c.failed("row count", "");
    assert!(
        c.failed("rows only in the CPU output", "")
            .contains("id=12345")
    );
    assert!(
        c.failed("keys only on one side", "id")
            .contains("1 keys only in the CPU output")
    );

    let c = Case::run(dir, "base", "duplicated", &[]);
    c.fails();
    assert!(
        c.failed("rows only in the GPU output", "")
            .contains("id=4321")
    );
    assert!(
        c.with("WARN")
            .iter()
            .any(|(check, _, _)| check == "key is unique")
    );

    let c = Case::run(dir, "base", "changed", &["--key", "id"]);
    c.fails();
    assert!(
        c.failed("values by key", "name")
            .contains("id=777: CPU n277 GPU CHANGED")
    );
    assert!(
        c.failed("rows only in the CPU output", "")
            .contains("name=n277")
    );
    // the cheap checks alone miss a changed value, as the issue measured: rows must run
    let cheap = Case::run(dir, "base", "changed", &["--checks", "counts,ks"]);
    cheap.passes();

    let c = Case::run(dir, "base", "shifted", &[]);
    c.fails();
    c.failed("mean", "amount");
    assert!(
        c.failed("Kolmogorov-Smirnov", "amount")
            .contains("distributed differently")
    );
    assert!(
        c.failed("values by key", "amount")
            .contains("differs on 20000 rows")
    );

    let c = Case::run(dir, "base", "type_changed", &[]);
    c.fails();
    assert!(
        c.failed("type", "grp")
            .contains("Int32 on the CPU, Int64 on the GPU")
    );

    let c = Case::run(dir, "base", "renamed", &[]);
    c.fails();
    assert!(
        c.failed("column", "amount")
            .contains("only in the CPU output")
    );
    assert!(
        c.failed("column", "amount_usd")
            .contains("only in the GPU output")
    );

    let c = Case::run(dir, "base", "null_vs_empty", &[]);
    c.fails();
    assert!(
        c.failed("nulls", "name")
            .contains("225 nulls on the CPU, 429 on the GPU")
    );
    c.failed("empty strings", "name");

    let c = Case::run(dir, "base", "tz", &[]);
    c.fails();
    assert!(c.failed("min", "ts").contains("2024-01-01T01:00:00"));

    // empty against not: FAIL; a folder with only _SUCCESS is an empty output
    Case::run(dir, "empty_a", "base", &[]).fails();
    std::fs::create_dir(dir.join("only_success")).unwrap();
    std::fs::write(dir.join("only_success/_SUCCESS"), "").unwrap();
    Case::run(dir, "only_success", "empty_a", &[]).passes();

    // the reports
    let out = dir.join("report");
    let o = validate(&[
        "--cpu_output",
        &dir.join("base").display().to_string(),
        "--gpu_output",
        &dir.join("changed").display().to_string(),
        "--output",
        &out.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("verdict: FAIL") && table.contains("values by key"),
        "{table}"
    );
    let html = std::fs::read_to_string(out.join("validation.html")).unwrap();
    assert!(html.contains("id=777: CPU n277 GPU CHANGED"), "{html}");
    let md = std::fs::read_to_string(out.join("validation.md")).unwrap();
    assert!(md.starts_with("# Validation: FAIL"), "{md}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("validation.json")).unwrap())
            .unwrap();
    assert_eq!(json["verdict"], "FAIL");

    let missing = dir.join("no_such_output").display().to_string();
    // layer 1, the runs' event logs: rows written per app and per write command, matched to
    // the sandbox path; with the outputs too, one report
    let log = |run: &str| dir.join("eventlogs").join(run).display().to_string();
    let run = |args: &[&str]| {
        let mut a = args.to_vec();
        a.extend(["--report_format", "json"]);
        Case::of(validate(&a), &format!("{args:?}"))
    };
    let good = run(&[
        "--cpu_event_log",
        &log("cpu"),
        "--gpu_event_log",
        &log("gpu"),
    ]);
    good.passes();
    let write = good
        .with("PASS")
        .into_iter()
        .find(|(c, col, _)| c == "rows written to" && col.ends_with("/prod/agg"))
        .unwrap_or_else(|| panic!("{:#}", good.report));
    assert!(write.2.contains("sandbox/7/prod/agg"), "{write:?}");
    assert!(
        good.report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["check"] == "write format, mode, partitions"
                && c["cpu"] == "Parquet Overwrite by grp"),
        "{:#}",
        good.report
    );
    let bad = run(&[
        "--cpu_event_log",
        &log("cpu"),
        "--gpu_event_log",
        &log("bad"),
    ]);
    bad.fails();
    assert!(
        bad.failed("rows written", "")
            .contains("1004 in the CPU run, 1003 in the GPU run")
    );
    let agg = bad
        .with("FAIL")
        .into_iter()
        .find(|(c, col, _)| c == "rows written to" && col.ends_with("/prod/agg"))
        .unwrap_or_else(|| panic!("{:#}", bad.report));
    assert!(agg.2.contains("1000 rows written to"), "{agg:?}");
    let both = run(&[
        "--cpu_event_log",
        &log("cpu"),
        "--gpu_event_log",
        &log("gpu"),
        "--cpu_output",
        &dir.join("prod/agg").display().to_string(),
        "--gpu_output",
        &dir.join("sandbox/7/prod/agg").display().to_string(),
    ]);
    both.passes();
    let layers: std::collections::BTreeSet<&str> = both.report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["layer"].as_str().unwrap())
        .collect();
    assert_eq!(
        layers.into_iter().collect::<Vec<_>>(),
        ["aggregates", "distribution", "event log", "rows", "schema"]
    );
    let o = validate(&["--cpu_event_log", &missing, "--gpu_event_log", &log("gpu")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("no_such_output"), "{}", err(&o));

    // outputs on S3 (a local moto server), against each other and against a local one
    let moto = common::start_moto();
    let mut script = format!(
        "import boto3, os\ns3 = boto3.client('s3', endpoint_url='{}', region_name='us-east-1', \
         aws_access_key_id='testing', aws_secret_access_key='testing')\n\
         s3.create_bucket(Bucket='out')\n",
        moto.endpoint
    );
    for case in ["base", "same", "orc_part_b"] {
        script.push_str(&format!(
            "for root, _, fs in os.walk(r'{d}'):\n    for f in fs:\n        p = os.path.join(root, f)\n        \
             s3.upload_file(p, 'out', 'runs/{case}/' + os.path.relpath(p, r'{d}'))\n",
            d = dir.join(case).display()
        ));
    }
    let o = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let s3 = |cpu: &str, gpu: &str, extra: &[&str]| {
        let o = moto
            .aws_env(&mut Command::new(env!("CARGO_BIN_EXE_aether")))
            .args([
                "validate",
                "--cpu_output",
                cpu,
                "--gpu_output",
                gpu,
                "--report_format",
                "json",
            ])
            .args(extra)
            .output()
            .unwrap();
        Case::of(o, &format!("{cpu} vs {gpu}"))
    };
    let c = s3("s3://out/runs/base", "s3://out/runs/same/", &[]);
    c.passes();
    assert_eq!(c.report["cpu_rows"], 20000);
    let c = s3(
        "s3://out/runs/base/",
        &dir.join("changed").display().to_string(),
        &[],
    );
    c.fails();
    assert!(c.failed("values by key", "name").contains("id=777"));
    // partitioned ORC on S3 against a local copy written with other files
    let c = s3(
        "s3://out/runs/orc_part_b",
        &dir.join("orc_part_a").display().to_string(),
        &["--format", "orc"],
    );
    c.passes();
    assert_eq!(c.report["cpu_rows"], 20000, "{:#}", c.report);

    // bad input: exit 2, naming the problem
    let o = validate(&["--cpu_output", &missing, "--gpu_output", &missing]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("no_such_output"), "{}", err(&o));
    let base = dir.join("base").display().to_string();
    let o = validate(&[
        "--cpu_output",
        &base,
        "--gpu_output",
        &base,
        "--format",
        "avro",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("unknown format \"avro\""), "{}", err(&o));
    // a wrong format is not two empty outputs
    let o = validate(&[
        "--cpu_output",
        &base,
        "--gpu_output",
        &base,
        "--format",
        "orc",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("no .orc file, but .parquet ones"),
        "{}",
        err(&o)
    );
    let o = validate(&[
        "--cpu_output",
        &base,
        "--gpu_output",
        &base,
        "--key",
        "nope",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("key column nope"), "{}", err(&o));
}

/// `validate --aether_job_id J --phase`: a job qualified from a real CPU run's log, with GPU
/// test runs recorded as `submit` records them (their event logs real Spark runs of the same
/// job, `tests/golden/validate-phase`): its best run (a left join where the CPU run had an inner
/// one) diverges at the join (exit 1), a clean rerun (`--run_id`) has no divergence (exit 0), and
/// `--report_format json` gives the same answer.
#[test]
fn phase_of_a_jobs_gpu_run() {
    let home = tempfile::tempdir().unwrap();
    let logs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/validate-phase/logs");
    let log = |n: &str| logs.join(format!("{n}.zstd")).display().to_string();
    let o = common::aether(home.path(), &["qualify", "--event_log", &log("cpu")]);
    assert!(o.status.success(), "qualify: {}", err(&o));
    let mut h = aether_core::History::open(&home.path().join("history.db")).unwrap();
    let job = h.list().unwrap()[0].job_id;
    let mut run = |gpu: &str, duration_ms: i64| {
        let mut r = aether_core::history::Run {
            job_id: job,
            kind: "gpu-test".into(),
            backend: Some("local".into()),
            cluster_id: Some("lc-1".into()),
            status: "RUNNING".into(),
            start_ms: Some(1_000),
            ..Default::default()
        };
        r.run_id = h.start_run(&r).unwrap();
        r.status = "COMPLETED".into();
        r.end_ms = Some(1_000 + duration_ms);
        r.duration_ms = Some(duration_ms);
        r.event_log = Some(log(gpu));
        h.finish_run(&r).unwrap();
        r.run_id
    };
    let (_, clean) = (run("join", 1_000), run("clean", 9_000));
    let job_arg = job.to_string();
    let o = common::aether(
        home.path(),
        &["validate", "--aether_job_id", &job_arg, "--phase", "all"],
    );
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(1), "{text}\n{}", err(&o));
    assert!(
        text.contains("first divergence: phase join, SortMergeJoin"),
        "{text}"
    );
    let o = common::aether(
        home.path(),
        &[
            "validate",
            "--aether_job_id",
            &job_arg,
            "--run_id",
            &clean.to_string(),
            "--phase",
            "all",
            "--report_format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(r["first"].is_null(), "{r}");
    assert_eq!(r["checkpoints"].as_array().unwrap().len(), 9, "{r}");
}
