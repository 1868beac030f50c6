//! The typed structs of the TaskEnd event, and [`Num`], the number every event's fields go
//! through: filled alike by the serde parser of the `events` module and by the hand-written
//! TaskEnd reader of the `fast` module, which both import them from here.

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
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
                Ok(Num(num_from_str(v)))
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

/// The number a numeric string holds (integer, or a finite float truncated), or the
/// milliseconds of a `HH:MM:SS.mmm` duration (how the RAPIDS plugin's GPU task time metrics
/// print their values); `None` otherwise.
pub(crate) fn num_from_str(v: &str) -> Option<i64> {
    let t = v.trim();
    t.parse::<i64>()
        .ok()
        .or_else(|| {
            t.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .map(|f| f as i64)
        })
        .or_else(|| duration_ms(t))
}

/// `H:MM:SS[.fff]` as milliseconds.
fn duration_ms(t: &str) -> Option<i64> {
    let mut parts = t.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || m.len() != 2 || !s.as_bytes().first()?.is_ascii_digit() {
        return None;
    }
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if !digits(h)
        || !digits(m)
        || whole.len() != 2
        || !digits(whole)
        || !(frac.is_empty() || digits(frac))
    {
        return None;
    }
    let mut ms = frac.chars().take(3).collect::<String>();
    while ms.len() < 3 {
        ms.push('0');
    }
    let h: i64 = h.parse().ok()?;
    let m: i64 = m.parse().ok()?;
    let sec: i64 = whole.parse().ok()?;
    Some(((h * 60 + m) * 60 + sec) * 1000 + ms.parse::<i64>().ok()?)
}

/// The RAPIDS plugin's GPU task metrics (task accumulators, not SQL metrics) that
/// `stage_gpu_metrics` keeps, with their unit: `(name, unit, kind)`, kind `sum` or `max` (a
/// per-task peak, whose sum means nothing).
pub const GPU_TASK_METRICS: &[(&str, &str, &str)] = &[
    ("gpuMaxDeviceMemoryBytes", "bytes", "max"),
    ("gpuMaxDiskMemoryBytes", "bytes", "max"),
    ("gpuMaxHostMemoryBytes", "bytes", "max"),
    ("gpuMaxPageableMemoryBytes", "bytes", "max"),
    ("gpuMaxPinnedMemoryBytes", "bytes", "max"),
    ("gpuMaxTaskFootprint", "bytes", "max"),
    ("gpuReadSpillFromDiskTime", "ms", "sum"),
    ("gpuReadSpillFromHostTime", "ms", "sum"),
    ("gpuRetryBlockTime", "ms", "sum"),
    ("gpuRetryComputationTime", "ms", "sum"),
    ("gpuRetryCount", "count", "sum"),
    ("gpuSemaphoreWait", "ms", "sum"),
    ("gpuSpillToDiskTime", "ms", "sum"),
    ("gpuSpillToHostTime", "ms", "sum"),
    ("gpuSplitAndRetryCount", "count", "sum"),
    ("gpuTime", "ms", "sum"),
];

/// The index in [`GPU_TASK_METRICS`] of an accumulator name.
pub fn gpu_metric(name: &[u8]) -> Option<u8> {
    if !name.starts_with(b"gpu") {
        return None;
    }
    GPU_TASK_METRICS
        .iter()
        .position(|(n, _, _)| n.as_bytes() == name)
        .map(|i| i as u8)
}

/// Text that every task repeats (its type, end reason, executor, host and locality), kept
/// inline up to 22 bytes: the common values cost no allocation. (A task is parsed on one thread
/// and applied on another, and freeing there what the other allocated is slow.)
#[derive(Clone, PartialEq, Eq)]
pub struct Text(TextRepr);

#[derive(Clone, PartialEq, Eq)]
enum TextRepr {
    Inline { len: u8, bytes: [u8; 22] },
    Heap(Box<str>),
}

impl Text {
    pub fn new(s: &str) -> Text {
        let mut bytes = [0u8; 22];
        match bytes.get_mut(..s.len()) {
            Some(b) => {
                b.copy_from_slice(s.as_bytes());
                Text(TextRepr::Inline {
                    len: s.len() as u8,
                    bytes,
                })
            }
            None => Text(TextRepr::Heap(s.into())),
        }
    }
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        match &self.0 {
            TextRepr::Inline { len, bytes } => {
                let b = &bytes[..*len as usize];
                // SAFETY: the bytes of a `&str` (`Text::new`), whole
                unsafe { std::str::from_utf8_unchecked(b) }
            }
            TextRepr::Heap(s) => s,
        }
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text::new(v))
            }
        }
        d.deserialize_str(V)
    }
}

#[derive(Deserialize, Debug, Default)]
pub struct TaskEndReason {
    #[serde(rename = "Reason")]
    pub reason: Option<Text>,
    #[serde(rename = "Class Name")]
    pub class_name: Option<String>,
    #[serde(rename = "Description")]
    pub description: Option<String>,
    #[serde(rename = "Kill Reason")]
    pub kill_reason: Option<String>,
    #[serde(rename = "Loss Reason")]
    pub loss_reason: Option<String>,
    /// The exception with its stack trace as the executor printed it (ExceptionFailure).
    #[serde(rename = "Full Stack Trace")]
    pub full_stack_trace: Option<String>,
    /// ExecutorLostFailure: the executor, and whether the task's own work killed it.
    #[serde(rename = "Executor ID")]
    pub executor_id: Option<String>,
    #[serde(rename = "Exit Caused By App")]
    pub exit_caused_by_app: Option<bool>,
    /// FetchFailed: where the block was, which shuffle block, and the fetch's error.
    #[serde(rename = "Block Manager Address")]
    pub block_manager: Option<BlockManagerAddress>,
    #[serde(rename = "Shuffle ID", default)]
    pub shuffle_id: Num,
    #[serde(rename = "Map ID", default)]
    pub map_id: Num,
    #[serde(rename = "Map Index", default)]
    pub map_index: Num,
    #[serde(rename = "Reduce ID", default)]
    pub reduce_id: Num,
    #[serde(rename = "Message")]
    pub message: Option<String>,
}

/// A block manager's address in a FetchFailed reason.
#[derive(Deserialize, Debug, Default, Clone, PartialEq)]
pub struct BlockManagerAddress {
    #[serde(rename = "Executor ID")]
    pub executor_id: Option<String>,
    #[serde(rename = "Host")]
    pub host: Option<String>,
    #[serde(rename = "Port", default)]
    pub port: Num,
}

impl TaskEndReason {
    /// The reason as Spark's `TaskEndReason.toErrorString` renders it (ExceptionFailure: its full
    /// stack trace); `None` for Success and the kinds it does not know.
    pub fn error_string(&self) -> Option<String> {
        let n = |v: Num| v.0.map(|x| x.to_string()).unwrap_or_else(|| "null".into());
        match self.reason.as_deref()? {
            "ExceptionFailure" => self.full_stack_trace.clone(),
            "TaskKilled" => Some(format!(
                "TaskKilled ({})",
                self.kill_reason.as_deref().unwrap_or("unknown reason")
            )),
            "Resubmitted" => Some("Resubmitted (resubmitted due to lost executor)".into()),
            "TaskResultLost" => Some("TaskResultLost (result lost from block manager)".into()),
            "UnknownReason" => Some("UnknownReason".into()),
            "ExecutorLostFailure" => {
                let exit = if self.exit_caused_by_app.unwrap_or(true) {
                    "caused by one of the running tasks"
                } else {
                    "unrelated to the running tasks"
                };
                let reason = self
                    .loss_reason
                    .as_deref()
                    .map(|r| format!(" Reason: {r}"))
                    .unwrap_or_default();
                Some(format!(
                    "ExecutorLostFailure (executor {} exited {exit}){reason}",
                    self.executor_id.as_deref().unwrap_or("null")
                ))
            }
            "FetchFailed" => {
                let bm = match &self.block_manager {
                    Some(b) => format!(
                        "BlockManagerId({}, {}, {}, None)",
                        b.executor_id.as_deref().unwrap_or("null"),
                        b.host.as_deref().unwrap_or("null"),
                        n(b.port)
                    ),
                    None => "null".into(),
                };
                Some(format!(
                    "FetchFailed({bm}, shuffleId={}, mapIndex={}, mapId={}, reduceId={}, message=\n{}\n)",
                    n(self.shuffle_id),
                    n(self.map_index),
                    n(self.map_id),
                    n(self.reduce_id),
                    self.message.as_deref().unwrap_or("null")
                ))
            }
            _ => None,
        }
    }
}

/// One accumulator update of a task that feeds a SQL metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccUpdate {
    /// Accumulator id (as in the plan's `accumulatorId`).
    pub id: i64,
    /// The task's update.
    pub update: i64,
    /// Whether Spark counts the update when the task failed (`Count Failed Values`).
    pub count_failed: bool,
    /// Which GPU task metric it is ([`GPU_TASK_METRICS`]), if one.
    pub gpu: Option<u8>,
}

/// The non-internal numeric accumulator updates of a task. Internal task metrics
/// (`internal.metrics.*`, already in the task's metrics) are dropped while parsing, and names are
/// borrowed from the line, never allocated.
#[derive(Debug, Default)]
pub struct AccUpdates(pub Vec<AccUpdate>);

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
    pub executor_id: Option<Text>,
    #[serde(rename = "Host")]
    pub host: Option<Text>,
    #[serde(rename = "Locality")]
    pub locality: Option<Text>,
    #[serde(rename = "Speculative", default)]
    pub speculative: Option<bool>,
    #[serde(rename = "Finish Time", default)]
    pub finish_time: Num,
    #[serde(rename = "Failed", default)]
    pub failed: Option<bool>,
    #[serde(rename = "Killed", default)]
    pub killed: Option<bool>,
    #[serde(rename = "Accumulables", default)]
    pub accumulables: AccUpdates,
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
    /// Spark 4.x
    #[serde(rename = "Peak On Heap Execution Memory", default)]
    pub peak_on_heap_execution_memory: Num,
    /// Spark 4.x
    #[serde(rename = "Peak Off Heap Execution Memory", default)]
    pub peak_off_heap_execution_memory: Num,
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

/// The executor metrics aether reads (Spark writes every metric it knows; the History Server
/// reads a missing one as 0).
#[derive(Deserialize, Debug, Default)]
pub struct ExecutorMetrics {
    /// The JVM's total GC time so far, in ms (Spark 3.1+).
    #[serde(rename = "TotalGCTime", default)]
    pub total_gc_time: Num,
}

#[derive(Deserialize, Debug)]
pub struct TaskEnd {
    #[serde(rename = "Stage ID")]
    pub stage_id: i64,
    #[serde(rename = "Stage Attempt ID", default)]
    pub stage_attempt_id: Num,
    /// ShuffleMapTask or ResultTask.
    #[serde(rename = "Task Type")]
    pub task_type: Option<Text>,
    #[serde(rename = "Task End Reason", default)]
    pub reason: TaskEndReason,
    #[serde(rename = "Task Info")]
    pub info: TaskInfo,
    #[serde(rename = "Task Metrics", default)]
    pub metrics: Option<TaskMetrics>,
    /// The executor's metrics when the task ended (Spark 3+).
    #[serde(rename = "Task Executor Metrics", default)]
    pub executor_metrics: Option<ExecutorMetrics>,
}
