//! One writer per job: `tune`, `run` and `submit` take the job in the history before they
//! start a run, so that two of them never run two steps for one iteration. A second command
//! on the same job refuses, naming the process that holds it; the lock of a process that is
//! gone (killed) is taken over, and said.

use crate::error::{Result, bail};
use crate::workspace::Workspace;
use aether_core::History;
use aether_core::intent::Locked;
use std::path::PathBuf;

/// A job held by this process, given back when dropped (unless an outer command of this
/// process held it first).
pub struct JobGuard {
    db: PathBuf,
    job_id: i64,
    owner: String,
    release: bool,
}

impl Drop for JobGuard {
    fn drop(&mut self) {
        if self.release
            && let Ok(mut h) = History::open(&self.db)
        {
            let _ = h.unlock_job(self.job_id, &self.owner);
        }
    }
}

/// The host and pid of an owner, as told.
fn who(owner: &str) -> (String, String) {
    aether_core::owner::parse(owner)
        .map(|(h, p, _)| (h.to_string(), p.to_string()))
        .unwrap_or_else(|| (owner.to_string(), "?".into()))
}

/// Take job `job_id` for `command` (e.g. `aether tune`), or say who has it.
pub fn lock_job(ws: &Workspace, h: &mut History, job_id: i64, command: &str) -> Result<JobGuard> {
    let owner = aether_core::owner::me();
    match h.lock_job(job_id, &owner, command)? {
        Locked::Acquired {
            took_over,
            reentrant,
        } => {
            if let Some(l) = took_over {
                let (host, pid) = who(&l.owner);
                ws.note(&format!(
                    "job {job_id} was held by `{}` (pid {pid} on {host}), which is gone: taken over",
                    l.command
                ));
            }
            Ok(JobGuard {
                db: ws.history_path(),
                job_id,
                owner,
                release: !reentrant,
            })
        }
        Locked::Held(l) => {
            let (host, pid) = who(&l.owner);
            let secs = (aether_platform::now_ms() - l.since_ms).max(0) / 1000;
            bail!(
                "job {job_id} is busy: `{}` (pid {pid} on {host}) has been running on it for {secs} s; \
                 wait for it to end, or stop it (a killed process's hold is taken over by the next command)",
                l.command
            )
        }
    }
}
