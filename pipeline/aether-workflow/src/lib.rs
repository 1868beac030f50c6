//! aether-workflow: the migration workflow as a library — what `aether cluster`, `submit`,
//! `profile`, `tune`, `validate` and `run` do, callable from a scheduler, a notebook or a
//! service as well as from the CLI.
//!
//! Owns: the [`Workspace`] (the settings file read once, the run platform resolved from
//! `--platform` > `core.run_on` > `core.selected_platform`, its backend, the job history);
//! GPU test clusters ([`cluster`]: created from a qualified shape, ended on failure or stop);
//! one run of a job ([`runs`]: its outputs sandboxed, submitted, waited for, its logs, figures
//! and cost recorded); [`submit`]; [`profile`] → a stored config; the [`tune`] loop;
//! [`validate`] a job's best run; [`qualify`] into the history (also from a step of the
//! platform, [`source`]); [`run`], the four phases in one call; EMR on EKS capacity ([`eks`]);
//! ids as printed ([`ids`]); the runs' figures as CloudWatch metrics and alarms
//! ([`monitoring`]); what an AWS account must offer before the first real cluster ([`doctor`]);
//! the job list and profiles fitted to a terminal's width ([`terminal`], [`profile::text`]);
//! cancellation ([`cancel`]: a token the caller trips, honoured at
//! every wait so that clusters and steps are still ended); progress as [`events`] (the library
//! never prints).
//!
//! Does not own: reading logs (aether-ingest), SQL (aether-engine), predictions and the
//! AutoTuner rules (aether-predict), the platform APIs (aether-platform), the data checks
//! (aether-validate), rendering (aether-report and the CLI), the settings and history stores
//! (aether-core).
//!
//! ```no_run
//! use aether_workflow::{Workspace, WorkspaceOptions};
//! use aether_workflow::submit::Target;
//! use aether_workflow::tune::{TuneEnd, TuneParams, TuneRequest, tune};
//!
//! // the settings say where runs go (core.selected_platform / core.run_on)
//! let ws = Workspace::open(&WorkspaceOptions::default())?;
//! let req = TuneRequest {
//!     job_id: 12,
//!     target: Target::Shape { shape_id: 3, config_file: None, keep_cluster: false },
//!     params: TuneParams::new(3, None, 5.0)?,
//!     timeout_s: 3600,
//!     job: None,
//!     allow_output_overwrite: false,
//! };
//! if let TuneEnd::Done { best_run, reason } = tune(&ws, &req)? {
//!     println!("best run {best_run:?}: {reason}");
//! }
//! # Ok::<(), aether_workflow::error::WorkflowError>(())
//! ```

pub mod cancel;
pub mod cluster;
pub mod doctor;
pub mod eks;
pub mod error;
pub mod events;
pub mod fleet;
pub mod glibc;
pub mod ids;
pub mod lock;
pub mod model;
pub mod monitoring;
pub mod profile;
pub mod props;
pub mod qualify;
pub mod reconcile;
pub mod run;
pub mod runs;
pub mod source;
pub mod submit;
pub mod terminal;
pub mod tune;
pub mod validate;
pub mod workspace;

pub use aether_core::RunOn;
pub use cancel::{Cancel, Stop};
pub use error::{Result, WorkflowError};
pub use events::{Event, Observer};
pub use workspace::{PlatformSource, Workspace, WorkspaceOptions};
