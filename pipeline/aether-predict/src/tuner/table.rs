//! The reference tool's tuning table (`datasets/reference/rapids-plugin/tuning-table.csv`, from
//! its `tuningTable.yaml`): each tunable property's type, whether the qualification AutoTuner
//! carries it over from the CPU run, and Spark's default. Read once.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::units::{format_bytes, parse_bytes};

const TUNING_TABLE: &str =
    include_str!("../../../../datasets/reference/rapids-plugin/tuning-table.csv");

/// How a property's value is written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ConfType {
    Int,
    Double,
    Bool,
    Byte { mib: bool },
    Text,
}

/// One property of the table.
#[derive(Debug)]
pub(crate) struct Entry {
    pub conf: ConfType,
    /// Carried over from the CPU run into a bootstrap config (the table's `enabled`; EMR turns
    /// the two JVM-options entries on).
    pub kept: bool,
    /// Spark's default, where the table gives one.
    pub default: Option<String>,
}

/// The table, by property.
pub(crate) fn table() -> &'static BTreeMap<String, Entry> {
    static TABLE: OnceLock<BTreeMap<String, Entry>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut out = BTreeMap::new();
        let mut r = csv::Reader::from_reader(TUNING_TABLE.as_bytes());
        for rec in r.records().flatten() {
            let key = rec[0].to_string();
            let conf = match &rec[2] {
                "int" | "long" => ConfType::Int,
                "double" => ConfType::Double,
                "boolean" => ConfType::Bool,
                "byte" => ConfType::Byte {
                    mib: &rec[3] == "MiB",
                },
                _ => ConfType::Text,
            };
            let kept = &rec[1] == "true" || key.ends_with(".extraJavaOptions");
            let default = Some(rec[4].to_string()).filter(|d| !d.is_empty());
            out.insert(
                key,
                Entry {
                    conf,
                    kept,
                    default,
                },
            );
        }
        out
    })
}

/// The type of `key` (text when the table does not list it).
pub(crate) fn conf(key: &str) -> ConfType {
    table().get(key).map(|e| e.conf).unwrap_or(ConfType::Text)
}

/// A value written the way the reference writes its type (`8192` MiB as `8g`, `1` as `1.0`).
pub(crate) fn normalize(conf: ConfType, v: &str) -> String {
    let t = v.trim();
    match conf {
        ConfType::Int => t.parse::<i64>().map(|n| n.to_string()).unwrap_or(t.into()),
        ConfType::Double => match t.parse::<f64>() {
            Ok(x) => {
                let s = format!("{x}");
                if s.contains('.') || s.contains('e') {
                    s
                } else {
                    format!("{s}.0")
                }
            }
            Err(_) => t.into(),
        },
        ConfType::Bool => match t.to_ascii_lowercase().as_str() {
            b @ ("true" | "false") => b.into(),
            _ => t.into(),
        },
        ConfType::Byte { mib } => parse_bytes(t, mib).map(format_bytes).unwrap_or(t.into()),
        ConfType::Text => t.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_as_the_reference_writes_their_type() {
        assert_eq!(normalize(ConfType::Byte { mib: true }, "8g"), "8g");
        assert_eq!(normalize(ConfType::Byte { mib: true }, "8192"), "8g");
        assert_eq!(normalize(ConfType::Double, "1"), "1.0");
        assert_eq!(normalize(ConfType::Int, "016"), "16");
        assert_eq!(normalize(ConfType::Bool, "TRUE"), "true");
        assert_eq!(conf("spark.executor.memory"), ConfType::Byte { mib: true });
        assert_eq!(conf("no.such.key"), ConfType::Text);
        // the two JVM-options entries are kept on EMR though the table turns them off
        assert!(table()["spark.executor.extraJavaOptions"].kept);
        assert!(!table()["spark.yarn.isPython"].kept);
        assert_eq!(
            table()["spark.sql.shuffle.partitions"].default.as_deref(),
            Some("200")
        );
    }
}
