//! Warehouse compaction: the per-log staging files (`<table>/<log key>.parquet`, one per log
//! and table, as `ingest` writes them) rewritten into Hive-style partitions any engine reads
//! well — `tables/<table>/app_date=YYYY-MM-DD/part-<run>-<n>.parquet`, files of about the
//! target size, each run's rows sorted by app id, zstd, with a `log_key` column (the partition
//! is `app_date`, the UTC day the app started; `__HIVE_DEFAULT_PARTITION__` for a log with no
//! app).
//!
//! A run commits by writing a new manifest, `tables/_manifests/<seq>.json`: the live part files
//! and every log absorbed (key and stamp). Readers (and [`super::Warehouse::register`]) use the
//! latest manifest only, so part files of a run that crashed before its commit are never read
//! (the next run deletes them), and a staging file absorbed by a committed run is ignored until
//! the next run deletes it (a crash between the commit and the deletes). Staging files are
//! deleted only after the commit. A log re-ingested after its compaction (a changed file) is read
//! from staging and its old rows are dropped from their parts by the next run.

use super::{EngineError, LogMarker, Result, Warehouse, parquet_props};
use datafusion::arrow::array::{Array, ArrayRef, Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The Hive partition of a log with no application.
pub const NO_DATE: &str = "__HIVE_DEFAULT_PARTITION__";

/// A committed compaction: the live parts and what they absorbed.
#[derive(serde::Serialize, serde::Deserialize, Debug, Default, Clone)]
pub struct Manifest {
    pub seq: u64,
    /// The run that wrote it (names its part files).
    pub run: String,
    pub created_ms: i64,
    /// Live part files (relative to the warehouse), per table.
    pub parts: BTreeMap<String, Vec<Part>>,
    /// Log key -> the stamp (size and mtime/ETag) of the log when it was absorbed.
    pub absorbed: BTreeMap<String, String>,
}

/// One part file.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct Part {
    pub path: String,
    pub app_date: String,
    pub rows: u64,
    pub bytes: u64,
    /// The logs whose rows it holds.
    pub keys: Vec<String>,
}

/// What a compaction did.
#[derive(Debug, Default)]
pub struct CompactReport {
    pub seq: u64,
    pub logs_absorbed: usize,
    pub parts_written: usize,
    pub parts_rewritten: usize,
    pub staging_deleted: usize,
    pub orphans_deleted: usize,
    pub rows: u64,
    pub bytes: u64,
}

impl CompactReport {
    /// One line for the user: what was absorbed, written and deleted, and how long it took.
    pub fn summary(&self, secs: f64) -> String {
        format!(
            "compacted {} log(s) into {} part(s) ({} rewritten; {} rows, {:.1} MB), manifest {}; \
             deleted {} staging file(s), {} orphan part(s); {secs:.2} s",
            self.logs_absorbed,
            self.parts_written,
            self.parts_rewritten,
            self.rows,
            self.bytes as f64 / 1e6,
            self.seq,
            self.staging_deleted,
            self.orphans_deleted
        )
    }
}

fn other(e: impl std::fmt::Display) -> EngineError {
    EngineError::Other(e.to_string())
}

/// The schema of a compacted table: the staging schema and `log_key`.
fn with_key(schema: &SchemaRef) -> SchemaRef {
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("log_key", DataType::Utf8, false));
    Arc::new(Schema::new(fields))
}

/// The UTC day of epoch milliseconds, `YYYY-MM-DD`.
pub fn utc_date(ms: i64) -> String {
    aether_ingest::utc::date(ms)
}

/// A part being written: rows appended until it reaches the target size.
struct PartWriter {
    writer: ArrowWriter<Vec<u8>>,
    rows: u64,
    keys: Vec<String>,
}

impl Warehouse {
    async fn get_bytes(&self, rel: &str) -> Result<Option<bytes::Bytes>> {
        match self.store.get(&self.path(rel)).await {
            Ok(r) => Ok(Some(r.bytes().await?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub(crate) async fn list_rel(&self, rel: &str) -> Result<Vec<String>> {
        use futures::TryStreamExt;
        let base = self.path(rel);
        let strip = if self.prefix.as_ref().is_empty() {
            String::new()
        } else {
            format!("{}/", self.prefix)
        };
        match self.store.list(Some(&base)).try_collect::<Vec<_>>().await {
            Ok(l) => Ok(l
                .into_iter()
                .map(|m| {
                    m.location
                        .as_ref()
                        .strip_prefix(&strip)
                        .unwrap_or(m.location.as_ref())
                        .to_string()
                })
                .collect()),
            Err(object_store::Error::NotFound { .. }) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    async fn delete_rel(&self, rel: &str) -> Result<()> {
        match self.store.delete(&self.path(rel)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The latest committed compaction, if any.
    pub async fn manifest(&self) -> Result<Option<Manifest>> {
        let mut names: Vec<String> = self
            .list_rel("tables/_manifests")
            .await?
            .into_iter()
            .filter(|n| n.ends_with(".json"))
            .collect();
        names.sort();
        let Some(last) = names.last() else {
            return Ok(None);
        };
        let bytes = self
            .get_bytes(last)
            .await?
            .ok_or_else(|| other(format!("{last}: vanished")))?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| other(format!("{last}: not a compaction manifest: {e}")))
    }

    /// The files a table reads after a compaction: the manifest's parts, and the staging files
    /// of logs it has not absorbed (at their current stamp).
    /// `markers` are read on the first staging file found (a fully compacted warehouse has
    /// none, and reading every log's marker would cost a request per log).
    pub(crate) async fn table_files(
        &self,
        table: &str,
        m: &Manifest,
        markers: &mut Option<HashMap<String, LogMarker>>,
    ) -> Result<Vec<String>> {
        let mut files: Vec<String> = m
            .parts
            .get(table)
            .map(|p| p.iter().map(|p| p.path.clone()).collect())
            .unwrap_or_default();
        for f in self.list_rel(table).await? {
            let Some(key) = f
                .strip_prefix(&format!("{table}/"))
                .and_then(|n| n.strip_suffix(".parquet"))
            else {
                continue;
            };
            if markers.is_none() {
                *markers = Some(self.markers_by_key().await?);
            }
            let absorbed = markers
                .as_ref()
                .and_then(|mk| mk.get(key))
                .zip(m.absorbed.get(key))
                .is_some_and(|(mk, stamp)| &mk.stamp == stamp);
            if !absorbed {
                files.push(f);
            }
        }
        Ok(files)
    }

    /// The markers of the ingested logs, by key.
    async fn markers_by_key(&self) -> Result<HashMap<String, LogMarker>> {
        Ok(self
            .markers()
            .await?
            .into_values()
            .map(|m| (m.key.clone(), m))
            .collect())
    }

    async fn read_parquet(&self, rel: &str) -> Result<Vec<RecordBatch>> {
        let bytes = self
            .get_bytes(rel)
            .await?
            .ok_or_else(|| other(format!("{rel}: no such file")))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .map_err(|e| other(format!("{rel}: {e}")))?
            .build()
            .map_err(|e| other(format!("{rel}: {e}")))?;
        reader
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| other(format!("{rel}: {e}")))
    }

    /// Compact the staging files into partitioned parts of about `target_bytes` each.
    pub async fn compact(&self, target_bytes: u64) -> Result<CompactReport> {
        let prev = self.manifest().await?.unwrap_or_default();
        let markers = self.markers_by_key().await?;
        let mut report = CompactReport::default();
        // 1. what a crashed run left: parts no manifest lists, staging files already absorbed
        let live: std::collections::HashSet<String> = prev
            .parts
            .values()
            .flatten()
            .map(|p| p.path.clone())
            .collect();
        for f in self.list_rel("tables").await? {
            if f.ends_with(".parquet") && !live.contains(&f) {
                self.delete_rel(&f).await?;
                report.orphans_deleted += 1;
            }
        }
        let mut tables: Vec<(String, SchemaRef)> = aether_ingest::tables::all_schemas()
            .into_iter()
            .map(|(n, s)| (n.to_string(), s))
            .collect();
        // the derived tables: their schema from a staging file, else from a part
        for name in self.derived_tables(Some(&prev)).await? {
            let dir = format!("{}/{name}", super::DERIVED_DIR);
            let first = match self.list_rel(&dir).await?.into_iter().next() {
                Some(f) => Some(f),
                None => prev
                    .parts
                    .get(&dir)
                    .and_then(|p| p.first())
                    .map(|p| p.path.clone()),
            };
            if let Some(f) = first {
                tables.push((dir, self.derived_schema(&f).await?));
            }
        }
        let absorbed_now = |key: &str| {
            markers
                .get(key)
                .zip(prev.absorbed.get(key))
                .is_some_and(|(mk, s)| &mk.stamp == s)
        };
        let mut staged: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let tables = &tables;
        for (t, _) in tables.iter() {
            for f in self.list_rel(t).await? {
                let Some(key) = f
                    .strip_prefix(&format!("{t}/"))
                    .and_then(|n| n.strip_suffix(".parquet"))
                else {
                    continue;
                };
                if absorbed_now(key) {
                    self.delete_rel(&f).await?;
                    report.staging_deleted += 1;
                } else if markers.contains_key(key) {
                    staged.entry(t.as_str()).or_default().push(key.to_string());
                }
            }
        }
        // 2. the logs to absorb: their app's id and day
        let mut todo: BTreeMap<String, (String, String)> = BTreeMap::new(); // key -> (date, app)
        for keys in staged.values() {
            for k in keys {
                if todo.contains_key(k) {
                    continue;
                }
                let m = &markers[k];
                let date = match self
                    .read_parquet(&format!("applications/{k}.parquet"))
                    .await
                {
                    Ok(b) => b
                        .iter()
                        .find_map(|b| {
                            let c = b.column_by_name("start_ms")?;
                            let c = c.as_any().downcast_ref::<Int64Array>()?;
                            (!c.is_empty() && c.is_valid(0)).then(|| utc_date(c.value(0)))
                        })
                        .unwrap_or_else(|| NO_DATE.into()),
                    Err(_) => NO_DATE.into(),
                };
                todo.insert(k.clone(), (date, m.app_id.clone().unwrap_or_default()));
            }
        }
        let superseded: std::collections::HashSet<&String> = todo
            .keys()
            .filter(|k| prev.absorbed.contains_key(*k))
            .collect();
        if todo.is_empty() {
            report.seq = prev.seq;
            return Ok(report);
        }
        let run = format!("{:x}", super::now_ms());
        let mut next = Manifest {
            seq: prev.seq + 1,
            run: run.clone(),
            created_ms: super::now_ms(),
            parts: BTreeMap::new(),
            absorbed: prev.absorbed.clone(),
        };
        let mut dropped_parts = Vec::new();
        let mut seqno = 0usize;
        for (t, schema) in tables {
            let t = t.as_str();
            let out_schema = with_key(schema);
            let mut parts: Vec<Part> = Vec::new();
            // 3. old parts holding a re-ingested log: rewritten without its old rows
            for p in prev.parts.get(t).cloned().unwrap_or_default() {
                if !p.keys.iter().any(|k| superseded.contains(k)) {
                    parts.push(p);
                    continue;
                }
                let batches = self.read_parquet(&p.path).await?;
                let keep: Vec<String> = p
                    .keys
                    .iter()
                    .filter(|k| !superseded.contains(k))
                    .cloned()
                    .collect();
                let mut w = self.new_part(&out_schema)?;
                for b in batches {
                    let keys = b
                        .column_by_name("log_key")
                        .and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned())
                        .ok_or_else(|| other(format!("{}: no log_key column", p.path)))?;
                    let mask: datafusion::arrow::array::BooleanArray = keys
                        .iter()
                        .map(|k| Some(k.is_some_and(|k| !superseded.contains(&k.to_string()))))
                        .collect();
                    let b = datafusion::arrow::compute::filter_record_batch(&b, &mask)
                        .map_err(other)?;
                    if b.num_rows() > 0 {
                        w.rows += b.num_rows() as u64;
                        w.writer.write(&b).map_err(other)?;
                    }
                }
                w.keys = keep;
                dropped_parts.push(p.path.clone());
                report.parts_rewritten += 1;
                if w.rows > 0 {
                    seqno += 1;
                    parts.push(self.finish_part(t, &p.app_date, &run, seqno, w).await?);
                }
            }
            // 4. the staging files, by day, in app-id order, into parts of the target size
            let mut by_date: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
            for k in staged.get(t).map(|v| v.as_slice()).unwrap_or_default() {
                let (date, app) = &todo[k];
                by_date.entry(date).or_default().push((app, k));
            }
            for (date, mut logs) in by_date {
                logs.sort();
                let mut cur: Option<PartWriter> = None;
                for (_, key) in logs {
                    let w = match cur.as_mut() {
                        Some(w) => w,
                        None => cur.insert(self.new_part(&out_schema)?),
                    };
                    let file = format!("{t}/{key}.parquet");
                    for b in self.read_parquet(&file).await? {
                        let b = add_key(&b, key, &out_schema)
                            .map_err(|e| other(format!("{file}: {e}")))?;
                        w.rows += b.num_rows() as u64;
                        w.writer.write(&b).map_err(other)?;
                    }
                    w.keys.push(key.to_string());
                    if w.writer.in_progress_size() as u64 + w.writer.bytes_written() as u64
                        >= target_bytes
                    {
                        seqno += 1;
                        let done = cur.take().expect("a part being written");
                        parts.push(self.finish_part(t, date, &run, seqno, done).await?);
                        report.parts_written += 1;
                    }
                }
                if let Some(w) = cur.take() {
                    seqno += 1;
                    parts.push(self.finish_part(t, date, &run, seqno, w).await?);
                    report.parts_written += 1;
                }
            }
            report.rows += parts.iter().map(|p| p.rows).sum::<u64>();
            report.bytes += parts.iter().map(|p| p.bytes).sum::<u64>();
            if !parts.is_empty() {
                next.parts.insert(t.to_string(), parts);
            }
        }
        for k in todo.keys() {
            next.absorbed.insert(k.clone(), markers[k].stamp.clone());
        }
        report.logs_absorbed = todo.len();
        // 5. the commit: the new manifest; then the staging files and replaced parts go
        let name = format!("tables/_manifests/{:010}.json", next.seq);
        self.put(&name, serde_json::to_vec_pretty(&next).map_err(other)?)
            .await?;
        for (t, keys) in &staged {
            for k in keys {
                self.delete_rel(&format!("{t}/{k}.parquet")).await?;
                report.staging_deleted += 1;
            }
        }
        for p in dropped_parts {
            self.delete_rel(&p).await?;
        }
        report.seq = next.seq;
        Ok(report)
    }

    fn new_part(&self, schema: &SchemaRef) -> Result<PartWriter> {
        Ok(PartWriter {
            writer: ArrowWriter::try_new(Vec::new(), schema.clone(), Some(parquet_props()?))
                .map_err(other)?,
            rows: 0,
            keys: Vec::new(),
        })
    }

    async fn finish_part(
        &self,
        table: &str,
        date: &str,
        run: &str,
        n: usize,
        w: PartWriter,
    ) -> Result<Part> {
        let buf = w.writer.into_inner().map_err(other)?;
        let path = format!("tables/{table}/app_date={date}/part-{run}-{n:05}.parquet");
        let bytes = buf.len() as u64;
        self.store
            .put(&self.path(&path), PutPayload::from(buf))
            .await?;
        Ok(Part {
            path,
            app_date: date.to_string(),
            rows: w.rows,
            bytes,
            keys: w.keys,
        })
    }
}

/// A staging batch with its log's key as the last column.
fn add_key(b: &RecordBatch, key: &str, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut cols: Vec<ArrayRef> = b.columns().to_vec();
    cols.push(Arc::new(StringArray::from(vec![key; b.num_rows()])));
    RecordBatch::try_new(schema.clone(), cols).map_err(other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_of_epoch_milliseconds() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(86_399_999), "1970-01-01");
        assert_eq!(utc_date(951_782_400_000), "2000-02-29");
        // (as Python's datetime.fromtimestamp(…, timezone.utc) gives)
        assert_eq!(utc_date(1_796_009_671_201), "2026-11-30");
        assert_eq!(utc_date(-1), "1969-12-31");
        assert_eq!(utc_date(4_102_444_800_000), "2100-01-01");
    }
}
