//! Fleet scale: per-log work over a whole fleet, fanned out as shards (`--shard i/n`) on an
//! engine the user already runs — a Spark job (one EMR step of the bundled PySpark driver,
//! [`submit_step`]), a Kubernetes Indexed Job ([`k8s_job`]) or an AWS Batch array job
//! ([`batch_job`]). Every runner runs the unchanged aether binary, one shard per task, and
//! retries a failed task: aether skips what the warehouse holds.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Context, Result, bail, invalid};
use crate::workspace::Workspace;
use aether_platform::{ClusterBackend, JobDefinition, StepRequest, StepState};

/// The PySpark driver shipped with aether.
pub const DRIVER: &str = include_str!("fleet/aether_fleet.py");

/// The per-shard command every runner runs.
#[derive(Clone, Debug)]
pub struct ShardWork {
    /// The fleet's event logs (s3:// prefixes, paths, .txt lists).
    pub event_log: Vec<String>,
    /// The warehouse every shard writes to (s3://bucket/prefix).
    pub warehouse: String,
    /// How many shards.
    pub shards: u64,
    /// Threads of one shard's aether (the cores a task is given).
    pub threads_per_shard: u64,
}

impl ShardWork {
    /// `qualify --event_log LOGS… --warehouse WAREHOUSE --threads T` (the runner adds
    /// `--shard i/n`): each log's tables and its derived tables, written as it is judged.
    pub fn command(&self) -> Vec<String> {
        let mut c = vec!["qualify".to_string(), "--event_log".to_string()];
        c.extend(self.event_log.iter().cloned());
        c.extend([
            "--warehouse".into(),
            self.warehouse.clone(),
            "--threads".into(),
            self.threads_per_shard.to_string(),
        ]);
        c
    }

    /// Counts that make a fleet.
    pub fn check(&self) -> Result<()> {
        if self.shards == 0 {
            bail!("--shards must be at least 1");
        }
        if self.threads_per_shard == 0 {
            bail!("--threads_per_shard must be at least 1");
        }
        Ok(())
    }
}

/// A shell word for the manifests' command lines.
fn sh_quote(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// A Kubernetes Job of N indexes, each index one shard (`$(JOB_COMPLETION_INDEX)`, from the
/// pod's completion-index annotation), retried per index.
pub fn k8s_job(
    w: &ShardWork,
    image: &str,
    parallelism: u64,
    memory_mib: u64,
    attempts: u64,
    namespace: &str,
    service_account: &str,
) -> String {
    let mut args = vec!["aether".to_string()];
    args.extend(w.command());
    args.push("--shard".into());
    args.push(format!("$(JOB_COMPLETION_INDEX)/{}", w.shards));
    let job = serde_json::json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "aether-fleet-qualify", "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "aether"}},
        "spec": {
            "completionMode": "Indexed",
            "completions": w.shards,
            "parallelism": parallelism.min(w.shards),
            // each shard retried on its own (Kubernetes 1.29+); one bad shard does not stop
            // the others
            "backoffLimitPerIndex": attempts.saturating_sub(1),
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "aether-fleet"}},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": service_account,
                    "containers": [{
                        "name": "aether",
                        "image": image,
                        "command": args,
                        "env": [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}],
                        "resources": {
                            "requests": {"cpu": w.threads_per_shard.to_string(),
                                         "memory": format!("{memory_mib}Mi")},
                            "limits": {"memory": format!("{memory_mib}Mi")}
                        }
                    }]
                }
            }
        }
    });
    format!(
        "# aether fleet: {} shards of the logs, one per index; `kubectl apply -f` this file\n{}",
        w.shards,
        aether_platform::karpenter::to_yaml(&job)
    )
}

/// An AWS Batch job definition and the array job of N children, each child one shard
/// (`$AWS_BATCH_JOB_ARRAY_INDEX`), as `aws batch register-job-definition` and `submit-job`
/// take them.
pub fn batch_job(
    w: &ShardWork,
    image: &str,
    memory_mib: u64,
    attempts: u64,
    job_queue: &str,
    job_role_arn: Option<&str>,
) -> String {
    let mut words: Vec<String> = vec!["aether".into()];
    words.extend(w.command().iter().map(|a| sh_quote(a)));
    let line = format!(
        "exec {} --shard \"$AWS_BATCH_JOB_ARRAY_INDEX/{}\"",
        words.join(" "),
        w.shards
    );
    let mut container = serde_json::json!({
        "image": image,
        "command": ["sh", "-c", line],
        "resourceRequirements": [
            {"type": "VCPU", "value": w.threads_per_shard.to_string()},
            {"type": "MEMORY", "value": memory_mib.to_string()}
        ]
    });
    if let Some(r) = job_role_arn {
        container["jobRoleArn"] = serde_json::json!(r);
    }
    let doc = serde_json::json!({
        "registerJobDefinition": {
            "jobDefinitionName": "aether-fleet-qualify",
            "type": "container",
            "containerProperties": container,
            "retryStrategy": {"attempts": attempts.clamp(1, 10)},
            "tags": {"app": "aether-fleet"}
        },
        "submitJob": {
            "jobName": "aether-fleet-qualify",
            "jobQueue": job_queue,
            "jobDefinition": "aether-fleet-qualify",
            "arrayProperties": {"size": w.shards}
        }
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// Where the XGBoost library aether links is: the build's folder, LD_LIBRARY_PATH, beside the
/// binary.
fn xgboost_library(exe: &Path) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("XGBOOST_LIB_DIR") {
        dirs.push(d.into());
    }
    if let Some(d) = option_env!("XGBOOST_LIB_DIR") {
        dirs.push(d.into());
    }
    if let Some(p) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    if let Some(d) = exe.parent() {
        dirs.push(d.to_path_buf());
    }
    dirs.into_iter()
        .map(|d| d.join("libxgboost.so"))
        .find(|p| p.is_file())
}

/// A tar (ustar) of `files` (name in the archive, file), streamed to `out`.
pub fn write_tar(out: &mut impl Write, files: &[(&str, &Path)]) -> Result<()> {
    for (name, path) in files {
        let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
        if name.len() > 99 {
            bail!("{name}: a name of at most 99 bytes");
        }
        let mut h = [0u8; 512];
        let field = |h: &mut [u8; 512], at: usize, len: usize, v: &[u8]| {
            h[at..at + v.len().min(len)].copy_from_slice(&v[..v.len().min(len)]);
        };
        let octal = |n: u64, len: usize| format!("{n:0w$o}\0", w = len - 1).into_bytes();
        field(&mut h, 0, 100, name.as_bytes());
        field(&mut h, 100, 8, &octal(0o755, 8));
        field(&mut h, 108, 8, &octal(0, 8));
        field(&mut h, 116, 8, &octal(0, 8));
        field(&mut h, 124, 12, &octal(meta.len(), 12));
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs())
            .unwrap_or(0);
        field(&mut h, 136, 12, &octal(mtime, 12));
        h[148..156].copy_from_slice(b"        ");
        h[156] = b'0';
        field(&mut h, 257, 6, b"ustar\0");
        field(&mut h, 263, 2, b"00");
        let sum: u32 = h.iter().map(|&b| b as u32).sum();
        field(&mut h, 148, 8, format!("{sum:06o}\0 ").as_bytes());
        out.write_all(&h)?;
        let mut f = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
        let n = std::io::copy(&mut f, out)?;
        if n != meta.len() {
            bail!("{}: changed while it was archived", path.display());
        }
        let pad = (512 - (n % 512) as usize) % 512;
        out.write_all(&vec![0u8; pad])?;
    }
    out.write_all(&[0u8; 1024])?;
    Ok(())
}

/// The bundle every task unpacks (`--archives …#aether`): this binary as `aether`, and
/// `libxgboost.so` with the libraries it loads beside it.
pub fn bundle(dir: &Path) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("the aether binary")?;
    let lib = xgboost_library(&exe).ok_or_else(|| {
        invalid!(
            "libxgboost.so not found (XGBOOST_LIB_DIR, LD_LIBRARY_PATH, beside {}): the fleet's \
             tasks need it beside the binary",
            exe.display()
        )
    })?;
    // the libraries the wheel's libxgboost.so loads from its own RPATH
    // ($ORIGIN/../../xgboost_cpu.libs: the OpenMP runtime it was built with)
    let mut libs: Vec<(String, PathBuf)> = vec![("libxgboost.so".into(), lib.clone())];
    if let Some(wheel_libs) = lib
        .parent()
        .and_then(|d| d.parent())
        .and_then(|d| d.parent())
        .map(|d| d.join("xgboost_cpu.libs"))
        && let Ok(rd) = std::fs::read_dir(&wheel_libs)
    {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.contains(".so") && e.path().is_file() {
                libs.push((name, e.path()));
            }
        }
    }
    let path = dir.join("aether-bundle.tar");
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(&path).with_context(|| format!("{}", path.display()))?,
    );
    let mut files: Vec<(&str, &Path)> = vec![("aether", &exe)];
    files.extend(libs.iter().map(|(n, p)| (n.as_str(), p.as_path())));
    write_tar(&mut f, &files)?;
    f.flush()?;
    Ok(path)
}

/// Whether this binary and the XGBoost library it ships can load on the nodes of an EMR release:
/// a Linux build, linked against a glibc no newer than the nodes' (Amazon Linux 2023 on EMR 7:
/// 2.34).
/// An error naming both, before anything is uploaded; unknown releases pass. `AETHER_NODE_GLIBC`
/// (`2.34`) says the nodes' glibc where their AMI is not the release's (a custom AMI, an emulator).
fn runs_on_nodes(c: &aether_platform::ClusterInfo) -> Result<()> {
    // the tasks run this very binary on the nodes, which run Linux whatever the release
    if !cfg!(target_os = "linux") {
        bail!(
            "the fleet's tasks run this aether binary on EMR's Linux nodes, and this one is built \
             for {}: submit from a Linux install of aether (the Linux wheel, the image)",
            std::env::consts::OS
        );
    }
    let release_label = c.release_label.as_deref().unwrap_or("its release");
    let nodes = match std::env::var("AETHER_NODE_GLIBC") {
        Ok(v) => Some(crate::glibc::parse(&v).ok_or_else(|| {
            invalid!("AETHER_NODE_GLIBC={v:?}: expected a glibc version such as 2.34")
        })?),
        // a custom AMI's glibc is its own
        Err(_) if c.custom_ami.is_some() => None,
        Err(_) => c
            .release_label
            .as_deref()
            .and_then(crate::glibc::of_emr_release),
    };
    let Some(nodes) = nodes else {
        return Ok(());
    };
    let exe = std::env::current_exe().context("the aether binary")?;
    let mut files = vec![("this aether binary", exe.clone())];
    files.extend(xgboost_library(&exe).map(|l| ("libxgboost.so", l)));
    for (what, path) in files {
        let need = crate::glibc::needs(&path).with_context(|| format!("{}", path.display()))?;
        if let Some(need) = need.filter(|&n| n > nodes) {
            bail!(
                "{what} ({}) needs glibc {}, and the nodes of {release_label} have {}: every task \
                 would fail to load it. Submit from the release wheel's aether (built against glibc \
                 2.31) or one built by scripts/portable-build",
                path.display(),
                crate::glibc::show(need),
                crate::glibc::show(nodes)
            );
        }
    }
    Ok(())
}

/// Put a local file to an S3 URL.
fn put_file(
    rt: &tokio::runtime::Runtime,
    s3: &aether_ingest::S3Options,
    url: &str,
    file: &Path,
) -> Result<()> {
    use object_store::ObjectStoreExt;
    let loc = aether_ingest::source::s3_location(url, s3).map_err(|e| invalid!("{url}: {e}"))?;
    let bytes = std::fs::read(file).with_context(|| format!("{}", file.display()))?;
    rt.block_on(loc.store.put(
        &object_store::path::Path::from(loc.prefix.as_str()),
        object_store::PutPayload::from(bytes),
    ))
    .with_context(|| format!("putting {url}"))?;
    Ok(())
}

/// A fleet task's end, when the shard decides it: an input that could not be listed may pass
/// on a retry (exit 3, said as an error); a shard that holds no log has nothing to do (exit 0).
/// `None`: the command decides. (exit status, what to say).
pub fn shard_exit(
    shard: Option<aether_ingest::Shard>,
    unreadable: usize,
    written: usize,
    skipped: usize,
) -> Option<(u8, String)> {
    let shard = shard?;
    if unreadable > 0 {
        return Some((
            3,
            format!(
                "error: shard {shard}: {unreadable} input(s) could not be read; the logs read are \
                 written, a retry skips them"
            ),
        ));
    }
    (written == 0 && skipped == 0).then(|| {
        (
            0,
            format!("shard {shard} holds none of the logs: nothing to do"),
        )
    })
}

/// A fleet step submitted: its id and state.
pub struct Submitted {
    pub step_id: String,
    pub state: StepState,
}

/// `fleet submit`: the bundle and the driver to the artifacts path, one EMR step of N tasks.
pub fn submit_step(ws: &Workspace, w: &ShardWork, cluster_id: &str) -> Result<Submitted> {
    let emr = ws.emr_settings();
    let art = emr.artifacts_path.as_deref().ok_or_else(|| {
            invalid!(
                "platform.emr.cluster.artifacts_path is not set: the fleet's binary and driver go there \
                 (aether config set platform.emr.cluster.artifacts_path s3://bucket/prefix)"
            )
        })?
        .trim_end_matches('/')
        .to_string();
    let rt = ws.runtime();
    let b = ws.emr_backend();
    // the cluster first: nothing is uploaded for a cluster that cannot take the step
    let c = rt.block_on(b.describe(cluster_id))?;
    if c.state.is_ended() {
        bail!(
            "cluster {cluster_id} is {}: it takes no steps",
            c.state.as_str()
        );
    }
    runs_on_nodes(&c)?;
    let s3 = ws.s3();
    let tmp = tempfile::tempdir()?;
    let tar = bundle(tmp.path())?;
    let bundle_url = format!("{art}/fleet/aether-bundle.tar");
    let driver_url = format!("{art}/fleet/aether_fleet.py");
    let mb = std::fs::metadata(&tar)?.len() as f64 / 1e6;
    ws.note(&format!(
        "fleet: putting the bundle ({mb:.0} MB: aether, libxgboost.so) to {bundle_url}"
    ));
    put_file(rt, &s3, &bundle_url, &tar)?;
    let driver = tmp.path().join("aether_fleet.py");
    std::fs::write(&driver, DRIVER)?;
    put_file(rt, &s3, &driver_url, &driver)?;
    let mut args = vec!["--shards".to_string(), w.shards.to_string(), "--".into()];
    args.extend(w.command());
    let mut conf = BTreeMap::new();
    // a failed shard is retried (it redoes nothing the warehouse holds)
    conf.insert("spark.task.maxFailures".into(), "4".into());
    conf.insert(
        "spark.executor.cores".into(),
        w.threads_per_shard.to_string(),
    );
    conf.insert("spark.task.cpus".into(), w.threads_per_shard.to_string());
    let job = JobDefinition {
        main: driver_url,
        args,
        options: vec![("--archives".into(), Some(format!("{bundle_url}#aether")))],
        ..Default::default()
    };
    let req = StepRequest {
        name: format!(
            "aether fleet qualify x{} {}",
            w.shards,
            aether_platform::now_ms()
        ),
        job,
        conf,
    };
    let step = rt.block_on(b.submit(cluster_id, &req))?;
    Ok(Submitted {
        step_id: step.step_id,
        state: step.state,
    })
}

/// How a fleet step ended: its state, and each shard's result line (JSON, from the driver's
/// stdout).
pub struct Finished {
    pub state: StepState,
    pub failure_reason: Option<String>,
    pub shard_lines: Vec<String>,
}

impl Finished {
    /// What to say of a step that did not complete (its state and why), if it did not.
    pub fn failure(&self, step_id: &str) -> Option<String> {
        (self.state != StepState::Completed).then(|| {
            let why = self.failure_reason.as_deref().map(|r| format!(": {r}"));
            format!(
                "fleet: step {step_id} {}{}",
                self.state.as_str(),
                why.unwrap_or_default()
            )
        })
    }
}

impl Submitted {
    /// What to say of a step submitted and not waited for.
    pub fn said(&self, cluster_id: &str, w: &ShardWork) -> String {
        format!(
            "fleet: step {} on {cluster_id}: {} shard(s) of {} into {}",
            self.step_id,
            w.shards,
            w.event_log.join(" "),
            w.warehouse
        )
    }
}

/// Wait for a fleet step (cancelled at the deadline, on a failed poll or when the workspace
/// is stopped); a failed step's driver log is told.
pub fn wait_step(
    ws: &Workspace,
    cluster_id: &str,
    step_id: &str,
    timeout_s: u64,
) -> Result<Finished> {
    let rt = ws.runtime();
    let b = ws.emr_backend();
    let s3 = ws.s3();
    let poll = aether_platform::Poll {
        deadline: std::time::Duration::from_secs(timeout_s),
        ..Default::default()
    };
    let cancel = ws.cancel().clone();
    let done = rt.block_on(async {
        let wait = aether_platform::wait_step(&b, cluster_id, step_id, poll, |s, t| {
            ws.emit(crate::events::Event::StepState {
                step_id: &s.step_id,
                state: s.state.as_str(),
                elapsed: t,
            })
        });
        tokio::select! {
            r = wait => r.map_err(crate::error::WorkflowError::from),
            s = cancel.cancelled() => Err(invalid!("{}: stopped", s.name())),
        }
    });
    let done = match done {
        Ok(d) => d,
        Err(e) => {
            let _ = rt.block_on(b.cancel(cluster_id, step_id));
            return Err(e).context(format!("step {step_id} cancelled"));
        }
    };
    // the driver's lines (client mode: the step's stdout); a failed step's stderr
    let stderr = rt
        .block_on(b.driver_log(cluster_id, step_id))
        .ok()
        .flatten();
    if done.state != StepState::Completed
        && let Some(l) = &stderr
        && let Ok(lines) = rt.block_on(aether_platform::log_tail(l, &s3, 2000))
    {
        // the first errors (the cause), then the end
        ws.note(&format!("  driver log: {l}"));
        let errors = lines
            .iter()
            .filter(|x| (x.contains("Error") || x.contains("Exception")) && !x.starts_with('\t'))
            .take(5);
        for line in errors.chain(lines[lines.len().saturating_sub(6)..].iter()) {
            ws.note(&format!("    | {line}"));
        }
    }
    let mut shard_lines = Vec::new();
    if let Some(stderr) = stderr {
        let stdout = stderr.replace("/stderr.gz", "/stdout.gz");
        for _ in 0..40 {
            if let Ok(lines) = rt.block_on(aether_platform::log_tail(&stdout, &s3, 100_000)) {
                shard_lines = lines.into_iter().filter(|l| l.starts_with('{')).collect();
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    }
    Ok(Finished {
        state: done.state,
        failure_reason: done.failure_reason,
        shard_lines,
    })
}

/// The `aether-cluster` binary: beside this one (how aether is installed and packaged), else
/// on the PATH.
pub fn cluster_binary() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("aether-cluster")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("aether-cluster"))
}

/// Run `aether-cluster ROLE ARGS…` (Ballista's scheduler, executor or SQL client, with aether's
/// functions): the Ballista stack lives in that binary so that aether's own stays lean. On Unix
/// the role replaces this process (signals reach it directly) and this returns only an error;
/// elsewhere, its exit status.
pub fn cluster_role(role: &str, args: &[String]) -> std::io::Result<u8> {
    let bin = cluster_binary();
    let mut cmd = std::process::Command::new(&bin);
    cmd.arg(role).args(args);
    let cannot = |e: std::io::Error| {
        std::io::Error::new(
            e.kind(),
            format!(
                "cannot run {} (build or install it beside aether: cargo build -p aether-cluster): {e}",
                bin.display()
            ),
        )
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        Err(cannot(cmd.exec()))
    }
    #[cfg(not(unix))]
    {
        let st = cmd.status().map_err(cannot)?;
        Ok(st.code().unwrap_or(2).clamp(0, 255) as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tar_that_tar_reads_back() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        let b = d.path().join("b");
        std::fs::write(&a, b"#!/bin/sh\necho hi\n").unwrap();
        std::fs::write(&b, vec![7u8; 1300]).unwrap();
        let t = d.path().join("x.tar");
        let mut f = std::fs::File::create(&t).unwrap();
        write_tar(&mut f, &[("aether", &a), ("libxgboost.so", &b)]).unwrap();
        drop(f);
        // the system's tar (GNU or bsdtar) lists and unpacks it as written
        let o = std::process::Command::new("tar")
            .arg("-tvf")
            .arg(&t)
            .output()
            .unwrap();
        let list = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            list.contains("rwxr-xr-x") && list.contains("aether"),
            "{list}"
        );
        assert!(
            list.contains("1300") && list.contains("libxgboost.so"),
            "{list}"
        );
        let out = d.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let o = std::process::Command::new("tar")
            .arg("-xf")
            .arg(&t)
            .arg("-C")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            std::fs::read(out.join("libxgboost.so")).unwrap(),
            vec![7u8; 1300]
        );
        let run = std::process::Command::new(out.join("aether"))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&run.stdout), "hi\n");
    }

    #[test]
    fn manifests_run_one_shard_per_index() {
        let w = ShardWork {
            event_log: vec!["s3://logs/2026/".into(), "s3://logs/odd name/".into()],
            warehouse: "s3://wh/fleet".into(),
            shards: 64,
            threads_per_shard: 4,
        };
        let k: serde_json::Value = serde_yaml::from_str(
            k8s_job(&w, "acme/aether:1", 16, 8192, 3, "spark", "aether-fleet")
                .split_once('\n')
                .unwrap()
                .1,
        )
        .unwrap();
        assert_eq!(k["spec"]["completionMode"], "Indexed");
        assert_eq!(k["spec"]["completions"], 64);
        assert_eq!(k["spec"]["parallelism"], 16);
        assert_eq!(k["spec"]["backoffLimitPerIndex"], 2);
        let c = &k["spec"]["template"]["spec"]["containers"][0];
        let cmd: Vec<&str> = c["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(
            &cmd[cmd.len() - 2..],
            ["--shard", "$(JOB_COMPLETION_INDEX)/64"]
        );
        assert!(cmd.contains(&"s3://logs/odd name/"));
        assert_eq!(
            c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        );
        let b: serde_json::Value =
            serde_json::from_str(&batch_job(&w, "acme/aether:1", 8192, 3, "q", None)).unwrap();
        assert_eq!(b["submitJob"]["arrayProperties"]["size"], 64);
        assert_eq!(b["registerJobDefinition"]["retryStrategy"]["attempts"], 3);
        let line = b["registerJobDefinition"]["containerProperties"]["command"][2]
            .as_str()
            .unwrap();
        assert!(
            line.ends_with("--shard \"$AWS_BATCH_JOB_ARRAY_INDEX/64\"")
                && line.contains("'s3://logs/odd name/'"),
            "{line}"
        );
    }
}
