//! The selection flags every command that reads logs takes (`aether_ingest::select`): the
//! reference qualification's filters, in this project's spelling with the reference's as an
//! alias.

use aether_ingest::select::{AppName, Criteria, Selection, SparkProperty, parse_utc};

#[derive(clap::Args, Clone, Default)]
#[command(
    next_help_heading = "Selecting logs and apps",
    rename_all = "snake_case"
)]
pub struct SelectArgs {
    /// The N newest or oldest: N-newest / N-oldest (by application start), N-newest-filesystem /
    /// N-oldest-filesystem (by file time, before any log is opened), N-newest-per-app-name /
    /// N-oldest-per-app-name (N of each app name).
    #[arg(long, alias = "filter-criteria", value_name = "CRITERIA")]
    filter_criteria: Option<Criteria>,
    /// Apps whose name contains NAME, or matches it whole as a regular expression; ~NAME: every
    /// other app.
    #[arg(
        long,
        alias = "application-name",
        value_name = "NAME",
        allow_hyphen_values = true
    )]
    application_name: Option<AppName>,
    /// Apps started within this period back from now: N followed by min, h, d (the default), w
    /// or m (months), e.g. 7d.
    #[arg(long, alias = "start-app-time", value_name = "PERIOD", value_parser = aether_ingest::select::since_now)]
    start_app_time: Option<i64>,
    /// Logs whose file (or log folder) name contains TEXT (before any log is opened).
    #[arg(long, alias = "match-event-logs", value_name = "TEXT")]
    match_event_logs: Option<String>,
    /// Apps submitted by this user (the application start's User contains it).
    #[arg(long, alias = "user-name", value_name = "USER")]
    user_name: Option<String>,
    /// Apps that set KEY (to VALUE) at launch; repeatable: any of them.
    #[arg(long, alias = "spark-property", value_name = "KEY[:VALUE]")]
    spark_property: Vec<SparkProperty>,
    /// Logs of at least this stored size: N with b, k, m (the default) or g.
    #[arg(long, alias = "min-event-log-size", value_name = "SIZE", value_parser = log_size)]
    min_event_log_size: Option<u64>,
    /// Logs of at most this stored size: N with b, k, m (the default) or g.
    #[arg(long, alias = "max-event-log-size", value_name = "SIZE", value_parser = log_size)]
    max_event_log_size: Option<u64>,
    /// Logs whose file time is at or after this: yyyy-MM-dd HH:mm:ss (UTC) or yyyy-MM-dd.
    #[arg(long, alias = "fs-start-time", value_name = "TIME", value_parser = parse_utc)]
    fs_start_time: Option<i64>,
    /// Logs whose file time is at or before this: yyyy-MM-dd HH:mm:ss (UTC) or yyyy-MM-dd.
    #[arg(long, alias = "fs-end-time", value_name = "TIME", value_parser = parse_utc)]
    fs_end_time: Option<i64>,
    /// Only the logs directly in the folders given, not in their subfolders (a rolling or
    /// Databricks log folder in them still counts).
    #[arg(long, alias = "no-recursion")]
    no_recursion: bool,
    /// An app passing any one of --application_name, --user_name, --spark_property and
    /// --start_app_time is selected (default: all of them).
    #[arg(long, conflicts_with = "all")]
    any: bool,
    /// An app must pass every one of those filters (the default).
    #[arg(long)]
    all: bool,
}

impl SelectArgs {
    pub fn selection(&self) -> Selection {
        Selection {
            match_logs: self.match_event_logs.clone(),
            min_bytes: self.min_event_log_size,
            max_bytes: self.max_event_log_size,
            fs_start_ms: self.fs_start_time,
            fs_end_ms: self.fs_end_time,
            no_recursion: self.no_recursion,
            criteria: self.filter_criteria,
            app_name: self.application_name.clone(),
            started_since_ms: self.start_app_time,
            user: self.user_name.clone(),
            spark_properties: self.spark_property.clone(),
            any: self.any,
        }
    }
}

/// An event-log size as the reference reads it: bytes with b, k, m or g (binary), m when bare.
fn log_size(text: &str) -> Result<u64, String> {
    aether_udfs::parse_size::parse(text, "m")
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(|| {
            format!("{text:?}: expected a size such as 512k, 20m (the default unit) or 1g")
        })
}

/// `--dry_run`: the logs the selection picks and leaves out (`aether_engine::listing`), printed;
/// the totals on stderr. Nothing is read past each log's first events, nothing written.
pub fn dry_run(
    inputs: &[String],
    opts: &aether_ingest::IngestOptions,
    format: crate::Format,
) -> anyhow::Result<std::process::ExitCode> {
    let rt = aether_ingest::io_runtime();
    let found = aether_ingest::find_logs(inputs, opts, &rt, true);
    let (batch, totals) = aether_engine::listing::dry_run(&found)?;
    println!(
        "{}",
        aether_engine::render(&batch.schema(), &[batch], format.into())?
    );
    eprintln!("{totals}");
    Ok(std::process::ExitCode::SUCCESS)
}
