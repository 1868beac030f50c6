//! `aether report ui` in a real browser: headless Chromium driven by chromedriver over the
//! WebDriver protocol (a few JSON requests, offline), over the history of `common/fleet.rs`.
//! Every page is loaded and screenshotted (PNG files under the build's target folder, kept for
//! a look), the DOM holds the KPIs and the job rows, the hostile app name is text (no alert, no
//! injected element), the job list filters, and a click on a job opens its page. At 1280 × 800
//! every table fits its page (no sideways scrolling), both sides of a job's clusters read as
//! nodes (`4 x m5d.4xlarge`), and small costs keep their digits in the KPI cards.
//! `scripts/setup --test` installs Chromium (Debian `chromium`, `chromium-driver`).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use common::fleet::{self, HOSTILE};
use common::{free_port, start_ui};
use serde_json::{Value, json};

/// A chromedriver on a free port, stopped on drop.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn chromedriver() -> Driver {
    let port = free_port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver (scripts/setup --test installs chromium-driver)");
    let d = Driver { child, port };
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "chromedriver did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    d
}

/// One WebDriver request: the response's `value`, or what went wrong.
fn try_wd(port: u16, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
    let e = |e: std::io::Error| format!("{method} {path}: {e}");
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(e)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(e)?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(e)?;
    // chromedriver keeps the connection open: read the headers, then Content-Length bytes
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).map_err(e)? != 1 {
            return Err(format!(
                "{method} {path}: the connection closed mid-headers"
            ));
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("{method} {path}: no Content-Length in {head}"))?;
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).map_err(e)?;
    let text = String::from_utf8_lossy(&body);
    let v: Value =
        serde_json::from_str(&text).map_err(|e| format!("{method} {path}: {e}: {text}"))?;
    Ok(v["value"].clone())
}

/// One WebDriver request: the response's `value`.
fn wd(port: u16, method: &str, path: &str, body: Option<Value>) -> Value {
    try_wd(port, method, path, body).unwrap_or_else(|e| panic!("{e}"))
}

struct Browser {
    port: u16,
    session: String,
    shots: PathBuf,
}

impl Browser {
    fn open(d: &Driver, shots: PathBuf) -> Browser {
        let v = wd(
            d.port,
            "POST",
            "/session",
            Some(
                json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,800"]}}}}),
            ),
        );
        let session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"))
            .to_string();
        std::fs::create_dir_all(&shots).unwrap();
        Browser {
            port: d.port,
            session,
            shots,
        }
    }
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        wd(
            self.port,
            method,
            &format!("/session/{}{path}", self.session),
            body,
        )
    }
    fn go(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }
    fn js(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }
    fn alert_open(&self) -> bool {
        // an open alert answers its text; none answers an error object
        self.call("GET", "/alert/text", None).is_string()
    }
    fn shot(&self, name: &str) -> PathBuf {
        let b64 = self.call("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{name}: not a PNG");
        assert!(png.len() > 20_000, "{name}: a near-empty screenshot");
        let p = self.shots.join(format!("{name}.png"));
        std::fs::write(&p, png).unwrap();
        p
    }
    /// The tables wider than what holds them, and the page when it scrolls sideways: none at
    /// 1280 px.
    fn overflowing(&self) -> Vec<String> {
        let v = self.js(
            "const bad = [];
             for (const t of document.querySelectorAll('table')) {
               const w = t.parentElement;
               if (w.scrollWidth > w.clientWidth
                   || t.getBoundingClientRect().right > w.getBoundingClientRect().right + 0.5) {
                 bad.push(`table#${t.id}: ${t.getBoundingClientRect().width} px in ${w.clientWidth} px`);
               }
             }
             const page = document.documentElement;
             if (page.scrollWidth > window.innerWidth || page.scrollWidth > 1280) {
               bad.push(`page: ${page.scrollWidth} px in a ${window.innerWidth} px window`);
             }
             return bad;",
        );
        serde_json::from_value(v).unwrap()
    }
    /// Every table of the page fits at the window's width (and at least one is there).
    fn assert_tables_fit(&self, page: &str) {
        assert_eq!(self.js("return window.innerWidth"), 1280, "{page}");
        assert!(
            self.js("return document.querySelectorAll('.scroll > table').length")
                .as_u64()
                .unwrap()
                >= 1,
            "{page}: no table"
        );
        let bad = self.overflowing();
        assert!(
            bad.is_empty(),
            "{page} scrolls sideways at 1280 px: {bad:?}"
        );
    }
    /// The KPI cards' values by their names.
    fn kpis(&self) -> Vec<(String, String)> {
        let v = self.js(
            "return Array.from(document.querySelectorAll('#kpis .tile')).map(t => [t.dataset.kpi, t.querySelector('.v').textContent])",
        );
        serde_json::from_value(v).unwrap()
    }
    fn click(&self, css: &str) {
        let e = self.call(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        let id = e
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(|v| v.as_str())
            .unwrap_or_else(|| panic!("no element {css}: {e}"))
            .to_string();
        self.call("POST", &format!("/element/{id}/click"), Some(json!({})));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // never a panic here: a failing test must still reach the driver's drop
        let _ = try_wd(
            self.port,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
    }
}

#[test]
fn every_page_in_chromium_with_a_click_through() {
    let home = tempfile::tempdir().unwrap();
    let f = fleet::fleet(&home.path().join("history.db"));
    let ui = start_ui(home.path());
    let base = format!("http://{}", ui.addr);
    let driver = chromedriver();
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    let b = Browser::open(&driver, shots.clone());

    // the overview: the KPI tiles, four charts, the jobs
    b.go(&format!("{base}/"));
    assert!(!b.alert_open(), "a script from an app name ran");
    let kpis = b.kpis();
    let kpi = |name: &str| {
        kpis.iter()
            .find(|k| k.0 == name)
            .unwrap_or_else(|| panic!("no KPI {name}: {kpis:?}"))
            .1
            .clone()
    };
    assert_eq!(kpi("Jobs"), "5");
    assert_eq!(kpi("Measured speedup"), "2.00x");
    assert_eq!(kpi("Savings per month"), "$10.00");
    assert_eq!(
        b.js("return document.querySelectorAll('svg.chart').length"),
        4
    );
    // the prediction's errors: 2 of the 5 qualified jobs measured (etl 2.50x, joins 1.60x),
    // each qualified job's range a band, each measured one a dot with its error
    assert_eq!(
        kpi("Measured vs predicted only"),
        "2 measured, 3 predicted only"
    );
    assert_eq!(kpi("Costs at"), fleet::LIST_PRICES);
    let marks = b.js(
        "const c = Array.from(document.querySelectorAll('svg.chart'))
           .find(s => s.getAttribute('aria-label') === 'Predicted vs measured speedup');
         return [c.querySelectorAll('.range').length, c.querySelectorAll('.measured').length,
                 Array.from(c.querySelectorAll('text')).map(t => t.textContent)
                   .filter(t => t.startsWith('error')).sort()]",
    );
    // etl: (3.10 - 2.50) / 2.50; joins: (1.80 - 1.60) / 1.60; both in their ranges
    assert_eq!(
        marks,
        json!([5, 2, ["error +12%, in range", "error +24%, in range"]])
    );
    // the hostile name is text: shown as written, no element made from it
    let names =
        b.js("return Array.from(document.querySelectorAll('#jobs a.app')).map(a => a.textContent)");
    assert!(
        names.as_array().unwrap().iter().any(|n| n == HOSTILE),
        "{names}"
    );
    assert_eq!(b.js("return document.querySelectorAll('img').length"), 0);
    // "Jobs to act on" fits: its secondary figures folded under the main ones
    b.assert_tables_fit("the overview");
    assert_eq!(
        b.js("return document.querySelector('#jobs tr.job').cells.length"),
        b.js("return document.querySelector('#jobs thead tr').cells.length")
    );
    let etl_row = b.js(&format!(
        "const r = document.querySelector(\"#jobs a[href='/jobs/{}']\").closest('tr');
         return [r.querySelector('.speedup .measured').textContent,
                 r.querySelector('.speedup .predicted').textContent,
                 r.querySelector('.savings .monthly').textContent]",
        f.etl
    ));
    assert_eq!(etl_row, json!(["2.50x", "predicted 3.10x", "$10.00/month"]));
    b.shot("overview");

    // the job list: filter, then click through to a job
    b.go(&format!("{base}/jobs"));
    assert_eq!(
        b.js("return document.querySelectorAll('#jobs tbody tr').length"),
        5
    );
    b.js("const i = document.getElementById('filter'); i.value = 'joins'; i.dispatchEvent(new Event('input')); return 0");
    assert_eq!(
        b.js("return Array.from(document.querySelectorAll('#jobs tbody tr')).filter(r => r.style.display !== 'none').length"),
        1
    );
    b.assert_tables_fit("the job list");
    b.shot("jobs-filtered");
    b.js("const i = document.getElementById('filter'); i.value = ''; i.dispatchEvent(new Event('input')); return 0");
    b.shot("jobs");
    b.click(&format!("#jobs a[href='/jobs/{}']", f.etl));
    let t0 = Instant::now();
    while b.call("GET", "/url", None) != Value::String(format!("{base}/jobs/{}", f.etl)) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the click did not open the job page"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        b.js("return document.getElementById('app-name').textContent"),
        "etl_daily"
    );
    assert_eq!(
        b.js("return document.querySelectorAll('#runs tbody tr').length"),
        2
    );
    assert!(
        b.js("return document.getElementById('spark-defaults').textContent")
            .as_str()
            .unwrap()
            .contains("spark.sql.shuffle.partitions")
    );
    // both sides of the cluster alike: nodes first, details apart, no JSON
    let clusters = b.js("return ['cpu-cluster', 'gpu-cluster'].map(id => {
           const e = document.getElementById(id);
           return [e.querySelector('.cluster').textContent, e.querySelector('.sub').textContent,
                   /^\\d+ x [a-z0-9]+\\.[a-z0-9]+$/.test(e.querySelector('.cluster').textContent),
                   e.textContent.includes('{') || e.textContent.includes('\"')];
         })");
    assert_eq!(
        clusters,
        json!([
            [
                "4 x m5d.4xlarge",
                "driver i3.2xlarge; 16 executors of 4 cores, 14.5 GiB heap; worker type inferred from the event log",
                true,
                false
            ],
            [
                "1 x g6.4xlarge",
                "1 executor of 16 cores, 1 L4 (24 GiB) per node",
                true,
                false
            ]
        ])
    );
    // the runs table fits, each run's speedup and idle cost folded under its duration and cost
    b.assert_tables_fit("a job's page");
    assert_eq!(
        b.js("return Array.from(document.querySelectorAll('#runs tbody tr')).map(r => [r.querySelector('.speedup')?.textContent, r.querySelector('.idle')?.textContent, r.querySelector('.scale-to-zero')?.textContent])"),
        json!([
            ["1.67x vs CPU", "25% idle ($1.50)", "$5.25 with scale-to-zero 60 s"],
            ["2.50x vs CPU", "25% idle ($1.25)", "$4.38 with scale-to-zero 60 s"]
        ])
    );
    b.shot("job");

    // the hostile job's page and the validations
    b.go(&format!("{base}/jobs/{}", f.hostile));
    assert!(!b.alert_open());
    assert_eq!(
        b.js("return document.getElementById('app-name').textContent"),
        HOSTILE
    );
    b.assert_tables_fit("the hostile job's page");
    b.shot("job-hostile");
    b.go(&format!("{base}/validations?since=30d"));
    assert_eq!(
        b.js("return document.querySelector('#latest tbody tr .badge.NEW') !== null"),
        true
    );
    b.assert_tables_fit("the validations");
    b.shot("validations");

    // small costs, as a tune on the EMR emulator leaves them: the cards show the digits the
    // table shows, never $0.00
    let small_home = tempfile::tempdir().unwrap();
    let small = fleet::small_costs(&small_home.path().join("history.db"));
    let small_ui = start_ui(small_home.path());
    let small_base = format!("http://{}", small_ui.addr);
    b.go(&format!("{small_base}/"));
    let kpis = b.kpis();
    assert!(
        kpis.iter().all(|(_, v)| v != "$0.00" && v != "$0.01"),
        "{kpis:?}"
    );
    let kpi = |name: &str| {
        kpis.iter()
            .find(|k| k.0 == name)
            .unwrap_or_else(|| panic!("no KPI {name}: {kpis:?}"))
            .1
            .clone()
    };
    assert_eq!(kpi("Cost per run before"), "$0.014");
    assert_eq!(kpi("Cost per run after"), "$0.0018");
    assert_eq!(kpi("Savings per run"), "$0.012");
    assert_eq!(kpi("Predicted savings per run (untested)"), "$0");
    // the one job's row: the same figures as the cards
    let row = b.js(&format!(
        "const r = document.querySelector(\"#jobs a[href='/jobs/{small}']\").closest('tr');
         return Array.from(r.cells).slice(4, 7).map(c => c.textContent)"
    ));
    assert_eq!(row, json!(["$0.014", "$0.0018", "$0.012"]));
    // the other job: an estimate and a loss under a cent
    let row = b.js(
        "const r = Array.from(document.querySelectorAll('#jobs tr.job'))
           .find(r => r.querySelector('a.app').textContent === 'Rapids Spark Profiling Tool Unit Tests');
         return Array.from(r.cells).slice(4, 7).map(c => c.textContent)",
    );
    assert_eq!(row, json!(["$0.0041", "$0.0049estimated", "-$0.00080"]));
    b.assert_tables_fit("the overview of small costs");
    b.shot("overview-small-costs");
    b.go(&format!("{small_base}/jobs/{small}"));
    assert_eq!(
        b.js("return document.querySelector('#runs .cost').firstChild.textContent"),
        "$0.0018"
    );
    b.assert_tables_fit("the small job's page");
    b.shot("job-small-costs");
    for n in [
        "overview",
        "jobs",
        "jobs-filtered",
        "job",
        "job-hostile",
        "validations",
        "overview-small-costs",
        "job-small-costs",
    ] {
        assert!(shots.join(format!("{n}.png")).exists());
    }
    eprintln!("screenshots in {}", shots.display());
}
