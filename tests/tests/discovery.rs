//! Finding logs where users keep them: `.zip` archives (stored, deflated, ZIP64, a rolling log
//! folder inside, macOS junk), archives in nested folders, `file://` URLs, and a clear error for
//! schemes this build cannot read. What is read through an archive must equal what is read from
//! the same files on disk.

mod common;

use aether_ingest::{IngestOptions, find_logs};
use std::path::Path;
use std::process::Command;

/// Zip `dir`'s files (relative names) into `zip` with Python's zipfile: `method` "stored" or
/// "deflated", `zip64` forces ZIP64 records in the local headers.
fn zip_with_python(dir: &Path, zip: &Path, method: &str, zip64: bool) {
    zip_padded(dir, zip, method, zip64, 0);
}

/// [`zip_with_python`] with `pad` empty members (`_pad-N`, not logs) first: from 65,535 members
/// on, the archive ends with a ZIP64 end of central directory record, and the classic end
/// record's member count (capped at 65,535) no longer holds the logs, which come last.
fn zip_padded(dir: &Path, zip: &Path, method: &str, zip64: bool, pad: usize) {
    let script = r#"
import os, sys, zipfile
src, dst, method, zip64, pad = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", int(sys.argv[5])
comp = zipfile.ZIP_STORED if method == "stored" else zipfile.ZIP_DEFLATED
with zipfile.ZipFile(dst, "w", compression=comp) as z:
    for i in range(pad):
        z.writestr(f"_pad-{i}", b"")
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            name = os.path.relpath(p, src)
            zi = zipfile.ZipInfo.from_file(p, name)
            zi.compress_type = comp
            with open(p, "rb") as fh, z.open(zi, "w", force_zip64=zip64) as out:
                out.write(fh.read())
    z.writestr("__MACOSX/._local-1796009671201", b"\x00\x05\x16\x07")
"#;
    let st = Command::new("python3")
        .args(["-c", script])
        .arg(dir)
        .arg(zip)
        .arg(method)
        .arg(if zip64 { "1" } else { "0" })
        .arg(pad.to_string())
        .status()
        .expect("python3");
    assert!(st.success());
}

fn sample() -> std::path::PathBuf {
    common::repo().join("datasets/sample")
}

/// (app id, tasks, sum of task durations) per app, from the full reading.
fn apps(inputs: &[String]) -> Vec<Vec<String>> {
    let ing = aether_ingest::ingest(inputs, &IngestOptions::default());
    assert!(ing.source_errors.is_empty(), "{:?}", ing.source_errors);
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    common::rows(
        &ctx,
        "SELECT a.app_id, a.app_name, COUNT(t.task_id), SUM(t.duration_ms) FROM applications a \
         JOIN tasks t ON t.app_id = a.app_id GROUP BY a.app_id, a.app_name ORDER BY a.app_id",
    )
}

#[test]
fn zipped_logs_read_as_the_files_do() {
    let direct = apps(&[sample().display().to_string()]);
    assert_eq!(direct.len(), 7);
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("stored", false, 0),
        ("deflated", false, 0),
        ("deflated", true, 0),
        // the ZIP64 end of central directory record (Python writes it from 65,535 members)
        ("stored", false, 65_536),
    ];
    for (method, zip64, pad) in cases {
        let zip = tmp.path().join(format!("logs-{method}-{zip64}-{pad}.zip"));
        zip_padded(&sample(), &zip, method, zip64, pad);
        if pad > 0 {
            let bytes = std::fs::read(&zip).unwrap();
            let eocd64 = [0x50, 0x4b, 0x06, 0x06];
            assert!(bytes.windows(4).rev().take(200).any(|w| w == eocd64));
        }
        let rt = aether_ingest::io_runtime();
        let found = find_logs(
            &[zip.display().to_string()],
            &IngestOptions::default(),
            &rt,
            true,
        );
        assert!(found.errors.is_empty(), "{:?}", found.errors);
        let mut shown: Vec<String> = found
            .logs
            .iter()
            .map(|l| {
                l.display
                    .strip_prefix(&format!("{}!/", zip.display()))
                    .unwrap()
                    .to_string()
            })
            .collect();
        shown.sort();
        // PROVENANCE.md and the macOS resource fork are not logs; the rolling folder is one log
        assert_eq!(
            shown,
            common::SAMPLE_LOGS,
            "{method} zip64={zip64} pad={pad}"
        );
        let lz4 = found
            .logs
            .iter()
            .find(|l| l.display.ends_with(".lz4"))
            .unwrap();
        assert_eq!(found.heads[&lz4.display].codec, "lz4");
        assert_eq!(
            apps(&[zip.display().to_string()]),
            direct,
            "{method} zip64={zip64} pad={pad}"
        );
    }
}

#[test]
fn archives_in_nested_folders_and_file_urls() {
    let tmp = tempfile::tempdir().unwrap();
    let deep = tmp.path().join("2026/12/01");
    std::fs::create_dir_all(&deep).unwrap();
    zip_with_python(&sample(), &deep.join("day.zip"), "deflated", false);
    let rt = aether_ingest::io_runtime();
    let url = format!("file://{}", tmp.path().display());
    let found = find_logs(&[url], &IngestOptions::default(), &rt, false);
    assert!(found.errors.is_empty(), "{:?}", found.errors);
    assert_eq!(found.logs.len(), 7);
    // no recursion: the archive is two folders down, nothing is found, and that is said
    let opts = IngestOptions {
        select: aether_ingest::Selection {
            no_recursion: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let found = find_logs(&[tmp.path().display().to_string()], &opts, &rt, false);
    assert!(found.logs.is_empty());
    assert_eq!(found.errors.len(), 1);
    assert_eq!(found.errors[0].error, "directory holds no event logs");
}

#[test]
fn bad_archives_and_unreadable_schemes_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let zip = tmp.path().join("cut.zip");
    zip_with_python(&sample(), &zip, "deflated", false);
    // cut off: the central directory is gone
    let bytes = std::fs::read(&zip).unwrap();
    std::fs::write(&zip, &bytes[..bytes.len() / 2]).unwrap();
    let not_zip = tmp.path().join("notes.zip");
    std::fs::write(&not_zip, b"not an archive").unwrap();
    let rt = aether_ingest::io_runtime();
    let inputs = [
        zip.display().to_string(),
        not_zip.display().to_string(),
        "hdfs://namenode:8020/spark-logs".to_string(),
        "gs://bucket/logs/".to_string(),
        sample().join("local-1796009671201").display().to_string(),
    ];
    let found = find_logs(&inputs, &IngestOptions::default(), &rt, false);
    assert_eq!(found.logs.len(), 1, "the readable input still counts");
    let errors: Vec<(String, String)> = found
        .errors
        .iter()
        .map(|e| (e.path.clone(), e.error.clone()))
        .collect();
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert_eq!(errors[0].0, zip.display().to_string());
    assert_eq!(
        errors[0].1,
        "cannot read the zip archive: no end-of-central-directory record: not a zip archive"
    );
    assert_eq!(errors[1].0, not_zip.display().to_string());
    assert!(
        errors[2].1.starts_with("hdfs:// cannot be read here"),
        "{errors:?}"
    );
    assert!(
        errors[3].1.starts_with("gs:// cannot be read here"),
        "{errors:?}"
    );
}
