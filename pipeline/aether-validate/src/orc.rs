//! ORC outputs (a file or a folder of part files, Hive-style partitions included, local or on
//! S3), read with orc-rust into a streaming table: each scan reads the files again, one file at
//! a time and batch by batch, so memory stays bounded (an S3 object is first copied to a
//! temporary file, never held in memory). Partition columns are strings, as the other formats'.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::streaming::StreamingTable;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::prelude::SessionContext;
use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectStore, ObjectStoreExt};
use orc_rust::arrow_reader::ArrowReaderBuilder;

use crate::{Error, Result};

/// Where one part file is.
#[derive(Clone, Debug)]
enum Source {
    Local(PathBuf),
    S3 {
        store: Arc<dyn ObjectStore>,
        key: object_store::path::Path,
    },
}

/// One part file and its partition values (`None`: Spark's `__HIVE_DEFAULT_PARTITION__`).
#[derive(Clone, Debug)]
struct Part {
    source: Source,
    values: Vec<Option<String>>,
}

#[derive(Debug)]
struct OrcFiles {
    parts: Vec<Part>,
    schema: SchemaRef,
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The part file as a local file (an S3 object copied to a temporary one).
async fn open(source: &Source) -> std::result::Result<std::fs::File, DataFusionError> {
    match source {
        Source::Local(p) => std::fs::File::open(p).map_err(external),
        Source::S3 { store, key } => {
            use std::io::{Seek, Write};
            let mut f = tempfile::tempfile().map_err(external)?;
            let mut chunks = store.get(key).await.map_err(external)?.into_stream();
            while let Some(chunk) = chunks.next().await {
                f.write_all(&chunk.map_err(external)?).map_err(external)?;
            }
            f.rewind().map_err(external)?;
            Ok(f)
        }
    }
}

impl PartitionStream for OrcFiles {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let schema = self.schema.clone();
        let s = schema.clone();
        let batches = futures::stream::iter(self.parts.clone())
            .then(|p| async move { open(&p.source).await.map(|f| (f, p.values)) })
            .flat_map(move |opened| {
                let s = s.clone();
                let it: Box<dyn Iterator<Item = datafusion::error::Result<RecordBatch>> + Send> =
                    match opened.and_then(|(f, values)| {
                        let b = ArrowReaderBuilder::try_new(f).map_err(external)?;
                        Ok((b, values))
                    }) {
                        Ok((b, values)) => Box::new(b.build().map(move |r| {
                            let batch = r.map_err(external)?;
                            with_partitions(&s, batch, &values)
                        })),
                        Err(e) => Box::new(std::iter::once(Err(e))),
                    };
                futures::stream::iter(it)
            });
        Box::pin(RecordBatchStreamAdapter::new(schema, batches))
    }
}

/// A file's batch with its partition values appended as constant columns.
fn with_partitions(
    schema: &SchemaRef,
    batch: RecordBatch,
    values: &[Option<String>],
) -> datafusion::error::Result<RecordBatch> {
    let n = batch.num_rows();
    let mut cols = batch.columns().to_vec();
    for v in values {
        cols.push(Arc::new(StringArray::from(vec![v.as_deref(); n])) as ArrayRef);
    }
    Ok(RecordBatch::try_new(schema.clone(), cols)?)
}

/// The `k=v` folders of a part file's path below the output (`grp=3/x.orc` → [(grp, 3)]).
fn partition_values(relative: &str) -> Vec<(String, Option<String>)> {
    let mut segs: Vec<&str> = relative.split('/').collect();
    segs.pop();
    segs.iter()
        .filter_map(|s| s.split_once('='))
        .map(|(k, v)| {
            let v = (v != "__HIVE_DEFAULT_PARTITION__").then(|| v.to_string());
            (k.to_string(), v)
        })
        .collect()
}

fn wanted(relative: &str) -> bool {
    relative.ends_with(".orc")
        && !relative
            .split('/')
            .any(|s| s.starts_with('.') || s.starts_with('_') && !s.contains('='))
}

/// The local ORC part files of `path` (itself, if a file), as paths relative to it.
fn local_files(path: &Path) -> Result<Vec<(String, Source)>> {
    let err = |e: String| Error::Input(format!("{}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if meta.is_file() {
        return Ok(vec![(
            path.file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default(),
            Source::Local(path.to_path_buf()),
        )]);
    }
    let mut out = Vec::new();
    let mut dirs = vec![(path.to_path_buf(), String::new())];
    while let Some((d, rel)) = dirs.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| err(e.to_string()))? {
            let e = e.map_err(|e| err(e.to_string()))?;
            let name = e.file_name().to_string_lossy().to_string();
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if e.path().is_dir() {
                if wanted(&format!("{r}/x.orc")) {
                    dirs.push((e.path(), r));
                }
            } else if wanted(&r) {
                out.push((r, Source::Local(e.path())));
            }
        }
    }
    Ok(out)
}

/// The ORC part files under an `s3://bucket/prefix`.
async fn s3_files(path: &str) -> Result<Vec<(String, Source)>> {
    let err = |e: String| Error::Input(format!("{path}: {e}"));
    let u = path.replacen("s3a://", "s3://", 1);
    let loc = aether_ingest::source::s3_location(&u, &Default::default()).map_err(err)?;
    let prefix = object_store::path::Path::from(loc.prefix.as_str());
    let objects: Vec<_> = loc
        .store
        .list(Some(&prefix))
        .try_collect()
        .await
        .map_err(|e| err(e.to_string()))?;
    let mut out = Vec::new();
    for o in objects {
        let key = o.location.to_string();
        let rel = key
            .strip_prefix(&loc.prefix)
            .unwrap_or(&key)
            .trim_start_matches('/')
            .to_string();
        // the prefix itself may name one object
        let rel = if rel.is_empty() {
            key.rsplit('/').next().unwrap_or(&key).to_string()
        } else {
            rel
        };
        if wanted(&rel) {
            out.push((
                rel,
                Source::S3 {
                    store: loc.store.clone(),
                    key: o.location,
                },
            ));
        }
    }
    Ok(out)
}

/// Register the ORC output `path` as table `name`; `None` when it holds no ORC file.
pub async fn register(ctx: &SessionContext, name: &str, path: &str) -> Result<Option<SchemaRef>> {
    let mut files = if path.starts_with("s3://") || path.starts_with("s3a://") {
        s3_files(path).await?
    } else {
        local_files(Path::new(path))?
    };
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let Some((first_rel, first)) = files.first().cloned() else {
        return Ok(None);
    };
    let file_schema = {
        let f = open(&first)
            .await
            .map_err(|e| Error::Input(format!("{path}/{first_rel}: {e}")))?;
        ArrowReaderBuilder::try_new(f)
            .map_err(|e| Error::Input(format!("{path}/{first_rel}: not an ORC file: {e}")))?
            .schema()
    };
    // every file must sit in the same partition folders
    let columns: Vec<String> = partition_values(&first_rel)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let mut parts = Vec::with_capacity(files.len());
    for (rel, source) in files {
        let pv = partition_values(&rel);
        if pv.iter().map(|(k, _)| k).ne(columns.iter()) {
            return Err(Error::Input(format!(
                "{path}/{rel}: partition folders differ from {first_rel}'s ({})",
                columns.join(", ")
            )));
        }
        parts.push(Part {
            source,
            values: pv.into_iter().map(|(_, v)| v).collect(),
        });
    }
    let mut fields: Vec<Field> = file_schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.extend(columns.iter().map(|c| Field::new(c, DataType::Utf8, true)));
    let schema = Arc::new(Schema::new(fields));
    let table = StreamingTable::try_new(
        schema.clone(),
        vec![Arc::new(OrcFiles {
            parts,
            schema: schema.clone(),
        })],
    )
    .map_err(|e| Error::Input(format!("{path}: {e}")))?;
    ctx.register_table(name, Arc::new(table))
        .map_err(|e| Error::Input(format!("{path}: {e}")))?;
    Ok(Some(schema))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_folders_and_hidden_files() {
        assert_eq!(
            partition_values("grp=3/day=__HIVE_DEFAULT_PARTITION__/part-0.orc"),
            [("grp".into(), Some("3".into())), ("day".into(), None)]
        );
        assert!(partition_values("part-0.orc").is_empty());
        assert!(wanted("grp=3/part-0.c000.snappy.orc"));
        assert!(!wanted("_temporary/0/part-0.orc"));
        assert!(!wanted(".part-0.orc.crc"));
        assert!(!wanted("_SUCCESS"));
    }
}
