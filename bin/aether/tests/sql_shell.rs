//! `aether sql` as DuckDB's command line is used: the interactive shell driven on a real
//! pseudo-terminal (prompt, `.tables`, queries, an error, a multi-line statement, completion,
//! `\q`, history), scripts on stdin, `--output FILE` by extension, and the progress display
//! (drawn on a terminal, silent when piped or with `--quiet`). Expected rows come from the
//! sample's Spark-written logs (each log is named by its app id).

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sample() -> String {
    repo().join("datasets/sample").display().to_string()
}

/// The sample's app ids, from the names Spark gave its logs.
fn sample_app_ids() -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(repo().join("datasets/sample"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".md"))
        .map(|n| {
            let n = n.trim_start_matches("eventlog_v2_");
            n.split('.').next().unwrap().to_string()
        })
        .collect();
    ids.sort();
    ids
}

fn aether_with_stdin(args: &[&str], stdin: impl AsRef<[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_aether"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run aether");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_ref())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Terminal output without escape sequences and carriage returns.
fn plain(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    for d in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&d) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    for d in chars.by_ref() {
                        if d == '\x07' {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {}
            _ => out.push(c),
        }
    }
    out
}

/// A child process with some of its standard streams on a pseudo-terminal.
struct Pty {
    writer: std::fs::File,
    seen: Arc<Mutex<Vec<u8>>>,
    child: Child,
    mark: usize,
}

impl Pty {
    /// Start `args` with stdin, stdout and stderr on the terminal where asked (else stdin
    /// empty, stdout and stderr to it anyway so the transcript is whole).
    fn spawn(args: &[&str], home: &std::path::Path, stdin_tty: bool) -> Pty {
        let (mut master, mut slave) = (0, 0);
        let ws = libc::winsize {
            ws_row: 50,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two descriptors it opened into the integers given
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &ws,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened by openpty and are owned here alone
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let stdin = if stdin_tty {
            Stdio::from(slave.try_clone().unwrap())
        } else {
            Stdio::null()
        };
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_aether"));
        if stdin_tty {
            use std::os::unix::process::CommandExt;
            // SAFETY: setsid and ioctl are async-signal-safe; the terminal becomes the child's
            // controlling terminal, so Ctrl-C typed on it is a SIGINT, as in a real shell
            unsafe {
                cmd.pre_exec(|| {
                    if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = cmd
            .args(args)
            .env("AETHER_HOME", home)
            .env("TERM", "xterm")
            .stdin(stdin)
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave.try_clone().unwrap()))
            .spawn()
            .expect("run aether on a terminal");
        drop(slave);
        let master = std::fs::File::from(master);
        let writer = master.try_clone().unwrap();
        let mut answer = master.try_clone().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        std::thread::spawn(move || {
            let mut reader = master;
            let mut buf = [0u8; 4096];
            // ends with EIO once the child has closed the terminal
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let chunk = &buf[..n];
                // a line editor asks where the cursor is: answer as a terminal would
                if chunk.windows(4).any(|w| w == b"\x1b[6n") {
                    let _ = answer.write_all(b"\x1b[1;1R");
                }
                sink.lock().unwrap().extend_from_slice(chunk);
            }
        });
        Pty {
            writer,
            seen,
            child,
            mark: 0,
        }
    }

    fn transcript(&self) -> String {
        plain(&self.seen.lock().unwrap())
    }

    /// Wait until `needle` shows after the last match; returns what came in between.
    fn expect(&mut self, needle: &str) -> String {
        let t0 = Instant::now();
        loop {
            let all = self.transcript();
            if let Some(i) = all[self.mark.min(all.len())..].find(needle) {
                let from = self.mark;
                self.mark += i + needle.len();
                return all[from..self.mark].to_string();
            }
            if t0.elapsed() > Duration::from_secs(120) {
                panic!("no {needle:?} on the terminal; it shows:\n{all}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    fn wait(&mut self) -> std::process::ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            if t0.elapsed() > Duration::from_secs(60) {
                let _ = self.child.kill();
                panic!(
                    "aether did not exit; the terminal shows:\n{}",
                    self.transcript()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_shell_on_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let ids = sample_app_ids();
    let mut t = Pty::spawn(&["sql", "--event_log", &sample()], home.path(), true);
    t.expect("SQL shell over 1 event log input(s)");
    t.expect("aether> ");

    // the tables, not the views
    t.send(".tables\r");
    let listed = t.expect("aether> ");
    for table in [
        "applications",
        "tasks",
        "stages",
        "sql_executions",
        "ingest_errors",
    ] {
        assert!(listed.contains(table), "{table} not in .tables:\n{listed}");
    }
    assert!(
        !listed.contains("sql_summary"),
        "a view in .tables:\n{listed}"
    );
    t.send(".views\r");
    let listed = t.expect("aether> ");
    assert!(
        listed.contains("sql_summary") && listed.contains("qualx_features"),
        "{listed}"
    );

    // a query: one app per log
    t.send("SELECT count(*) AS n_apps FROM applications;\r");
    let shown = t.expect("aether> ");
    assert!(shown.contains("n_apps"), "{shown}");
    assert!(
        shown.contains(&format!("| {} ", ids.len())),
        "expected {} apps:\n{shown}",
        ids.len()
    );

    // an error keeps the shell alive
    t.send("SELEC nonsense;\r");
    let shown = t.expect("aether> ");
    assert!(shown.contains("error: query failed"), "{shown}");

    // a statement over lines: the continuation prompt, then the result
    t.send("SELECT app_id\r");
    t.expect("...> ");
    t.send("FROM applications ORDER BY app_id LIMIT 1;\r");
    let shown = t.expect("aether> ");
    assert!(shown.contains(&ids[0]), "expected {}:\n{shown}", ids[0]);

    // a view, defined when first read; a table's name completed with Tab
    t.send("SELECT count(DISTINCT app_id) AS apps_with_sql FROM sql_summary;\r");
    let shown = t.expect("aether> ");
    assert!(shown.contains("apps_with_sql"), "{shown}");
    t.send("SELECT count(*) AS completed FROM applicat\t");
    t.expect("applications");
    t.send(";\r");
    let shown = t.expect("aether> ");
    assert!(
        shown.contains("completed") && shown.contains(&format!("| {} ", ids.len())),
        "{shown}"
    );

    // a column's name too (`executor_run_time` alone would also be spark_event_log's)
    t.send("SELECT sum(executor_run_time_\t");
    t.expect("executor_run_time_ms");
    t.send(") AS run_ms FROM tasks;\r");
    let shown = t.expect("aether> ");
    assert!(
        shown.contains("| run_ms") && !shown.contains("error"),
        "{shown}"
    );

    // .schema, .format, .timer
    t.send(".schema stage_summary\r");
    let shown = t.expect("aether> ");
    assert!(
        shown.contains("column_name") && shown.contains("stage_id"),
        "{shown}"
    );
    t.send(".format csv\r");
    t.expect("aether> ");
    t.send(".timer on\r");
    t.expect("aether> ");
    t.send("SELECT app_id FROM applications ORDER BY app_id;\r");
    let shown = t.expect("aether> ");
    assert!(
        shown.contains(&format!("app_id\n{}\n", ids.join("\n"))),
        "{shown}"
    );
    assert!(shown.contains("Run Time (s): real"), "{shown}");

    t.send("\\q\r");
    let status = t.wait();
    assert!(status.success(), "{status}:\n{}", t.transcript());
    let history = std::fs::read_to_string(home.path().join("sql_history")).unwrap();
    assert!(
        history.contains("SELECT count(*) AS n_apps FROM applications;"),
        "{history}"
    );
}

#[test]
fn the_shell_cuts_long_results_and_reads_files() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("q.sql");
    std::fs::write(
        &script,
        "-- a saved query\nSELECT count(*) AS n_from_file\nFROM applications;\n",
    )
    .unwrap();
    let mut t = Pty::spawn(&["sql", "--event_log", &sample()], home.path(), true);
    t.expect("aether> ");
    t.send(".maxrows 3\r");
    t.expect("aether> ");
    t.send("SELECT task_id FROM tasks ORDER BY task_id;\r");
    let shown = t.expect("aether> ");
    assert!(shown.contains("the first 3 shown"), "{shown}");
    assert_eq!(
        shown.matches("\n| ").count(),
        4,
        "header and 3 rows:\n{shown}"
    );
    t.send(&format!(".read {}\r", script.display()));
    let shown = t.expect("aether> ");
    assert!(
        shown.contains("n_from_file") && shown.contains(&format!("| {} ", sample_app_ids().len())),
        "{shown}"
    );
    // Ctrl-C stops a long statement and keeps the session (a cross join of 58^6 rows)
    t.send("SELECT sum(a.duration_ms * b.duration_ms + c.task_id) FROM tasks a, tasks b, tasks c, tasks d, tasks e, tasks f;\r");
    std::thread::sleep(Duration::from_millis(800));
    t.send("\x03");
    t.expect("cancelled (Ctrl-C)");
    t.expect("aether> ");
    // Ctrl-C during a .read file stops the rest of the file too
    let slow = dir.path().join("slow.sql");
    std::fs::write(
        &slow,
        "SELECT sum(a.duration_ms * b.duration_ms + c.task_id) FROM tasks a, tasks b, tasks c, tasks d, tasks e, tasks f;\nSELECT 'after' || '_cancel' AS rest_of_file;\n",
    )
    .unwrap();
    t.send(&format!(".read {}\r", slow.display()));
    std::thread::sleep(Duration::from_millis(800));
    t.send("\x03");
    t.expect("cancelled (Ctrl-C)");
    let shown = t.expect("aether> ");
    assert!(!shown.contains("after_cancel"), "{shown}");
    t.send("SELECT 41 + 1 AS answer;\r");
    let shown = t.expect("aether> ");
    assert!(shown.contains("| 42 "), "{shown}");
    let out = dir.path().join("apps.parquet");
    t.send(&format!(".once {}\r", out.display()));
    t.expect("aether> ");
    t.send("SELECT app_id FROM applications;\r");
    t.expect(&format!("wrote {} row(s)", sample_app_ids().len()));
    t.send(".quit\r");
    assert!(t.wait().success());
    assert_eq!(read_parquet_ids(&out), sample_app_ids());
}

fn read_parquet_ids(path: &std::path::Path) -> Vec<String> {
    use datafusion::arrow::array::{Array, AsArray};
    let f = std::fs::File::open(path).unwrap();
    let reader =
        datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap();
    let mut ids = Vec::new();
    for b in reader {
        let b = b.unwrap();
        let col = b.column_by_name("app_id").unwrap();
        let col =
            datafusion::arrow::compute::cast(col, &datafusion::arrow::datatypes::DataType::Utf8)
                .unwrap();
        let s = col.as_string::<i32>();
        for i in 0..s.len() {
            ids.push(s.value(i).to_string());
        }
    }
    ids.sort();
    ids
}

#[test]
fn statements_on_stdin_run_as_a_script() {
    let ids = sample_app_ids();
    let script = "-- apps per log\nSELECT count(*) AS n FROM applications;\n\
         .format json\n\
         SELECT app_id FROM applications\n  ORDER BY app_id LIMIT 2;\n\
         SELEC broken;\n\
         CREATE VIEW first_app AS SELECT min(app_id) AS first_id FROM applications;\n\
         SELECT first_id FROM first_app -- no ; at the end\n";
    let o = aether_with_stdin(
        &["sql", "--event_log", &sample(), "--format", "csv"],
        script,
    );
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    // the failed statement makes the exit status 2, and the rest still ran
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(err.contains("error: query failed"), "{err}");
    assert!(out.starts_with(&format!("n\n{}\n", ids.len())), "{out}");
    assert!(
        out.contains(&format!(
            "[{{\"app_id\":\"{}\"}},{{\"app_id\":\"{}\"}}]",
            ids[0], ids[1]
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("[{{\"first_id\":\"{}\"}}]", ids[0])),
        "{out}"
    );
    // no shell furniture when not on a terminal
    assert!(
        !out.contains("aether>") && !err.contains("aether>"),
        "{out}{err}"
    );

    // a file that reads itself ends in an error, not a crash
    let dir = tempfile::tempdir().unwrap();
    let looping = dir.path().join("loop.sql");
    std::fs::write(
        &looping,
        format!("SELECT 7 AS seven;\n.read {}\n", looping.display()),
    )
    .unwrap();
    let o = aether_with_stdin(
        &["sql", "--event_log", &sample(), "--format", "csv"],
        format!(".read {}\n", looping.display()),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("nested 16 deep"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(text(&o.stdout).matches("seven\n7\n").count(), 16);

    // bytes that are not UTF-8 (here on line 2): named, the run fails, the rest still runs
    let o = aether_with_stdin(
        &["sql", "--event_log", &sample(), "--format", "csv"],
        b"SELECT 1 AS one;\nSELECT '\xff\xfe' AS bad;\nSELECT 3 AS three;\n",
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("stdin: line 2 is not valid UTF-8"), "{err}");
    assert!(
        text(&o.stdout).contains("one\n1\n") && text(&o.stdout).contains("three\n3\n"),
        "{}",
        text(&o.stdout)
    );
    // the same in a file given to .read
    let bad = dir.path().join("bad.sql");
    std::fs::write(&bad, b"SELECT 5 AS five;\n\n-- \xc3\n").unwrap();
    let o = aether_with_stdin(
        &["sql", "--event_log", &sample(), "--format", "csv"],
        format!(".read {}\nSELECT 6 AS six;\n", bad.display()),
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}: line 3 is not valid UTF-8", bad.display())),
        "{err}"
    );
    assert!(
        text(&o.stdout).contains("five\n5\n") && text(&o.stdout).contains("six\n6\n"),
        "{}",
        text(&o.stdout)
    );

    // a file name with a blank, quoted or not; .schema of a quoted name
    let spaced = dir.path().join("with space.sql");
    std::fs::write(&spaced, "SELECT 8 AS eight;\n").unwrap();
    let o = aether_with_stdin(
        &["sql", "--event_log", &sample(), "--format", "csv"],
        format!(
            ".read {0}\n.read \"{0}\"\nCREATE VIEW \"My View\" AS SELECT 1 AS one;\n.schema \"My View\"\n",
            spaced.display()
        ),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "eight\n8\neight\n8\ncolumn_name,data_type,is_nullable\none,Int64,NO\n"
    );

    // a `.` line inside a block comment is part of the comment, not a command
    let other = dir.path().join("other.sql");
    std::fs::write(&other, "SELECT 'should' || '_not_run' AS x;\n").unwrap();
    let o = aether_with_stdin(
        &["sql", "--event_log", &sample(), "--format", "csv"],
        format!("/*\n.read {}\n*/\nSELECT 2 AS b;\n", other.display()),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "b\n2\n");

    // a user's view named like aether's replaces it, whether or not aether's was read before
    let o = aether_with_stdin(
        &["sql", "--event_log", &sample(), "--format", "csv"],
        "CREATE VIEW stage_summary AS SELECT 1 AS mine;\nSELECT * FROM stage_summary;\n\
         -- a comment before SHOW\nSHOW TABLES;\n",
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(out.starts_with("mine\n1\n"), "{out}");
    // SHOW after a comment still lists aether's views
    assert!(out.contains(",app_duration,"), "{out}");
    let o = aether_with_stdin(
        &["sql", "--event_log", &sample(), "--format", "csv"],
        "SELECT count(*) > 0 AS had FROM stage_summary;\nDROP VIEW stage_summary;\n\
         CREATE VIEW stage_summary AS SELECT 1 AS mine;\nSELECT * FROM stage_summary;\n",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "had\ntrue\nmine\n1\n");

    // a failed .output leaves results on the terminal in their format; .output comes back to it
    let kept = dir.path().join("kept.csv");
    let o = aether_with_stdin(
        &["sql", "--event_log", &sample(), "--format", "json"],
        format!(
            ".output {}/none/x.csv\nSELECT 1 AS a;\n.output {}\nSELECT 2 AS b;\n.output\nSELECT 3 AS c;\n",
            dir.path().display(),
            kept.display()
        ),
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(text(&o.stdout), "[{\"a\":1}]\n[{\"c\":3}]\n");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "b\n2\n");

    // a reader that goes away (`| head -1`) ends the run quietly: no panic, no error per result
    let mut child = Command::new(env!("CARGO_BIN_EXE_aether"))
        .args(["sql", "--event_log", &sample()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    drop(child.stdout.take()); // the reader is gone before anything is written
    stdin
        .write_all(b".views\n.tables\nSELECT * FROM tasks;\nSELECT * FROM stages;\n")
        .unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert!(o.status.success(), "{:?} {err}", o.status);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );

    // a clean script exits 0; an empty one does nothing
    let o = aether_with_stdin(&["sql", "--event_log", &sample()], "SELECT 1 AS one;");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("| 1   |"), "{}", text(&o.stdout));
    let o = aether_with_stdin(&["sql", "--event_log", &sample()], "");
    assert!(
        o.status.success() && o.stdout.is_empty(),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn output_files_take_their_format_from_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    let ids = sample_app_ids();
    let q = "SELECT app_id, app_name FROM applications ORDER BY app_id";
    let run = |file: &str, query: &str| {
        let path = dir.path().join(file);
        let o = aether_with_stdin(
            &[
                "sql",
                "--event_log",
                &sample(),
                "--output",
                path.to_str().unwrap(),
                query,
            ],
            "",
        );
        (o, path)
    };

    let (o, csv) = run("apps.csv", q);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty(), "the result went to stdout too");
    let body = std::fs::read_to_string(&csv).unwrap();
    let mut lines = body.lines();
    assert_eq!(lines.next(), Some("app_id,app_name"));
    let got: Vec<&str> = lines.map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(got, ids);

    let (o, json) = run("apps.JSON", q);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let got: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["app_id"].as_str().unwrap())
        .collect();
    assert_eq!(got, ids);

    let (o, pq) = run("apps.parquet", q);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(read_parquet_ids(&pq), ids);

    // an unknown extension is refused before any work, naming the file
    let (o, txt) = run("apps.txt", q);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("apps.txt") && err.contains(".csv, .json or .parquet"),
        "{err}"
    );
    assert!(!txt.exists());

    // a failed query leaves an earlier file as it was
    std::fs::write(&csv, "kept\n").unwrap();
    let (o, _) = run("apps.csv", "SELECT nope FROM applications");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "kept\n");

    // a replaced file keeps its modes; a new one gets the usual ones (not a temporary file's
    // 0600); a link is followed, not replaced
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&csv, std::fs::Permissions::from_mode(0o640)).unwrap();
        let (o, _) = run("apps.csv", q);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&csv), 0o640);
        let (o, fresh) = run("fresh.csv", q);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_ne!(mode(&fresh) & 0o044, 0, "{:o}", mode(&fresh));
        let link = dir.path().join("link.csv");
        std::os::unix::fs::symlink(&csv, &link).unwrap();
        let (o, _) = run("link.csv", "SELECT 'via link' AS note");
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "note\nvia link\n");
    }

    // a folder that does not exist is named (not the temporary file aether writes first)
    let (o, _) = run("no-such-folder/apps.csv", q);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    let folder = dir.path().join("no-such-folder");
    assert!(
        err.contains(&format!(
            "cannot write in the folder {}: no such folder",
            folder.display()
        )) && !err.contains("at path"),
        "{err}"
    );
}

/// The big log takes long enough to read (about a second) for the bar to be drawn.
fn big_log() -> String {
    repo()
        .join("../shared/datasets/real-spark-4.3.0-big/local-1796010440595.zstd")
        .display()
        .to_string()
}

#[test]
fn progress_is_drawn_on_a_terminal_only() {
    let home = tempfile::tempdir().unwrap();
    let big = big_log();
    let query = "SELECT count(*) AS tasks FROM tasks";
    // stderr a terminal: the bar (logs done / total, bytes, rate), then the answer Spark gave
    let mut t = Pty::spawn(&["sql", "--event_log", &big, query], home.path(), false);
    assert!(t.wait().success(), "{}", t.transcript());
    let shown = t.transcript();
    assert!(shown.contains("reading ["), "no progress bar:\n{shown}");
    assert!(shown.contains("/1 logs"), "{shown}");
    assert!(shown.contains("120298"), "{shown}");

    // --quiet: no bar even on a terminal
    let mut t = Pty::spawn(
        &["sql", "--quiet", "--event_log", &big, query],
        home.path(),
        false,
    );
    assert!(t.wait().success());
    let shown = t.transcript();
    assert!(
        !shown.contains("reading [") && shown.contains("120298"),
        "{shown}"
    );

    // piped: stderr holds only the summary line
    let wh = home.path().join("wh");
    let o = aether_with_stdin(&["ingest", &big, "--out", wh.to_str().unwrap()], "");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.starts_with("ingested 1 log(s)"), "{err}");
    assert!(
        !err.contains('\r') && !err.contains("ingesting [") && !err.contains('\x1b'),
        "{err:?}"
    );
}

#[test]
fn a_script_over_a_warehouse_lists_and_reads_its_derived_tables() {
    let dir = tempfile::tempdir().unwrap();
    let wh = dir.path().join("wh");
    let o = aether_with_stdin(
        &[
            "qualify",
            "--event_log",
            &sample(),
            "--warehouse",
            wh.to_str().unwrap(),
        ],
        "",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = aether_with_stdin(
        &[
            "sql",
            "--warehouse",
            wh.to_str().unwrap(),
            "--format",
            "csv",
        ],
        ".tables\n.views\nSELECT count(DISTINCT app_id) AS apps FROM derived.qualification;\n",
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    let (tables, rest) = out.split_once("apps\n").unwrap();
    assert!(
        tables.contains("derived.qualification") && tables.contains("derived.operators"),
        "{tables}"
    );
    assert!(
        tables.contains("tasks") && tables.contains("bottlenecks"),
        "{tables}"
    );
    assert_eq!(rest.trim(), sample_app_ids().len().to_string());
}
