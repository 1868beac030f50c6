//! The container image's runtime file set, tested without a container daemon: `scripts/image
//! --files` (the command the Dockerfile's build stage runs) lays out this binary and the XGBoost
//! libraries in an empty folder, and aether runs from there with an empty environment.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `bin/aether` finds `lib/` through its `$ORIGIN` rpath (not the build's `.xgboost` folder, not
/// LD_LIBRARY_PATH), and `env -i bin/aether qualify` judges the sample logs with the built-in
/// model.
#[test]
fn the_image_files_run_qualify_with_an_empty_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp = tmp.path().canonicalize().unwrap();
    let dir = tmp.join("opt/aether");
    let o = Command::new("bash")
        .arg(repo().join("scripts/image"))
        .arg("--files")
        .arg(&dir)
        .arg("--binary")
        .arg(env!("CARGO_BIN_EXE_aether"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let bin = dir.join("bin/aether");
    // stripped: the build keeps its symbol table, the image does without
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    assert!(size(&bin) < size(Path::new(env!("CARGO_BIN_EXE_aether"))));

    // the loader's view with nothing from this test's environment (cargo puts the build's
    // library folder on LD_LIBRARY_PATH)
    let o = Command::new("ldd")
        .arg(&bin)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let ldd = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && !ldd.contains("not found"), "{ldd}");
    for lib in ["libxgboost.so", "libgomp-"] {
        let line = ldd
            .lines()
            .find(|l| l.trim_start().starts_with(lib))
            .unwrap_or_else(|| panic!("no {lib} in\n{ldd}"));
        let (_, path) = line.split_once(" => ").unwrap();
        let path = Path::new(path.split(" (").next().unwrap());
        assert!(
            path.canonicalize().unwrap().starts_with(dir.join("lib")),
            "{lib} not from {}:\n{ldd}",
            dir.display()
        );
    }

    // env -i: no LD_LIBRARY_PATH, no HOME (aether's home is then ./.aether)
    let cwd = tmp.join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let sample = repo().join("datasets/sample");
    let out = tmp.join("out");
    let o = Command::new(&bin)
        .env_clear()
        .current_dir(&cwd)
        .arg("qualify")
        .arg("--event_log")
        .args(
            [
                "local-1796009671201",
                "local-1796009839341.zstd",
                "eventlog_v2_local-1796009941265",
            ]
            .map(|f| sample.join(f)),
        )
        .arg("--output")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let mut r = csv::Reader::from_path(out.join("qualification_summary.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (app, name, speedup) = (col("App ID"), col("App Name"), col("Estimated GPU Speedup"));
    let mut apps: Vec<(String, String)> = Vec::new();
    for row in r.records() {
        let row = row.unwrap();
        // the QualX model ran (XGBoost from lib/): a speedup per app
        let s: f64 = row[speedup].parse().unwrap();
        assert!(s > 0.0, "{row:?}");
        assert!(stdout.contains(&row[app]), "{stdout}");
        apps.push((row[app].to_string(), row[name].to_string()));
    }
    apps.sort();
    assert_eq!(
        apps,
        [
            ("local-1796009671201", "tpch_q3"),
            ("local-1796009839341", "pandas_udf__zstd"),
            ("local-1796009941265", "tpch_q18__defaults"),
        ]
        .map(|(a, n)| (a.to_string(), n.to_string()))
    );
    assert!(cwd.join(".aether/history.db").is_file());
}
