//! aether-shell: `aether sql`'s statements — one query from the command line, a script on
//! stdin, or an interactive shell on one session (line editing, history, completion, dot
//! commands), as DuckDB's and SQLite's command lines do. Views are defined as statements first
//! read them.
//!
//! Owns: splitting statements as DataFusion reads them, running them on a session, printing
//! results (table, CSV, JSON) to the terminal or a file, the dot commands, Ctrl-C that stops
//! one statement, the shell's history file. It is a terminal component: it prints.
//!
//! Does not own: the tables and views (aether-engine), reading logs (aether-ingest).

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
    /// End the session (`.quit`, or stdout closed: `aether sql … | head`).
    Quit,
    /// Stop the input being run (a `.read` file and those reading it), not the shell: Ctrl-C.
    Stop,
}

/// What went wrong in the shell: a query, a write, the terminal.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    #[error(transparent)]
    Engine(#[from] aether_engine::EngineError),
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// Reading or writing the terminal or a file (kept as the source: a closed pipe is told
    /// from it).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Appending a result to a file.
    #[error("{path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The line editor.
    #[error(transparent)]
    Readline(#[from] rustyline::error::ReadlineError),
    #[error("{0}")]
    Other(String),
}

/// Result of the shell.
pub type Result<T> = std::result::Result<T, ShellError>;

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
    /// The format results had on the terminal before `.output FILE` changed it.
    stdout_format: Option<OutputFormat>,
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
            stdout_format: None,
            once: None,
            errors: 0,
            names: Arc::new(Mutex::new(None)),
        }
    }

    /// Results go to `path` (replaced by each result, in its extension's format).
    pub fn output_to(&mut self, path: PathBuf) -> Result<()> {
        aether_engine::FileFormat::of(&path)?;
        self.sink = Sink::Replace(path);
        Ok(())
    }

    /// Run the statements and dot commands of `text` (a query, a script, a `.read` file); the
    /// last statement needs no `;`.
    pub fn run_text(&mut self, text: &str) {
        self.run_input(text);
    }

    fn run_input(&mut self, text: &str) -> Flow {
        let mut pending = String::new();
        for line in text.lines() {
            match self.feed(&mut pending, line) {
                Flow::Continue => {}
                stop => return stop,
            }
        }
        self.finish(&mut pending)
    }

    /// One line of input: a dot command (between statements), or more of a statement, whose
    /// complete statements run now.
    fn feed(&mut self, pending: &mut String, line: &str) -> Flow {
        if !waits_for_more(pending) {
            let t = line.trim();
            if is_command(t) {
                pending.clear();
                return self.dot(t.trim_end_matches(';').trim_end());
            }
        }
        pending.push_str(line);
        pending.push('\n');
        let (statements, rest) = split_statements(pending);
        *pending = rest;
        for s in statements {
            match self.statement(&s) {
                Flow::Continue => {}
                stop => return stop,
            }
        }
        Flow::Continue
    }

    /// Run what is left of the input (a statement without its `;`).
    fn finish(&mut self, pending: &mut String) -> Flow {
        let flow = if has_content(pending) {
            let s = std::mem::take(pending);
            self.statement(s.trim())
        } else {
            Flow::Continue
        };
        pending.clear();
        flow
    }

    /// Report a failed statement or command (or an unreadable part of the input): shown on
    /// stderr; a script then exits non-zero, the shell goes on.
    pub fn fail(&mut self, msg: impl std::fmt::Display) {
        eprintln!("error: {msg}");
        self.errors += 1;
    }

    /// Run one SQL statement (after defining the views it reads) and show its result.
    fn statement(&mut self, sql: &str) -> Flow {
        let t0 = Instant::now();
        let ctx = self.ctx.clone();
        let owned = sql.to_string();
        // a table result for the terminal holds only the rows it shows (the rest are counted)
        let keep = (self.format == OutputFormat::Table
            && self.max_rows > 0
            && self.once.is_none()
            && matches!(self.sink, Sink::Stdout))
        .then_some(self.max_rows);
        let work = async move {
            aether_engine::views::register_views_for(&ctx, &owned).await?;
            aether_engine::query_head(&ctx, &owned, keep).await
        };
        // Ctrl-C stops the statement and what it prints, not the shell (and the logs it has read)
        let _guard = self.interactive.then(SigintGuard::install);
        let res = if self.interactive {
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
                    return Flow::Stop;
                }
                Err(e) => Err(aether_engine::EngineError::Other(e.to_string())),
            }
        } else {
            self.rt.block_on(work)
        };
        let mut flow = Flow::Continue;
        match res {
            Ok((schema, batches, total)) => match self.emit(&schema, &batches, total) {
                Ok(f) => flow = f,
                Err(e) if is_broken_pipe(&e) => return Flow::Quit,
                Err(e) => self.fail(e),
            },
            Err(e) => self.fail(format_args!("query failed: {e}")),
        }
        if self.timer {
            eprintln!("Run Time (s): real {:.3}", t0.elapsed().as_secs_f64());
        }
        let upper = aether_engine::views::skip_leading_comments(sql).to_ascii_uppercase();
        if ["CREATE", "DROP", "ALTER"]
            .iter()
            .any(|k| upper.starts_with(k))
            && let Ok(mut n) = self.names.lock()
        {
            *n = None;
        }
        flow
    }

    /// Show a result where results go now: [`Flow::Stop`] when Ctrl-C cut the printing short.
    /// `batches` may hold fewer than the `total` rows of the result (see `keep` above).
    fn emit(&mut self, schema: &SchemaRef, batches: &[RecordBatch], total: usize) -> Result<Flow> {
        if schema.fields().is_empty() {
            return Ok(Flow::Continue); // a statement without a result (CREATE VIEW, SET)
        }
        if let Some(path) = self.once.take() {
            aether_engine::write_result(&path, schema, batches)?;
            let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
            eprintln!("wrote {rows} row(s) to {}", path.display());
            return Ok(Flow::Continue);
        }
        match &mut self.sink {
            Sink::Replace(path) => aether_engine::write_result(path, schema, batches)?,
            Sink::Append(path, file) => {
                let text = aether_engine::render(schema, batches, self.format)?;
                writeln!(file, "{}", text.trim_end()).map_err(|source| ShellError::Write {
                    path: path.display().to_string(),
                    source,
                })?;
            }
            Sink::Stdout => {
                // the statement held only the rows shown (`keep`): the rest were counted
                let cut = total > batches.iter().map(RecordBatch::num_rows).sum();
                let text = aether_engine::render(schema, batches, self.format)?;
                let mut out = std::io::stdout().lock();
                // in pieces, so that Ctrl-C stops a long print
                for piece in text.trim_end().as_bytes().chunks(64 * 1024) {
                    if self.interactive && CANCEL.load(Ordering::SeqCst) {
                        writeln!(out)?;
                        out.flush()?;
                        eprintln!("cancelled (Ctrl-C)");
                        return Ok(Flow::Stop);
                    }
                    out.write_all(piece)?;
                }
                writeln!(out)?;
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
        Ok(Flow::Continue)
    }

    /// A dot command (or `\q`).
    fn dot(&mut self, line: &str) -> Flow {
        // the argument is the rest of the line (a file name may hold blanks), quotes taken off
        let (cmd, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        let unquoted = ['\'', '"']
            .iter()
            .find_map(|q| rest.strip_prefix(*q).and_then(|r| r.strip_suffix(*q)))
            .unwrap_or(rest);
        let arg = Some(unquoted).filter(|a| !a.is_empty());
        match (cmd, arg) {
            (".quit" | ".exit" | "\\q", _) => return Flow::Quit,
            (".help", _) => return print_or_quit(&format!("{HELP}\n")),
            (".tables", _) => match self.listing(false) {
                Ok(names) => return print_or_quit(&columns(&names)),
                Err(e) => self.fail(e),
            },
            (".views", _) => match self.listing(true) {
                Ok(names) => return print_or_quit(&columns(&names)),
                Err(e) => self.fail(e),
            },
            (".schema", Some(_)) => {
                // the name as SQL writes it: "My Table" keeps its quotes
                let name = rest.trim_end_matches(';').to_string();
                return self.statement(&format!("DESCRIBE {name}"));
            }
            (".format" | ".mode", Some(f)) => match f {
                "table" => self.format = OutputFormat::Table,
                "csv" => self.format = OutputFormat::Csv,
                "json" => self.format = OutputFormat::Json,
                _ => self.fail(format_args!("{line}: the formats are table, csv, json")),
            },
            (".output", None) => {
                self.sink = Sink::Stdout;
                if let Some(f) = self.stdout_format.take() {
                    self.format = f;
                }
            }
            (".output", Some(f)) => {
                let path = PathBuf::from(f);
                let format = match aether_engine::FileFormat::of(&path) {
                    Ok(aether_engine::FileFormat::Csv) => OutputFormat::Csv,
                    Ok(aether_engine::FileFormat::Json) => OutputFormat::Json,
                    Ok(aether_engine::FileFormat::Parquet) => {
                        self.fail(format_args!(
                            "{f}: a Parquet file holds one result: use .once {f}"
                        ));
                        return Flow::Continue;
                    }
                    Err(_) => self.format,
                };
                match std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                {
                    Ok(file) => {
                        // the format of the terminal comes back with `.output`
                        if matches!(self.sink, Sink::Stdout) {
                            self.stdout_format = Some(self.format);
                        }
                        self.format = format;
                        self.sink = Sink::Append(path, file);
                    }
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
                    let flow = self.run_input(&text);
                    self.reading -= 1;
                    return flow;
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
    fn listing(&self, views: bool) -> Result<Vec<String>> {
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
            .ok_or_else(|| ShellError::Other("no catalog aether".into()))?;
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
    pub fn interactive(&mut self, banner: &str) -> Result<()> {
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
            let prompt = if waits_for_more(&pending) {
                "   ...> "
            } else {
                "aether> "
            };
            match rl.readline(prompt) {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = rl.add_history_entry(line.as_str());
                    }
                    // Ctrl-C from here to the next prompt stops this line's work, not the shell
                    let guard = SigintGuard::install();
                    let flow = self.feed(&mut pending, &line);
                    drop(guard);
                    match flow {
                        Flow::Quit => break,
                        Flow::Stop => pending.clear(),
                        Flow::Continue => {}
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

/// Names side by side in columns, as `.tables` prints them.
fn columns(names: &[String]) -> String {
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) + 2;
    let per_line = (100 / width.max(1)).max(1);
    let rows = names.len().div_ceil(per_line);
    let mut out = String::new();
    for r in 0..rows {
        let mut line = String::new();
        for c in 0..per_line {
            if let Some(n) = names.get(c * rows + r) {
                line.push_str(&format!("{n:<width$}"));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Print `text` on stdout; [`Flow::Quit`] when stdout is closed (`aether sql … | head`).
fn print_or_quit(text: &str) -> Flow {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Flow::Quit,
        _ => Flow::Continue,
    }
}

/// Whether `e` is a write to a closed pipe.
fn is_broken_pipe(e: &ShellError) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        cur = c.source();
    }
    false
}

/// Whether `s` holds anything but blanks and comments.
fn has_content(s: &str) -> bool {
    let scan = scan(s);
    !scan.statements.is_empty() || scan.rest_has_code
}

/// Whether `s` is an unfinished statement, or ends inside a comment: the next line continues it
/// (and a line starting with `.` is not a dot command).
fn waits_for_more(s: &str) -> bool {
    let scan = scan(s);
    scan.rest_has_code || scan.open
}

/// Whether a command-line word is a query rather than a path (`aether sql --event_log A B
/// "SELECT …"`: the flag takes several values, so the query may land among them).
pub fn looks_like_sql(s: &str) -> bool {
    let head = s
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    matches!(
        head.as_str(),
        "SELECT" | "WITH" | "SHOW" | "DESCRIBE" | "EXPLAIN" | "VALUES"
    ) || s.trim_start().starts_with('(')
}

/// Whether a script (statements and dot commands, known before the logs are read) may read any
/// of `tables`: [`aether_engine::views::may_read`] of its text, and yes when it has a dot
/// command (`.read FILE` brings statements not seen here; `.tables` lists them all).
pub fn script_may_read(script: &str, tables: &[&str]) -> bool {
    let commands = script.lines().any(|l| is_command(l.trim_start()));
    commands || aether_engine::views::may_read(script, tables).unwrap_or(true)
}

/// Whether a line (trimmed at its start), met between statements, is a dot command (`.tables`,
/// `\q`).
fn is_command(t: &str) -> bool {
    t.starts_with('.') || t.starts_with('\\')
}

/// The complete statements of `text` (each up to a `;` outside quotes and comments, trimmed,
/// without it; blank ones dropped) and what follows the last `;`.
pub fn split_statements(text: &str) -> (Vec<String>, String) {
    let scan = scan(text);
    (scan.statements, scan.rest)
}

/// What [`scan`] finds in a text.
struct Scan {
    statements: Vec<String>,
    /// After the last `;`.
    rest: String,
    /// `rest` holds more than blanks and comments.
    rest_has_code: bool,
    /// `rest` ends inside a quote or a comment.
    open: bool,
}

/// Split SQL text at `;` outside quotes and comments, knowing what DataFusion's SQL knows:
/// `'…'` (`''` inside), `E'…'` (backslash escapes), `"…"`, `` `…` ``, `$tag$…$tag$`, `--` and
/// nested `/* … */` comments.
fn scan(text: &str) -> Scan {
    enum State {
        Code,
        Single { escapes: bool },
        Double,
        Backtick,
        Dollar(usize, usize), // the tag `$…$`: its byte range in `text`
        Line,
        Block(usize), // nesting depth
    }
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = text.as_bytes();
    let mut state = State::Code;
    let mut statements = Vec::new();
    let mut start = 0;
    let mut has_code = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        let prev_ident = i > 0 && ident(b[i - 1]);
        match state {
            State::Code => match c {
                b'\'' => {
                    let e = i > 0 && matches!(b[i - 1], b'e' | b'E') && !(i > 1 && ident(b[i - 2]));
                    state = State::Single { escapes: e };
                    has_code = true;
                }
                b'"' => (state, has_code) = (State::Double, true),
                b'`' => (state, has_code) = (State::Backtick, true),
                b'$' if !prev_ident => {
                    // `$tag$` opens a dollar quote; `$1` (a parameter) does not
                    let tag_end = b[i + 1..]
                        .iter()
                        .position(|&d| !ident(d))
                        .map(|p| i + 1 + p);
                    has_code = true;
                    if let Some(end) = tag_end
                        && b[end] == b'$'
                        && !b.get(i + 1).is_some_and(|d| d.is_ascii_digit())
                    {
                        state = State::Dollar(i, end + 1);
                        i = end;
                    }
                }
                b'-' if next == Some(b'-') => state = State::Line,
                b'/' if next == Some(b'*') => {
                    state = State::Block(1);
                    i += 1;
                }
                b';' => {
                    if has_code {
                        statements.push(text[start..i].trim().to_string());
                    }
                    start = i + 1;
                    has_code = false;
                }
                c if !c.is_ascii_whitespace() => has_code = true,
                _ => {}
            },
            State::Single { escapes: true } if c == b'\\' => i += 1,
            State::Single { .. } if c == b'\'' => state = State::Code,
            State::Double if c == b'"' => state = State::Code,
            State::Backtick if c == b'`' => state = State::Code,
            State::Dollar(from, to) if b[i..].starts_with(&b[from..to]) => {
                i += to - from - 1;
                state = State::Code;
            }
            State::Line if c == b'\n' => state = State::Code,
            State::Block(depth) if c == b'*' && next == Some(b'/') => {
                state = if depth == 1 {
                    State::Code
                } else {
                    State::Block(depth - 1)
                };
                i += 1;
            }
            State::Block(depth) if c == b'/' && next == Some(b'*') => {
                state = State::Block(depth + 1);
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    let open = !matches!(state, State::Code | State::Line);
    Scan {
        statements,
        rest: text[start.min(text.len())..].to_string(),
        rest_has_code: has_code,
        open,
    }
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

/// What `aether sql` runs: the query given, else the statements on stdin, else (stdin a
/// terminal) an interactive shell.
pub struct Script {
    pub text: String,
    /// What was wrong with the text (not UTF-8), reported as a failed statement.
    pub bad: Option<String>,
    pub interactive: bool,
}

impl Script {
    /// The script of a query given (or none).
    pub fn of(query: Option<String>) -> Result<Script> {
        use std::io::IsTerminal;
        let interactive = query.is_none() && std::io::stdin().is_terminal();
        let (text, bad) = match query {
            Some(q) => (q, None),
            None if interactive => (String::new(), None),
            None => read_stdin()?,
        };
        Ok(Script {
            text,
            bad,
            interactive,
        })
    }

    /// Run it over `ctx` (the results to `output` when given; `banner` opens a shell): whether a
    /// statement of a query or script failed (a mistyped one in the shell is shown and forgotten).
    pub fn run(
        &self,
        rt: &tokio::runtime::Runtime,
        ctx: SessionContext,
        format: OutputFormat,
        output: Option<PathBuf>,
        banner: &str,
    ) -> Result<bool> {
        let mut sh = Shell::new(rt, ctx, format, self.interactive);
        if let Some(out) = output {
            sh.output_to(out)?;
        }
        if self.interactive {
            sh.interactive(banner)?;
            return Ok(false);
        }
        if let Some(bad) = &self.bad {
            sh.fail(bad);
        }
        sh.run_text(&self.text);
        Ok(sh.errors > 0)
    }
}

/// Read all of stdin (a script): its text, and what was wrong with it if it was not UTF-8
/// (see [`script_text`]).
pub fn read_stdin() -> Result<(String, Option<String>)> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)?;
    Ok(script_text("stdin", bytes))
}

/// A script's text. Bytes that are not UTF-8 read as U+FFFD, so the rest of the script still
/// runs, and the second value names the source and the first bad line (the caller reports it as
/// a failure).
pub fn script_text(source: &str, bytes: Vec<u8>) -> (String, Option<String>) {
    // a byte-order mark (editors on Windows write one) is not SQL
    let bytes = match bytes.strip_prefix(b"\xef\xbb\xbf") {
        Some(rest) => rest.to_vec(),
        None => bytes,
    };
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
    #[test]
    fn a_script_may_read_the_tables_it_or_its_views_name_or_its_commands_reach() {
        let t = ["sql_metrics", "stage_gpu_metrics"];
        assert!(!super::script_may_read(
            "SELECT count(*) FROM tasks;\nSELECT 1",
            &t
        ));
        assert!(super::script_may_read(
            "SELECT 1;\nselect * from Stage_Gpu_Metrics",
            &t
        ));
        assert!(super::script_may_read(
            "SELECT * FROM profile_sql_plan_metrics_for_application",
            &t
        ));
        assert!(super::script_may_read("SELECT 1;\n.read more.sql", &t));
        assert!(super::script_may_read("  .tables", &t));
    }

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
    fn quotes_and_comments_datafusion_knows() {
        // dollar quotes, E-strings with backslash escapes, backticks, nested comments
        let (s, rest) = split_statements(
            "SELECT $$a;b$$, $t$x;$$;y$t$; SELECT E'it\\'s;x'; SELECT 1 AS `a;b` /* a /* b */ ; c */; SELECT $1;",
        );
        assert_eq!(
            s,
            vec![
                "SELECT $$a;b$$, $t$x;$$;y$t$".to_string(),
                "SELECT E'it\\'s;x'".to_string(),
                "SELECT 1 AS `a;b` /* a /* b */ ; c */".to_string(),
                "SELECT $1".to_string(),
            ]
        );
        assert_eq!(rest, "");
        // a plain string ending in a backslash is not an escape
        let (s, _) = split_statements("SELECT 'a\\'; SELECT 2;");
        assert_eq!(s.len(), 2, "{s:?}");
        // inside a comment or a quote the next line continues (a `.` line is not a command)
        assert!(waits_for_more("/*\n"));
        assert!(waits_for_more("SELECT $$ a\n"));
        assert!(!waits_for_more("-- done\n"));
        assert!(!waits_for_more("/* closed */\n"));
        assert!(!has_content("/*\n"));
    }

    #[test]
    fn scripts_lose_a_byte_order_mark() {
        let (text, bad) = script_text("f.sql", b"\xef\xbb\xbfSELECT 1;".to_vec());
        assert_eq!((text.as_str(), bad), ("SELECT 1;", None));
    }
}
