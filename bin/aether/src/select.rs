//! The selection flags every command that reads logs takes (`aether_ingest::select`): the
//! reference qualification's filters, in this project's spelling with the reference's as an
//! alias.

use aether_ingest::select::{AppName, Criteria, Selection, SparkProperty};

#[derive(clap::Args, Clone, Default)]
#[command(next_help_heading = "Selecting logs and apps")]
pub struct SelectArgs {
    /// The N newest or oldest: N-newest / N-oldest (by application start), N-newest-filesystem /
    /// N-oldest-filesystem (by file time, before any log is opened), N-newest-per-app-name /
    /// N-oldest-per-app-name (N of each app name).
    #[arg(
        long = "filter_criteria",
        alias = "filter-criteria",
        value_name = "CRITERIA"
    )]
    filter_criteria: Option<Criteria>,
    /// Apps whose name contains NAME, or matches it whole as a regular expression; ~NAME: every
    /// other app.
    #[arg(
        long = "application_name",
        alias = "application-name",
        value_name = "NAME",
        allow_hyphen_values = true
    )]
    application_name: Option<AppName>,
    /// Apps started within this period back from now: N followed by min, h, d (the default), w
    /// or m (months), e.g. 7d.
    #[arg(long = "start_app_time", alias = "start-app-time", value_name = "PERIOD", value_parser = since)]
    start_app_time: Option<i64>,
    /// Logs whose file (or log folder) name contains TEXT (before any log is opened).
    #[arg(
        long = "match_event_logs",
        alias = "match-event-logs",
        value_name = "TEXT"
    )]
    match_event_logs: Option<String>,
    /// Apps submitted by this user (the application start's User contains it).
    #[arg(long = "user_name", alias = "user-name", value_name = "USER")]
    user_name: Option<String>,
    /// Apps that set KEY (to VALUE) at launch; repeatable: any of them.
    #[arg(
        long = "spark_property",
        alias = "spark-property",
        value_name = "KEY[:VALUE]"
    )]
    spark_property: Vec<SparkProperty>,
    /// Logs of at least this stored size: N with b, k, m (the default) or g.
    #[arg(long = "min_event_log_size", alias = "min-event-log-size", value_name = "SIZE", value_parser = log_size)]
    min_event_log_size: Option<u64>,
    /// Logs of at most this stored size: N with b, k, m (the default) or g.
    #[arg(long = "max_event_log_size", alias = "max-event-log-size", value_name = "SIZE", value_parser = log_size)]
    max_event_log_size: Option<u64>,
    /// Logs whose file time is at or after this: yyyy-MM-dd HH:mm:ss (UTC) or yyyy-MM-dd.
    #[arg(long = "fs_start_time", alias = "fs-start-time", value_name = "TIME", value_parser = aether_ingest::select::parse_utc)]
    fs_start_time: Option<i64>,
    /// Logs whose file time is at or before this: yyyy-MM-dd HH:mm:ss (UTC) or yyyy-MM-dd.
    #[arg(long = "fs_end_time", alias = "fs-end-time", value_name = "TIME", value_parser = aether_ingest::select::parse_utc)]
    fs_end_time: Option<i64>,
    /// Only the logs directly in the folders given, not in their subfolders (a rolling or
    /// Databricks log folder in them still counts).
    #[arg(long = "no_recursion", alias = "no-recursion")]
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

/// `--start_app_time`'s period, as the time it starts from now.
fn since(text: &str) -> Result<i64, String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    aether_ingest::select::period_start(text, now)
}

/// An event-log size as the reference reads it: bytes with b, k, m or g (binary), m when bare.
fn log_size(text: &str) -> Result<u64, String> {
    aether_udfs::parse_size::parse(text, "m")
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(|| {
            format!("{text:?}: expected a size such as 512k, 20m (the default unit) or 1g")
        })
}

/// `--dry_run`: the logs and apps the selection picks and those it leaves out (with why), their
/// sizes, codecs, file times and first events; nothing is read past each log's first events and
/// nothing is written. The totals go to stderr.
pub fn dry_run(
    inputs: &[String],
    opts: &aether_ingest::IngestOptions,
    format: crate::Format,
) -> anyhow::Result<std::process::ExitCode> {
    use datafusion::arrow::array::{ArrayRef, StringArray, UInt64Array};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use std::sync::Arc;
    let rt = aether_ingest::io_runtime();
    let found = aether_ingest::find_logs(inputs, opts, &rt, true);
    let utc = |t: Option<i64>| t.map(aether_ingest::select::format_utc);
    #[derive(Default)]
    struct Cols {
        log: Vec<String>,
        selected: Vec<&'static str>,
        reason: Vec<String>,
        files: Vec<u64>,
        bytes: Vec<u64>,
        codec: Vec<Option<String>>,
        file_time: Vec<Option<String>>,
        app_id: Vec<Option<String>>,
        app_name: Vec<Option<String>>,
        start: Vec<Option<String>>,
        user: Vec<Option<String>>,
        spark: Vec<Option<String>>,
        engine: Vec<Option<String>>,
    }
    let mut c = Cols::default();
    let push_head = |c: &mut Cols, h: Option<&aether_ingest::Head>| {
        c.app_id.push(h.and_then(|h| h.app_id.clone()));
        c.app_name.push(h.and_then(|h| h.app_name.clone()));
        c.start.push(utc(h.and_then(|h| h.start_ms)));
        c.user.push(h.and_then(|h| h.user.clone()));
        c.spark.push(h.and_then(|h| h.spark_version.clone()));
        c.engine.push(h.map(|h| h.engine().to_string()));
    };
    let mut read_bytes = 0;
    for log in &found.logs {
        let head = found.heads.get(&log.display);
        read_bytes += log.size();
        c.log.push(log.display.clone());
        c.selected.push("yes");
        c.reason.push(String::new());
        c.files.push(log.parts.len() as u64);
        c.bytes.push(log.size());
        c.codec.push(head.map(|h| h.codec.clone()));
        c.file_time.push(utc(log.modified_ms()));
        push_head(&mut c, head);
    }
    for s in &found.skipped {
        c.log.push(s.log.clone());
        c.selected.push("no");
        c.reason.push(s.reason.clone());
        c.files.push(0);
        c.bytes.push(s.bytes);
        c.codec.push(s.head.as_ref().map(|h| h.codec.clone()));
        c.file_time.push(utc(s.modified_ms));
        push_head(&mut c, s.head.as_ref());
    }
    for e in &found.errors {
        c.log.push(e.path.clone());
        c.selected.push("no");
        c.reason.push(format!("not found: {}", e.error));
        c.files.push(0);
        c.bytes.push(0);
        c.codec.push(None);
        c.file_time.push(None);
        push_head(&mut c, None);
    }
    let text = |v: Vec<String>| Arc::new(StringArray::from(v)) as ArrayRef;
    let opt = |v: Vec<Option<String>>| Arc::new(StringArray::from(v)) as ArrayRef;
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("Event Log", text(c.log)),
        (
            "Selected",
            Arc::new(StringArray::from(c.selected)) as ArrayRef,
        ),
        ("Reason", text(c.reason)),
        ("Files", Arc::new(UInt64Array::from(c.files)) as ArrayRef),
        (
            "Stored Bytes",
            Arc::new(UInt64Array::from(c.bytes)) as ArrayRef,
        ),
        ("Codec", opt(c.codec)),
        ("File Time (UTC)", opt(c.file_time)),
        ("App ID", opt(c.app_id)),
        ("App Name", opt(c.app_name)),
        ("App Start (UTC)", opt(c.start)),
        ("User", opt(c.user)),
        ("Spark Version", opt(c.spark)),
        ("Engine", opt(c.engine)),
    ];
    let schema = Arc::new(Schema::new(
        cols.iter()
            .map(|(n, a)| {
                Field::new(
                    *n,
                    a.data_type().clone(),
                    *a.data_type() != DataType::UInt64,
                )
            })
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(schema.clone(), cols.into_iter().map(|(_, a)| a).collect())?;
    println!(
        "{}",
        aether_engine::render(&schema, &[batch], format.into())?
    );
    eprintln!(
        "dry run: {} log(s) selected ({} stored bytes), {} left out, {} input(s) not found; \
         nothing read past each log's first events, nothing written",
        found.logs.len(),
        read_bytes,
        found.skipped.len(),
        found.errors.len()
    );
    Ok(std::process::ExitCode::SUCCESS)
}
