//! What the workflow tells while it works. The library never prints: it hands each event to
//! the workspace's [`Observer`]; the CLI prints them (notes and warnings to stderr, results to
//! stdout), a service could log or stream them. Without an observer they go to `tracing`.

use aether_core::history::{Run, TuneIteration};
use std::time::Duration;

/// One thing that happened.
#[derive(Debug)]
pub enum Event<'a> {
    /// Progress: what is being done, what was decided.
    Note(&'a str),
    /// Something went wrong that did not stop the work (it is also recorded where it matters).
    Warning(&'a str),
    /// A step (or job run) being waited for, each poll.
    StepState {
        step_id: &'a str,
        state: &'a str,
        elapsed: Duration,
    },
    /// A run ended and is recorded (its figures, logs and cost).
    RunFinished(&'a Run),
    /// A tune iteration is recorded.
    Iteration(&'a TuneIteration),
}

/// Receives the workflow's events.
pub trait Observer: Send + Sync {
    fn event(&self, e: &Event<'_>);
}

/// Events as `tracing` events (the default of a workspace opened by a library user).
pub struct Traced;

impl Observer for Traced {
    fn event(&self, e: &Event<'_>) {
        match e {
            Event::Note(m) => tracing::info!("{m}"),
            Event::Warning(m) => tracing::warn!("{m}"),
            Event::StepState {
                step_id,
                state,
                elapsed,
            } => tracing::debug!(step_id, state, elapsed_ms = elapsed.as_millis() as u64),
            Event::RunFinished(r) => tracing::info!(
                run_id = r.run_id,
                status = r.status.as_str(),
                duration_ms = r.duration_ms,
                "run finished"
            ),
            Event::Iteration(i) => tracing::info!(
                tune_id = i.tune_id,
                iteration = i.iteration,
                decision = i.decision.as_str(),
                "tune iteration"
            ),
        }
    }
}
