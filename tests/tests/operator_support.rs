//! GPU operator support and the unsupported-operator stage time against the reference tool
//! (NVIDIA spark-rapids-tools 26.08.4) on every log of its golden output
//! (`../shared/anchor/golden/dev/`): per plan node the operator name, support, action and
//! stages (`execs.csv`), every unsupported operator and expression row
//! (`unsupported_operators.csv`), and per app the app duration and SQL stage durations sum (`apps_summary.csv`) and the
//! "Unsupported Operators Stage Duration" and "… Percent" (`qualification_summary.csv`).

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};

fn stage_set(s: &str) -> BTreeSet<String> {
    s.split(':')
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn operator_support_and_unsupported_time_equal_the_reference_tool() {
    let shared = common::shared();
    let golden = shared.join("anchor/golden/dev");
    let apps_summary: HashMap<String, HashMap<String, String>> =
        common::csv_by(&golden.join("qual_core_output/apps_summary.csv"), "App ID");
    let qual_summary: HashMap<String, HashMap<String, String>> =
        common::csv_by(&golden.join("qualification_summary.csv"), "App ID");
    let mut dirs: Vec<_> = std::fs::read_dir(golden.join("qual_core_output/qual_metrics"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 60, "golden apps: {}", dirs.len());

    let (mut execs, mut execs_ok, mut ops, mut ops_ok) = (0, 0, 0, 0);
    let mut apps_ok = 0;
    let mut failures: Vec<String> = Vec::new();
    for dir in &dirs {
        let app = dir.file_name().unwrap().to_string_lossy().to_string();
        let info: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("cluster_information.json")).unwrap(),
        )
        .unwrap();
        let log = shared
            .join("datasets")
            .join(info["eventLogPath"].as_str().unwrap());
        let ing = aether_ingest::ingest(
            &[log.to_string_lossy().into_owned()],
            &aether_ingest::IngestOptions::default(),
        );
        let ctx = common::session_with_views(&ing);
        let mut app_failures = Vec::new();

        // per node: operator, supported, action, stages
        let mine: HashMap<(String, String), Vec<String>> = common::rows(
            &ctx,
            "SELECT CAST(sql_id AS VARCHAR), CAST(node_id AS VARCHAR), operator, \
             CAST(supported AS VARCHAR), action, array_to_string(stage_ids, ':') FROM operators",
        )
        .into_iter()
        .map(|r| ((r[0].clone(), r[1].clone()), r[2..].to_vec()))
        .collect();
        for g in common::csv_rows(&dir.join("execs.csv")) {
            execs += 1;
            let key = (g["SQL ID"].clone(), g["SQL Node Id"].clone());
            let ok = mine.get(&key).is_some_and(|m| {
                m[0] == g["Exec Name"]
                    && m[1] == g["Exec Is Supported"]
                    && m[2] == g["Action"]
                    && stage_set(&m[3]) == stage_set(&g["Exec Stages"])
            });
            if ok {
                execs_ok += 1;
            } else {
                app_failures.push(format!(
                    "exec sql {} node {}: reference {} {} {} [{}], aether {:?}",
                    key.0,
                    key.1,
                    g["Exec Name"],
                    g["Exec Is Supported"],
                    g["Action"],
                    g["Exec Stages"],
                    mine.get(&key)
                ));
            }
        }

        // unsupported operator rows, and the unsupported expressions inside them
        let mut want: BTreeMap<Vec<String>, i64> = BTreeMap::new();
        for g in common::csv_rows(&dir.join("unsupported_operators.csv")) {
            let k: Vec<String> = [
                "SQL ID",
                "Stage ID",
                "Unsupported Type",
                "Unsupported Operator",
                "Details",
                "Stage Duration",
                "Action",
            ]
            .iter()
            .map(|c| g[*c].clone())
            .collect();
            *want.entry(k).or_default() += 1;
            ops += 1;
        }
        let mut got: BTreeMap<Vec<String>, i64> = BTreeMap::new();
        for r in common::rows(
            &ctx,
            "SELECT CAST(sql_id AS VARCHAR), CAST(stage_id AS VARCHAR), unsupported_type, \
             unsupported_operator, details, CAST(stage_duration_ms AS VARCHAR), action \
             FROM unsupported_operators",
        ) {
            *got.entry(r).or_default() += 1;
        }
        for (k, n) in &want {
            let m = got.get(k).copied().unwrap_or(0);
            ops_ok += (*n).min(m);
            if m != *n {
                app_failures.push(format!("unsupported row {k:?}: reference {n}, aether {m}"));
            }
        }
        for (k, m) in &got {
            if !want.contains_key(k) {
                app_failures.push(format!("unsupported row {k:?}: reference 0, aether {m}"));
            }
        }

        // per app figures
        let s = common::rows(
            &ctx,
            "SELECT CAST(app_duration_ms AS VARCHAR), CAST(sql_stage_durations_sum_ms AS VARCHAR), \
             CAST(unsupported_stage_duration_ms AS VARCHAR), \
             CAST(unsupported_stage_duration_pct AS VARCHAR) FROM unsupported_summary",
        );
        assert_eq!(s.len(), 1, "{app}: one unsupported_summary row");
        let s = &s[0];
        let pct = format!("{:.2}", s[3].parse::<f64>().unwrap());
        let a = &apps_summary[&app];
        let q = &qual_summary[&app];
        for (what, got, want) in [
            ("App Duration", s[0].as_str(), a["App Duration"].as_str()),
            (
                "SQL Stage Durations Sum",
                &s[1],
                &a["SQL Stage Durations Sum"],
            ),
            (
                "Unsupported Operators Stage Duration",
                &s[2],
                &q["Unsupported Operators Stage Duration"],
            ),
            (
                "Unsupported Operators Stage Duration Percent",
                &pct,
                &q["Unsupported Operators Stage Duration Percent"],
            ),
        ] {
            if got != want {
                app_failures.push(format!("{what}: reference {want}, aether {got}"));
            }
        }
        if app_failures.is_empty() {
            apps_ok += 1;
        } else {
            failures.push(format!(
                "{app} ({}):\n  {}",
                log.display(),
                app_failures.join("\n  ")
            ));
        }
    }
    println!(
        "apps {apps_ok}/{} agree; plan nodes {execs_ok}/{execs}; unsupported operator and expression rows {ops_ok}/{ops}",
        dirs.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
