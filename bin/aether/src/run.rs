//! `aether run`: the whole workflow in one command. Qualify the logs; for each app recommended
//! for the GPU: tune it on a cluster of its recommended shape (made for the session and ended
//! with it, whatever happens), validate its best run against the CPU run, then report. Each
//! phase is this same binary's own command (`qualify`, `tune`, `validate`), so it behaves
//! exactly as when run by hand; the phases' results are in the job history, so a second `run`
//! after an interruption continues there: a log already qualified, a job whose tune session is
//! done, a best run already validated are not done again. A signal is passed on to the phase
//! running (which cancels its run and ends its cluster) and stops the workflow.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use aether_core::{ConfigFile, History};
use anyhow::{Result, anyhow, bail};
use clap::Args;

use crate::optimize::{PlatformArg, load_settings, runtime};

#[derive(Args)]
pub struct RunArgs {
    /// CPU event logs: files, directories, globs, .txt lists of paths, s3:// URLs.
    #[arg(long = "event_log", alias = "event-log", num_args = 1.., required = true, action = clap::ArgAction::Append)]
    event_log: Vec<String>,
    /// Where the GPU test runs go.
    #[arg(long, value_enum, default_value_t = PlatformArg::Local)]
    backend: PlatformArg,
    /// Tuning runs per job before it may stop for lack of improvement.
    #[arg(
        long = "min_tuning_iterations",
        alias = "min-tuning-iterations",
        default_value_t = 3
    )]
    min_tuning_iterations: i64,
    /// Never more tuning runs per job than this (default: min + 3).
    #[arg(long = "max_tuning_iterations", alias = "max-tuning-iterations")]
    max_tuning_iterations: Option<i64>,
    /// Give up on one run after this many seconds.
    #[arg(long = "timeout_s", alias = "timeout-s")]
    timeout_s: Option<u64>,
    /// Create paid resources (EMR clusters) without asking.
    #[arg(long)]
    yes: bool,
    /// A qualify setting, e.g. --set gpu_speedup_min=1.5 (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Write the reports here at the end: overview.html and job-<id>.html for each job.
    #[arg(long)]
    output: Option<PathBuf>,
    /// The settings file (default: $AETHER_HOME/config.toml, else ~/.aether/config.toml).
    #[arg(long)]
    config: Option<PathBuf>,
}

/// The signal received (0: none) and the phase's process to pass it on to.
#[derive(Default)]
struct Signals {
    got: AtomicI32,
    child: AtomicI32,
}

fn watch_signals(rt: &tokio::runtime::Runtime) -> Arc<Signals> {
    let s = Arc::new(Signals::default());
    let w = s.clone();
    rt.spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        loop {
            let sig = tokio::select! {
                _ = int.recv() => libc::SIGINT,
                _ = term.recv() => libc::SIGTERM,
            };
            w.got.store(sig, Ordering::SeqCst);
            let pid = w.child.load(Ordering::SeqCst);
            if pid > 0 {
                // SAFETY: kill(2) with a pid this process started and a valid signal number
                unsafe {
                    libc::kill(pid, sig);
                }
            }
        }
    });
    s
}

struct Phases<'a> {
    exe: PathBuf,
    a: &'a RunArgs,
    sig: Arc<Signals>,
}

impl Phases<'_> {
    /// Run one phase (`aether ARGS`) to its end; `Err(code)` when a signal stopped the workflow.
    fn run(&self, args: &[String]) -> Result<std::result::Result<i32, ExitCode>> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(args);
        if let Some(c) = &self.a.config {
            cmd.arg("--config").arg(c);
        }
        // its own process group: a terminal's Ctrl-C reaches this process, which passes it on
        // once (the phase then cancels its run and ends its cluster)
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| anyhow!("cannot start {}: {e}", self.exe.display()))?;
        self.sig.child.store(child.id() as i32, Ordering::SeqCst);
        // a signal that came before the phase started is passed on now
        let early = self.sig.got.load(Ordering::SeqCst);
        if early > 0 {
            // SAFETY: as in watch_signals
            unsafe {
                libc::kill(child.id() as i32, early);
            }
        }
        let status = child.wait()?;
        self.sig.child.store(0, Ordering::SeqCst);
        let got = self.sig.got.load(Ordering::SeqCst);
        if got > 0 {
            return Ok(Err(ExitCode::from(128 + got as u8)));
        }
        Ok(Ok(status.code().unwrap_or(2)))
    }
}

pub fn cmd_run(a: RunArgs) -> Result<ExitCode> {
    let cfg = load_settings(a.config.as_deref())?;
    if a.min_tuning_iterations < 1 {
        bail!("--min_tuning_iterations must be at least 1");
    }
    let rt = runtime()?;
    let sig = watch_signals(&rt);
    let p = Phases {
        exe: std::env::current_exe()?,
        a: &a,
        sig,
    };
    let stopped = |code: ExitCode| {
        eprintln!("run: stopped by a signal; `aether run` again continues from the history");
        Ok(code)
    };

    // 1. qualify the logs the history does not know yet
    let (logs, errors) = aether_ingest::discover(&a.event_log, &Default::default(), &rt);
    for e in &errors {
        eprintln!("warning: {}: {}", e.path, e.error);
    }
    if logs.is_empty() {
        bail!("no event log found in {}", a.event_log.join(" "));
    }
    let canonical = |d: &str| {
        std::fs::canonicalize(d)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| d.to_string())
    };
    let wanted: BTreeSet<String> = logs.iter().map(|l| canonical(&l.display)).collect();
    let known = |cfg: &ConfigFile| -> Result<BTreeSet<String>> {
        Ok(History::open(&cfg.history_db())?
            .list()?
            .into_iter()
            .filter(|j| j.category.is_some())
            .map(|j| j.event_log)
            .collect())
    };
    let done = known(&cfg)?;
    let new: Vec<&String> = wanted.iter().filter(|l| !done.contains(*l)).collect();
    eprintln!(
        "run [1/4] qualify: {} log(s), {} already qualified",
        wanted.len(),
        wanted.len() - new.len()
    );
    if !new.is_empty() {
        let mut args: Vec<String> = vec!["qualify".into(), "--event_log".into()];
        args.extend(new.iter().map(|l| l.to_string()));
        for s in &a.set {
            args.push("--set".into());
            args.push(s.clone());
        }
        match p.run(&args)? {
            Err(code) => return stopped(code),
            Ok(0) => {}
            Ok(c) => eprintln!("run: qualify exited {c}; going on with the logs it recorded"),
        }
    }

    // 2. the jobs of these logs that qualify recommends for the GPU
    let h = History::open(&cfg.history_db())?;
    let jobs: Vec<_> = h
        .list()?
        .into_iter()
        .filter(|j| wanted.contains(&j.event_log))
        .collect();
    let (gpu, cpu): (Vec<_>, Vec<_>) = jobs
        .into_iter()
        .partition(|j| aether_report::model::recommended_by_qualify(j.category.as_deref()));
    for j in &cpu {
        eprintln!(
            "run: job {} ({}) stays on the CPU: {}",
            j.job_id,
            j.app_name,
            j.category.as_deref().unwrap_or("not qualified")
        );
    }
    if gpu.is_empty() {
        eprintln!("run: no job recommended for the GPU; nothing to tune");
    }
    // paid resources: asked for, unless --yes
    if a.backend != PlatformArg::Local && !gpu.is_empty() && !a.yes {
        let msg = if a.backend == PlatformArg::Emr {
            format!(
                "run: this creates up to {} EMR GPU cluster(s), one per job, each terminated after its runs",
                gpu.len()
            )
        } else {
            format!(
                "run: this starts GPU job runs on EMR on EKS for {} job(s) (Karpenter launches their \
                 nodes and removes them after consolidateAfter)",
                gpu.len()
            )
        };
        if !std::io::stdin().is_terminal() {
            bail!("{msg}; pass --yes to create them");
        }
        eprint!("{msg}. Go on? [y/N] ");
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            eprintln!("run: nothing created");
            return Ok(ExitCode::from(1));
        }
    }
    let platform = match a.backend {
        PlatformArg::Local => "local",
        PlatformArg::Emr => "emr",
        PlatformArg::EmrEks => "emr-eks",
    };
    let mut failed = 0;
    for (i, j) in gpu.iter().enumerate() {
        let tag = format!("job {} ({}) {}/{}", j.job_id, j.app_name, i + 1, gpu.len());
        let h = History::open(&cfg.history_db())?;
        // 3. tune, unless a session of it is done
        let tuned = h
            .tune_sessions(j.job_id)?
            .iter()
            .any(|s| s.status == "DONE");
        if tuned {
            eprintln!("run [2/4] tune {tag}: done before, not run again");
        } else {
            let shape = h
                .latest_qualification_id(j.job_id)?
                .ok_or_else(|| anyhow!("job {} has no qualification (its shape)", j.job_id))?;
            eprintln!(
                "run [2/4] tune {tag} on a {platform} cluster of shape {shape} (made for it, ended after it)"
            );
            let mut args: Vec<String> = [
                "tune",
                "--aether_job_id",
                &j.job_id.to_string(),
                "--platform",
                platform,
                "--cluster_shape_id",
                &shape.to_string(),
                "--min_tuning_iterations",
                &a.min_tuning_iterations.to_string(),
            ]
            .map(String::from)
            .to_vec();
            if let Some(m) = a.max_tuning_iterations {
                args.extend(["--max_tuning_iterations".into(), m.to_string()]);
            }
            if let Some(t) = a.timeout_s {
                args.extend(["--timeout_s".into(), t.to_string()]);
            }
            drop(h);
            match p.run(&args)? {
                Err(code) => return stopped(code),
                Ok(0) => {}
                Ok(c) => {
                    eprintln!("run: tune of {tag} exited {c}: no GPU run to validate");
                    failed += 1;
                    continue;
                }
            }
        }
        // 4. validate the best run, unless it is validated already
        let h = History::open(&cfg.history_db())?;
        let Some(best) = aether_core::history::best_gpu_run(&h.runs(j.job_id)?).cloned() else {
            eprintln!("run [3/4] validate {tag}: no successful GPU run");
            failed += 1;
            continue;
        };
        if let Some(v) = h
            .validations(j.job_id)?
            .into_iter()
            .rev()
            .find(|v| v.gpu_run_id == Some(best.run_id))
        {
            eprintln!(
                "run [3/4] validate {tag}: run {} was validated before ({})",
                best.run_id, v.verdict
            );
            failed += (v.verdict == "FAIL") as usize;
            continue;
        }
        drop(h);
        eprintln!("run [3/4] validate {tag}: run {}", best.run_id);
        let args: Vec<String> = [
            "validate",
            "--aether_job_id",
            &j.job_id.to_string(),
            "--run_id",
            &best.run_id.to_string(),
        ]
        .map(String::from)
        .to_vec();
        match p.run(&args)? {
            Err(code) => return stopped(code),
            Ok(0) => {}
            Ok(c) => {
                eprintln!("run: validation of {tag} exited {c}");
                failed += 1;
            }
        }
    }

    // 5. the report
    eprintln!("run [4/4] report");
    let h = History::open(&cfg.history_db())?;
    let o = aether_report::model::overview_of(&h, |j| wanted.contains(&j.event_log))?;
    println!("{}", aether_report::render::jobs_text(&o).trim_end());
    if let Some(dir) = &a.output {
        std::fs::create_dir_all(dir)?;
        let hist = cfg.history_db().display().to_string();
        let page = aether_report::html::overview(&o, &hist, aether_report::html::Mode::File);
        std::fs::write(dir.join("overview.html"), page)?;
        for j in &o.jobs {
            if let Some(d) = aether_report::model::job(&h, j.job_id)? {
                let page = aether_report::html::job(
                    &d,
                    o.generated_ms,
                    &hist,
                    aether_report::html::Mode::File,
                );
                std::fs::write(dir.join(format!("job-{}.html", j.job_id)), page)?;
            }
        }
        eprintln!("run: reports in {}", dir.display());
    }
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
