//! aether-core: what every phase shares — the settings file (`config`) and the job history
//! (`history`, SQLite).
//!
//! Owns: reading, validating and writing `~/.aether/config.toml` (or `$AETHER_HOME/config.toml`,
//! or a file given with `--config`), key by key with a clear error for unknown keys and bad
//! values.
//!
//! Does not own: what the settings drive (the phases read them).

pub mod config;

pub use config::{Config, ConfigError, ConfigFile};
pub mod history;

pub use history::{History, HistoryError};
