//! `aether sql`'s statements: one query from the command line, a script on stdin, or an
//! interactive shell on one session (line editing, history, completion, dot commands), as
//! DuckDB's and SQLite's command lines do. Views are defined as statements first read them.

use aether_engine::{OutputFormat, SessionContext};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// `.read` files reading `.read` files: at most this deep.
const MAX_READ_DEPTH: usize = 16;

/// Rows a table result shows in the interactive shell before it is cut (`.maxrows`).
const DEFAULT_MAX_ROWS: usize = 40;

const HELP: &str = "\
Statements end with ';' and may span lines. Dot commands:
  .tables              the tables (event-log tables, derived.* of a warehouse)
  .views               the views (sql/*.sql and those you create)
  .schema NAME         the columns of a table or view
  .format table|csv|json   (.mode too)
  .output [FILE]       results to FILE (appended; .csv / .json set the format), none: stdout
  .once FILE           the next result to FILE: .csv, .json or .parquet
  .maxrows N           table results show N rows at most (0: all)
  .timer on|off        print each statement's run time
  .read FILE           run the statements of FILE
  .help                this text
  .quit  \\q            leave (Ctrl-D too)";

/// The dot commands, for completion.
const DOT_COMMANDS: &[&str] = &[
    ".tables", ".views", ".schema", ".format", ".mode", ".output", ".once", ".maxrows", ".timer",
    ".read", ".help", ".quit", ".exit",
];

/// Words completed besides the names of tables, views and columns.
const KEYWORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "ORDER",
    "HAVING",
    "LIMIT",
    "JOIN",
    "LEFT",
    "RIGHT",
    "FULL",
    "INNER",
    "OUTER",
    "CROSS",
    "USING",
    "ON",
    "AS",
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS",
    "NULL",
    "DISTINCT",
    "UNION",
    "ALL",
    "WITH",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "CAST",
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "DESC",
    "ASC",
    "BETWEEN",
    "LIKE",
    "CREATE",
    "VIEW",
    "DESCRIBE",
    "SHOW",
    "TABLES",
    "EXPLAIN",
    "OVER",
    "PARTITION",
    "approx_median",
    "approx_percentile_cont",
];

/// Where results go.
enum Sink {
    /// Printed on stdout.
    Stdout,
    /// `--output FILE`: each result replaces the file, in the format of its extension.
    Replace(PathBuf),
    /// `.output FILE`: results appended as text.
    Append(PathBuf, std::fs::File),
}

/// Whether to go on reading statements.
#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

/// One session's statements and settings.
pub struct Shell<'a> {
    rt: &'a tokio::runtime::Runtime,
    ctx: SessionContext,
    format: OutputFormat,
    timer: bool,
    /// Table results to the terminal are cut to this many rows (0: all); interactive only.
    max_rows: usize,
    /// A shell on a terminal (Ctrl-C stops a statement).
    interactive: bool,
    /// `.read` files being run, nested.
    reading: usize,
    sink: Sink,
    once: Option<PathBuf>,
    /// Statements and commands that failed.
    pub errors: usize,
    /// Names for completion, refreshed after statements that may change them.
    names: Arc<Mutex<Option<Vec<String>>>>,
}

impl<'a> Shell<'a> {
    /// A shell on `ctx`; `interactive` cuts long table results (`.maxrows`).
    pub fn new(
        rt: &'a tokio::runtime::Runtime,
        ctx: SessionContext,
        format: OutputFormat,
        interactive: bool,
    ) -> Shell<'a> {
        Shell {
            rt,
            ctx,
            format,
            timer: false,
            max_rows: if interactive { DEFAULT_MAX_ROWS } else { 0 },
            interactive,
            reading: 0,
            sink: Sink::Stdout,
            once: None,
            errors: 0,
            names: Arc::new(Mutex::new(None)),
        }
    }

    /// Results go to `path` (replaced by each result, in its extension's format).
    pub fn output_to(&mut self, path: PathBuf) -> anyhow::Result<()> {
        aether_engine::FileFormat::of(&path)?;
        self.sink = Sink::Replace(path);
        Ok(())
    }

    /// Run the statements and dot commands of `text` (a query, a script, a `.read` file); the
    /// last statement needs no `;`.
    pub fn run_text(&mut self, text: &str) {
        let mut pending = String::new();
        for line in text.lines() {
            if self.feed(&mut pending, line) == Flow::Quit {
                return;
            }
        }
        self.finish(&mut pending);
    }

    /// One line of input: a dot command (between statements), or more of a statement, whose
    /// complete statements run now.
    fn feed(&mut self, pending: &mut String, line: &str) -> Flow {
        if !has_content(pending) {
            let t = line.trim();
            if t.starts_with('.') || t.starts_with('\\') {
                pending.clear();
                return self.dot(t.trim_end_matches(';').trim_end());
            }
        }
        pending.push_str(line);
        pending.push('\n');
        let (statements, rest) = split_statements(pending);
        *pending = rest;
        for s in statements {
            self.statement(&s);
        }
        Flow::Continue
    }

    /// Run what is left of the input (a statement without its `;`).
    fn finish(&mut self, pending: &mut String) {
        if has_content(pending) {
            let s = std::mem::take(pending);
            self.statement(s.trim());
        }
        pending.clear();
    }

    /// Report a failed statement or command (or an unreadable part of the input): shown on
    /// stderr; a script then exits non-zero, the shell goes on.
    pub fn fail(&mut self, msg: impl std::fmt::Display) {
        eprintln!("error: {msg}");
        self.errors += 1;
    }

    /// Run one SQL statement (after defining the views it reads) and show its result.
    fn statement(&mut self, sql: &str) {
        let t0 = Instant::now();
        let ctx = self.ctx.clone();
        let owned = sql.to_string();
        let work = async move {
            aether_engine::views::register_views_for(&ctx, &owned).await?;
            aether_engine::query(&ctx, &owned).await
        };
        let res = if self.interactive {
            // Ctrl-C stops the statement, not the shell (and the logs it has read)
            let _guard = SigintGuard::install();
            let task = self.rt.spawn(work);
            while !task.is_finished() && !CANCEL.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            if !task.is_finished() {
                task.abort();
            }
            match self.rt.block_on(task) {
                Ok(r) => r,
                Err(e) if e.is_cancelled() => {
                    eprintln!("cancelled (Ctrl-C)");
                    return;
                }
                Err(e) => Err(aether_engine::EngineError::Other(e.to_string())),
            }
        } else {
            self.rt.block_on(work)
        };
        match res {
            Ok((schema, batches)) => {
                if let Err(e) = self.emit(&schema, &batches) {
                    self.fail(e);
                }
            }
            Err(e) => self.fail(format_args!("query failed: {e}")),
        }
        if self.timer {
            eprintln!("Run Time (s): real {:.3}", t0.elapsed().as_secs_f64());
        }
        let upper = sql.trim_start().to_ascii_uppercase();
        if ["CREATE", "DROP", "ALTER"]
            .iter()
            .any(|k| upper.starts_with(k))
            && let Ok(mut n) = self.names.lock()
        {
            *n = None;
        }
    }

    /// Show a result where results go now.
    fn emit(&mut self, schema: &SchemaRef, batches: &[RecordBatch]) -> anyhow::Result<()> {
        if schema.fields().is_empty() {
            return Ok(()); // a statement without a result (CREATE VIEW, SET)
        }
        if let Some(path) = self.once.take() {
            aether_engine::write_result(&path, schema, batches)?;
            let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
            eprintln!("wrote {rows} row(s) to {}", path.display());
            return Ok(());
        }
        match &mut self.sink {
            Sink::Replace(path) => aether_engine::write_result(path, schema, batches)?,
            Sink::Append(path, file) => {
                let text = aether_engine::render(schema, batches, self.format)?;
                writeln!(file, "{}", text.trim_end())
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            }
            Sink::Stdout => {
                let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
                let cut = self.format == OutputFormat::Table
                    && self.max_rows > 0
                    && total > self.max_rows;
                let shown = if cut {
                    first_rows(batches, self.max_rows)
                } else {
                    batches.to_vec()
                };
                let text = aether_engine::render(schema, &shown, self.format)?;
                let mut out = std::io::stdout().lock();
                writeln!(out, "{}", text.trim_end())?;
                if cut {
                    writeln!(
                        out,
                        "({total} rows, the first {} shown: .maxrows N for more, 0 for all; .once FILE for every row)",
                        self.max_rows
                    )?;
                }
                out.flush()?;
            }
        }
        Ok(())
    }

    /// A dot command (or `\q`).
    fn dot(&mut self, line: &str) -> Flow {
        let mut words = line.split_whitespace();
        let cmd = words.next().unwrap_or_default();
        let args: Vec<&str> = words.collect();
        let arg = args.first().copied();
        match (cmd, arg) {
            (".quit" | ".exit" | "\\q", _) => return Flow::Quit,
            (".help", _) => println!("{HELP}"),
            (".tables", _) => match self.listing(false) {
                Ok(names) => print_columns(&names),
                Err(e) => self.fail(e),
            },
            (".views", _) => match self.listing(true) {
                Ok(names) => print_columns(&names),
                Err(e) => self.fail(e),
            },
            (".schema", Some(name)) => {
                let name = name.trim_end_matches(';').to_string();
                self.statement(&format!("DESCRIBE {name}"));
            }
            (".format" | ".mode", Some(f)) => match f {
                "table" => self.format = OutputFormat::Table,
                "csv" => self.format = OutputFormat::Csv,
                "json" => self.format = OutputFormat::Json,
                _ => self.fail(format_args!("{line}: the formats are table, csv, json")),
            },
            (".output", None) => self.sink = Sink::Stdout,
            (".output", Some(f)) => {
                let path = PathBuf::from(f);
                match aether_engine::FileFormat::of(&path) {
                    Ok(aether_engine::FileFormat::Csv) => self.format = OutputFormat::Csv,
                    Ok(aether_engine::FileFormat::Json) => self.format = OutputFormat::Json,
                    Ok(aether_engine::FileFormat::Parquet) => {
                        self.fail(format_args!(
                            "{f}: a Parquet file holds one result: use .once {f}"
                        ));
                        return Flow::Continue;
                    }
                    Err(_) => {}
                }
                match std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                {
                    Ok(file) => self.sink = Sink::Append(path, file),
                    Err(e) => self.fail(format_args!("{f}: {e}")),
                }
            }
            (".once", Some(f)) => {
                let path = PathBuf::from(f);
                match aether_engine::FileFormat::of(&path) {
                    Ok(_) => self.once = Some(path),
                    Err(e) => self.fail(e),
                }
            }
            (".maxrows", Some(n)) => match n.parse() {
                Ok(n) => self.max_rows = n,
                Err(_) => self.fail(format_args!("{line}: expected a number of rows")),
            },
            (".timer", Some("on")) => self.timer = true,
            (".timer", Some("off")) => self.timer = false,
            (".read", Some(f)) if self.reading >= MAX_READ_DEPTH => self.fail(format_args!(
                "{f}: .read nested {MAX_READ_DEPTH} deep (a file reading itself?)"
            )),
            (".read", Some(f)) => match std::fs::read(f) {
                Ok(bytes) => {
                    let (text, bad) = script_text(f, bytes);
                    if let Some(bad) = bad {
                        self.fail(bad);
                    }
                    self.reading += 1;
                    self.run_text(&text);
                    self.reading -= 1;
                }
                Err(e) => self.fail(format_args!("{f}: {e}")),
            },
            (".schema" | ".format" | ".once" | ".maxrows" | ".timer" | ".read", _) => {
                self.fail(format_args!("{line}: missing or bad argument (.help)"))
            }
            _ => self.fail(format_args!("unknown command {cmd} (.help lists them)")),
        }
        Flow::Continue
    }

    /// The tables (`views` false) or the views of the session, including views not defined yet.
    fn listing(&self, views: bool) -> anyhow::Result<Vec<String>> {
        let ctx = &self.ctx;
        let mut out: Vec<String> = Vec::new();
        let builtin: Vec<&str> = aether_engine::views::VIEW_FILES
            .iter()
            .map(|(n, _)| *n)
            .collect();
        if views {
            out.extend(builtin.iter().map(|s| s.to_string()));
        }
        let catalog = ctx
            .catalog("aether")
            .ok_or_else(|| anyhow::anyhow!("no catalog aether"))?;
        for schema_name in catalog.schema_names() {
            let Some(schema) = catalog.schema(&schema_name) else {
                continue;
            };
            for t in schema.table_names() {
                if schema_name == "public" && builtin.contains(&t.as_str()) {
                    continue;
                }
                let is_view = self
                    .rt
                    .block_on(schema.table(&t))
                    .ok()
                    .flatten()
                    .is_some_and(|p| p.table_type() == datafusion::datasource::TableType::View);
                if is_view == views {
                    out.push(if schema_name == "public" {
                        t
                    } else {
                        format!("{schema_name}.{t}")
                    });
                }
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// The interactive shell: prompts until `.quit`, `\q` or Ctrl-D; Ctrl-C drops the
    /// statement being typed. History in `<aether home>/sql_history`.
    pub fn interactive(&mut self, banner: &str) -> anyhow::Result<()> {
        use rustyline::error::ReadlineError;
        let config = rustyline::Config::builder()
            .auto_add_history(false)
            .completion_type(rustyline::CompletionType::List)
            .max_history_size(10_000)?
            .build();
        let mut rl: rustyline::Editor<Completion, rustyline::history::FileHistory> =
            rustyline::Editor::with_config(config)?;
        rl.set_helper(Some(Completion {
            names: self.names.clone(),
            ctx: self.ctx.clone(),
            handle: self.rt.handle().clone(),
        }));
        let history = aether_core::ConfigFile::home().join("sql_history");
        let _ = rl.load_history(&history);
        println!("{banner}");
        println!("Enter .help for the commands, \\q to quit; statements end with ';'.");
        let mut pending = String::new();
        loop {
            let prompt = if has_content(&pending) {
                "   ...> "
            } else {
                "aether> "
            };
            match rl.readline(prompt) {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = rl.add_history_entry(line.as_str());
                    }
                    if self.feed(&mut pending, &line) == Flow::Quit {
                        break;
                    }
                }
                Err(ReadlineError::Interrupted) => {
                    pending.clear();
                }
                Err(ReadlineError::Eof) => break,
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(dir) = history.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = rl.save_history(&history) {
            tracing::debug!(error = %e, "history not saved");
        }
        Ok(())
    }
}

/// Set by Ctrl-C while a shell statement runs.
static CANCEL: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    CANCEL.store(true, Ordering::SeqCst);
}

/// SIGINT sets [`CANCEL`] while this lives; the previous handling comes back when dropped.
struct SigintGuard {
    old: libc::sighandler_t,
}

impl SigintGuard {
    fn install() -> SigintGuard {
        CANCEL.store(false, Ordering::SeqCst);
        let handler: extern "C" fn(libc::c_int) = on_sigint;
        // SAFETY: the handler only stores into an atomic, which is async-signal-safe
        let old = unsafe { libc::signal(libc::SIGINT, handler as libc::sighandler_t) };
        SigintGuard { old }
    }
}

impl Drop for SigintGuard {
    fn drop(&mut self) {
        // SAFETY: puts back the disposition signal() returned
        unsafe { libc::signal(libc::SIGINT, self.old) };
    }
}

/// The first `n` rows of `batches`.
fn first_rows(batches: &[RecordBatch], n: usize) -> Vec<RecordBatch> {
    let mut left = n;
    let mut out = Vec::new();
    for b in batches {
        if left == 0 {
            break;
        }
        let take = b.num_rows().min(left);
        out.push(b.slice(0, take));
        left -= take;
    }
    out
}

/// Names side by side in columns, as `.tables` prints them.
fn print_columns(names: &[String]) {
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) + 2;
    let per_line = (100 / width.max(1)).max(1);
    let rows = names.len().div_ceil(per_line);
    for r in 0..rows {
        let mut line = String::new();
        for c in 0..per_line {
            if let Some(n) = names.get(c * rows + r) {
                line.push_str(&format!("{n:<width$}"));
            }
        }
        println!("{}", line.trim_end());
    }
}

/// Whether `s` holds anything but blanks and comments.
fn has_content(s: &str) -> bool {
    let (statements, rest) = split_statements(s);
    !statements.is_empty() || !strip_comments(&rest).trim().is_empty()
}

fn strip_comments(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '-' if chars.peek() == Some(&'-') => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for d in chars.by_ref() {
                    if prev == '*' && d == '/' {
                        break;
                    }
                    prev = d;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The complete statements of `text` (each up to a `;` outside quotes and comments, trimmed,
/// without it; blank ones dropped) and what follows the last `;`.
pub fn split_statements(text: &str) -> (Vec<String>, String) {
    #[derive(PartialEq)]
    enum State {
        Code,
        Single,
        Double,
        Line,
        Block,
    }
    let mut state = State::Code;
    let mut out = Vec::new();
    let mut start = 0;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        match state {
            State::Code => match c {
                b'\'' => state = State::Single,
                b'"' => state = State::Double,
                b'-' if next == Some(b'-') => state = State::Line,
                b'/' if next == Some(b'*') => {
                    state = State::Block;
                    i += 1;
                }
                b';' => {
                    let s = &text[start..i];
                    if !strip_comments(s).trim().is_empty() {
                        out.push(s.trim().to_string());
                    }
                    start = i + 1;
                }
                _ => {}
            },
            State::Single if c == b'\'' => state = State::Code,
            State::Double if c == b'"' => state = State::Code,
            State::Line if c == b'\n' => state = State::Code,
            State::Block if c == b'*' && next == Some(b'/') => {
                state = State::Code;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    (out, text[start..].to_string())
}

/// Tab completion: dot commands at the start of a line; else table, view and column names and
/// keywords. The first completion defines every view, so their columns complete too.
struct Completion {
    names: Arc<Mutex<Option<Vec<String>>>>,
    ctx: SessionContext,
    handle: tokio::runtime::Handle,
}

impl Completion {
    fn names(&self) -> Vec<String> {
        let mut guard = match self.names.lock() {
            Ok(g) => g,
            Err(e) => e.into_inner(),
        };
        if let Some(n) = guard.as_ref() {
            return n.clone();
        }
        let names = self.handle.block_on(collect_names(&self.ctx));
        *guard = Some(names.clone());
        names
    }
}

/// Every table, view and column name of the session (every view defined first).
async fn collect_names(ctx: &SessionContext) -> Vec<String> {
    let _ =
        aether_engine::views::register_views_for(ctx, "SELECT * FROM information_schema.tables")
            .await;
    let mut names: Vec<String> = KEYWORDS.iter().map(|k| k.to_string()).collect();
    if let Some(catalog) = ctx.catalog("aether") {
        for schema_name in catalog.schema_names() {
            let Some(schema) = catalog.schema(&schema_name) else {
                continue;
            };
            for t in schema.table_names() {
                names.push(if schema_name == "public" {
                    t.clone()
                } else {
                    format!("{schema_name}.{t}")
                });
                if let Ok(Some(p)) = schema.table(&t).await {
                    names.extend(p.schema().fields().iter().map(|f| f.name().clone()));
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

impl rustyline::completion::Completer for Completion {
    type Candidate = rustyline::completion::Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Self::Candidate>)> {
        let before = &line[..pos];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '.'))
            .map(|(i, c)| i + c.len_utf8())
            .unwrap_or(0);
        let word = &before[start..];
        let pair = |s: &str| rustyline::completion::Pair {
            display: s.to_string(),
            replacement: s.to_string(),
        };
        if before.trim_start().starts_with('.') && !before.trim_start().contains(' ') {
            let cands = DOT_COMMANDS
                .iter()
                .filter(|c| c.starts_with(word))
                .map(|c| pair(c))
                .collect();
            return Ok((start, cands));
        }
        if word.is_empty() {
            return Ok((pos, Vec::new()));
        }
        let names = self.names();
        let lower = word.to_ascii_lowercase();
        let mut cands: Vec<_> = names
            .iter()
            .filter(|n| n.to_ascii_lowercase().starts_with(&lower))
            .map(|n| pair(n))
            .collect();
        // `alias.col`: the column after the dot
        if cands.is_empty()
            && let Some(dot) = word.rfind('.')
        {
            let col = &lower[dot + 1..];
            cands = names
                .iter()
                .filter(|n| !n.contains('.') && n.to_ascii_lowercase().starts_with(col))
                .map(|n| pair(n))
                .collect();
            return Ok((start + dot + 1, cands));
        }
        Ok((start, cands))
    }
}

impl rustyline::hint::Hinter for Completion {
    type Hint = String;
}
impl rustyline::highlight::Highlighter for Completion {}
impl rustyline::validate::Validator for Completion {}
impl rustyline::Helper for Completion {}

/// Read all of stdin (a script): its text, and what was wrong with it if it was not UTF-8
/// (see [`script_text`]).
pub fn read_stdin() -> anyhow::Result<(String, Option<String>)> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)?;
    Ok(script_text("stdin", bytes))
}

/// A script's text. Bytes that are not UTF-8 read as U+FFFD, so the rest of the script still
/// runs, and the second value names the source and the first bad line (the caller reports it as
/// a failure).
pub fn script_text(source: &str, bytes: Vec<u8>) -> (String, Option<String>) {
    match String::from_utf8(bytes) {
        Ok(s) => (s, None),
        Err(e) => {
            let bytes = e.as_bytes();
            let good = e.utf8_error().valid_up_to();
            let line = 1 + bytes[..good].iter().filter(|&&b| b == b'\n').count();
            let msg =
                format!("{source}: line {line} is not valid UTF-8 (its bad bytes read as U+FFFD)");
            (String::from_utf8_lossy(bytes).into_owned(), Some(msg))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_at_semicolons_outside_quotes_and_comments() {
        let (s, rest) = split_statements(
            "SELECT ';' AS a; -- a comment; still a comment\nSELECT \"x;y\" FROM t /* ; */ WHERE b = 'it''s';\n  SELECT 3",
        );
        assert_eq!(
            s,
            vec![
                "SELECT ';' AS a".to_string(),
                "-- a comment; still a comment\nSELECT \"x;y\" FROM t /* ; */ WHERE b = 'it''s'"
                    .to_string()
            ]
        );
        assert_eq!(rest.trim(), "SELECT 3");
        // blank and comment-only statements are dropped; an open quote waits for more
        let (s, rest) = split_statements(";; -- nothing\n; SELECT 'a;");
        assert!(s.is_empty(), "{s:?}");
        assert_eq!(rest, " SELECT 'a;");
        assert!(has_content(&rest));
        assert!(!has_content("  -- only a comment\n/* and this */ "));
    }

    #[test]
    fn first_rows_cuts_across_batches() {
        use datafusion::arrow::array::Int64Array;
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        let batch = |v: Vec<i64>| {
            RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(v))]).unwrap()
        };
        let cut = first_rows(
            &[batch(vec![1, 2, 3]), batch(vec![4, 5]), batch(vec![6])],
            4,
        );
        let rows: Vec<usize> = cut.iter().map(RecordBatch::num_rows).collect();
        assert_eq!(rows, vec![3, 1]);
    }
}
