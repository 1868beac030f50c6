//! Finding event logs: files, directories (recursively), globs, `.txt` lists of paths and
//! `s3://bucket/prefix` URLs, grouped into logs (a single file, a rolling `eventlog_v2_*`
//! directory, or a Databricks rolled `eventlog` directory).

use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the bytes of one file of a log come from.
#[derive(Clone, Debug)]
pub enum Location {
    /// A local file.
    Local(PathBuf),
    /// A file in a local `.zip` archive.
    ZipMember {
        archive: PathBuf,
        member: crate::zip::Member,
    },
    /// An object in an object store (S3 or compatible).
    Object {
        /// The store (one per bucket).
        store: Arc<dyn ObjectStore>,
        /// `s3://bucket` prefix for display.
        base: String,
        /// Key within the bucket.
        path: ObjPath,
    },
}

impl Location {
    /// The path or URL shown to users.
    pub fn display(&self) -> String {
        match self {
            Location::Local(p) => p.display().to_string(),
            Location::ZipMember { archive, member } => {
                format!("{}!/{}", archive.display(), member.name)
            }
            Location::Object { base, path, .. } => format!("{base}/{path}"),
        }
    }

    /// The last component of the path.
    pub fn file_name(&self) -> String {
        match self {
            Location::Local(p) => p
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            Location::ZipMember { member, .. } => member
                .name
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string(),
            Location::Object { path, .. } => path.filename().unwrap_or_default().to_string(),
        }
    }
}

/// One file of a log with its size and modification stamp (mtime or ETag).
#[derive(Clone, Debug)]
pub struct Part {
    /// Where it is.
    pub location: Location,
    /// Size in bytes (compressed, as stored).
    pub size: u64,
    /// Modification time (ms) or ETag, to detect changed logs.
    pub stamp: String,
    /// Modification time, ms since the epoch (the file's mtime, the object's LastModified).
    pub modified_ms: Option<i64>,
}

/// The layout of a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One file.
    Single,
    /// A rolling `eventlog_v2_<appId>[_<attempt>]` directory.
    Rolling,
    /// A Databricks `eventlog` directory with dated rolled-over files.
    Databricks,
}

/// One application attempt's event log: one or more parts, read in order.
#[derive(Clone, Debug)]
pub struct LogSource {
    /// Path or URL shown in errors and stored in `applications.event_log`.
    pub display: String,
    /// Layout.
    pub layout: Layout,
    /// Parts in reading order.
    pub parts: Vec<Part>,
    /// Whether the log is still being written (`.inprogress` name or marker).
    pub in_progress: bool,
}

impl LogSource {
    /// Total stored size of the parts.
    pub fn size(&self) -> u64 {
        self.parts.iter().map(|p| p.size).sum()
    }

    /// The log's file time: the latest of its parts' (a rolling log's newest file).
    pub fn modified_ms(&self) -> Option<i64> {
        self.parts.iter().filter_map(|p| p.modified_ms).max()
    }

    /// The last component of its path: the file's name, or a rolling or Databricks log's
    /// directory's.
    pub fn file_name(&self) -> &str {
        let d = self.display.trim_end_matches('/');
        d.rsplit('/').next().unwrap_or(d)
    }

    /// A stamp covering every part (size and mtime/ETag), to detect changed logs.
    pub fn stamp(&self) -> String {
        self.parts
            .iter()
            .map(|p| format!("{}:{}", p.size, p.stamp))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The application id implied by the name, used when the log has no ApplicationStart.
    pub fn app_id_from_name(&self) -> String {
        let name = self
            .display
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(&self.display);
        let name = name.strip_prefix("eventlog_v2_").unwrap_or(name);
        let name = name.strip_suffix(".inprogress").unwrap_or(name);
        match name.rsplit_once('.') {
            Some((stem, ext))
                if crate::codec::Codec::from_file_name(&format!("x.{ext}")).is_some() =>
            {
                stem.to_string()
            }
            _ => name.to_string(),
        }
    }
}

/// A problem found while looking for logs (a missing path, an unreadable directory …).
#[derive(Debug, Clone)]
pub struct SourceError {
    /// The path or URL.
    pub path: String,
    /// What went wrong.
    pub error: String,
}

/// Options for S3-compatible stores.
#[derive(Clone, Debug, Default)]
pub struct S3Options {
    /// Region (else from the environment / AWS config).
    pub region: Option<String>,
    /// Custom endpoint, e.g. `http://127.0.0.1:5000` for a local S3-compatible server.
    pub endpoint: Option<String>,
}

/// Build an S3 store for `bucket` from the AWS environment plus `opts`.
pub fn s3_store(bucket: &str, opts: &S3Options) -> Result<Arc<dyn ObjectStore>, String> {
    let mut b = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket);
    if let Some(r) = &opts.region {
        b = b.with_region(r);
    }
    if let Some(e) = opts
        .endpoint
        .clone()
        .or_else(|| std::env::var("AWS_ENDPOINT_URL_S3").ok())
        .or_else(|| std::env::var("AWS_ENDPOINT_URL").ok())
    {
        if e.starts_with("http://") {
            b = b.with_allow_http(true);
        }
        b = b.with_endpoint(e).with_virtual_hosted_style_request(false);
    }
    Ok(Arc::new(b.build().map_err(|e| e.to_string())?))
}

/// An S3 location, `s3://bucket/prefix` (or `s3a://`).
pub struct S3Location {
    pub store: Arc<dyn ObjectStore>,
    pub bucket: String,
    /// The key prefix, without a trailing `/` (empty for the whole bucket).
    pub prefix: String,
}

/// The store of an `s3://bucket/prefix` URL and the prefix within it.
pub fn s3_location(url: &str, opts: &S3Options) -> Result<S3Location, String> {
    let rest = url
        .strip_prefix("s3://")
        .or_else(|| url.strip_prefix("s3a://"))
        .ok_or_else(|| "not an s3:// URL".to_string())?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err("no bucket in the URL".into());
    }
    Ok(S3Location {
        store: s3_store(bucket, opts)?,
        bucket: bucket.to_string(),
        prefix: prefix.trim_end_matches('/').to_string(),
    })
}

/// The scheme of a URL this build cannot read (HDFS, Google Cloud Storage, Azure, DBFS), if
/// `input` is one.
fn unreadable_scheme(input: &str) -> Option<&str> {
    let (scheme, _) = input.split_once("://").or_else(|| input.split_once(":/"))?;
    let known = [
        "hdfs", "viewfs", "webhdfs", "gs", "abfs", "abfss", "wasb", "wasbs", "adl", "dbfs", "s3n",
        "oss", "cos",
    ];
    known
        .contains(&scheme.to_ascii_lowercase().as_str())
        .then_some(scheme)
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

fn modified_ms(meta: &std::fs::Metadata) -> Option<i64> {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
}

/// Whether `name` is a Databricks rolled-over file: `eventlog-YYYY-MM-DD--HH-MM[.gz]`.
fn is_databricks_rolled(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("eventlog-") else {
        return false;
    };
    let rest = rest.strip_suffix(".gz").unwrap_or(rest);
    let b = rest.as_bytes();
    // YYYY-MM-DD--HH-MM
    b.len() == 17
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 | 10 | 11 | 14 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

/// Number `n` of a rolling part `events_<n>_<appId>…`.
fn rolling_index(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("events_")?;
    let (n, _) = rest.split_once('_')?;
    n.parse().ok()
}

/// Files ignored when scanning directories: hidden files, Hadoop checksums and markers, and
/// documents that are never event logs (`.md`, `.json`, `.csv`, …). Named explicitly, any file is
/// read (and reported if it is not an event log).
fn ignored_file(name: &str) -> bool {
    const NOT_LOGS: &[&str] = &[
        ".crc", ".md", ".json", ".csv", ".txt", ".py", ".sh", ".parquet", ".html", ".yaml", ".yml",
        ".conf",
    ];
    name.starts_with('.')
        || name.starts_with('_')
        || name.starts_with("appstatus_")
        || NOT_LOGS
            .iter()
            .any(|ext| name.to_ascii_lowercase().ends_with(ext))
}

/// Group the parts of a rolling directory (`entries`: file name → part).
fn rolling_log(display: String, entries: Vec<(String, Part)>) -> Result<LogSource, String> {
    let mut in_progress = false;
    let mut parts: Vec<(u64, Part)> = Vec::new();
    for (name, part) in entries {
        if name.starts_with("appstatus_") {
            in_progress |= name.ends_with(".inprogress");
            continue;
        }
        if let Some(n) = rolling_index(&name) {
            parts.push((n, part));
        }
    }
    if parts.is_empty() {
        return Err("rolling event-log directory holds no events_<n>_… files".to_string());
    }
    parts.sort_by_key(|(n, _)| *n);
    Ok(LogSource {
        display,
        layout: Layout::Rolling,
        parts: parts.into_iter().map(|(_, p)| p).collect(),
        in_progress,
    })
}

/// Group a Databricks directory: dated files in time order, then the current `eventlog`.
fn databricks_log(display: String, entries: Vec<(String, Part)>) -> LogSource {
    let mut rolled: Vec<(String, Part)> = Vec::new();
    let mut current = None;
    for (name, part) in entries {
        if name == "eventlog" {
            current = Some(part);
        } else if is_databricks_rolled(&name) {
            rolled.push((name, part));
        }
    }
    rolled.sort_by(|a, b| a.0.cmp(&b.0));
    let mut parts: Vec<Part> = rolled.into_iter().map(|(_, p)| p).collect();
    parts.extend(current);
    LogSource {
        display,
        layout: Layout::Databricks,
        parts,
        in_progress: false,
    }
}

/// What a directory's file names say it is.
fn dir_layout(dir_name: &str, names: &[&str]) -> Option<Layout> {
    if dir_name.starts_with("eventlog_v2_") && names.iter().any(|n| rolling_index(n).is_some()) {
        return Some(Layout::Rolling);
    }
    let files: Vec<&&str> = names.iter().filter(|n| !ignored_file(n)).collect();
    if files.iter().any(|n| **n == "eventlog")
        && files
            .iter()
            .all(|n| **n == "eventlog" || is_databricks_rolled(n))
    {
        return Some(Layout::Databricks);
    }
    None
}

/// Expand user inputs into logs. Problems with one input are returned, the rest go on.
pub fn discover(
    inputs: &[String],
    s3: &S3Options,
    recursive: bool,
    rt: &tokio::runtime::Runtime,
) -> (Vec<LogSource>, Vec<SourceError>) {
    let mut logs = Vec::new();
    let mut errors = Vec::new();
    for input in inputs {
        // file:///path is the local path
        let input = &match input.strip_prefix("file://") {
            Some(rest) => rest.to_string(),
            None => input.clone(),
        };
        if let Some(scheme) = unreadable_scheme(input) {
            errors.push(SourceError {
                path: input.clone(),
                error: format!(
                    "{scheme}:// cannot be read here: aether reads local paths, file:// and \
                     s3:// (copy the logs to S3 or a local folder, e.g. hadoop distcp or \
                     hdfs dfs -get)"
                ),
            });
            continue;
        }
        if input.starts_with("s3://") || input.starts_with("s3a://") {
            match rt.block_on(discover_s3(input, s3, recursive)) {
                Ok((found, zips)) if found.is_empty() && zips.is_empty() => {
                    errors.push(SourceError {
                        path: input.clone(),
                        error: "no objects under this prefix".into(),
                    })
                }
                Ok((found, zips)) => {
                    logs.extend(found);
                    errors.extend(zips);
                }
                Err(e) => errors.push(SourceError {
                    path: input.clone(),
                    error: e,
                }),
            }
            continue;
        }
        if is_glob(input) {
            match glob::glob(input) {
                Ok(paths) => {
                    let mut any = false;
                    for p in paths {
                        match p {
                            Ok(p) => {
                                any = true;
                                discover_local(&p, true, recursive, &mut logs, &mut errors);
                            }
                            Err(e) => errors.push(SourceError {
                                path: e.path().display().to_string(),
                                error: e.error().to_string(),
                            }),
                        }
                    }
                    if !any {
                        errors.push(SourceError {
                            path: input.clone(),
                            error: "the pattern matches no file".into(),
                        });
                    }
                }
                Err(e) => errors.push(SourceError {
                    path: input.clone(),
                    error: format!("bad glob pattern: {e}"),
                }),
            }
            continue;
        }
        discover_local(Path::new(input), true, recursive, &mut logs, &mut errors);
    }
    // the same log named twice (e.g. a file and its directory) is read once
    let mut seen = std::collections::HashSet::new();
    logs.retain(|l| seen.insert(l.display.clone()));
    (logs, errors)
}

fn local_part(path: &Path, meta: &std::fs::Metadata) -> Part {
    let modified_ms = modified_ms(meta);
    Part {
        location: Location::Local(path.to_path_buf()),
        size: meta.len(),
        stamp: modified_ms.map(|t| t.to_string()).unwrap_or_default(),
        modified_ms,
    }
}

/// The text of a `.txt` file that is a list of paths (not an event log).
fn path_list(path: &Path) -> Option<String> {
    if path.extension().is_none_or(|e| e != "txt") {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    (!first.starts_with('{')).then_some(text)
}

/// `explicit`: named by the user (not found in a directory); `recursive`: plain subdirectories
/// are searched too (a subdirectory that is itself a log, rolling or Databricks, always counts).
fn discover_local(
    path: &Path,
    explicit: bool,
    recursive: bool,
    logs: &mut Vec<LogSource>,
    errors: &mut Vec<SourceError>,
) {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            errors.push(SourceError {
                path: path.display().to_string(),
                error: match e.kind() {
                    std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
                    std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                    _ => e.to_string(),
                },
            });
            return;
        }
    };
    if meta.is_file() {
        let name = path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(text) = explicit.then(|| path_list(path)).flatten() {
            let base = path.parent().unwrap_or(Path::new("."));
            for line in text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
            {
                if line.starts_with("s3://") || line.starts_with("s3a://") || is_glob(line) {
                    errors.push(SourceError {
                        path: format!("{} ({line})", path.display()),
                        error: "list files may hold local paths only; pass s3:// URLs and globs directly".into(),
                    });
                    continue;
                }
                let p = Path::new(line);
                let p = if p.is_absolute() {
                    p.to_path_buf()
                } else {
                    base.join(p)
                };
                discover_local(&p, false, recursive, logs, errors);
            }
            return;
        }
        if !explicit && ignored_file(&name) {
            return;
        }
        if crate::zip::is_zip(&name) {
            zip_logs(path, &meta, recursive, logs, errors);
            return;
        }
        let in_progress = name.ends_with(".inprogress");
        logs.push(LogSource {
            display: path.display().to_string(),
            layout: Layout::Single,
            parts: vec![local_part(path, &meta)],
            in_progress,
        });
        return;
    }
    if !meta.is_dir() {
        errors.push(SourceError {
            path: path.display().to_string(),
            error: "not a file or directory".into(),
        });
        return;
    }
    let rd = match std::fs::read_dir(path) {
        Ok(rd) => rd,
        Err(e) => {
            errors.push(SourceError {
                path: path.display().to_string(),
                error: format!("cannot list directory: {e}"),
            });
            return;
        }
    };
    let mut entries: Vec<(String, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    entries.sort();
    let dir_name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    match dir_layout(&dir_name, &names) {
        Some(layout) => {
            let mut parts = Vec::new();
            for (name, p) in &entries {
                match std::fs::metadata(p) {
                    Ok(m) if m.is_file() => parts.push((name.clone(), local_part(p, &m))),
                    Ok(_) => {}
                    Err(e) => errors.push(SourceError {
                        path: p.display().to_string(),
                        error: e.to_string(),
                    }),
                }
            }
            let display = path.display().to_string();
            let log = if layout == Layout::Rolling {
                rolling_log(display.clone(), parts)
            } else {
                Ok(databricks_log(display.clone(), parts))
            };
            match log {
                Ok(l) => logs.push(l),
                Err(e) => errors.push(SourceError {
                    path: display,
                    error: e,
                }),
            }
        }
        None if !explicit && !recursive => {}
        None => {
            let before = logs.len();
            for (_, p) in &entries {
                discover_local(p, false, recursive, logs, errors);
            }
            if explicit && logs.len() == before {
                errors.push(SourceError {
                    path: path.display().to_string(),
                    error: "directory holds no event logs".into(),
                });
            }
        }
    }
}

/// The logs in a `.zip` archive: its members grouped as a folder's files are (rolling and
/// Databricks logs in their folders, else one log per file), each shown as `ARCHIVE!/MEMBER`;
/// their file time is the archive's. `recursive` false: only the members at its top level.
fn zip_logs(
    path: &Path,
    meta: &std::fs::Metadata,
    recursive: bool,
    logs: &mut Vec<LogSource>,
    errors: &mut Vec<SourceError>,
) {
    let fail = |errors: &mut Vec<SourceError>, e: String| {
        errors.push(SourceError {
            path: path.display().to_string(),
            error: e,
        })
    };
    let members = match crate::zip::members(path) {
        Ok(m) => m,
        Err(e) => return fail(errors, format!("cannot read the zip archive: {e}")),
    };
    let modified_ms = modified_ms(meta);
    let listing: Vec<(String, Part)> = members
        .into_iter()
        .map(|m| {
            let part = Part {
                size: m.compressed,
                stamp: format!("{}:{}", m.offset, modified_ms.unwrap_or_default()),
                modified_ms,
                location: Location::ZipMember {
                    archive: path.to_path_buf(),
                    member: m.clone(),
                },
            };
            (m.name, part)
        })
        .collect();
    let base = format!("{}!", path.display());
    match listing_logs(&base, listing, (!recursive).then_some("")) {
        Ok(found) if found.is_empty() => fail(errors, "the zip archive holds no event logs".into()),
        Ok(found) => logs.extend(found),
        Err(e) => fail(errors, e),
    }
}

/// Why a `.zip` kept in S3 is not read.
const ZIP_IN_S3: &str = "a .zip archive in S3 is not opened (archives are read from local \
     paths): copy it here (aws s3 cp) and give the local file, or keep the logs unzipped in S3";

/// The logs under an `s3://` URL, and the `.zip` objects there, each a named problem.
async fn discover_s3(
    url: &str,
    opts: &S3Options,
    recursive: bool,
) -> Result<(Vec<LogSource>, Vec<SourceError>), String> {
    use futures::TryStreamExt;
    let S3Location {
        store,
        bucket,
        prefix,
    } = s3_location(url, opts)?;
    let base = format!("s3://{bucket}");
    let prefix = prefix.as_str();
    let part = |m: &object_store::ObjectMeta| Part {
        location: Location::Object {
            store: store.clone(),
            base: base.clone(),
            path: m.location.clone(),
        },
        size: m.size,
        stamp: m
            .e_tag
            .clone()
            .unwrap_or_else(|| m.last_modified.timestamp_millis().to_string()),
        modified_ms: Some(m.last_modified.timestamp_millis()),
    };
    let zip = |key: &str| SourceError {
        path: format!("{base}/{key}"),
        error: ZIP_IN_S3.into(),
    };
    // an exact object?
    if !prefix.is_empty()
        && let Ok(m) = store.head(&ObjPath::from(prefix)).await
    {
        if crate::zip::is_zip(prefix) {
            return Ok((Vec::new(), vec![zip(prefix)]));
        }
        return Ok((
            vec![LogSource {
                display: format!("{base}/{prefix}"),
                layout: Layout::Single,
                parts: vec![part(&m)],
                in_progress: prefix.ends_with(".inprogress"),
            }],
            Vec::new(),
        ));
    }
    let list_prefix = if prefix.is_empty() {
        None
    } else {
        Some(ObjPath::from(prefix))
    };
    let objects: Vec<object_store::ObjectMeta> = store
        .list(list_prefix.as_ref())
        .try_collect()
        .await
        .map_err(|e| e.to_string())?;
    let (zips, objects): (Vec<_>, Vec<_>) = objects
        .iter()
        .partition(|m| crate::zip::is_zip(m.location.as_ref()));
    let listing = objects
        .into_iter()
        .map(|m| (m.location.as_ref().to_string(), part(m)))
        .collect();
    let top = (!recursive).then(|| prefix.trim_end_matches('/'));
    let zips = zips
        .iter()
        .map(|m| m.location.as_ref())
        .filter(|k| top.is_none_or(|t| k.rsplit_once('/').map_or("", |(d, _)| d) == t))
        .map(zip)
        .collect();
    Ok((listing_logs(&base, listing, top)?, zips))
}

/// The logs of a flat listing of keys (an object store's, an archive's members): grouped by
/// their parent "directory" into rolling and Databricks logs, else one log per file. `top`
/// (no recursion): only the files directly in that folder, and the log folders directly in it.
fn listing_logs(
    base: &str,
    listing: Vec<(String, Part)>,
    top: Option<&str>,
) -> Result<Vec<LogSource>, String> {
    let mut by_dir: std::collections::BTreeMap<String, Vec<(String, Part)>> = Default::default();
    for (key, part) in listing {
        let (dir, name) = key.rsplit_once('/').unwrap_or(("", &key));
        by_dir
            .entry(dir.to_string())
            .or_default()
            .push((name.to_string(), part));
    }
    let parent = |dir: &str| dir.rsplit_once('/').map_or("", |(p, _)| p).to_string();
    let mut logs = Vec::new();
    for (dir, entries) in by_dir {
        let dir_name = dir.rsplit('/').next().unwrap_or(&dir);
        let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
        let display = format!("{base}/{dir}");
        let layout = dir_layout(dir_name, &names);
        if let Some(top) = top {
            let home = if layout.is_some() {
                parent(&dir)
            } else {
                dir.clone()
            };
            if home != top {
                continue;
            }
        }
        match layout {
            Some(Layout::Rolling) => logs.push(rolling_log(display, entries)?),
            Some(_) => logs.push(databricks_log(display, entries)),
            None => {
                for (name, p) in entries {
                    if ignored_file(&name) {
                        continue;
                    }
                    logs.push(LogSource {
                        display: p.location.display(),
                        layout: Layout::Single,
                        in_progress: name.ends_with(".inprogress"),
                        parts: vec![p],
                    });
                }
            }
        }
    }
    Ok(logs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn databricks_names() {
        assert!(is_databricks_rolled("eventlog-2021-06-15--15-00.gz"));
        assert!(is_databricks_rolled("eventlog-2021-06-15--15-00"));
        assert!(!is_databricks_rolled("eventlog-2021-06-15-15-00"));
        assert!(!is_databricks_rolled("eventlog_v2_local-1"));
        assert_eq!(
            dir_layout("x", &["eventlog", "eventlog-2021-06-15--15-00.gz"]),
            Some(Layout::Databricks)
        );
        // a directory with an eventlog file among other logs is not a Databricks dir
        assert_eq!(dir_layout("x", &["eventlog", "local-1234"]), None);
        assert_eq!(dir_layout("x", &["eventlog_foo"]), None);
        assert_eq!(
            dir_layout(
                "eventlog_v2_app-1",
                &["events_1_app-1.zstd", "appstatus_app-1"]
            ),
            Some(Layout::Rolling)
        );
    }

    #[test]
    fn rolling_order_is_numeric() {
        let p = |n: &str| {
            (
                n.to_string(),
                Part {
                    location: Location::Local(n.into()),
                    size: 1,
                    stamp: String::new(),
                    modified_ms: None,
                },
            )
        };
        let log = rolling_log(
            "d".into(),
            vec![
                p("events_10_a"),
                p("events_2_a"),
                p("events_1_a"),
                p("appstatus_a.inprogress"),
            ],
        )
        .unwrap();
        let names: Vec<String> = log.parts.iter().map(|p| p.location.file_name()).collect();
        assert_eq!(names, ["events_1_a", "events_2_a", "events_10_a"]);
        assert!(log.in_progress);
    }
}
