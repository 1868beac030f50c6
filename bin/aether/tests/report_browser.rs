//! `aether report ui` in a real browser: headless Chromium driven by chromedriver over the
//! WebDriver protocol (a few JSON requests, offline), over the history of `common/fleet.rs`.
//! Every page is loaded and screenshotted (PNG files under the build's target folder, kept for
//! a look), the DOM holds the KPIs and the job rows, the hostile app name is text (no alert, no
//! injected element), the job list filters, and a click on a job opens its page.
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
                         "--window-size=1280,1400"]}}}}),
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
    let kpis = b.js(
        "return Array.from(document.querySelectorAll('#kpis .tile')).map(t => [t.dataset.kpi, t.querySelector('.v').textContent])",
    );
    let kpi = |name: &str| {
        kpis.as_array()
            .unwrap()
            .iter()
            .find(|k| k[0] == name)
            .unwrap_or_else(|| panic!("no KPI {name}: {kpis}"))[1]
            .clone()
    };
    assert_eq!(kpi("Jobs"), "5");
    assert_eq!(kpi("Measured speedup"), "2.00x");
    assert_eq!(kpi("Savings per month"), "$10.00");
    assert_eq!(
        b.js("return document.querySelectorAll('svg.chart').length"),
        4
    );
    // the hostile name is text: shown as written, no element made from it
    let names =
        b.js("return Array.from(document.querySelectorAll('#jobs a.app')).map(a => a.textContent)");
    assert!(
        names.as_array().unwrap().iter().any(|n| n == HOSTILE),
        "{names}"
    );
    assert_eq!(b.js("return document.querySelectorAll('img').length"), 0);
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
    b.shot("job");

    // the hostile job's page and the validations
    b.go(&format!("{base}/jobs/{}", f.hostile));
    assert!(!b.alert_open());
    assert_eq!(
        b.js("return document.getElementById('app-name').textContent"),
        HOSTILE
    );
    b.shot("job-hostile");
    b.go(&format!("{base}/validations?since=30d"));
    assert_eq!(
        b.js("return document.querySelector('#latest tbody tr .badge.NEW') !== null"),
        true
    );
    b.shot("validations");
    for n in [
        "overview",
        "jobs",
        "jobs-filtered",
        "job",
        "job-hostile",
        "validations",
    ] {
        assert!(shots.join(format!("{n}.png")).exists());
    }
    eprintln!("screenshots in {}", shots.display());
}
