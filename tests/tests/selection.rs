//! The log and app selection (`aether_ingest::select`, the reference qualification's filters)
//! on the bundled real logs: each filter's semantics, ties, negation, `--any`, a log cut off
//! before its application start, no recursion. The apps' names, users and start times the
//! filters judge are checked against the full reading of the same logs (the `applications`
//! table), so the cheap head reading is held to what Spark wrote.

mod common;

use aether_ingest::select::{Criteria, Selection, SparkProperty};
use aether_ingest::{IngestOptions, find_logs};
use std::collections::BTreeMap;
use std::path::Path;

/// The sample (7 apps, every codec and a rolling log), plus: a copy of tpch_q3's log (the same
/// app: a tie on start time and on name), a copy submitted by another user with other Spark
/// properties, a log cut off before its application start, and a nested folder.
fn fleet() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let sample = common::repo().join("datasets/sample");
    copy_dir(&sample, dir.path());
    std::fs::remove_file(dir.path().join("PROVENANCE.md")).unwrap();
    let q3 = std::fs::read_to_string(sample.join("local-1796009671201")).unwrap();
    std::fs::write(dir.path().join("zz-copy-of-q3"), &q3).unwrap();
    let other = q3
        .replace("\"User\":\"root\"", "\"User\":\"etl-bot\"")
        .replace(
            "\"spark.sql.shuffle.partitions\":\"16\"",
            "\"spark.sql.shuffle.partitions\":\"400\"",
        )
        .replace("\"App Name\":\"tpch_q3\"", "\"App Name\":\"nightly_etl\"")
        .replace("local-1796009671201", "local-1796009671999");
    assert!(other.contains("etl-bot") && other.contains("\"400\""));
    std::fs::create_dir(dir.path().join("nested")).unwrap();
    std::fs::write(dir.path().join("nested/local-1796009671999"), other).unwrap();
    // an in-progress log cut off before SparkListenerApplicationStart (its first four events)
    let cut: String = q3.lines().take(4).map(|l| format!("{l}\n")).collect();
    assert!(!cut.contains("SparkListenerApplicationStart"));
    std::fs::write(dir.path().join("local-1796009999999.inprogress"), cut).unwrap();
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir(&dst).unwrap();
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

fn name_of(display: &str) -> String {
    display
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap()
        .to_string()
}

/// What the selection keeps (file names, sorted) and leaves out (file name → reason).
fn pick(dir: &Path, select: Selection) -> (Vec<String>, BTreeMap<String, String>) {
    let opts = IngestOptions {
        select,
        ..Default::default()
    };
    let rt = aether_ingest::io_runtime();
    let found = find_logs(&[dir.display().to_string()], &opts, &rt, false);
    assert!(found.errors.is_empty(), "{:?}", found.errors);
    let mut kept: Vec<String> = found.logs.iter().map(|l| name_of(&l.display)).collect();
    kept.sort();
    let skipped = found
        .skipped
        .iter()
        .map(|s| (name_of(&s.log), s.reason.clone()))
        .collect();
    (kept, skipped)
}

/// The app of each log as the full reading sees it: file name → (app name, start ms, user).
fn truth(dir: &Path) -> BTreeMap<String, (String, i64, String)> {
    let ing = aether_ingest::ingest(&[dir.display().to_string()], &IngestOptions::default());
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    common::rows(
        &ctx,
        "SELECT event_log, app_name, start_ms, user FROM applications WHERE start_ms IS NOT NULL",
    )
    .into_iter()
    .map(|r| {
        (
            name_of(&r[0]),
            (r[1].clone(), r[2].parse().unwrap(), r[3].clone()),
        )
    })
    .collect()
}

fn names(v: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

use common::SAMPLE_LOGS as ALL_SAMPLE;

#[test]
fn heads_read_what_the_full_reading_reads() {
    let dir = fleet();
    let truth = truth(dir.path());
    assert_eq!(truth.len(), 9, "{truth:?}");
    let ing = aether_ingest::ingest(
        &[dir.path().display().to_string()],
        &IngestOptions::default(),
    );
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    let rt = aether_ingest::io_runtime();
    let found = find_logs(
        &[dir.path().display().to_string()],
        &IngestOptions::default(),
        &rt,
        true,
    );
    assert_eq!(found.logs.len(), 10);
    for log in &found.logs {
        let h = &found.heads[&log.display];
        let name = name_of(&log.display);
        match truth.get(&name) {
            Some((app, start, user)) => {
                assert_eq!(h.app_name.as_deref(), Some(app.as_str()), "{name}");
                assert_eq!(h.start_ms, Some(*start), "{name}");
                assert_eq!(h.user.as_deref(), Some(user.as_str()), "{name}");
                let version = common::rows(
                    &ctx,
                    &format!(
                        "SELECT spark_version FROM applications WHERE event_log LIKE '%/{name}'"
                    ),
                );
                assert_eq!(
                    h.spark_version.as_deref(),
                    Some(version[0][0].as_str()),
                    "{name}"
                );
                // the Spark properties: those of the full reading's properties table
                let app = h.app_id.as_deref().unwrap();
                let mut want: Vec<(String, String)> = common::rows(
                    &ctx,
                    &format!(
                        "SELECT key, value FROM properties WHERE app_id = '{app}' \
                         AND category = 'spark'"
                    ),
                )
                .into_iter()
                .map(|r| (r[0].clone(), r[1].clone()))
                .collect();
                want.sort();
                want.dedup();
                let mut got = h.props.clone();
                got.sort();
                assert!(got.len() > 5, "{name}: {got:?}");
                assert_eq!(got, want, "{name}");
            }
            None => assert_eq!(name, "local-1796009999999.inprogress"),
        }
    }
    let codec = |n: &str| {
        found
            .logs
            .iter()
            .find(|l| name_of(&l.display) == n)
            .map(|l| found.heads[&l.display].codec.clone())
            .unwrap()
    };
    assert_eq!(codec("local-1796009829641.lz4"), "lz4");
    assert_eq!(codec("local-1796009848199.snappy"), "snappy");
    assert_eq!(codec("local-1796009671201"), "none");
}

#[test]
fn no_selection_keeps_every_log() {
    let dir = fleet();
    let (kept, skipped) = pick(dir.path(), Selection::default());
    assert_eq!(kept.len(), 10, "{kept:?}");
    assert!(skipped.is_empty());
}

#[test]
fn app_name_substring_pattern_and_negation() {
    let dir = fleet();
    let sel = |n: &str| Selection {
        app_name: Some(n.parse().unwrap()),
        ..Default::default()
    };
    let (kept, skipped) = pick(dir.path(), sel("tpch"));
    assert_eq!(
        kept,
        names(&[
            "eventlog_v2_local-1796009941265",
            "local-1796009671201",
            "local-1796009829641.lz4",
            "local-1796009848199.snappy",
            "zz-copy-of-q3",
        ])
    );
    assert_eq!(
        skipped["local-1796393658133.zstd"],
        "app name \"sales_report\" is not selected by --application_name tpch"
    );
    assert!(skipped["local-1796009999999.inprogress"].contains("no SparkListenerApplicationStart"));
    // a pattern must match the whole name: tpch_q3 and its copy, not tpch_q3__lz4
    let (kept, _) = pick(dir.path(), sel("tpch_q[0-9]+"));
    assert_eq!(kept, names(&["local-1796009671201", "zz-copy-of-q3"]));
    // negated: every other app (the log without a start is still left out: no name to judge)
    let (kept, skipped) = pick(dir.path(), sel("~tpch"));
    assert_eq!(
        kept,
        names(&[
            "local-1796009777604",
            "local-1796009839341.zstd",
            "local-1796009671999",
            "local-1796393658133.zstd",
        ])
    );
    assert!(skipped.contains_key("local-1796009999999.inprogress"));
}

#[test]
fn newest_and_oldest_by_app_start_with_ties_in_path_order() {
    let dir = fleet();
    let truth = truth(dir.path());
    let sel = |c: &str| Selection {
        criteria: Some(c.parse::<Criteria>().unwrap()),
        ..Default::default()
    };
    // the two latest starts, from the full reading
    let mut by_start: Vec<(&i64, &String)> = truth.iter().map(|(n, (_, s, _))| (s, n)).collect();
    by_start.sort_by(|a, b| b.0.cmp(a.0).then(a.1.cmp(b.1)));
    let (kept, skipped) = pick(dir.path(), sel("2-newest"));
    let want: Vec<String> = {
        let mut w: Vec<String> = by_start[..2].iter().map(|(_, n)| (*n).clone()).collect();
        w.sort();
        w
    };
    assert_eq!(kept, want);
    assert_eq!(
        kept,
        names(&[
            "eventlog_v2_local-1796009941265",
            "local-1796393658133.zstd"
        ])
    );
    assert_eq!(
        skipped["local-1796009777604"],
        "not among the 2 newest by application start (--filter_criteria 2-newest)"
    );
    // tpch_q3 and its copy start at the same millisecond: 1-oldest keeps the first by path
    assert_eq!(
        truth["local-1796009671201"].1, truth["zz-copy-of-q3"].1,
        "the copy is a tie"
    );
    let (kept, skipped) = pick(dir.path(), sel("1-oldest"));
    assert_eq!(kept, names(&["local-1796009671201"]));
    assert!(skipped["zz-copy-of-q3"].contains("not among the 1 oldest"));
    // three logs share that start (nested/'s nightly_etl is an edit of the same log): 2-oldest
    // takes the first two by path
    let (kept, _) = pick(dir.path(), sel("2-oldest"));
    assert_eq!(kept, names(&["local-1796009671201", "local-1796009671999"]));
}

#[test]
fn newest_per_app_name() {
    let dir = fleet();
    let c: Criteria = "1-newest-per-app-name".parse().unwrap();
    let (kept, skipped) = pick(
        dir.path(),
        Selection {
            criteria: Some(c),
            ..Default::default()
        },
    );
    // one per name: 8 names (the sample's 7 and nightly_etl); of tpch_q3's tie, the first by path
    let mut want = ALL_SAMPLE.to_vec();
    want.push("local-1796009671999");
    assert_eq!(kept, names(&want));
    assert_eq!(
        skipped["zz-copy-of-q3"],
        "not among the 1 newest of the app name \"tpch_q3\" by application start \
         (--filter_criteria 1-newest-per-app-name)"
    );
}

#[test]
fn file_filters_decide_before_any_log_is_opened() {
    let dir = fleet();
    // file times: the sample's logs a day apart in path order; the others ten days before
    let day = 86_400_000;
    let base = aether_ingest::select::parse_utc("2026-11-01 00:00:00").unwrap();
    let mut sample: Vec<_> = ALL_SAMPLE.iter().map(|n| dir.path().join(n)).collect();
    sample.sort();
    let touch = |p: &Path, ms: i64| {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
        let files: Vec<std::path::PathBuf> = if p.is_dir() {
            std::fs::read_dir(p)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect()
        } else {
            vec![p.to_path_buf()]
        };
        for f in files {
            std::fs::File::options()
                .write(true)
                .open(&f)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
    };
    for (i, p) in sample.iter().enumerate() {
        touch(p, base + i as i64 * day);
    }
    for other in ["zz-copy-of-q3", "local-1796009999999.inprogress"] {
        touch(&dir.path().join(other), base - 10 * day);
    }
    // (no recursion: nested/ is not searched)
    let top = |s: Selection| Selection {
        no_recursion: true,
        ..s
    };
    let c: Criteria = "2-newest-filesystem".parse().unwrap();
    let (kept, skipped) = pick(
        dir.path(),
        top(Selection {
            criteria: Some(c),
            ..Default::default()
        }),
    );
    assert_eq!(
        kept,
        names(&["local-1796009848199.snappy", "local-1796393658133.zstd"])
    );
    assert_eq!(
        skipped["local-1796009839341.zstd"],
        "not among the 2 newest by file time (--filter_criteria 2-newest-filesystem)"
    );
    assert_eq!(skipped.len(), 7, "{skipped:?}");
    // a window of file times, both ends inclusive: days 2 and 3 of the sample
    let (kept, skipped) = pick(
        dir.path(),
        top(Selection {
            fs_start_ms: Some(base + 2 * day),
            fs_end_ms: Some(base + 3 * day),
            ..Default::default()
        }),
    );
    assert_eq!(
        kept,
        names(&["local-1796009777604", "local-1796009829641.lz4"])
    );
    assert_eq!(
        skipped["local-1796009671201"],
        "file time 2026-11-02 00:00:00, before --fs_start_time 2026-11-03 00:00:00"
    );
    assert_eq!(
        skipped["local-1796009848199.snappy"],
        "file time 2026-11-06 00:00:00, after --fs_end_time 2026-11-04 00:00:00"
    );
    // stored sizes, both ends inclusive (a rolling log counts its event files: 44,310 bytes)
    let (kept, skipped) = pick(
        dir.path(),
        top(Selection {
            min_bytes: Some(80 << 10),
            max_bytes: Some(200 << 10),
            ..Default::default()
        }),
    );
    assert_eq!(
        kept,
        names(&[
            "local-1796009829641.lz4",
            "local-1796009848199.snappy",
            "local-1796393658133.zstd",
        ])
    );
    assert_eq!(
        skipped["eventlog_v2_local-1796009941265"],
        "44310 bytes stored, under --min_event_log_size (81920 bytes)"
    );
    assert_eq!(
        skipped["local-1796009777604"],
        "476758 bytes stored, over --max_event_log_size (204800 bytes)"
    );
    // the name: a file's, or a log folder's
    let (kept, skipped) = pick(
        dir.path(),
        Selection {
            match_logs: Some("eventlog_v2".into()),
            ..Default::default()
        },
    );
    assert_eq!(kept, names(&["eventlog_v2_local-1796009941265"]));
    assert_eq!(
        skipped["zz-copy-of-q3"],
        "its name \"zz-copy-of-q3\" does not contain \"eventlog_v2\" (--match_event_logs)"
    );
}

#[test]
fn user_properties_start_time_all_and_any() {
    let dir = fleet();
    let truth = truth(dir.path());
    let sel = |s: Selection| {
        let (kept, skipped) = pick(dir.path(), s);
        (kept, skipped)
    };
    let (kept, _) = sel(Selection {
        user: Some("etl".into()),
        ..Default::default()
    });
    assert_eq!(kept, names(&["local-1796009671999"]));
    let prop = |p: &str| p.parse::<SparkProperty>().unwrap();
    // a key with a value; a key alone (every sample app sets spark.master)
    let (kept, skipped) = sel(Selection {
        spark_properties: vec![prop("spark.sql.shuffle.partitions:400")],
        ..Default::default()
    });
    assert_eq!(kept, names(&["local-1796009671999"]));
    assert_eq!(
        skipped["local-1796009671201"],
        "sets none of the Spark properties spark.sql.shuffle.partitions:400 (--spark_property)"
    );
    let (kept, _) = sel(Selection {
        spark_properties: vec![prop("spark.no.such.key"), prop("spark.master")],
        ..Default::default()
    });
    assert_eq!(kept.len(), 9, "{kept:?}");
    // start time: inclusive, from the full reading's start of sales_report
    let since = truth["local-1796393658133.zstd"].1;
    let (kept, skipped) = sel(Selection {
        started_since_ms: Some(since),
        ..Default::default()
    });
    assert_eq!(kept, names(&["local-1796393658133.zstd"]));
    assert!(skipped["local-1796009671201"].ends_with("(--start_app_time)"));
    // all (the default): the user and the name must both hold; any: either
    let both = Selection {
        user: Some("etl-bot".into()),
        app_name: Some("sales".parse().unwrap()),
        ..Default::default()
    };
    let (kept, _) = sel(both.clone());
    assert!(kept.is_empty(), "{kept:?}");
    let (kept, skipped) = sel(Selection { any: true, ..both });
    assert_eq!(
        kept,
        names(&["local-1796009671999", "local-1796393658133.zstd"])
    );
    assert_eq!(
        skipped["local-1796009671201"],
        "app name \"tpch_q3\" is not selected by --application_name sales; user \"root\" is not \
         \"etl-bot\" (--user_name)"
    );
}

#[test]
fn no_recursion_keeps_log_folders_and_drops_plain_subfolders() {
    let dir = fleet();
    let (kept, _) = pick(
        dir.path(),
        Selection {
            no_recursion: true,
            ..Default::default()
        },
    );
    assert!(
        kept.contains(&"eventlog_v2_local-1796009941265".to_string()),
        "{kept:?}"
    );
    assert!(
        !kept.contains(&"local-1796009671999".to_string()),
        "{kept:?}"
    );
    assert_eq!(kept.len(), 9);
}
