//! `aether profile`'s AutoTuner against the reference profiler (spark-rapids-tools 26.08.4,
//! `../shared/anchor/golden/profile-dev/`): for every GPU app of the golden set, every
//! recommended property and value and every comment must equal the reference's section D
//! (`tuning_summary.log`); both CPU logs get no recommendations, as in the reference.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

/// The reference's `tuning_summary.log`: app id → (`key=value` lines, comments).
fn golden(path: &Path) -> BTreeMap<String, (Vec<String>, Vec<String>)> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (the shared anchor data)", path.display()));
    let mut out: BTreeMap<String, (Vec<String>, Vec<String>)> = BTreeMap::new();
    let mut app = String::new();
    let mut in_comments = false;
    for line in text.lines() {
        if let Some(a) = line.strip_prefix("App ID: ") {
            app = a.trim().to_string();
            out.entry(app.clone()).or_default();
            in_comments = false;
        } else if line == "\tComments:" {
            in_comments = true;
        } else if let Some(p) = line.strip_prefix("\t--conf ") {
            out.get_mut(&app).unwrap().0.push(p.to_string());
        } else if let Some(c) = line.strip_prefix("\t- ") {
            if c != "No recommendations" && c != "No comments" {
                out.get_mut(&app).unwrap().1.push(c.to_string());
            }
        } else if let Some(cont) = line.strip_prefix('\t')
            && in_comments
        {
            // a comment's continuation line
            let last = out.get_mut(&app).unwrap().1.last_mut().unwrap();
            last.push('\n');
            last.push_str(cont);
        }
    }
    out
}

fn inputs(list: &Path, section: &str) -> Vec<String> {
    inputs_under(list, section, &shared().join("datasets"))
}

/// The paths of one `# …` section of an INPUTS.txt list, under `base`.
fn inputs_under(list: &Path, section: &str, base: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(list).unwrap();
    let mut on = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') {
            on = line.contains(section);
            continue;
        }
        if on && !line.trim().is_empty() {
            out.push(base.join(line.trim()).display().to_string());
        }
    }
    out
}

fn ours(logs: &[String]) -> BTreeMap<String, aether_predict::profile::Tuning> {
    ours_for(logs, &aether_predict::profile::Worker::default())
}

/// aether's recommendations for `logs`, sized for worker `w`.
fn ours_for(
    logs: &[String],
    w: &aether_predict::profile::Worker,
) -> BTreeMap<String, aether_predict::profile::Tuning> {
    let ing = aether_ingest::ingest(logs, &Default::default());
    assert!(ing.source_errors.is_empty(), "{:?}", ing.source_errors);
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(aether_predict::profile::prepare(&ctx)).unwrap();
    let inputs = rt
        .block_on(aether_predict::tuner::inputs(
            &ctx,
            aether_predict::tuner::Mode::Profiling,
        ))
        .unwrap();
    inputs
        .iter()
        .map(|(app, inp)| (app.clone(), aether_predict::tuner::recommend(inp, w)))
        .collect()
}

/// Compare aether's recommendations with a reference `tuning_summary.log` (and, where the
/// reference's app folders are given, section D of each `profile.log`): every property, value
/// and comment, and the block as written byte for byte. Returns the number of apps compared.
fn compare_with_reference(
    summary: &Path,
    profile_dir: Option<&Path>,
    got: &BTreeMap<String, aether_predict::profile::Tuning>,
) -> usize {
    let want = golden(summary);
    let (mut props_ok, mut props_all, mut comments_ok, mut comments_all, mut apps_ok) =
        (0, 0, 0, 0, 0);
    let mut report = String::new();
    for (app, (props, comments)) in &want {
        let t = got
            .get(app)
            .unwrap_or_else(|| panic!("{app}: not profiled"));
        // (the reference recommends nothing where the plugin is not enabled in the environment)
        assert_eq!(
            t.recommended,
            !(props.is_empty() && comments.is_empty()),
            "{app}: recommended"
        );
        let mine: Vec<String> = t
            .properties
            .iter()
            .map(|p| format!("{}={}", p.key, p.value))
            .collect();
        let p_ok = props.iter().filter(|p| mine.contains(p)).count();
        let c_ok = comments.iter().filter(|c| t.comments.contains(c)).count();
        props_ok += p_ok;
        props_all += props.len().max(mine.len());
        comments_ok += c_ok;
        comments_all += comments.len().max(t.comments.len());
        let same = &mine == props && &t.comments == comments;
        apps_ok += same as usize;
        if !same {
            let missing: Vec<&String> = props.iter().filter(|p| !mine.contains(p)).collect();
            let extra: Vec<&String> = mine.iter().filter(|p| !props.contains(p)).collect();
            let cmissing: Vec<&String> = comments
                .iter()
                .filter(|c| !t.comments.contains(c))
                .collect();
            let cextra: Vec<&String> = t
                .comments
                .iter()
                .filter(|c| !comments.contains(c))
                .collect();
            report.push_str(&format!(
                "{app}:\n  properties missing {missing:?}\n  properties extra {extra:?}\n  comments missing {cmissing:?}\n  comments extra {cextra:?}\n"
            ));
        }
    }
    eprintln!(
        "profile vs the reference ({}): {apps_ok}/{} apps equal; properties {props_ok}/{props_all}; comments {comments_ok}/{comments_all}",
        summary.display(),
        want.len()
    );
    assert!(report.is_empty(), "{report}");
    // and written as the reference writes them, byte for byte
    let text = std::fs::read_to_string(summary).unwrap();
    for block in text.split("App ID: ").skip(1) {
        let app = block.lines().next().unwrap().trim();
        let mine = aether_predict::profile::render_summary(app, &got[app]);
        assert_eq!(
            mine.trim_end(),
            format!("App ID: {block}").trim_end(),
            "{app}: tuning_summary.log block"
        );
        if let Some(dir) = profile_dir {
            let log = std::fs::read_to_string(dir.join(app).join("profile.log")).unwrap();
            let d = &log[log.find("### D. Recommended Configuration ###").unwrap()..];
            assert_eq!(
                aether_predict::profile::render_section_d(&got[app]).trim_end(),
                d.trim_end(),
                "{app}: section D of profile.log"
            );
        }
    }
    want.len()
}

#[test]
fn recommendations_equal_the_reference_profiler() {
    let dir = shared().join("anchor/golden/profile-dev");
    let list = dir.join("INPUTS.txt");
    let gpu_logs = inputs(&list, "GPU event logs");
    assert_eq!(gpu_logs.len(), 9, "{gpu_logs:?}");
    let got = ours(&gpu_logs);
    let n = compare_with_reference(
        &dir.join("tuning_summary.log"),
        Some(&dir.join("rapids_4_spark_profile")),
        &got,
    );
    assert_eq!(n, 9);

    // CPU logs: nothing to recommend, as the reference
    let cpu = ours(&inputs(&list, "CPU event logs"));
    let want_cpu = golden(&dir.join("cpu/tuning_summary.log"));
    assert_eq!(cpu.len(), want_cpu.len());
    for (app, (p, c)) in &want_cpu {
        assert!(p.is_empty() && c.is_empty());
        let t = &cpu[app];
        assert!(!t.recommended, "{app}: a CPU run");
        assert!(aether_predict::profile::render_summary(app, t).contains("- No recommendations"));
    }
}

/// The target cluster drives the sizing (`tests/golden/target-cluster`): for a worker of one
/// T4, of four A100s (the reference's `workerInfo` YAML) and for an EMR instance type, aether's
/// recommendations on every golden GPU log equal the reference profiler's run with that
/// `--target_cluster_info` — executor cores, memory, pinned pool, threads, concurrent GPU
/// tasks and the T4/A100 partitioning of large shuffles.
#[test]
fn target_clusters_equal_the_reference_profiler() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/target-cluster");
    let list = shared().join("anchor/golden/profile-dev/INPUTS.txt");
    let gpu_logs = inputs(&list, "GPU event logs");
    let cat =
        aether_predict::cluster::Catalog::load(&aether_predict::prices::Terms::list()).unwrap();
    let mut targets = 0;
    for t in ["t4", "a100", "g6.12xlarge"] {
        let spec = dir.join(format!("{t}.yaml"));
        let w = aether_predict::target::resolve(spec.to_str().unwrap(), &cat).unwrap();
        let got = ours_for(&gpu_logs, &w);
        let n = compare_with_reference(&dir.join(format!("{t}.tuning_summary.log")), None, &got);
        assert_eq!(n, 9, "{t}");
        targets += 1;
    }
    assert_eq!(targets, 3);
}

/// One variant of a real GPU log per AutoTuner rule (`tests/golden/autotuner-variants`, made by
/// its `make_variants.py`; docs/reference/autotuner.md lists the rules): aether's
/// recommendations equal the reference profiler's on each, and the rules' inputs the reference
/// reports (`app_level_recommendation_signals.csv`) equal aether's.
#[test]
fn rule_variants_equal_the_reference_profiler() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/autotuner-variants");
    let logs = common::zstd_logs(&dir.join("logs"));
    let index = std::fs::read_to_string(dir.join("logs/INDEX.tsv")).unwrap();
    assert_eq!(logs.len(), index.lines().count(), "logs vs logs/INDEX.tsv");
    assert!(logs.len() >= 8, "{logs:?}");
    let got = ours(&logs);
    let n = compare_with_reference(&dir.join("tuning_summary.log"), None, &got);
    assert_eq!(n, logs.len());

    // the signals the rules read, as the reference counted them
    let ing = aether_ingest::ingest(&logs, &Default::default());
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(aether_predict::profile::prepare(&ctx)).unwrap();
    let inputs = rt
        .block_on(aether_predict::tuner::inputs(
            &ctx,
            aether_predict::tuner::Mode::Profiling,
        ))
        .unwrap();
    let mut fired = (0, 0);
    for e in std::fs::read_dir(dir.join("signals")).unwrap() {
        let path = e.unwrap().path();
        let rows = common::csv_rows(&path);
        let r = &rows[0];
        let app = &r["appId"];
        let inp = &inputs[app.as_str()];
        let want = (
            r["numScanStagesWithGpuOom"].parse::<i64>().unwrap(),
            r["numGpuShuffleStagesWithContainerOom"]
                .parse::<i64>()
                .unwrap(),
        );
        assert_eq!(
            (
                inp.scan_stages_with_gpu_oom,
                inp.shuffle_stages_with_container_oom
            ),
            want,
            "{app}: scan stages with GPU OOM, shuffle stages with container OOM"
        );
        fired.0 += (want.0 > 0) as usize;
        fired.1 += (want.1 > 0) as usize;
    }
    assert!(fired.0 >= 2 && fired.1 >= 1, "signals that fire: {fired:?}");
}

/// A CSV file of the reference (`.csv`, or `.csv.zstd` for the large ones): header, rows.
fn reference_csv(dir: &Path, table: &str) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let plain = dir.join(format!("{table}.csv"));
    let bytes = match std::fs::read(&plain) {
        Ok(b) => b,
        Err(_) => {
            let z = std::fs::read(dir.join(format!("{table}.csv.zstd"))).ok()?;
            zstd::decode_all(z.as_slice()).unwrap()
        }
    };
    let mut r = csv::Reader::from_reader(bytes.as_slice());
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|x| x.unwrap().iter().map(String::from).collect())
        .collect();
    Some((header, rows))
}

/// Whether a value of ours equals the reference's: the same text, or the same number (the
/// reference rounds averages and ratios to 2 decimals), NULL as "".
fn same(ours: &str, theirs: &str) -> bool {
    // the reference writes an unknown value as "" or "null"
    let ours = if ours == "NULL" { "" } else { ours };
    let theirs = if theirs == "null" { "" } else { theirs };
    if ours == theirs {
        return true;
    }
    match (ours.parse::<f64>(), theirs.parse::<f64>()) {
        (Ok(a), Ok(b)) => {
            let decimals = theirs.split_once('.').map(|(_, d)| d.len()).unwrap_or(0);
            let tol = if decimals > 0 && decimals <= 2 {
                0.5 * 10f64.powi(-(decimals as i32)) + 1e-9
            } else {
                1e-9 * b.abs().max(1.0)
            };
            (a - b).abs() <= tol
        }
        _ => false,
    }
}

/// A reference value normalised for comparison: sql_plan_metrics_for_application's `stageIds`
/// is a Scala set, written in its hash order; aether writes it ascending.
fn normalise(table: &str, column: &str, v: &str) -> String {
    if table == "sql_plan_metrics_for_application" && column == "stageIds" {
        let mut ids: Vec<i64> = v.split(',').filter_map(|x| x.trim().parse().ok()).collect();
        ids.sort_unstable();
        return ids
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",");
    }
    v.to_string()
}

#[test]
fn tables_equal_the_reference_profiler() {
    let dir = shared().join("anchor/golden/profile-dev");
    let extra = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/profile-extra");
    // the 9 GPU apps of the shared golden set; three CPU logs that lost executors and one with a
    // skewed shuffle, whose reference output this repository keeps
    // (tests/golden/profile-extra/README.md)
    let mut extra_logs = inputs(&extra.join("INPUTS.txt"), "CPU event logs");
    extra_logs.extend(inputs_under(
        &extra.join("INPUTS.txt"),
        "Event logs kept here",
        &extra,
    ));
    let sets = [
        (
            dir.join("rapids_4_spark_profile"),
            golden(&dir.join("tuning_summary.log")),
            inputs(&dir.join("INPUTS.txt"), "GPU event logs"),
        ),
        (
            extra.clone(),
            golden(&extra.join("tuning_summary.log")),
            extra_logs,
        ),
    ];
    assert_eq!(sets[1].1.len(), 4);
    assert_eq!(sets[1].2.len(), 4);
    let logs: Vec<String> = sets.iter().flat_map(|s| s.2.clone()).collect();
    let ing = aether_ingest::ingest(&logs, &Default::default());
    assert!(ing.source_errors.is_empty(), "{:?}", ing.source_errors);
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(aether_engine::views::register_views(
        &ctx,
        &Default::default(),
    ))
    .unwrap();
    let mut report = Vec::new();
    let mut wrong = Vec::new();
    for (table, view) in aether_predict::profile::REFERENCE_TABLES {
        let (mut rows_ok, mut rows_all) = (0, 0);
        for (root, apps, _) in &sets {
            for app in apps.keys() {
                // the reference writes these tables only when they have rows
                let (header, theirs) = reference_csv(&root.join(app), table).unwrap_or_default();
                let cols = if header.is_empty() {
                    "*".to_string()
                } else {
                    header
                        .iter()
                        .map(|c| format!("\"{c}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let mut ours = common::rows(
                    &ctx,
                    &format!("SELECT {cols} FROM {view} WHERE app_id = '{app}'"),
                );
                let mut theirs: Vec<Vec<String>> = theirs
                    .into_iter()
                    .map(|r| {
                        r.iter()
                            .zip(&header)
                            .map(|(v, c)| normalise(table, c, v))
                            .collect()
                    })
                    .collect();
                ours.sort();
                theirs.sort();
                rows_all += theirs.len().max(ours.len());
                for (i, t) in theirs.iter().enumerate() {
                    match ours.get(i) {
                        Some(o) if o.iter().zip(t).all(|(a, b)| same(a, b)) => rows_ok += 1,
                        o => wrong.push(format!("{table} {app}: reference {t:?}, aether {o:?}")),
                    }
                }
                if ours.len() > theirs.len() {
                    wrong.push(format!(
                        "{table} {app}: {} extra rows (first {:?})",
                        ours.len() - theirs.len(),
                        ours.get(theirs.len())
                    ));
                }
            }
        }
        report.push(format!("{table}: {rows_ok}/{rows_all} rows"));
    }
    eprintln!("profile tables vs the reference: {}", report.join("; "));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
