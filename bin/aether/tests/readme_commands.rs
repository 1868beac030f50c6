//! The README as a new user reads it: short (the reference lives in docs/), every link resolving,
//! every `aether` command it shows a real command, every script it names there, and its quick
//! start on the bundled sample run as written (the block between `sample:begin` and
//! `sample:end`): the sample qualified, its job recommended, then `aether run` tuning it on the
//! local platform (real Spark), validating it and writing the report. The migration workflow
//! block is run as written by workflow_verbatim.rs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{err, out};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).expect("README.md")
}

/// The command lines of the README's shell blocks (continuations joined), or of one marked block.
fn commands(text: &str) -> Vec<String> {
    let mut cmds = Vec::new();
    let mut in_sh = false;
    let mut cur = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        if !in_sh || line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let l = line.trim();
        match l.strip_suffix('\\') {
            Some(head) => cur.push_str(head),
            None => {
                cur.push_str(l);
                cmds.push(std::mem::take(&mut cur));
            }
        }
    }
    cmds
}

fn marked(text: &str, name: &str) -> String {
    let begin = text
        .find(&format!("<!-- {name}:begin"))
        .unwrap_or_else(|| panic!("README has the {name} block"));
    let end = text[begin..]
        .find(&format!("<!-- {name}:end -->"))
        .unwrap_or_else(|| panic!("the {name} block ends"))
        + begin;
    text[begin..end].to_string()
}

#[test]
fn the_readme_is_short_and_its_links_resolve() {
    let text = readme();
    let lines = text.lines().count();
    assert!(
        lines <= 300,
        "README has {lines} lines: reference material goes to docs/"
    );
    let mut links = 0;
    for (i, _) in text.match_indices("](") {
        let rest = &text[i + 2..];
        let target = &rest[..rest.find(')').unwrap()];
        if target.starts_with("http") || target.starts_with('#') {
            continue;
        }
        let path = target.split('#').next().unwrap();
        assert!(repo().join(path).exists(), "README links {target}: missing");
        links += 1;
    }
    assert!(links >= 10, "{links} links to docs/");
    // each docs page links back and is linked from the README
    for e in std::fs::read_dir(repo().join("docs")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        if name.ends_with(".md") && name != "aws-setup.md" && name != "performance.md" {
            assert!(
                text.contains(&format!("(docs/{name})")),
                "README links docs/{name}"
            );
        }
    }
}

#[test]
fn every_command_the_readme_shows_exists() {
    let text = readme();
    let cmds = commands(&text);
    assert!(cmds.len() >= 20, "{cmds:?}");
    let home = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for cmd in &cmds {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        if let Some(script) = words.first().filter(|w| w.starts_with("scripts/")) {
            let meta = std::fs::metadata(repo().join(script))
                .unwrap_or_else(|_| panic!("README runs {script}: missing"));
            use std::os::unix::fs::PermissionsExt;
            assert!(
                meta.permissions().mode() & 0o111 != 0,
                "{script} not executable"
            );
            checked += 1;
        }
        // `aether SUB [SUB2] …` and `docker run … aether SUB`: the subcommand exists
        let Some(at) = words.iter().position(|w| *w == "aether") else {
            continue;
        };
        let sub: Vec<&str> = words[at + 1..]
            .iter()
            .take_while(|w| !w.starts_with('-') && !w.contains('$') && !w.contains('/'))
            .take(2)
            .copied()
            .collect();
        let mut args = sub.clone();
        args.push("--help");
        let o = common::aether(home.path(), &args);
        if !o.status.success() && sub.len() == 2 {
            // the second word was an argument, not a subcommand
            let o = common::aether(home.path(), &[sub[0], "--help"]);
            assert!(o.status.success(), "{cmd}: {}", err(&o));
        } else {
            assert!(o.status.success(), "{cmd}: {}", err(&o));
        }
        checked += 1;
    }
    assert!(checked >= 20, "{checked} commands checked");
}

/// Every file under `dir` with its size and modification time.
fn files(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::metadata(&p).unwrap();
            if m.is_dir() {
                todo.push(p);
            } else {
                found.push((p, m.len(), m.modified().unwrap()));
            }
        }
    }
    found.sort();
    found
}

/// The quick start on the bundled sample job (`datasets/sample-job/`), as the README writes it:
/// the bundled logs qualified (the sample job recommended at QualX's real thresholds, the table
/// within 120 columns), the job's CPU run made by `scripts/sample-log` (spark-submit with an
/// event log, as production runs it), then `aether run` on the local platform, no setting
/// lowered: qualified, tuned (a local Spark run of the recommended config, its outputs in the
/// sandbox), validated against the CPU run's outputs (PASS), reported; the CPU run's outputs left
/// as they were and no cluster left running.
#[test]
fn the_readme_sample_qualifies_and_migrates_on_the_local_platform() {
    let text = readme();
    let sample = commands(&marked(&text, "sample"));
    assert_eq!(sample.len(), 3, "{sample:?}");
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let report = d.path().join("report");
    let work = d.path().join("sample");
    let run = |cmd: &str| {
        // the README's fixed /tmp folders moved into this test's own
        let mut cmd = cmd
            .replace("/tmp/aether-report", report.to_str().unwrap())
            .replace("/tmp/aether-sample", work.to_str().unwrap());
        if cmd == "scripts/sample-log" {
            cmd = format!("{cmd} {}", work.display());
        }
        let words: Vec<&str> = cmd.split_whitespace().collect();
        let program = match words[0] {
            "aether" => env!("CARGO_BIN_EXE_aether").to_string(),
            script => repo().join(script).display().to_string(),
        };
        let t = std::time::Instant::now();
        let o = Command::new(program)
            .args(&words[1..])
            .current_dir(repo())
            .env("AETHER_HOME", &home)
            .env("SPARK_LOCAL_IP", "127.0.0.1")
            .output()
            .expect("run the README's command");
        println!("{cmd}: {:.0} s", t.elapsed().as_secs_f64());
        o
    };
    // 1. qualify the bundled logs: the sample job is recommended
    let o = run(&sample[0]);
    assert!(o.status.success(), "{}", err(&o));
    let table = out(&o);
    let job_line = table
        .lines()
        .find(|l| l.contains("sales_report"))
        .unwrap_or_else(|| panic!("the sample job in the table:\n{table}"));
    // recommended at the model's real thresholds: a category, not "Not Recommended"
    assert!(
        ["Small", "Medium", "Large"]
            .iter()
            .any(|c| job_line.split_whitespace().any(|w| w == *c)),
        "{job_line}"
    );
    for l in table.lines() {
        assert!(l.chars().count() <= 120, "wider than 120 columns: {l}");
    }
    // 2. the sample job's CPU run
    let o = run(&sample[1]);
    assert!(o.status.success(), "{}", err(&o));
    let production = files(&work.join("output"));
    assert!(production.len() >= 3, "{production:?}");
    // 3. the whole workflow on it with local Spark
    let o = run(&sample[2]);
    let (stdout, stderr) = (out(&o), err(&o));
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("run [4/4] report"), "{stderr}");
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let (app, category): (String, String) = db
        .query_row(
            "SELECT j.app_name, q.category FROM jobs j JOIN qualifications q USING (job_id) \
             WHERE j.app_name = 'sales_report'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(app, "sales_report");
    assert!(
        ["Small", "Medium", "Large"].contains(&category.as_str()),
        "{category}"
    );
    let count = |sql: &str| db.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    assert!(
        count("SELECT count(*) FROM runs WHERE kind = 'gpu-test' AND status = 'COMPLETED'") >= 1,
        "{stderr}"
    );
    assert_eq!(
        count("SELECT count(*) FROM validations WHERE verdict = 'PASS'"),
        1,
        "{stderr}"
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM clusters WHERE state NOT IN ('TERMINATED', 'TERMINATED_WITH_ERRORS')"
        ),
        0
    );
    // the job's three outputs compared, each from the run's sandbox
    for name in ["revenue_by_month", "top_customers", "store_days"] {
        assert!(
            stderr.contains(&format!(
                "validate: output {}/output/{name} against ",
                work.display()
            )),
            "{name}: {stderr}"
        );
    }
    assert!(
        stdout.contains("sales_report") && stdout.contains("PASS"),
        "{stdout}"
    );
    assert!(report.join("overview.html").is_file(), "{stdout}");
    assert_eq!(
        files(&work.join("output")),
        production,
        "production outputs changed"
    );
}

/// The README's quick start, `scripts/emr-demo`: the migration workflow's commands, taken from
/// the README as written, against the project's EMR emulator (no AWS), from a CPU step to a
/// terminated GPU cluster; each command exits 0, production's outputs stay as they were and
/// nothing is left running.
#[test]
fn the_readme_quick_start_demo_runs() {
    let text = readme();
    let quick = &text[text.find("## Quick start").expect("a quick start")..];
    assert_eq!(
        commands(quick).first().map(String::as_str),
        Some("scripts/emr-demo")
    );
    let o = Command::new(repo().join("scripts/emr-demo"))
        .current_dir(repo())
        .env("AETHER_BINARY", env!("CARGO_BIN_EXE_aether"))
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .output()
        .expect("scripts/emr-demo");
    let (stdout, stderr) = (out(&o), err(&o));
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let workflow = commands(&marked(&text, "workflow"));
    for cmd in workflow.iter().filter(|c| c.starts_with("aether ")) {
        // each README command printed as it ran (its $IDS filled in), and exit 0
        let head: String = cmd.split('$').next().unwrap().trim_end().to_string();
        assert!(
            stdout.contains(&format!("$ {head}")),
            "{head} not run:\n{stdout}"
        );
    }
    assert_eq!(
        stdout.matches(", exit 0)").count(),
        workflow.len(),
        "{stdout}"
    );
    assert!(
        stdout.contains("# production outputs untouched"),
        "{stdout}"
    );
    // the GPU cluster terminated (production's own cluster stays as it was), no step running
    let state = stdout
        .lines()
        .find(|l| l.starts_with("# clusters:"))
        .unwrap_or_else(|| panic!("the emulator's state at the end:\n{stdout}"));
    assert!(state.ends_with("steps still running: []"), "{state}");
    assert_eq!(state.matches("'TERMINATED'").count(), 1, "{state}");
    assert!(!state.contains("'RUNNING'"), "{state}");
}

/// `aether --help` reads in an 80- to 120-column terminal: wrapped to it, the commands in workflow
/// order.
#[test]
fn the_command_list_fits_120_columns_in_workflow_order() {
    let home = tempfile::tempdir().unwrap();
    let help_in = |columns: &str| common::aether_at(home.path(), Some(columns), &["--help"]);
    for columns in [80, 120] {
        for l in help_in(&columns.to_string()).lines() {
            assert!(
                l.chars().count() <= columns,
                "wider than {columns} columns: {l}"
            );
        }
    }
    let help = help_in("120");
    // a command's line starts with two spaces and its name (a wrapped summary goes on indented)
    let order: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let workflow = [
        "qualify", "cluster", "submit", "profile", "tune", "validate", "report", "run",
    ];
    assert_eq!(&order[..workflow.len()], &workflow, "{help}");
    let config = order.iter().position(|c| *c == "config").unwrap();
    assert_eq!(order[config + 1..], ["help"], "config last: {help}");
}
