//! Cross-log SQL on Ballista: `aether cluster scheduler` and two `aether cluster executor`s on
//! loopback, over a fleet warehouse on S3 (moto) written by sharded `qualify --warehouse` and
//! half compacted; every raw table, derived table and cluster-eligible view answers on the
//! cluster exactly as local DataFusion does (floats to 1e-9).

mod common;

use common::{err, free_port, out};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Cluster processes, stopped on drop.
struct Roles(Vec<Child>);

impl Drop for Roles {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `query`'s CSV rows (header first, then the rows sorted), or the error.
fn rows(cmd: &mut Command, query: &str) -> Result<Vec<Vec<String>>, String> {
    let o = cmd.args(["--format", "csv", query]).output().unwrap();
    if !o.status.success() {
        return Err(err(&o));
    }
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(o.stdout.as_slice());
    let mut all: Vec<Vec<String>> = r
        .records()
        .map(|x| x.unwrap().iter().map(String::from).collect())
        .collect();
    if all.is_empty() {
        return Err(format!("no output: {}", out(&o)));
    }
    let header = all.remove(0);
    all.sort();
    all.insert(0, header);
    Ok(all)
}

/// The same rows, numbers equal to 1e-9 (relative).
fn same(got: &[Vec<String>], want: &[Vec<String>]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} rows, locally {}", got.len(), want.len()));
    }
    for (g, w) in got.iter().zip(want) {
        let close = g.len() == w.len()
            && g.iter()
                .zip(w)
                .all(|(a, b)| match (a.parse::<f64>(), b.parse::<f64>()) {
                    (Ok(x), Ok(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
                    _ => a == b,
                });
        if !close {
            return Err(format!("{g:?}, locally {w:?}"));
        }
    }
    Ok(())
}

#[test]
fn ballista_answers_every_cluster_query_as_local_datafusion_does() {
    let exe = Path::new(env!("CARGO_BIN_EXE_aether"));
    assert!(
        exe.with_file_name("aether-cluster").is_file(),
        "aether-cluster is built beside aether (cargo build --workspace)"
    );
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let moto = common::start_moto();
    let aether = || {
        let mut c = Command::new(exe);
        moto.aws_env(&mut c).env("AETHER_HOME", &home);
        c
    };
    let py = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import boto3; boto3.client('s3', endpoint_url='{}', region_name='us-east-1', \
                 aws_access_key_id='testing', aws_secret_access_key='testing').create_bucket(Bucket='fleet')",
                moto.endpoint
            ),
        ])
        .output()
        .unwrap();
    assert!(py.status.success(), "{}", err(&py));

    // the warehouse: shard 0 then compacted, shard 1 left in staging
    let wh = "s3://fleet/wh";
    let logs: Vec<String> = ["datasets/sample", "datasets/fixtures/analyze"]
        .iter()
        .map(|p| repo().join(p).display().to_string())
        .collect();
    for (shard, then_compact) in [("0/2", true), ("1/2", false)] {
        let o = aether()
            .args(["qualify", "--event_log"])
            .args(&logs)
            .args(["--warehouse", wh, "--shard", shard])
            .output()
            .unwrap();
        assert!(o.status.success(), "shard {shard}: {}", err(&o));
        if then_compact {
            let o = aether()
                .args(["warehouse", "compact", wh])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", err(&o));
        }
    }

    // a scheduler and two executors
    let sched = free_port();
    let mut roles = Roles(Vec::new());
    let quiet = |c: &mut Command| {
        c.stdout(Stdio::null()).stderr(Stdio::null());
    };
    let mut s = aether();
    s.args(["cluster", "scheduler", "--bind", "127.0.0.1", "--port"])
        .arg(sched.to_string());
    quiet(&mut s);
    roles.0.push(s.spawn().unwrap());
    for i in 0..2 {
        let mut e = aether();
        e.args(["cluster", "executor", "--scheduler"])
            .arg(format!("127.0.0.1:{sched}"))
            .args(["--bind", "127.0.0.1", "--tasks", "2", "--port"])
            .arg(free_port().to_string())
            .arg("--grpc_port")
            .arg(free_port().to_string())
            .arg("--work_dir")
            .arg(d.path().join(format!("executor-{i}")));
        quiet(&mut e);
        roles.0.push(e.spawn().unwrap());
    }
    let url = format!("df://127.0.0.1:{sched}");
    let local = || {
        let mut c = aether();
        c.args(["sql", "--warehouse", wh]);
        c
    };
    // a query the cluster never finishes fails (coreutils' timeout) instead of hanging the test
    let remote_within = |secs: u32| {
        let mut c = Command::new("timeout");
        c.arg(secs.to_string()).arg(exe);
        moto.aws_env(&mut c).env("AETHER_HOME", &home).args([
            "sql",
            "--cluster",
            &url,
            "--warehouse",
            wh,
        ]);
        c
    };
    let remote = || remote_within(120);
    // ready when a query runs on it: each try given 30 s, tried again for 3 minutes (on a loaded
    // machine a first try, sent as the roles were starting, once never answered in 120 s)
    let probe = "SELECT count(*) AS apps FROM applications";
    let t0 = std::time::Instant::now();
    let want_apps = rows(&mut local(), probe).unwrap();
    loop {
        match rows(&mut remote_within(30), probe) {
            Ok(r) => {
                assert_eq!(r, want_apps);
                break;
            }
            Err(e) if t0.elapsed().as_secs() > 180 => panic!("the cluster never answered: {e}"),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(500)),
        }
    }

    // fleet questions, every table and every cluster-eligible view
    let mut queries: Vec<String> = vec![
        "SELECT t.app_id, count(*) AS tasks, sum(t.executor_run_time_ms) AS run_ms \
         FROM tasks t JOIN stages s ON t.app_id = s.app_id AND t.stage_id = s.stage_id \
         AND t.stage_attempt_id = s.attempt_id GROUP BY t.app_id"
            .into(),
        "SELECT q.status, count(*) AS logs, sum(q.estimated_gpu_duration) AS gpu_ms \
         FROM derived.qualification q GROUP BY q.status"
            .into(),
    ];
    let tables = rows(
        &mut local(),
        "SELECT table_schema, table_name, table_type FROM information_schema.tables \
         WHERE table_schema IN ('public', 'derived')",
    )
    .unwrap();
    let portable = aether_engine::views::portable_views().unwrap();
    let mut views = 0;
    for t in &tables[1..] {
        let (schema, name, kind) = (&t[0], &t[1], &t[2]);
        if kind == "VIEW" {
            if !portable.contains(&name.as_str()) {
                continue;
            }
            views += 1;
        }
        queries.push(format!("SELECT * FROM {schema}.{name}"));
    }
    assert_eq!(views, portable.len(), "{tables:?}");
    assert!(views >= 25, "{portable:?}");
    assert!(
        tables.iter().filter(|t| t[0] == "derived").count() >= 6,
        "{tables:?}"
    );
    let mut failed = Vec::new();
    for q in &queries {
        let want = rows(&mut local(), q).unwrap_or_else(|e| panic!("{q}: {e}"));
        let got = rows(&mut remote(), q).and_then(|g| same(&g, &want));
        if let Err(e) = got {
            failed.push(format!("{q}: {e}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    eprintln!(
        "{} queries ({views} views) agree on Ballista, {:.1} s",
        queries.len(),
        t0.elapsed().as_secs_f64()
    );
}
