//! What a run would read: the listing of `--dry_run`, from the selection's
//! [`aether_ingest::Found`].

use crate::{EngineError, Result};
use aether_ingest::Found;
use datafusion::arrow::array::{ArrayRef, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use std::sync::Arc;

/// The table of a dry run: every log found, selected or not (with why), its files, stored bytes,
/// codec, file time and first events (app id, name, start, user, Spark version, engine); and a
/// line of totals.
pub fn dry_run(found: &Found) -> Result<(RecordBatch, String)> {
    let utc = |t: Option<i64>| t.map(aether_ingest::select::format_utc);
    #[derive(Default)]
    struct Cols {
        log: Vec<String>,
        selected: Vec<&'static str>,
        reason: Vec<String>,
        files: Vec<u64>,
        bytes: Vec<u64>,
        codec: Vec<Option<String>>,
        file_time: Vec<Option<String>>,
        app_id: Vec<Option<String>>,
        app_name: Vec<Option<String>>,
        start: Vec<Option<String>>,
        user: Vec<Option<String>>,
        spark: Vec<Option<String>>,
        engine: Vec<Option<String>>,
    }
    let mut c = Cols::default();
    let push_head = |c: &mut Cols, h: Option<&aether_ingest::Head>| {
        c.app_id.push(h.and_then(|h| h.app_id.clone()));
        c.app_name.push(h.and_then(|h| h.app_name.clone()));
        c.start.push(utc(h.and_then(|h| h.start_ms)));
        c.user.push(h.and_then(|h| h.user.clone()));
        c.spark.push(h.and_then(|h| h.spark_version.clone()));
        c.engine.push(h.map(|h| h.engine().to_string()));
    };
    let mut read_bytes = 0;
    for log in &found.logs {
        let head = found.heads.get(&log.display);
        read_bytes += log.size();
        c.log.push(log.display.clone());
        c.selected.push("yes");
        c.reason.push(String::new());
        c.files.push(log.parts.len() as u64);
        c.bytes.push(log.size());
        c.codec.push(head.map(|h| h.codec.clone()));
        c.file_time.push(utc(log.modified_ms()));
        push_head(&mut c, head);
    }
    for s in &found.skipped {
        c.log.push(s.log.clone());
        c.selected.push("no");
        c.reason.push(s.reason.clone());
        c.files.push(0);
        c.bytes.push(s.bytes);
        c.codec.push(s.head.as_ref().map(|h| h.codec.clone()));
        c.file_time.push(utc(s.modified_ms));
        push_head(&mut c, s.head.as_ref());
    }
    for e in &found.errors {
        c.log.push(e.path.clone());
        c.selected.push("no");
        c.reason.push(format!("not found: {}", e.error));
        c.files.push(0);
        c.bytes.push(0);
        c.codec.push(None);
        c.file_time.push(None);
        push_head(&mut c, None);
    }
    let text = |v: Vec<String>| Arc::new(StringArray::from(v)) as ArrayRef;
    let opt = |v: Vec<Option<String>>| Arc::new(StringArray::from(v)) as ArrayRef;
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("Event Log", text(c.log)),
        (
            "Selected",
            Arc::new(StringArray::from(c.selected)) as ArrayRef,
        ),
        ("Reason", text(c.reason)),
        ("Files", Arc::new(UInt64Array::from(c.files)) as ArrayRef),
        (
            "Stored Bytes",
            Arc::new(UInt64Array::from(c.bytes)) as ArrayRef,
        ),
        ("Codec", opt(c.codec)),
        ("File Time (UTC)", opt(c.file_time)),
        ("App ID", opt(c.app_id)),
        ("App Name", opt(c.app_name)),
        ("App Start (UTC)", opt(c.start)),
        ("User", opt(c.user)),
        ("Spark Version", opt(c.spark)),
        ("Engine", opt(c.engine)),
    ];
    let schema = Arc::new(Schema::new(
        cols.iter()
            .map(|(n, a)| {
                Field::new(
                    *n,
                    a.data_type().clone(),
                    *a.data_type() != DataType::UInt64,
                )
            })
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(schema, cols.into_iter().map(|(_, a)| a).collect())
        .map_err(|e| EngineError::Other(e.to_string()))?;
    let totals = format!(
        "dry run: {} log(s) selected ({} stored bytes), {} left out, {} input(s) not found; \
         nothing read past each log's first events, nothing written",
        found.logs.len(),
        read_bytes,
        found.skipped.len(),
        found.errors.len()
    );
    Ok((batch, totals))
}
