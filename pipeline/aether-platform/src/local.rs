//! The local backend: a "cluster" is this machine's Spark (`spark-submit` from `SPARK_HOME` or
//! an installed pyspark) and a folder; a step is a spark-submit process with its own event-log
//! folder. Everything lives in files under the backend's root, so another aether process (or a
//! later one) can describe, wait for and cancel what this one started:
//!
//! ```text
//! <root>/clusters/<cluster>/cluster.json
//! <root>/clusters/<cluster>/steps/<step>/{step.json, stdout, stderr, pid, rc, eventlog/}
//! <root>/tokens/<request token>          (the cluster id made for it)
//! ```
//!
//! A local run has no GPU: the RAPIDS plugin and GPU resource requests of a config are kept in
//! the record but not passed to Spark (unless a RAPIDS jar is configured), and the step says so.

use crate::{
    ClusterBackend, ClusterInfo, ClusterSpec, ClusterState, PlatformError, Result, StepInfo,
    StepRequest, StepState, io, now_ms,
};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The local backend.
pub struct LocalBackend {
    root: PathBuf,
    spark_submit: PathBuf,
    /// A RAPIDS Accelerator jar to load (`--jars`); without one the plugin is left out.
    rapids_jar: Option<PathBuf>,
}

#[derive(Serialize, Deserialize)]
struct StepFile {
    info: StepInfo,
    /// The name it was submitted as (how a run whose submit was never recorded is found).
    #[serde(default)]
    name: Option<String>,
    /// Properties of the config left out of this run, and why.
    notes: Vec<String>,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

fn new_id(prefix: &str) -> String {
    format!(
        "{prefix}-{:x}{:04x}{:02x}",
        now_ms(),
        std::process::id() & 0xffff,
        SEQ.fetch_add(1, Ordering::Relaxed) & 0xff
    )
}

/// The spark-submit to use: `$SPARK_HOME/bin/spark-submit`, else the first `spark-submit` on
/// `PATH` (pyspark's pip package installs one).
pub fn find_spark_submit() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("SPARK_HOME") {
        let p = Path::new(&h).join("bin/spark-submit");
        if p.is_file() {
            return Some(p);
        }
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("spark-submit"))
        .find(|p| p.is_file())
}

/// Whether `key=value` asks for a GPU (or the RAPIDS plugin), which a local run cannot give.
fn needs_gpu(key: &str, value: &str) -> bool {
    // the plugin, its shuffle manager, its cache serializer: classes of the RAPIDS jar
    value.contains("com.nvidia.")
        || key.starts_with("spark.executor.resource.gpu.")
        || key.starts_with("spark.task.resource.gpu.")
        || key.starts_with("spark.driver.resource.gpu.")
}

fn write_json(path: &Path, v: &impl Serialize) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let text = serde_json::to_vec_pretty(v).map_err(|e| io(path.display(), e))?;
    std::fs::write(&tmp, text).map_err(|e| io(tmp.display(), e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path.display(), e))
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T> {
    let text = std::fs::read(path).map_err(|e| io(path.display(), e))?;
    serde_json::from_slice(&text).map_err(|e| io(path.display(), e))
}

fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0
}

/// How many processes of process group `pgid` still run (zombies, which only wait for their
/// parent to reap them, do not count), from `/proc`.
pub fn group_running(pgid: i32) -> usize {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return 0;
    };
    rd.flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path().join("stat")).is_ok_and(|st| {
                // pid (comm) state ppid pgrp …
                st.rsplit_once(')').is_some_and(|(_, r)| {
                    let f: Vec<&str> = r.split_whitespace().collect();
                    f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z"
                })
            })
        })
        .count()
}

/// The last lines of a step's output that look like an error, for a failed step's reason.
fn failure_lines(output: &str) -> Option<String> {
    // error lines, not Spark's own log lines (which mention errors in passing) or stack frames
    let logged = |l: &str| {
        [" INFO ", " WARN ", " DEBUG "]
            .iter()
            .any(|x| l.contains(x))
    };
    let lines: Vec<&str> = output
        .lines()
        .filter(|l| !logged(l) && !l.starts_with('\t') && !l.starts_with("  "))
        .filter(|l| {
            l.contains("Error")
                || l.contains("Exception")
                || l.contains("error:")
                || l.starts_with("Caused by")
        })
        .collect();
    // the last error lines, else the last lines that are not Spark's log lines, else the last
    let plain = || -> Vec<&str> {
        let p: Vec<&str> = output
            .lines()
            .filter(|l| !logged(l) && !l.trim().is_empty())
            .collect();
        if p.is_empty() {
            output.lines().collect()
        } else {
            p
        }
    };
    let pick = if lines.is_empty() { plain() } else { lines };
    let pick = &pick[pick.len().saturating_sub(3)..];
    let s = pick.join("\n").trim().to_string();
    (!s.is_empty()).then_some(s)
}

impl LocalBackend {
    /// A backend keeping its clusters under `root`, running `spark_submit`.
    pub fn new(root: impl Into<PathBuf>, spark_submit: impl Into<PathBuf>) -> LocalBackend {
        LocalBackend {
            root: root.into(),
            spark_submit: spark_submit.into(),
            rapids_jar: None,
        }
    }

    /// Load the RAPIDS plugin from this jar (the GPU configs are then passed as they are).
    pub fn with_rapids_jar(mut self, jar: Option<PathBuf>) -> LocalBackend {
        self.rapids_jar = jar;
        self
    }

    fn cluster_dir(&self, id: &str) -> PathBuf {
        self.root.join("clusters").join(id)
    }

    fn step_dir(&self, cluster: &str, step: &str) -> PathBuf {
        self.cluster_dir(cluster).join("steps").join(step)
    }

    fn load_cluster(&self, id: &str) -> Result<ClusterInfo> {
        // ids are names of folders: nothing that could leave the root
        if id.is_empty() || id.contains('/') || id.starts_with('.') {
            return Err(PlatformError::UnknownCluster(id.to_string()));
        }
        let p = self.cluster_dir(id).join("cluster.json");
        if !p.is_file() {
            return Err(PlatformError::UnknownCluster(id.to_string()));
        }
        read_json(&p)
    }

    fn load_step(&self, cluster: &str, step: &str) -> Result<StepFile> {
        let p = self.step_dir(cluster, step).join("step.json");
        if step.contains('/') || !p.is_file() {
            return Err(PlatformError::UnknownStep {
                cluster: cluster.to_string(),
                step: step.to_string(),
            });
        }
        read_json(&p)
    }

    /// The step's state from its files: `rc` written by the wrapper when spark-submit ended,
    /// else its process (a vanished process without `rc` was killed).
    fn refresh(&self, cluster: &str, step: &str) -> Result<StepInfo> {
        let dir = self.step_dir(cluster, step);
        let mut f = self.load_step(cluster, step)?;
        if f.info.state.is_final() {
            return Ok(f.info);
        }
        let rc = std::fs::read_to_string(dir.join("rc")).ok();
        let pid: i32 = std::fs::read_to_string(dir.join("pid"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        // spark-submit's own errors are on its stderr; a PySpark job's (its Python process's
        // stderr: tracebacks, a script it cannot open) come out on its stdout, read last
        let output = || {
            ["stderr", "stdout"]
                .map(|f| std::fs::read_to_string(dir.join(f)).unwrap_or_default())
                .join("\n")
        };
        match rc.map(|s| s.trim().to_string()) {
            Some(rc) if rc == "0" => f.info.state = StepState::Completed,
            Some(rc) => {
                f.info.state = StepState::Failed;
                f.info.failure_reason = Some(format!(
                    "spark-submit exited with {rc}: {}",
                    failure_lines(&output()).unwrap_or_else(|| "no error output".into())
                ));
            }
            None if alive(pid) => return Ok(f.info),
            None => {
                f.info.state = StepState::Failed;
                f.info.failure_reason = Some(format!(
                    "the step's process ({pid}) ended without an exit status (killed?)"
                ));
            }
        }
        f.info.end_ms = Some(
            std::fs::metadata(dir.join("rc"))
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as i64)
                .unwrap_or_else(now_ms),
        );
        write_json(&dir.join("step.json"), &f)?;
        Ok(f.info)
    }

    /// Notes a step recorded about the configs it left out.
    pub fn step_notes(&self, cluster: &str, step: &str) -> Result<Vec<String>> {
        Ok(self.load_step(cluster, step)?.notes)
    }
}

#[async_trait]
impl ClusterBackend for LocalBackend {
    fn platform(&self) -> aether_core::config::RunOn {
        aether_core::config::RunOn::Local
    }

    async fn create(&self, spec: &ClusterSpec, request_token: &str) -> Result<ClusterInfo> {
        let tokens = self.root.join("tokens");
        std::fs::create_dir_all(&tokens).map_err(|e| io(tokens.display(), e))?;
        let token_file =
            (!request_token.is_empty()).then(|| tokens.join(request_token.replace('/', "_")));
        if let Some(t) = &token_file
            && let Ok(id) = std::fs::read_to_string(t)
        {
            return self.load_cluster(id.trim());
        }
        let id = new_id("lc");
        let dir = self.cluster_dir(&id);
        std::fs::create_dir_all(dir.join("steps")).map_err(|e| io(dir.display(), e))?;
        let info = ClusterInfo {
            cluster_id: id.clone(),
            backend: "local".into(),
            release_label: None,
            custom_ami: None,
            state: ClusterState::Waiting,
            spec: spec.clone(),
            created_ms: now_ms(),
            ended_ms: None,
            state_reason: Some(format!(
                "local Spark ({}) on this machine: no GPU{}",
                self.spark_submit.display(),
                if self.rapids_jar.is_some() {
                    "; RAPIDS jar configured"
                } else {
                    ", the RAPIDS plugin is not loaded"
                }
            )),
            groups: Vec::new(),
        };
        write_json(&dir.join("cluster.json"), &info)?;
        if let Some(t) = token_file {
            // first writer wins: a concurrent create with the same token finds this cluster
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&t)
            {
                Ok(mut f) => {
                    use std::io::Write;
                    f.write_all(id.as_bytes()).map_err(|e| io(t.display(), e))?;
                }
                Err(_) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    let other = std::fs::read_to_string(&t).map_err(|e| io(t.display(), e))?;
                    return self.load_cluster(other.trim());
                }
            }
        }
        Ok(info)
    }

    async fn find_created(
        &self,
        request_token: &str,
        _since_ms: i64,
    ) -> Result<Option<ClusterInfo>> {
        let t = self
            .root
            .join("tokens")
            .join(request_token.replace('/', "_"));
        match std::fs::read_to_string(&t) {
            Ok(id) => Ok(Some(self.load_cluster(id.trim())?)),
            Err(_) => Ok(None),
        }
    }

    async fn find_step(&self, cluster_id: &str, name: &str) -> Result<Option<StepInfo>> {
        self.load_cluster(cluster_id)?;
        let steps = self.cluster_dir(cluster_id).join("steps");
        let Ok(rd) = std::fs::read_dir(&steps) else {
            return Ok(None);
        };
        let mut found: Option<String> = None;
        for e in rd.flatten() {
            if let Some(id) = e.file_name().to_str()
                && self
                    .load_step(cluster_id, id)
                    .is_ok_and(|f| f.name.as_deref() == Some(name))
                && found.as_deref().is_none_or(|f| id > f)
            {
                found = Some(id.to_string());
            }
        }
        match found {
            Some(id) => Ok(Some(self.refresh(cluster_id, &id)?)),
            None => Ok(None),
        }
    }

    async fn find_by_token(&self, request_token: &str) -> Result<Option<ClusterInfo>> {
        let t = self
            .root
            .join("tokens")
            .join(request_token.replace('/', "_"));
        match std::fs::read_to_string(&t) {
            Ok(id) => {
                let c = self.load_cluster(id.trim())?;
                Ok((!c.state.is_ended()).then_some(c))
            }
            Err(_) => Ok(None),
        }
    }

    async fn describe(&self, cluster_id: &str) -> Result<ClusterInfo> {
        self.load_cluster(cluster_id)
    }

    async fn list(&self) -> Result<Vec<ClusterInfo>> {
        let dir = self.root.join("clusters");
        let Ok(rd) = std::fs::read_dir(&dir) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for e in rd.flatten() {
            if let Some(id) = e.file_name().to_str()
                && let Ok(c) = self.load_cluster(id)
            {
                out.push(c);
            }
        }
        out.sort_by_key(|c| c.created_ms);
        Ok(out)
    }

    async fn terminate(&self, cluster_id: &str) -> Result<ClusterInfo> {
        let mut c = self.load_cluster(cluster_id)?;
        if c.state.is_ended() {
            return Ok(c);
        }
        let steps = self.cluster_dir(cluster_id).join("steps");
        for e in std::fs::read_dir(&steps)
            .map_err(|e| io(steps.display(), e))?
            .flatten()
        {
            if let Some(s) = e.file_name().to_str()
                && self
                    .refresh(cluster_id, s)
                    .is_ok_and(|i| !i.state.is_final())
            {
                self.cancel(cluster_id, s).await?;
            }
        }
        c.state = ClusterState::Terminated;
        c.ended_ms = Some(now_ms());
        c.state_reason = Some("terminated by aether".into());
        write_json(&self.cluster_dir(cluster_id).join("cluster.json"), &c)?;
        Ok(c)
    }

    async fn submit(&self, cluster_id: &str, step: &StepRequest) -> Result<StepInfo> {
        let c = self.load_cluster(cluster_id)?;
        if c.state.is_ended() {
            return Err(PlatformError::NotRunning {
                cluster: cluster_id.to_string(),
                state: c.state.as_str().to_string(),
            });
        }
        let id = new_id("ls");
        let dir = self.step_dir(cluster_id, &id);
        let eventlog = dir.join("eventlog");
        std::fs::create_dir_all(&eventlog).map_err(|e| io(eventlog.display(), e))?;
        let mut conf = BTreeMap::new();
        let mut notes = Vec::new();
        for (k, v) in step.job.conf.iter().chain(step.conf.iter()) {
            if crate::is_placeholder(v) {
                notes.push(format!(
                    "{k}={v} not passed: a value to fill in, not a setting"
                ));
                conf.remove(k);
                continue;
            }
            if self.rapids_jar.is_none() && needs_gpu(k, v) {
                notes.push(format!("{k}={v} not passed: a local run has no GPU"));
                continue;
            }
            conf.insert(k.clone(), v.clone());
        }
        let cores = if c.spec.local_cores > 0 {
            c.spec.local_cores.to_string()
        } else {
            "*".into()
        };
        for (k, v) in [
            ("spark.master", format!("local[{cores}]")),
            ("spark.submit.deployMode", "client".into()),
            ("spark.eventLog.enabled", "true".into()),
            (
                "spark.eventLog.dir",
                format!("file://{}", eventlog.display()),
            ),
            ("spark.eventLog.rolling.enabled", "false".into()),
        ] {
            conf.insert(k.into(), v);
        }
        let mut job = step.job.clone();
        job.conf.clear();
        if let Some(jar) = &self.rapids_jar {
            job.options
                .push(("--jars".into(), Some(jar.display().to_string())));
        }
        let args = job.submit_args(&conf);
        let mut info = StepInfo {
            cluster_id: cluster_id.to_string(),
            step_id: id.clone(),
            state: StepState::Running,
            start_ms: Some(now_ms()),
            end_ms: None,
            failure_reason: None,
            args: args.clone(),
        };
        write_json(
            &dir.join("step.json"),
            &StepFile {
                info: info.clone(),
                name: Some(step.name.clone()),
                notes: notes.clone(),
            },
        )?;
        // sh records spark-submit's exit status (rc) when it ends; its own process group, so a
        // cancel ends spark-submit, its JVM and its Python workers together
        let script = "\"$@\" >stdout 2>stderr; echo $? >rc.tmp && mv rc.tmp rc";
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c")
            .arg(script)
            .arg("sh")
            .arg(&self.spark_submit)
            .args(&args)
            .current_dir(&dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .env(
                "SPARK_LOCAL_IP",
                std::env::var("SPARK_LOCAL_IP").unwrap_or_else(|_| "127.0.0.1".into()),
            )
            .process_group(0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                info.state = StepState::Failed;
                info.end_ms = Some(now_ms());
                info.failure_reason =
                    Some(format!("cannot start {}: {e}", self.spark_submit.display()));
                write_json(
                    &dir.join("step.json"),
                    &StepFile {
                        info: info.clone(),
                        name: Some(step.name.clone()),
                        notes,
                    },
                )?;
                return Ok(info);
            }
        };
        std::fs::write(dir.join("pid"), child.id().to_string())
            .map_err(|e| io(dir.display(), e))?;
        // reap it when it ends (its state is in the files either way)
        std::thread::spawn(move || child.wait());
        Ok(info)
    }

    async fn step(&self, cluster_id: &str, step_id: &str) -> Result<StepInfo> {
        self.load_cluster(cluster_id)?;
        self.refresh(cluster_id, step_id)
    }

    async fn cancel(&self, cluster_id: &str, step_id: &str) -> Result<StepInfo> {
        let info = self.refresh(cluster_id, step_id)?;
        if info.state.is_final() {
            return Ok(info);
        }
        let dir = self.step_dir(cluster_id, step_id);
        let pid: i32 = std::fs::read_to_string(dir.join("pid"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        if pid > 0 {
            // SAFETY: signals to the step's own process group (created at spawn)
            unsafe {
                libc::kill(-pid, libc::SIGTERM);
            }
            for _ in 0..50 {
                if !alive(pid) || dir.join("rc").exists() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            // SAFETY: as above; whatever ignored SIGTERM
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
            // the cancel is done when nothing of the group runs any more
            for _ in 0..100 {
                if group_running(pid) == 0 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
        let mut f = self.load_step(cluster_id, step_id)?;
        f.info.state = StepState::Cancelled;
        f.info.end_ms = Some(now_ms());
        f.info.failure_reason = Some("cancelled by aether".into());
        write_json(&dir.join("step.json"), &f)?;
        Ok(f.info)
    }

    async fn event_log(&self, cluster_id: &str, step_id: &str) -> Result<Option<String>> {
        self.load_step(cluster_id, step_id)?;
        let dir = self.step_dir(cluster_id, step_id).join("eventlog");
        let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| io(dir.display(), e))?
            .flatten()
            .map(|e| e.path())
            .collect();
        // a finished log before an in-progress one
        logs.sort_by_key(|p| p.extension().is_some_and(|x| x == "inprogress"));
        Ok(logs.first().map(|p| p.display().to_string()))
    }

    async fn driver_log(&self, cluster_id: &str, step_id: &str) -> Result<Option<String>> {
        self.load_step(cluster_id, step_id)?;
        let p = self.step_dir(cluster_id, step_id).join("stderr");
        Ok(p.is_file().then(|| p.display().to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Poll, wait_step};
    use std::time::Duration;

    /// A stand-in for spark-submit: prints its arguments, writes an "event log" where
    /// spark.eventLog.dir says, sleeps or fails as its first application argument says.
    fn fake_spark_submit(dir: &Path) -> PathBuf {
        let p = dir.join("spark-submit");
        std::fs::write(
            &p,
            r#"#!/bin/sh
for a in "$@"; do
  case "$a" in spark.eventLog.dir=file://*) ev=${a#spark.eventLog.dir=file://} ;; esac
  last=$a
done
echo "args: $*"
case "$last" in
  sleep) sleep 30 ;;
  fail) echo "Traceback (most recent call last):" >&2; echo "ValueError: bad input" >&2; exit 3 ;;
  missing)
    echo "26/12/04 14:40:17 INFO ShutdownHookManager: Shutdown hook called" >&2
    echo "python3: can't open file '/gone/job.py': [Errno 2] No such file or directory"
    exit 2 ;;
esac
echo '{"Event":"SparkListenerLogStart","Spark Version":"3.5.9"}' > "$ev/local-1"
"#,
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn job(last: &str) -> StepRequest {
        StepRequest {
            name: "t".into(),
            job: JobDefinition::parse(&format!(
                "spark-submit --conf spark.executor.cores=4 job.py {last}"
            ))
            .unwrap(),
            conf: BTreeMap::from([
                ("spark.sql.shuffle.partitions".into(), "8".into()),
                ("spark.plugins".into(), "com.nvidia.spark.SQLPlugin".into()),
                ("spark.executor.resource.gpu.amount".into(), "1".into()),
                (
                    "spark.sql.adaptive.autoBroadcastJoinThreshold".into(),
                    "[FILL_IN_VALUE]".into(),
                ),
            ]),
        }
    }
    use crate::JobDefinition;

    fn fast() -> Poll {
        Poll {
            first: Duration::from_millis(20),
            max: Duration::from_millis(100),
            factor: 2.0,
            deadline: Duration::from_secs(20),
        }
    }

    #[tokio::test]
    async fn a_step_runs_with_the_config_and_leaves_its_event_log() {
        let d = tempfile::tempdir().unwrap();
        let b = LocalBackend::new(d.path().join("root"), fake_spark_submit(d.path()));
        let c = b
            .create(
                &ClusterSpec {
                    local_cores: 2,
                    ..Default::default()
                },
                "",
            )
            .await
            .unwrap();
        assert!(c.state_reason.as_deref().unwrap().contains("no GPU"));
        let s = b.submit(&c.cluster_id, &job("ok")).await.unwrap();
        let done = wait_step(&b, &c.cluster_id, &s.step_id, fast(), |_, _| {})
            .await
            .unwrap();
        assert_eq!(done.state, StepState::Completed, "{done:?}");
        assert!(done.end_ms.unwrap() >= done.start_ms.unwrap());
        // the job's conf, the config's over it, the backend's own; no GPU asks
        let a = done.args.join(" ");
        for want in [
            "spark.executor.cores=4",
            "spark.sql.shuffle.partitions=8",
            "spark.master=local[2]",
            "spark.eventLog.enabled=true",
        ] {
            assert!(a.contains(want), "{want} not in {a}");
        }
        assert!(!a.contains("SQLPlugin") && !a.contains("gpu"), "{a}");
        let notes = b.step_notes(&c.cluster_id, &s.step_id).unwrap();
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(!a.contains("FILL_IN"), "{a}");
        let log = b
            .event_log(&c.cluster_id, &s.step_id)
            .await
            .unwrap()
            .unwrap();
        assert!(std::fs::read_to_string(&log).unwrap().contains("3.5.9"));
        let out =
            std::fs::read_to_string(b.step_dir(&c.cluster_id, &s.step_id).join("stdout")).unwrap();
        assert!(out.contains("job.py ok"), "{out}");
    }

    #[tokio::test]
    async fn a_failed_step_says_why() {
        let d = tempfile::tempdir().unwrap();
        let b = LocalBackend::new(d.path().join("root"), fake_spark_submit(d.path()));
        let c = b.create(&ClusterSpec::default(), "").await.unwrap();
        let s = b.submit(&c.cluster_id, &job("fail")).await.unwrap();
        let done = wait_step(&b, &c.cluster_id, &s.step_id, fast(), |_, _| {})
            .await
            .unwrap();
        assert_eq!(done.state, StepState::Failed);
        let why = done.failure_reason.unwrap();
        assert!(
            why.contains("exited with 3") && why.contains("ValueError: bad input"),
            "{why}"
        );
        let log = b
            .driver_log(&c.cluster_id, &s.step_id)
            .await
            .unwrap()
            .unwrap();
        assert!(std::fs::read_to_string(log).unwrap().contains("Traceback"));

        // a PySpark job's own error is on spark-submit's stdout (Spark's log lines on stderr)
        let s = b.submit(&c.cluster_id, &job("missing")).await.unwrap();
        let done = wait_step(&b, &c.cluster_id, &s.step_id, fast(), |_, _| {})
            .await
            .unwrap();
        let why = done.failure_reason.unwrap();
        assert!(
            why.contains("exited with 2")
                && why.contains("can't open file '/gone/job.py'")
                && !why.contains("ShutdownHookManager"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn deadline_then_cancel_and_terminate_leave_nothing_running() {
        let d = tempfile::tempdir().unwrap();
        let b = LocalBackend::new(d.path().join("root"), fake_spark_submit(d.path()));
        let c = b.create(&ClusterSpec::default(), "").await.unwrap();
        let s = b.submit(&c.cluster_id, &job("sleep")).await.unwrap();
        let short = Poll {
            deadline: Duration::from_millis(300),
            ..fast()
        };
        let e = wait_step(&b, &c.cluster_id, &s.step_id, short, |_, _| {})
            .await
            .unwrap_err();
        assert!(matches!(e, PlatformError::Deadline { .. }), "{e}");
        let pid: i32 = std::fs::read_to_string(b.step_dir(&c.cluster_id, &s.step_id).join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(alive(pid));
        let t = b.terminate(&c.cluster_id).await.unwrap();
        assert_eq!(t.state, ClusterState::Terminated);
        let st = b.step(&c.cluster_id, &s.step_id).await.unwrap();
        assert_eq!(st.state, StepState::Cancelled);
        // the whole process group is gone (the shell and the sleep under it), once the
        // cancel returned
        assert_eq!(
            group_running(pid),
            0,
            "the step's processes are still running"
        );
        let e = b.submit(&c.cluster_id, &job("ok")).await.unwrap_err();
        assert!(e.to_string().contains("TERMINATED"), "{e}");
    }

    #[tokio::test]
    async fn a_request_token_makes_one_cluster_and_unknown_ids_are_named() {
        let d = tempfile::tempdir().unwrap();
        let b = LocalBackend::new(d.path().join("root"), fake_spark_submit(d.path()));
        let a = b.create(&ClusterSpec::default(), "tok-1").await.unwrap();
        let again = b.create(&ClusterSpec::default(), "tok-1").await.unwrap();
        assert_eq!(a.cluster_id, again.cluster_id);
        assert_eq!(b.list().await.unwrap().len(), 1);
        let e = b.describe("lc-nope").await.unwrap_err().to_string();
        assert!(e.contains("unknown cluster lc-nope"), "{e}");
        let e = b
            .step(&a.cluster_id, "ls-nope")
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown step ls-nope"), "{e}");
        assert!(b.describe("../x").await.is_err());
    }
}
