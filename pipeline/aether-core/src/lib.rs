//! aether-core: what every phase shares — the settings file (`config`) and the job history
//! (`history`, SQLite) — the diagnostics set-up both binaries (`aether`, `aether-cluster`) use,
//! and text fitted to the terminal's width (`table`: the CLI's tables and prose).
//!
//! Owns: reading, validating and writing `~/.aether/config.toml` (or `$AETHER_HOME/config.toml`,
//! or a file given with `--config`), key by key with a clear error for unknown keys and bad
//! values.
//!
//! Does not own: what the settings drive (the phases read them).

pub mod config;
pub mod cost;

pub use config::{Config, ConfigError, ConfigFile, Platform, RunOn};
pub mod history;

pub use history::{History, HistoryError};
pub mod intent;
pub mod owner;
pub mod table;

/// Send `tracing` diagnostics to stderr, filtered by `AETHER_LOG` (e.g. `AETHER_LOG=debug`,
/// `AETHER_LOG=aether_ingest=trace`); warnings only by default. Safe to call more than once.
pub fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("AETHER_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
