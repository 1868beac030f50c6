//! qualify's results taken as they are judged, so that a fleet of any size is qualified in
//! flat memory: each app's rows of `--output DIR`'s files are rendered at once and spilled to
//! files beside them (`DIR/.spill-PID/`), with only each row's key, offset and length kept;
//! at the end every file is written in key (input) order from the spills. What is kept per app
//! is what the end needs: a qualified app's key, app id, attempt and log name (the rule
//! that only an app's newest attempt counts, [`Outputs::finish`]), the status lines of logs not
//! qualified, and the console's apps: all qualified apps up to [`CONSOLE_APPS`], else the ones
//! with the highest estimated speedup.

use std::collections::HashSet;
use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{PredictError, Result};
use crate::qualify::{AppQualification, Status, attempt, older_attempt, older_attempts};
use crate::report;

/// Qualified apps the console table shows at most (all of them in input order up to this;
/// beyond it, this many with the highest estimated speedup, and a line saying so).
pub const CONSOLE_APPS: usize = 100;

/// A line for an app that was not qualified, or was with a note: `STATUS: log: reason`.
pub fn status_line(q: &AppQualification) -> Option<String> {
    (q.status != Status::Success || !q.status_reason.is_empty())
        .then(|| line(q.status, &q.event_log, &q.status_reason))
}

fn line(status: Status, log: &str, reason: &str) -> String {
    format!("{}: {log}: {reason}", status.as_str())
}

/// One file's rows, appended as they come: where each key's bytes are.
struct Spill {
    path: PathBuf,
    w: std::io::BufWriter<std::fs::File>,
    at: u64,
    /// (key, offset, length), sorted by key at the end.
    index: Vec<(u64, u64, u32)>,
}

impl Spill {
    fn create(dir: &Path, name: &str) -> Result<Spill> {
        let path = dir.join(name);
        let f = std::fs::File::options()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(PredictError::io(format!("creating {}", path.display())))?;
        Ok(Spill {
            path,
            w: std::io::BufWriter::with_capacity(1 << 20, f),
            at: 0,
            index: Vec::new(),
        })
    }

    fn put(&mut self, key: u64, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let len = u32::try_from(bytes.len()).map_err(|_| {
            PredictError::Invalid(format!(
                "an app's rows of {} exceed 4 GiB",
                self.path.display()
            ))
        })?;
        self.w
            .write_all(bytes)
            .map_err(PredictError::io(format!("writing {}", self.path.display())))?;
        self.index.push((key, self.at, len));
        self.at += bytes.len() as u64;
        Ok(())
    }

    /// Done writing: the file to read back, its entries in key order.
    fn finish(self) -> Result<Spilled> {
        let Spill {
            path, w, mut index, ..
        } = self;
        let file = w
            .into_inner()
            .map_err(|e| PredictError::io(format!("writing {}", path.display()))(e.into_error()))?;
        index.sort_by_key(|e| e.0);
        Ok(Spilled { file, index, path })
    }
}

/// A spill written: where each key's bytes are.
struct Spilled {
    file: std::fs::File,
    /// (key, offset, length) in key order.
    index: Vec<(u64, u64, u32)>,
    path: PathBuf,
}

impl Spilled {
    fn read(&self, (_, off, len): (u64, u64, u32)) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut buf, off)
            .map_err(PredictError::io(format!("reading {}", self.path.display())))?;
        Ok(buf)
    }

    /// The bytes of `key`, if it has any.
    fn get(&self, key: u64) -> Result<Option<Vec<u8>>> {
        match self.index.binary_search_by_key(&key, |e| e.0) {
            Ok(i) => self.read(self.index[i]).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// Every entry's bytes in key order, but those of keys `skip` leaves out.
    fn rows<'a>(
        &'a self,
        skip: impl Fn(u64) -> bool + 'a,
    ) -> impl Iterator<Item = Result<Vec<u8>>> + 'a {
        self.index
            .iter()
            .filter(move |e| !skip(e.0))
            .map(|e| self.read(*e))
    }
}

/// A CSV file written from a header and rows, through a temporary file renamed at the end.
fn write_csv(
    path: &Path,
    header: &[u8],
    rows: impl Iterator<Item = Result<Vec<u8>>>,
) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let io = |what: &Path| PredictError::io(format!("writing {}", what.display()));
    let f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    w.write_all(header).map_err(io(&tmp))?;
    for r in rows {
        w.write_all(&r?).map_err(io(&tmp))?;
    }
    w.into_inner()
        .map_err(|e| io(&tmp)(e.into_error()))?
        .sync_all()
        .map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// The spill folder, removed when dropped (done, or given up on an error).
struct SpillDir(PathBuf);

impl Drop for SpillDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A new spill folder `.spill-PID` in `parent` (`--output DIR`, else the temporary folder).
fn spill_dir(parent: &Path) -> Result<SpillDir> {
    std::fs::create_dir_all(parent)
        .map_err(PredictError::io(format!("creating {}", parent.display())))?;
    let dir = parent.join(format!(".spill-{}", std::process::id()));
    // a folder left by a killed run (its process gone, or one with this pid) is stale; which
    // processes live is asked of /proc (where there is none, only this pid's is removed)
    let _ = std::fs::remove_dir_all(&dir);
    let procs = Path::new("/proc/self").exists();
    for e in std::fs::read_dir(parent)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|_| procs)
    {
        let name = e.file_name();
        let pid = name.to_str().and_then(|n| n.strip_prefix(".spill-"));
        if let Some(pid) = pid.filter(|p| p.parse::<u32>().is_ok())
            && !Path::new("/proc").join(pid).exists()
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    std::fs::create_dir(&dir).map_err(PredictError::io(format!("creating {}", dir.display())))?;
    Ok(SpillDir(dir))
}

/// The spill files of `--output DIR`'s files.
struct Spills {
    out: PathBuf,
    summary: Spill,
    status: Spill,
    /// A qualified app's status row as SKIPPED (an older attempt), used if it turns out so.
    status_older: Spill,
    per_sql: Spill,
    features: Spill,
    conf: Spill,
    cluster: Spill,
}

impl Spills {
    fn create(out: &Path, dir: &Path) -> Result<Spills> {
        Ok(Spills {
            summary: Spill::create(dir, "summary")?,
            status: Spill::create(dir, "status")?,
            status_older: Spill::create(dir, "status_older")?,
            per_sql: Spill::create(dir, "per_sql")?,
            features: Spill::create(dir, "features")?,
            conf: Spill::create(dir, "conf")?,
            cluster: Spill::create(dir, "cluster")?,
            out: out.to_path_buf(),
        })
    }
}

/// One app's rows of every file, rendered before the lock is taken.
#[derive(Default)]
struct Rows {
    /// The console's row (CSV, or a JSON object), when it prints CSV or JSON.
    console: Vec<u8>,
    summary: Vec<u8>,
    status: Vec<u8>,
    status_older: Vec<u8>,
    per_sql: Vec<u8>,
    features: Vec<u8>,
    conf: Vec<u8>,
    cluster: Vec<u8>,
}

fn csv_rows(b: Result<datafusion::arrow::array::RecordBatch>) -> Result<Vec<u8>> {
    let b = b?;
    let mut buf = Vec::new();
    if b.num_rows() > 0 {
        aether_engine::csv_into(&mut buf, std::slice::from_ref(&b), false)?;
    }
    Ok(buf)
}

fn csv_header(b: Result<datafusion::arrow::array::RecordBatch>) -> Result<Vec<u8>> {
    let b = b?;
    let mut buf = Vec::new();
    aether_engine::csv_into(&mut buf, &[b.slice(0, 0)], true)?;
    Ok(buf)
}

/// A JSON array's elements without its brackets (`[{…},{…}]` → `{…},{…}`).
fn json_rows(b: Result<datafusion::arrow::array::RecordBatch>) -> Result<Vec<u8>> {
    let b = b?;
    if b.num_rows() == 0 {
        return Ok(Vec::new());
    }
    let a = aether_engine::json_array(std::slice::from_ref(&b))?;
    Ok(a[1..a.len() - 1].to_vec())
}

impl Rows {
    fn of(
        q: &AppQualification,
        names: &[String],
        files: bool,
        console: aether_engine::OutputFormat,
    ) -> Result<Rows> {
        use aether_engine::OutputFormat;
        let one = std::slice::from_ref(q);
        let mut r = Rows::default();
        if q.status == Status::Success {
            r.console = match console {
                OutputFormat::Csv => csv_rows(report::summary(one))?,
                OutputFormat::Json => json_rows(report::summary(one))?,
                OutputFormat::Table => Vec::new(),
            };
        }
        if !files {
            return Ok(r);
        }
        r.status = csv_rows(report::status(one))?;
        r.per_sql = csv_rows(report::per_sql(one))?;
        r.features = csv_rows(report::features(one, names))?;
        if q.status == Status::Success {
            r.summary = csv_rows(report::qualification_summary(one))?;
            let mut older = crate::qualify::not_qualified(
                &q.event_log,
                Status::Skipped,
                older_attempt(&q.app_id, attempt(q)),
            );
            older.app_id = q.app_id.clone();
            older.attempt_id = q.attempt_id.clone();
            older.app_name = q.app_name.clone();
            r.status_older = csv_rows(report::status(std::slice::from_ref(&older)))?;
            r.conf = q.spark_conf.as_bytes().to_vec();
            if let Some(c) = &q.cluster {
                r.cluster = serde_json::to_string_pretty(c)?.into_bytes();
            }
        }
        Ok(r)
    }
}

/// A qualified app, as the end needs it.
struct Qualified {
    key: u64,
    app_id: Box<str>,
    attempt: i64,
    event_log: Box<str>,
    /// The base of its files' names in `--output DIR` (`APP_ATTEMPT`).
    name: Box<str>,
}

#[derive(Default)]
struct Inner {
    /// The spill folder (while there are spills).
    dir: Option<SpillDir>,
    /// `--output DIR`'s files.
    spills: Option<Spills>,
    /// The console's rows, when it prints CSV or JSON (every qualified app).
    console: Option<Spill>,
    qualified: Vec<Qualified>,
    /// Status lines of logs not qualified (or qualified with a note), by key.
    lines: Vec<(u64, Status, String)>,
    /// The console's candidates (trimmed to [`CONSOLE_APPS`] now and then).
    shown: Vec<(u64, AppQualification)>,
    logs: usize,
}

/// qualify's results, taken one app at a time from any thread ([`Outputs::add`]) and written
/// at the end ([`Outputs::finish`]).
pub struct Outputs {
    names: Vec<String>,
    format: aether_engine::OutputFormat,
    limit: usize,
    inner: Mutex<Inner>,
}

/// What is left once every file is written: the console's part.
pub struct Finished {
    /// The apps the console table shows (and `--explain` explains): every qualified app in
    /// input order, or (when more than the console's limit) that many with the highest
    /// estimated speedup, highest first.
    pub shown: Vec<AppQualification>,
    /// Apps qualified (an app's older attempts not counted).
    pub qualified: usize,
    /// Logs taken in all.
    pub logs: usize,
    /// `STATUS: log: reason` of the logs not qualified or qualified with a note, in input order,
    /// each with its status.
    pub lines: Vec<(Status, String)>,
    format: aether_engine::OutputFormat,
    /// CSV or JSON: every qualified app's row (older attempts left out by key).
    console: Option<(Spilled, HashSet<u64>)>,
    /// Removes the spill folder once this is dropped.
    _dir: Option<SpillDir>,
}

impl Finished {
    /// Print what the console shows to `w`: the summary of every qualified app in CSV or JSON
    /// (the format given to [`Outputs::new`]), or the table of [`Finished::shown`] (fitted to
    /// `width`, see [`report::summary_text`]) with a line saying which apps it shows when not
    /// all; then, with `explain`, the shown apps' top reasons.
    pub fn print(
        &self,
        w: &mut dyn std::io::Write,
        explain: bool,
        width: Option<usize>,
        output: Option<&Path>,
    ) -> Result<()> {
        use aether_engine::OutputFormat;
        let io = |e: std::io::Error| PredictError::Invalid(format!("writing the summary: {e}"));
        let Some((rows, older)) = &self.console else {
            // the table, fitted to the width, and the reasons under it
            let mut text = report::summary_text(&self.shown, OutputFormat::Table, explain, width)?;
            if self.shown.len() < self.qualified {
                let rest = match output {
                    Some(d) => format!("all in {}", d.join("qualification_summary.csv").display()),
                    None => "give --output DIR for all of them".to_string(),
                };
                text.push_str(&format!(
                    "\n\n{} of {} qualified apps shown, those with the highest estimated speedup; {rest}",
                    self.shown.len(),
                    self.qualified
                ));
            }
            return writeln!(w, "{text}").map_err(io);
        };
        let empty: &[AppQualification] = &[];
        let mut out = std::io::BufWriter::new(w);
        let mut n = 0;
        match self.format {
            OutputFormat::Json => {
                out.write_all(b"[").map_err(io)?;
                for r in rows.rows(|k| older.contains(&k)) {
                    if n > 0 {
                        out.write_all(b",").map_err(io)?;
                    }
                    out.write_all(&r?).map_err(io)?;
                    n += 1;
                }
                out.write_all(b"]").map_err(io)?;
            }
            _ => {
                let mut header = csv_header(report::summary(empty))?;
                let mut rows = rows.rows(|k| older.contains(&k)).peekable();
                if rows.peek().is_none() {
                    header.pop(); // the last line's newline: printed below
                }
                out.write_all(&header).map_err(io)?;
                while let Some(r) = rows.next() {
                    let mut r = r?;
                    if rows.peek().is_none() && r.last() == Some(&b'\n') {
                        r.pop();
                    }
                    out.write_all(&r).map_err(io)?;
                }
            }
        }
        // the reasons of the shown apps (all of them, up to the limit)
        let why = if explain {
            report::reasons_text(&self.shown)
        } else {
            String::new()
        };
        writeln!(out, "{why}").map_err(io)?;
        out.flush().map_err(io)
    }
}

impl Outputs {
    /// Take results for `--output DIR` (`None`: no files) and a console in `format` (a table
    /// shows up to [`CONSOLE_APPS`] apps; CSV and JSON every one); `names` are the model's
    /// features (`features.csv`'s columns).
    pub fn new(
        dir: Option<&Path>,
        names: &[String],
        format: aether_engine::OutputFormat,
    ) -> Result<Outputs> {
        Self::with_limit(dir, names, format, CONSOLE_APPS)
    }

    /// [`Outputs::new`] with the console table's limit.
    pub fn with_limit(
        dir: Option<&Path>,
        names: &[String],
        format: aether_engine::OutputFormat,
        limit: usize,
    ) -> Result<Outputs> {
        let rows = format != aether_engine::OutputFormat::Table;
        let mut inner = Inner::default();
        if dir.is_some() || rows {
            let spills = spill_dir(
                dir.map_or_else(std::env::temp_dir, Path::to_path_buf)
                    .as_path(),
            )?;
            if let Some(out) = dir {
                inner.spills = Some(Spills::create(out, &spills.0)?);
            }
            if rows {
                inner.console = Some(Spill::create(&spills.0, "console")?);
            }
            inner.dir = Some(spills);
        }
        Ok(Outputs {
            names: names.to_vec(),
            format,
            limit: limit.max(1),
            inner: Mutex::new(inner),
        })
    }

    fn inner(&self) -> Result<std::sync::MutexGuard<'_, Inner>> {
        self.inner
            .lock()
            .map_err(|_| PredictError::Invalid("the outputs' lock is poisoned".into()))
    }

    /// Take one log's result; `key` orders it in every file (the log's place in the input).
    pub fn add(&self, key: u64, q: AppQualification) -> Result<()> {
        let files = self.inner()?.spills.is_some();
        let rows = Rows::of(&q, &self.names, files, self.format)?;
        let mut g = self.inner()?;
        let inner = &mut *g;
        inner.logs += 1;
        if let Some(line) = status_line(&q) {
            inner.lines.push((key, q.status, line));
        }
        if let Some(c) = inner.console.as_mut() {
            c.put(key, &rows.console)?;
        }
        if let Some(s) = inner.spills.as_mut() {
            s.status.put(key, &rows.status)?;
            s.status_older.put(key, &rows.status_older)?;
            s.summary.put(key, &rows.summary)?;
            s.per_sql.put(key, &rows.per_sql)?;
            s.features.put(key, &rows.features)?;
            s.conf.put(key, &rows.conf)?;
            s.cluster.put(key, &rows.cluster)?;
        }
        if q.status != Status::Success {
            return Ok(());
        }
        let name = match &q.attempt_id {
            Some(at) => format!("{}_{at}", q.app_id),
            None => q.app_id.clone(),
        }
        .replace(['/', '\\'], "_");
        inner.qualified.push(Qualified {
            key,
            app_id: q.app_id.as_str().into(),
            attempt: attempt(&q),
            event_log: q.event_log.as_str().into(),
            name: name.into(),
        });
        inner.shown.push((key, q.into_head()));
        if inner.shown.len() >= 2 * self.limit {
            by_speedup(&mut inner.shown);
            inner.shown.truncate(self.limit);
        }
        Ok(())
    }

    /// Write every file of `--output DIR` (each whole, or not at all) and say what the
    /// console shows. Of several qualified logs of one app id, only the newest attempt
    /// counts: the older ones become SKIPPED here.
    pub fn finish(self) -> Result<Finished> {
        let names = self.names;
        let mut inner = self
            .inner
            .into_inner()
            .map_err(|_| PredictError::Invalid("the outputs' lock is poisoned".into()))?;
        let older = older_attempts(
            inner
                .qualified
                .iter()
                .map(|q| (q.key, &*q.app_id, q.attempt)),
        );
        // an older attempt's note, if any, gives way to its SKIPPED line
        inner.lines.retain(|(k, _, _)| !older.contains(k));
        for q in inner.qualified.iter().filter(|q| older.contains(&q.key)) {
            let reason = older_attempt(&q.app_id, q.attempt);
            let l = line(Status::Skipped, &q.event_log, &reason);
            inner.lines.push((q.key, Status::Skipped, l));
        }
        inner.lines.sort_by_key(|(k, _, _)| *k);
        if let Some(s) = inner.spills.take() {
            write_files(s, &names, &older, &mut inner.qualified)?;
        }
        inner.shown.retain(|(k, _)| !older.contains(k));
        let qualified = inner.qualified.len() - older.len();
        if qualified > self.limit {
            by_speedup(&mut inner.shown);
            inner.shown.truncate(self.limit);
        } else {
            inner.shown.sort_by_key(|(k, _)| *k);
        }
        let console = match inner.console.take() {
            Some(c) => Some((c.finish()?, older)),
            None => None,
        };
        let console_kept = console.is_some();
        Ok(Finished {
            shown: inner.shown.into_iter().map(|(_, q)| q).collect(),
            qualified,
            logs: inner.logs,
            lines: inner.lines.into_iter().map(|(_, s, l)| (s, l)).collect(),
            format: self.format,
            console,
            // kept while the console's rows are to be read, else removed now
            _dir: inner.dir.take().filter(|_| console_kept),
        })
    }
}

/// Highest estimated speedup first (input order among equals).
fn by_speedup(v: &mut [(u64, AppQualification)]) {
    v.sort_by(|a, b| {
        b.1.speedup
            .speedup
            .total_cmp(&a.1.speedup.speedup)
            .then(a.0.cmp(&b.0))
    });
}

/// The files of `--output DIR` from the spills, rows in key order.
fn write_files(
    s: Spills,
    names: &[String],
    older: &HashSet<u64>,
    qualified: &mut [Qualified],
) -> Result<()> {
    let Spills {
        out,
        summary,
        status,
        status_older,
        per_sql,
        features,
        conf,
        cluster,
    } = s;
    let empty: &[AppQualification] = &[];
    let none = |_| false;
    // qualification_summary.csv: the qualified apps, an app's older attempts left out
    write_csv(
        &out.join("qualification_summary.csv"),
        &csv_header(report::qualification_summary(empty))?,
        summary.finish()?.rows(|k| older.contains(&k)),
    )?;
    // status.csv: every log, an older attempt's row as SKIPPED
    let (status, status_older) = (status.finish()?, status_older.finish()?);
    write_csv(
        &out.join("status.csv"),
        &csv_header(report::status(empty))?,
        status.index.iter().map(|e| {
            if older.contains(&e.0) {
                Ok(status_older.get(e.0)?.unwrap_or_default())
            } else {
                status.read(*e)
            }
        }),
    )?;
    // per_sql.csv and features.csv: every app judged
    write_csv(
        &out.join("per_sql.csv"),
        &csv_header(report::per_sql(empty))?,
        per_sql.finish()?.rows(none),
    )?;
    write_csv(
        &out.join("features.csv"),
        &csv_header(report::features(empty, names))?,
        features.finish()?.rows(none),
    )?;
    // per qualified app: its Spark configs and cluster shape
    let (conf, cluster) = (conf.finish()?, cluster.finish()?);
    qualified.sort_by_key(|q| q.key);
    let mut used = HashSet::new();
    for q in qualified.iter().filter(|q| !older.contains(&q.key)) {
        let mut name = q.name.to_string();
        let mut n = 1;
        while !used.insert(name.clone()) {
            n += 1;
            name = format!("{}-{n}", q.name);
        }
        let text = conf.get(q.key)?.unwrap_or_default();
        report::write_atomic(&out.join(format!("{name}.conf")), &text)?;
        if let Some(json) = cluster.get(q.key)? {
            report::write_atomic(&out.join(format!("{name}-cluster.json")), &json)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qualify::not_qualified;
    use aether_engine::OutputFormat;

    /// A qualified app: `app` with `attempt`, the estimated `speedup` and a config.
    fn app(log: &str, app: &str, attempt: Option<&str>, speedup: f64) -> AppQualification {
        let mut q = not_qualified(log, Status::Success, String::new());
        q.app_id = app.into();
        q.attempt_id = attempt.map(Into::into);
        q.app_name = format!("name of {app}");
        q.speedup.speedup = speedup;
        q.spark_conf = format!("spark.app.id {app}\n");
        q
    }

    fn csv(b: Result<datafusion::arrow::array::RecordBatch>) -> String {
        let b = b.unwrap();
        aether_engine::render(&b.schema(), &[b], aether_engine::OutputFormat::Csv).unwrap()
    }

    fn results() -> Vec<AppQualification> {
        vec![
            app("/logs/a1", "app-a", Some("1"), 1.5),
            not_qualified("/logs/broken", Status::Failure, "not an event log".into()),
            app("/logs/b", "app-b", None, 3.0),
            app("/logs/a2", "app-a", Some("2"), 2.0),
            app("/logs/c", "app-c,\"quoted\"", None, 0.9),
        ]
    }

    /// Results taken in any order (as worker threads give them) are written in key order, and
    /// each file reads exactly as the whole list rendered at once (an app's older attempt as
    /// SKIPPED, as `qualify_inputs` makes it).
    #[test]
    fn files_in_input_order_equal_the_whole_rendering() {
        let dir = tempfile::tempdir().unwrap();
        let names = vec!["f1".to_string(), "f2".to_string()];
        let out = Outputs::new(Some(dir.path()), &names, OutputFormat::Table).unwrap();
        let all = results();
        for k in [3usize, 0, 4, 1, 2] {
            out.add(k as u64, all[k].clone()).unwrap();
        }
        let done = out.finish().unwrap();
        // what qualify_inputs would give: attempt 1 of app-a skipped
        let mut whole = all.clone();
        whole[0].status = Status::Skipped;
        whole[0].status_reason = older_attempt("app-a", 1);
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert_eq!(read("status.csv"), csv(report::status(&whole)));
        assert_eq!(
            read("qualification_summary.csv"),
            csv(report::qualification_summary(&whole))
        );
        assert_eq!(read("per_sql.csv"), csv(report::per_sql(&whole)));
        assert_eq!(read("features.csv"), csv(report::features(&whole, &names)));
        assert!(read("status.csv").contains("SKIPPED,app-a,1,"));
        // a config per qualified app, none for the older attempt; the spill folder is gone
        let mut files: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                "app-a_2.conf",
                "app-b.conf",
                "app-c,\"quoted\".conf",
                "features.csv",
                "per_sql.csv",
                "qualification_summary.csv",
                "status.csv"
            ]
        );
        assert_eq!(read("app-a_2.conf"), "spark.app.id app-a\n");
        assert_eq!(done.qualified, 3);
        assert_eq!(done.logs, 5);
        let lines: Vec<&str> = done.lines.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(
            lines,
            [
                "SKIPPED: /logs/a1: app app-a: attempt 1 skipped, a newer attempt is qualified",
                "FAILURE: /logs/broken: not an event log"
            ]
        );
        let shown: Vec<&str> = done.shown.iter().map(|q| q.event_log.as_str()).collect();
        assert_eq!(shown, ["/logs/b", "/logs/a2", "/logs/c"]);
    }

    /// Beyond the console's limit, it shows the apps with the highest estimated speedup and
    /// says so; every app is still in the files. Copies of one app id get their own config
    /// file names, in input order.
    #[test]
    fn the_console_shows_the_fastest_beyond_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let out = Outputs::with_limit(Some(dir.path()), &[], OutputFormat::Table, 2).unwrap();
        let speedups = [1.1, 4.0, 0.5, 2.5, 3.0, 1.0, 2.0];
        for (k, s) in speedups.iter().enumerate().rev() {
            out.add(k as u64, app(&format!("/logs/{k}"), "same", None, *s))
                .unwrap();
        }
        let done = out.finish().unwrap();
        let shown: Vec<f64> = done.shown.iter().map(|q| q.speedup.speedup).collect();
        assert_eq!(shown, [4.0, 3.0]);
        let mut text = Vec::new();
        done.print(&mut text, false, None, Some(dir.path()))
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("2 of 7 qualified apps shown, those with the highest estimated speedup"),
            "{text}"
        );
        let summary = std::fs::read_to_string(dir.path().join("qualification_summary.csv"));
        assert_eq!(summary.unwrap().lines().count(), 1 + speedups.len());
        assert!(dir.path().join("same.conf").exists());
        assert!(dir.path().join("same-7.conf").exists());
        assert!(!dir.path().join("same-8.conf").exists());
    }

    /// The spill folder of a run killed with -9 is removed by the next run into the folder;
    /// another live process's is left alone.
    #[test]
    fn a_killed_runs_spill_folder_is_removed_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(".spill-4294967295");
        let live = dir.path().join(".spill-1"); // init never exits
        for d in [&dead, &live] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("summary"), "rows").unwrap();
        }
        Outputs::new(Some(dir.path()), &[], OutputFormat::Table)
            .unwrap()
            .finish()
            .unwrap();
        assert!(!dead.exists());
        assert!(live.exists());
        assert!(dir.path().join("status.csv").exists());
    }

    /// Without `--output`, nothing is written; the console still has its apps. In CSV and
    /// JSON it prints every qualified app (beyond the table's limit too), exactly as the whole
    /// list rendered at once.
    #[test]
    fn csv_and_json_consoles_print_every_app() {
        let all = results();
        let mut whole = all.clone();
        whole.remove(0); // the older attempt
        whole.remove(0); // the failure
        for format in [OutputFormat::Csv, OutputFormat::Json, OutputFormat::Table] {
            for (n, explain) in [(all.len(), false), (0, false), (all.len(), true)] {
                let out = Outputs::with_limit(None, &[], format, 2).unwrap();
                for (k, q) in all.iter().take(n).enumerate().rev() {
                    out.add(k as u64, q.clone()).unwrap();
                }
                let done = out.finish().unwrap();
                let mut printed = Vec::new();
                done.print(&mut printed, explain, None, None).unwrap();
                let printed = String::from_utf8(printed).unwrap();
                let apps = &whole[..n.min(whole.len())];
                if format == OutputFormat::Table {
                    let shown = if n == 0 { 0 } else { 2 };
                    assert_eq!(done.shown.len(), shown);
                    continue;
                }
                // what printing the whole list at once gives (report::summary_text)
                let expected = report::summary_text(apps, format, false, None).unwrap();
                let why = if explain {
                    report::reasons_text(&done.shown)
                } else {
                    String::new()
                };
                assert_eq!(
                    printed,
                    format!("{expected}{why}\n"),
                    "{format:?} {n} {explain}"
                );
            }
        }
        // nothing left behind in the temporary folder
        let spill = std::env::temp_dir().join(format!(".spill-{}", std::process::id()));
        assert!(!spill.exists());
    }
}
