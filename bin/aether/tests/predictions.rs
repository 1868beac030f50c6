//! How far to trust a prediction, end to end on the CLI: `qualify` prints an 80 % speedup range
//! and says where it comes from — the documented prior with too few measured jobs, then the
//! fleet's own (predicted, measured) pairs from the history (split conformal: with 12 pairs the
//! range is the prediction times the smallest and largest measured/predicted ratio, worked out
//! here by hand); `model calibrate` fits the fleet's bias, reports its held-out error against
//! QualX's, and only once saved changes later predictions (the calibrated speedup is e^a times
//! QualX's, a the mean log ratio); bad pair files are refused naming the file and the line.

mod common;

use common::{err, out};
use std::path::{Path, PathBuf};

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sample/local-1796009671201")
}

/// `qualification_summary.csv` of the sample log (every column): its header and its one row;
/// qualify's stderr.
fn qualify_csv(home: &Path) -> (Vec<String>, Vec<String>, String) {
    let dir = home.join("qualified");
    let o = common::aether(
        home,
        &[
            "qualify",
            "--event_log",
            sample().to_str().unwrap(),
            "--output",
            dir.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let text = std::fs::read_to_string(dir.join("qualification_summary.csv")).unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    let row: Vec<String> = rdr
        .records()
        .next()
        .unwrap()
        .unwrap()
        .iter()
        .map(String::from)
        .collect();
    (header, row, err(&o))
}

fn cell<'a>(header: &[String], row: &'a [String], name: &str) -> &'a str {
    let i = header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}: {header:?}"));
    &row[i]
}

fn f(v: &str) -> f64 {
    v.parse().unwrap_or_else(|_| panic!("not a number: {v:?}"))
}

#[test]
fn ranges_from_the_prior_then_the_fleet_then_a_saved_calibration() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");

    // no measured job: the prior, labelled, ÷1.3 to ×1.3
    let (h, row, note) = qualify_csv(&home);
    let qualx = f(cell(&h, &row, "Estimated GPU Speedup"));
    assert!(
        note.contains("from the prior") && note.contains("0 measured pairs"),
        "{note}"
    );
    assert!(
        cell(&h, &row, "Speedup Range Source").starts_with("prior ±30%"),
        "{row:?}"
    );
    assert!((f(cell(&h, &row, "Speedup Low")) - qualx / 1.3).abs() < 0.011);
    assert!((f(cell(&h, &row, "Speedup High")) - qualx * 1.3).abs() < 0.011);

    // 12 measured jobs whose GPU runs were 1.4x faster than predicted, give or take
    let ratios = [
        1.21, 1.52, 1.38, 1.45, 1.30, 1.61, 1.26, 1.41, 1.49, 1.35, 1.44, 1.33,
    ];
    {
        let mut hist = aether_core::History::open(&home.join("history.db")).unwrap();
        for (i, r) in ratios.iter().enumerate() {
            let predicted = 1.5 + 0.25 * i as f64;
            let cpu_ms = 100_000;
            let gpu_ms = (cpu_ms as f64 / (predicted * r)).round() as i64;
            let (job, config) = common::fleet::qualified(
                &mut hist,
                &format!("app-{i}"),
                "etl",
                1_000 * i as i64,
                cpu_ms,
                (
                    "Medium",
                    predicted,
                    (cpu_ms as f64 / predicted) as i64,
                    1.0,
                    0.5,
                ),
            );
            common::fleet::gpu_run(&mut hist, job, config, "COMPLETED", 5_000, gpu_ms, 0.3);
        }
    }
    // the measured ratios as the history rounds them (durations in whole ms)
    let measured: Vec<f64> = ratios
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let predicted = 1.5 + 0.25 * i as f64;
            let gpu_ms = (100_000.0 / (predicted * r)).round();
            100_000.0 / gpu_ms / predicted
        })
        .collect();
    let (lo, hi) = measured
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), r| (l.min(*r), h.max(*r)));
    let (h, row, note) = qualify_csv(&home);
    assert!(
        note.contains("from the fleet's 12 measured pairs"),
        "{note}"
    );
    assert_eq!(
        cell(&h, &row, "Speedup Range Source"),
        "fleet: 12 measured pairs"
    );
    // n = 12 at 80 %: ranks ⌊13·0.1⌋ = 1 and ⌈13·0.9⌉ = 12, the extreme ratios
    assert_eq!(f(cell(&h, &row, "Estimated GPU Speedup")), qualx);
    let low = f(cell(&h, &row, "Speedup Low"));
    let high = f(cell(&h, &row, "Speedup High"));
    let unrounded = f(cell(&h, &row, "Unrounded GPU Speedup"));
    assert!(
        (low - unrounded * lo).abs() < 0.006,
        "{low} vs {}",
        unrounded * lo
    );
    assert!(
        (high - unrounded * hi).abs() < 0.006,
        "{high} vs {}",
        unrounded * hi
    );
    assert_eq!(cell(&h, &row, "Speedup Range Coverage"), "0.8");

    // each measured job's prediction error, in the job list and on the job's page
    let o = common::aether(&home, &["report", "list", "--format", "csv"]);
    assert!(o.status.success(), "{}", err(&o));
    let list = out(&o);
    let mut rdr = csv::Reader::from_reader(list.as_bytes());
    let lh: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    let job0: Vec<String> = rdr
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect::<Vec<_>>())
        .find(|r| cell(&lh, r, "App ID") == "app-0")
        .unwrap();
    // predicted 1.5, measured 1.5 x 1.21 (as the durations round): (p - m) / m
    let want = (1.0 / measured[0] - 1.0) * 100.0;
    assert!(
        (f(cell(&lh, &job0, "Speedup Error Percent")) - want).abs() < 0.006,
        "{want}: {job0:?}"
    );
    let o = common::aether(
        &home,
        &[
            "report",
            "job",
            "--aether_job_id",
            cell(&lh, &job0, "Job ID"),
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains(&format!("Prediction error     speedup {want:+.0}%")),
        "{}",
        out(&o)
    );

    // a calibration: the bias found, held out better than QualX; not saved, nothing changes
    let o = common::aether(&home, &["model", "calibrate"]);
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    let a = measured.iter().map(|r| r.ln()).sum::<f64>() / measured.len() as f64;
    assert!(
        text.contains(&format!("speedup = {:.3} x QualX^1.000", a.exp())),
        "{text}"
    );
    assert!(
        text.contains("12 from the history, 0 from the file") && text.contains("leave-one-out"),
        "{text}"
    );
    assert!(text.contains("not saved: --save"), "{text}");
    let (h, row, _) = qualify_csv(&home);
    assert_eq!(
        cell(&h, &row, "Speedup Range Source"),
        "fleet: 12 measured pairs"
    );
    // saved: later qualify runs use it and say so
    let o = common::aether(&home, &["model", "calibrate", "--save"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(home.join("calibration.json").is_file());
    let (h, row, note) = qualify_csv(&home);
    assert!(
        note.contains("speedups calibrated on 12 measured pairs"),
        "{note}"
    );
    assert_eq!(
        cell(&h, &row, "Speedup Range Source"),
        "calibrated on 12 pairs"
    );
    assert_eq!(f(cell(&h, &row, "QualX GPU Speedup")), qualx);
    let calibrated = f(cell(&h, &row, "Estimated GPU Speedup"));
    assert!(
        (calibrated - unrounded * a.exp()).abs() < 0.006,
        "{calibrated} vs {}",
        unrounded * a.exp()
    );
    assert!(f(cell(&h, &row, "Speedup Low")) <= calibrated);
    assert!(f(cell(&h, &row, "Speedup High")) >= calibrated);
    // a damaged calibration file is named and left unused; qualify goes on with the fleet's
    let saved = std::fs::read(home.join("calibration.json")).unwrap();
    std::fs::write(home.join("calibration.json"), "{not json").unwrap();
    let (h, row, note) = qualify_csv(&home);
    assert!(
        note.contains(&format!(
            "{}: not a calibration",
            home.join("calibration.json").display()
        )),
        "{note}"
    );
    assert_eq!(
        cell(&h, &row, "Speedup Range Source"),
        "fleet: 12 measured pairs"
    );
    std::fs::write(home.join("calibration.json"), saved).unwrap();

    // pairs brought from elsewhere join the history's; a bad file names the file and line
    let pairs = d.path().join("pairs.csv");
    std::fs::write(&pairs, "id,predicted,measured\nx,2.0,2.9\ny,3.0,4.1\n").unwrap();
    let o = common::aether(
        &home,
        &["model", "calibrate", "--pairs", pairs.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("on 14 pairs (12 from the history, 2 from the file)"));
    std::fs::write(&pairs, "predicted,measured\n2.0,fast\n").unwrap();
    let o = common::aether(
        &home,
        &["model", "calibrate", "--pairs", pairs.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        err(&o).contains(&format!("{}: line 2: measured \"fast\"", pairs.display())),
        "{}",
        err(&o)
    );
}

#[test]
fn too_few_pairs_are_refused_with_the_reason() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let pairs = d.path().join("pairs.csv");
    std::fs::write(&pairs, "predicted,measured\n2,2.5\n3,3.2\n1.5,1.4\n").unwrap();
    let o = common::aether(
        &home,
        &[
            "model",
            "calibrate",
            "--pairs",
            pairs.to_str().unwrap(),
            "--save",
        ],
    );
    assert!(!o.status.success());
    assert!(
        err(&o).contains("not calibrated: 3 (predicted, measured) pairs")
            && err(&o).contains("at least 8"),
        "{}",
        err(&o)
    );
    assert!(!home.join("calibration.json").exists());
}

/// (ec2, emr) per hour of a us-east-1 type in the committed list prices.
fn list_price(instance: &str) -> (f64, f64) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/reference/emr/prices.csv");
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("us-east-1,{instance},")))
        .unwrap_or_else(|| panic!("{instance} not in prices.csv"));
    let p: Vec<f64> = line.split(',').skip(2).map(f).collect();
    (p[0], p[1])
}

/// `N x type` of a cluster column.
fn nodes(v: &str) -> (f64, String) {
    let (n, t) = v.split_once(" x ").unwrap_or_else(|| panic!("{v:?}"));
    (f(n), t.to_string())
}

/// Costs at your own prices: list prices by default, labelled; a prices file with a spot price
/// for another GPU type, the spot market and a discount change the recommended type, the CPU and
/// GPU costs (each worked out here from the price list and the shapes qualify shows) and the
/// savings; the cost range is the cost at the ends of the speedup range; `report list` says
/// which prices. A bad prices file stops qualify naming the file, line and field, with nothing
/// recorded; a bad setting is refused naming the key.
#[test]
fn your_prices_change_the_savings_and_the_shape() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let (h, row, note) = qualify_csv(&home);
    assert!(note.contains("costs at AWS list prices"), "{note}");
    assert!(
        cell(&h, &row, "Prices").starts_with("AWS list prices"),
        "{row:?}"
    );
    let (_, listed) = nodes(cell(&h, &row, "Recommended GPU Cluster"));
    // the cost range at the prior's ends (÷1.3, ×1.3): the GPU run lasts speedup/low longer
    let gpu = f(cell(&h, &row, "Estimated GPU Cost USD"));
    let cpu = f(cell(&h, &row, "Estimated CPU Cost USD"));
    assert!((f(cell(&h, &row, "Estimated GPU Cost High USD")) - gpu * 1.3).abs() < 2e-4);
    assert!((f(cell(&h, &row, "Estimated GPU Cost Low USD")) - gpu / 1.3).abs() < 2e-4);
    assert!((f(cell(&h, &row, "Estimated Savings Low USD")) - (cpu - gpu * 1.3)).abs() < 3e-4);
    assert!((f(cell(&h, &row, "Estimated Savings High USD")) - (cpu - gpu / 1.3)).abs() < 3e-4);

    // another GPU type, at a spot price of a cent an hour; 40 % off on-demand EC2
    let cheap = ["g5.4xlarge", "g6.4xlarge", "g4dn.4xlarge"]
        .into_iter()
        .find(|t| *t != listed)
        .unwrap();
    let file = d.path().join("negotiated.csv");
    std::fs::write(
        &file,
        format!(
            "region,instance,ec2_usd_per_hour,emr_usd_per_hour,spot_usd_per_hour\n\
             us-east-1,{cheap},{},{},0.01\n",
            list_price(cheap).0,
            list_price(cheap).1
        ),
    )
    .unwrap();
    for (k, v) in [
        ("prices.file", file.to_str().unwrap()),
        ("prices.market", "spot"),
        ("prices.discount_pct", "40"),
    ] {
        let o = common::aether(&home, &["config", "set", k, v]);
        assert!(o.status.success(), "{k}: {}", err(&o));
    }
    let (h, row, note) = qualify_csv(&home);
    let prices = cell(&h, &row, "Prices");
    assert!(
        prices.contains("negotiated.csv") && prices.contains("spot") && prices.contains("40% off"),
        "{prices}"
    );
    assert!(note.contains("costs at your prices"), "{note}");
    let (gpu_nodes, gpu_type) = nodes(cell(&h, &row, "Recommended GPU Cluster"));
    assert_eq!(gpu_type, cheap, "the cheapest type at your prices");
    // the primary node on-demand less 40 %, plus its EMR fee; workers: m5d without a spot
    // price are on-demand less 40 %, the GPU type at its spot price
    let (d_ec2, d_emr) = list_price("i3.2xlarge");
    let driver = d_ec2 * 0.6 + d_emr;
    let (cpu_nodes, cpu_type) = nodes(cell(&h, &row, "CPU Cluster"));
    let (w_ec2, w_emr) = list_price(&cpu_type);
    let hours = |c: &str| f(cell(&h, &row, c)) / 3_600_000.0;
    let cpu = (cpu_nodes * (w_ec2 * 0.6 + w_emr) + driver) * hours("App Duration");
    let gpu = (gpu_nodes * (0.01 + list_price(cheap).1) + driver) * hours("Estimated GPU Duration");
    assert!(
        (f(cell(&h, &row, "Estimated CPU Cost USD")) - cpu).abs() < 1e-4,
        "{cpu} {row:?}"
    );
    assert!(
        (f(cell(&h, &row, "Estimated GPU Cost USD")) - gpu).abs() < 1e-4,
        "{gpu} {row:?}"
    );
    assert!((f(cell(&h, &row, "Estimated Savings USD")) - (cpu - gpu)).abs() < 2e-4);
    let o = common::aether(&home, &["report", "list"]);
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    let costs_at = text
        .lines()
        .find(|l| l.starts_with("Costs at"))
        .unwrap_or("");
    assert!(costs_at.contains("negotiated.csv"), "{text}");

    // a bad file: named with its line and field; nothing judged or recorded
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let count = |db: &rusqlite::Connection| -> i64 {
        db.query_row("SELECT COUNT(*) FROM qualifications", [], |r| r.get(0))
            .unwrap()
    };
    let before = count(&db);
    std::fs::write(
        &file,
        "region,instance,ec2_usd_per_hour,emr_usd_per_hour,discount_pct\n\
         us-east-1,g5.4xlarge,1.624,0.406,120\n",
    )
    .unwrap();
    let o = common::aether(
        &home,
        &["qualify", "--event_log", sample().to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains(&format!("{}:2", file.display()))
            && e.contains("discount_pct")
            && e.contains("\"120\""),
        "{e}"
    );
    assert_eq!(count(&db), before);
    for (k, v) in [
        ("prices.discount_pct", "150"),
        ("prices.market", "reserved"),
        ("prices.emr_uplift_pct", "a lot"),
    ] {
        let o = common::aether(&home, &["config", "set", k, v]);
        assert_eq!(o.status.code(), Some(2), "{k}");
        assert!(err(&o).contains(k), "{k}: {}", err(&o));
    }
}
