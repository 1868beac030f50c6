//! `aether report list | job | validation | ui` over a history of several jobs and runs
//! (`common/fleet.rs`), whose figures give every KPI by hand: the list's KPIs and
//! recommendations, a job's runs with their config changes, the validation report's new
//! failures and exit code, and the UI's pages over HTTP (escaping a hostile app name).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Output;

use common::fleet::{self, HOSTILE};
use common::{aether, err, out, start_ui};
use serde_json::Value;

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "{}\n{}", out(o), err(o));
    serde_json::from_str(&out(o)).unwrap_or_else(|e| panic!("{e}: {}", out(o)))
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn the_list_has_the_fleet_kpis_and_a_recommendation_per_job() {
    let home = tempfile::tempdir().unwrap();
    let f = fleet::fleet(&home.path().join("history.db"));
    let o = json(&aether(
        home.path(),
        &["report", "list", "--format", "json"],
    ));
    let k = &o["kpis"];
    for (name, want) in [
        ("jobs", 5),
        ("qualified", 5),
        ("recommended", 4),
        ("tested", 2),
        ("validated", 1),
        ("migrate", 1),
    ] {
        assert_eq!(k[name], want, "{name}: {k:#}");
    }
    // Σ CPU / Σ best GPU over the tested jobs: (100 + 80) / (40 + 50)
    assert!(close(&k["measured_speedup"], 2.0), "{k:#}");
    // the untested recommended: (90 + 60) / (30 + 50)
    assert!(close(&k["predicted_speedup"], 1.875), "{k:#}");
    // the job to migrate: $10 on the CPU, $5 on the GPU, twice a month (two CPU runs 15 days
    // apart)
    assert!(close(&k["cost_before_usd"], 10.0), "{k:#}");
    assert!(close(&k["cost_after_usd"], 5.0), "{k:#}");
    assert!(close(&k["savings_per_month_usd"], 10.0), "{k:#}");
    assert!(close(&k["predicted_savings_per_run_usd"], 7.0), "{k:#}");
    assert_eq!(
        o["categories"],
        serde_json::json!([
            ["Large", 2],
            ["Medium", 1],
            ["Small", 1],
            ["Not Recommended", 1]
        ])
    );
    let job = |id: i64| {
        o["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["job_id"] == id)
            .unwrap()
            .clone()
    };
    let rec = |id: i64| {
        let j = job(id);
        (
            j["recommendation"]["action"].as_str().unwrap().to_string(),
            j["recommendation"]["reason"].as_str().unwrap().to_string(),
        )
    };
    let etl = job(f.etl);
    assert!(close(&etl["measured_speedup"], 2.5));
    assert_eq!(etl["gpu_cost_measured"], true);
    assert!(close(&etl["runs_per_month"], 2.0));
    assert_eq!(etl["best_run_id"], f.etl_runs.1);
    assert_eq!(
        rec(f.etl),
        ("migrate".into(), "2.50x faster, output validated".into())
    );
    assert_eq!(rec(f.etl_again).0, "tune-further");
    assert!(rec(f.etl_again).1.contains("not tested on a GPU yet"));
    assert_eq!(
        rec(f.tiny),
        (
            "stay-on-cpu".into(),
            "GPU SpeedUp < Qualifying Threshold (More is qualified)".into()
        )
    );
    assert_eq!(rec(f.joins).0, "stay-on-cpu");
    assert!(
        rec(f.joins).1.starts_with("validation failed"),
        "{:?}",
        rec(f.joins)
    );
    assert_eq!(
        rec(f.hostile),
        (
            "tune-further".into(),
            "1 GPU test run(s), none successful yet".into()
        )
    );
    assert_eq!(job(f.hostile)["app_name"], HOSTILE);

    // the same report as CSV (the columns the earlier list had are kept) and as a table
    let o = aether(home.path(), &["report", "list", "--format", "csv"]);
    assert!(o.status.success(), "{}", err(&o));
    let mut r = csv::Reader::from_reader(o.stdout.as_slice());
    let h = r.headers().unwrap().clone();
    for c in [
        "Job ID",
        "Event Log",
        "Qualifications",
        "Recommendation",
        "Config ID",
    ] {
        assert!(h.iter().any(|x| x == c), "{c}: {h:?}");
    }
    assert_eq!(r.records().count(), 5);
    let o = aether(home.path(), &["report", "list"]);
    let t = out(&o);
    assert!(t.contains("Measured speedup") && t.contains("2.00x"), "{t}");
    assert!(
        t.contains("Savings per month") && t.contains("$10.00"),
        "{t}"
    );
    // the table fits the terminal (120 columns when its width is unknown, COLUMNS when set):
    // every job with its speedups and what to do; --wide: every column, reasons whole
    let jobs = json(&aether(
        home.path(),
        &["report", "list", "--format", "json"],
    ))["jobs"]
        .clone();
    let list = |columns: Option<&str>, wide: bool| -> String {
        let args: &[&str] = if wide {
            &["report", "list", "--wide"]
        } else {
            &["report", "list"]
        };
        common::aether_at(home.path(), columns, args)
    };
    let widest = |t: &str| t.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let speedup = |v: &Value| v.as_f64().map_or("–".to_string(), |x| format!("{x:.2}x"));
    for (columns, width) in [(None, 120), (Some("100"), 100), (Some("80"), 80)] {
        let t = list(columns, false);
        assert!(widest(&t) <= width, "{columns:?}:\n{t}");
        assert!(
            t.contains("Savings per month") && t.contains("$10.00"),
            "{t}"
        );
        let header = t.lines().find(|l| l.starts_with("Job  App ")).unwrap();
        for c in ["Pred.", "Meas.", "Action", "Config"] {
            assert!(header.contains(c), "{c}: {header}");
        }
        for j in jobs.as_array().unwrap() {
            let id = j["job_id"].to_string();
            let line = t
                .lines()
                .find(|l| l.split_whitespace().next() == Some(id.as_str()))
                .unwrap_or_else(|| panic!("job {id} in\n{t}"));
            let action = match j["recommendation"]["action"].as_str().unwrap() {
                "migrate" => "migrate",
                "tune-further" => "tune further",
                "stay-on-cpu" => "stay on CPU",
                a => panic!("{a}"),
            };
            let (pred, meas) = (
                speedup(&j["predicted_speedup"]),
                speedup(&j["measured_speedup"]),
            );
            assert!(
                line.contains(&format!("{pred}  {meas:>5}  ")) && line.contains(action),
                "{pred} {meas} {action}: {line}"
            );
            let name = j["app_name"].as_str().unwrap();
            if name == HOSTILE {
                // a long name is cut, its start kept
                assert!(line.contains("<script>") && line.contains('…'), "{line}");
            } else {
                assert!(line.contains(name), "{line}");
            }
        }
    }
    let wide = list(Some("80"), true);
    assert!(widest(&wide) > 120, "{wide}");
    assert!(wide.contains("Reason") && wide.contains("2.50x faster, output validated"));
    // an HTML file: self-contained, the hostile name as text
    let file = home.path().join("out/fleet.html");
    let o = aether(
        home.path(),
        &["report", "list", "--output", file.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", err(&o));
    let page = std::fs::read_to_string(&file).unwrap();
    self_contained(&page);
    assert!(page.contains("<svg"), "charts inline");
}

/// The hostile name as text (askama writes `&#60;`, the SVG charts `&lt;`).
fn escaped(page: &str) -> bool {
    page.contains("&lt;script&gt;alert") || page.contains("&#60;script&#62;alert")
}

/// No markup from an event log, nothing loaded from elsewhere.
fn self_contained(page: &str) {
    assert!(
        !page.contains("<script>alert"),
        "the hostile name ran as markup"
    );
    assert!(
        !page.contains("<img src=x"),
        "the hostile name ran as markup"
    );
    assert!(escaped(page) || !page.contains("alert("));
    for bad in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!page.contains(bad), "{bad} in the page");
    }
}

#[test]
fn a_job_shows_each_run_with_its_config_changes_and_the_config_to_use() {
    let home = tempfile::tempdir().unwrap();
    let f = fleet::fleet(&home.path().join("history.db"));
    let id = f.etl.to_string();
    let d = json(&aether(
        home.path(),
        &["report", "job", "--aether_job_id", &id, "--format", "json"],
    ));
    let runs = d["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let (a, b) = (&runs[0], &runs[1]);
    assert_eq!(
        (a["run_id"].clone(), b["run_id"].clone()),
        (f.etl_runs.0.into(), f.etl_runs.1.into())
    );
    assert!(close(&a["speedup"], 100.0 / 60.0));
    assert_eq!(b["best"], true);
    assert_eq!(b["cluster"], "shape 1: 1 x m5d.xlarge, 2 x g6.4xlarge");
    // idle capacity: $5 x 20 / 80 s idle; with idle executors released after 60 s the run
    // would have cost $5 - $5 x (20 - 10) / 80
    assert!(close(&b["idle"]["idle_cost_usd"], 1.25), "{b:#}");
    assert!(close(&b["idle"]["scale_to_zero_cost_usd"], 4.375), "{b:#}");
    assert_eq!(a["decision"], "faster: keep going");
    // the second run's config against the first's
    assert_eq!(
        b["changed"],
        serde_json::json!([
            ["spark.rapids.sql.concurrentGpuTasks", null, "2"],
            ["spark.sql.shuffle.partitions", "200", "64"]
        ])
    );
    let conf = d["spark_defaults"].as_str().unwrap();
    assert!(
        conf.contains("spark.sql.shuffle.partitions") && conf.contains("64"),
        "{conf}"
    );
    assert_eq!(d["validations"].as_array().unwrap().len(), 2);
    let t = out(&aether(
        home.path(),
        &["report", "job", "--aether_job_id", &id],
    ));
    assert!(
        t.contains("  spark.sql.shuffle.partitions: 200 → 64"),
        "{t}"
    );
    assert!(t.contains("migrate: 2.50x faster"), "{t}");
    assert!(t.contains("25% idle ($1.25)") && t.contains("$4.38"), "{t}");
    let md = out(&aether(
        home.path(),
        &["report", "job", "--aether_job_id", &id, "--format", "md"],
    ));
    assert!(md.starts_with("# Job") && md.contains("| Run ID |"), "{md}");
    // the hostile job's page escapes its name
    let o = aether(
        home.path(),
        &[
            "report",
            "job",
            "--aether_job_id",
            &f.hostile.to_string(),
            "--format",
            "html",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    self_contained(&out(&o));
    assert!(out(&o).contains("GPU OOM"));
    // an unknown job
    let o = aether(home.path(), &["report", "job", "--aether_job_id", "999"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("unknown job 999"), "{}", err(&o));
}

#[test]
fn the_validation_report_puts_new_failures_first_and_fails_the_schedule() {
    let home = tempfile::tempdir().unwrap();
    let f = fleet::fleet(&home.path().join("history.db"));
    let o = aether(
        home.path(),
        &["report", "validation", "--since", "7d", "--format", "json"],
    );
    // a job's latest validation fails: exit 1, for cron and schedulers
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let r: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!((r["pass"].clone(), r["fail"].clone()), (1.into(), 1.into()));
    assert_eq!(r["new_failures"], serde_json::json!([f.joins]));
    assert_eq!(r["fixed"], serde_json::json!([f.etl]));
    assert_eq!(r["latest"][0]["job_id"], f.joins);
    assert_eq!(r["latest"][0]["verdict"], "FAIL");
    assert!(
        r["latest"][0]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("row count")
    );
    // a month back: the older validations are in the period too, none is new
    let o = aether(
        home.path(),
        &["report", "validation", "--since", "30d", "--format", "json"],
    );
    let r: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(r["all"].as_array().unwrap().len(), 4);
    // files, by extension; --fail_on never exits 0
    for ext in ["html", "md", "json"] {
        let file = home.path().join(format!("weekly.{ext}"));
        let o = aether(
            home.path(),
            &[
                "report",
                "validation",
                "--output",
                file.to_str().unwrap(),
                "--fail_on",
                "never",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("joins"), "{ext}: {text}");
    }
    let page = std::fs::read_to_string(home.path().join("weekly.html")).unwrap();
    self_contained(&page);
    assert!(page.contains(">NEW<"));
    let o = aether(home.path(), &["report", "validation", "--since", "soon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--since"), "{}", err(&o));
}

/// One HTTP/1.1 request: (status, body).
fn http(addr: &str, method: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).unwrap();
    let status = buf
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = buf.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("");
    (status, body.to_string())
}

#[test]
fn the_ui_serves_every_page_read_only_and_escapes_what_logs_hold() {
    let home = tempfile::tempdir().unwrap();
    let f = fleet::fleet(&home.path().join("history.db"));
    let ui = start_ui(home.path());
    assert!(ui.addr.starts_with("127.0.0.1:"), "{}", ui.addr);
    for path in [
        "/".to_string(),
        "/jobs".into(),
        format!("/jobs/{}", f.etl),
        format!("/jobs/{}", f.hostile),
        "/validations?since=30d".into(),
    ] {
        let (status, body) = http(&ui.addr, "GET", &path);
        assert_eq!(status, 200, "{path}: {body}");
        self_contained(&body);
        assert!(body.contains("</html>"), "{path}");
    }
    // the etl job: predicted 3.1x and $4, measured 100 s / 40 s = 2.5x at $5
    let (_, page) = http(&ui.addr, "GET", &format!("/jobs/{}", f.etl));
    assert!(
        page.contains(&format!(
            "speedup +24%; within the predicted range 2.38x-4.03x; GPU cost -20% (the CPU run against GPU run {})",
            f.etl_runs.1
        )),
        "{page}"
    );
    let (_, overview) = http(&ui.addr, "GET", "/");
    assert!(overview.contains("Measured speedup") && overview.contains("2.00x"));
    assert!(overview.contains(&format!("href=\"/jobs/{}\"", f.etl)));
    assert!(escaped(&overview));
    let (status, body) = http(&ui.addr, "GET", "/api/overview");
    assert_eq!(status, 200);
    let o: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(o["kpis"]["jobs"], 5);
    assert_eq!(http(&ui.addr, "GET", "/jobs/999").0, 404);
    assert_eq!(http(&ui.addr, "GET", "/nothing-here").0, 404);
    assert_eq!(http(&ui.addr, "GET", "/validations?since=soon").0, 400);
    // read-only
    assert_eq!(http(&ui.addr, "POST", "/jobs").0, 405);
    assert_eq!(http(&ui.addr, "DELETE", &format!("/jobs/{}", f.etl)).0, 405);
}
