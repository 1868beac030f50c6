//! The CLI's side of the workflow library: the `--config` / `--platform` flags every workflow
//! command takes, the workspace they open, its events printed (notes and warnings to stderr,
//! results to stdout), and Ctrl-C / SIGTERM turned into the workspace's stop.

use aether_workflow::submit::Target;
use aether_workflow::{Event, Observer, RunOn, Stop, Workspace, WorkspaceOptions};
use anyhow::Result;
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where the settings are and where runs go.
#[derive(Args, Clone, Default)]
pub struct WsArgs {
    /// The settings file (default: $AETHER_HOME/config.toml, else ~/.aether/config.toml).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Where test clusters and runs go: local, emr or emr-eks (default: core.run_on, else the
    /// platform of core.selected_platform).
    #[arg(long, global = true, alias = "backend", value_parser = parse_run_on)]
    pub platform: Option<RunOn>,
}

/// The settings file only (commands that run nothing on a platform).
#[derive(Args, Clone, Default)]
pub struct ConfigArg {
    /// The settings file (default: $AETHER_HOME/config.toml, else ~/.aether/config.toml).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
}

impl ConfigArg {
    fn ws(&self) -> WsArgs {
        WsArgs {
            config: self.config.clone(),
            platform: None,
        }
    }

    /// The workspace of the settings (its history, its platforms' settings).
    pub fn open(&self) -> Result<Workspace> {
        self.ws().open()
    }

    /// As [`WsArgs::open_stoppable`].
    pub fn open_stoppable(&self) -> Result<Workspace> {
        self.ws().open_stoppable()
    }
}

/// Where a submit's or a tune session's runs go: a running cluster, or one made for them.
#[derive(Args, Clone)]
pub struct TargetArgs {
    /// The cluster to run on (its id names its platform: j-… EMR, eks-… EMR on EKS, lc-… local).
    #[arg(
        long = "cluster_id",
        alias = "cluster-id",
        required_unless_present = "cluster_shape_id"
    )]
    pub cluster_id: Option<String>,
    /// Instead of --cluster_id: make a cluster of this shape for the runs, terminated after
    /// them (also when they fail or are interrupted) unless --keep_cluster.
    #[arg(
        long = "cluster_shape_id",
        alias = "cluster-shape-id",
        conflicts_with = "cluster_id",
        value_parser = id
    )]
    pub cluster_shape_id: Option<i64>,
    /// Keep the cluster made for the runs (--cluster_shape_id) after them.
    #[arg(long = "keep_cluster", alias = "keep-cluster")]
    pub keep_cluster: bool,
}

impl TargetArgs {
    /// The target (`config_file`: the made cluster's, EMR).
    pub fn target(self, config_file: Option<PathBuf>) -> Result<Target> {
        Ok(match (self.cluster_id, self.cluster_shape_id) {
            (Some(id), _) => Target::Cluster(id),
            (None, Some(shape_id)) => Target::Shape {
                shape_id,
                config_file,
                keep_cluster: self.keep_cluster,
            },
            (None, None) => anyhow::bail!(
                "give --cluster_id (a running cluster) or --cluster_shape_id (a cluster made for \
                 the runs and terminated after them)"
            ),
        })
    }
}

fn parse_run_on(s: &str) -> Result<RunOn, String> {
    RunOn::parse(s).ok_or_else(|| format!("{s:?}: expected local, emr or emr-eks"))
}

/// An id as printed (`12`, `aether-12`).
pub fn id(s: &str) -> Result<i64, String> {
    aether_workflow::ids::parse_id(s)
}

impl WsArgs {
    /// The workspace of a command that reads settings and the history only.
    pub fn open(&self) -> Result<Workspace> {
        let ws = Workspace::open(&WorkspaceOptions {
            config: self.config.clone(),
            platform: self.platform,
        })?;
        Ok(ws.with_observer(Arc::new(Printed::default())))
    }

    /// The workspace of a command that starts clusters or runs: a first Ctrl-C (or SIGTERM)
    /// stops the work cleanly (its run cancelled, its cluster ended), a second one at once.
    pub fn open_stoppable(&self) -> Result<Workspace> {
        let ws = self.open()?;
        let cancel = ws.cancel().clone();
        ws.runtime().spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return;
            };
            loop {
                let s = tokio::select! {
                    _ = int.recv() => Stop::Int,
                    _ = term.recv() => Stop::Term,
                };
                if cancel.stopped().is_some() {
                    eprintln!("{}: stopping now", s.name());
                    std::process::exit(s.exit_status() as i32);
                }
                cancel.cancel(s);
            }
        });
        Ok(ws)
    }
}

/// The exit status of a stopped command.
pub fn stopped(s: Stop) -> ExitCode {
    ExitCode::from(s.exit_status())
}

/// Events on the terminal: a step's state on one line rewritten in place on a terminal, a line
/// per change in a log file.
#[derive(Default)]
pub struct Printed {
    mid_line: AtomicBool,
    last_state: std::sync::Mutex<Option<String>>,
}

impl Printed {
    fn end_line(&self) {
        if self.mid_line.swap(false, Ordering::SeqCst) {
            eprintln!();
        }
    }
}

impl Observer for Printed {
    fn event(&self, e: &Event<'_>) {
        match e {
            Event::StepState {
                step_id,
                state,
                elapsed,
            } => {
                let line = format!("  {state} {:>5.0} s  step {step_id}", elapsed.as_secs_f64());
                if std::io::stderr().is_terminal() {
                    eprint!("\r{line}\x1b[K");
                    self.mid_line.store(true, Ordering::SeqCst);
                } else if let Ok(mut last) = self.last_state.lock()
                    && last.as_deref() != Some(*state)
                {
                    eprintln!("{line}");
                    *last = Some(state.to_string());
                }
            }
            Event::Note(m) => {
                self.end_line();
                eprintln!("{m}");
            }
            Event::Warning(m) => {
                self.end_line();
                eprintln!("warning: {m}");
            }
            Event::RunFinished(run) => {
                self.end_line();
                if let Ok(mut last) = self.last_state.lock() {
                    *last = None;
                }
                println!("{}", aether_report::render::run_line(run));
            }
            Event::Iteration(it) => {
                self.end_line();
                println!("{}", aether_report::render::iteration_line(it));
            }
        }
    }
}
