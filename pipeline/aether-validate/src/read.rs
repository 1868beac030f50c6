//! An output (a file or a folder of part files, Hive-style partitions included, local or S3) as
//! a table of a DataFusion session. `_SUCCESS`, `.crc` and other hidden files are left out by
//! the file extension; an output with no data file is empty.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::json::JsonFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::prelude::SessionContext;
use futures::TryStreamExt;

use crate::{Error, Format, Result};

/// The file extension of a format's part files.
fn extension(f: Format) -> &'static str {
    match f {
        Format::Parquet => ".parquet",
        Format::Csv => ".csv",
        Format::Json => ".json",
        Format::Orc => ".orc",
    }
}

/// The format of a local output's part files, from their extension (`part-0.snappy.parquet`,
/// `part-0.c000.csv`; compressed CSV and JSON as `.csv.gz`): for a table whose command does not
/// name its format.
pub fn sniff(path: &str) -> Option<Format> {
    let mut dirs = vec![(std::path::PathBuf::from(path), 0)];
    while let Some((d, depth)) = dirs.pop() {
        if d.is_file() {
            let name = d.file_name()?.to_string_lossy().to_lowercase();
            let name = name.strip_suffix(".gz").unwrap_or(&name);
            return [Format::Parquet, Format::Orc, Format::Csv, Format::Json]
                .into_iter()
                .find(|f| name.ends_with(extension(*f)));
        }
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let n = p.file_name().map(|n| n.to_string_lossy().to_string());
                n.is_some_and(|n| !n.starts_with('.') && !n.starts_with('_'))
            })
            .collect();
        entries.sort();
        for e in entries.into_iter().rev() {
            if e.is_file() {
                if let Some(f) = sniff(&e.display().to_string()) {
                    return Some(f);
                }
            } else if depth < 8 {
                dirs.push((e, depth + 1));
            }
        }
    }
    None
}

fn file_format(ctx: &SessionContext, f: Format) -> Arc<dyn FileFormat> {
    match f {
        // with the session's Parquet options (INT96 timestamps as microseconds)
        Format::Parquet => Arc::new(
            ParquetFormat::default().with_options(ctx.state().table_options().parquet.clone()),
        ),
        Format::Csv => Arc::new(CsvFormat::default().with_has_header(true)),
        Format::Json => Arc::new(JsonFormat::default()),
        // read by crate::orc, never listed here
        Format::Orc => Arc::new(ParquetFormat::default()),
    }
}

/// Register `path` as table `name`; `None` when it holds no data file (an empty output). A
/// local output with no file of `format` but files of another format is an error (a wrong
/// `--format` must not pass as two empty outputs).
pub async fn register(
    ctx: &SessionContext,
    name: &str,
    path: &str,
    format: Format,
) -> Result<Option<SchemaRef>> {
    let schema = if format == Format::Orc {
        crate::orc::register(ctx, name, path).await?
    } else {
        register_listing(ctx, name, path, format).await?
    };
    if schema.is_none()
        && !path.contains("://")
        && let Some(other) = sniff(path).filter(|f| *f != format)
    {
        return Err(Error::Input(format!(
            "{path}: no {} file, but {} ones (--format {})",
            extension(format),
            extension(other),
            extension(other).trim_start_matches('.')
        )));
    }
    Ok(schema)
}

async fn register_listing(
    ctx: &SessionContext,
    name: &str,
    path: &str,
    format: Format,
) -> Result<Option<SchemaRef>> {
    let err = |e: String| Error::Input(format!("{path}: {e}"));
    let url = if path.starts_with("s3://") || path.starts_with("s3a://") {
        let u = path.replacen("s3a://", "s3://", 1);
        let loc = aether_ingest::source::s3_location(&u, &Default::default()).map_err(err)?;
        let base =
            url::Url::parse(&format!("s3://{}", loc.bucket)).map_err(|e| err(e.to_string()))?;
        ctx.register_object_store(&base, loc.store.clone());
        // a prefix is a folder unless it names one object
        if u.ends_with('/') || !u.rsplit('/').next().unwrap_or("").contains('.') {
            format!("{}/", u.trim_end_matches('/'))
        } else {
            u
        }
    } else {
        let p = std::path::Path::new(path);
        let meta = std::fs::metadata(p).map_err(|e| err(e.to_string()))?;
        let abs = std::fs::canonicalize(p).map_err(|e| err(e.to_string()))?;
        if meta.is_dir() {
            format!("{}/", abs.display())
        } else {
            abs.display().to_string()
        }
    };
    let table_url = ListingTableUrl::parse(&url).map_err(|e| err(e.to_string()))?;
    let state = ctx.state();
    let store = state
        .runtime_env()
        .object_store(&table_url)
        .map_err(|e| err(e.to_string()))?;
    let ext = extension(format);
    let files: Vec<_> = table_url
        .list_all_files(&state, store.as_ref(), ext)
        .await
        .map_err(|e| err(e.to_string()))?
        .try_collect()
        .await
        .map_err(|e| err(e.to_string()))?;
    if files.is_empty() {
        return Ok(None);
    }
    let mut opts = ListingOptions::new(file_format(ctx, format)).with_file_extension(ext);
    if url.ends_with('/') {
        let parts = opts
            .infer_partitions(&state, &table_url)
            .await
            .map_err(|e| err(e.to_string()))?;
        opts = opts
            .with_table_partition_cols(parts.into_iter().map(|p| (p, DataType::Utf8)).collect());
    }
    let cfg = ListingTableConfig::new(table_url)
        .with_listing_options(opts)
        .infer_schema(&state)
        .await
        .map_err(|e| err(e.to_string()))?;
    let table = ListingTable::try_new(cfg).map_err(|e| err(e.to_string()))?;
    let schema = datafusion::datasource::TableProvider::schema(&table);
    ctx.register_table(name, Arc::new(table))
        .map_err(|e| err(e.to_string()))?;
    Ok(Some(schema))
}
