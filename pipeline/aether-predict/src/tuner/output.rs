//! What the AutoTuner answers: qualification's bootstrap configs (every value with its reason)
//! and profiling's changes to a GPU run (with the reference's comments).

use serde::Serialize;

use super::table::{normalize, table};
use super::{FILL_IN, Tuner};

/// One property of a bootstrap config.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    pub key: String,
    pub value: String,
    /// Why it is set (or `kept from the CPU run` for a value carried over unchanged).
    pub reason: String,
    /// The AutoTuner rule that set it (`tuner/rules/<rule>.rs`; empty for a kept value).
    pub rule: &'static str,
}

/// How a recommended property relates to the run's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Added,
    Changed,
    Removed,
    Unresolved,
}

/// One recommended property.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recommended {
    pub key: String,
    /// The value to set (for a removed property: the run's value, as the reference prints it).
    pub value: String,
    pub change: Change,
    /// The run's value, if it set one.
    pub source: Option<String>,
}

/// The profiling AutoTuner's answer for one app.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Tuning {
    /// `false`: not a GPU run with the plugin enabled; nothing is recommended.
    pub recommended: bool,
    /// Sorted by key.
    pub properties: Vec<Recommended>,
    /// Sorted as plain strings; a comment may span lines.
    pub comments: Vec<String>,
}

/// The bootstrap config: the run's tunable properties (the tuning table's kept ones) unless a
/// rule set or removed them, sorted by name.
pub(super) fn bootstrap(t: Tuner<'_>) -> Vec<Setting> {
    let mut all: std::collections::BTreeMap<String, Setting> = t
        .inp
        .props
        .iter()
        .filter(|(k, _)| table().get(*k).is_some_and(|e| e.kept))
        .map(|(k, v)| {
            let value = normalize(super::table::conf(k), v);
            let reason = "kept from the CPU run".to_string();
            let key = k.clone();
            let rule = "";
            (
                k.clone(),
                Setting {
                    key,
                    value,
                    reason,
                    rule,
                },
            )
        })
        .collect();
    for (key, set) in t.out {
        match set {
            Some(s) => {
                all.insert(
                    key.clone(),
                    Setting {
                        key,
                        value: s.value,
                        reason: s.reason,
                        rule: s.rule,
                    },
                );
            }
            None => {
                all.remove(&key);
            }
        }
    }
    all.into_values().collect()
}

/// Render a bootstrap config as a spark-defaults file, each property after a comment saying why
/// (and which rule set it).
pub fn render_bootstrap(app_id: &str, target: &str, settings: &[Setting]) -> String {
    let mut s = format!(
        "# Spark configs for {app_id} on {target} (aether qualify; the RAPIDS AutoTuner's rules)\n"
    );
    for x in settings {
        let rule = if x.rule.is_empty() {
            String::new()
        } else {
            format!(" [{}]", x.rule)
        };
        s.push_str(&format!("# {}{rule}\n{} {}\n", x.reason, x.key, x.value));
    }
    s
}

/// Comments the tuning table gives a property instead of `'<key>' was not set.`: `None` for
/// no comment at all (`missingPolicy: omit`).
fn missing_comment(key: &str) -> Option<String> {
    match key {
        "spark.executor.resource.gpu.amount" => Some(format!(
            "'{key}' should be set to allow Spark to schedule GPU resources."
        )),
        "spark.rapids.sql.concurrentGpuTasks" => None,
        "spark.kryo.registrator" => Some(format!(
            "'{key}' should include GpuKryoRegistrator when using Kryo serialization."
        )),
        "spark.kryoserializer.buffer.max" => Some(format!(
            "'{key}' setting the max buffer to prevent out-of-memory errors."
        )),
        "spark.sql.cache.serializer" => Some(format!(
            "'{key}' enables GPU processing of Spark SQL cached batches."
        )),
        _ => Some(format!("'{key}' was not set.")),
    }
}

/// The tuning table's `updated` comment of a property whose value is changed, if it has one.
fn updated_comment(key: &str) -> Option<String> {
    match key {
        "spark.kryo.registrator" => Some(format!(
            "'{key}' GpuKryoRegistrator must be appended to the existing value when using Kryo serialization."
        )),
        "spark.kryoserializer.buffer.max" => Some(format!(
            "'{key}' increasing the max buffer to prevent out-of-memory errors."
        )),
        "spark.sql.cache.serializer" => Some(format!(
            "'{key}' replacing Spark's default cache serializer enables GPU processing of cached batches."
        )),
        _ => None,
    }
}

/// The properties that differ from the run (with their comments), sorted: a value equal to
/// the run's, or to Spark's default where the run left it unset, is not listed.
pub(super) fn profile(t: Tuner<'_>) -> Tuning {
    let Tuner {
        inp,
        out,
        mut comments,
        silent,
        ..
    } = t;
    let mut properties = Vec::new();
    for (key, value) in out {
        let source = inp.props.get(&key).cloned();
        let (change, value) = match value {
            None => match &source {
                Some(s) => (Change::Removed, s.clone()),
                None => continue,
            },
            Some(s) if s.value == FILL_IN => {
                if source.is_none() && !silent.contains(&key) {
                    comments.insert(format!("'{key}' was not set."));
                }
                (Change::Unresolved, s.value)
            }
            Some(s) => {
                let was = source
                    .clone()
                    .or_else(|| table().get(&key).and_then(|e| e.default.clone()));
                let conf = super::table::conf(&key);
                if was.as_deref().map(|w| normalize(conf, w)).as_deref() == Some(s.value.as_str()) {
                    continue;
                }
                let (change, comment) = match was {
                    None => (Change::Added, missing_comment(&key)),
                    Some(_) => (Change::Changed, updated_comment(&key)),
                };
                comments.extend(comment);
                (change, s.value)
            }
        };
        properties.push(Recommended {
            key,
            value,
            change,
            source,
        });
    }
    Tuning {
        recommended: true,
        properties,
        comments: comments.into_iter().collect(),
    }
}
