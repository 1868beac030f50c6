//! Per-plan-node GPU support, as NVIDIA's spark-rapids-tools qualification tool (26.08.4)
//! decides it: the reported exec name, whether the RAPIDS plugin runs the node, whether the
//! tool drops it (`should_remove`) or ignores it (`should_ignore`), the reason, and the
//! expressions it found in the node's description.
//!
//! Only what one node decides is here. Rules that need the plan are left to SQL over these
//! results: a WholeStageCodegen cluster is supported when any child is (reported here as
//! unsupported), a cluster is removed when all its children are, every node under a
//! `ReusedExchange` is removed, and in a Delta Lake app every exec of a plan that scans the Delta
//! log becomes unsupported and ignored ("Exec is part of Delta Lake metadata query").
//! Iceberg-specific and Photon/Auron parsing are not modelled.

use crate::plan_parse::{self, ParseFailure, Parsed, java_split, java_split_limit, java_trim};
use crate::rapids_plugin::{self, PLUGIN};
use regex::Regex;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

/// How the reference tool classifies one plan node.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorInfo {
    /// The reported "Exec Name": `Scan parquet`, `Execute InsertIntoHadoopFsRelationCommand
    /// parquet`, `WholeStageCodegen`, `SortMergeJoin`, or the (trimmed) node name.
    pub exec_name: String,
    /// The reported "Expression Name": `Format: <format>` for scans and writes (the whole node
    /// description for a scan of unknown format), the full node name for a WholeStageCodegen
    /// cluster, else empty.
    pub expression_name: String,
    /// `Exec`, `ReadExec`, `ReadRDD`, `ReadRDDDeltaLog`, `ReadDeltaLog`, `WriteExec`, `UDF` or
    /// `DataSet` (`UDF`/`DataSet` print as `Exec` in the tool's unsupported-operators report).
    pub op_type: &'static str,
    /// Whether the plugin runs it. Always false for a WholeStageCodegen cluster (that needs its
    /// children).
    pub supported: bool,
    /// The exec name is one the tool drops (`AdaptiveSparkPlan`, `ColumnarToRow`,
    /// `ReusedExchange`, …). Duplicates under a `ReusedExchange` are not decided here.
    pub should_remove: bool,
    /// The tool ignores it (UDFs, Datasets/RDDs, DDL commands, `CollectLimit`, Delta log scans…).
    pub should_ignore: bool,
    /// Why it is unsupported (the "Details" of the tool's unsupported-operators report); `None`
    /// when supported and for a WholeStageCodegen cluster.
    pub details: Option<String>,
    /// Every expression name the tool parsed from the description, in order, without repeats.
    pub expressions: Vec<String>,
    /// The unsupported expressions and their details (the report's `Expr` rows), when the exec
    /// is unsupported.
    pub unsupported_expressions: Vec<(String, String)>,
    /// For a supported scan: the data types of its read schema the plugin supports only
    /// partially (level `PS` in supportedDataSource.csv, e.g. `timestamp`, `array`).
    pub partial_types: Vec<String>,
}

impl OperatorInfo {
    /// The tool's "Action": `NONE` when supported, else `IgnoreNoPerf` when removed,
    /// `IgnorePerf` when ignored, `Triage` otherwise.
    pub fn action(&self) -> &'static str {
        if self.supported {
            "NONE"
        } else if self.should_remove {
            "IgnoreNoPerf"
        } else if self.should_ignore {
            "IgnorePerf"
        } else {
            "Triage"
        }
    }
}

/// Classifies a plan node (`node_name` = the plan info's `nodeName`, `description` = its
/// `simpleString`); `delta_enabled` = the app runs Delta Lake (Databricks, or
/// `spark.sql.extensions` naming `DeltaSparkSessionExtension`, or `spark.sql.catalog.spark_catalog`
/// naming `DeltaCatalog`). Scan support uses the EMR A10G operator scores.
pub fn classify(node_name: &str, description: &str, delta_enabled: bool) -> OperatorInfo {
    let scores = rapids_plugin::score_table(rapids_plugin::DEFAULT_SCORE_FILE)
        .expect("the default score file is embedded");
    classify_with(node_name, description, delta_enabled, scores)
}

/// [`classify`] with another operator score file (`emr-t4`, `operatorsScore-dataproc-l4.csv`, …;
/// see [`rapids_plugin::score_files`]); `None` when no such file is embedded.
pub fn classify_for(
    node_name: &str,
    description: &str,
    delta_enabled: bool,
    score_file: &str,
) -> Option<OperatorInfo> {
    let scores = rapids_plugin::score_table(score_file)?;
    Some(classify_with(node_name, description, delta_enabled, scores))
}

/// The reported exec name alone.
pub fn normalize(node_name: &str, description: &str) -> String {
    classify(node_name, description, false).exec_name
}

// ---------------------------------------------------------------------------------------------
// Constants

/// Execs parsed generically without expressions.
const GENERIC_EXECS: &[&str] = &[
    "AggregateInPandas",
    "ArrowEvalPython",
    "AQEShuffleRead",
    "CartesianProduct",
    "Coalesce",
    "CollectLimit",
    "CustomShuffleReader",
    "FlatMapGroupsInPandas",
    "GlobalLimit",
    "LocalLimit",
    "InMemoryTableScan",
    "MapInPandas",
    "PythonMapInArrow",
    "MapInArrow",
    "Range",
    "RunningWindowFunction",
    "Sample",
    "Union",
    "WindowInPandas",
];

/// Exec names the tool drops from its estimates.
const REMOVE_EXECS: &[&str] = &[
    "GenerateBloomFilter",
    "ReusedExchange",
    "ColumnarToRow",
    "ResultQueryStage",
    "AdaptiveSparkPlan",
    "Subquery",
    "ConvertToNative",
];

/// Exec names the tool ignores.
const IGNORE_EXECS: &[&str] = &[
    "CollectLimit",
    "Execute CreateViewCommand",
    "LocalTableScan",
    "Execute CreateTableCommand",
    "Execute DropTableCommand",
    "Execute CreateDatabaseCommand",
    "Execute DropDatabaseCommand",
    "Execute CreateTableAsSelectCommand",
    "Execute CreateDataSourceTableAsSelectCommand",
    "SetCatalogAndNamespace",
    "Execute SetCommand",
    "ResultQueryStage",
    "Execute AddJarsCommand",
    "Scan JDBCRelation",
    "Scan OneRowRelation",
    "CommandResult",
    "Execute DescribeDeltaHistoryCommand",
    "Execute ShowPartitionsDeltaCommand",
    "Execute AlterTableRecoverPartitionsCommand",
    "Execute CreateFunctionCommand",
    "Execute DeleteCommand",
    "Execute DescribeTableCommand",
    "Execute RefreshTable",
    "Execute RepairTableCommand",
    "Execute ShowPartitionsCommand",
    "Execute ClearCacheCommand",
    "Subquery",
];

/// Node names that mark a Dataset/RDD operation (compared with the trimmed name).
const RDD_NAMES: &[&str] = &[
    "ExistingRDD",
    "SerializeFromObject",
    "DeserializeToObject",
    "MapPartitions",
    "MapElements",
    "AppendColumns",
    "AppendColumnsWithObject",
    "MapGroups",
    "FlatMapGroupsInR",
    "FlatMapGroupsInRWithArrow",
    "CoGroup",
];

/// Write commands, with the exec the plugin table knows them by.
const WRITE_COMMANDS: &[(&str, &str)] = &[
    ("DataWritingCommandExec", "DataWritingCommandExec"),
    (
        "InsertIntoHadoopFsRelationCommand",
        "DataWritingCommandExec",
    ),
    ("InsertIntoHiveTable", "DataWritingCommandExec"),
    ("AppendDataExecV1", "AppendDataExecV1"),
    ("OverwriteByExpressionExecV1", "OverwriteByExpressionExecV1"),
    (
        "AtomicReplaceTableAsSelect",
        "AtomicReplaceTableAsSelectExec",
    ),
    ("AtomicCreateTableAsSelect", "AtomicCreateTableAsSelectExec"),
];

/// Write commands whose format the description does not tell (reported as `unknown`).
const FORMATLESS_WRITES: &[&str] = &[
    "AppendDataExecV1",
    "OverwriteByExpressionExecV1",
    "AtomicReplaceTableAsSelect",
    "AtomicCreateTableAsSelect",
];

/// Delta Lake write commands (exact node names).
const DELTA_WRITE_OPS: &[&str] = &[
    "Execute UpdateCommand",
    "Execute UpdateCommandEdge",
    "Execute DeleteCommand",
    "Execute DeleteCommandEdge",
    "Execute MergeIntoCommand",
    "Execute MergeIntoCommandEdge",
    "Execute OptimizeTableCommand",
    "Execute OptimizeTableCommandEdge",
    "Execute SaveIntoDataSourceCommand",
    "Execute WriteIntoDeltaCommand",
];

/// Delta Lake commands the plugin does not run.
const DELTA_OTHER_OPS: &[&str] = &[
    "Execute DescribeDeltaHistoryCommand",
    "Execute ShowPartitionsDeltaCommand",
];

/// Spark's write commands that write Delta when their description says so.
const DELTA_EXECS_FROM_SPARK: &[&str] = &[
    "AppendDataExecV1",
    "OverwriteByExpressionExecV1",
    "AtomicReplaceTableAsSelect",
    "AtomicCreateTableAsSelect",
];

/// Hive SerDe classes and the format they mean.
const HIVE_SERDES: &[(&str, &str)] = &[
    (
        "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
        "HiveText",
    ),
    (
        "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
        "HiveParquet",
    ),
    ("org.apache.hadoop.hive.serde2.avro.AvroSerDe", "HiveAvro"),
    ("org.apache.hadoop.hive.serde2.OpenCSVSerde", "HiveCSV"),
    ("org.apache.hadoop.hive.ql.io.orc.OrcSerde", "HiveORC"),
];

const UNKNOWN: &str = "unknown";
const JOIN_TYPE_REASON: &str = "Unsupported join type";
const SUBQUERY_REASON: &str = "Subquery is a collect execution pointing to an actual one";
const COMPRESSION_REASON: &str = "Unsupported compression";
const RANKING_FUNCTIONS: &[&str] = &["rank", "dense_rank", "row_number"];

static FIRST_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[ \t\n\x0B\x0C\r]*([0-9A-Za-z_]+)").expect("valid"));
static SMJ_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^SortMergeJoin(?:\([^\n\r\x{85}\x{2028}\x{2029}]+\))?$").expect("valid")
});
static CATALOG_TABLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r",[ \t\n\x0B\x0C\r]*CatalogTable\(").expect("valid"));
static SERDE_LIBRARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^Serde Library:[ \t\n\x0B\x0C\r]*([^\n\r\x{85}\x{2028}\x{2029}]*)$")
        .expect("valid")
});
static GPU_FILE_FORMAT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^[^\n\r\x{85}\x{2028}\x{2029}]*\.Gpu([a-zA-Z]+)FileFormat(@[^\n\r\x{85}\x{2028}\x{2029}]*)?$",
    )
    .expect("valid")
});

// ---------------------------------------------------------------------------------------------
// The parsed exec before the node-level checks

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpType {
    Exec,
    ReadExec,
    ReadRdd,
    ReadRddDeltaLog,
    ReadDeltaLog,
    WriteExec,
}

impl OpType {
    fn label(self) -> &'static str {
        match self {
            OpType::Exec => "Exec",
            OpType::ReadExec => "ReadExec",
            OpType::ReadRdd => "ReadRDD",
            OpType::ReadRddDeltaLog => "ReadRDDDeltaLog",
            OpType::ReadDeltaLog => "ReadDeltaLog",
            OpType::WriteExec => "WriteExec",
        }
    }
}

/// What a parser decided.
struct Exec {
    name: String,
    expr: String,
    op_type: OpType,
    supported: bool,
    /// A parser-set reason (wins over the generic ones).
    reason: Option<String>,
    /// Unsupported expressions with the plugin's reason ("" when none).
    unsupported: Vec<(String, String)>,
    expressions: Vec<String>,
    /// Whether the UDF and Dataset/RDD checks on the description apply.
    node_checks: bool,
    /// Partially supported types of a scan's read schema.
    partial_types: Vec<String>,
}

impl Exec {
    fn no_node(name: String, expr: String, op_type: OpType, supported: bool) -> Self {
        Exec {
            name,
            expr,
            op_type,
            supported,
            reason: None,
            unsupported: Vec::new(),
            expressions: Vec::new(),
            node_checks: false,
            partial_types: Vec::new(),
        }
    }

    fn with_node(name: String, supported: bool) -> Self {
        Exec {
            node_checks: true,
            ..Exec::no_node(name, String::new(), OpType::Exec, supported)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Java-flavoured string checks

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// Java's `s.matches(".*<needle>.*")`.
fn matches_containing(s: &str, needle: &str) -> bool {
    s.contains(needle) && !s.contains(is_line_terminator)
}

/// Java's `s.matches(".*<suffix>")`.
fn matches_ending(s: &str, suffix: &str) -> bool {
    s.ends_with(suffix) && !s.contains(is_line_terminator)
}

/// The name-based Dataset/RDD check (on the trimmed node name).
fn is_rdd_name(trimmed: &str) -> bool {
    RDD_NAMES.contains(&trimmed)
        || trimmed
            .strip_prefix("Scan ExistingRDD")
            .is_some_and(|rest| !rest.contains(is_line_terminator))
}

/// `desc` with the node name and the blanks after it removed from the front (the tool builds
/// `^<name>\s*` as a regex: a name with regex syntax is matched as such).
fn expr_string<'a>(node_name: &str, desc: &'a str) -> Parsed<std::borrow::Cow<'a, str>> {
    const SPECIAL: &[char] = &[
        '\\', '.', '+', '*', '?', '(', ')', '|', '[', ']', '{', '}', '^', '$',
    ];
    if !node_name.contains(SPECIAL) {
        return Ok(match desc.strip_prefix(node_name) {
            Some(rest) => rest
                .trim_start_matches([' ', '\t', '\n', '\x0B', '\x0C', '\r'])
                .into(),
            None => desc.into(),
        });
    }
    let re = regex::RegexBuilder::new(&format!(r"^{node_name}[ \t\n\x0B\x0C\r]*"))
        .size_limit(1 << 20)
        .build()
        .map_err(|_| ParseFailure)?;
    Ok(re.replace(desc, "").into_owned().into())
}

/// The unsupported expressions among `exprs` (first occurrences), with the plugin's reason.
fn unsupported_exprs(exprs: &[String]) -> Vec<(String, String)> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out = Vec::new();
    for e in exprs {
        if !seen.insert(e.as_str()) {
            continue;
        }
        if !PLUGIN.expr_supported(e) {
            out.push((e.clone(), PLUGIN.reason(e).unwrap_or("").to_string()));
        }
    }
    out
}

fn distinct(exprs: Vec<String>) -> Vec<String> {
    let mut seen = HashSet::new();
    exprs
        .into_iter()
        .filter(|e| seen.insert(e.clone()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Parsers

/// A generic exec: supported when the plugin runs `key`, `extra_ok` holds and no expression is
/// unsupported; an unsupported exec takes the plugin's note for `key` unless `reason` is set.
fn generic(
    node_name: &str,
    key: &str,
    exprs: Vec<String>,
    extra_ok: bool,
    reason: Option<&str>,
) -> Exec {
    let unsupported = unsupported_exprs(&exprs);
    let supported = PLUGIN.exec_supported(key) && extra_ok && unsupported.is_empty();
    let reason = match reason {
        Some(r) => Some(r.to_string()),
        None if !supported => PLUGIN.reason(key).map(str::to_string),
        None => None,
    };
    Exec {
        reason,
        unsupported,
        expressions: exprs,
        ..Exec::with_node(java_trim(node_name).to_string(), supported)
    }
}

/// An exec whose expressions come from `parse(<description without the node name>)`.
fn with_exprs(
    node_name: &str,
    desc: &str,
    key: &str,
    parse: impl Fn(&str) -> Vec<String>,
) -> Parsed<Exec> {
    let s = expr_string(node_name, desc)?;
    Ok(generic(node_name, key, parse(&s), true, None))
}

fn hash_join(node_name: &str, expr: &str, key: &str) -> Parsed<Exec> {
    let (exprs, ok) = plan_parse::equi_join(expr)?;
    Ok(generic(
        node_name,
        key,
        exprs,
        ok,
        (!ok).then_some(JOIN_TYPE_REASON),
    ))
}

fn window_group_limit(node_name: &str, desc: &str) -> Parsed<Exec> {
    let s = expr_string(node_name, desc)?;
    let exprs = plan_parse::window_group_limit(&s);
    let ranking_ok = exprs.len() == 1 && RANKING_FUNCTIONS.contains(&exprs[0].as_str());
    let mut e = generic(node_name, "WindowGroupLimitExec", exprs, ranking_ok, None);
    let mut extra = Vec::new();
    for f in distinct(e.expressions.clone()) {
        if !RANKING_FUNCTIONS.contains(&f.as_str()) {
            let reason = format!("Ranking function {f} is not supported in WindowGroupLimitExec");
            extra.push((f, reason));
        }
    }
    if !extra.is_empty() {
        e.supported = false;
        e.unsupported.extend(extra);
    }
    Ok(e)
}

/// The value after `tag` up to `", "` or `" RuntimeFilters: ["`.
fn field_after<'a>(desc: &'a str, tag: &str) -> Option<&'a str> {
    let i = desc.find(tag)?;
    let rest = &desc[i + tag.len()..];
    let end = match (rest.find(", "), rest.find(" RuntimeFilters: [")) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => rest.len(),
    };
    Some(&rest[..end])
}

/// The Hive format a description's SerDe class names, or `unknown`.
fn hive_format(desc: &str) -> &'static str {
    HIVE_SERDES
        .iter()
        .find(|(class, _)| desc.contains(class))
        .map(|(_, f)| *f)
        .unwrap_or(UNKNOWN)
}

/// (schema, format) of a non-Hive scan.
fn read_meta(node_name: &str, desc: &str) -> (String, String) {
    let schema = field_after(desc, "ReadSchema: ")
        .map(|s| {
            let s = s.strip_prefix("struct<").unwrap_or(s);
            s.strip_suffix('>').unwrap_or(s).to_string()
        })
        .unwrap_or_default();
    let format = match field_after(desc, "Format: ") {
        Some(f) if node_name.starts_with("Gpu") && !f.starts_with("gpu") => format!("gpu{f}"),
        Some(f) => f.to_string(),
        None if node_name.contains("JDBCRelation") => "JDBC".to_string(),
        None => UNKNOWN.to_string(),
    };
    (schema, format)
}

fn scan(
    node_name: &str,
    desc: &str,
    delta: bool,
    scores: &HashMap<String, f64>,
    batch: bool,
) -> Exec {
    let trimmed = java_trim(node_name);
    if !batch && is_rdd_name(trimmed) {
        let (name, op) = match trimmed.find("ExistingRDD") {
            Some(i) => {
                let delta_log = delta
                    && (node_name.contains("Delta Table State") || desc.contains("/_delta_log"));
                let op = if delta_log {
                    OpType::ReadRddDeltaLog
                } else {
                    OpType::ReadRdd
                };
                (&trimmed[..i + "ExistingRDD".len()], op)
            }
            None => (trimmed, OpType::ReadRdd),
        };
        return Exec::no_node(name.to_string(), String::new(), op, false);
    }
    let hive = !batch && node_name.to_lowercase().starts_with("scan hive");
    let key = if batch {
        "BatchScanExec"
    } else if hive {
        "HiveTableScanExec"
    } else {
        "FileSourceScanExec"
    };
    let from_table = batch
        && !["Location", "Format", "ReadSchema"]
            .iter()
            .any(|t| desc.contains(t));
    let (schema, format) = if hive {
        (String::new(), hive_format(desc).to_string())
    } else if from_table {
        // an Iceberg table in an Iceberg app; Iceberg is not modelled
        (String::new(), UNKNOWN.to_string())
    } else {
        read_meta(node_name, desc)
    };
    let token = if batch {
        "BatchScan"
    } else {
        FIRST_WORD
            .captures(trimmed)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str())
            .unwrap_or(key)
    };
    let delta_log =
        !batch && delta && (desc.contains("/_delta_log") || desc.contains("DeltaLogFileIndex"));
    let supported = PLUGIN.exec_supported(key)
        && !delta_log
        && (rapids_plugin::score(scores, key) * PLUGIN.read_score(&format, &schema)).max(1.0) > 1.0;
    let format_lc = format.to_lowercase();
    let expr = if format == UNKNOWN {
        desc.to_string()
    } else {
        format!("Format: {format_lc}")
    };
    let op = if delta_log {
        OpType::ReadDeltaLog
    } else {
        OpType::ReadExec
    };
    let partial_types = if supported {
        PLUGIN.partial_read_types(&format, &schema)
    } else {
        Vec::new()
    };
    Exec {
        partial_types,
        ..Exec::no_node(format!("{token} {format_lc}"), expr, op, supported)
    }
}

/// Whether a write command writes Delta Lake.
fn is_delta_write(node_name: &str, desc: &str) -> bool {
    if DELTA_WRITE_OPS.contains(&node_name) {
        true
    } else if DELTA_EXECS_FROM_SPARK.contains(&node_name) {
        if node_name.contains("AppendDataExecV1")
            || node_name.contains("OverwriteByExpressionExecV1")
        {
            desc.contains("DeltaTableV2")
        } else {
            desc.contains("delta")
        }
    } else {
        false
    }
}

/// The format of an `InsertIntoHadoopFsRelationCommand`-like description: the third argument,
/// or the one after a bracketed partition list.
fn write_format_string(desc: &str) -> Parsed<String> {
    let parts = java_split_limit(desc, ",", 3);
    let rest = java_trim(parts.last().copied().unwrap_or(""));
    let arg = if rest.starts_with('[') {
        let pieces: Vec<&str> = plan_parse::split_after(rest, &["],"])
            .into_iter()
            .map(java_trim)
            .collect();
        *pieces.get(1).ok_or(ParseFailure)?
    } else {
        rest
    };
    java_split(arg, ",")
        .first()
        .map(|s| s.to_string())
        .ok_or(ParseFailure)
}

/// Whether the compression of an `InsertIntoHadoopFsRelationCommand` is one the plugin writes.
fn compression_ok(desc: &str) -> Parsed<bool> {
    let comps = plan_parse::top_level_components(desc);
    let (data_format, format_index) = if CATALOG_TABLE.is_match(desc) {
        let serde = comps
            .iter()
            .find(|c| c.starts_with("CatalogTable("))
            .and_then(|c| SERDE_LIBRARY.captures(c))
            .map(|c| java_trim(&c[1]).to_string());
        match serde.and_then(|s| HIVE_SERDES.iter().find(|(class, _)| *class == s)) {
            Some((_, f)) => {
                let actual = f
                    .strip_prefix("Hive")
                    .filter(|a| matches!(*a, "Parquet" | "ORC"));
                let actual = actual.unwrap_or(f);
                let idx = comps.iter().rposition(|c| c == actual).unwrap_or(0);
                (f.to_string(), idx)
            }
            None => (UNKNOWN.to_string(), 0),
        }
    } else {
        let mut idx = 2;
        if comps.get(2).is_some_and(|c| c.starts_with('[')) {
            idx = 3;
        }
        let raw = comps.get(idx).cloned().unwrap_or_default();
        let exec = comps
            .first()
            .map(|c| {
                let words: Vec<&str> = plan_parse::java_split_re(c, &WHITESPACE);
                match words.as_slice() {
                    [pref, cmd, ..] if pref.starts_with("Execute") => cmd.to_string(),
                    [cmd, ..] => cmd.to_string(),
                    [] => UNKNOWN.to_string(),
                }
            })
            .unwrap_or_else(|| UNKNOWN.to_string());
        let format = if exec.starts_with("Gpu") {
            GPU_FILE_FORMAT
                .captures(&raw)
                .map(|c| c[1].to_string())
                .unwrap_or(raw)
        } else {
            raw
        };
        (format, idx)
    };
    let mut options: Vec<(String, String)> = Vec::new();
    if let Some(opts) = comps.get(format_index + 1).filter(|o| o.starts_with('[')) {
        // Java's substring(1, length - 1); too short throws
        let mut chars = opts.chars();
        chars.next();
        if chars.next_back().is_none() {
            return Err(ParseFailure);
        }
        let inner = chars.as_str();
        for entry in java_split(java_trim(inner), ",") {
            let kv = java_split_limit(entry, "=", 2);
            if let [k, v] = kv.as_slice() {
                let (k, v) = (java_trim(k).to_string(), java_trim(v).to_string());
                match options.iter_mut().find(|(key, _)| *key == k) {
                    Some(slot) => slot.1 = v,
                    None => options.push((k, v)),
                }
            }
        }
    }
    let format_key = format!(
        "{}.compress",
        data_format.to_lowercase().replace("hive", "")
    );
    let codec = options
        .iter()
        .find(|(k, _)| k == "compression" || *k == format_key)
        .map(|(_, v)| {
            if v.is_empty() {
                UNKNOWN.to_string()
            } else {
                match v.to_lowercase().as_str() {
                    "none" => "uncompressed".to_string(),
                    lc => lc.to_string(),
                }
            }
        })
        .unwrap_or_else(|| "uncompressed".to_string());
    Ok(match data_format.as_str() {
        "Parquet" | "HiveParquet" => {
            matches!(
                codec.as_str(),
                "unknown" | "uncompressed" | "zstd" | "snappy"
            )
        }
        "ORC" | "HiveORC" => {
            matches!(
                codec.as_str(),
                "unknown" | "uncompressed" | "zstd" | "snappy" | "zlib"
            )
        }
        _ => true,
    })
}

static WHITESPACE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[ \t\n\x0B\x0C\r]+").expect("valid"));

fn write(node_name: &str, desc: &str) -> Parsed<Exec> {
    let trimmed = java_trim(node_name);
    if is_delta_write(node_name, desc) {
        let physical = WRITE_COMMANDS
            .iter()
            .find(|(cmd, _)| *cmd == trimmed)
            .map(|(_, p)| *p)
            .unwrap_or("DataWritingCommandExec");
        let supported = PLUGIN.exec_supported(physical) && PLUGIN.write_supported("Delta");
        return Ok(Exec::no_node(
            trimmed.to_string(),
            "Format: Delta".to_string(),
            OpType::WriteExec,
            supported,
        ));
    }
    let (cmd, _) = WRITE_COMMANDS
        .iter()
        .find(|(cmd, _)| trimmed.contains(cmd))
        .ok_or(ParseFailure)?;
    let format = if FORMATLESS_WRITES.contains(cmd) {
        UNKNOWN.to_string()
    } else if node_name.contains("InsertIntoHiveTable") {
        hive_format(desc).to_string()
    } else {
        write_format_string(desc)?
    };
    let format_lc = java_trim(&format.to_lowercase()).to_string();
    let mut reason = None;
    let supported = if PLUGIN.write_supported(&format) {
        // only InsertIntoHadoopFsRelationCommand descriptions show the options; Hive inserts
        // report an unknown codec, and the other commands none
        let ok = *cmd != "InsertIntoHadoopFsRelationCommand" || compression_ok(desc)?;
        if !ok {
            reason = Some(COMPRESSION_REASON.to_string());
        }
        ok
    } else {
        false
    };
    Ok(Exec {
        reason,
        ..Exec::no_node(
            format!("{trimmed} {format_lc}"),
            format!("Format: {format_lc}"),
            OpType::WriteExec,
            supported,
        )
    })
}

/// Parses one (non-cluster) node as the tool's plan parser routes it.
fn parse_node(
    node_name: &str,
    desc: &str,
    delta: bool,
    scores: &HashMap<String, f64>,
) -> Parsed<Exec> {
    let nn = node_name.strip_suffix('$').unwrap_or(node_name);
    let trimmed_key = || format!("{}Exec", java_trim(node_name));
    let name_key = || format!("{node_name}Exec");
    Ok(match nn {
        n if GENERIC_EXECS.contains(&n) => generic(node_name, &name_key(), Vec::new(), true, None),
        n if n.contains("BatchScan") => scan(node_name, desc, delta, scores, true),
        "BroadcastExchange" => generic(node_name, &trimmed_key(), Vec::new(), true, None),
        "BroadcastHashJoin" => hash_join(
            node_name,
            &expr_string(node_name, desc)?,
            "BroadcastHashJoinExec",
        )?,
        "BroadcastNestedLoopJoin" => {
            let s = expr_string(node_name, desc)?;
            let (exprs, ok) = plan_parse::nested_loop_join(&s)?;
            generic(
                node_name,
                "BroadcastNestedLoopJoinExec",
                exprs,
                ok,
                (!ok).then_some(JOIN_TYPE_REASON),
            )
        }
        "Exchange" => generic(node_name, "ShuffleExchangeExec", Vec::new(), true, None),
        "Expand" | "Generate" | "Project" => {
            with_exprs(node_name, desc, &name_key(), plan_parse::project)?
        }
        "Filter" => {
            let s = expr_string(node_name, desc)?;
            generic(
                node_name,
                &name_key(),
                plan_parse::conditional(&s)?,
                true,
                None,
            )
        }
        "HashAggregate" | "ObjectHashAggregate" | "SortAggregate" => {
            with_exprs(node_name, desc, &name_key(), plan_parse::aggregate)?
        }
        "ShuffledHashJoin" => hash_join(
            node_name,
            &expr_string(node_name, desc)?,
            "ShuffledHashJoinExec",
        )?,
        "Sort" => with_exprs(node_name, desc, &name_key(), plan_parse::sort)?,
        n if (n.starts_with("Scan") || n.starts_with("NativeScan"))
            && !n.starts_with("Scan OneRowRelation") =>
        {
            scan(node_name, desc, delta, scores, false)
        }
        n if SMJ_NAME.is_match(n) => {
            let expr = desc.find(' ').map(|i| &desc[i + 1..]).unwrap_or(desc);
            let mut e = hash_join(node_name, expr, "SortMergeJoinExec")?;
            e.name = "SortMergeJoin".to_string();
            e
        }
        "SubqueryBroadcast" => generic(node_name, &trimmed_key(), Vec::new(), true, None),
        "Subquery" => generic(
            node_name,
            &name_key(),
            Vec::new(),
            false,
            Some(SUBQUERY_REASON),
        ),
        "TakeOrderedAndProject" => {
            with_exprs(node_name, desc, &name_key(), plan_parse::take_ordered)?
        }
        "Window" => with_exprs(node_name, desc, &name_key(), plan_parse::window)?,
        "WindowGroupLimit" => window_group_limit(node_name, desc)?,
        n if WRITE_COMMANDS.iter().any(|(c, _)| n.contains(c))
            || DELTA_WRITE_OPS.contains(&n)
            || DELTA_EXECS_FROM_SPARK.contains(&n) =>
        {
            write(node_name, desc)?
        }
        n if java_trim(n) == "WriteFiles" => Exec::no_node(
            java_trim(node_name).to_string(),
            String::new(),
            OpType::WriteExec,
            true,
        ),
        n if DELTA_OTHER_OPS.contains(&n) => {
            Exec::no_node(node_name.to_string(), String::new(), OpType::Exec, false)
        }
        n => Exec::with_node(n.to_string(), n == "ReusedExchange"),
    })
}

/// Classifies with the given score table.
fn classify_with(
    node_name: &str,
    desc: &str,
    delta: bool,
    scores: &HashMap<String, f64>,
) -> OperatorInfo {
    let graph_name = node_name.strip_prefix("Gpu").unwrap_or(node_name);
    let is_cluster = graph_name.starts_with("WholeStageCodegen");
    let exec = if is_cluster {
        let name = FIRST_WORD
            .captures(node_name)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str().to_string())
            .unwrap_or_default();
        Exec {
            expr: node_name.to_string(),
            ..Exec::with_node(name, false)
        }
    } else {
        parse_node(node_name, desc, delta, scores).unwrap_or_else(|ParseFailure| {
            let nn = node_name.strip_suffix('$').unwrap_or(node_name);
            Exec::with_node(nn.to_string(), false)
        })
    };
    finish(exec, node_name, desc, is_cluster)
}

/// Applies the node-level checks (UDF, Dataset/RDD), the REMOVE and IGNORE sets and the
/// reason precedence.
fn finish(mut e: Exec, node_name: &str, desc: &str, is_cluster: bool) -> OperatorInfo {
    let (udf, dataset) = if e.node_checks {
        let udf = matches_containing(desc, "UDF");
        let name_rdd = is_rdd_name(java_trim(node_name));
        let desc_rdd =
            !name_rdd && (matches_containing(desc, "$Lambda$") || matches_ending(desc, ".apply"));
        if desc_rdd {
            e.unsupported.clear();
        }
        (udf, name_rdd || desc_rdd)
    } else {
        (false, false)
    };
    let final_dataset = dataset || e.op_type == OpType::ReadRdd;
    let should_ignore = udf
        || final_dataset
        || IGNORE_EXECS.contains(&e.name.as_str())
        || matches!(e.op_type, OpType::ReadDeltaLog | OpType::ReadRddDeltaLog);
    let should_remove = REMOVE_EXECS.contains(&e.name.as_str());
    let op_type = if udf {
        "UDF"
    } else if dataset {
        "DataSet"
    } else {
        e.op_type.label()
    };
    let supported = e.supported && !udf && !final_dataset;
    let (details, unsupported_expressions) = if supported || is_cluster {
        (None, Vec::new())
    } else {
        let reason = e.reason.take().unwrap_or_else(|| {
            if udf {
                "Contains UDF"
            } else if final_dataset {
                if e.unsupported.is_empty() {
                    "Is Dataset or RDD"
                } else {
                    "Contains Dataset or RDD"
                }
            } else if !e.unsupported.is_empty() {
                "Contains unsupported expr"
            } else {
                match e.op_type {
                    OpType::ReadExec | OpType::WriteExec => "Unsupported IO format",
                    OpType::ReadDeltaLog | OpType::ReadRddDeltaLog => {
                        "Delta Lake metadata scans are not supported"
                    }
                    _ => "Unsupported",
                }
            }
            .to_string()
        });
        let known = match reason.as_str() {
            "Contains UDF" => "Is UDF",
            "Contains Dataset or RDD" => "Is Dataset or RDD",
            "Unsupported IO format" => "Unsupported IO format",
            _ => "Unsupported",
        };
        let exprs = std::mem::take(&mut e.unsupported)
            .into_iter()
            .map(|(n, r)| {
                let r = if r.is_empty() { known.to_string() } else { r };
                (n, r)
            })
            .collect();
        (Some(reason), exprs)
    };
    OperatorInfo {
        exec_name: e.name,
        expression_name: e.expr,
        op_type,
        supported,
        should_remove,
        should_ignore,
        details,
        expressions: distinct(e.expressions),
        unsupported_expressions,
        partial_types: if supported {
            e.partial_types
        } else {
            Vec::new()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Classifies (no Delta) and checks exec name, supported, action and details.
    #[track_caller]
    fn check(
        name: &str,
        desc: &str,
        exec: &str,
        supported: bool,
        action: &str,
        details: Option<&str>,
    ) -> OperatorInfo {
        check_delta(name, desc, false, exec, supported, action, details)
    }

    #[track_caller]
    fn check_delta(
        name: &str,
        desc: &str,
        delta: bool,
        exec: &str,
        supported: bool,
        action: &str,
        details: Option<&str>,
    ) -> OperatorInfo {
        let i = classify(name, desc, delta);
        assert_eq!(
            (
                i.exec_name.as_str(),
                i.supported,
                i.action(),
                i.details.as_deref()
            ),
            (exec, supported, action, details),
            "{name:?} {desc:?}: {i:?}"
        );
        i
    }

    fn pairs(xs: &[(&str, &str)]) -> Vec<(String, String)> {
        xs.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn scans_report_partially_supported_types() {
        let desc = "FileScan parquet [o_orderkey#0L,o_orderdate#1,o_ts#2] Batched: true, \
            DataFilters: [], Format: Parquet, Location: InMemoryFileIndex(1 paths)[file:/t], \
            PartitionFilters: [], PushedFilters: [], ReadSchema: struct<o_orderkey:bigint,o_ts:timestamp>";
        let i = classify("Scan parquet", desc, false);
        assert!(i.supported);
        assert_eq!(i.partial_types, vec!["timestamp".to_string()]);
        let plain = desc.replace(",o_ts:timestamp", "");
        let i = classify("Scan parquet", &plain, false);
        assert!(i.supported && i.partial_types.is_empty());
        // unsupported scans carry no partial types
        let text = classify("Scan text", &desc.replace("Parquet", "Text"), false);
        assert!(!text.supported && text.partial_types.is_empty());
    }

    // §6, one test per row of the special-case table

    #[test]
    fn removed_wrappers() {
        for (name, desc) in [
            ("AdaptiveSparkPlan", "AdaptiveSparkPlan isFinalPlan=true"),
            ("ColumnarToRow", "ColumnarToRow"),
            (
                "GenerateBloomFilter",
                "GenerateBloomFilter xxhash64(c#1, 42), 100000",
            ),
            ("ConvertToNative", "ConvertToNative"),
        ] {
            let i = check(name, desc, name, false, "IgnoreNoPerf", Some("Unsupported"));
            assert!(i.should_remove && !i.should_ignore && i.op_type == "Exec");
        }
        // Spark 4's ResultQueryStage is removed and ignored
        let i = check(
            "ResultQueryStage",
            "ResultQueryStage 7",
            "ResultQueryStage",
            false,
            "IgnoreNoPerf",
            Some("Unsupported"),
        );
        assert!(i.should_remove && i.should_ignore);
    }

    #[test]
    fn reused_exchange_and_subquery() {
        let i = check(
            "ReusedExchange",
            "ReusedExchange [s_store_sk#898], Exchange hashpartitioning(s_store_sk#898, 200), ENSURE_REQUIREMENTS, [plan_id=12]",
            "ReusedExchange",
            true,
            "NONE",
            None,
        );
        assert!(i.should_remove);
        let i = check(
            "Subquery",
            "Subquery subquery#850, [id=#164]",
            "Subquery",
            false,
            "IgnoreNoPerf",
            Some("Subquery is a collect execution pointing to an actual one"),
        );
        assert!(i.should_remove && i.should_ignore);
        check(
            "SubqueryBroadcast",
            "SubqueryBroadcast dynamicpruning#1, 0, [d_date_sk#2], [id=#3]",
            "SubqueryBroadcast",
            true,
            "NONE",
            None,
        );
    }

    #[test]
    fn whole_stage_codegen_cluster() {
        let i = classify("WholeStageCodegen (6)", "WholeStageCodegen (6)", false);
        assert_eq!(i.exec_name, "WholeStageCodegen");
        assert_eq!(i.expression_name, "WholeStageCodegen (6)");
        assert!(!i.supported && !i.should_remove && !i.should_ignore);
        assert_eq!(i.details, None);
        assert_eq!(i.op_type, "Exec");
    }

    #[test]
    fn collect_limit() {
        let i = check(
            "CollectLimit",
            "CollectLimit 1000001",
            "CollectLimit",
            false,
            "IgnorePerf",
            Some(
                "This is disabled by default because Collect Limit replacement can be slower on \
                 the GPU; if huge number of rows in a batch it could help by limiting the number \
                 of rows transferred from GPU to CPU",
            ),
        );
        assert!(i.should_ignore && !i.should_remove);
    }

    #[test]
    fn ignored_commands() {
        for (name, desc) in [
            (
                "LocalTableScan",
                "LocalTableScan [Product#10, Amount#11, Country#12]",
            ),
            (
                "CommandResult",
                "CommandResult [database#6, tableName#7, isTemporary#8]",
            ),
            ("Scan OneRowRelation", "Scan OneRowRelation[]"),
            ("Execute CreateViewCommand", "Execute CreateViewCommand"),
            (
                "Execute CreateDataSourceTableAsSelectCommand",
                "Execute CreateDataSourceTableAsSelectCommand `default`.`final_results`, Overwrite, [col1, sum_col2, id, desc]",
            ),
            (
                "Execute CreateFunctionCommand",
                "Execute CreateFunctionCommand",
            ),
            ("Execute AddJarsCommand", "Execute AddJarsCommand"),
            (
                "Execute SetCommand",
                "Execute SetCommand (spark.sql.shuffle.partitions,Some(8))",
            ),
        ] {
            let i = check(name, desc, name, false, "IgnorePerf", Some("Unsupported"));
            assert!(i.should_ignore && !i.should_remove, "{name}");
        }
    }

    #[test]
    fn unknown_execs_triage() {
        for (name, desc) in [
            ("Execute SetCatalogCommand", "Execute SetCatalogCommand"),
            (
                "Execute SaveAsV1TableCommand",
                "Execute SaveAsV1TableCommand",
            ),
            (
                "ShowTables",
                "ShowTables [database#6, tableName#7, isTemporary#8], com.databricks.sql.managedcatalog.UnityCatalogV2Proxy@7a03160a, [default]",
            ),
            (
                "ShowNamespaces",
                "ShowNamespaces [databaseName#4], com.databricks.sql.managedcatalog.UnityCatalogV2Proxy@61e451fb",
            ),
            (
                "FlatMapCoGroupsInPandas",
                "FlatMapCoGroupsInPandas [k#1], [k#5], merge(k#1, v#2, k#5, w#6)#9, [k#10, v#11, w#12]",
            ),
            ("SomethingNew", ""),
        ] {
            let i = check(name, desc, name, false, "Triage", Some("Unsupported"));
            assert!(!i.should_ignore && !i.should_remove, "{name}");
        }
        // a trailing `$` is dropped from the name
        check(
            "Whatever$",
            "Whatever",
            "Whatever",
            false,
            "Triage",
            Some("Unsupported"),
        );
    }

    #[test]
    fn datasets_and_rdds() {
        for (name, desc) in [
            (
                "SerializeFromObject",
                "SerializeFromObject [input[0, int, false] AS value#2]",
            ),
            (
                "DeserializeToObject",
                "DeserializeToObject newInstance(class com.nvidia.spark.rapids.tool.profiling.RapidsFriends), obj#30: com.nvidia.spark.rapids.tool.profiling.RapidsFriends",
            ),
            (
                "MapElements",
                "MapElements com.nvidia.spark.rapids.tool.profiling.QualificationInfoUtils$$$Lambda$1505/1108374296@6723cce7, obj#31: scala.Tuple2",
            ),
            ("MapPartitions", "MapPartitions <function1>, obj#5: int"),
            (
                "AppendColumns",
                "AppendColumns <function1>, [input[0, int, false] AS value#7]",
            ),
            (
                "MapGroups",
                "MapGroups <function2>, value#7: int, obj#10: int",
            ),
            ("CoGroup", "CoGroup <function3>, value#1: int, obj#9: int"),
        ] {
            let i = check(
                name,
                desc,
                name,
                false,
                "IgnorePerf",
                Some("Is Dataset or RDD"),
            );
            assert_eq!(i.op_type, "DataSet", "{name}");
            assert!(i.should_ignore);
        }
        // described by a lambda, or ending `.apply`
        let i = check(
            "DropTable",
            "DropTable V2SessionCatalog(spark_catalog), default.etl_orders_summary, true, false, org.apache.spark.sql.execution.datasources.v2.DataSourceV2Strategy$$Lambda$7211/0x00007f0b9dc4f980@2443a788",
            "DropTable",
            false,
            "IgnorePerf",
            Some("Is Dataset or RDD"),
        );
        assert_eq!(i.op_type, "DataSet");
        check(
            "Filter",
            "Filter com.nvidia.spark.rapids.tool.profiling.QualificationInfoUtils$$$Lambda$1503/443638755@31f31b20.apply",
            "Filter",
            false,
            "IgnorePerf",
            Some("Is Dataset or RDD"),
        );
        check(
            "Filter",
            "Filter $line24.$read$$iw$$iw.apply",
            "Filter",
            false,
            "IgnorePerf",
            Some("Is Dataset or RDD"),
        );
        // Java's `matches` stops at a line break
        check(
            "Filter",
            "Filter $line24.$read$$iw$$iw.apply\nmore",
            "Filter",
            true,
            "NONE",
            None,
        );
    }

    #[test]
    fn existing_rdd_scans() {
        let i = check(
            "Scan ExistingRDD",
            "Scan ExistingRDD[name#2,booksIntersted#3]",
            "Scan ExistingRDD",
            false,
            "IgnorePerf",
            Some("Is Dataset or RDD"),
        );
        assert_eq!(i.op_type, "ReadRDD");
        assert_eq!(i.expression_name, "");
        let name = "Scan ExistingRDD Delta Table State #9 - abfss://containerforhao@storageforhao.dfs.core.windows.net/sampledata/people_large/_delta_log";
        let desc = format!(
            "{name}[txn#395,add#396,remove#397,metaData#398,protocol#399,cdc#400,commitInfo#401]"
        );
        let i = check_delta(
            name,
            &desc,
            true,
            "Scan ExistingRDD",
            false,
            "IgnorePerf",
            Some("Delta Lake metadata scans are not supported"),
        );
        assert_eq!(i.op_type, "ReadRDDDeltaLog");
        assert!(i.should_ignore);
        // without Delta Lake it is a plain RDD scan
        let i = check(
            name,
            &desc,
            "Scan ExistingRDD",
            false,
            "IgnorePerf",
            Some("Is Dataset or RDD"),
        );
        assert_eq!(i.op_type, "ReadRDD");
    }

    #[test]
    fn udfs() {
        for (name, desc) in [
            (
                "ArrowEvalPython",
                "ArrowEvalPython [net_price(l_extendedprice#1328, l_discount#1329)#1384], [pythonUDF0#1391], 200",
            ),
            (
                "BatchEvalPython",
                "BatchEvalPython [multiply_by_two(value#1)#4], [pythonUDF0#13]",
            ),
            (
                "Project",
                "Project [l_returnflag#1331, l_linestatus#1332, pythonUDF0#1391 AS net#1385]",
            ),
        ] {
            let i = check(name, desc, name, false, "IgnorePerf", Some("Contains UDF"));
            assert_eq!(i.op_type, "UDF");
        }
        let i = check(
            "Project",
            "Project [id#0, value#1, HiveGenericUDF#com.udf.IntegerMultiplyBy2UDF(value#1) AS doubled#4L]",
            "Project",
            false,
            "IgnorePerf",
            Some("Contains UDF"),
        );
        assert_eq!(
            i.unsupported_expressions,
            pairs(&[("IntegerMultiplyBy2UDF", "Is UDF")])
        );
        let i = check(
            "Project",
            "Project [cast(age#9L as string) AS age#47, lname#10, name#11, if (isnull(cast(age#9L as int))) null else UDF(knownnotnull(cast(age#9L as int))) AS ageCategory#50]",
            "Project",
            false,
            "IgnorePerf",
            Some("Contains UDF"),
        );
        assert_eq!(i.unsupported_expressions, pairs(&[("UDF", "Is UDF")]));
        assert_eq!(i.expressions, ["isnull", "UDF", "knownnotnull"]);
        // a pandas map without "UDF" in its description is supported
        check(
            "MapInPandas",
            "MapInPandas mapper(o_orderpriority#3889, o_orderkey#3884L, o_totalprice#3941)#3946, [o_orderpriority#3947, o_orderkey#3948L, o_totalprice#3949], false",
            "MapInPandas",
            true,
            "NONE",
            None,
        );
    }

    #[test]
    fn window_in_pandas() {
        // the plugin's note wins over "Contains UDF"
        let i = check(
            "WindowInPandas",
            "WindowInPandas [pythonUDF0#20 windowspecdefinition(id#1, specifiedwindowframe(RowFrame, unboundedpreceding$(), unboundedfollowing$())) AS m#9], [id#1]",
            "WindowInPandas",
            false,
            "IgnorePerf",
            Some("This is disabled by default because it only supports row based frame for now"),
        );
        assert_eq!(i.op_type, "UDF");
        check(
            "WindowInPandas",
            "WindowInPandas [mean(v#2) windowspecdefinition(id#1, specifiedwindowframe(RowFrame, unboundedpreceding$(), unboundedfollowing$())) AS m#9], [id#1]",
            "WindowInPandas",
            false,
            "Triage",
            Some("This is disabled by default because it only supports row based frame for now"),
        );
    }

    #[test]
    fn scans() {
        let i = check(
            "Scan parquet ",
            "FileScan parquet [c_custkey#25L,c_mktsegment#31] Batched: true, DataFilters: [isnotnull(c_mktsegment#31), (c_mktsegment#31 = BUILDING), isnotnull(c_custkey#25L)], Format: Parquet, Location: InMemoryFileIndex(1 paths)[file:/home/sparkqa/tpch-sf0.1/customer.parquet], PartitionFilters: [], PushedFilters: [IsNotNull(c_mktsegment), EqualTo(c_mktsegment,BUILDING), IsNotNull(c_custkey)], ReadSchema: struct<c_custkey:bigint,c_mktsegment:string>",
            "Scan parquet",
            true,
            "NONE",
            None,
        );
        assert_eq!(i.expression_name, "Format: parquet");
        assert_eq!(i.op_type, "ReadExec");
        assert!(i.expressions.is_empty());
        // a table name in the node name
        check(
            "Scan parquet spark_catalog.default.etl_orders_summary",
            "FileScan parquet spark_catalog.default.etl_orders_summary[] Batched: true, DataFilters: [], Format: Parquet, Location: InMemoryFileIndex(1 paths)[file:/w/etl_orders_summary], PartitionFilters: [], PushedFilters: [], ReadSchema: struct<>",
            "Scan parquet",
            true,
            "NONE",
            None,
        );
        for (name, desc, exec) in [
            (
                "Scan csv ",
                "FileScan csv [name#12,id#13,gender#14,salary#15] Batched: false, Format: CSV, Location: InMemoryFileIndex[file:/home/nartal/simple1.csv], PartitionFilters: [], PushedFilters: [IsNotNull(salary)], ReadSchema: struct<name:string,id:string,gender:string,salary:string>",
                "Scan csv",
            ),
            (
                "Scan json ",
                "FileScan json [age#7L,lname#8,name#9] Batched: false, DataFilters: [], Format: JSON, Location: InMemoryFileIndex[file:/home/user1/json-reader/people.json], PartitionFilters: [], PushedFilters: [], ReadSchema: struct<age:bigint,lname:string,name:string>",
                "Scan json",
            ),
            (
                "Scan orc ",
                "FileScan orc [a#1L,b#2] Batched: false, DataFilters: [], Format: ORC, Location: InMemoryFileIndex[file:/x], PartitionFilters: [], PushedFilters: [], ReadSchema: struct<a:bigint,b:string>",
                "Scan orc",
            ),
        ] {
            check(name, desc, exec, true, "NONE", None);
        }
        // text has no read row: unsupported IO format
        let i = check(
            "Scan text ",
            "FileScan text [value#0] Batched: false, DataFilters: [(length(trim(value#0, None)) > 0)], Format: Text, Location: InMemoryFileIndex[file:/home/user2/media_touchpoints.tsv], PartitionFilters: [], PushedFilters: [], ReadSchema: struct<value:string>",
            "Scan text",
            false,
            "Triage",
            Some("Unsupported IO format"),
        );
        assert_eq!(i.op_type, "ReadExec");
        // no format: the description is the expression name
        let i = check(
            "Scan",
            "Scan[obj#7]",
            "Scan unknown",
            false,
            "Triage",
            Some("Unsupported IO format"),
        );
        assert_eq!(i.expression_name, "Scan[obj#7]");
        // a type the format does not read
        check(
            "Scan csv ",
            "FileScan csv [b#1] Batched: false, Format: CSV, Location: InMemoryFileIndex[file:/x], ReadSchema: struct<b:binary>",
            "Scan csv",
            false,
            "Triage",
            Some("Unsupported IO format"),
        );
        // JDBC and Hive
        check(
            "Scan JDBCRelation(people) [numPartitions=1]",
            "Scan JDBCRelation(people) [numPartitions=1] [id#0,name#1] PushedFilters: [], ReadSchema: struct<id:int,name:string>",
            "Scan jdbc",
            false,
            "Triage",
            Some("Unsupported IO format"),
        );
        let i = check(
            "Scan hive default.t",
            "Scan hive default.t [a#1], HiveTableRelation [`default`.`t`, org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe, Data Cols: [a#1], Partition Cols: []]",
            "Scan hiveparquet",
            true,
            "NONE",
            None,
        );
        assert_eq!(i.expression_name, "Format: hiveparquet");
        check(
            "Scan hive default.t",
            "Scan hive default.t [a#1], HiveTableRelation [`default`.`t`, org.apache.hadoop.hive.serde2.avro.AvroSerDe]",
            "Scan hiveavro",
            false,
            "Triage",
            Some("Unsupported IO format"),
        );
    }

    #[test]
    fn batch_scans() {
        check(
            "BatchScan",
            "BatchScan[_c0#16] CSVScan DataFilters: [], Format: csv, Location: InMemoryFileIndex[file:/home/user1/re..., PartitionFilters: [], PushedFilers: [], ReadSchema: struct<_c0:string>, PushedFilters: []",
            "BatchScan csv",
            true,
            "NONE",
            None,
        );
        check(
            "BatchScan parquet file:/x",
            "BatchScan parquet file:/x[a#1] ParquetScan DataFilters: [], Format: parquet, Location: InMemoryFileIndex(1 paths)[file:/x], PartitionFilters: [], PushedAggregation: [], PushedFilters: [], PushedGroupBy: [], ReadSchema: struct<a:int> RuntimeFilters: []",
            "BatchScan parquet",
            true,
            "NONE",
            None,
        );
        // a table scan (Iceberg in an Iceberg app): unknown format here
        let i = check(
            "BatchScan local.db.t",
            "BatchScan local.db.t[id#1L, data#2] local.db.t (branch=null) [filters=, groupedBy=] RuntimeFilters: []",
            "BatchScan unknown",
            false,
            "Triage",
            Some("Unsupported IO format"),
        );
        assert!(i.expression_name.starts_with("BatchScan local.db.t["));
    }

    #[test]
    fn delta_log_file_scan() {
        let desc = "FileScan parquet [add#1] Batched: true, DataFilters: [], Format: Parquet, Location: DeltaLogFileIndex(1 paths)[file:/t/_delta_log/00000000000000000010.checkpoint.parquet], ReadSchema: struct<add:struct<path:string>>";
        let i = check_delta(
            "Scan parquet ",
            desc,
            true,
            "Scan parquet",
            false,
            "IgnorePerf",
            Some("Delta Lake metadata scans are not supported"),
        );
        assert_eq!(i.op_type, "ReadDeltaLog");
        check("Scan parquet ", desc, "Scan parquet", true, "NONE", None);
    }

    #[test]
    fn writes() {
        let i = check(
            "Execute InsertIntoHadoopFsRelationCommand",
            "Execute InsertIntoHadoopFsRelationCommand file:/home/sparkqa/gen/work-4.3.0/warehouse/etl_orders_summary, false, Parquet, [path=file:/home/sparkqa/gen/work-4.3.0/warehouse/etl_orders_summary], Overwrite, [n_name, year, month, orders, total]",
            "Execute InsertIntoHadoopFsRelationCommand parquet",
            true,
            "NONE",
            None,
        );
        assert_eq!(i.expression_name, "Format: parquet");
        assert_eq!(i.op_type, "WriteExec");
        // partition columns before the format
        check(
            "Execute InsertIntoHadoopFsRelationCommand",
            "Execute InsertIntoHadoopFsRelationCommand file:/home/sparkqa/gen/work-4.3.0/etl/by_nation_month, false, [year#3231], Parquet, [__partition_columns=[\"year\"], path=/home/sparkqa/gen/work-4.3.0/etl/by_nation_month], Overwrite, [n_name, year, month, orders, total]",
            "Execute InsertIntoHadoopFsRelationCommand parquet",
            true,
            "NONE",
            None,
        );
        for (fmt, lc) in [("JSON", "json"), ("CSV", "csv"), ("Text", "text")] {
            let desc = format!(
                "Execute InsertIntoHadoopFsRelationCommand file:/home/user1/out.{lc}, false, {fmt}, Map(path -> out.{lc}), ErrorIfExists, [value]"
            );
            check(
                "Execute InsertIntoHadoopFsRelationCommand",
                &desc,
                &format!("Execute InsertIntoHadoopFsRelationCommand {lc}"),
                false,
                "Triage",
                Some("Unsupported IO format"),
            );
        }
        // compression
        check(
            "Execute InsertIntoHadoopFsRelationCommand",
            "Execute InsertIntoHadoopFsRelationCommand file:/x, false, Parquet, [compression=gzip, path=/x], Overwrite, [a]",
            "Execute InsertIntoHadoopFsRelationCommand parquet",
            false,
            "Triage",
            Some("Unsupported compression"),
        );
        check(
            "Execute InsertIntoHadoopFsRelationCommand",
            "Execute InsertIntoHadoopFsRelationCommand file:/x, false, Parquet, [compression=zstd, path=/x], Overwrite, [a]",
            "Execute InsertIntoHadoopFsRelationCommand parquet",
            true,
            "NONE",
            None,
        );
        check(
            "Execute InsertIntoHadoopFsRelationCommand",
            "Execute InsertIntoHadoopFsRelationCommand file:/x, false, ORC, [orc.compress=ZLIB, path=/x], Overwrite, [a]",
            "Execute InsertIntoHadoopFsRelationCommand orc",
            true,
            "NONE",
            None,
        );
        check(
            "Execute InsertIntoHadoopFsRelationCommand",
            "Execute InsertIntoHadoopFsRelationCommand file:/x, false, ORC, [orc.compress=LZ4, path=/x], Overwrite, [a]",
            "Execute InsertIntoHadoopFsRelationCommand orc",
            false,
            "Triage",
            Some("Unsupported compression"),
        );
        // V2 commands carry no format
        check(
            "AtomicReplaceTableAsSelect",
            "AtomicReplaceTableAsSelect [num_affected_rows#213L, num_inserted_rows#214L], com.databricks.sql.managedcatalog.UnityCatalogV2Proxy@4a023a26, default.people_large, Relation spark_catalog.default.people_large_2[id#68L,firstName#69] parquet, TableSpec(Map(),None,Map(),None,None,None,false,Set()), [], false, org.apache.spark.sql.execution.datasources.v2.DataSourceV2Strategy$$Lambda$7696/1679810408@5d633e44",
            "AtomicReplaceTableAsSelect unknown",
            false,
            "Triage",
            Some("Unsupported IO format"),
        );
        // Hive
        check(
            "Execute InsertIntoHiveTable",
            "Execute InsertIntoHiveTable `default`.`t`, org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe, false, false, [a, b]",
            "Execute InsertIntoHiveTable hiveparquet",
            true,
            "NONE",
            None,
        );
        // WriteFiles
        let i = check("WriteFiles", "WriteFiles", "WriteFiles", true, "NONE", None);
        assert_eq!(i.op_type, "WriteExec");
    }

    #[test]
    fn delta_lake_commands() {
        for name in [
            "Execute WriteIntoDeltaCommand",
            "Execute SaveIntoDataSourceCommand",
            "Execute MergeIntoCommand",
            "Execute UpdateCommandEdge",
        ] {
            let i = check(name, name, name, true, "NONE", None);
            assert_eq!(i.expression_name, "Format: Delta");
            assert_eq!(i.op_type, "WriteExec");
        }
        // supported although in the ignore list
        let i = check(
            "Execute DeleteCommand",
            "Execute DeleteCommand",
            "Execute DeleteCommand",
            true,
            "NONE",
            None,
        );
        assert!(i.should_ignore);
        check(
            "Execute DescribeDeltaHistoryCommand",
            "Execute DescribeDeltaHistoryCommand",
            "Execute DescribeDeltaHistoryCommand",
            false,
            "IgnorePerf",
            Some("Unsupported"),
        );
        // a V1 append into a Delta table
        check(
            "AppendDataExecV1",
            "AppendDataExecV1 [num_affected_rows#1L], DeltaTableV2(org.apache.spark.sql.SparkSession@1,file:/t,None,None), [a]",
            "AppendDataExecV1",
            true,
            "NONE",
            None,
        );
    }

    #[test]
    fn joins() {
        let i = check(
            "BroadcastHashJoin",
            "BroadcastHashJoin [o_orderkey#16L], [l_orderkey#0L], Inner, BuildRight, false, false",
            "BroadcastHashJoin",
            true,
            "NONE",
            None,
        );
        assert!(i.expressions.is_empty());
        check(
            "BroadcastHashJoin",
            "BroadcastHashJoin [a#1], [b#2], LeftOuter, BuildLeft, false",
            "BroadcastHashJoin",
            false,
            "Triage",
            Some("Unsupported join type"),
        );
        check(
            "SortMergeJoin",
            "SortMergeJoin [k#4417L], [k#4419L], Inner",
            "SortMergeJoin",
            true,
            "NONE",
            None,
        );
        check(
            "SortMergeJoin(skew=true)",
            "SortMergeJoin(skew=true) [k#1198], [k#1201], Inner",
            "SortMergeJoin",
            true,
            "NONE",
            None,
        );
        check(
            "SortMergeJoin",
            "SortMergeJoin [a#1], [b#2], LeftOuter, (cast(c#3 as date) = d#4)",
            "SortMergeJoin",
            false,
            "Triage",
            Some("Unsupported join type"),
        );
        let i = check(
            "ShuffledHashJoin",
            "ShuffledHashJoin [name#11, CEIL(DEPT#12)], [name#28, CEIL(DEPT_ID#27)], Inner, BuildLeft",
            "ShuffledHashJoin",
            true,
            "NONE",
            None,
        );
        assert_eq!(i.expressions, ["CEIL"]);
        check(
            "BroadcastNestedLoopJoin",
            "BroadcastNestedLoopJoin BuildRight, Inner, true",
            "BroadcastNestedLoopJoin",
            true,
            "NONE",
            None,
        );
        check(
            "BroadcastNestedLoopJoin",
            "BroadcastNestedLoopJoin BuildRight, FullOuter",
            "BroadcastNestedLoopJoin",
            false,
            "Triage",
            Some("Unsupported join type"),
        );
        // no join type at all: the reference throws and reports the raw node
        check(
            "BroadcastNestedLoopJoin",
            "BroadcastNestedLoopJoin BuildRight",
            "BroadcastNestedLoopJoin",
            false,
            "Triage",
            Some("Unsupported"),
        );
    }

    #[test]
    fn unsupported_expressions() {
        let i = check(
            "Project",
            "Project [o_orderpriority#21, __pivot_count(orders.o_orderkey) AS `count(orders.o_orderkey)`#79[0] AS F#80L, __pivot_count(orders.o_orderkey) AS `count(orders.o_orderkey)`#79[1] AS O#81L]",
            "Project",
            false,
            "Triage",
            Some("Contains unsupported expr"),
        );
        assert_eq!(
            i.unsupported_expressions,
            pairs(&[("__pivot_count", "Unsupported")])
        );
        // the back-quoted column name reads as a call too
        assert_eq!(i.expressions, ["__pivot_count", "count"]);
        // the plugin's note for a disabled expression
        let i = check(
            "Project",
            "Project [ascii(a#1) AS x#2]",
            "Project",
            false,
            "Triage",
            Some("Contains unsupported expr"),
        );
        assert!(
            i.unsupported_expressions[0]
                .1
                .starts_with("This is disabled by default")
        );
        // parse_url with an unsupported part
        let i = check(
            "Project",
            "Project [parse_url(u#7, HOST, false) AS h#9, parse_url(u#7, REF, false) AS r#10]",
            "Project",
            false,
            "Triage",
            Some("Contains unsupported expr"),
        );
        assert_eq!(
            i.unsupported_expressions,
            pairs(&[("parse_url_ref", "Unsupported")])
        );
        let i = check(
            "ObjectHashAggregate",
            "ObjectHashAggregate(keys=[], functions=[partial_filesizehistogramagg(coalesce(add#396.size, -1), 0, 0) AS buf#455, partial_collect_set(txn#395, 0, 0) AS buf#457, partial_count(protocol#399) AS count#459L])",
            "ObjectHashAggregate",
            false,
            "Triage",
            Some("Contains unsupported expr"),
        );
        assert_eq!(
            i.expressions,
            ["filesizehistogramagg", "coalesce", "collect_set", "count"]
        );
        // `+(` makes the reference's condition parser throw
        check(
            "Filter",
            "Filter (a#1 > +(b#2))",
            "Filter",
            false,
            "Triage",
            Some("Unsupported"),
        );
    }

    #[test]
    fn generic_execs_with_expressions() {
        let i = check(
            "HashAggregate",
            "HashAggregate(keys=[l_orderkey#0L, o_orderdate#20, o_shippriority#23], functions=[partial_sum((l_extendedprice#5 * (1 - l_discount#6)))])",
            "HashAggregate",
            true,
            "NONE",
            None,
        );
        assert_eq!(i.expressions, ["sum"]);
        let i = check(
            "Filter",
            "Filter (((isnotnull(o_orderdate#20) AND (o_orderdate#20 < 1995-03-15)) AND isnotnull(o_custkey#17L)) AND isnotnull(o_orderkey#16L))",
            "Filter",
            true,
            "NONE",
            None,
        );
        assert_eq!(i.expressions, ["isnotnull", "And", "LessThan"]);
        let i = check(
            "Sort",
            "Sort [round(num#126, 0) ASC NULLS FIRST, letter#127 DESC NULLS LAST], true, 0",
            "Sort",
            true,
            "NONE",
            None,
        );
        assert_eq!(i.expressions, ["round"]);
        let i = check(
            "Window",
            "Window [dense_rank(o_totalprice#1431) windowspecdefinition(o_orderpriority#1433, o_totalprice#1431 DESC NULLS LAST, specifiedwindowframe(RowFrame, unboundedpreceding$(), currentrow$())) AS rk#1478], [o_orderpriority#1433], [o_totalprice#1431 DESC NULLS LAST]",
            "Window",
            true,
            "NONE",
            None,
        );
        assert_eq!(i.expressions, ["dense_rank"]);
        let i = check(
            "Generate",
            "Generate explode(split(o_comment#3532,  , -1)), false, [w#3570]",
            "Generate",
            true,
            "NONE",
            None,
        );
        assert_eq!(i.expressions, ["explode", "split"]);
        check(
            "Expand",
            "Expand [[l_returnflag#3516, l_linestatus#3517, 0], [l_returnflag#3516, null, 1], [null, null, 3]], [l_returnflag#3599, l_linestatus#3600, spark_grouping_id#3598L]",
            "Expand",
            true,
            "NONE",
            None,
        );
        let i = check(
            "TakeOrderedAndProject",
            "TakeOrderedAndProject(limit=100, orderBy=[o_totalprice#19 DESC NULLS LAST,o_orderdate#20 ASC NULLS FIRST], output=[c_name#26,c_custkey#25L])",
            "TakeOrderedAndProject",
            true,
            "NONE",
            None,
        );
        assert!(i.expressions.is_empty());
        for (name, desc) in [
            (
                "Exchange",
                "Exchange hashpartitioning(l_orderkey#0L, o_orderdate#20, o_shippriority#23, 16), ENSURE_REQUIREMENTS, [plan_id=165]",
            ),
            (
                "BroadcastExchange",
                "BroadcastExchange HashedRelationBroadcastMode(List(input[0, bigint, true]),false), [plan_id=81]",
            ),
            ("AQEShuffleRead", "AQEShuffleRead coalesced"),
            ("CustomShuffleReader", "CustomShuffleReader coalesced"),
            ("Range", "Range (0, 200000, step=1, splits=8)"),
            (
                "InMemoryTableScan",
                "InMemoryTableScan [l_quantity#1730, l_returnflag#1734]",
            ),
            ("Coalesce", "Coalesce 1"),
            ("Union", "Union"),
            ("GlobalLimit", "GlobalLimit 10"),
            ("LocalLimit", "LocalLimit 10"),
        ] {
            let i = check(name, desc, name, true, "NONE", None);
            assert!(i.expressions.is_empty(), "{name}");
        }
    }

    #[test]
    fn window_group_limit() {
        check(
            "WindowGroupLimit",
            "WindowGroupLimit [o_orderpriority#3705], [o_totalprice#3703 DESC NULLS LAST], dense_rank(o_totalprice#3703), 2, Final",
            "WindowGroupLimit",
            true,
            "NONE",
            None,
        );
        // two sort keys: the ranking function is not found (the reference's quirk)
        check(
            "WindowGroupLimit",
            "WindowGroupLimit [o_custkey#1429L], [o_orderdate#1432 ASC NULLS FIRST, o_orderkey#1428L ASC NULLS FIRST], row_number(), 3, Final",
            "WindowGroupLimit",
            false,
            "Triage",
            Some("Unsupported"),
        );
        let i = check(
            "WindowGroupLimit",
            "WindowGroupLimit [a#1], [b#2 DESC NULLS LAST], percent_rank(b#2), 2, Final",
            "WindowGroupLimit",
            false,
            "Triage",
            Some("Contains unsupported expr"),
        );
        assert_eq!(
            i.unsupported_expressions,
            pairs(&[(
                "percent_rank",
                "Ranking function percent_rank is not supported in WindowGroupLimitExec"
            )])
        );
    }

    #[test]
    fn score_files() {
        let desc = "FileScan parquet [a#1] Batched: true, Format: Parquet, Location: InMemoryFileIndex[file:/x], ReadSchema: struct<a:int>";
        for name in rapids_plugin::score_files() {
            let i = classify_for("Scan parquet ", desc, false, name).unwrap();
            assert!(i.supported, "{name}");
        }
        assert!(classify_for("Scan parquet ", desc, false, "nowhere").is_none());
        assert_eq!(normalize("Scan parquet ", desc), "Scan parquet");
    }

    #[test]
    fn large_descriptions() {
        // a Filter of 20,000 conjuncts and a Project of 20,000 calls stay fast
        let cond = (0..20_000)
            .map(|i| format!("(isnotnull(c{i}#{i}) AND(c{i}#{i} = {i}))"))
            .collect::<Vec<_>>()
            .join(" AND ");
        let i = classify("Filter", &format!("Filter ({cond})"), false);
        assert!(i.supported);
        assert_eq!(i.expressions, ["isnotnull", "And", "EqualTo"]);
        let cols = (0..20_000)
            .map(|i| format!("upper(c{i}#{i}) AS u{i}#{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let i = classify("Project", &format!("Project [{cols}]"), false);
        assert!(i.supported);
        assert_eq!(i.expressions, ["upper"]);
    }

    /// A tiny xorshift generator (no `rand` crate).
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn never_panics() {
        const NAMES: &[&str] = &[
            "",
            "Project",
            "Filter",
            "HashAggregate",
            "SortAggregate",
            "Sort",
            "Window",
            "WindowGroupLimit",
            "TakeOrderedAndProject",
            "Expand",
            "Generate",
            "BroadcastHashJoin",
            "ShuffledHashJoin",
            "SortMergeJoin",
            "SortMergeJoin(x)",
            "BroadcastNestedLoopJoin",
            "Scan parquet ",
            "Scan",
            "Scan hive x",
            "BatchScan",
            "Scan ExistingRDD",
            "Execute InsertIntoHadoopFsRelationCommand",
            "Execute InsertIntoHiveTable",
            "AppendDataExecV1",
            "AtomicCreateTableAsSelect",
            "Execute UpdateCommand",
            "Execute UpdateCommand$",
            "WriteFiles",
            "Subquery",
            "WholeStageCodegen (1)",
            "X$",
            "Pro(ject",
            "a[b",
            "*",
            "Ünïcödé",
            "\n",
        ];
        const PIECES: &[&str] = &[
            "(",
            ")",
            "[",
            "]",
            ",",
            ", ",
            " ",
            "  ",
            "AND",
            "OR",
            "NOT",
            "IN",
            "=",
            "<=>",
            "<",
            ">=",
            "+",
            "-",
            "*",
            "+(",
            "*(",
            "AND(",
            "-(",
            "#",
            "a#1",
            "f(",
            "sum(",
            "partial_",
            "parse_url(",
            "REF",
            "FILE",
            "windowspecdefinition",
            "FIRST,",
            "LAST,",
            "],",
            "keys=[",
            "functions=[",
            "(keys=[",
            "orderBy=[",
            "Format: ",
            "ReadSchema: ",
            "struct<",
            ">",
            "Location: ",
            " RuntimeFilters: [",
            "BuildLeft",
            "BuildRight",
            "Inner",
            "LeftOuter",
            "hashpartitioning(",
            "SinglePartition",
            "cast(",
            " as date)",
            "lower(",
            ") in (",
            "subquery#1",
            "UDF",
            "$Lambda$",
            ".apply",
            "CatalogTable(",
            "\nSerde Library: org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe\n",
            "[compression=",
            "gzip",
            "Parquet",
            "ORC",
            "=",
            "\n",
            "\r",
            "\u{85}",
            "é",
            "日本",
            "\u{1F600}",
            "\t",
            "\\",
            "$",
            "`",
            "'",
            "\"",
            "_delta_log",
            "DeltaTableV2",
            "delta",
        ];
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..4000 {
            let name = if rng.below(4) == 0 {
                (0..rng.below(4))
                    .map(|_| PIECES[rng.below(PIECES.len())])
                    .collect::<String>()
            } else {
                NAMES[rng.below(NAMES.len())].to_string()
            };
            let mut desc = if rng.below(2) == 0 {
                format!("{name} ")
            } else {
                String::new()
            };
            for _ in 0..rng.below(40) {
                desc.push_str(PIECES[rng.below(PIECES.len())]);
            }
            // and raw random characters now and then
            for _ in 0..rng.below(3) {
                if let Some(c) = char::from_u32((rng.next() % 0x11_0000) as u32) {
                    desc.push(c);
                }
            }
            for delta in [false, true] {
                let i = classify(&name, &desc, delta);
                assert!(i.supported || i.details.is_some() || name.contains("WholeStageCodegen"));
                assert!(!i.supported || i.unsupported_expressions.is_empty());
            }
        }
    }
}
