//! ORC outputs (local files or folders of part files), read with orc-rust into a streaming table:
//! each scan reads the files again, batch by batch, so memory stays bounded. Hive-partitioned
//! ORC folders and ORC on S3 are not read yet (the error says so).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::prelude::SessionContext;
use orc_rust::arrow_reader::ArrowReaderBuilder;

use crate::{Error, Result};

#[derive(Debug)]
struct OrcFiles {
    files: Vec<PathBuf>,
    schema: SchemaRef,
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

impl PartitionStream for OrcFiles {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let files = self.files.clone();
        let batches = files.into_iter().flat_map(|f| {
            let reader = std::fs::File::open(&f)
                .map_err(external)
                .and_then(|fh| ArrowReaderBuilder::try_new(fh).map_err(external));
            let it: Box<dyn Iterator<Item = datafusion::error::Result<_>> + Send> = match reader {
                Ok(b) => Box::new(b.build().map(|r| r.map_err(external))),
                Err(e) => Box::new(std::iter::once(Err(e))),
            };
            it
        });
        Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            futures::stream::iter(batches),
        ))
    }
}

/// The ORC part files of `path` (itself, if a file), in name order.
fn files(path: &Path) -> Result<Vec<PathBuf>> {
    let err = |e: String| Error::Input(format!("{}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(path).map_err(|e| err(e.to_string()))? {
        let e = e.map_err(|e| err(e.to_string()))?;
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        if e.path().is_dir() {
            return Err(err(format!(
                "{name}/: partitioned ORC outputs are not supported yet (Parquet, CSV and JSON ones are)"
            )));
        }
        if name.ends_with(".orc") {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Register the ORC output `path` as table `name`; `None` when it holds no ORC file.
pub async fn register(ctx: &SessionContext, name: &str, path: &str) -> Result<Option<SchemaRef>> {
    if path.starts_with("s3://") || path.starts_with("s3a://") {
        return Err(Error::Input(format!(
            "{path}: ORC outputs on S3 are not supported yet (local ORC, and Parquet, CSV and JSON on S3, are)"
        )));
    }
    let files = files(Path::new(path))?;
    let Some(first) = files.first() else {
        return Ok(None);
    };
    let fh = std::fs::File::open(first)
        .map_err(|e| Error::Input(format!("{}: {e}", first.display())))?;
    let schema = ArrowReaderBuilder::try_new(fh)
        .map_err(|e| Error::Input(format!("{}: not an ORC file: {e}", first.display())))?
        .schema();
    let table = StreamingTable::try_new(
        schema.clone(),
        vec![Arc::new(OrcFiles {
            files,
            schema: schema.clone(),
        })],
    )
    .map_err(|e| Error::Input(format!("{path}: {e}")))?;
    ctx.register_table(name, Arc::new(table))
        .map_err(|e| Error::Input(format!("{path}: {e}")))?;
    Ok(Some(schema))
}
