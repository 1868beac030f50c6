//! Runs every `tests/slt/*.slt` file (sqllogictest format) against an aether session: the UDFs,
//! the base tables and the views of `sql/`. Fails on any mismatch.
//!
//! `LOAD 'path' [, 'path' …]` (paths relative to the repository root) reads event logs into the
//! session and registers the views; `SET aether.<setting> = <number>` changes an analysis
//! setting (the views are registered again). Run with `-- --complete` to rewrite the expected
//! results from the actual ones (review the diff!), `-- NAME` to run the files whose name
//! contains NAME.

use datafusion::arrow::array::{Array, ArrayRef, Float32Array, Float64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::prelude::SessionContext;
use sqllogictest::{DBOutput, DefaultColumnType};
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[derive(Debug)]
struct SltError(String);

impl std::fmt::Display for SltError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for SltError {}

struct Aether {
    ctx: SessionContext,
    settings: aether_engine::AnalysisSettings,
}

impl Aether {
    fn new() -> Self {
        Aether {
            ctx: aether_engine::session(),
            settings: Default::default(),
        }
    }

    async fn load(&mut self, args: &str) -> Result<(), SltError> {
        let paths: Vec<String> = args
            .split(',')
            .map(|p| p.trim().trim_matches('\'').to_string())
            .filter(|p| !p.is_empty())
            .map(|p| repo_root().join(p).to_string_lossy().into_owned())
            .collect();
        // ingest runs its own I/O runtime: keep it off the async threads
        let ing = tokio::task::spawn_blocking(move || {
            aether_ingest::ingest(&paths, &aether_ingest::IngestOptions::default())
        })
        .await
        .map_err(|e| SltError(e.to_string()))?;
        if let Some(e) = ing.source_errors.first() {
            return Err(SltError(format!("LOAD {}: {}", e.path, e.error)));
        }
        aether_engine::register_ingested(&self.ctx, &ing).map_err(|e| SltError(e.to_string()))?;
        self.views().await
    }

    /// The settings, and the views forgotten: each statement defines the views it reads
    /// (lazily, as `aether sql` does), so the suite runs every view through that path.
    async fn views(&self) -> Result<(), SltError> {
        aether_engine::views::reset_views(&self.ctx, &self.settings)
            .map_err(|e| SltError(e.to_string()))
    }
}

fn cell(col: &ArrayRef, row: usize) -> Result<String, SltError> {
    if col.is_null(row) {
        return Ok("NULL".into());
    }
    let float = match col.data_type() {
        DataType::Float64 => col
            .as_any()
            .downcast_ref::<Float64Array>()
            .map(|a| a.value(row)),
        DataType::Float32 => col
            .as_any()
            .downcast_ref::<Float32Array>()
            .map(|a| a.value(row) as f64),
        _ => None,
    };
    if let Some(v) = float {
        // six decimals: stable across platforms, precise enough for ratios and milliseconds
        let s = format!("{v:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.').to_string();
        return Ok(if s == "-0" { "0".into() } else { s });
    }
    let opts = FormatOptions::default().with_null("NULL");
    let f = ArrayFormatter::try_new(col.as_ref(), &opts).map_err(|e| SltError(e.to_string()))?;
    let s = f.value(row).to_string();
    Ok(if s.is_empty() { "(empty)".into() } else { s })
}

fn column_type(t: &DataType) -> DefaultColumnType {
    match t {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => DefaultColumnType::Integer,
        DataType::Float16 | DataType::Float32 | DataType::Float64 | DataType::Decimal128(_, _) => {
            DefaultColumnType::FloatingPoint
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DefaultColumnType::Text,
        _ => DefaultColumnType::Any,
    }
}

#[async_trait::async_trait]
impl sqllogictest::AsyncDB for Aether {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        let trimmed = sql.trim();
        let upper = trimmed.to_ascii_uppercase();
        if upper.starts_with("LOAD ") {
            self.load(&trimmed["LOAD ".len()..]).await?;
            return Ok(DBOutput::StatementComplete(0));
        }
        if upper.starts_with("SET AETHER.") {
            let body = &trimmed["SET AETHER.".len()..];
            let (k, v) = body
                .split_once('=')
                .ok_or_else(|| SltError(format!("expected SET aether.name = value: {sql}")))?;
            self.settings
                .set(k.trim(), v.trim().trim_end_matches(';'))
                .map_err(|e| SltError(e.to_string()))?;
            self.views().await?;
            return Ok(DBOutput::StatementComplete(0));
        }
        aether_engine::views::register_views_for(&self.ctx, trimmed)
            .await
            .map_err(|e| SltError(e.to_string()))?;
        let df = self
            .ctx
            .sql(trimmed)
            .await
            .map_err(|e| SltError(e.to_string()))?;
        let schema = df.schema().as_arrow().clone();
        let batches = df.collect().await.map_err(|e| SltError(e.to_string()))?;
        let is_query = upper.starts_with("SELECT")
            || upper.starts_with("WITH")
            || upper.starts_with("VALUES")
            || upper.starts_with("SHOW")
            || upper.starts_with("DESCRIBE")
            || upper.starts_with('(');
        if !is_query {
            return Ok(DBOutput::StatementComplete(0));
        }
        let types = schema
            .fields()
            .iter()
            .map(|f| column_type(f.data_type()))
            .collect();
        let mut rows = Vec::new();
        for b in &batches {
            for r in 0..b.num_rows() {
                rows.push(
                    b.columns()
                        .iter()
                        .map(|c| cell(c, r))
                        .collect::<Result<Vec<_>, _>>()?,
                );
            }
        }
        Ok(DBOutput::Rows { types, rows })
    }

    async fn shutdown(&mut self) {}
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let complete = args.iter().any(|a| a == "--complete");
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let dir = repo_root().join("tests/slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/slt")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            filters.is_empty() || filters.iter().any(|f| n.contains(f.as_str()))
        })
        .collect();
    files.sort();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut failed = 0;
    for f in &files {
        let name = f
            .strip_prefix(repo_root())
            .unwrap_or(f)
            .display()
            .to_string();
        let mut runner = sqllogictest::Runner::new(|| async { Ok::<_, SltError>(Aether::new()) });
        let res = rt.block_on(async {
            if complete {
                runner
                    .update_test_file(
                        f,
                        " ",
                        sqllogictest::default_validator,
                        sqllogictest::default_normalizer,
                        sqllogictest::strict_column_validator,
                    )
                    .await
                    .map_err(|e| e.to_string())
            } else {
                runner
                    .run_file_async(f)
                    .await
                    .map_err(|e| e.display(true).to_string())
            }
        });
        match res {
            Ok(()) => println!("ok   {name}"),
            Err(e) => {
                failed += 1;
                println!("FAIL {name}\n{e}");
            }
        }
    }
    println!("{} slt file(s), {failed} failed", files.len());
    if failed > 0 {
        std::process::exit(1);
    }
}
