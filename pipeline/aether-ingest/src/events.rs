//! The Spark listener events aether reads, as typed serde structs (Spark 1.x – 4.x spellings).
//!
//! Only the fields the tables need are declared; everything else in a line is skipped by the
//! parser without being materialised. Numbers Spark writes sometimes as JSON numbers and
//! sometimes as strings (SQL accumulator updates since 3.x) go through [`Num`].

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A number Spark may write as a JSON number, a numeric string, or something else entirely
/// (a list of block updates in old accumulables). Non-numeric values become `None`.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Num(pub Option<i64>);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(Some(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(i64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num(if v.is_finite() { Some(v as i64) } else { None }))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
                let t = v.trim();
                Ok(Num(t.parse::<i64>().ok().or_else(|| {
                    t.parse::<f64>()
                        .ok()
                        .filter(|f| f.is_finite())
                        .map(|f| f as i64)
                })))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Num, E> {
                Ok(Num(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Num, E> {
                Ok(Num(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Num, E> {
                Ok(Num(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Num, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Num(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Num, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Num(None))
            }
        }
        d.deserialize_any(V)
    }
}

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

#[derive(Deserialize, Debug, Default)]
pub struct TaskEndReason {
    #[serde(rename = "Reason")]
    pub reason: Option<String>,
    #[serde(rename = "Class Name")]
    pub class_name: Option<String>,
    #[serde(rename = "Description")]
    pub description: Option<String>,
    #[serde(rename = "Kill Reason")]
    pub kill_reason: Option<String>,
    #[serde(rename = "Loss Reason")]
    pub loss_reason: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct Accumulable {
    #[serde(rename = "ID")]
    pub id: Num,
    #[serde(rename = "Name")]
    pub name: Option<String>,
    #[serde(rename = "Update", default)]
    pub update: Num,
    #[serde(rename = "Count Failed Values", default)]
    pub count_failed_values: Option<bool>,
}

#[derive(Deserialize, Debug, Default)]
pub struct TaskInfo {
    #[serde(rename = "Task ID")]
    pub task_id: i64,
    #[serde(rename = "Index", default)]
    pub index: Num,
    #[serde(rename = "Attempt", default)]
    pub attempt: Num,
    #[serde(rename = "Launch Time", default)]
    pub launch_time: Num,
    #[serde(rename = "Executor ID")]
    pub executor_id: Option<String>,
    #[serde(rename = "Host")]
    pub host: Option<String>,
    #[serde(rename = "Locality")]
    pub locality: Option<String>,
    #[serde(rename = "Speculative", default)]
    pub speculative: Option<bool>,
    #[serde(rename = "Finish Time", default)]
    pub finish_time: Num,
    #[serde(rename = "Failed", default)]
    pub failed: Option<bool>,
    #[serde(rename = "Killed", default)]
    pub killed: Option<bool>,
    #[serde(rename = "Accumulables", default)]
    pub accumulables: Vec<Accumulable>,
}

#[derive(Deserialize, Debug, Default)]
pub struct ShuffleReadMetrics {
    #[serde(rename = "Remote Blocks Fetched", default)]
    pub remote_blocks_fetched: Num,
    #[serde(rename = "Local Blocks Fetched", default)]
    pub local_blocks_fetched: Num,
    #[serde(rename = "Fetch Wait Time", default)]
    pub fetch_wait_time: Num,
    #[serde(rename = "Remote Bytes Read", default)]
    pub remote_bytes_read: Num,
    #[serde(rename = "Remote Bytes Read To Disk", default)]
    pub remote_bytes_read_to_disk: Num,
    #[serde(rename = "Local Bytes Read", default)]
    pub local_bytes_read: Num,
    #[serde(rename = "Total Records Read", default)]
    pub records_read: Num,
}

#[derive(Deserialize, Debug, Default)]
pub struct ShuffleWriteMetrics {
    #[serde(rename = "Shuffle Bytes Written", default)]
    pub bytes_written: Num,
    #[serde(rename = "Shuffle Write Time", default)]
    pub write_time: Num,
    #[serde(rename = "Shuffle Records Written", default)]
    pub records_written: Num,
}

#[derive(Deserialize, Debug, Default)]
pub struct InputMetrics {
    #[serde(rename = "Bytes Read", default)]
    pub bytes_read: Num,
    #[serde(rename = "Records Read", default)]
    pub records_read: Num,
}

#[derive(Deserialize, Debug, Default)]
pub struct OutputMetrics {
    #[serde(rename = "Bytes Written", default)]
    pub bytes_written: Num,
    #[serde(rename = "Records Written", default)]
    pub records_written: Num,
}

#[derive(Deserialize, Debug, Default)]
pub struct TaskMetrics {
    #[serde(rename = "Executor Deserialize Time", default)]
    pub executor_deserialize_time: Num,
    #[serde(rename = "Executor Deserialize CPU Time", default)]
    pub executor_deserialize_cpu_time: Num,
    #[serde(rename = "Executor Run Time", default)]
    pub executor_run_time: Num,
    #[serde(rename = "Executor CPU Time", default)]
    pub executor_cpu_time: Num,
    #[serde(rename = "Peak Execution Memory", default)]
    pub peak_execution_memory: Num,
    #[serde(rename = "Result Size", default)]
    pub result_size: Num,
    #[serde(rename = "JVM GC Time", default)]
    pub jvm_gc_time: Num,
    #[serde(rename = "Result Serialization Time", default)]
    pub result_serialization_time: Num,
    #[serde(rename = "Memory Bytes Spilled", default)]
    pub memory_bytes_spilled: Num,
    #[serde(rename = "Disk Bytes Spilled", default)]
    pub disk_bytes_spilled: Num,
    #[serde(rename = "Shuffle Read Metrics", default)]
    pub shuffle_read: Option<ShuffleReadMetrics>,
    #[serde(rename = "Shuffle Write Metrics", default)]
    pub shuffle_write: Option<ShuffleWriteMetrics>,
    #[serde(rename = "Input Metrics", default)]
    pub input: Option<InputMetrics>,
    #[serde(rename = "Output Metrics", default)]
    pub output: Option<OutputMetrics>,
}

#[derive(Deserialize, Debug)]
pub struct TaskEnd {
    #[serde(rename = "Stage ID")]
    pub stage_id: i64,
    #[serde(rename = "Stage Attempt ID", default)]
    pub stage_attempt_id: Num,
    #[serde(rename = "Task End Reason", default)]
    pub reason: TaskEndReason,
    #[serde(rename = "Task Info")]
    pub info: TaskInfo,
    #[serde(rename = "Task Metrics", default)]
    pub metrics: Option<TaskMetrics>,
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
    SqlExecutionStart,
    SqlExecutionEnd,
    SqlAdaptiveExecutionUpdate,
    SqlAdaptiveMetricUpdates,
    DriverAccumUpdates,
}

impl Kind {
    /// The kind named by an `"Event"` value, or `None` for events aether skips.
    pub fn from_name(name: &[u8]) -> Option<Kind> {
        const SQL_UI: &[u8] = b"org.apache.spark.sql.execution.ui.";
        let short = name.strip_prefix(SQL_UI).unwrap_or(name);
        Some(match short {
            b"SparkListenerTaskEnd" => Kind::TaskEnd,
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
            _ => return None,
        })
    }
}

/// One parsed event, owning its data (so parsing and applying can run on different threads).
#[derive(Debug)]
pub enum Event {
    LogStart(LogStart),
    ApplicationStart(ApplicationStart),
    ApplicationEnd(ApplicationEnd),
    EnvironmentUpdate(Box<EnvironmentUpdate>),
    ExecutorAdded(ExecutorAdded),
    ExecutorRemoved(ExecutorRemoved),
    JobStart(JobStart),
    JobEnd(JobEnd),
    StageSubmitted(StageEvent),
    StageCompleted(StageEvent),
    TaskEnd(Box<TaskEnd>),
    SqlExecutionStart(Box<SqlExecutionStart>),
    SqlExecutionEnd(SqlExecutionEnd),
    SqlAdaptiveExecutionUpdate(Box<SqlAdaptiveExecutionUpdate>),
    SqlAdaptiveMetricUpdates(SqlAdaptiveMetricUpdates),
    DriverAccumUpdates(DriverAccumUpdates),
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

fn de<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Result<T, String> {
    sonic_rs::from_slice(line)
        .map_err(|e| format!("malformed event: {}", short_error(&e.to_string())))
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
        Kind::TaskEnd => Event::TaskEnd(Box::new(de(trimmed)?)),
        Kind::LogStart => Event::LogStart(de(trimmed)?),
        Kind::ApplicationStart => Event::ApplicationStart(de(trimmed)?),
        Kind::ApplicationEnd => Event::ApplicationEnd(de(trimmed)?),
        Kind::EnvironmentUpdate => Event::EnvironmentUpdate(Box::new(de(trimmed)?)),
        Kind::ExecutorAdded => Event::ExecutorAdded(de(trimmed)?),
        Kind::ExecutorRemoved => Event::ExecutorRemoved(de(trimmed)?),
        Kind::JobStart => Event::JobStart(de(trimmed)?),
        Kind::JobEnd => Event::JobEnd(de(trimmed)?),
        Kind::StageSubmitted => Event::StageSubmitted(de(trimmed)?),
        Kind::StageCompleted => Event::StageCompleted(de(trimmed)?),
        Kind::SqlExecutionStart => Event::SqlExecutionStart(Box::new(de(trimmed)?)),
        Kind::SqlExecutionEnd => Event::SqlExecutionEnd(de(trimmed)?),
        Kind::SqlAdaptiveExecutionUpdate => {
            Event::SqlAdaptiveExecutionUpdate(Box::new(de(trimmed)?))
        }
        Kind::SqlAdaptiveMetricUpdates => Event::SqlAdaptiveMetricUpdates(de(trimmed)?),
        Kind::DriverAccumUpdates => Event::DriverAccumUpdates(de(trimmed)?),
    };
    Ok(Parsed::Event(name, ev))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_strings_and_numbers() {
        let line = br#"{"Event":"SparkListenerTaskEnd","Stage ID":1,"Stage Attempt ID":0,"Task End Reason":{"Reason":"Success"},"Task Info":{"Task ID":7,"Index":2,"Attempt":0,"Launch Time":10,"Executor ID":"1","Host":"h","Locality":"ANY","Speculative":false,"Finish Time":20,"Failed":false,"Killed":false,"Accumulables":[{"ID":5,"Name":"number of output rows","Update":"25000","Value":"25000","Internal":true,"Count Failed Values":true},{"ID":6,"Name":"x","Update":[{"Block ID":"b"}]}]},"Task Metrics":{"Executor Run Time":5,"Shuffle Read Metrics":{"Remote Bytes Read":3}}}"#;
        let Parsed::Event(_, Event::TaskEnd(t)) = parse_line(line).unwrap() else {
            panic!("not a task end")
        };
        assert_eq!(t.info.task_id, 7);
        assert_eq!(t.info.accumulables[0].update, Num(Some(25000)));
        assert_eq!(t.info.accumulables[1].update, Num(None));
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
