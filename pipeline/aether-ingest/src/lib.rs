//! aether-ingest: Spark event logs into typed Arrow tables.
//!
//! Owns: finding logs (files, directories, globs, list files, `s3://`), every codec and layout
//! Spark writes (plain, lz4-java, snappy-java, LZF, zstd, gzip; single files, rolling
//! `eventlog_v2_*` and Databricks directories, in-progress logs), streaming each log once, line by
//! line, parsing the events it needs into typed columns, and reporting bad input per file and line.
//!
//! Does not own: SQL (see `aether-engine`), storage of the tables (the warehouse), or any
//! interpretation of the numbers beyond what Spark's own status listeners compute.

mod chunks;
pub mod codec;
pub mod engine;
mod event_types;
pub mod events;
mod fast;
pub mod plangraph;
mod planhash;
pub mod read;
mod scala_order;
mod scan;
pub mod select;
pub mod source;
pub mod state;
pub mod tables;
pub mod utc;
pub mod zip;
mod zstd_blocks;

use arrow_array::RecordBatch;
pub use read::{ErrorRow, LogOutcome};
pub use select::{Head, Selection, Skipped};
pub use source::{LogSource, S3Options, SourceError};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// How to ingest.
#[derive(Clone, Debug, Default)]
pub struct IngestOptions {
    /// Worker threads (0 = all cores).
    pub threads: usize,
    /// S3 settings for `s3://` inputs.
    pub s3: S3Options,
    /// Only the logs of this shard (`--shard i/n`), taken after the selection.
    pub shard: Option<Shard>,
    /// Which logs and apps to read ([`select`]); the default: all.
    pub select: Selection,
    /// Counters of the reading, for a progress display.
    pub progress: Option<std::sync::Arc<Progress>>,
    /// Ends a log's reading once its verdict is known (see [`StopRule`]); `None`: every log is
    /// read to its end.
    pub stop: Option<StopRule>,
    /// Leave the tasks' accumulables (their SQL-metric updates, most of a TaskEnd's bytes)
    /// unread: the tables made of them ([`TASK_ACCUMULABLE_TABLES`]) are then left out of the
    /// result ([`Ingested::left_out`]), not filled wrongly. For readers that do not query them.
    pub skip_task_accumulables: bool,
}

/// The tables made (partly) of the tasks' accumulables: left out when
/// [`IngestOptions::skip_task_accumulables`] is set.
pub const TASK_ACCUMULABLE_TABLES: [&str; 2] =
    [tables::SqlMetrics::NAME, tables::StageGpuMetrics::NAME];

/// Ends the reading of a log early, as the reference qualification does (it stops at the first
/// sign of a GPU run or of a runtime its platform lacks): given the Spark properties of each
/// `SparkListenerEnvironmentUpdate`, why the rest of the log does not matter, if it does not.
/// The reading stops at the end of the chunk where that is known and the application has
/// started (its id, name and start time are read); [`LogOutcome::stopped`] says why.
#[derive(Clone)]
pub struct StopRule(pub std::sync::Arc<StopFn>);

/// A [`StopRule`]'s test: the Spark properties (key, value; in file order) to the reason to stop.
pub type StopFn = dyn Fn(&[(String, String)]) -> Option<String> + Send + Sync;

impl std::fmt::Debug for StopRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StopRule")
    }
}

/// How far the reading has gone, updated by the reader threads as they go: logs found and read,
/// and the logs' stored bytes (compressed, as on disk or S3) in all and read so far. A display
/// polls it; nothing here prints.
#[derive(Debug, Default)]
pub struct Progress {
    pub logs_total: AtomicU64,
    pub logs_done: AtomicU64,
    pub bytes_total: AtomicU64,
    pub bytes_done: AtomicU64,
}

impl Progress {
    /// `(logs done, logs in all, bytes read, bytes in all)`.
    pub fn snapshot(&self) -> (u64, u64, u64, u64) {
        (
            self.logs_done.load(Ordering::Relaxed),
            self.logs_total.load(Ordering::Relaxed),
            self.bytes_done.load(Ordering::Relaxed),
            self.bytes_total.load(Ordering::Relaxed),
        )
    }
}

/// Shard `index` of `count` (`--shard i/n`, i from 0): the logs whose stable key — a 64-bit
/// xxHash of the log's path or URL as listed (`s3a://` read as `s3://`) — is `index` modulo
/// `count`. Deterministic and independent of listing order, so n runners given the same inputs
/// split the logs between them, each log in exactly one shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// The stable key of a log.
    pub fn key(log: &str) -> u64 {
        let norm = match log.strip_prefix("s3a://") {
            Some(rest) => format!("s3://{rest}"),
            None => log.to_string(),
        };
        xxhash_rust::xxh64::xxh64(norm.trim_end_matches('/').as_bytes(), 0)
    }

    /// Whether the log is in this shard.
    pub fn holds(&self, log: &str) -> bool {
        Self::key(log) % self.count == self.index
    }
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {s:?}: expected i/n with 0 <= i < n (e.g. 0/4)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl IngestOptions {
    /// Worker threads: [`IngestOptions::threads`], or one per core when 0.
    pub fn threads(&self) -> usize {
        if self.threads > 0 {
            self.threads
        } else {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        }
    }
}

/// What happened to one log.
#[derive(Debug, Clone)]
pub struct LogReport {
    /// Path or URL of the log.
    pub source: String,
    /// Application id read (None when nothing could be read).
    pub app_id: Option<String>,
    /// Problems (empty when the log was read cleanly).
    pub errors: Vec<ErrorRow>,
    /// Uncompressed bytes read.
    pub bytes: u64,
    /// Lines read.
    pub lines: u64,
}

impl LogReport {
    /// The report of a log read (its tables dropped).
    pub fn of(log: &LogSource, out: LogOutcome) -> LogReport {
        split(log, out).0
    }

    /// Whether the log was read without any problem.
    pub fn ok(&self) -> bool {
        self.app_id.is_some() && self.errors.is_empty()
    }
}

/// The tables of many logs, plus what happened to each log.
#[derive(Default)]
pub struct Ingested {
    /// Table name → batches (one or more per log).
    pub tables: BTreeMap<&'static str, Vec<RecordBatch>>,
    /// One report per log found.
    pub logs: Vec<LogReport>,
    /// Inputs that could not be expanded into logs (missing paths, …).
    pub source_errors: Vec<SourceError>,
    /// Logs the selection ([`IngestOptions::select`]) left out, and why.
    pub not_selected: Vec<Skipped>,
    /// Uncompressed bytes read over all logs.
    pub bytes: u64,
    /// Wall time of the ingest.
    pub elapsed: std::time::Duration,
    /// Tables not read ([`IngestOptions::skip_task_accumulables`]): absent from `tables`, and
    /// not to be registered (a query of them must fail, not find them empty).
    pub left_out: Vec<&'static str>,
}

impl Ingested {
    /// Whether any log was read into tables.
    pub fn any_app(&self) -> bool {
        self.logs.iter().any(|l| l.app_id.is_some())
    }

    /// Whether every input was found and every log read cleanly.
    pub fn all_ok(&self) -> bool {
        self.source_errors.is_empty() && self.logs.iter().all(LogReport::ok)
    }

    /// The `ingest_errors` table for the problems recorded.
    pub fn error_batch(&self) -> RecordBatch {
        error_batch(
            &self.source_errors,
            self.logs.iter().flat_map(|l| l.errors.iter()),
        )
    }
}

/// Build the `ingest_errors` batch from source errors and per-log error rows.
pub fn error_batch<'a>(
    sources: &[SourceError],
    rows: impl Iterator<Item = &'a ErrorRow>,
) -> RecordBatch {
    let mut t = tables::IngestErrors::default();
    for e in sources {
        t.event_log.append_value(&e.path);
        t.line.append_null();
        t.error.append_value(&e.error);
    }
    for e in rows {
        t.event_log.append_value(&e.file);
        t.line.append_option(e.line);
        t.error.append_value(&e.error);
    }
    t.finish(&[])
}

/// A runtime for object-store I/O, driven from the ingest threads.
pub fn io_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("aether-io")
        .enable_all()
        .build()
        .expect("a tokio runtime for object-store I/O")
}

/// What the inputs hold for a run: the logs to read, the logs the selection left out (and why),
/// the inputs that could not be listed.
#[derive(Debug, Default)]
pub struct Found {
    /// The logs to read, in the order they were found.
    pub logs: Vec<LogSource>,
    /// The first events of the logs to read, by log (when they were read: app filters, or a
    /// dry run that asked for them).
    pub heads: std::collections::HashMap<String, select::Head>,
    pub skipped: Vec<Skipped>,
    pub errors: Vec<SourceError>,
}

/// Expand inputs (paths, globs, list files, `s3://` URLs) into logs, and apply the selection
/// ([`IngestOptions::select`], then [`IngestOptions::shard`]): the file filters from the listing,
/// the app filters from each log's first events. `heads`: read the first events of every log
/// kept (a dry run's listing), not only when app filters need them.
pub fn find_logs(
    inputs: &[String],
    opts: &IngestOptions,
    rt: &tokio::runtime::Runtime,
    heads: bool,
) -> Found {
    let sel = &opts.select;
    let (logs, errors) = source::discover(inputs, &opts.s3, !sel.no_recursion, rt);
    let order: std::collections::HashMap<String, usize> = logs
        .iter()
        .enumerate()
        .map(|(i, l)| (l.display.clone(), i))
        .collect();
    let (logs, mut skipped) = sel.files(logs);
    let mut found_heads = std::collections::HashMap::new();
    let mut logs = if sel.reads_apps() || heads {
        let read = read_heads(&logs, opts.threads, rt);
        let chosen = if sel.reads_apps() {
            sel.apps(read)
        } else {
            select::Selected {
                kept: read.into_iter().map(|(l, h)| (l, h.ok())).collect(),
                skipped: Vec::new(),
            }
        };
        skipped.extend(chosen.skipped);
        chosen
            .kept
            .into_iter()
            .map(|(l, h)| {
                if let Some(h) = h {
                    found_heads.insert(l.display.clone(), h);
                }
                l
            })
            .collect()
    } else {
        logs
    };
    // the order found, whatever order a criterion picked them in
    logs.sort_by_key(|l| order.get(&l.display).copied().unwrap_or(usize::MAX));
    if let Some(shard) = opts.shard {
        logs.retain(|l| shard.holds(&l.display));
        skipped.retain(|s| shard.holds(&s.log));
        found_heads.retain(|k, _| shard.holds(k));
    }
    Found {
        logs,
        heads: found_heads,
        skipped,
        errors,
    }
}

/// [`find_logs`] without reading any log's first events unless the selection needs them.
pub fn discover(inputs: &[String], opts: &IngestOptions, rt: &tokio::runtime::Runtime) -> Found {
    find_logs(inputs, opts, rt, false)
}

/// Each log's first events ([`select::read_head`]), read side by side (`threads`, 0: all cores;
/// at least 8, as opening a log is mostly waiting), in the logs' order.
pub fn read_heads(
    logs: &[LogSource],
    threads: usize,
    rt: &tokio::runtime::Runtime,
) -> Vec<(LogSource, Result<select::Head, String>)> {
    let workers = match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .max(8)
    .min(logs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: Vec<Mutex<Option<Result<select::Head, String>>>> =
        logs.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(log) = logs.get(i) else { break };
                    let head = select::read_head(log, rt.handle());
                    if let Ok(mut slot) = out[i].lock() {
                        *slot = Some(head);
                    }
                }
            });
        }
    });
    logs.iter()
        .cloned()
        .zip(out)
        .map(|(l, h)| {
            let h = h
                .into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err("not read".to_string()));
            (l, h)
        })
        .collect()
}

/// Rough uncompressed size of a log, to decide whether to parse it in parallel.
fn estimated_bytes(log: &LogSource) -> u64 {
    log.parts
        .iter()
        .map(
            |p| match codec::Codec::from_file_name(&p.location.file_name()) {
                None => p.size,
                Some(_) => p.size.saturating_mul(12),
            },
        )
        .sum()
}

/// Read `logs` in parallel, calling `each` (from worker threads) with every outcome.
/// Large logs are parsed with several threads; small ones one per thread.
pub fn read_logs<F>(logs: &[LogSource], opts: &IngestOptions, rt: &tokio::runtime::Runtime, each: F)
where
    F: Fn(&LogSource, LogOutcome) + Sync,
{
    read_logs_then(logs, opts, rt, each, || {});
}

/// [`read_logs`], and each worker thread calls `idle` once no log is left for it to start
/// (other workers may still be reading theirs): work that waits for the reading, such as
/// judging what was read, can use that thread while the largest logs are still being read.
pub fn read_logs_then<F, I>(
    logs: &[LogSource],
    opts: &IngestOptions,
    rt: &tokio::runtime::Runtime,
    each: F,
    idle: I,
) where
    F: Fn(&LogSource, LogOutcome) + Sync,
    I: Fn() + Sync,
{
    let threads = opts.threads();
    let progress = opts.progress.as_ref();
    if let Some(p) = progress {
        p.logs_total.fetch_add(logs.len() as u64, Ordering::Relaxed);
        p.bytes_total
            .fetch_add(logs.iter().map(LogSource::size).sum(), Ordering::Relaxed);
    }
    let mut order: Vec<usize> = (0..logs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(estimated_bytes(&logs[i])));
    let queue = Mutex::new(order.into_iter());
    let handle = rt.handle().clone();
    std::thread::scope(|s| {
        for _ in 0..threads.min(logs.len()).max(1) {
            s.spawn(|| {
                loop {
                    let next = queue.lock().ok().and_then(|mut q| q.next());
                    let Some(i) = next else { break };
                    let log = &logs[i];
                    let inner = if estimated_bytes(log) > (32 << 20) { threads } else { 1 };
                    let t0 = Instant::now();
                    let out = read::read_log(
                        log,
                        &handle,
                        inner,
                        progress,
                        opts.stop.as_ref(),
                        !opts.skip_task_accumulables,
                    );
                    tracing::debug!(uri = %log.display, bytes = out.bytes, elapsed_ms = t0.elapsed().as_millis() as u64, "log read");
                    each(log, out);
                    if let Some(p) = progress {
                        p.logs_done.fetch_add(1, Ordering::Relaxed);
                    }
                }
                idle();
            });
        }
    });
}

/// A log's report and its tables.
fn split(log: &LogSource, out: LogOutcome) -> (LogReport, Option<state::AppBatches>) {
    let report = LogReport {
        source: log.display.clone(),
        app_id: out.app.as_ref().map(|a| a.app_id.clone()),
        errors: out.errors,
        bytes: out.bytes,
        lines: out.lines,
    };
    (report, out.app)
}

/// The tables of logs already read (`(report, app)` per log, in order).
fn assemble(
    logs: impl Iterator<Item = (LogReport, Option<state::AppBatches>)>,
    source_errors: Vec<SourceError>,
) -> Ingested {
    let mut res = Ingested {
        source_errors,
        ..Default::default()
    };
    for (name, _) in tables::all_schemas() {
        res.tables.insert(name, Vec::new());
    }
    for (report, app) in logs {
        res.bytes += report.bytes;
        if let Some(app) = app {
            for name in app.left_out {
                if !res.left_out.contains(&name) {
                    res.left_out.push(name);
                }
            }
            for (name, batch) in app.batches {
                if batch.num_rows() > 0 {
                    res.tables.entry(name).or_default().push(batch);
                }
            }
        }
        res.logs.push(report);
    }
    // every table had an entry from the start: none for the tables not read
    for name in &res.left_out {
        res.tables.remove(name);
    }
    let errors = res.error_batch();
    res.tables.insert(tables::IngestErrors::NAME, vec![errors]);
    res
}

/// The tables of one log read by [`read_logs`] (for callers that process logs one at a time).
pub fn ingested_one(log: &LogSource, out: LogOutcome) -> Ingested {
    ingested_batch(std::iter::once((log, out)))
}

/// The tables of several logs read by [`read_logs`], together (for callers that process logs
/// in batches).
pub fn ingested_batch<'a>(logs: impl IntoIterator<Item = (&'a LogSource, LogOutcome)>) -> Ingested {
    let t0 = Instant::now();
    let mut res = assemble(
        logs.into_iter().map(|(log, out)| split(log, out)),
        Vec::new(),
    );
    res.elapsed = t0.elapsed();
    res
}

/// Find and read every log named by `inputs` into in-memory tables.
pub fn ingest(inputs: &[String], opts: &IngestOptions) -> Ingested {
    let t0 = Instant::now();
    let rt = io_runtime();
    let Found {
        logs,
        skipped,
        errors: source_errors,
        ..
    } = discover(inputs, opts, &rt);
    let collected: Mutex<Vec<(usize, LogReport, Option<state::AppBatches>)>> =
        Mutex::new(Vec::new());
    let index: std::collections::HashMap<&str, usize> = logs
        .iter()
        .enumerate()
        .map(|(i, l)| (l.display.as_str(), i))
        .collect();
    read_logs(&logs, opts, &rt, |log, out| {
        let (report, app) = split(log, out);
        let i = index[log.display.as_str()];
        if let Ok(mut c) = collected.lock() {
            c.push((i, report, app));
        }
    });
    let mut collected = collected.into_inner().unwrap_or_default();
    collected.sort_by_key(|(i, _, _)| *i);
    let mut res = assemble(collected.into_iter().map(|(_, r, a)| (r, a)), source_errors);
    res.not_selected = skipped;
    drop(rt);
    res.elapsed = t0.elapsed();
    res
}

#[cfg(test)]
mod shard_tests {
    use super::Shard;

    #[test]
    fn every_log_is_in_exactly_one_shard_whatever_the_order() {
        let logs: Vec<String> = (0..5000)
            .map(|i| format!("s3://fleet/logs/2026/12/01/application_1700000000000_{i:05}.zstd"))
            .collect();
        for n in [1u64, 2, 3, 7, 64] {
            let shards: Vec<Shard> = (0..n).map(|i| Shard { index: i, count: n }).collect();
            let mut sizes = vec![0usize; n as usize];
            for l in &logs {
                let holders: Vec<&Shard> = shards.iter().filter(|s| s.holds(l)).collect();
                assert_eq!(holders.len(), 1, "{l} in {holders:?}");
                sizes[holders[0].index as usize] += 1;
            }
            // a fair split, as a uniform hash gives: every shard within 5 standard deviations
            // of the mean (binomial: sqrt(mean) roughly)
            let mean = logs.len() as f64 / n as f64;
            assert!(
                sizes
                    .iter()
                    .all(|&s| (s as f64 - mean).abs() <= 5.0 * mean.sqrt()),
                "{n} shards: {sizes:?}"
            );
        }
        // the key is the log's own: not its position, and s3a:// is s3://
        assert_eq!(Shard::key("s3a://b/k/app_1"), Shard::key("s3://b/k/app_1"));
        assert_eq!(Shard::key("s3://b/k/app_1/"), Shard::key("s3://b/k/app_1"));
        assert_ne!(Shard::key("s3://b/k/app_1"), Shard::key("s3://b/k/app_2"));
        // fixed for good (a change would move logs between the shards of a running fleet): the
        // reference XXH64, as Python's `xxhash.xxh64(b"s3://fleet/logs/app").intdigest()` gives
        assert_eq!(Shard::key("s3://fleet/logs/app"), 0x41eb_0222_3a9e_17be);
    }

    #[test]
    fn shards_are_parsed_and_bad_ones_explained() {
        assert_eq!("2/8".parse::<Shard>(), Ok(Shard { index: 2, count: 8 }));
        assert_eq!("0/1".parse::<Shard>().unwrap().to_string(), "0/1");
        for bad in ["8/8", "1", "a/2", "0/0", "-1/2", "1/2/3", ""] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(
                e.contains("--shard") && e.contains("0 <= i < n"),
                "{bad}: {e}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;

    /// Read one log with `opts`.
    fn read_one(path: &str, opts: &IngestOptions) -> LogOutcome {
        let rt = io_runtime();
        let Found { logs, errors, .. } = discover(&[path.to_string()], opts, &rt);
        assert!(errors.is_empty() && logs.len() == 1, "{errors:?}");
        let out = Mutex::new(None);
        read_logs(&logs, opts, &rt, |_, o| *out.lock().unwrap() = Some(o));
        out.into_inner().unwrap().expect("the log was read")
    }

    fn rows(out: &LogOutcome, table: &str) -> usize {
        let app = out.app.as_ref().expect("tables");
        app.batches
            .iter()
            .filter(|(n, _)| *n == table)
            .map(|(_, b)| b.num_rows())
            .sum()
    }

    /// A zstd log with Spark's window or a wider one, decoded straight into the chunk buffers,
    /// reads as the same log through the streaming decoder (a window wider than it takes) and
    /// as its plain text, table for table and row for row; a zstd file of other text is not an
    /// event log, and one with nothing in it an empty log.
    #[test]
    fn zstd_logs_read_as_their_text() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../datasets/sample/local-1796009777604"
        ))
        .unwrap();
        let write = |name: &str, bytes: &[u8], window_log: Option<u32>| {
            let p = dir.path().join(name);
            let data = match window_log {
                None => bytes.to_vec(),
                Some(w) => {
                    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
                    e.window_log(w).unwrap();
                    e.write_all(bytes).unwrap();
                    e.finish().unwrap()
                }
            };
            std::fs::write(&p, data).unwrap();
            p.display().to_string()
        };
        let opts = IngestOptions::default();
        let tables = |path: &str| {
            let out = read_one(path, &opts);
            assert!(out.errors.is_empty(), "{:?}", out.errors);
            let app = out.app.expect("tables");
            // the same but for the file: its name and its size on disk
            let batches: Vec<_> = app
                .batches
                .iter()
                .map(|(name, b)| match b.schema().index_of("log_bytes") {
                    Ok(i) => {
                        let keep: Vec<usize> = (0..b.num_columns()).filter(|c| *c != i).collect();
                        (name, b.project(&keep).unwrap())
                    }
                    Err(_) => (name, b.clone()),
                })
                .collect();
            let shown = format!("{batches:?}").replace(path, "LOG");
            (out.bytes, out.lines, shown)
        };
        let plain = tables(&write("plain", &text, None));
        // zstd's window at Spark's level: decoded in place
        let spark = write("spark.zstd", &text, Some(19));
        assert!(crate::zstd_blocks::frame_window(&std::fs::read(&spark).unwrap()) <= Some(1 << 20));
        assert!(tables(&spark) == plain, "decoded in place");
        // a window wider than a chunk: decoded in place too, handed on in chunks
        let wide = write("wide.zstd", &text, Some(22));
        assert_eq!(
            crate::zstd_blocks::frame_window(&std::fs::read(&wide).unwrap()),
            Some(4 << 20)
        );
        assert!(tables(&wide) == plain, "wide window");
        // wider than the decoder here takes: streamed
        let widest = write("widest.zstd", &text, Some(24));
        assert!(
            crate::zstd_blocks::frame_window(&std::fs::read(&widest).unwrap())
                > Some(crate::zstd_blocks::MAX_DIRECT_WINDOW)
        );
        assert!(tables(&widest) == plain, "streamed");

        let driver = read_one(
            &write(
                "driver.zstd",
                b"INFO SparkContext: Running Spark\n",
                Some(19),
            ),
            &opts,
        );
        assert!(driver.app.is_none());
        assert!(
            driver.errors[0].error.contains("not a Spark event log"),
            "{:?}",
            driver.errors
        );
        let empty = read_one(&write("empty.zstd", b"", Some(19)), &opts);
        assert!(empty.app.is_none());
        assert!(
            empty.errors[0].error.contains("empty log"),
            "{:?}",
            empty.errors
        );
    }

    /// A stop rule ends a log's reading at the end of the chunk (1 MiB) where it has a reason
    /// and the application has started: the outcome says why and holds the application (id,
    /// name, start time) but not the rest of the log; without the rule the log is read whole.
    #[test]
    fn a_stop_rule_ends_the_reading_once_the_app_started() {
        // 1.1 MB of JSON: two chunks
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../datasets/sample/local-1796393658133.zstd"
        );
        let full = read_one(path, &IngestOptions::default());
        assert!(full.stopped.is_none() && full.errors.is_empty());
        assert_eq!(full.bytes, 1_113_683);
        let opts = IngestOptions {
            stop: Some(StopRule(std::sync::Arc::new(|props| {
                props
                    .iter()
                    .find(|(k, _)| k == "spark.master")
                    .map(|(_, v)| format!("master {v}"))
            }))),
            ..Default::default()
        };
        let cut = read_one(path, &opts);
        assert_eq!(cut.stopped.as_deref(), Some("master local[2]"));
        // the first chunk's whole lines (a chunk of zstd output ends on a block: up to 128 KiB
        // past the chunk size)
        assert!(
            cut.bytes <= (1 << 20) + (128 << 10) && cut.bytes > 1 << 19,
            "{}",
            cut.bytes
        );
        assert!(cut.lines < full.lines && cut.errors.is_empty());
        let (a, b) = (cut.app.as_ref().unwrap(), full.app.as_ref().unwrap());
        assert_eq!((&a.app_id, &a.attempt_id), (&b.app_id, &b.attempt_id));
        let start = |o: &LogOutcome| {
            let apps = &o.app.as_ref().unwrap().batches;
            let (_, t) = apps.iter().find(|(n, _)| *n == "applications").unwrap();
            let col = t.column_by_name("start_ms").unwrap();
            col.as_primitive::<Int64Type>().value(0)
        };
        assert_eq!(start(&cut), start(&full));
        assert!(rows(&cut, "tasks") < rows(&full, "tasks"));
        // a rule that never has a reason reads the log whole
        let never = IngestOptions {
            stop: Some(StopRule(std::sync::Arc::new(|_| None))),
            ..Default::default()
        };
        let whole = read_one(path, &never);
        assert!(whole.stopped.is_none());
        assert_eq!((whole.bytes, whole.lines), (full.bytes, full.lines));
        assert_eq!(rows(&whole, "tasks"), rows(&full, "tasks"));
    }

    /// Every worker calls `idle` once, after the last log it read (the others may still be
    /// reading), and every log is read once.
    #[test]
    fn each_reader_calls_idle_once_it_has_no_log_left() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/sample");
        let rt = io_runtime();
        for threads in [1, 2, 3] {
            let opts = IngestOptions {
                threads,
                ..Default::default()
            };
            let inputs: Vec<String> = [
                "local-1796009671201",
                "local-1796009829641.lz4",
                "local-1796009839341.zstd",
                "local-1796393658133.zstd",
            ]
            .iter()
            .map(|f| format!("{dir}/{f}"))
            .collect();
            let Found { logs, errors, .. } = discover(&inputs, &opts, &rt);
            assert!(errors.is_empty() && logs.len() >= 2, "{errors:?}");
            let read = std::sync::Mutex::new(Vec::new());
            let idle = std::sync::Mutex::new(Vec::new());
            read_logs_then(
                &logs,
                &opts,
                &rt,
                |log, out| {
                    assert!(out.app.is_some(), "{}", log.display);
                    read.lock().unwrap().push(log.display.clone());
                },
                || {
                    let done = read.lock().unwrap().len();
                    idle.lock().unwrap().push(done);
                },
            );
            let mut read = read.into_inner().unwrap();
            read.sort();
            let mut want: Vec<String> = logs.iter().map(|l| l.display.clone()).collect();
            want.sort();
            assert_eq!(read, want);
            let idle = idle.into_inner().unwrap();
            assert_eq!(idle.len(), threads.min(logs.len()), "{threads} threads");
            // the last reader to go idle has seen every log read
            assert_eq!(idle.iter().max(), Some(&logs.len()));
        }
    }

    /// Without the tasks' accumulables, the tables made of them are left out (not registered
    /// empty) and every other table holds exactly what a whole reading gives.
    #[test]
    fn skipping_task_accumulables_leaves_out_their_tables_only() {
        let logs = [
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../datasets/sample/local-1796393658133.zstd"
            ),
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/datasets/rapids-tools/spark-events-profiling/nds_q66_gpu.zstd"
            ),
        ]
        .map(String::from);
        let full = ingest(&logs, &IngestOptions::default());
        assert!(full.all_ok() && full.left_out.is_empty(), "{:?}", full.logs);
        let skip = ingest(
            &logs,
            &IngestOptions {
                skip_task_accumulables: true,
                ..Default::default()
            },
        );
        assert!(skip.all_ok(), "{:?}", skip.logs);
        assert_eq!(skip.left_out, TASK_ACCUMULABLE_TABLES.to_vec());
        // what is left out had rows made of task updates: the skip is not a no-op
        let task_totals = |name: &str| -> usize {
            full.tables[name]
                .iter()
                .map(|b| {
                    b.num_rows()
                        - b.column(b.schema().index_of("task_total").unwrap())
                            .null_count()
                })
                .sum()
        };
        assert!(task_totals(tables::SqlMetrics::NAME) > 0);
        assert!(
            full.tables[tables::StageGpuMetrics::NAME]
                .iter()
                .any(|b| b.num_rows() > 0)
        );
        for name in TASK_ACCUMULABLE_TABLES {
            assert!(!skip.tables.contains_key(name), "{name}");
        }
        assert_eq!(
            skip.tables.len() + TASK_ACCUMULABLE_TABLES.len(),
            full.tables.len()
        );
        for (name, batches) in &skip.tables {
            assert_eq!(batches, &full.tables[name], "{name}");
        }
    }
}
