//! Sandbox outputs: a test run must never overwrite the production job's outputs. The CPU run's
//! event log names every path it wrote (`Execute InsertIntoHadoopFsRelationCommand <path>, …` and
//! the `…TableAsSelect…` commands of its plans); the job's arguments that name those paths (or a
//! folder above them) are rewritten to a per-run prefix, and a write no argument names (a path
//! hard-coded in the job) is reported so the run can be refused.

use crate::JobDefinition;
use serde::{Deserialize, Serialize};

/// One write of the CPU run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteTarget {
    /// The path written (scheme `file:` dropped), when the command names one.
    pub path: Option<String>,
    /// The table written, for table commands.
    pub table: Option<String>,
    /// The command (plan node name).
    pub command: String,
    /// The file format, normalised (`Parquet` also for `GpuParquetFileFormat@…`).
    #[serde(default)]
    pub format: Option<String>,
    /// The save mode (Overwrite, Append, ErrorIfExists, Ignore).
    #[serde(default)]
    pub mode: Option<String>,
    /// The partition columns.
    #[serde(default)]
    pub partition_columns: Vec<String>,
}

/// The top-level `, `-separated arguments of a plan description (brackets kept together).
fn arguments(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0usize);
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'[' | b'(' | b'{' => depth += 1,
            b']' | b')' | b'}' => depth -= 1,
            b',' if depth == 0 && b.get(i + 1) == Some(&b' ') => {
                out.push(s[start..i].trim());
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(s[start..].trim());
    out
}

/// A file format's name from a plan argument (`Parquet`, `GpuParquetFileFormat@1a2b`,
/// `org.apache.spark.sql.execution.datasources.csv.CSVFileFormat@…`, `parquet`).
fn format_name(arg: &str) -> Option<String> {
    let a = arg.rsplit('.').next().unwrap_or(arg);
    let a = a.split('@').next().unwrap_or(a);
    let a = a.strip_prefix("Gpu").unwrap_or(a);
    let a = a.strip_suffix("FileFormat").unwrap_or(a);
    let known = ["Parquet", "CSV", "JSON", "ORC", "Text", "Avro", "Delta"];
    known
        .iter()
        .find(|k| k.eq_ignore_ascii_case(a))
        .map(|k| k.to_string())
}

/// Reads a write command from a plan node (`None` for any other node).
pub fn parse_write(node_name: &str, description: &str) -> Option<WriteTarget> {
    let command = node_name
        .strip_prefix("Execute ")?
        .split_whitespace()
        .next()?
        .to_string();
    if !(command.contains("InsertInto")
        || command.contains("TableAsSelect")
        || command.contains("SaveIntoDataSource"))
    {
        return None;
    }
    // "<node name> <first argument>, …": the first argument is the path or the table
    let rest = description
        .strip_prefix(node_name)
        .unwrap_or(description)
        .trim_start();
    let first = rest.split(", ").next().unwrap_or("").trim();
    let path_opt = description
        .split("path=")
        .nth(1)
        .map(|p| p.split([',', ']']).next().unwrap_or("").trim().to_string())
        .filter(|p| !p.is_empty());
    let looks_like_path = |s: &str| s.contains('/') || s.contains("://");
    let (path, table) = if command.contains("InsertIntoHadoopFsRelation") && looks_like_path(first)
    {
        (Some(first.to_string()), None)
    } else if let Some(p) = path_opt {
        (Some(p), None)
    } else {
        (
            None,
            Some(first.trim_matches('`').replace("`.`", ".")).filter(|t| !t.is_empty()),
        )
    };
    let path = path.map(|p| p.strip_prefix("file:").map(String::from).unwrap_or(p));
    let args = arguments(rest);
    let format_at = args.iter().position(|a| format_name(a).is_some());
    let format = format_at.and_then(|i| format_name(args[i]));
    let mode = args
        .iter()
        .find(|a| matches!(**a, "Overwrite" | "Append" | "ErrorIfExists" | "Ignore"))
        .map(|a| a.to_string());
    // the partition columns: the attribute list before the format (`[l_shipmode#1577]`)
    let partition_columns = args[..format_at.unwrap_or(0)]
        .iter()
        .find(|a| a.starts_with('[') && a.contains('#'))
        .map(|a| {
            a.trim_matches(['[', ']'])
                .split(", ")
                .map(|c| c.split('#').next().unwrap_or(c).trim().to_string())
                .filter(|c| !c.is_empty())
                .collect()
        })
        .unwrap_or_default();
    Some(WriteTarget {
        path,
        table,
        command,
        format,
        mode,
        partition_columns,
    })
}

/// A table's name in one spelling: backquotes and the `spark_catalog.` catalog dropped,
/// `default.` when no database is named.
pub fn table_name(t: &str) -> String {
    let t = t.replace('`', "");
    let t = t.strip_prefix("spark_catalog.").unwrap_or(&t);
    if t.contains('.') {
        t.to_string()
    } else {
        format!("default.{t}")
    }
}

/// The managed table whose location `path` is, under the warehouse directory `warehouse`
/// (`<warehouse>/t` is `default.t`, `<warehouse>/db.db/t` is `db.t`).
pub fn managed_table(warehouse: &str, path: &str) -> Option<String> {
    let (w, p) = (norm(warehouse), norm(path));
    let rest = p.strip_prefix(&format!("{w}/"))?;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        [t] => Some(format!("default.{t}")),
        [db, t] => db.strip_suffix(".db").map(|db| format!("{db}.{t}")),
        _ => None,
    }
}

/// Where the managed table `table` lives under the warehouse directory `warehouse`.
pub fn table_location(warehouse: &str, table: &str) -> String {
    let w = norm(warehouse);
    match table_name(table).split_once('.') {
        Some(("default", t)) => format!("{w}/{t}"),
        Some((db, t)) => format!("{w}/{db}.db/{t}"),
        None => format!("{w}/{table}"),
    }
}

/// Tables in a run's writes (`roots[i]`: the root SQL execution of write `i`). `saveAsTable`
/// spans several executions of one root (`SaveAsV1TableCommand`, then the
/// `…TableAsSelect…` command, then the `InsertIntoHadoopFsRelationCommand` that writes the
/// files): a table command whose root also wrote a path is that write, and is dropped. A path
/// under the warehouse directory is a managed table's location (an external table's path stays
/// a path: moving the warehouse would not move it); a table command alone gets its location
/// there.
/// Returns which writes to keep.
pub fn resolve_tables(
    writes: &mut [WriteTarget],
    roots: &[i64],
    warehouse: Option<&str>,
) -> Vec<bool> {
    let mut keep = vec![true; writes.len()];
    if let Some(wh) = warehouse {
        for w in writes.iter_mut() {
            if let Some(p) = &w.path {
                w.table = managed_table(wh, p);
            }
        }
    }
    for i in 0..writes.len() {
        if writes[i].path.is_some() {
            continue;
        }
        let sibling = (0..writes.len())
            .find(|&j| j != i && roots.get(j) == roots.get(i) && writes[j].path.is_some());
        match sibling {
            Some(_) => keep[i] = false,
            None => {
                if let (Some(w), Some(t)) = (warehouse, writes[i].table.clone()) {
                    writes[i].table = Some(table_name(&t));
                    writes[i].path = Some(table_location(w, &t));
                }
            }
        }
    }
    keep
}

/// A job with its outputs moved under a prefix.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sandboxed {
    pub job: JobDefinition,
    /// (argument as the job had it, the sandbox's), one per rewritten argument.
    pub rewritten: Vec<(String, String)>,
    /// Writes of the CPU run that no argument names: the job writes them itself.
    pub unmapped: Vec<String>,
    /// Tables the CPU run wrote (a metastore is shared: the backend must isolate or refuse).
    pub tables: Vec<String>,
}

/// `path` without its scheme (`s3://b/x` → `b/x`, `/x` → `x`), for a place under a prefix.
fn tail_of(path: &str) -> String {
    let p = path.split_once("://").map(|(_, r)| r).unwrap_or(path);
    let p = p.strip_prefix("file:").unwrap_or(p);
    p.trim_start_matches('/').to_string()
}

fn norm(p: &str) -> String {
    let p = p
        .strip_prefix("file://")
        .or_else(|| p.strip_prefix("file:"))
        .unwrap_or(p);
    p.trim_end_matches('/').to_string()
}

/// Rewrites the job's arguments (and `--conf` values) that name an output of `writes`, or a
/// folder above one, to the same path under `prefix`.
pub fn sandbox(job: &JobDefinition, writes: &[WriteTarget], prefix: &str) -> Sandboxed {
    let prefix = prefix.trim_end_matches('/');
    let mut out = Sandboxed {
        job: job.clone(),
        ..Default::default()
    };
    let mut covered = vec![false; writes.len()];
    let mut rewrite = |arg: &str, out: &mut Sandboxed| -> Option<String> {
        let a = norm(arg);
        if a.len() < 2 || !(a.contains('/')) {
            return None;
        }
        let mut hit = false;
        for (i, w) in writes.iter().enumerate() {
            if let Some(p) = &w.path {
                let p = norm(p);
                if p == a || p.starts_with(&format!("{a}/")) {
                    covered[i] = true;
                    hit = true;
                }
            }
        }
        hit.then(|| {
            let new = format!("{prefix}/{}", tail_of(&a));
            out.rewritten.push((arg.to_string(), new.clone()));
            new
        })
    };
    let args = job.args.clone();
    for (i, a) in args.iter().enumerate() {
        if let Some(n) = rewrite(a, &mut out) {
            out.job.args[i] = n;
        }
    }
    let conf = job.conf.clone();
    for (k, v) in &conf {
        if let Some(n) = rewrite(v, &mut out) {
            out.job.conf.insert(k.clone(), n);
        }
    }
    for (w, c) in writes.iter().zip(&covered) {
        // a table lives in the warehouse, which the backend moves (or refuses to run)
        match (&w.table, &w.path) {
            (Some(t), _) => out.tables.push(t.clone()),
            (None, Some(p)) if !c => out.unmapped.push(p.clone()),
            _ => {}
        }
    }
    out.unmapped.sort();
    out.unmapped.dedup();
    out.tables.sort();
    out.tables.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_from_real_plan_descriptions() {
        // Spark 4.3, parquet_write (partitioned and plain)
        let w = parse_write(
            "Execute InsertIntoHadoopFsRelationCommand",
            "Execute InsertIntoHadoopFsRelationCommand file:/home/q/parquet_write/partitioned, false, [l_shipmode#1577], Parquet, [__partition_columns=[\"l_shipmode\"], path=/home/q/parquet_write/partitioned], Overwrite, [l_orderkey]",
        )
        .unwrap();
        assert_eq!(w.path.as_deref(), Some("/home/q/parquet_write/partitioned"));
        assert_eq!(
            (w.format.as_deref(), w.mode.as_deref(), w.partition_columns),
            (
                Some("Parquet"),
                Some("Overwrite"),
                vec!["l_shipmode".to_string()]
            )
        );
        // Spark 3.1 prints the options as Map(path -> …); GPU plans name GpuParquetFileFormat
        let w = parse_write(
            "Execute InsertIntoHadoopFsRelationCommand",
            "Execute InsertIntoHadoopFsRelationCommand s3://bucket/out/day=1, false, GpuParquetFileFormat@1a2b, Map(path -> s3://bucket/out/day=1), Append",
        )
        .unwrap();
        assert_eq!(w.path.as_deref(), Some("s3://bucket/out/day=1"));
        assert_eq!(
            (w.format.as_deref(), w.mode.as_deref()),
            (Some("Parquet"), Some("Append"))
        );
        let w = parse_write(
            "Execute CreateDataSourceTableAsSelectCommand",
            "Execute CreateDataSourceTableAsSelectCommand `spark_catalog`.`default`.`sales_copy`, Overwrite, [a, b]",
        )
        .unwrap();
        assert_eq!(
            (w.path, w.table.as_deref()),
            (None, Some("spark_catalog.default.sales_copy"))
        );
        assert_eq!(parse_write("Project", "Project [a#1]"), None);
        assert_eq!(
            parse_write("Execute ShowTablesCommand", "Execute ShowTablesCommand"),
            None
        );
    }

    #[test]
    fn save_as_table_is_one_write_of_a_managed_table() {
        // Spark 4.3's saveAsTable (real-spark-4.3.0/local-1796009806849, executions 211-213 of
        // root 211): the table command names nothing, the nested insert writes the warehouse
        let plan = |name: &str, desc: &str| parse_write(name, desc);
        let mut w: Vec<WriteTarget> = [
            plan(
                "Execute InsertIntoHadoopFsRelationCommand",
                "Execute InsertIntoHadoopFsRelationCommand file:/w/etl/y, false, JSON, [path=/w/etl/y], Overwrite, [a]",
            ),
            plan(
                "Execute CreateDataSourceTableAsSelectCommand",
                "Execute CreateDataSourceTableAsSelectCommand",
            ),
            plan(
                "Execute InsertIntoHadoopFsRelationCommand",
                "Execute InsertIntoHadoopFsRelationCommand file:/w/warehouse/etl_orders_summary, false, Parquet, [path=file:/w/warehouse/etl_orders_summary], Overwrite, [a]",
            ),
            // Spark 3.x names the table; no nested write: its location is in the warehouse
            plan(
                "Execute CreateDataSourceTableAsSelectCommand",
                "Execute CreateDataSourceTableAsSelectCommand `sales`.`copy`, Overwrite, [a, b]",
            ),
        ]
        .into_iter()
        .map(Option::unwrap)
        .collect();
        let keep = resolve_tables(&mut w, &[208, 211, 211, 300], Some("file:///w/warehouse"));
        assert_eq!(keep, [true, false, true, true]);
        assert_eq!(w[0].table, None);
        assert_eq!(
            (w[2].table.as_deref(), w[2].path.as_deref()),
            (
                Some("default.etl_orders_summary"),
                Some("/w/warehouse/etl_orders_summary")
            )
        );
        assert_eq!(
            (w[3].table.as_deref(), w[3].path.as_deref()),
            (Some("sales.copy"), Some("/w/warehouse/sales.db/copy"))
        );
        // a table's write is not a hard-coded path: the warehouse moves, the run is not refused
        let job = JobDefinition::parse("spark-submit etl.py /w/etl/y").unwrap();
        let kept: Vec<_> = w
            .into_iter()
            .zip(keep)
            .filter_map(|(w, k)| k.then_some(w))
            .collect();
        let s = sandbox(&job, &kept, "/sb");
        assert!(s.unmapped.is_empty(), "{:?}", s.unmapped);
        assert_eq!(s.tables, ["default.etl_orders_summary", "sales.copy"]);
        // an external table's path (not in the warehouse) stays a path
        assert_eq!(managed_table("/w/warehouse", "/elsewhere/t"), None);
        assert_eq!(managed_table("/w/warehouse", "/w/warehouse/a/b/c"), None);
        assert_eq!(table_name("`spark_catalog`.`default`.`t`"), "default.t");
    }

    #[test]
    fn arguments_naming_outputs_move_under_the_prefix_and_hard_coded_ones_are_reported() {
        let job = JobDefinition::parse(
            "spark-submit --conf spark.app.out=s3://prod/extra etl.py s3://prod/in s3://prod/out 7",
        )
        .unwrap();
        let w = |p: &str| WriteTarget {
            path: Some(p.into()),
            table: None,
            command: "InsertIntoHadoopFsRelationCommand".into(),
            format: None,
            mode: None,
            partition_columns: Vec::new(),
        };
        let writes = [
            w("s3://prod/out/part=a"),
            w("s3://prod/out/part=b"),
            w("s3://prod/extra"),
            w("/hard/coded"),
        ];
        let s = sandbox(&job, &writes, "s3://art/runs/7/");
        assert_eq!(
            s.job.args,
            ["s3://prod/in", "s3://art/runs/7/prod/out", "7"]
        );
        assert_eq!(s.job.conf["spark.app.out"], "s3://art/runs/7/prod/extra");
        assert_eq!(s.rewritten.len(), 2);
        assert_eq!(s.unmapped, ["/hard/coded"]);
        // the input is left alone: it is not an output
        assert!(!s.rewritten.iter().any(|(a, _)| a == "s3://prod/in"));
    }
}
