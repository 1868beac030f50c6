//! The RAPIDS plugin's support tables (spark-rapids-tools 26.08.4 data files, embedded; see
//! `datasets/reference/rapids-plugin/PROVENANCE.md`), parsed once on first use.
//!
//! Levels `S` (supported), `PS` (partially supported) and `TON` count as supported; `NS`, `CO`,
//! `NA`, `TNEW`, `TOFF`, anything else and a missing key do not.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

const SUPPORTED_EXECS: &str =
    include_str!("../../datasets/reference/rapids-plugin/supportedExecs.csv");
const SUPPORTED_EXPRS: &str =
    include_str!("../../datasets/reference/rapids-plugin/supportedExprs.csv");
const SUPPORTED_DATA_SOURCE: &str =
    include_str!("../../datasets/reference/rapids-plugin/supportedDataSource.csv");

/// The operator score files, by `<platform>-<gpu>` name.
const SCORE_FILES: &[(&str, &str)] = &[
    (
        "databricks-aws-a10G",
        include_str!(
            "../../datasets/reference/rapids-plugin/operatorsScore-databricks-aws-a10G.csv"
        ),
    ),
    (
        "databricks-aws-t4",
        include_str!("../../datasets/reference/rapids-plugin/operatorsScore-databricks-aws-t4.csv"),
    ),
    (
        "databricks-azure-t4",
        include_str!(
            "../../datasets/reference/rapids-plugin/operatorsScore-databricks-azure-t4.csv"
        ),
    ),
    (
        "dataproc-gke-l4",
        include_str!("../../datasets/reference/rapids-plugin/operatorsScore-dataproc-gke-l4.csv"),
    ),
    (
        "dataproc-gke-t4",
        include_str!("../../datasets/reference/rapids-plugin/operatorsScore-dataproc-gke-t4.csv"),
    ),
    (
        "dataproc-l4",
        include_str!("../../datasets/reference/rapids-plugin/operatorsScore-dataproc-l4.csv"),
    ),
    (
        "dataproc-serverless-l4",
        include_str!(
            "../../datasets/reference/rapids-plugin/operatorsScore-dataproc-serverless-l4.csv"
        ),
    ),
    (
        "dataproc-t4",
        include_str!("../../datasets/reference/rapids-plugin/operatorsScore-dataproc-t4.csv"),
    ),
    (
        "emr-a10",
        include_str!("../../datasets/reference/rapids-plugin/operatorsScore-emr-a10.csv"),
    ),
    (
        "emr-a10G",
        include_str!("../../datasets/reference/rapids-plugin/operatorsScore-emr-a10G.csv"),
    ),
    (
        "emr-t4",
        include_str!("../../datasets/reference/rapids-plugin/operatorsScore-emr-t4.csv"),
    ),
    (
        "onprem-a100",
        include_str!("../../datasets/reference/rapids-plugin/operatorsScore-onprem-a100.csv"),
    ),
];

/// The score file used when none is named: EMR with an A10G GPU.
pub const DEFAULT_SCORE_FILE: &str = "emr-a10G";

/// Whether a support level counts as supported.
fn level_supported(level: &str) -> bool {
    matches!(level, "S" | "PS" | "TON")
}

/// The plugin's exec, expression and data-source tables.
pub struct PluginTables {
    /// Exec name (`ProjectExec`) → level.
    execs: HashMap<String, String>,
    /// Lower-cased expression name or SQL function name (back-quotes and blanks removed) → level.
    exprs: HashMap<String, String>,
    /// The reason shown for an unsupported exec (keyed by exec name) or expression (keyed by the
    /// lower-cased name): the Notes of NS/CO rows, and of TOFF rows.
    reasons: HashMap<String, String>,
    /// Read format (lower case) → lower-cased type names (with aliases) it does not support.
    reads: HashMap<String, Vec<String>>,
    /// Read format (lower case) → lower-cased type names it supports only partially (`PS`).
    partial_reads: HashMap<String, Vec<String>>,
    /// Write formats (lower case).
    writes: HashSet<String>,
}

impl PluginTables {
    /// Whether the exec (e.g. `ProjectExec`) is supported.
    pub fn exec_supported(&self, exec: &str) -> bool {
        self.execs.get(exec).is_some_and(|l| level_supported(l))
    }

    /// Whether the expression (any case) is supported.
    pub fn expr_supported(&self, expr: &str) -> bool {
        self.exprs
            .get(&expr.to_lowercase())
            .is_some_and(|l| level_supported(l))
    }

    /// The plugin's reason for an unsupported exec or expression: looked up by the exact name,
    /// so an expression's reason is only found when its name is written in lower case (as the
    /// reference tool does).
    pub fn reason(&self, name: &str) -> Option<&str> {
        self.reasons.get(name).map(String::as_str)
    }

    /// The read score of a format for a schema: 0 for a format without a read row or a schema
    /// naming a type the format does not support, else 1.
    pub fn read_score(&self, format: &str, schema: &str) -> f64 {
        match self.reads.get(&format.to_lowercase()) {
            None => 0.0,
            Some(ns) => {
                let schema = schema.to_lowercase();
                if ns.iter().any(|t| schema.contains(t.as_str())) {
                    0.0
                } else {
                    1.0
                }
            }
        }
    }

    /// The types of a read schema the plugin reads only partially for `format` (level `PS`,
    /// e.g. timestamps outside UTC, nested types), by the same substring test as
    /// [`PluginTables::read_score`]; empty for an unknown format.
    pub fn partial_read_types(&self, format: &str, schema: &str) -> Vec<String> {
        let schema = schema.to_lowercase();
        self.partial_reads
            .get(&format.to_lowercase())
            .map(|ts| {
                ts.iter()
                    .filter(|t| schema.contains(t.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether the plugin writes the format (any case, surrounding blanks ignored).
    pub fn write_supported(&self, format: &str) -> bool {
        self.writes.contains(&format.trim().to_lowercase())
    }
}

/// The parsed tables.
pub static PLUGIN: LazyLock<PluginTables> = LazyLock::new(|| {
    let mut execs = HashMap::new();
    let mut reasons = HashMap::new();
    for r in parse_csv(SUPPORTED_EXECS).iter().skip(1) {
        let f = |i: usize| r.get(i).map(|s| s.trim()).unwrap_or("");
        let (name, level, notes) = (f(0), f(1), f(2));
        if name.is_empty() {
            continue;
        }
        execs.insert(name.to_string(), level.to_string());
        if let Some(reason) = unsupported_reason(level, notes) {
            reasons.insert(name.to_string(), reason);
        }
    }
    let mut exprs = HashMap::new();
    let mut expr_reasons = HashMap::new();
    for r in parse_csv(SUPPORTED_EXPRS).iter().skip(1) {
        let f = |i: usize| r.get(i).map(|s| s.trim()).unwrap_or("");
        let (name, level, sql, notes) = (f(0), f(1), f(2), f(3));
        let mut names = vec![name];
        if !sql.is_empty() && sql != "None" {
            names.extend(sql.split(';').map(str::trim));
        }
        for n in names {
            let key: String = n
                .to_lowercase()
                .chars()
                .filter(|&c| c != '`' && c != ' ')
                .collect();
            if key.is_empty() {
                continue;
            }
            if let Some(reason) = unsupported_reason(level, notes) {
                expr_reasons.insert(key.clone(), reason);
            }
            exprs.insert(key, level.to_string());
        }
    }
    // one map for both, as the reference tool keeps them
    reasons.extend(expr_reasons);
    let mut reads = HashMap::new();
    let mut partial_reads = HashMap::new();
    let mut writes = HashSet::new();
    let rows = parse_csv(SUPPORTED_DATA_SOURCE);
    let header: Vec<String> = rows
        .first()
        .map(|h| h.iter().map(|c| c.trim().to_lowercase()).collect())
        .unwrap_or_default();
    for r in rows.iter().skip(1) {
        let (Some(format), Some(direction)) = (r.first(), r.get(1)) else {
            continue;
        };
        let format = format.trim().to_lowercase();
        match direction.trim().to_lowercase().as_str() {
            "read" => {
                let mut ns = Vec::new();
                let mut ps = Vec::new();
                for (t, level) in header.iter().skip(2).zip(r.iter().skip(2)) {
                    if !level_supported(level.trim()) {
                        ns.extend(type_aliases(t).iter().map(|a| a.to_string()));
                        ns.push(t.clone());
                    } else if level.trim() == "PS" {
                        ps.push(t.clone());
                    }
                }
                partial_reads.insert(format.clone(), ps);
                reads.insert(format, ns);
            }
            "write" => {
                writes.insert(format);
            }
            _ => {}
        }
    }
    PluginTables {
        execs,
        exprs,
        reasons,
        reads,
        partial_reads,
        writes,
    }
});

/// The reason an unsupported level carries, if any.
fn unsupported_reason(level: &str, notes: &str) -> Option<String> {
    match level {
        "NS" | "CO" if notes != "None" && !notes.is_empty() => Some(notes.to_string()),
        "TOFF" if notes != "None" && !notes.is_empty() => Some(notes.to_string()),
        "TOFF" => Some("Force disabled by the Tools".to_string()),
        _ => None,
    }
}

/// Other spellings of a data type in a read schema.
fn type_aliases(t: &str) -> &'static [&'static str] {
    match t {
        "binary" => &["blob"],
        "byte" => &["tinyint"],
        "calendar" => &["interval"],
        "decimal" => &["dec", "numeric"],
        "float" => &["real"],
        "int" => &["integer"],
        "long" => &["bigint"],
        "short" => &["smallint"],
        "string" => &["varchar", "char"],
        _ => &[],
    }
}

/// Every score table, by name.
static SCORES: LazyLock<HashMap<&'static str, HashMap<String, f64>>> = LazyLock::new(|| {
    SCORE_FILES
        .iter()
        .map(|(name, text)| {
            let table = parse_csv(text)
                .iter()
                .skip(1)
                .filter_map(|r| {
                    let op = r.first()?.trim();
                    let score = r.get(1)?.trim().parse::<f64>().ok()?;
                    Some((op.to_string(), score))
                })
                .collect();
            (*name, table)
        })
        .collect()
});

/// The names of the embedded score files (`emr-a10G`, …).
pub fn score_files() -> impl Iterator<Item = &'static str> {
    SCORE_FILES.iter().map(|(n, _)| *n)
}

/// The score table named `name` (`emr-a10G` or `operatorsScore-emr-a10G.csv`), if embedded.
pub fn score_table(name: &str) -> Option<&'static HashMap<String, f64>> {
    let key = name.trim();
    let key = key.strip_prefix("operatorsScore-").unwrap_or(key);
    let key = key.strip_suffix(".csv").unwrap_or(key);
    SCORES.get(key)
}

/// The score of an operator in a score table (1.0 when unlisted).
pub fn score(table: &HashMap<String, f64>, op: &str) -> f64 {
    table.get(op).copied().unwrap_or(1.0)
}

/// The records of an embedded CSV file (the csv crate: quoted fields may hold commas, quotes
/// and line breaks; blank lines are skipped; records may differ in length). The embedded files
/// are valid UTF-8 CSV, so a bad record can only be a build mistake: it ends the table there.
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes())
        .into_records()
        .map_while(|r| r.ok())
        .map(|r| r.iter().map(str::to_string).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_reader() {
        assert_eq!(
            parse_csv("a,b\n\"x, y\",\"say \"\"hi\"\"\"\r\n\n1,\n"),
            vec![
                vec!["a".to_string(), "b".to_string()],
                vec!["x, y".to_string(), "say \"hi\"".to_string()],
                vec!["1".to_string(), String::new()],
            ]
        );
        assert_eq!(
            parse_csv("\"multi\nline\",2"),
            vec![vec!["multi\nline".to_string(), "2".to_string()]]
        );
        assert!(parse_csv("").is_empty());
    }

    #[test]
    fn tables() {
        let p = &*PLUGIN;
        assert!(p.exec_supported("ProjectExec"));
        assert!(p.exec_supported("FileSourceScanExec"));
        assert!(!p.exec_supported("CollectLimitExec"));
        assert!(!p.exec_supported("OverwriteByExpressionExec")); // TNEW
        assert!(!p.exec_supported("NoSuchExec"));
        assert!(
            p.reason("CollectLimitExec")
                .unwrap()
                .starts_with("This is disabled by default because Collect Limit")
        );
        assert!(p.expr_supported("isnotnull"));
        assert!(p.expr_supported("IsNotNull"));
        assert!(p.expr_supported("substr"));
        assert!(!p.expr_supported("ascii"));
        assert!(!p.expr_supported("to_json"));
        assert!(!p.expr_supported("StaticInvoke"));
        assert!(!p.expr_supported("no_such_function"));
        assert!(p.reason("ascii").is_some());
        assert!(p.reason("Ascii").is_none());
        assert_eq!(p.read_score("Parquet", "id:bigint,name:string"), 1.0);
        assert_eq!(p.read_score("parquet", ""), 1.0);
        assert_eq!(p.read_score("text", "value:string"), 0.0);
        assert_eq!(p.read_score("csv", "b:binary"), 0.0);
        assert_eq!(p.read_score("unknown", ""), 0.0);
        for f in [
            "parquet",
            "Parquet",
            "orc",
            "delta",
            "hiveparquet",
            "iceberg",
        ] {
            assert!(p.write_supported(f), "{f}");
        }
        for f in ["json", "csv", "unknown", "text"] {
            assert!(!p.write_supported(f), "{f}");
        }
    }

    #[test]
    fn scores() {
        assert_eq!(score_files().count(), 12);
        let t = score_table(DEFAULT_SCORE_FILE).unwrap();
        assert_eq!(score(t, "FileSourceScanExec"), 2.59);
        assert_eq!(score(t, "NoSuchExec"), 1.0);
        assert!(score_table("operatorsScore-emr-t4.csv").is_some());
        assert!(score_table("nowhere").is_none());
        for name in score_files() {
            let t = score_table(name).unwrap();
            assert!(t.len() > 100, "{name}");
        }
    }
}
