//! Progress of long reads on stderr: logs done / total, MB/s and ETA, drawn only when stderr is
//! a terminal and `--quiet` is not given (so pipes, scripts and CI logs stay clean).

use aether_ingest::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The bar is drawn only for reads that last longer than this: a quick read prints nothing.
const SHOW_AFTER: Duration = Duration::from_millis(300);

/// Whether progress is drawn: stderr is a terminal and not `--quiet`.
pub fn wanted(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// A progress display polling a [`Progress`]; cleared when dropped.
pub struct Display {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Display {
    /// Start drawing `progress` (what: "reading", "qualifying") on stderr.
    pub fn start(progress: Arc<Progress>, what: &'static str) -> Display {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("aether-progress".into())
            .spawn(move || draw(&progress, what, &flag))
            .ok();
        Display { stop, thread }
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn draw(progress: &Progress, what: &str, stop: &AtomicBool) {
    let t0 = std::time::Instant::now();
    let mut bar: Option<ProgressBar> = None;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        if bar.is_none() && t0.elapsed() < SHOW_AFTER {
            continue;
        }
        let (logs_done, logs_total, bytes_done, bytes_total) = progress.snapshot();
        if bar.is_none() && logs_total == 0 {
            continue; // no log listed yet (or none to read): nothing to show
        }
        let pb = bar.get_or_insert_with(|| {
            let pb = ProgressBar::with_draw_target(
                Some(bytes_total.max(1)),
                ProgressDrawTarget::stderr_with_hz(10),
            );
            let style = ProgressStyle::with_template(
                "{prefix} [{bar:30}] {msg} · {binary_bytes}/{binary_total_bytes} · {binary_bytes_per_sec} · ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
            pb.set_style(style);
            pb.set_prefix(what.to_string());
            pb
        });
        pb.set_length(bytes_total.max(1));
        pb.set_position(bytes_done.min(bytes_total));
        pb.set_message(format!("{logs_done}/{logs_total} logs"));
    }
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }
}
