//! Cancellation: a token the caller trips (the CLI on Ctrl-C or SIGTERM, a service on a
//! request) and the workflow honours at every wait — a cluster being created is ended, a step
//! being waited for is cancelled, a tune session is recorded as interrupted.

use std::sync::{Arc, Mutex};

/// Why the work was stopped; the CLI exits 128 + the signal's number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Ctrl-C (SIGINT), or a caller's stop.
    Int,
    /// SIGTERM.
    Term,
}

impl Stop {
    /// The exit status of a command stopped so: 130 (SIGINT) or 143 (SIGTERM).
    pub fn exit_status(self) -> u8 {
        match self {
            Stop::Int => 130,
            Stop::Term => 143,
        }
    }

    /// The signal's name, as the history records it.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Int => "SIGINT",
            Stop::Term => "SIGTERM",
        }
    }
}

#[derive(Default)]
struct Inner {
    stop: Mutex<Option<Stop>>,
    notify: tokio::sync::Notify,
}

/// A cancellation token: cheap to clone, every clone sees the same stop.
#[derive(Clone, Default)]
pub struct Cancel(Arc<Inner>);

impl Cancel {
    /// A token nobody has tripped.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Trip the token (the first stop is kept); every waiter wakes.
    pub fn cancel(&self, why: Stop) {
        if let Ok(mut s) = self.0.stop.lock() {
            s.get_or_insert(why);
        }
        self.0.notify.notify_waiters();
    }

    /// The stop, once tripped.
    pub fn stopped(&self) -> Option<Stop> {
        self.0.stop.lock().ok().and_then(|s| *s)
    }

    /// Resolves when the token is tripped (at once if it already is).
    pub async fn cancelled(&self) -> Stop {
        loop {
            let n = self.0.notify.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if let Some(s) = self.stopped() {
                return s;
            }
            n.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tripped_token_wakes_its_waiters_and_keeps_the_first_stop() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let c = Cancel::new();
        assert_eq!(c.stopped(), None);
        let waiter = c.clone();
        let got = rt.block_on(async move {
            let w = tokio::spawn(async move { waiter.cancelled().await });
            tokio::task::yield_now().await;
            c.cancel(Stop::Term);
            c.cancel(Stop::Int);
            (w.await.unwrap(), c.stopped())
        });
        assert_eq!(got, (Stop::Term, Some(Stop::Term)));
        // tripped before anyone waits: resolves at once
        let c = Cancel::new();
        c.cancel(Stop::Int);
        assert_eq!(rt.block_on(c.cancelled()), Stop::Int);
        assert_eq!(Stop::Int.exit_status(), 130);
        assert_eq!(Stop::Term.exit_status(), 143);
    }
}
