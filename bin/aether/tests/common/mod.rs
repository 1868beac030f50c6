//! Helpers shared by the CLI's test files.
#![allow(dead_code)]

use std::process::{Command, Output};

/// A command's standard output, as text.
pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A command's standard error, as text.
pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The line of `aether doctor` check `name` (its folded detail joined) and its `fix:` line
/// (empty when none).
pub fn doctor_check(text: &str, name: &str) -> (String, String) {
    let lines: Vec<&str> = text.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.get(6..).is_some_and(|l| l.starts_with(name)))
        .unwrap_or_else(|| panic!("no check {name:?} in:\n{text}"));
    let mut line = lines[i].to_string();
    let mut fix = String::new();
    for l in lines[i + 1..].iter().take_while(|l| l.starts_with("    ")) {
        let l = l.trim_start();
        if l.starts_with("fix: ") {
            fix = l.to_string();
        } else {
            line = format!("{line} {l}");
        }
    }
    (line, fix)
}

/// Wait (polling every 200 ms) until `f` holds; fails the test after `secs` seconds.
pub fn wait_until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let t = std::time::Instant::now();
    while !f() {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(secs),
            "{what}: not within {secs} s"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The state the job history holds for a cluster aether made.
pub fn cluster_state(db: &rusqlite::Connection, cluster_id: &str) -> String {
    db.query_row(
        "SELECT state FROM clusters WHERE cluster_id = ?1",
        [cluster_id],
        |r| r.get(0),
    )
    .unwrap_or_else(|e| panic!("cluster {cluster_id} in the history: {e}"))
}

/// A moto server (S3, EMR, …) on a free loopback port, stopped on drop.
pub struct Moto {
    pub child: std::process::Child,
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    /// `cmd` talking to this server as AWS (test credentials, never a real account).
    pub fn aws_env<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_REGION", "us-east-1")
            .env_remove("AWS_PROFILE")
    }
}

/// A loopback port free at the time of the call.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn start_moto() -> Moto {
    let port = free_port();
    let mut moto = Command::new("moto_server")
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|child| Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        })
        .expect("moto_server: scripts/setup --test installs it in .venv (scripts/check puts .venv/bin on PATH)");
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return moto;
        }
        if let Ok(Some(status)) = moto.child.try_wait() {
            panic!("moto_server exited early: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("moto_server did not start on port {port}");
}

/// The project's EMR emulator (`tests/emr-emulator/emulator.py`: moto's EMR and S3 plus a
/// ticker that runs steps with the local Spark), on a free loopback port, stopped on drop.
pub struct Emulator {
    pub child: std::process::Child,
    pub endpoint: String,
    pub work: tempfile::TempDir,
}

impl Drop for Emulator {
    fn drop(&mut self) {
        // SIGTERM: the emulator stops the step processes it started
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start the emulator; `time_scale` shortens idle timeouts (0.001: an hour is 3.6 s).
pub fn start_emulator(time_scale: f64) -> Emulator {
    use std::io::BufRead;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/emr-emulator/emulator.py");
    let work = tempfile::tempdir().unwrap();
    let mut child = Command::new("python3")
        .arg(&script)
        .args(["--port", "0", "--time_scale", &time_scale.to_string()])
        .arg("--work")
        .arg(work.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("python3 with moto[server] and boto3 (scripts/setup --test installs them)");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let endpoint = line
        .strip_prefix("READY ")
        .unwrap_or_else(|| panic!("the EMR emulator did not start: {line:?}"))
        .trim()
        .to_string();
    Emulator {
        child,
        endpoint,
        work,
    }
}

impl Emulator {
    /// A call to the emulator's control API (`/_emulator/<what>`), its JSON answer.
    pub fn control(&self, what: &str, body: Option<serde_json::Value>) -> serde_json::Value {
        use std::io::{Read, Write};
        let addr = self.endpoint.trim_start_matches("http://");
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let method = if body.is_empty() { "GET" } else { "POST" };
        write!(
            s,
            "{method} /_emulator/{what} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        let (head, json) = resp.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(" 200 "), "emulator {what}: {resp}");
        serde_json::from_str(json).unwrap_or_else(|e| panic!("emulator {what}: {e}: {json}"))
    }

    /// Inject a fault (see the emulator's doc).
    pub fn fault(&self, f: serde_json::Value) {
        self.control("faults", Some(f));
    }

    /// Production as the EMR tests have it: data and code in S3 (buckets data, code, logs, art),
    /// a CPU cluster whose steps log to `s3://logs/emr/` and whose event logs go to
    /// `event_log_dir`, and one finished step of the ETL job `app` (`s3://data/in/` ->
    /// `s3://data/out/agg`). (cluster id, step id).
    pub fn production_step(
        &self,
        dir: &std::path::Path,
        app: &str,
        event_log_dir: &str,
    ) -> (String, String) {
        let job = dir.join("job.py");
        std::fs::write(
            &job,
            format!(
                "import sys\nfrom pyspark.sql import SparkSession\n\
                 s = SparkSession.builder.appName({app:?}).getOrCreate()\n\
                 df = s.read.csv(sys.argv[1], header=True, inferSchema=True)\n\
                 df.groupBy(\"k\").sum(\"v\").write.mode(\"overwrite\").parquet(sys.argv[2])\n\
                 s.stop()\n"
            ),
        )
        .unwrap();
        let ids = self.boto(&format!(
            "for b in ('data', 'code', 'logs', 'art'): s3.create_bucket(Bucket=b)\n\
             s3.put_object(Bucket='data', Key='in/part-0.csv', Body=b'k,v\\na,1\\nb,2\\na,3\\nc,4\\n')\n\
             s3.upload_file('{job}', 'code', 'jobs/etl.py')\n\
             c = emr.run_job_flow(Name='prod-etl', ReleaseLabel='emr-7.9.0', LogUri='s3://logs/emr/',\n\
               Instances={{'KeepJobFlowAliveWhenNoSteps': True, 'MasterInstanceType': 'm5d.xlarge', 'SlaveInstanceType': 'm5d.2xlarge', 'InstanceCount': 3}},\n\
               Configurations=[{{'Classification': 'spark-defaults', 'Properties': {{'spark.eventLog.dir': '{event_log_dir}'}}}}],\n\
               JobFlowRole='EMR_EC2_DefaultRole', ServiceRole='EMR_DefaultRole')\n\
             s = emr.add_job_flow_steps(JobFlowId=c['JobFlowId'], Steps=[{{'Name': 'etl', 'ActionOnFailure': 'CONTINUE',\n\
               'HadoopJarStep': {{'Jar': 'command-runner.jar', 'Args': ['spark-submit', '--deploy-mode', 'cluster',\n\
                 '--conf', 'spark.sql.shuffle.partitions=8', 's3://code/jobs/etl.py', 's3://data/in/', 's3://data/out/agg']}}}}])\n\
             print(c['JobFlowId'], s['StepIds'][0])",
            job = job.display()
        ));
        let (cluster, step) = ids.split_once(' ').unwrap();
        assert_eq!(self.wait_step(cluster, step), "COMPLETED");
        (cluster.to_string(), step.to_string())
    }

    /// Production's outputs (`s3://data/out/`): keys and ETags, to show they were not touched.
    pub fn production_outputs(&self) -> String {
        self.boto(
            "print(sorted((o['Key'], o['ETag']) for o in s3.list_objects_v2(Bucket='data', Prefix='out/')['Contents']))",
        )
    }

    /// An EMR step's state once it has ended (polled through boto3).
    pub fn wait_step(&self, cluster: &str, step: &str) -> String {
        self.boto(&format!(
            "for _ in range(600):\n\
             \x20   st = emr.describe_step(ClusterId='{cluster}', StepId='{step}')['Step']['Status']['State']\n\
             \x20   if st not in ('PENDING', 'RUNNING'): break\n\
             \x20   time.sleep(0.5)\n\
             print(st)"
        ))
    }

    /// The bundled sample log qualified into `home`'s history through the emulator: its
    /// (job id, shape id, config id), as `cluster create` and `submit` take them.
    pub fn qualify_sample(&self, home: &std::path::Path) -> (String, String, String) {
        let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../datasets/sample/local-1796009671201");
        let o = self
            .aether(home)
            .args(["qualify", "--event_log", log.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", err(&o));
        let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
        let (job, shape, config): (i64, i64, i64) = db
            .query_row(
                "SELECT q.job_id, q.qualification_id, c.config_id
                 FROM qualifications q JOIN configs c USING (job_id)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        (job.to_string(), shape.to_string(), config.to_string())
    }

    pub fn state(&self) -> serde_json::Value {
        self.control("state", None)
    }

    /// Run a boto3 script against the emulator (`s3`, `emr` and `eks` (emr-containers) clients are
    /// defined); its stdout.
    pub fn boto(&self, script: &str) -> String {
        let ep = &self.endpoint;
        let o = Command::new("python3")
            .arg("-c")
            .arg(format!(
                "import boto3, json, time\nkw = dict(endpoint_url='{ep}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\ns3 = boto3.client('s3', **kw)\nemr = boto3.client('emr', **kw)\neks = boto3.client('emr-containers', **kw)\n{script}"
            ))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "boto3: {}\n{script}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// `aether` with the emulator as its AWS endpoint.
    pub fn aether(&self, home: &std::path::Path) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_aether"));
        c.env("AETHER_HOME", home)
            .env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_REGION", "us-east-1")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_ENDPOINT_URL_EMR")
            .env_remove("AWS_ENDPOINT_URL_S3")
            // the emulator's "nodes" are this machine: its glibc, not the release's
            .env("AETHER_NODE_GLIBC", host_glibc());
        c
    }
}
pub mod fleet;

/// This machine's glibc (`getconf GNU_LIBC_VERSION`: "glibc 2.36" → "2.36").
pub fn host_glibc() -> String {
    let out = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .expect("getconf");
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .strip_prefix("glibc ")
        .unwrap_or_else(|| panic!("not glibc: {text:?}"))
        .to_string()
}

/// Qualify settings under which the tests' tiny jobs are recommended for the GPU (so tune and
/// `aether run` have something to do).
pub const RECOMMEND_TINY: [&str; 6] = [
    "--set",
    "gpu_speedup_min=0.1",
    "--set",
    "category_small_min=0.1",
    "--set",
    "unsupported_pct_max=100",
];

/// The execution role of the emulated EMR on EKS job runs.
pub const EKS_ROLE: &str = "arn:aws:iam::123456789012:role/emr-eks-gpu-job";

/// An EMR on EKS user's settings on the emulator (virtual cluster `vc` on namespace spark-gpu),
/// each through `config set` (each key checked).
pub fn set_eks_settings(home: &std::path::Path, vc: &str) {
    for (k, v) in [
        ("platform.emr_eks.region", "us-east-1"),
        ("platform.emr_eks.virtual_cluster_id", vc),
        ("platform.emr_eks.execution_role_arn", EKS_ROLE),
        ("platform.emr_eks.namespace", "spark-gpu"),
        ("platform.emr_eks.eks_cluster_name", "analytics"),
        ("platform.emr_eks.artifacts_path", "s3://art/eks"),
        (
            "platform.emr_eks.spark_event_log_dir",
            "s3://logs/eks-spark",
        ),
        ("platform.emr_eks.log_path", "s3://logs/eks"),
        ("platform.emr_eks.log_wait_s", "20"),
    ] {
        let o = aether(home, &["config", "set", k, v]);
        assert!(o.status.success(), "config set {k} {v}: {}", err(&o));
    }
}

/// `aether ARGS` with its home at `home`, to its end.
pub fn aether(home: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aether"))
        .args(args)
        .env("AETHER_HOME", home)
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .output()
        .expect("run aether")
}

/// `aether ARGS` with its home at `home` at a terminal width (`COLUMNS`; `None`: unknown, as
/// through a pipe): its stdout, once it succeeded.
pub fn aether_at(home: &std::path::Path, columns: Option<&str>, args: &[&str]) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_aether"));
    c.env("AETHER_HOME", home).args(args);
    match columns {
        Some(n) => c.env("COLUMNS", n),
        None => c.env_remove("COLUMNS"),
    };
    let o = c.output().expect("run aether");
    assert!(o.status.success(), "{}", err(&o));
    out(&o)
}

/// A CPU run as production ran it: `spark-submit` (local, one core) of `script ARGS` writing
/// its event log to `logs`, with `conf` (KEY=VALUE) set too.
pub fn cpu_run(logs: &std::path::Path, script: &std::path::Path, args: &[&str], conf: &[String]) {
    let mut c = Command::new("spark-submit");
    c.args([
        "--master",
        "local[1]",
        "--conf",
        "spark.eventLog.enabled=true",
    ])
    .arg("--conf")
    .arg(format!("spark.eventLog.dir=file://{}", logs.display()));
    for kv in conf {
        c.arg("--conf").arg(kv);
    }
    let o = c
        .arg(script)
        .args(args)
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .output()
        .expect("spark-submit (scripts/setup --test installs pyspark)");
    assert!(o.status.success(), "{}", err(&o));
}

/// A running `aether report ui` on a free port, stopped on drop.
pub struct Ui {
    child: std::process::Child,
    pub addr: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `aether report ui --port 0` over the history of `home`; its address from its first
/// line on stderr.
pub fn start_ui(home: &std::path::Path) -> Ui {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_aether"))
        .args(["report", "ui", "--port", "0"])
        .env("AETHER_HOME", home)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Ui { child, addr }
}

/// A running `aether` command: Ctrl-C'd (so it cancels its run and ends its cluster) and waited
/// for when the test fails before it does so itself.
pub struct Interrupt(pub Option<std::process::Child>);

impl Drop for Interrupt {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            // SAFETY: a signal to a child this test started
            unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
            let t = std::time::Instant::now();
            while t.elapsed() < std::time::Duration::from_secs(60) {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
