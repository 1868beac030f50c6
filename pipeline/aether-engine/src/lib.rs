//! aether-engine: one DataFusion session over the event-log tables, and the Parquet warehouse.
//!
//! Owns: registering the tables (in memory, from an ingest, or from a warehouse directory or
//! `s3://` prefix), running SQL and rendering results (table, CSV, JSON), and writing a
//! warehouse incrementally (one Parquet file per log and table, logs already present skipped).
//!
//! Also registers the UDFs of `aether-udfs` and the derived views of `sql/` ([`views`]).
//!
//! Does not own: reading event logs (`aether-ingest`).

use aether_ingest::tables::all_schemas;
use aether_ingest::{IngestOptions, Ingested, LogSource};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::SessionConfig;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::Arc;

pub mod analyze;
pub mod compact;
pub mod listing;
pub mod load;
pub mod plans;
mod sqltext;
pub mod views;
pub use datafusion::prelude::SessionContext;
pub use views::{AnalysisSettings, register_views};

/// Errors of the engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A DataFusion error (planning or execution).
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// A storage error.
    #[error("{0}")]
    Store(#[from] object_store::Error),
    /// Anything else, with context.
    #[error("{0}")]
    Other(String),
}

/// Result type of the engine.
pub type Result<T> = std::result::Result<T, EngineError>;

/// A new session configured for aether (information_schema on).
pub fn session() -> SessionContext {
    session_with_partitions(0)
}

/// A session whose plans use `partitions` partitions (0: one per core). For one small log per
/// session, one partition avoids repartitioning work that costs more than it saves, and the
/// parallelism comes from running several sessions at once.
pub fn session_with_partitions(partitions: usize) -> SessionContext {
    session_from_config(session_config(partitions))
}

/// The configuration of [`session_with_partitions`].
fn session_config(partitions: usize) -> SessionConfig {
    let mut cfg = SessionConfig::new()
        .with_information_schema(true)
        .with_default_catalog_and_schema("aether", "public");
    if partitions > 0 {
        cfg = cfg.with_target_partitions(partitions);
        cfg.options_mut().optimizer.max_passes = 1;
    }
    cfg
}

/// A session of `cfg`, with aether's UDFs.
fn session_from_config(cfg: SessionConfig) -> SessionContext {
    let ctx = SessionContext::new_with_config(cfg);
    aether_udfs::register(&ctx);
    ctx
}

/// Register every table of an ingest as in-memory tables (those it left out are not registered;
/// in a session of [`plans::session_with_cached_plans`], as its slots).
pub fn register_ingested(ctx: &SessionContext, ing: &Ingested) -> Result<()> {
    for (name, schema) in all_schemas() {
        if ing.left_out.contains(&name) {
            continue;
        }
        let batches = ing.tables.get(name).cloned().unwrap_or_default();
        register_batches(ctx, name, schema, batches)?;
    }
    Ok(())
}

fn register_batches(
    ctx: &SessionContext,
    name: &str,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<()> {
    let Some((schema, batches)) = plans::register_slot(ctx, name, schema, batches)? else {
        return Ok(());
    };
    let table = MemTable::try_new(schema, vec![batches])?;
    ctx.deregister_table(name)?;
    ctx.register_table(name, Arc::new(table))?;
    Ok(())
}

/// Run one SQL statement and collect the result.
/// (In a session of [`plans::session_with_cached_plans`], with a plan kept from an earlier run.)
pub async fn query(ctx: &SessionContext, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    plans::collect(ctx, sql).await
}

/// The rows of `batch` whose Utf8 column `column` equals `value`, in their order: one app's
/// rows of a view computed once for many apps, without planning a query per app.
pub fn rows_where(batch: &RecordBatch, column: &str, value: &str) -> Result<RecordBatch> {
    use datafusion::arrow::array::{Array, BooleanArray, StringArray};
    let ids = batch
        .column_by_name(column)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| EngineError::Other(format!("no Utf8 column {column} in the rows")))?;
    let mask: BooleanArray = (0..ids.len())
        .map(|i| Some(ids.is_valid(i) && ids.value(i) == value))
        .collect();
    datafusion::arrow::compute::filter_record_batch(batch, &mask)
        .map_err(|e| EngineError::Other(e.to_string()))
}

/// `batch` with every value of its column `column` set to `value` (cast to the column's type);
/// a batch without that column comes back as it is. Rows of one app under another key (two logs
/// of one app in one session) get their own app id back.
pub fn with_value(batch: &RecordBatch, column: &str, value: &str) -> Result<RecordBatch> {
    use datafusion::arrow::array::{ArrayRef, StringArray};
    let err = |e: datafusion::arrow::error::ArrowError| EngineError::Other(e.to_string());
    let schema = batch.schema();
    let Ok(i) = schema.index_of(column) else {
        return Ok(batch.clone());
    };
    let values: ArrayRef = Arc::new(StringArray::from(vec![value; batch.num_rows()]));
    let mut cols = batch.columns().to_vec();
    cols[i] =
        datafusion::arrow::compute::cast(&values, schema.field(i).data_type()).map_err(err)?;
    RecordBatch::try_new(schema, cols).map_err(err)
}

/// Run `sql` holding at most `keep` of its rows (all with `None`); the rest are counted as they
/// stream by, not held, so a glance at a huge result stays in bounded memory. Returns the
/// schema, the rows held and the number of rows in all.
pub async fn query_head(
    ctx: &SessionContext,
    sql: &str,
    keep: Option<usize>,
) -> Result<(SchemaRef, Vec<RecordBatch>, usize)> {
    use futures::StreamExt;
    let df = ctx.sql(sql).await?;
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let mut stream = df.execute_stream().await?;
    let (mut held, mut total, mut batches) = (0usize, 0usize, Vec::new());
    while let Some(b) = stream.next().await {
        let b = b?;
        total += b.num_rows();
        let room = keep.map_or(usize::MAX, |k| k - held);
        if room > 0 && b.num_rows() > 0 {
            let take = room.min(b.num_rows());
            // a copy of the rows kept, so the rest of the batch is freed
            let kept = if take < b.num_rows() {
                let rows = datafusion::arrow::array::UInt32Array::from_iter_values(0..take as u32);
                datafusion::arrow::compute::take_record_batch(&b, &rows)
                    .map_err(|e| EngineError::Other(e.to_string()))?
            } else {
                b
            };
            held += take;
            batches.push(kept);
        }
    }
    Ok((schema, batches, total))
}

/// How to print a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// An aligned text table.
    #[default]
    Table,
    /// CSV with a header.
    Csv,
    /// A JSON array of objects.
    Json,
}

/// Render batches in `format`.
pub fn render(schema: &SchemaRef, batches: &[RecordBatch], format: OutputFormat) -> Result<String> {
    let other = |e: datafusion::arrow::error::ArrowError| EngineError::Other(e.to_string());
    match format {
        OutputFormat::Table => {
            if batches.iter().all(|b| b.num_rows() == 0) {
                let empty = RecordBatch::new_empty(schema.clone());
                return Ok(
                    datafusion::arrow::util::pretty::pretty_format_batches(&[empty])
                        .map_err(other)?
                        .to_string(),
                );
            }
            Ok(
                datafusion::arrow::util::pretty::pretty_format_batches(batches)
                    .map_err(other)?
                    .to_string(),
            )
        }
        OutputFormat::Csv => {
            let mut buf = Vec::new();
            if batches.is_empty() {
                csv_into(&mut buf, &[RecordBatch::new_empty(schema.clone())], true)?;
            } else {
                csv_into(&mut buf, batches, true)?;
            }
            String::from_utf8(buf).map_err(|e| EngineError::Other(e.to_string()))
        }
        OutputFormat::Json => {
            let s = String::from_utf8(json_array(batches)?)
                .map_err(|e| EngineError::Other(e.to_string()))?;
            Ok(if s.is_empty() { "[]".to_string() } else { s })
        }
    }
}

/// Append `batches` to `buf` as CSV (nested columns as text), with the header line first when
/// `header` (the header of an empty batch alone is its schema's column names): what `render`
/// writes, also in pieces (rows rendered apart and joined later read the same).
pub fn csv_into(buf: &mut Vec<u8>, batches: &[RecordBatch], header: bool) -> Result<()> {
    let other = |e: datafusion::arrow::error::ArrowError| EngineError::Other(e.to_string());
    let mut w = datafusion::arrow::csv::WriterBuilder::new()
        .with_header(header)
        .build(buf);
    for b in batches {
        w.write(&nested_as_text(b)?).map_err(other)?;
    }
    Ok(())
}

/// A result file's format, from its extension (`.csv`, `.json`, `.parquet`, any case).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// CSV with a header (nested columns as text).
    Csv,
    /// One JSON array of row objects.
    Json,
    /// Parquet (zstd), the result's own schema.
    Parquet,
}

impl FileFormat {
    /// The format `path`'s extension names; an error naming the file otherwise.
    pub fn of(path: &std::path::Path) -> Result<FileFormat> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        match ext.as_str() {
            "csv" => Ok(FileFormat::Csv),
            "json" => Ok(FileFormat::Json),
            "parquet" => Ok(FileFormat::Parquet),
            _ => Err(EngineError::Other(format!(
                "{}: the output format comes from the extension: .csv, .json or .parquet",
                path.display()
            ))),
        }
    }
}

/// Write a result to `path` in the format of its extension ([`FileFormat::of`]): into a
/// temporary file beside it, renamed over `path` only once complete, so a failure leaves any
/// earlier file whole.
pub fn write_result(
    path: &std::path::Path,
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<()> {
    let format = FileFormat::of(path)?;
    let named = |e: &dyn std::fmt::Display| EngineError::Other(format!("{}: {e}", path.display()));
    let bytes = match format {
        FileFormat::Csv => render(schema, batches, OutputFormat::Csv)?.into_bytes(),
        FileFormat::Json => {
            let mut b = render(schema, batches, OutputFormat::Json)?.into_bytes();
            b.push(b'\n');
            b
        }
        FileFormat::Parquet => {
            let mut buf = Vec::new();
            let mut w = ArrowWriter::try_new(&mut buf, schema.clone(), Some(parquet_props()?))
                .map_err(|e| named(&e))?;
            for b in batches {
                w.write(b).map_err(|e| named(&e))?;
            }
            w.close().map_err(|e| named(&e))?;
            buf
        }
    };
    // a link is followed: the file it points to gets the result, the link stays
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).map_err(|e| named(&e))?
        }
        _ => path.to_path_buf(),
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    // a new file gets the modes `File::create` gives (0666 less the umask), not 0600
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(dir).map_err(|e| {
        // the error names the temporary file; the user knows the folder
        let why = match dir.is_dir() {
            false => "no such folder".to_string(),
            true => std::io::Error::from(e.kind()).to_string(),
        };
        named(&format_args!(
            "cannot write in the folder {}: {why}",
            dir.display()
        ))
    })?;
    // a replaced file keeps its modes
    if let Ok(m) = std::fs::metadata(&target) {
        tmp.as_file()
            .set_permissions(m.permissions())
            .map_err(|e| named(&e))?;
    }
    std::io::Write::write_all(&mut tmp, &bytes).map_err(|e| named(&e))?;
    tmp.persist(&target).map_err(|e| named(&e.error))?;
    Ok(())
}

/// `b` with its nested columns (lists, structs, maps), which CSV cannot hold, as their text
/// (`[a, b]`, `{k: v}`), as the table format prints them.
fn nested_as_text(b: &RecordBatch) -> Result<RecordBatch> {
    use datafusion::arrow::array::{ArrayRef, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    let nested = |t: &DataType| t.is_nested();
    if !b.schema().fields().iter().any(|f| nested(f.data_type())) {
        return Ok(b.clone());
    }
    let other = |e: datafusion::arrow::error::ArrowError| EngineError::Other(e.to_string());
    let opts = FormatOptions::default();
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for (f, c) in b.schema().fields().iter().zip(b.columns()) {
        if !nested(f.data_type()) {
            fields.push(f.as_ref().clone());
            cols.push(c.clone());
            continue;
        }
        let fmt = ArrayFormatter::try_new(c.as_ref(), &opts).map_err(other)?;
        let text: StringArray = (0..c.len())
            .map(|i| c.is_valid(i).then(|| fmt.value(i).to_string()))
            .collect();
        fields.push(Field::new(f.name(), DataType::Utf8, true));
        cols.push(Arc::new(text));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).map_err(other)
}

/// `batches` as one JSON array of row objects, every column a key in every row (`null` when
/// NULL: scripts expect the same keys in each row). Empty output for no rows.
pub fn json_array(batches: &[RecordBatch]) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut w = datafusion::arrow::json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, datafusion::arrow::json::writer::JsonArray>(&mut buf);
    let refs: Vec<&RecordBatch> = batches.iter().collect();
    w.write_batches(&refs)
        .map_err(|e| EngineError::Other(e.to_string()))?;
    w.finish().map_err(|e| EngineError::Other(e.to_string()))?;
    drop(w);
    Ok(buf)
}

/// A warehouse location: a local directory or an `s3://bucket/prefix`.
pub struct Warehouse {
    store: Arc<dyn ObjectStore>,
    /// Prefix within the store.
    prefix: ObjPath,
    /// The URL DataFusion uses to list it (`file:///…/` or `s3://bucket/prefix/`).
    url: String,
}

/// Marker of one ingested log, stored under `_logs/` in the warehouse.
#[derive(serde::Serialize, serde::Deserialize, Debug)]
struct LogMarker {
    source: String,
    stamp: String,
    key: String,
    app_id: Option<String>,
}

/// A stable file key for a log path (FNV-1a 64 of the path).
fn log_key(source: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in source.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

impl Warehouse {
    /// Open (or prepare to create) a warehouse at `location`.
    pub fn open(location: &str, s3: &aether_ingest::S3Options) -> Result<Warehouse> {
        if location.starts_with("s3://") {
            let s = aether_ingest::source::s3_location(location, s3)
                .map_err(|e| EngineError::Other(format!("{location}: {e}")))?;
            Ok(Warehouse {
                store: s.store,
                prefix: ObjPath::from(s.prefix.as_str()),
                url: format!("s3://{}/{}/", s.bucket, s.prefix),
            })
        } else {
            std::fs::create_dir_all(location).map_err(|e| {
                EngineError::Other(format!(
                    "{location}: cannot create the warehouse directory: {e}"
                ))
            })?;
            let abs = std::fs::canonicalize(location)
                .map_err(|e| EngineError::Other(format!("{location}: {e}")))?;
            let store = Arc::new(object_store::local::LocalFileSystem::new_with_prefix(&abs)?);
            Ok(Warehouse {
                store,
                prefix: ObjPath::from(""),
                url: format!("file://{}/", abs.display()),
            })
        }
    }

    fn path(&self, rel: &str) -> ObjPath {
        if self.prefix.as_ref().is_empty() {
            ObjPath::from(rel)
        } else {
            ObjPath::from(format!("{}/{rel}", self.prefix))
        }
    }

    async fn markers(&self) -> Result<std::collections::HashMap<String, LogMarker>> {
        use futures::TryStreamExt;
        let mut out = std::collections::HashMap::new();
        let list: Vec<_> = match self
            .store
            .list(Some(&self.path("_logs")))
            .try_collect()
            .await
        {
            Ok(l) => l,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        for meta in list {
            let bytes = self.store.get(&meta.location).await?.bytes().await?;
            if let Ok(m) = serde_json::from_slice::<LogMarker>(&bytes) {
                out.insert(m.source.clone(), m);
            }
        }
        Ok(out)
    }

    async fn put(&self, rel: &str, data: Vec<u8>) -> Result<()> {
        self.store
            .put(&self.path(rel), PutPayload::from(data))
            .await?;
        Ok(())
    }

    /// Register every table of the warehouse (Parquet under `<table>/`) in `ctx`.
    pub async fn register(&self, ctx: &SessionContext) -> Result<()> {
        if self.url.starts_with("s3://") {
            let u = url::Url::parse(&self.url).map_err(|e| EngineError::Other(e.to_string()))?;
            let base = url::Url::parse(&format!("s3://{}", u.host_str().unwrap_or_default()))
                .map_err(|e| EngineError::Other(e.to_string()))?;
            ctx.register_object_store(&base, self.store.clone());
        }
        // after a compaction: the manifest's parts and the staging files it has not absorbed
        let manifest = self.manifest().await?;
        let mut markers = None;
        for (name, schema) in all_schemas() {
            let opts = ListingOptions::new(Arc::new(ParquetFormat::default()))
                .with_file_extension(".parquet");
            let cfg = match &manifest {
                None => {
                    ListingTableConfig::new(ListingTableUrl::parse(format!("{}{name}/", self.url))?)
                }
                Some(m) => {
                    let files = self.table_files(name, m, &mut markers).await?;
                    if files.is_empty() {
                        ctx.deregister_table(name)?;
                        ctx.register_table(
                            name,
                            Arc::new(MemTable::try_new(schema.clone(), vec![vec![]])?),
                        )?;
                        continue;
                    }
                    let urls = files
                        .iter()
                        .map(|f| ListingTableUrl::parse(format!("{}{f}", self.url)))
                        .collect::<std::result::Result<Vec<_>, _>>()?;
                    ListingTableConfig::new_with_multi_paths(urls)
                }
            }
            .with_listing_options(opts)
            .with_schema(schema.clone());
            ctx.deregister_table(name)?;
            ctx.register_table(name, Arc::new(ListingTable::try_new(cfg)?))?;
        }
        self.register_derived(ctx, manifest.as_ref(), &mut markers)
            .await
    }

    /// Register the derived tables the warehouse holds as `derived.<table>`.
    async fn register_derived(
        &self,
        ctx: &SessionContext,
        manifest: Option<&compact::Manifest>,
        markers: &mut Option<std::collections::HashMap<String, LogMarker>>,
    ) -> Result<()> {
        let tables = self.derived_tables(manifest).await?;
        if tables.is_empty() {
            return Ok(());
        }
        let catalog = ctx
            .catalog("aether")
            .ok_or_else(|| EngineError::Other("no catalog aether".into()))?;
        let schema_provider = Arc::new(datafusion::catalog::MemorySchemaProvider::new());
        catalog.register_schema(DERIVED_DIR, schema_provider.clone())?;
        for name in tables {
            let dir = format!("{DERIVED_DIR}/{name}");
            let files = match manifest {
                Some(m) => self.table_files(&dir, m, markers).await?,
                None => self.list_rel(&dir).await?,
            };
            let files: Vec<String> = files
                .into_iter()
                .filter(|f| f.ends_with(".parquet"))
                .collect();
            let Some(first) = files.first() else { continue };
            let schema = self.derived_schema(first).await?;
            let urls = files
                .iter()
                .map(|f| ListingTableUrl::parse(format!("{}{f}", self.url)))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let opts = ListingOptions::new(Arc::new(ParquetFormat::default()))
                .with_file_extension(".parquet");
            let cfg = ListingTableConfig::new_with_multi_paths(urls)
                .with_listing_options(opts)
                .with_schema(schema);
            use datafusion::catalog::SchemaProvider;
            schema_provider.register_table(name, Arc::new(ListingTable::try_new(cfg)?))?;
        }
        Ok(())
    }

    /// The names of the derived tables: folders under `derived/`, and compacted ones.
    pub async fn derived_tables(
        &self,
        manifest: Option<&compact::Manifest>,
    ) -> Result<Vec<String>> {
        let mut names = std::collections::BTreeSet::new();
        match self
            .store
            .list_with_delimiter(Some(&self.path(DERIVED_DIR)))
            .await
        {
            Ok(l) => {
                for p in l.common_prefixes {
                    if let Some(n) = p.filename()
                        && !n.starts_with('_')
                    {
                        names.insert(n.to_string());
                    }
                }
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        if let Some(m) = manifest {
            for t in m.parts.keys() {
                if let Some(n) = t.strip_prefix(&format!("{DERIVED_DIR}/")) {
                    names.insert(n.to_string());
                }
            }
        }
        Ok(names.into_iter().collect())
    }

    /// A derived table's schema, from one of its files' footer: every column nullable, without
    /// the `log_key` a compacted part adds.
    // ParquetObjectReader is deprecated in parquet 59 for a hand-made AsyncFileReader; it reads
    // the footer only (two ranged GETs), which is all a schema needs
    #[allow(deprecated)]
    pub(crate) async fn derived_schema(&self, rel: &str) -> Result<SchemaRef> {
        use datafusion::parquet::arrow::ParquetRecordBatchStreamBuilder;
        use datafusion::parquet::arrow::async_reader::ParquetObjectReader;
        let reader = ParquetObjectReader::new(self.store.clone(), self.path(rel));
        let builder = ParquetRecordBatchStreamBuilder::new(reader)
            .await
            .map_err(|e| EngineError::Other(format!("{rel}: {e}")))?;
        Ok(nullable(builder.schema(), true))
    }
}

/// `schema` with every field nullable (and without `log_key` when `drop_key`): the derived
/// tables' rows come from views whose declared nullability varies with the data.
pub fn nullable(schema: &SchemaRef, drop_key: bool) -> SchemaRef {
    Arc::new(datafusion::arrow::datatypes::Schema::new(
        schema
            .fields()
            .iter()
            .filter(|f| !(drop_key && f.name() == "log_key"))
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
    ))
}

/// Outcome of writing a warehouse.
#[derive(Debug, Default)]
pub struct WarehouseReport {
    /// Logs read and written.
    pub written: Vec<aether_ingest::LogReport>,
    /// Logs skipped because the warehouse already holds them unchanged.
    pub skipped: Vec<String>,
    /// Inputs that could not be expanded into logs.
    pub source_errors: Vec<aether_ingest::SourceError>,
    /// Logs the selection left out, and why.
    pub not_selected: Vec<aether_ingest::Skipped>,
    /// Uncompressed bytes read.
    pub bytes: u64,
}

impl WarehouseReport {
    /// Whether every input was found and every log read cleanly.
    pub fn all_ok(&self) -> bool {
        load::problem_lines(&self.source_errors, &self.written).is_empty()
    }

    /// What to say of an ingest into the warehouse at `location`: its problems (`warning: …`),
    /// the logs the selection left out (`SKIPPED: …`), then the totals.
    pub fn lines(&self, location: &str, secs: f64) -> Vec<String> {
        let mut out: Vec<String> = load::problem_lines(&self.source_errors, &self.written)
            .into_iter()
            .map(|p| format!("warning: {p}"))
            .collect();
        out.extend(
            self.not_selected
                .iter()
                .map(|s| format!("SKIPPED: {}: {}", s.log, s.reason)),
        );
        let read_ok = self.written.iter().filter(|r| r.app_id.is_some()).count();
        out.push(ingested_line(
            (self.written.len(), read_ok),
            None,
            self.bytes,
            secs,
            self.skipped.len(),
            location,
        ));
        out
    }
}

/// The line an ingest into the warehouse at `location` ends with: the logs read (and of them
/// with tables), the apps qualified (`qualify --warehouse`), the uncompressed bytes, the
/// seconds taken, the logs it already held.
pub fn ingested_line(
    (logs, tables): (usize, usize),
    qualified: Option<usize>,
    bytes: u64,
    secs: f64,
    skipped: usize,
    location: &str,
) -> String {
    let qualified = qualified.map_or(String::new(), |q| format!("{q} qualified, "));
    format!(
        "ingested {logs} log(s) ({tables} with tables, {qualified}{:.1} MB uncompressed, \
         {secs:.2} s), skipped {skipped} already in {location}",
        bytes as f64 / 1e6
    )
}

/// How the warehouse's Parquet is written (zstd).
pub(crate) fn parquet_props() -> Result<WriterProperties> {
    Ok(WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).map_err(|e| EngineError::Other(e.to_string()))?,
        ))
        .build())
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn parquet_bytes(batch: &RecordBatch) -> Result<Vec<u8>> {
    let props = parquet_props()?;
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props))
        .map_err(|e| EngineError::Other(e.to_string()))?;
    w.write(batch)
        .map_err(|e| EngineError::Other(e.to_string()))?;
    w.close().map_err(|e| EngineError::Other(e.to_string()))?;
    Ok(buf)
}

/// The per-app tables derived from each log (its qualification, QualX features, bottlenecks,
/// operators, unsupported operators), written under `derived/<table>/<log key>.parquet` beside
/// the raw tables and registered as `derived.<table>`: fleet-wide questions need no deep view
/// stacks or aether functions on the engine that asks them (Athena, Trino, Spark, Ballista).
pub const DERIVED_DIR: &str = "derived";

/// The logs of `inputs` a warehouse still needs, the ones it holds unchanged, and the inputs
/// that could not be listed.
pub struct Pending {
    pub todo: Vec<LogSource>,
    /// Logs the warehouse already holds, unchanged.
    pub skipped: Vec<String>,
    pub source_errors: Vec<aether_ingest::SourceError>,
    /// Logs the selection (`--filter_criteria`, `--application_name`, …) left out, and why.
    pub left_out: Vec<aether_ingest::Skipped>,
}

impl Warehouse {
    /// Discover `inputs` (with the shard of `opts`) and split them into the logs to read and the
    /// logs already held with the same size and mtime/ETag (all read again with `force`).
    pub fn pending(
        &self,
        inputs: &[String],
        opts: &IngestOptions,
        force: bool,
        rt: &tokio::runtime::Runtime,
    ) -> Result<Pending> {
        let found = aether_ingest::discover(inputs, opts, rt);
        let (logs, source_errors) = (found.logs, found.errors);
        let markers = rt.block_on(self.markers())?;
        let mut p = Pending {
            todo: Vec::new(),
            skipped: Vec::new(),
            source_errors,
            left_out: found.skipped,
        };
        for l in logs {
            match markers.get(&l.display) {
                Some(m) if !force && m.stamp == l.stamp() => p.skipped.push(l.display.clone()),
                _ => p.todo.push(l),
            }
        }
        Ok(p)
    }

    /// Write one log's tables, its errors and its `derived` tables (name, rows), then its marker
    /// (last: a log whose marker is missing is read again, and its files are overwritten).
    pub async fn write_log(
        &self,
        log: &LogSource,
        out: &aether_ingest::LogOutcome,
        derived: &[(String, RecordBatch)],
    ) -> Result<()> {
        let key = log_key(&log.display);
        if let Some(app) = &out.app {
            for (name, batch) in &app.batches {
                self.put(&format!("{name}/{key}.parquet"), parquet_bytes(batch)?)
                    .await?;
            }
        }
        for (name, batch) in derived {
            self.put(
                &format!("{DERIVED_DIR}/{name}/{key}.parquet"),
                parquet_bytes(batch)?,
            )
            .await?;
        }
        let errs = aether_ingest::error_batch(&[], out.errors.iter());
        self.put(
            &format!("ingest_errors/{key}.parquet"),
            parquet_bytes(&errs)?,
        )
        .await?;
        let marker = LogMarker {
            source: log.display.clone(),
            stamp: log.stamp(),
            key,
            app_id: out.app.as_ref().map(|a| a.app_id.clone()),
        };
        self.put(
            &format!("_logs/{}.json", marker.key),
            serde_json::to_vec(&marker).map_err(|e| EngineError::Other(e.to_string()))?,
        )
        .await
    }

    /// Record the inputs that could not be listed in `ingest_errors/`.
    pub async fn write_source_errors(
        &self,
        inputs: &[String],
        errors: &[aether_ingest::SourceError],
    ) -> Result<()> {
        if errors.is_empty() {
            return Ok(());
        }
        let errs = aether_ingest::error_batch(errors, std::iter::empty());
        let key = log_key(&format!("inputs:{}", inputs.join(",")));
        self.put(
            &format!("ingest_errors/inputs-{key}.parquet"),
            parquet_bytes(&errs)?,
        )
        .await
    }
}

/// Ingest `inputs` into the warehouse at `location`: one Parquet file per log and table, written
/// as each log finishes (nothing already written is lost if a later log fails), logs already in
/// the warehouse with the same size and mtime/ETag skipped. Errors go to `ingest_errors/`.
pub fn ingest_to_warehouse(
    inputs: &[String],
    location: &str,
    opts: &IngestOptions,
    force: bool,
) -> Result<WarehouseReport> {
    let rt = aether_ingest::io_runtime();
    let wh = Warehouse::open(location, &opts.s3)?;
    let Pending {
        todo,
        skipped,
        source_errors,
        left_out,
    } = wh.pending(inputs, opts, force, &rt)?;
    let mut report = WarehouseReport {
        source_errors,
        skipped,
        not_selected: left_out,
        ..Default::default()
    };
    let written = std::sync::Mutex::new(Vec::new());
    let failures = std::sync::Mutex::new(Vec::<String>::new());
    let handle = rt.handle().clone();
    aether_ingest::read_logs(&todo, opts, &rt, |log, out| {
        if let Err(e) = handle.block_on(wh.write_log(log, &out, &[]))
            && let Ok(mut f) = failures.lock()
        {
            f.push(format!(
                "{}: cannot write to the warehouse: {e}",
                log.display
            ));
        }
        if let Ok(mut w) = written.lock() {
            w.push(aether_ingest::LogReport::of(log, out));
        }
    });
    let failures = failures.into_inner().unwrap_or_default();
    if !failures.is_empty() {
        return Err(EngineError::Other(failures.join("\n")));
    }
    report.written = written.into_inner().unwrap_or_default();
    report.written.sort_by(|a, b| a.source.cmp(&b.source));
    report.bytes = report.written.iter().map(|r| r.bytes).sum();
    rt.block_on(wh.write_source_errors(inputs, &report.source_errors))?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_head_holds_the_rows_it_keeps_and_counts_the_rest() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let ctx = session();
        let sql = "SELECT value FROM range(100000) ORDER BY value";
        let (schema, batches, total) = rt.block_on(query_head(&ctx, sql, Some(3))).unwrap();
        assert_eq!(total, 100_000);
        assert_eq!(schema.field(0).name(), "value");
        let held: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(held, 3);
        let text = render(&schema, &batches, OutputFormat::Csv).unwrap();
        assert_eq!(text, "value\n0\n1\n2\n");
        // the kept rows are copies: they do not hold the batch they came from
        let bytes: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        assert!(bytes < 4096, "{bytes} bytes held for 3 rows");
        // rows kept across batches (8,192 rows each): the first batch whole, part of the next
        let (_, batches, total) = rt.block_on(query_head(&ctx, sql, Some(10_000))).unwrap();
        let rows: Vec<usize> = batches.iter().map(RecordBatch::num_rows).collect();
        assert_eq!((rows, total), (vec![8192, 1808], 100_000));
        // all rows without a limit, the same as query()
        let (_, all, total) = rt.block_on(query_head(&ctx, sql, None)).unwrap();
        let (_, q) = rt.block_on(query(&ctx, sql)).unwrap();
        let n = |b: &[RecordBatch]| b.iter().map(RecordBatch::num_rows).sum::<usize>();
        assert_eq!((n(&all), total), (n(&q), 100_000));
        // a statement without rows
        let (schema, batches, total) = rt
            .block_on(query_head(&ctx, "CREATE VIEW v AS SELECT 1 AS x", Some(3)))
            .unwrap();
        assert_eq!((schema.fields().len(), n(&batches), total), (0, 0, 0));
    }
}
