//! The Spark listener events aether reads, as typed serde structs (Spark 1.x – 4.x spellings).
//!
//! Only the fields the tables need are declared; everything else in a line is skipped by the
//! parser without being materialised. Numbers Spark writes sometimes as JSON numbers and
//! sometimes as strings (SQL accumulator updates since 3.x) go through [`Num`].

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

pub use crate::event_types::{
    AccUpdate, AccUpdates, BlockManagerAddress, ExecutorMetrics, GPU_TASK_METRICS, InputMetrics,
    Num, OutputMetrics, ShuffleReadMetrics, ShuffleWriteMetrics, TaskEnd, TaskEndReason, TaskInfo,
    TaskMetrics, Text, gpu_metric,
};
use crate::scan::object_end;

/// A string-to-string map kept in file order; non-string values are rendered as JSON text.
#[derive(Debug, Default, Clone)]
pub struct StrMap(pub Vec<(String, String)>);

impl<'de> Deserialize<'de> for StrMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StrMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<StrMap, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    let v: Scalar = m.next_value()?;
                    out.push((k, v.0));
                }
                Ok(StrMap(out))
            }
            // Spark 1.x wrote some maps as lists of [key, value] pairs
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<StrMap, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = s.next_element::<(Scalar, Scalar)>()? {
                    out.push((k.0, v.0));
                }
                Ok(StrMap(out))
            }
            fn visit_unit<E: de::Error>(self) -> Result<StrMap, E> {
                Ok(StrMap::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// Any JSON scalar as text (strings unquoted; containers skipped as empty text).
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scalar")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
                Ok(Scalar(String::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Scalar, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar(String::new()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Scalar, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar(String::new()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize, Debug)]
pub struct LogStart {
    #[serde(rename = "Spark Version")]
    pub spark_version: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct ApplicationStart {
    #[serde(rename = "App Name")]
    pub app_name: Option<String>,
    #[serde(rename = "App ID")]
    pub app_id: Option<String>,
    #[serde(rename = "Timestamp")]
    pub timestamp: Num,
    #[serde(rename = "User")]
    pub user: Option<String>,
    #[serde(rename = "App Attempt ID")]
    pub attempt_id: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct ApplicationEnd {
    #[serde(rename = "Timestamp")]
    pub timestamp: Num,
    #[serde(rename = "ExitCode", default)]
    pub exit_code: Num,
}

#[derive(Deserialize, Debug)]
pub struct EnvironmentUpdate {
    #[serde(rename = "JVM Information", default)]
    pub jvm: StrMap,
    #[serde(rename = "Spark Properties", default)]
    pub spark: StrMap,
    #[serde(rename = "Hadoop Properties", default)]
    pub hadoop: StrMap,
    #[serde(rename = "System Properties", default)]
    pub system: StrMap,
    #[serde(rename = "Classpath Entries", default)]
    pub classpath: StrMap,
}

#[derive(Deserialize, Debug, Default)]
pub struct ResourceInfo {
    #[serde(default)]
    pub addresses: Vec<IgnoredAny>,
}

#[derive(Deserialize, Debug, Default)]
pub struct ExecutorInfo {
    #[serde(rename = "Host")]
    pub host: Option<String>,
    #[serde(rename = "Total Cores", default)]
    pub total_cores: Num,
    #[serde(rename = "Resources", default)]
    pub resources: Option<std::collections::HashMap<String, ResourceInfo>>,
    #[serde(rename = "Resource Profile Id", default)]
    pub resource_profile_id: Num,
}

#[derive(Deserialize, Debug)]
pub struct ExecutorAdded {
    #[serde(rename = "Timestamp")]
    pub timestamp: Num,
    #[serde(rename = "Executor ID")]
    pub executor_id: String,
    #[serde(rename = "Executor Info", default)]
    pub info: ExecutorInfo,
}

#[derive(Deserialize, Debug)]
pub struct ExecutorRemoved {
    #[serde(rename = "Timestamp")]
    pub timestamp: Num,
    #[serde(rename = "Executor ID")]
    pub executor_id: String,
    #[serde(rename = "Removed Reason")]
    pub reason: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct StageInfo {
    #[serde(rename = "Stage ID")]
    pub stage_id: i64,
    #[serde(rename = "Stage Attempt ID", default)]
    pub attempt_id: Num,
    #[serde(rename = "Stage Name")]
    pub name: Option<String>,
    #[serde(rename = "Number of Tasks", default)]
    pub num_tasks: Num,
    #[serde(rename = "Parent IDs", default)]
    pub parent_ids: Option<Vec<i64>>,
    #[serde(rename = "Submission Time", default)]
    pub submission_time: Num,
    #[serde(rename = "Completion Time", default)]
    pub completion_time: Num,
    #[serde(rename = "Failure Reason")]
    pub failure_reason: Option<String>,
    /// The ids of the accumulators the stage updated (SQL metrics among them).
    #[serde(rename = "Accumulables", default)]
    pub accumulables: StageAccumulables,
    /// The operation scopes of the stage's RDDs.
    #[serde(rename = "RDD Info", default)]
    pub rdd_scopes: RddScopes,
}

/// The names of the operation scopes in a `Stage Info`'s `RDD Info` (each `Scope` is a JSON
/// text, `{"id":"3","name":"GpuColumnarExchange"}`), each once, in order of first appearance.
#[derive(Debug, Default)]
pub struct RddScopes(pub Vec<String>);

impl<'de> Deserialize<'de> for RddScopes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Rdd {
            #[serde(rename = "Scope", default)]
            scope: Option<String>,
        }
        #[derive(Deserialize)]
        struct Scope {
            name: Option<String>,
        }
        let v: Option<Vec<Rdd>> = Deserialize::deserialize(d)?;
        let mut names: Vec<String> = Vec::new();
        for s in v.unwrap_or_default().into_iter().filter_map(|r| r.scope) {
            // (a scope that is not the JSON Spark writes is left out)
            if let Ok(Scope { name: Some(n) }) = serde_json::from_str::<Scope>(&s)
                && !names.contains(&n)
            {
                names.push(n);
            }
        }
        Ok(RddScopes(names))
    }
}

/// The accumulators listed in a `Stage Info`: id and value (`None` when not a number).
#[derive(Debug, Default)]
pub struct StageAccumulables(pub Vec<(i64, Option<i64>)>);

impl<'de> Deserialize<'de> for StageAccumulables {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Acc {
            #[serde(rename = "ID", default)]
            id: Num,
            #[serde(rename = "Value", default)]
            value: Num,
        }
        let v: Option<Vec<Acc>> = Deserialize::deserialize(d)?;
        Ok(StageAccumulables(
            v.unwrap_or_default()
                .into_iter()
                .filter_map(|a| a.id.0.map(|id| (id, a.value.0)))
                .collect(),
        ))
    }
}

#[derive(Deserialize, Debug, Default)]
pub struct JobProperties {
    #[serde(rename = "spark.sql.execution.id")]
    pub sql_execution_id: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct JobStart {
    #[serde(rename = "Job ID")]
    pub job_id: i64,
    #[serde(rename = "Submission Time", default)]
    pub submission_time: Num,
    #[serde(rename = "Stage Infos", default)]
    pub stage_infos: Vec<StageInfo>,
    #[serde(rename = "Stage IDs", default)]
    pub stage_ids: Vec<i64>,
    #[serde(rename = "Properties", default)]
    pub properties: Option<JobProperties>,
}

#[derive(Deserialize, Debug, Default)]
pub struct JobResult {
    #[serde(rename = "Result")]
    pub result: Option<String>,
    /// Why a failed job failed.
    #[serde(rename = "Exception", default)]
    pub exception: Option<JobException>,
}

#[derive(Deserialize, Debug, Default)]
pub struct JobException {
    #[serde(rename = "Message")]
    pub message: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct JobEnd {
    #[serde(rename = "Job ID")]
    pub job_id: i64,
    #[serde(rename = "Completion Time", default)]
    pub completion_time: Num,
    #[serde(rename = "Job Result", default)]
    pub result: JobResult,
}

#[derive(Deserialize, Debug)]
pub struct StageEvent {
    #[serde(rename = "Stage Info")]
    pub info: StageInfo,
}

// `AccUpdates` (declared with the TaskEnd structs) is read here, by the accumulables scan.
impl<'de> Deserialize<'de> for AccUpdates {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Take the array as raw text (the parser skips it at full speed), then look only at
        // the entries that are not internal task metrics: those are most of the bytes of a
        // TaskEnd line and duplicate its "Task Metrics".
        let raw: &'de serde_json::value::RawValue = Deserialize::deserialize(d)?;
        scan_accumulables(raw.get().as_bytes()).map_err(de::Error::custom)
    }
}

/// The key of a task's accumulables.
static ACCUMULABLES_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"Accumulables\":["));

/// Structural scanning 32 bytes at a time ([`crate::scan::simd::brackets`]: blocks with a
/// backslash give up), then the same strict checks as the scalar scan, made only where the
/// array's own elements open and close (the commas between them checked in the bytes between,
/// not one by one inside the objects).
#[cfg(target_arch = "x86_64")]
mod simd {
    use crate::scan::simd::brackets;

    /// Between two elements (or the `[` and an element or `]`): whitespace with one comma
    /// (`Some(true)`) or none (`Some(false)`); `None` for anything else.
    #[inline]
    fn gap(b: &[u8]) -> Option<bool> {
        match b {
            [] => Some(false),
            [b','] => Some(true),
            _ => {
                let mut comma = false;
                for &c in b {
                    match c {
                        b',' if !comma => comma = true,
                        c if c.is_ascii_whitespace() => {}
                        _ => return None,
                    }
                }
                Some(comma)
            }
        }
    }

    /// `None`: give up (an escape, or anything the scalar scan should judge and word).
    #[target_feature(enable = "avx2")]
    pub(super) fn array_of_objects(raw: &[u8]) -> Option<(Vec<&[u8]>, usize)> {
        if raw.first() != Some(&b'[') {
            return None;
        }
        // a task's accumulables: some 40 objects of 100 to 200 bytes (one allocation, not six)
        let mut out = Vec::with_capacity(64);
        let mut depth = 0usize;
        let mut obj_start = 0usize;
        let mut inside_carry = 0u32; // all ones when the previous block ended inside a string
        // where the last element (or the array) closed (opened): the gap after it is checked
        let mut prev = 0usize;
        let mut base = 0usize;
        while base + 32 <= raw.len() {
            let (opens, closes) = brackets(raw, base, &mut inside_carry)?;
            let mut bits = opens | closes;
            while bits != 0 {
                let bit = bits & bits.wrapping_neg();
                bits ^= bit;
                let p = base + bit.trailing_zeros() as usize;
                if opens & bit != 0 {
                    match depth {
                        0 if p == 0 => {}
                        // an element: an object, after `[` with no comma or after an element
                        // with one
                        1 if raw[p] == b'{' && gap(&raw[prev + 1..p])? == (prev != 0) => {
                            obj_start = p;
                        }
                        0 | 1 => return None,
                        _ => {}
                    }
                    depth += 1;
                } else {
                    depth = depth.checked_sub(1)?;
                    match depth {
                        // the array's end: no comma before it
                        0 => {
                            return (raw[p] == b']' && !gap(&raw[prev + 1..p])?)
                                .then_some((out, p + 1));
                        }
                        1 => {
                            if raw[p] != b'}' {
                                return None;
                            }
                            out.push(&raw[obj_start..=p]);
                            prev = p;
                        }
                        _ => {}
                    }
                }
            }
            base += 32;
        }
        None // the array runs into the last partial block: the scalar scan finishes it
    }
}

/// The key of a task's executor metrics (Spark 3+), of which aether reads only TotalGCTime.
static EXECUTOR_METRICS_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"Task Executor Metrics\":{"));

/// The objects of a JSON array of objects starting at `raw[0] == b'['`, and the index just
/// past its closing `]`. A strict structural scan: elements must be objects separated by commas;
/// strings (with escapes) and nesting are tracked, scalars inside objects are left to the parser
/// of each object. Anything else is an error.
fn array_of_objects(raw: &[u8]) -> Result<(Vec<&[u8]>, usize), String> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked just above).
        if let Some(found) = unsafe { simd::array_of_objects(raw) } {
            return Ok(found);
        }
    }
    array_of_objects_scalar(raw)
}

/// The same as [`array_of_objects`], one byte at a time (the reference, and the path for
/// arrays with escapes or without AVX2).
fn array_of_objects_scalar(raw: &[u8]) -> Result<(Vec<&[u8]>, usize), String> {
    let bad = |what: &str, at: usize| Err(format!("accumulables: {what} at byte {at}"));
    let ws = |mut i: usize| {
        while i < raw.len() && raw[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    if raw.first() != Some(&b'[') {
        return bad("expected '['", 0);
    }
    let mut out = Vec::new();
    let mut i = ws(1);
    if raw.get(i) == Some(&b']') {
        return Ok((out, i + 1));
    }
    loop {
        let end = object_end(raw, i)?;
        out.push(&raw[i..=end]);
        i = ws(end + 1);
        match raw.get(i) {
            Some(b',') => i = ws(i + 1),
            Some(b']') => return Ok((out, i + 1)),
            _ => return bad("expected ',' or ']'", i),
        }
    }
}

/// The SQL-metric updates in a raw `Accumulables` JSON array.
fn scan_accumulables(raw: &[u8]) -> Result<AccUpdates, String> {
    let raw = raw.trim_ascii();
    if raw == b"null" {
        return Ok(AccUpdates::default());
    }
    let (objects, end) = array_of_objects(raw)?;
    if end != raw.len() {
        return Err("accumulables: trailing bytes after the array".into());
    }
    updates_from_objects(&objects)
}

/// The SQL-metric updates among accumulable objects (internal task metrics skipped).
fn updates_from_objects(objects: &[&[u8]]) -> Result<AccUpdates, String> {
    #[derive(Deserialize)]
    struct Raw<'a> {
        #[serde(rename = "ID", default)]
        id: Num,
        #[serde(rename = "Name", borrow, default)]
        name: Option<Cow<'a, str>>,
        #[serde(rename = "Update", default)]
        update: Num,
        #[serde(rename = "Count Failed Values", default)]
        count_failed_values: Option<bool>,
    }
    let mut out = Vec::with_capacity(objects.len());
    for &text in objects {
        // the hand-written reader first (it skips internal task metrics); serde when unsure
        match crate::fast::acc_update(text) {
            Some(Some(u)) => {
                out.push(u);
                continue;
            }
            Some(None) => continue,
            None => {}
        }
        let r: Raw = serde_json::from_slice(text).map_err(|e| e.to_string())?;
        let Some(name) = r.name else { continue };
        if name.starts_with("internal.") {
            continue;
        }
        if let (Some(id), Some(update)) = (r.id.0, r.update.0) {
            out.push(AccUpdate {
                id,
                update,
                count_failed: r.count_failed_values != Some(false),
                gpu: gpu_metric(name.as_bytes()),
            });
        }
    }
    Ok(AccUpdates(out))
}

#[derive(Deserialize, Debug, Clone)]
pub struct PlanMetric {
    pub name: Option<String>,
    #[serde(rename = "accumulatorId")]
    pub accumulator_id: Num,
    #[serde(rename = "metricType")]
    pub metric_type: Option<String>,
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct SparkPlanInfo {
    #[serde(rename = "nodeName", default)]
    pub node_name: String,
    #[serde(rename = "simpleString", default)]
    pub simple_string: String,
    #[serde(default)]
    pub children: Vec<SparkPlanInfo>,
    #[serde(default)]
    pub metrics: Vec<PlanMetric>,
}

#[derive(Deserialize, Debug)]
pub struct SqlExecutionStart {
    #[serde(rename = "executionId")]
    pub execution_id: i64,
    #[serde(rename = "rootExecutionId", default)]
    pub root_execution_id: Num,
    pub description: Option<String>,
    pub details: Option<String>,
    #[serde(rename = "sparkPlanInfo", default)]
    pub plan: Option<SparkPlanInfo>,
    #[serde(default)]
    pub time: Num,
    /// Spark 4.x
    #[serde(rename = "queryId")]
    pub query_id: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct SqlExecutionEnd {
    #[serde(rename = "executionId")]
    pub execution_id: i64,
    #[serde(default)]
    pub time: Num,
    #[serde(rename = "errorMessage")]
    pub error_message: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct SqlAdaptiveExecutionUpdate {
    #[serde(rename = "executionId")]
    pub execution_id: i64,
    #[serde(rename = "sparkPlanInfo", default)]
    pub plan: Option<SparkPlanInfo>,
}

#[derive(Deserialize, Debug)]
pub struct SqlAdaptiveMetricUpdates {
    #[serde(rename = "executionId")]
    pub execution_id: i64,
    #[serde(rename = "sqlPlanMetrics", default)]
    pub metrics: Vec<PlanMetric>,
}

#[derive(Deserialize, Debug, Default)]
pub struct BlockManagerId {
    #[serde(rename = "Executor ID")]
    pub executor_id: Option<String>,
    #[serde(rename = "Host")]
    pub host: Option<String>,
}

/// A block manager registered (memory available for storage and execution).
#[derive(Deserialize, Debug)]
pub struct BlockManagerAdded {
    #[serde(rename = "Block Manager ID", default)]
    pub id: BlockManagerId,
    #[serde(rename = "Maximum Memory", default)]
    pub max_memory: Num,
    #[serde(rename = "Maximum Onheap Memory", default)]
    pub max_onheap_memory: Num,
    #[serde(rename = "Maximum Offheap Memory", default)]
    pub max_offheap_memory: Num,
    #[serde(rename = "Timestamp", default)]
    pub timestamp: Num,
}

/// A task launched: only the executor it runs on is read (the History Server counts a task in
/// its executor's `totalTasks` when it starts).
#[derive(Deserialize, Debug, Default)]
pub struct TaskStart {
    #[serde(rename = "Task Info", default)]
    pub info: TaskStartInfo,
}

#[derive(Deserialize, Debug, Default)]
pub struct TaskStartInfo {
    #[serde(rename = "Executor ID")]
    pub executor_id: Option<Text>,
}

/// An executor's peak memory and GC metrics during one stage attempt (Spark 3+, written at
/// the stage's end when `spark.eventLog.logStageExecutorMetrics` is on).
#[derive(Deserialize, Debug)]
pub struct StageExecutorMetrics {
    #[serde(rename = "Executor ID")]
    pub executor_id: String,
    #[serde(rename = "Executor Metrics", default)]
    pub metrics: ExecutorMetrics,
}

/// A block manager removed (its executor lost or stopped).
#[derive(Deserialize, Debug)]
pub struct BlockManagerRemoved {
    #[serde(rename = "Block Manager ID", default)]
    pub id: BlockManagerId,
    #[serde(rename = "Timestamp", default)]
    pub timestamp: Num,
}

/// The amount of one resource in a resource profile (executor: integer, task: fractional).
#[derive(Deserialize, Debug, Default)]
pub struct ResourceAmount {
    #[serde(rename = "Amount", default)]
    pub amount: Option<serde_json::Value>,
}

impl ResourceAmount {
    /// The amount as a number (Spark writes numbers; a numeric string is accepted too).
    pub fn value(&self) -> Option<f64> {
        match self.amount.as_ref()? {
            serde_json::Value::Number(n) => n.as_f64(),
            serde_json::Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

/// A resource profile (Spark 3.1+): what each executor and each task asks for.
#[derive(Deserialize, Debug)]
pub struct ResourceProfileAdded {
    #[serde(rename = "Resource Profile Id")]
    pub id: i64,
    #[serde(rename = "Executor Resource Requests", default)]
    pub executor: Option<std::collections::HashMap<String, ResourceAmount>>,
    #[serde(rename = "Task Resource Requests", default)]
    pub task: Option<std::collections::HashMap<String, ResourceAmount>>,
}

/// Databricks' log metadata: it carries the Spark version when there is no LogStart.
#[derive(Deserialize, Debug)]
pub struct DbcMetadata {
    #[serde(rename = "Spark Version")]
    pub spark_version: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct DriverAccumUpdates {
    #[serde(rename = "executionId")]
    pub execution_id: i64,
    #[serde(rename = "accumUpdates", default)]
    pub updates: Vec<(Num, Num)>,
}

/// The event kinds aether reads; every other event is counted and skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    LogStart,
    ApplicationStart,
    ApplicationEnd,
    EnvironmentUpdate,
    ExecutorAdded,
    ExecutorRemoved,
    JobStart,
    JobEnd,
    StageSubmitted,
    StageCompleted,
    TaskEnd,
    TaskStart,
    StageExecutorMetrics,
    SqlExecutionStart,
    SqlExecutionEnd,
    SqlAdaptiveExecutionUpdate,
    SqlAdaptiveMetricUpdates,
    DriverAccumUpdates,
    BlockManagerAdded,
    BlockManagerRemoved,
    ResourceProfileAdded,
    DbcMetadata,
}

impl Kind {
    /// The kind named by an `"Event"` value, or `None` for events aether skips.
    pub fn from_name(name: &[u8]) -> Option<Kind> {
        const SQL_UI: &[u8] = b"org.apache.spark.sql.execution.ui.";
        let short = name.strip_prefix(SQL_UI).unwrap_or(name);
        Some(match short {
            b"SparkListenerTaskEnd" => Kind::TaskEnd,
            b"SparkListenerTaskStart" => Kind::TaskStart,
            b"SparkListenerStageExecutorMetrics" => Kind::StageExecutorMetrics,
            b"SparkListenerLogStart" => Kind::LogStart,
            b"SparkListenerApplicationStart" => Kind::ApplicationStart,
            b"SparkListenerApplicationEnd" => Kind::ApplicationEnd,
            b"SparkListenerEnvironmentUpdate" => Kind::EnvironmentUpdate,
            b"SparkListenerExecutorAdded" => Kind::ExecutorAdded,
            b"SparkListenerExecutorRemoved" => Kind::ExecutorRemoved,
            b"SparkListenerJobStart" => Kind::JobStart,
            b"SparkListenerJobEnd" => Kind::JobEnd,
            b"SparkListenerStageSubmitted" => Kind::StageSubmitted,
            b"SparkListenerStageCompleted" => Kind::StageCompleted,
            b"SparkListenerSQLExecutionStart" => Kind::SqlExecutionStart,
            b"SparkListenerSQLExecutionEnd" => Kind::SqlExecutionEnd,
            b"SparkListenerSQLAdaptiveExecutionUpdate" => Kind::SqlAdaptiveExecutionUpdate,
            b"SparkListenerSQLAdaptiveSQLMetricUpdates" => Kind::SqlAdaptiveMetricUpdates,
            b"SparkListenerDriverAccumUpdates" => Kind::DriverAccumUpdates,
            b"SparkListenerBlockManagerAdded" => Kind::BlockManagerAdded,
            b"SparkListenerBlockManagerRemoved" => Kind::BlockManagerRemoved,
            b"SparkListenerResourceProfileAdded" => Kind::ResourceProfileAdded,
            b"DBCEventLoggingListenerMetadata" => Kind::DbcMetadata,
            _ => return None,
        })
    }
}

/// The field names a serde-derived struct reads, found by asking it to deserialize from a
/// deserializer that only records the field list.
fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Recorder<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Recorder<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("fields recorded"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Recorder(&mut fields));
    fields
}

impl Kind {
    /// The top-level fields aether reads from this event (besides `"Event"`).
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            Kind::LogStart => fields_of::<LogStart>(),
            Kind::ApplicationStart => fields_of::<ApplicationStart>(),
            Kind::ApplicationEnd => fields_of::<ApplicationEnd>(),
            Kind::EnvironmentUpdate => fields_of::<EnvironmentUpdate>(),
            Kind::ExecutorAdded => fields_of::<ExecutorAdded>(),
            Kind::ExecutorRemoved => fields_of::<ExecutorRemoved>(),
            Kind::JobStart => fields_of::<JobStart>(),
            Kind::JobEnd => fields_of::<JobEnd>(),
            Kind::StageSubmitted | Kind::StageCompleted => fields_of::<StageEvent>(),
            Kind::TaskEnd => fields_of::<TaskEnd>(),
            Kind::TaskStart => fields_of::<TaskStart>(),
            Kind::StageExecutorMetrics => fields_of::<StageExecutorMetrics>(),
            Kind::SqlExecutionStart => fields_of::<SqlExecutionStart>(),
            Kind::SqlExecutionEnd => fields_of::<SqlExecutionEnd>(),
            Kind::SqlAdaptiveExecutionUpdate => fields_of::<SqlAdaptiveExecutionUpdate>(),
            Kind::SqlAdaptiveMetricUpdates => fields_of::<SqlAdaptiveMetricUpdates>(),
            Kind::DriverAccumUpdates => fields_of::<DriverAccumUpdates>(),
            Kind::BlockManagerAdded => fields_of::<BlockManagerAdded>(),
            Kind::BlockManagerRemoved => fields_of::<BlockManagerRemoved>(),
            Kind::ResourceProfileAdded => fields_of::<ResourceProfileAdded>(),
            Kind::DbcMetadata => fields_of::<DbcMetadata>(),
        }
    }
}

/// The top-level fields of an event line that aether does not read (for `ignored_fields`),
/// sorted, each once. The keys are read in place, the values jumped over; serde reads the line
/// when that is unsure (and gives none for a line that is not JSON).
pub fn ignored_fields(line: &[u8], kind: Kind) -> Vec<String> {
    let mut keys: Vec<String> = match crate::fast::keys_of(line) {
        Some(keys) => keys.into_iter().map(String::from).collect(),
        None => {
            match serde_json::from_slice::<std::collections::BTreeMap<String, IgnoredAny>>(line) {
                Ok(map) => map.into_keys().collect(),
                Err(_) => return Vec::new(),
            }
        }
    };
    keys.sort_unstable();
    keys.dedup();
    let known = kind.fields();
    keys.retain(|k| k != "Event" && !known.contains(&k.as_str()));
    keys
}

/// One parsed event, owning its data (so parsing and applying can run on different threads).
/// Every event larger than a few words is boxed: an event is moved from the parser into its
/// chunk's list and out again to be applied, and most lines are tasks' starts and ends (a
/// pointer, or a word or three), which would otherwise each move as much as the largest event.
#[derive(Debug)]
pub enum Event {
    LogStart(LogStart),
    ApplicationStart(Box<ApplicationStart>),
    ApplicationEnd(ApplicationEnd),
    EnvironmentUpdate(Box<EnvironmentUpdate>),
    ExecutorAdded(Box<ExecutorAdded>),
    ExecutorRemoved(Box<ExecutorRemoved>),
    JobStart(Box<JobStart>),
    JobEnd(Box<JobEnd>),
    StageSubmitted(Box<StageEvent>),
    StageCompleted(Box<StageEvent>),
    TaskEnd(Box<TaskEnd>),
    TaskStart(TaskStart),
    StageExecutorMetrics(StageExecutorMetrics),
    SqlExecutionStart(Box<SqlExecutionStart>),
    SqlExecutionEnd(SqlExecutionEnd),
    SqlAdaptiveExecutionUpdate(Box<SqlAdaptiveExecutionUpdate>),
    SqlAdaptiveMetricUpdates(SqlAdaptiveMetricUpdates),
    DriverAccumUpdates(DriverAccumUpdates),
    BlockManagerAdded(Box<BlockManagerAdded>),
    BlockManagerRemoved(Box<BlockManagerRemoved>),
    ResourceProfileAdded(Box<ResourceProfileAdded>),
    DbcMetadata(DbcMetadata),
}

impl Event {
    /// The kind of event this is (as [`Kind::from_name`] of its name).
    pub fn kind(&self) -> Kind {
        match self {
            Event::LogStart(_) => Kind::LogStart,
            Event::ApplicationStart(_) => Kind::ApplicationStart,
            Event::ApplicationEnd(_) => Kind::ApplicationEnd,
            Event::EnvironmentUpdate(_) => Kind::EnvironmentUpdate,
            Event::ExecutorAdded(_) => Kind::ExecutorAdded,
            Event::ExecutorRemoved(_) => Kind::ExecutorRemoved,
            Event::JobStart(_) => Kind::JobStart,
            Event::JobEnd(_) => Kind::JobEnd,
            Event::StageSubmitted(_) => Kind::StageSubmitted,
            Event::StageCompleted(_) => Kind::StageCompleted,
            Event::TaskEnd(_) => Kind::TaskEnd,
            Event::TaskStart(_) => Kind::TaskStart,
            Event::StageExecutorMetrics(_) => Kind::StageExecutorMetrics,
            Event::SqlExecutionStart(_) => Kind::SqlExecutionStart,
            Event::SqlExecutionEnd(_) => Kind::SqlExecutionEnd,
            Event::SqlAdaptiveExecutionUpdate(_) => Kind::SqlAdaptiveExecutionUpdate,
            Event::SqlAdaptiveMetricUpdates(_) => Kind::SqlAdaptiveMetricUpdates,
            Event::DriverAccumUpdates(_) => Kind::DriverAccumUpdates,
            Event::BlockManagerAdded(_) => Kind::BlockManagerAdded,
            Event::BlockManagerRemoved(_) => Kind::BlockManagerRemoved,
            Event::ResourceProfileAdded(_) => Kind::ResourceProfileAdded,
            Event::DbcMetadata(_) => Kind::DbcMetadata,
        }
    }
}

/// The outcome of looking at one line.
#[derive(Debug)]
pub enum Parsed<'a> {
    /// An event aether reads, with its `"Event"` name.
    Event(Cow<'a, [u8]>, Event),
    /// A well-formed event aether does not need, with its name (so it can be counted).
    Skipped(Cow<'a, [u8]>),
    /// An empty line.
    Blank,
}

#[derive(Deserialize)]
struct EventName<'a> {
    #[serde(rename = "Event", borrow)]
    event: Cow<'a, str>,
}

/// The `"Event"` name of a line, found cheaply when the line starts with `{"Event":"…"`.
fn fast_event_name(line: &[u8]) -> Option<&[u8]> {
    const P: &[u8] = b"{\"Event\":\"";
    let rest = line.strip_prefix(P)?;
    let end = memchr::memchr(b'"', rest)?;
    Some(&rest[..end])
}

/// A TaskEnd line. Its `Accumulables` array is most of its bytes, and mostly internal task
/// metrics that "Task Metrics" holds too: the array is found by a structural scan (only SQL
/// metric entries are parsed) and the rest of the line is read in place, the array jumped over.
/// When the scan finds anything unexpected, the whole line goes through the parser instead.
///
/// With `accumulables` false the array is not read at all: its end is found from the key that
/// follows it, and the task's SQL-metric updates are left empty.
fn parse_task_end(line: &[u8], accumulables: bool) -> Result<TaskEnd, String> {
    thread_local! {
        /// the line without its accumulables, reused from line to line
        static REST: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    REST.with_borrow_mut(|rest| {
        let cut = if accumulables {
            None
        } else {
            skip_accumulables(line).map(|(open, close)| (open, close, Vec::new()))
        };
        let Some((open, close, objects)) = cut.or_else(|| accumulables_array(line)) else {
            let mut t: TaskEnd = de(line)?;
            if !accumulables {
                t.info.accumulables = AccUpdates::default();
            }
            return Ok(t);
        };
        // read in place, the array jumped over; serde reads the line cut down (the array
        // emptied, the executor's metrics cut to the one read) when the reader gives up
        let mut t: TaskEnd = match crate::fast::task_end(line, Some((open, close))) {
            Some(t) => t,
            None => {
                cut_task_end(line, open, close, rest);
                de(rest)?
            }
        };
        if accumulables {
            t.info.accumulables =
                updates_from_objects(&objects).map_err(|e| format!("malformed event: {e}"))?;
        }
        Ok(t)
    })
}

/// Where a TaskEnd's `Accumulables` array opens and (one past where it) closes, found without
/// reading it: Spark writes the array last in `Task Info`, followed by `"Task Executor
/// Metrics":{`, `"Task Metrics":{` or the end of the event. An unescaped quote cannot be inside
/// a string, and neither the array's entries (updates are numbers, strings or block statuses)
/// nor the metrics objects after it (numbers and block statuses) hold a key starting with
/// `Task `, so the one `]},"Task Executor Metrics":{` or `]},"Task Metrics":{` after the key
/// closes the array. It is looked for from the line's end, so only the metrics are read, not
/// the array (most of the line). `None` when the line has another shape (the array is then
/// scanned).
fn skip_accumulables(line: &[u8]) -> Option<(usize, usize)> {
    const CLOSE: &[u8] = b"]},\"Task ";
    let k = ACCUMULABLES_KEY.find(line)?;
    let open = k + ACCUMULABLES_KEY.needle().len() - 1;
    let mut end = line.len();
    let close = loop {
        match memchr::memrchr(b']', &line[open + 1..end]) {
            Some(i) => {
                let at = open + 1 + i;
                let rest = &line[at..];
                if let Some(key) = rest.strip_prefix(CLOSE) {
                    if !(key.starts_with(b"Executor Metrics\":{")
                        || key.starts_with(b"Metrics\":{"))
                    {
                        return None;
                    }
                    break at + 1;
                }
                end = at;
            }
            // the last field of the event: `…]}}`
            None if line.ends_with(b"]}}") => break line.len() - 2,
            None => return None,
        }
    };
    if close < open + 2 || ACCUMULABLES_KEY.find(&line[close..]).is_some() {
        return None;
    }
    Some((open, close))
}

/// The key of a task's executor.
static EXECUTOR_ID_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"Executor ID\":\""));

/// A TaskStart line, as common as TaskEnd lines and read only for its executor: an unescaped
/// `"Executor ID":"` can only be the key itself (quotes inside strings are escaped), so when it
/// occurs once and its value has no escape, that value is the executor; otherwise the line goes
/// through the parser.
fn parse_task_start(line: &[u8]) -> Result<TaskStart, String> {
    let fast = || -> Option<TaskStart> {
        if line.last() != Some(&b'}') {
            return None;
        }
        let k = EXECUTOR_ID_KEY.find(line)? + EXECUTOR_ID_KEY.needle().len();
        let len = memchr::memchr2(b'"', b'\\', &line[k..])?;
        if line[k + len] != b'"' || EXECUTOR_ID_KEY.find(&line[k + len..]).is_some() {
            return None;
        }
        let id = std::str::from_utf8(&line[k..k + len]).ok()?;
        Some(TaskStart {
            info: TaskStartInfo {
                executor_id: Some(Text::new(id)),
            },
        })
    };
    match fast() {
        Some(t) => Ok(t),
        None => de(line),
    }
}

/// A TaskEnd's `Accumulables` array, scanned: where it opens, (one past where) it closes, and
/// its objects; `None` when the line does not have the expected shape.
fn accumulables_array(line: &[u8]) -> Option<(usize, usize, Vec<&[u8]>)> {
    // An unescaped `"Accumulables":[` can only be the key itself, never text inside a string;
    // it must occur once for the cut to be unambiguous.
    let k = ACCUMULABLES_KEY.find(line)?;
    let open = k + ACCUMULABLES_KEY.needle().len() - 1;
    let (objects, len) = array_of_objects(&line[open..]).ok()?;
    let close = open + len;
    if ACCUMULABLES_KEY.find(&line[close..]).is_some() {
        return None;
    }
    Some((open, close, objects))
}

/// Into `rest`: a TaskEnd line with its `Accumulables` array (`line[open..close]`) emptied and
/// its `Task Executor Metrics` object cut down to the one metric read.
fn cut_task_end(line: &[u8], open: usize, close: usize, rest: &mut Vec<u8>) {
    // Of the executor's metrics (after the task info, Spark 3+) only TotalGCTime is read:
    // cutting a complete `"Task Executor Metrics":{…}` object down to it, when its value is a
    // plain integer (otherwise the object stays whole), leaves valid JSON with the same fields
    // read. (The object holds numbers only: an unescaped key in it is the key.)
    let exec = EXECUTOR_METRICS_KEY.find(&line[close..]).and_then(|e| {
        let o = close + e + EXECUTOR_METRICS_KEY.needle().len() - 1;
        let end = object_end(line, o).ok()?;
        let obj = &line[o..=end];
        let gc = match crate::fast::gc_time_at(obj)? {
            None => &b""[..],
            Some(at) => {
                let v = obj[at..].trim_ascii_start();
                let n = v.iter().take_while(|c| c.is_ascii_digit()).count();
                let after = v[n..].trim_ascii_start().first();
                if n == 0 || n > 18 || !matches!(after, Some(b',' | b'}')) {
                    return None;
                }
                &v[..n]
            }
        };
        Some((o, end + 1, gc))
    });
    rest.clear();
    rest.extend_from_slice(&line[..open]);
    rest.extend_from_slice(b"[]");
    match exec {
        Some((o, c, gc)) => {
            rest.extend_from_slice(&line[close..o]);
            if gc.is_empty() {
                rest.extend_from_slice(b"{}");
            } else {
                rest.extend_from_slice(b"{\"TotalGCTime\":");
                rest.extend_from_slice(gc);
                rest.push(b'}');
            }
            rest.extend_from_slice(&line[c..]);
        }
        None => rest.extend_from_slice(&line[close..]),
    }
}

fn de<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Result<T, String> {
    // One UTF-8 check of the whole line is much cheaper than one per string; a line with a
    // stray byte somewhere goes through the byte reader, which checks only the strings it reads.
    let res = match std::str::from_utf8(line) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(line),
    };
    res.map_err(|e| format!("malformed event: {}", short_error(&e.to_string())))
}

fn short_error(s: &str) -> String {
    let s = s.lines().next().unwrap_or(s);
    if s.len() > 200 {
        format!("{}…", &s[..s.floor_char_boundary(200)])
    } else {
        s.to_string()
    }
}

/// Parse one line of an event log.
///
/// Lines of events aether does not read are recognised from their prefix and not parsed
/// further (a full parse is needed only when the line does not start with `{"Event":"`).
pub fn parse_line(line: &[u8]) -> Result<Parsed<'_>, String> {
    parse_line_with(line, true)
}

/// [`parse_line`], reading the tasks' accumulables (their SQL-metric updates) or not: with
/// `accumulables` false, a `TaskEnd`'s `Task Info.Accumulables` is left empty, unread.
pub fn parse_line_with(line: &[u8], accumulables: bool) -> Result<Parsed<'_>, String> {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return Ok(Parsed::Blank);
    }
    let name: Cow<'_, [u8]> = match fast_event_name(trimmed) {
        Some(name) => Cow::Borrowed(name),
        None => {
            if trimmed[0] != b'{' {
                return Err("not a JSON object (is this an event log?)".to_string());
            }
            let n: EventName = de(trimmed)?;
            Cow::Owned(n.event.into_owned().into_bytes())
        }
    };
    let Some(kind) = Kind::from_name(&name) else {
        // validate cheaply that the line is a complete object; a cut-off last line must not pass
        if trimmed.last() != Some(&b'}') {
            return Err("malformed event: line is cut off".to_string());
        }
        return Ok(Parsed::Skipped(name));
    };
    let ev = match kind {
        Kind::TaskEnd => Event::TaskEnd(Box::new(parse_task_end(trimmed, accumulables)?)),
        Kind::TaskStart => Event::TaskStart(parse_task_start(trimmed)?),
        Kind::StageExecutorMetrics => Event::StageExecutorMetrics(de(trimmed)?),
        Kind::LogStart => Event::LogStart(de(trimmed)?),
        Kind::ApplicationStart => Event::ApplicationStart(Box::new(de(trimmed)?)),
        Kind::ApplicationEnd => Event::ApplicationEnd(de(trimmed)?),
        Kind::EnvironmentUpdate => Event::EnvironmentUpdate(Box::new(de(trimmed)?)),
        Kind::ExecutorAdded => Event::ExecutorAdded(Box::new(de(trimmed)?)),
        Kind::ExecutorRemoved => Event::ExecutorRemoved(Box::new(de(trimmed)?)),
        Kind::JobStart => Event::JobStart(Box::new(de(trimmed)?)),
        Kind::JobEnd => Event::JobEnd(Box::new(de(trimmed)?)),
        Kind::StageSubmitted => Event::StageSubmitted(Box::new(de(trimmed)?)),
        Kind::StageCompleted => Event::StageCompleted(Box::new(de(trimmed)?)),
        Kind::SqlExecutionStart => Event::SqlExecutionStart(Box::new(de(trimmed)?)),
        Kind::SqlExecutionEnd => Event::SqlExecutionEnd(de(trimmed)?),
        Kind::SqlAdaptiveExecutionUpdate => {
            Event::SqlAdaptiveExecutionUpdate(Box::new(de(trimmed)?))
        }
        Kind::SqlAdaptiveMetricUpdates => Event::SqlAdaptiveMetricUpdates(de(trimmed)?),
        Kind::DriverAccumUpdates => Event::DriverAccumUpdates(de(trimmed)?),
        Kind::BlockManagerAdded => Event::BlockManagerAdded(Box::new(de(trimmed)?)),
        Kind::BlockManagerRemoved => Event::BlockManagerRemoved(Box::new(de(trimmed)?)),
        Kind::ResourceProfileAdded => Event::ResourceProfileAdded(Box::new(de(trimmed)?)),
        Kind::DbcMetadata => Event::DbcMetadata(de(trimmed)?),
    };
    Ok(Parsed::Event(name, ev))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The non-empty lines of a bundled sample log (`datasets/sample/<name>`, zstd).
    pub(super) fn sample_lines(name: &str) -> Vec<Vec<u8>> {
        let path = format!(
            "{}/../../datasets/sample/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = zstd::decode_all(std::fs::File::open(&path).expect(&path)).expect(&path);
        text.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    }

    /// A task's start or end (most lines) moves as a few words, not as the largest event.
    #[test]
    fn events_move_as_a_few_words() {
        assert!(
            std::mem::size_of::<Event>() <= 56,
            "{}",
            std::mem::size_of::<Event>()
        );
    }

    /// An event's kind is the one its name gives, for every kind a real log holds.
    #[test]
    fn an_events_kind_is_its_names() {
        let mut kinds = std::collections::HashSet::new();
        for line in sample_lines("local-1796393658133.zstd") {
            if let Ok(Parsed::Event(name, e)) = parse_line(&line) {
                assert_eq!(Kind::from_name(&name), Some(e.kind()));
                kinds.insert(e.kind());
            }
        }
        assert!(kinds.len() >= 12, "{kinds:?}");
    }

    /// A stage's RDD scopes: each name once, in order; a scope that is not JSON is left out.
    #[test]
    fn rdd_scopes_of_a_stage() {
        let line =
            br#"{"Event":"SparkListenerStageSubmitted","Stage Info":{"Stage ID":3,"RDD Info":[
            {"RDD ID":1,"Scope":"{\"id\":\"7\",\"name\":\"TableCacheQueryStage\"}"},
            {"RDD ID":2,"Scope":"{\"id\":\"8\",\"name\":\"GpuColumnarExchange\"}"},
            {"RDD ID":3,"Scope":"{\"id\":\"9\",\"name\":\"TableCacheQueryStage\"}"},
            {"RDD ID":4,"Scope":"not json"},{"RDD ID":5}]}}"#;
        let line: Vec<u8> = line.iter().copied().filter(|b| *b != b'\n').collect();
        match parse_line(&line) {
            Ok(Parsed::Event(_, Event::StageSubmitted(e))) => assert_eq!(
                e.info.rdd_scopes.0,
                ["TableCacheQueryStage", "GpuColumnarExchange"]
            ),
            _ => panic!("not a stage event"),
        }
    }

    #[test]
    fn numbers_as_strings_and_numbers() {
        let line = br#"{"Event":"SparkListenerTaskEnd","Stage ID":1,"Stage Attempt ID":0,"Task End Reason":{"Reason":"Success"},"Task Info":{"Task ID":7,"Index":2,"Attempt":0,"Launch Time":10,"Executor ID":"1","Host":"h","Locality":"ANY","Speculative":false,"Finish Time":20,"Failed":false,"Killed":false,"Accumulables":[{"ID":5,"Name":"number of output rows","Update":"25000","Value":"25000","Internal":true,"Count Failed Values":true},{"ID":6,"Name":"x","Update":[{"Block ID":"b"}]},{"ID":8,"Name":"internal.metrics.executorRunTime","Update":5}]},"Task Metrics":{"Executor Run Time":5,"Shuffle Read Metrics":{"Remote Bytes Read":3}}}"#;
        let Parsed::Event(_, Event::TaskEnd(t)) = parse_line(line).unwrap() else {
            panic!("not a task end")
        };
        assert_eq!(t.info.task_id, 7);
        // the SQL metric kept, the non-numeric update dropped, internal metrics never kept
        assert_eq!(
            t.info.accumulables.0,
            vec![AccUpdate {
                id: 5,
                update: 25000,
                count_failed: true,
                gpu: None
            }]
        );
        let m = t.metrics.unwrap();
        assert_eq!(m.executor_run_time, Num(Some(5)));
        assert_eq!(m.shuffle_read.unwrap().remote_bytes_read, Num(Some(3)));
        assert_eq!(m.executor_cpu_time, Num(None));
    }

    #[test]
    fn skips_unknown_and_reports_bad_lines() {
        assert!(matches!(
            parse_line(br#"{"Event":"SparkListenerBlockUpdated","x":1}"#),
            Ok(Parsed::Skipped(_))
        ));
        assert!(matches!(parse_line(b"   "), Ok(Parsed::Blank)));
        assert!(
            parse_line(b"21/06/15 INFO driver started")
                .unwrap_err()
                .contains("not a JSON object")
        );
        assert!(parse_line(br#"{"Event":"SparkListenerJobEnd","Job ID":1,"Comp"#).is_err());
        assert!(parse_line(br#"{"Event":"SparkListenerBlockUpdated","x":"#).is_err());
        // key order differs from Spark's: still recognised
        let Parsed::Event(_, Event::JobEnd(j)) = parse_line(
            br#"{"Job ID":3,"Event":"SparkListenerJobEnd","Job Result":{"Result":"JobSucceeded"}}"#,
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(j.job_id, 3);
    }
}

#[cfg(test)]
mod scan_tests {
    use super::*;
    use crate::event_types::num_from_str;

    #[test]
    fn simd_and_scalar_array_scans_agree() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut arrays: Vec<Vec<u8>> = vec![
            br#"[{"a":"}]"}, {"b":[1,{"c":2}]} ] tail"#.to_vec(),
            br#"[ ]"#.to_vec(),
            format!(
                "[{}]",
                vec![r#"{"ID":1,"Name":"n","Update":"}{"}"#; 40].join(",")
            )
            .into_bytes(),
            format!(
                "[{}] x",
                vec![r#"{"ID":1,"Name":"n","Update":2}"#; 40].join(" , ")
            )
            .into_bytes(),
            format!("[{} x {}]", r#"{"a":1}"#, r#"{"b":2}"#).into_bytes(),
        ];
        // long enough for the vectorised scan (and padded: the array ends in a whole block),
        // with every kind of wrong or odd separator in every place
        let obj = r#"{"ID":7,"Name":"a, b","Update":[1,{"x":"]"}]}"#;
        let pad = " ".repeat(40);
        for sep in [
            ",", " , ", ",,", " ", "", "\n,\t", ", x", "]", "}", "[", ",]", ",{}",
        ] {
            // the separator in place `at`: before the first object, between two, after the last
            for at in 0..7 {
                let mut a = String::from("[");
                for k in 0..6 {
                    a.push_str(match k {
                        _ if k == at => sep,
                        0 => "",
                        _ => ",",
                    });
                    a.push_str(obj);
                }
                a.push_str(if at == 6 { sep } else { "" });
                a.push(']');
                a.push_str(&pad);
                arrays.push(a.into_bytes());
            }
        }
        for f in [
            "datasets/sample/local-1796009671201",
            "datasets/sample/local-1796009777604",
        ] {
            let log = std::fs::read(root.join(f)).unwrap();
            for line in log.split(|b| *b == b'\n') {
                if let Some(k) = ACCUMULABLES_KEY.find(line) {
                    arrays.push(line[k + ACCUMULABLES_KEY.needle().len() - 1..].to_vec());
                }
            }
        }
        let mut simd_used = 0;
        for a in &arrays {
            let scalar = array_of_objects_scalar(a).ok();
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 checked
                if let Some(v) = unsafe { simd::array_of_objects(a) } {
                    simd_used += 1;
                    assert_eq!(Some(v), scalar, "{}", String::from_utf8_lossy(a));
                }
            }
            assert_eq!(array_of_objects(a).ok(), scalar);
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            assert!(
                simd_used > 30,
                "the vectorised scan was used {simd_used} times"
            );
        }
    }

    #[test]
    fn array_of_objects_is_strict() {
        let (objs, end) = array_of_objects(br#"[{"a":"}]"}, {"b":[1,{"c":2}]} ] tail"#).unwrap();
        assert_eq!(
            objs,
            vec![&br#"{"a":"}]"}"#[..], &br#"{"b":[1,{"c":2}]}"#[..]]
        );
        assert_eq!(end, br#"[{"a":"}]"}, {"b":[1,{"c":2}]} ]"#.len());
        assert_eq!(array_of_objects(b"[ ]").unwrap().0.len(), 0);
        for bad in [
            &b"[1,2]"[..],
            b"[{\"a\":1} {\"b\":2}]",
            b"[{\"a\":\"x}]",
            b"[{\"a\":[}]",
            b"{}",
        ] {
            assert!(
                array_of_objects(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// The fast TaskEnd path and the plain parser agree on every TaskEnd of real logs
    /// (Spark 1.2 to 4.3: the bundled samples and Spark's and the reference tool's test logs).
    #[test]
    fn task_end_fast_path_agrees_with_the_parser() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let shared = root.join("../shared/datasets");
        assert!(
            shared.exists(),
            "the shared datasets are missing at {}",
            shared.display()
        );
        let mut files: Vec<std::path::PathBuf> = Vec::new();
        for dir in [
            root.join("datasets/sample"),
            shared.join("real-spark-4.3.0"),
            shared.join("spark-tests/core/src/test/resources/spark-events"),
            shared.join("rapids-tools/spark-events-qualification"),
        ] {
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let p = e.path();
                if p.is_file() && p.extension().is_none() {
                    files.push(p);
                }
            }
        }
        let (mut lines, mut updates, mut fast, mut skipped) = (0, 0, 0, 0);
        for f in files {
            let log = std::fs::read(&f).unwrap();
            for line in log
                .split(|b| *b == b'\n')
                .filter(|l| l.starts_with(b"{\"Event\":\"SparkListenerTaskEnd\""))
            {
                let Ok(slow) = de::<TaskEnd>(line) else {
                    continue;
                };
                let mut got =
                    parse_task_end(line, true).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                assert_eq!(format!("{got:?}"), format!("{slow:?}"), "{}", f.display());
                // and an independent reading of the SQL-metric updates, through serde_json::Value
                let v: serde_json::Value = serde_json::from_slice(line).unwrap();
                let want: Vec<AccUpdate> = v["Task Info"]["Accumulables"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|e| {
                                let name = e["Name"].as_str()?;
                                if name.starts_with("internal.") {
                                    return None;
                                }
                                let update = match &e["Update"] {
                                    serde_json::Value::Number(n) => n.as_i64(),
                                    serde_json::Value::String(s) => num_from_str(s),
                                    _ => None,
                                }?;
                                Some(AccUpdate {
                                    id: e["ID"].as_i64()?,
                                    update,
                                    count_failed: e["Count Failed Values"].as_bool() != Some(false),
                                    gpu: e["Name"].as_str().and_then(|n| gpu_metric(n.as_bytes())),
                                })
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                assert_eq!(got.info.accumulables.0, want, "{}", f.display());
                lines += 1;
                updates += got.info.accumulables.0.len();
                let mut rest = Vec::new();
                let scanned = accumulables_array(line);
                if let Some((open, close, _)) = scanned {
                    // the line read in place and cut down read the same
                    let in_place = crate::fast::task_end(line, Some((open, close)));
                    cut_task_end(line, open, close, &mut rest);
                    let cut = crate::fast::task_end(&rest, None);
                    assert_eq!(
                        format!("{in_place:?}"),
                        format!("{cut:?}"),
                        "{}",
                        f.display()
                    );
                    if in_place.is_some() {
                        fast += 1;
                    }
                }
                // without the accumulables: the array found where the scan ends it (when it
                // is found), and everything else read as with them
                if let Some(bounds) = skip_accumulables(line) {
                    let scanned = scanned.map(|(open, close, _)| (open, close));
                    assert_eq!(Some(bounds), scanned, "{}", f.display());
                    skipped += 1;
                }
                let mut without =
                    parse_task_end(line, false).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                assert!(without.info.accumulables.0.is_empty());
                let want = format!("{got:?}");
                without.info.accumulables = std::mem::take(&mut got.info.accumulables);
                assert_eq!(format!("{without:?}"), want, "{}", f.display());
            }
        }
        assert!(
            lines > 1_000 && updates > 0,
            "{lines} lines, {updates} updates"
        );
        // the hand-written reader, not the serde fallback, read (almost) all of them
        assert!(fast * 100 >= lines * 95, "fast path took {fast} of {lines}");
        // and the array's end was found without scanning it in (almost) all of them
        assert!(skipped * 100 >= lines * 95, "skipped {skipped} of {lines}");
    }

    /// Without the accumulables, the array's end is taken from the key after it only when the
    /// line has Spark's shape; otherwise the array is scanned, and a line that is not an event
    /// is still an error.
    #[test]
    fn task_end_without_accumulables_keeps_the_rest() {
        let head = r#"{"Event":"SparkListenerTaskEnd","Stage ID":1,"Stage Attempt ID":0,"Task End Reason":{"Reason":"Success"},"Task Info":{"Task ID":7,"Index":2,"Attempt":0,"Launch Time":10,"Executor ID":"1","Host":"h","Locality":"ANY","Speculative":false,"Finish Time":20,"Failed":false,"Killed":false,"Accumulables":[{"ID":5,"Name":"number of output rows","Update":"25000","Value":"25000"},{"ID":6,"Name":"x]},\"Task Metrics\":{","Update":[{"Block ID":"b"}]}]}"#;
        for (tail, skip) in [
            (
                r#","Task Executor Metrics":{"TotalGCTime":4},"Task Metrics":{"Executor Run Time":5}}"#,
                true,
            ),
            (r#","Task Metrics":{"Executor Run Time":5}}"#, true),
            ("}", true),
            // another key after the array: scanned
            (
                r#","Other":1,"Task Metrics":{"Executor Run Time":5}}"#,
                false,
            ),
        ] {
            let line = format!("{head}{tail}");
            let line = line.as_bytes();
            let full = parse_task_end(line, true).unwrap();
            assert_eq!(full.info.accumulables.0.len(), 1);
            assert_eq!(skip_accumulables(line).is_some(), skip, "{tail}");
            let mut without = parse_task_end(line, false).unwrap();
            assert!(without.info.accumulables.0.is_empty(), "{tail}");
            assert_eq!(without.info.task_id, 7);
            without.info.accumulables = full.info.accumulables;
            assert_eq!(
                format!("{without:?}"),
                format!("{:?}", parse_task_end(line, true).unwrap())
            );
        }
        let cut = format!("{head},\"Task Metrics\":{{\"Executor Run Time\"");
        assert!(parse_line_with(cut.as_bytes(), false).is_err());
    }
}

#[cfg(test)]
mod utf8_tests {
    use super::*;

    #[test]
    fn task_start_reads_its_executor() {
        for (line, want) in [
            (
                &br#"{"Event":"SparkListenerTaskStart","Stage ID":0,"Stage Attempt ID":0,"Task Info":{"Task ID":1,"Launch Time":5,"Executor ID":"7","Host":"h","Accumulables":[]}}"#[..],
                Some("7"),
            ),
            // an escape, or no string: the parser reads it
            (
                br#"{"Event":"SparkListenerTaskStart","Task Info":{"Executor ID":"a\"b"}}"#,
                Some("a\"b"),
            ),
            (
                br#"{"Event":"SparkListenerTaskStart","Task Info":{"Executor ID":null}}"#,
                None,
            ),
            (br#"{"Event":"SparkListenerTaskStart"}"#, None),
        ] {
            let Ok(Parsed::Event(_, Event::TaskStart(t))) = parse_line(line) else {
                panic!("not read: {}", String::from_utf8_lossy(line))
            };
            assert_eq!(t.info.executor_id.as_deref(), want);
        }
        // a cut-off line is an error, as for every event read
        let cut = br#"{"Event":"SparkListenerTaskStart","Task Info":{"Executor ID":"7""#;
        assert!(parse_line(cut).is_err());
    }

    #[test]
    fn task_executor_metrics_give_the_gc_time() {
        let line = |metrics: &str| {
            format!(
                r#"{{"Event":"SparkListenerTaskEnd","Stage ID":1,"Task End Reason":{{"Reason":"Success"}},"Task Info":{{"Task ID":7,"Executor ID":"1","Finish Time":20,"Accumulables":[{{"ID":5,"Name":"x","Update":1,"Value":1}}]}}{metrics},"Task Metrics":{{"JVM GC Time":3}}}}"#
            )
        };
        for (metrics, want) in [
            (
                r#","Task Executor Metrics":{"JVMHeapMemory":5,"TotalGCTime":42,"MinorGCCount":1}"#,
                Some(Some(42)),
            ),
            (
                r#","Task Executor Metrics":{"TotalGCTime":"42"}"#,
                Some(Some(42)),
            ),
            (
                r#","Task Executor Metrics":{"JVMHeapMemory":5}"#,
                Some(None),
            ),
            (r#","Task Executor Metrics":null"#, None),
            ("", None),
        ] {
            let l = line(metrics);
            let Ok(Parsed::Event(_, Event::TaskEnd(t))) = parse_line(l.as_bytes()) else {
                panic!("not read: {l}")
            };
            assert_eq!(
                format!("{t:?}"),
                format!("{:?}", de::<TaskEnd>(l.as_bytes()).unwrap())
            );
            let got = t.executor_metrics.map(|m| m.total_gc_time.0);
            assert_eq!(got, want, "{l}");
        }
    }

    #[test]
    fn ignored_fields_are_the_ones_not_read() {
        assert!(Kind::TaskEnd.fields().contains(&"Task Metrics"));
        assert!(Kind::JobEnd.fields().contains(&"Job ID"));
        let line = br#"{"Event":"SparkListenerJobEnd","Job ID":1,"Completion Time":5,"Job Result":{"Result":"JobSucceeded"},"Brand New":7}"#;
        assert_eq!(
            ignored_fields(line, Kind::JobEnd),
            vec!["Brand New".to_string()]
        );
        // read in place or by serde (an escaped key), the same fields, sorted, each once; none
        // from a line that is not JSON
        let line = br#"{"Event":"SparkListenerJobEnd","Zeta":[1,{"a":[2]}],"Job ID":1,"Alpha":{"b":"}"},"Zeta":null}"#;
        assert_eq!(ignored_fields(line, Kind::JobEnd), ["Alpha", "Zeta"]);
        let escaped =
            br#"{"Event":"SparkListenerJobEnd","Zeta":1,"Job ID":1,"Al\u0070ha":2,"Zeta":3}"#;
        assert!(crate::fast::keys_of(escaped).is_none());
        assert_eq!(ignored_fields(escaped, Kind::JobEnd), ["Alpha", "Zeta"]);
        assert!(
            ignored_fields(
                br#"{"Event":"SparkListenerJobEnd","Job ID":1,"#,
                Kind::JobEnd
            )
            .is_empty()
        );
    }

    /// On every line of real logs, the fields read in place are the ones serde finds.
    #[test]
    fn ignored_fields_read_in_place_as_serde_reads_them() {
        let mut lines = 0;
        for log in ["local-1796393658133.zstd", "local-1796009839341.zstd"] {
            for line in super::tests::sample_lines(log) {
                let serde: std::collections::BTreeMap<String, IgnoredAny> =
                    serde_json::from_slice(&line).unwrap();
                let serde: Vec<&str> = serde.keys().map(String::as_str).collect();
                let mut fast = crate::fast::keys_of(&line).expect("read in place");
                fast.sort_unstable();
                fast.dedup();
                assert_eq!(fast, serde);
                lines += 1;
            }
        }
        assert!(lines > 250, "{lines} lines");
    }

    #[test]
    fn stray_byte_in_a_skipped_string_does_not_lose_the_event() {
        let mut line = br#"{"Event":"SparkListenerJobEnd","Job ID":4,"Note":"caf?","Job Result":{"Result":"JobSucceeded"}}"#.to_vec();
        let q = line.iter().position(|b| *b == b'?').unwrap();
        line[q] = 0xE9; // Latin-1 'é', not UTF-8
        let Parsed::Event(_, Event::JobEnd(j)) = parse_line(&line).unwrap() else {
            panic!()
        };
        assert_eq!(j.job_id, 4);
    }
}
