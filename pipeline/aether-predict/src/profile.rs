//! `aether profile`: what a GPU run tells, and the profiling AutoTuner — the reference
//! profiler's (spark-rapids-tools 26.08.4, `../shared/anchor/PROFILE.md`) recommended Spark
//! properties and comments for EMR, computed from the tables and views of a GPU event log.
//!
//! A recommendation lists only the properties it adds, changes, removes or cannot resolve
//! (values equal to the run's, or to Spark's default where the run left one unset, are not
//! shown); each added property gets a comment (`'<key>' was not set.`, or the tuning table's
//! own text), and rules add their own comments.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::Result;
use crate::version;
use aether_engine::SessionContext;
use serde::Serialize;
use serde_json::Value;

use crate::autotuner::{
    ConfType, TunerInputs, format_bytes, normalize, offheap_and_pyspark_mib, offheap_mib,
    parse_bytes, read_threads, shuffle_threads,
};
use crate::rows::{i, rows_by_app};
use crate::rules::{self, with_class};

const FILL_IN: &str = "[FILL_IN_VALUE]";
const THP: &str = "-XX:-UseTransparentHugePages";
const PLUGIN: &str = "com.nvidia.spark.SQLPlugin";
/// Profiling's batch size (`BATCH_SIZE_BYTES` of the tool's tuningConfigs.yaml).
const BATCH_SIZE_BYTES: i64 = 2147483647;

pub use crate::target::Worker;

/// What the profiling rules read from one GPU run.
#[derive(Clone, Debug, Default)]
pub struct ProfileInputs {
    /// The shared inputs (executors, stages, skew, SQL I/O, file-scan input).
    pub tuner: TunerInputs,
    /// Spark properties of the run.
    pub props: BTreeMap<String, String>,
    pub spark_version: String,
    /// Versions of the RAPIDS plugin jars on the classpath (`rapids-4-spark_2.12-25.02.0…jar`).
    pub plugin_versions: Vec<String>,
    /// Mean over SQLs of JVM GC time / executor CPU time (infinite when a SQL collected garbage
    /// without CPU time, NaN when one had neither, as the reference's division gives).
    pub gc_ratio: Option<f64>,
    /// The JVM's `file.encoding` system property.
    pub file_encoding: Option<String>,
    /// Delta Lake jars on the classpath (`…/io.delta_delta-core_2.12-2.4.0.jar`).
    pub delta_jars: Vec<String>,
    /// A stage failed on Python workers running out of memory (a PythonException with a
    /// MemoryError, numpy's or pyarrow's memory error).
    pub python_oom: bool,
    /// The stage whose tasks reported the largest GPU memory footprint (`gpuMaxTaskFootprint`):
    /// (stage, max bytes, task-attempt updates, mean, sample standard deviation).
    pub footprint: Option<(i64, i64, i64, f64, Option<f64>)>,
    /// Scan stages (stages that updated a `scan time` metric) with a task that failed on a GPU
    /// out-of-memory error (`GpuSplitAndRetryOOM`, `GpuRetryOOM`, …): the reference's
    /// `scanStagesWithGpuOom`.
    pub scan_stages_with_gpu_oom: i64,
    /// On YARN, failed `GpuShuffleExchangeExec` stages with a task whose executor's container was
    /// killed (ExecutorLostFailure, exit status 137): `gpuShuffleStagesWithContainerOom`.
    pub shuffle_stages_with_container_oom: i64,
    /// The largest `data size` of a plan node named `*ColumnarExchange*`, bytes (its
    /// sql_plan_metrics_for_application total).
    pub exchange_max_bytes: Option<i64>,
    /// Stages that read or wrote shuffle data and spilled (memory or disk).
    pub spilled_shuffle_stages: Vec<i64>,
}

impl ProfileInputs {
    /// The reference's `pluginEnabled`: the SQL plugin is in `spark.plugins` and
    /// `spark.rapids.sql.enabled` is not `false`.
    pub fn plugin_enabled(&self) -> bool {
        self.props
            .get("spark.plugins")
            .is_some_and(|v| v.contains(PLUGIN))
            && !self
                .props
                .get("spark.rapids.sql.enabled")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
    }
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

/// The AutoTuner's answer for one app.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Tuning {
    /// `false`: not a GPU run with the plugin enabled; nothing is recommended.
    pub recommended: bool,
    /// Sorted by key.
    pub properties: Vec<Recommended>,
    /// Sorted as plain strings; a comment may span lines.
    pub comments: Vec<String>,
}

struct Entry {
    conf: ConfType,
    default: Option<String>,
}

fn table() -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    let mut r = csv::Reader::from_reader(crate::autotuner::TUNING_TABLE.as_bytes());
    for rec in r.records().flatten() {
        let conf = match &rec[2] {
            "int" | "long" => ConfType::Int,
            "double" => ConfType::Double,
            "boolean" => ConfType::Bool,
            "byte" => ConfType::Byte {
                mib: &rec[3] == "MiB",
            },
            _ => ConfType::Text,
        };
        let default = Some(rec[4].to_string()).filter(|d| !d.is_empty());
        out.insert(rec[0].to_string(), Entry { conf, default });
    }
    out
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

const SHUFFLE_CLASSPATH: &str = "The RAPIDS Shuffle Manager requires spark.driver.extraClassPath\n\
and spark.executor.extraClassPath settings to include the\n\
path to the cuDF plugin jar.\n\
If the cuDF plugin jar is being bundled with your Spark\n\
distribution, this step is not needed.";

/// Spark versions the RAPIDS Shuffle Manager has a build for.
const SHUFFLE_VERSIONS: &[&str] = &[
    "3.2.0", "3.2.1", "3.2.2", "3.2.3", "3.2.4", "3.3.0", "3.3.1", "3.3.2", "3.3.3", "3.3.4",
    "3.4.0", "3.4.1", "3.4.2", "3.4.3", "3.5.0", "3.5.1", "3.5.2", "3.5.3", "3.5.4", "3.5.5",
    "3.5.6", "3.5.7", "4.0.0",
];

struct Tuner<'a> {
    table: BTreeMap<String, Entry>,
    inp: &'a ProfileInputs,
    /// Recommended values (`None`: remove).
    out: BTreeMap<String, Option<String>>,
    comments: BTreeSet<String>,
    /// Unresolved properties that get no `was not set.` comment (their own comment says why).
    silent_unresolved: BTreeSet<String>,
}

impl Tuner<'_> {
    fn conf(&self, key: &str) -> ConfType {
        self.table
            .get(key)
            .map(|e| e.conf)
            .unwrap_or(ConfType::Text)
    }
    /// The run's value.
    fn source(&self, key: &str) -> Option<String> {
        self.inp.props.get(key).cloned()
    }
    /// The value now: recommended, else the run's, else Spark's default (tuning table).
    fn get(&self, key: &str) -> Option<String> {
        match self.out.get(key) {
            Some(v) => v.clone(),
            None => self
                .source(key)
                .or_else(|| self.table.get(key).and_then(|e| e.default.clone())),
        }
    }
    fn set(&mut self, key: &str, value: &str) {
        let v = if value == FILL_IN {
            value.to_string()
        } else {
            normalize(self.conf(key), value)
        };
        self.out.insert(key.to_string(), Some(v));
    }
    fn remove(&mut self, key: &str) {
        self.out.insert(key.to_string(), None);
    }
    fn comment(&mut self, c: impl Into<String>) {
        self.comments.insert(c.into());
    }
    /// A shared rule's properties and comments.
    fn apply(&mut self, o: rules::Outcome) {
        for (k, v) in o.sets {
            self.set(&k, &v);
        }
        for c in o.comments {
            self.comment(c);
        }
    }
}

/// The plugin version a jar name carries (`rapids-4-spark_2.12-25.02.0-cuda11.jar`: 25.02.0), as
/// the reference reads it: `rapids-4-spark_<d>.<dd>-<yy>.<mm>.<n>...jar`.
pub fn plugin_version_of(jar: &str) -> Option<String> {
    let name = jar.rsplit('/').next()?;
    if !name.ends_with(".jar") {
        return None;
    }
    let rest = name.strip_prefix("rapids-4-spark_")?;
    let (scala, rest) = rest.split_once('-')?;
    let (major, minor) = scala.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if major.len() != 1 || !digits(major) || !digits(minor) {
        return None;
    }
    let mut parts = rest.splitn(3, '.');
    let (yy, mm, tail) = (parts.next()?, parts.next()?, parts.next()?);
    let n: String = tail.chars().take_while(|c| c.is_ascii_digit()).collect();
    (yy.len() == 2 && mm.len() == 2 && digits(yy) && digits(mm) && !n.is_empty())
        .then(|| format!("{yy}.{mm}.{n}"))
}

/// The profiling AutoTuner's recommendation for one run.
pub fn recommend(inp: &ProfileInputs, w: &Worker) -> Tuning {
    if !inp.plugin_enabled() {
        return Tuning::default();
    }
    let mut t = Tuner {
        table: table(),
        inp,
        out: BTreeMap::new(),
        comments: BTreeSet::new(),
        silent_unresolved: BTreeSet::new(),
    };
    let cores = w.cores / w.gpus.max(1);
    let master = t.source("spark.master").unwrap_or_default();
    let yarn_or_k8s = master.contains("yarn") || master.contains("k8s");
    let src = crate::autotuner::source_cores_and_executors(&inp.tuner);

    // the cluster block needs the run's executors (none, or spark.executor.instances=0: only
    // the job-level rules, with the reference's default comments)
    let cluster = src.is_some();
    if cluster {
        // the cluster: one GPU per executor, the run's executor count kept (EMR is a CSP)
        t.set("spark.executor.cores", &cores.to_string());
        if let Some((_, execs)) = src {
            t.set("spark.executor.instances", &execs.to_string());
        }
        // memory, MiB: heap 2g a core; then the JVM overhead, a 2g pinned pool and 2g of spill
        // space must fit in what is left beside off-heap and PySpark memory
        let heap = (w.memory_mib / w.gpus.max(1))
            .min(2048 * cores)
            .max(2048 * cores);
        let usable = (w.memory_mib as f64 * (1.0 - w.reserved_fraction)) as i64 / w.gpus.max(1);
        let offheap = offheap_mib(|k| t.get(k));
        let pyspark = offheap_and_pyspark_mib(|k| t.get(k)) - offheap;
        let left = usable - heap - offheap - pyspark;
        let jvm_overhead = heap / 10;
        let min_overhead = jvm_overhead + 2048 + 2048;
        if left >= min_overhead {
            let pinned = 8192.min((left - jvm_overhead) / 2);
            t.set("spark.rapids.memory.pinnedPool.size", &format!("{pinned}m"));
            if yarn_or_k8s {
                let overhead = (jvm_overhead + 2 * pinned).max(left);
                t.set("spark.executor.memoryOverhead", &format!("{overhead}m"));
            }
            // Python workers ran out of memory: their memory raised by half (whole GiB), taken
            // from the heap as long as 750m a core is left
            let mut heap = heap;
            if inp.python_oom && pyspark > 0 {
                let target = (pyspark * 3 / 2 + 1023) / 1024 * 1024;
                let delta = target - pyspark;
                if delta > 0 && heap - delta >= 750 * cores {
                    heap -= delta;
                    t.set("spark.executor.pyspark.memory", &format!("{target}m"));
                }
            }
            t.set("spark.executor.memory", &format!("{heap}m"));
            if offheap > 0 {
                t.set("spark.memory.offHeap.size", &format!("{offheap}m"));
                t.set("spark.memory.offHeap.enabled", "true");
            }
        } else {
            let need = ((heap + min_overhead + offheap + pyspark) as f64
                / (1.0 - w.reserved_fraction)) as i64;
            t.comment(format!(
            "This node/worker configuration is not ideal for using the cuDF plugin\n\
             because it doesn't have enough memory for the executors.\n\
             We recommend either using nodes with more memory or reducing 'spark.memory.offHeap.size',\n\
             as off-heap memory is unused by the cuDF plugin, unless explicitly required by\n\
             the application. Need at least {need} MB memory per executor."
        ));
            let mut keys = vec!["spark.rapids.memory.pinnedPool.size"];
            if yarn_or_k8s {
                keys.push("spark.executor.memoryOverhead");
            }
            keys.push("spark.executor.memory");
            for k in keys {
                t.comment(format!(
                    "Not enough memory to set '{k}'. See comments for more details."
                ));
                t.set(k, FILL_IN);
                t.silent_unresolved.insert(k.to_string());
            }
        }
        // (the reference reads the amount as a whole number: "0.0" is not zero to it)
        if t.get("spark.executor.resource.gpu.amount")
            .is_none_or(|v| v.trim().is_empty() || v.trim().parse::<i64>() == Ok(0))
        {
            t.set("spark.executor.resource.gpu.amount", "1");
        }
        t.set("spark.task.resource.gpu.amount", "0.001");
        // the plugin tunes its concurrency itself from 25.06 (one plugin version on the
        // classpath): seeded from the tasks' GPU footprints where the run measured them
        match inp.plugin_versions.as_slice() {
            [v] if version::at_least(v, &[25, 6, 0]) => {
                if let Some(f) = inp.footprint {
                    footprint_seed(&mut t, w, cores, v, f);
                }
            }
            _ => t.set(
                "spark.rapids.sql.concurrentGpuTasks",
                &4.min(w.gpu_memory_mib / 7500).to_string(),
            ),
        }
        if let Some(n) = shuffle_threads(cores) {
            t.set(
                "spark.rapids.shuffle.multiThreaded.reader.threads",
                &n.to_string(),
            );
            t.set(
                "spark.rapids.shuffle.multiThreaded.writer.threads",
                &n.to_string(),
            );
        }
        t.set(
            "spark.rapids.sql.multiThreadedRead.numThreads",
            &read_threads(cores).to_string(),
        );
        if cores >= 16 {
            t.set(
                "spark.rapids.sql.format.parquet.multithreaded.combine.waitTime",
                "1000",
            );
        }
    } else {
        for c in [
            "Could not infer the cluster configuration, recommendations are generated using default values!",
            "'spark.executor.cores' should be set to 16.",
            "'spark.executor.instances' should be set to (cpuCoresPerNode * numWorkers) / 'spark.executor.cores'.",
            "'spark.task.resource.gpu.amount' should be set to 0.001.",
            "'spark.rapids.sql.enabled' should be true to enable SQL operations on the GPU.",
            "'spark.sql.adaptive.enabled' should be enabled for better performance.",
            "'spark.executor.memory' should be set to 2g/core.",
            "'spark.rapids.memory.pinnedPool.size' should be set to 2g.",
        ] {
            t.comment(c);
        }
    }
    t.set(
        "spark.rapids.sql.batchSizeBytes",
        &BATCH_SIZE_BYTES.to_string(),
    );
    t.set("spark.locality.wait", "0");
    // PySpark workers on YARN / Kubernetes: the executor memory they take is reserved for them
    let p = rules::pyspark_resource(|k| t.get(k), &master);
    t.apply(p);
    t.set("spark.rapids.sql.enabled", "true");
    if let Some(v) = with_class(t.get("spark.plugins").as_deref(), PLUGIN) {
        t.set("spark.plugins", &v);
    }
    cache_serializer(&mut t);
    // Kryo: the GPU registrator appended to the run's, a buffer large enough for GPU batches
    let k = rules::kryo(|k| t.out.get(k).cloned().flatten().or_else(|| t.source(k)));
    t.apply(k);
    // EMR: Transparent Huge Pages off
    for who in ["driver", "executor"] {
        let key = format!("spark.{who}.extraJavaOptions");
        if !t
            .source(&key)
            .is_some_and(|v| v.split_whitespace().any(|x| x == THP))
        {
            t.set(&key, THP);
            t.comment(format!(
                "Set '{key}={THP}' to disable Transparent Huge Pages (THP) for EMR. This recommendation \
                 does not preserve existing {who} JVM options; append any additional options manually. \
                 To view the source extraJavaOptions, please refer to spark_properties.csv in the tool output."
            ));
        }
    }
    // the RAPIDS Shuffle Manager of the run's Spark version (a Databricks runtime's own)
    let databricks = t.source("spark.databricks.clusterUsageTags.sparkVersion");
    let lookup = databricks
        .clone()
        .unwrap_or_else(|| inp.spark_version.clone());
    match SHUFFLE_VERSIONS.iter().find(|v| lookup.contains(*v)) {
        Some(v) => {
            let build = v.replace('.', "");
            t.set(
                "spark.shuffle.manager",
                &format!("com.nvidia.spark.rapids.spark{build}.RapidsShuffleManager"),
            );
        }
        None if databricks.is_some() => t.comment(format!(
            "Cannot recommend RAPIDS Shuffle Manager for Databricks runtime '{lookup}' on platform 'emr'.\n\
             If the runtime is supported, rerun with '--platform databricks-aws' or '--platform databricks-azure' to get a recommendation.\n\
             See supported versions: https://docs.nvidia.com/spark-rapids/user-guide/latest/additional-functionality/rapids-shuffle.html#rapids-shuffle-manager."
        )),
        None => t.comment(format!(
            "Cannot recommend RAPIDS Shuffle Manager for unsupported Spark version: '{}'.\n\
             To enable RAPIDS Shuffle Manager, use a supported Spark version (e.g., '4.0.0')\n\
             and set: '--conf spark.shuffle.manager=com.nvidia.spark.rapids.spark400.RapidsShuffleManager'.\n\
             See supported versions: https://docs.nvidia.com/spark-rapids/user-guide/latest/additional-functionality/rapids-shuffle.html#rapids-shuffle-manager.",
            inp.spark_version
        )),
    }
    t.comment(SHUFFLE_CLASSPATH);
    // file partitions from the largest file-scan task input; halved after GPU OOMs in scans
    let cur_mpb = t
        .get("spark.sql.files.maxPartitionBytes")
        .and_then(|v| parse_bytes(&v, false))
        .unwrap_or(512 << 20);
    let cur = (cur_mpb >> 20) as f64;
    let x = inp.tuner.file_scan_task_input_max.unwrap_or(0).max(0) as f64 / 1048576.0;
    // (no file-scan input: nothing computed, as the 26.08 jar does; its source mirror keeps the
    // current value)
    let mut new_mib = if x == 0.0 {
        None
    } else if x < 128.0 {
        Some((cur * (128.0 / x)).min(4096.0) as i64)
    } else if x > 256.0 {
        Some((cur / (x / 256.0)).min(4096.0) as i64)
    } else {
        None
    };
    // (26.08: only where a file-scan input was measured)
    if inp.scan_stages_with_gpu_oom > 0
        && x > 0.0
        && let Some(s) = t
            .get("spark.sql.files.maxPartitionBytes")
            .and_then(|v| parse_bytes(&v, false))
    {
        let halved = (s >> 20) / 2;
        new_mib = Some(new_mib.map_or(halved, |n| n.min(halved)));
    }
    if let Some(mib) = new_mib.filter(|m| *m > 0) {
        t.set(
            "spark.sql.files.maxPartitionBytes",
            &format_bytes(mib << 20),
        );
    }
    // shuffle partitions
    // (as the reference reads them: the comment for `false` only, AQE on for `true` only)
    let lower = |t: &Tuner<'_>, k: &str| {
        t.get(k)
            .map(|v| v.to_ascii_lowercase())
            .unwrap_or_else(|| "true".into())
    };
    let aqe = lower(&t, "spark.sql.adaptive.enabled");
    if aqe == "false" {
        t.comment("'spark.sql.adaptive.enabled' should be enabled for better performance.");
    }
    let coalescing =
        aqe == "true" && lower(&t, "spark.sql.adaptive.coalescePartitions.enabled") == "true";
    let initial_key = "spark.sql.adaptive.coalescePartitions.initialPartitionNum";
    let mut parts = [
        t.source("spark.sql.shuffle.partitions"),
        coalescing.then(|| t.source(initial_key)).flatten(),
    ]
    .iter()
    .flatten()
    .filter_map(|v| v.trim().parse::<i64>().ok())
    .max()
    .unwrap_or(200);
    let base_parts = parts;
    let spilled = &inp.spilled_shuffle_stages;
    if !spilled.is_empty() {
        let skewed: Vec<i64> = spilled
            .iter()
            .filter(|s| inp.tuner.skewed_stages.contains(s))
            .copied()
            .collect();
        if skewed.is_empty() {
            parts *= 2;
            t.comment(
                "Shuffle partitions should be increased since spilling occurred in shuffle stages.",
            );
        } else {
            t.comment(
                "Shuffle skew exists (when task's Shuffle Read Size > 3 * Avg Stage-level size) in\n\
                 stages with spilling. Increasing shuffle partitions is not recommended in this\n\
                 case since keys will still hash to the same task.",
            );
        }
    }
    // YARN killed executors' containers in GPU shuffle stages: more, smaller partitions
    if inp.shuffle_stages_with_container_oom > 0 {
        parts = parts.max(base_parts * 2);
        t.comment(
            "Shuffle partitions should be increased since task OOM occurred in shuffle stages.",
        );
    }
    // large inputs and shuffles: the GPU model's initial partition count (T4 800, A100 400)
    // when the run's is at most 200
    if large_io(inp)
        && let Some(n) = w.gpu.initial_partitions
        && t.source(initial_key)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(0)
            <= 200
    {
        parts = parts.max(n);
    }
    // at least one GPU batch per partition of the largest GPU exchange (AQE coalescing only)
    if coalescing
        && cluster
        && let Some(b) = inp.exchange_max_bytes
    {
        let batch = t
            .get("spark.rapids.sql.batchSizeBytes")
            .and_then(|v| parse_bytes(&v, false))
            .unwrap_or(BATCH_SIZE_BYTES)
            .max(1);
        let need = (b as f64 / batch as f64).ceil() as i64;
        if need > parts {
            t.comment(format!(
                "'{initial_key}' adjusted from {parts} to {need} based on ColumnarExchange data size ({b} bytes) and GPU batch size ({batch} bytes)"
            ));
            parts = need;
        }
    }
    t.set("spark.sql.shuffle.partitions", &parts.to_string());
    if coalescing && cluster {
        t.set(initial_key, &parts.to_string());
    }
    if cluster {
        // AQE partitions
        let v32 = version::at_least(&inp.spark_version, &[3, 2, 0]);
        if v32 {
            if t.source("spark.sql.adaptive.coalescePartitions.minPartitionSize")
                .is_none()
            {
                t.set(
                    "spark.sql.adaptive.coalescePartitions.minPartitionSize",
                    "4m",
                );
            }
        } else if t
            .source("spark.sql.adaptive.coalescePartitions.minPartitionNum")
            .is_none()
            && let Some((c, e)) = inp.tuner.cluster.filter(|(_, e)| *e > 0)
        {
            t.set(
                "spark.sql.adaptive.coalescePartitions.minPartitionNum",
                &(c * e).to_string(),
            );
        }
        let (mean_input, _) = mean_io(inp);
        if mean_input < 35000.0
            && t.source("spark.sql.adaptive.advisoryPartitionSizeInBytes")
                .is_none()
        {
            t.set("spark.sql.adaptive.advisoryPartitionSizeInBytes", "128m");
        }
        if large_io(inp) {
            // the GPU model's partition size (T4 32m, A100 64m)
            if let Some(size) = w.gpu.advisory_partition_size {
                t.set("spark.sql.adaptive.advisoryPartitionSizeInBytes", size);
            }
            t.set(
                "spark.sql.adaptive.coalescePartitions.parallelismFirst",
                "false",
            );
        }
        // (a value that is not a size, e.g. -1 for no broadcasts, is left alone)
        match t
        .source("spark.sql.adaptive.autoBroadcastJoinThreshold")
        .map(|v| parse_bytes(&v, false))
    {
        None => t.set("spark.sql.adaptive.autoBroadcastJoinThreshold", FILL_IN),
        Some(Some(b)) if b >> 20 > 100 => t.comment(
            "Setting 'spark.sql.adaptive.autoBroadcastJoinThreshold' > 100m could lead to performance\n\
             regression. Should be set to a lower number.",
        ),
        Some(_) => {}
    }
        // dynamic allocation: scaled by cores when on, removed when off
        let dyn_keys = [
            "spark.dynamicAllocation.initialExecutors",
            "spark.dynamicAllocation.minExecutors",
            "spark.dynamicAllocation.maxExecutors",
        ];
        if t.get("spark.dynamicAllocation.enabled")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        {
            let d = rules::dynamic_allocation(
                |k| t.source(k),
                |k| t.out.get(k).cloned().flatten(),
                cores,
            );
            t.apply(d);
        } else {
            for k in dyn_keys {
                if t.source(k).is_some() {
                    t.remove(k);
                }
            }
        }
    }
    // the JVM's charset
    if let Some(enc) = &inp.file_encoding
        && !matches!(enc.to_ascii_lowercase().as_str(), "utf-8" | "utf8")
    {
        t.comment(
            "file.encoding should be [UTF-8] because GPU only supports the charset when using some expressions.",
        );
    }
    delta_lake(&mut t);
    // (the reference would also read the executors' Python memory peaks on Spark versions whose
    // procfs metrics it trusts; aether does not keep them)
    let v = &inp.spark_version;
    if inp.python_oom
        && !((version::at_least(v, &[3, 5, 7]) && !version::at_least(v, &[4, 0, 0]))
            || version::at_least(v, &[4, 0, 1]))
    {
        t.comment(format!(
            "ProcessTreePythonVMemory evidence was not used because Spark version {v} can report unreliable procfs metrics."
        ));
    }
    let f = rules::file_cache(&inp.tuner.file_reads);
    t.apply(f);
    // JVM GC
    if inp.gc_ratio.is_some_and(|r| r > 0.3) {
        t.comment(
            "Average JVM GC time is very high. Other Garbage Collectors can be used for better performance.",
        );
    }
    finish(t)
}

/// A stage failure reason of Python workers out of memory, as the reference recognises it: a
/// `org.apache.spark.api.python.PythonException` and a line that is a Python, numpy or pyarrow
/// memory error.
fn is_python_oom(reason: &str) -> bool {
    const EXC: &str = "org.apache.spark.api.python.PythonException";
    let exception = reason.match_indices(EXC).any(|(i, _)| {
        let before = reason[..i].chars().next_back();
        let after = reason[i + EXC.len()..].chars().next();
        before.is_none_or(|c| c.is_whitespace() || c == ':')
            && after.is_none_or(|c| c.is_whitespace() || c == ':')
    });
    exception
        && reason.lines().any(|l| {
            let l = l.trim_start();
            [
                "MemoryError",
                "numpy.core._exceptions._ArrayMemoryError",
                "numpy._core._exceptions._ArrayMemoryError",
                "pyarrow.lib.ArrowMemoryError",
            ]
            .iter()
            .any(|e| {
                l.strip_prefix(e)
                    .is_some_and(|rest| rest.starts_with(':') || rest.trim().is_empty())
            })
        })
}

/// The Delta Lake version a jar name carries (`…/io.delta_delta-core_2.12-2.4.0.jar` → 2.4.0),
/// as the reference's `.*io\.delta_delta-[\w.-]+-(\d+\.\d+\.\d+)\.jar` reads it.
fn delta_version_of(jar: &str) -> Option<String> {
    let (_, rest) = jar.split_once("io.delta_delta-")?;
    let rest = rest.strip_suffix(".jar")?;
    let (name, version) = rest.rsplit_once('-')?;
    let parts: Vec<&str> = version.split('.').collect();
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '-')
        && parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    ok.then(|| version.to_string())
}

/// Plans that read a cached table: the GPU's Parquet cache serializer, unless the run chose its
/// own or turned GPU cache scans off.
fn cache_serializer(t: &mut Tuner<'_>) {
    const KEY: &str = "spark.sql.cache.serializer";
    const GPU: &str = "com.nvidia.spark.ParquetCachedBatchSerializer";
    const DEFAULT: &str = "org.apache.spark.sql.execution.columnar.DefaultCachedBatchSerializer";
    const SCAN: &str = "spark.rapids.sql.exec.InMemoryTableScanExec";
    if !t.inp.tuner.cache_evidence {
        return;
    }
    if t.get(SCAN)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
    {
        t.comment(format!(
            "'{KEY}' is not recommended because '{SCAN}' is disabled, so GPU cache scans remain disabled."
        ));
        return;
    }
    // (the run's value or one recommended, not Spark's default)
    let current = t.out.get(KEY).cloned().flatten().or_else(|| t.source(KEY));
    match current.as_deref() {
        Some(GPU) => {}
        Some(c) if c != DEFAULT => t.comment(format!(
            "'{KEY}' uses custom cache serializer '{c}'; preserving it. '{GPU}' is required for GPU InMemoryTableScan."
        )),
        _ => t.set(KEY, GPU),
    }
    let v = &t.inp.spark_version;
    if version::at_least(v, &[3, 5, 0]) && !version::at_least(v, &[3, 5, 2]) {
        t.comment(format!(
            "'{KEY}' remains compatible, but Spark 3.5.0 and 3.5.1 disable GPU InMemoryTableScan under AQE, so cached scans may remain on the CPU."
        ));
    }
}

/// The mean input and shuffle-read bytes of the run's SQLs.
fn mean_io(inp: &ProfileInputs) -> (f64, f64) {
    let n = inp.tuner.sql_io.len().max(1) as f64;
    let sum = |f: fn(&(i64, i64)) -> i64| inp.tuner.sql_io.iter().map(|x| f(x) as f64).sum::<f64>();
    (sum(|x| x.0) / n, sum(|x| x.1) / n)
}

/// A large input and a large shuffle (the reference's AQE thresholds, 35,000 and 50,000 bytes).
fn large_io(inp: &ProfileInputs) -> bool {
    let (input, shuffle) = mean_io(inp);
    input > 35000.0 && shuffle > 50000.0
}

/// `formatDoublePrecision(v, 2)`: rounded half up to 2 decimals, trailing zeros dropped.
fn two_decimals(v: f64) -> String {
    let r = (v * 100.0).round() / 100.0;
    let s = format!("{r:.2}");
    let s = s.trim_end_matches('0');
    s.trim_end_matches('.').to_string()
}

/// Java's `Double.toString` for the fractions (`1.0`, `0.25`).
fn java_double(v: f64) -> String {
    let s = format!("{v}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

/// The target GPU's nominal RMM pool as the reference models it, bytes, with what it came from.
struct RmmPool {
    pool: i64,
    cap: i64,
    chunked: i64,
    free: i64,
    reserve: i64,
    kind: String,
    shuffle: String,
    /// alloc / min / max fractions
    fractions: [f64; 3],
    /// the reserve added for UCX shuffle bounce buffers
    ucx: i64,
}

/// concurrentGpuTasks for plugin 25.06+ from the largest task GPU footprint the run measured:
/// the target's nominal RMM pool over that footprint, capped by the task slots of a GPU and the
/// plugin's 32 MiB permits, as the 26.08.4 reference models the default discrete-GPU pool; not
/// recommended (with the reason) when the run's batch size differs from the target's or the
/// pool cannot be modeled.
fn footprint_seed(
    t: &mut Tuner<'_>,
    w: &Worker,
    cores: i64,
    plugin: &str,
    (stage, max, count, mean, sd): (i64, i64, i64, f64, Option<f64>),
) {
    const KEY: &str = "spark.rapids.sql.concurrentGpuTasks";
    let not = |why: String| {
        format!("'{KEY}' was not recommended from historical 'gpuMaxTaskFootprint' because {why}")
    };
    // the footprint was measured with the run's batch size: the target's must be the same
    let target = BATCH_SIZE_BYTES;
    match t
        .source("spark.rapids.sql.batchSizeBytes")
        .and_then(|v| parse_bytes(&v, false))
        .filter(|b| *b > 0)
    {
        None => {
            t.comment(not("the source or target 'spark.rapids.sql.batchSizeBytes' could not be resolved. Set or preserve a known target batch size that matches the profiled value, or re-profile with the intended target configuration.".into()));
            return;
        }
        Some(b) if b != target => {
            t.comment(not(format!("the recommended target configuration changes 'spark.rapids.sql.batchSizeBytes' from {b}b to {target}b. Batch-size tuning is independent of this heuristic, and cross-batch footprint scaling is not modeled. Re-profile with {target}b, or preserve or enforce {b}b, to enable the footprint-based recommendation.")));
            return;
        }
        Some(_) => {}
    }
    // the nominal RMM pool (the plugin's discrete-GPU pool sizing, 512-byte aligned)
    let trunc = |b: f64| (b as i64) / 512 * 512;
    let get = |k: &str| t.get(k);
    let fraction = |k: &str, d: f64| -> std::result::Result<f64, String> {
        match get(k) {
            None => Ok(d),
            Some(v) => v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| (0.0..=1.0).contains(x))
                .ok_or_else(|| format!("'{k}' could not be resolved to a valid value")),
        }
    };
    let bytes = |k: &str, d: i64| -> std::result::Result<i64, String> {
        match get(k) {
            None => Ok(d),
            Some(v) => parse_bytes(&v, false)
                .ok_or_else(|| format!("'{k}' could not be resolved to a valid value")),
        }
    };
    let model = || -> std::result::Result<RmmPool, String> {
        if get("spark.rapids.memory.gpu.allocSize").is_some() {
            return Err(
                "'spark.rapids.memory.gpu.allocSize' exact allocation is not modeled".into(),
            );
        }
        if get("spark.rapids.memory.uvm.enabled")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        {
            return Err("'spark.rapids.memory.uvm.enabled=true' is not modeled".into());
        }
        let pool_kind = get("spark.rapids.memory.gpu.pool").unwrap_or_else(|| "ASYNC".into());
        let pool_kind = pool_kind.trim().to_ascii_uppercase();
        if !["ASYNC", "DEFAULT", "ARENA"].contains(&pool_kind.as_str()) {
            return Err(format!(
                "unsupported 'spark.rapids.memory.gpu.pool={pool_kind}'"
            ));
        }
        let shuffle = get("spark.rapids.shuffle.mode").unwrap_or_else(|| "MULTITHREADED".into());
        if shuffle != "UCX" && shuffle != "MULTITHREADED" {
            return Err(format!("unsupported 'spark.rapids.shuffle.mode={shuffle}'"));
        }
        let alloc = fraction("spark.rapids.memory.gpu.allocFraction", 1.0)?;
        let max_f = fraction("spark.rapids.memory.gpu.maxAllocFraction", 1.0)?;
        let min_f = fraction("spark.rapids.memory.gpu.minAllocFraction", 0.25)?;
        let reserve = bytes("spark.rapids.memory.gpu.reserve", 640 << 20)?;
        let bounce = bytes("spark.rapids.shuffle.ucx.bounceBuffers.size", 4 << 20)?;
        let chunked = bytes("spark.rapids.sql.chunkedPack.poolSize", 10 << 20)?;
        if min_f > max_f || alloc > max_f {
            return Err("RMM allocation fractions are invalid".into());
        }
        let cap = w.gpu_memory_mib << 20;
        let free = cap - chunked;
        let ucx = if shuffle == "UCX" && pool_kind == "ASYNC" {
            2 * bounce
        } else {
            0
        };
        let eff_reserve = reserve + ucx;
        if eff_reserve >= free {
            return Err("RMM reserve exceeds nominal free GPU memory".into());
        }
        let min_b = trunc(min_f * cap as f64);
        let max_b = trunc(max_f * cap as f64);
        let mut pool = trunc(alloc * (free - eff_reserve) as f64);
        if pool < min_b {
            return Err("nominal RMM pool is below minAllocFraction".into());
        }
        if pool > max_b {
            return Err("nominal RMM pool exceeds maxAllocFraction".into());
        }
        pool = pool.min(trunc((max_b - eff_reserve) as f64));
        if pool <= 0 {
            return Err("nominal RMM pool is below minAllocFraction".into());
        }
        Ok(RmmPool {
            pool,
            cap,
            chunked,
            free,
            reserve,
            kind: pool_kind,
            shuffle,
            fractions: [alloc, min_f, max_f],
            ucx,
        })
    };
    let RmmPool {
        pool,
        cap,
        chunked,
        free,
        reserve,
        kind: pool_kind,
        shuffle,
        fractions: [alloc, min_f, max_f],
        ucx,
    } = match model() {
        Ok(m) => m,
        Err(why) => {
            t.comment(not(format!("a nominal target RMM pool could not be modeled: {why}. Set a valid target GPU device capacity and ordinary discrete-GPU RMM settings, or rely on plugin runtime auto-tuning.")));
            return;
        }
    };
    // task slots of the GPU: the executor's cores per task CPU, and the GPU share of a task
    let task_cpus = t
        .get("spark.task.cpus")
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|c| *c > 0)
        .unwrap_or(1);
    let task_gpu = t
        .get("spark.task.resource.gpu.amount")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(0.001);
    let cpu_cap = cores / task_cpus;
    let gpu_cap = if task_gpu > 0.0 && task_gpu <= 0.5 {
        (1.0 / task_gpu).floor() as i64
    } else {
        1
    };
    let slots = cpu_cap.min(gpu_cap);
    let quotient = pool / max.max(1);
    let permits = (pool / (32 << 20)).max(1);
    let mut seed = quotient.max(1).min(slots).min(permits);
    let mut plugin_cap = String::new();
    if version::at_least(plugin, &[25, 10, 0])
        && let Some(v) = t.source("spark.rapids.sql.maxConcurrentGpuTasks")
    {
        match v.trim().parse::<i64>() {
            Ok(n) if n > 0 => {
                seed = seed.min(n);
                plugin_cap = format!(", plugin maximum {n}");
            }
            Ok(_) => {}
            Err(_) => {
                t.comment(not("the prospective plugin task-count ceiling could not be resolved: 'spark.rapids.sql.maxConcurrentGpuTasks' could not be resolved to a valid integer. Set a valid integer value, resolve conflicting target controls, or rely on plugin runtime auto-tuning.".into()));
                return;
            }
        }
    }
    t.set(KEY, &seed.to_string());
    let cv = sd
        .filter(|_| count > 1 && mean > 0.0)
        .map(|sd| two_decimals(sd / mean))
        .unwrap_or_else(|| "not available".into());
    let ratio = if mean > 0.0 {
        two_decimals(max as f64 / mean)
    } else {
        "not available".into()
    };
    let async_note = if pool_kind == "ASYNC" {
        " The effective ASYNC allocator is assumed to remain effective on the target CUDA runtime and driver."
    } else {
        ""
    };
    let warn = if pool < max {
        " WARN: The nominal target RMM pool is smaller than the historical single-task footprint, so seed 1 does not establish that the task will fit."
    } else {
        ""
    };
    t.comment(format!(
        "'{KEY}' was seeded at {seed} from historical 'gpuMaxTaskFootprint'. Stage {stage} reported a maximum of {max}b across {count} task-attempt update(s), with CV {cv} and max/mean {ratio}. The unpadded nominal target RMM pool is {pool}b. The model treats {cap}b from device catalog as both CUDA total and pre-startup free memory, subtracts the {chunked}b chunked-pack allocation and leaves {free}b nominal free before the {reserve}b base reserve. The effective reserve is {}b. The {pool_kind} allocator with {shuffle} shuffle applies alloc/min/max fractions {}/{}/{}, and truncates RMM values to 512-byte alignment under the discrete-gpu-rmm-v1 compatibility profile. The effective reserve includes {ucx}b from the plugin pool-sizing UCX adjustment, not the full UCX allocation. CUDA context, driver, and other future startup use are not modeled.{async_note} Its floor quotient is {quotient}, with caps for target task slots {slots} (CPU cap {cpu_cap} from {cores} executor cores and {task_cpus} CPU(s) per task; GPU cap {gpu_cap} from {} GPU per task), 32 MiB permit representation {permits}{plugin_cap}. This is a memory-admission seed, not a guarantee of observed task concurrency or spill avoidance.{warn}",
        reserve + ucx,
        java_double(alloc),
        java_double(min_f),
        java_double(max_f),
        java_double(task_gpu),
    ));
}

/// A Delta Lake session (its extension or catalog): the reference's Delta Lake OSS rules.
fn delta_lake(t: &mut Tuner<'_>) {
    let on = t
        .source("spark.sql.extensions")
        .is_some_and(|v| v.contains("DeltaSparkSessionExtension"))
        || t.source("spark.sql.catalog.spark_catalog")
            .is_some_and(|v| v.contains("DeltaCatalog"));
    if !on {
        return;
    }
    match t.inp.delta_jars.iter().find_map(|j| delta_version_of(j)) {
        Some(v) if version::at_least(&v, &[3, 3, 0]) => {}
        Some(v) => t.comment(format!(
            "Delta Lake version is {v}. It is recommended to upgrade to Delta Lake version 3.3.0 or above for better compatibility with the cuDF plugin."
        )),
        None => t.comment(
            "Delta Lake version could not be determined. It is recommended to use Delta Lake version 3.3.0 or above for better compatibility with the cuDF plugin.",
        ),
    }
    let key = "spark.rapids.sql.format.delta.write.enabled";
    if t.get(key)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
    {
        t.set(key, "true");
    }
    t.comment(format!(
        "'{key}' controls whether the writing of Delta Lake tables is accelerated by the cuDF plugin. Default is 'true'."
    ));
}

/// The properties that differ from the run (with their comments), sorted.
fn finish(mut t: Tuner<'_>) -> Tuning {
    let mut properties = Vec::new();
    let out = std::mem::take(&mut t.out);
    for (key, value) in out {
        let conf = t.conf(&key);
        let source = t.source(&key);
        let was = source
            .clone()
            .or_else(|| t.table.get(&key).and_then(|e| e.default.clone()));
        match value {
            None => {
                if let Some(s) = source.clone() {
                    properties.push(Recommended {
                        key,
                        value: s,
                        change: Change::Removed,
                        source,
                    });
                }
            }
            Some(v) => {
                if v == FILL_IN {
                    if source.is_none() && !t.silent_unresolved.contains(&key) {
                        t.comments.insert(format!("'{key}' was not set."));
                    }
                    properties.push(Recommended {
                        key,
                        value: v,
                        change: Change::Unresolved,
                        source,
                    });
                    continue;
                }
                if was.as_deref().map(|w| normalize(conf, w)).as_deref() == Some(v.as_str()) {
                    continue;
                }
                let change = if was.is_none() {
                    if let Some(c) = missing_comment(&key) {
                        t.comments.insert(c);
                    }
                    Change::Added
                } else {
                    if let Some(c) = updated_comment(&key) {
                        t.comments.insert(c);
                    }
                    Change::Changed
                };
                properties.push(Recommended {
                    key,
                    value: v,
                    change,
                    source,
                });
            }
        }
    }
    Tuning {
        recommended: true,
        properties,
        comments: t.comments.into_iter().collect(),
    }
}

/// The reference's section D of `profile.log`.
pub fn render_section_d(t: &Tuning) -> String {
    let mut s = String::from("### D. Recommended Configuration ###\n\n");
    if !t.recommended {
        s.push_str("Cannot recommend properties. See Comments.\n");
        return s;
    }
    s.push_str("Spark Properties:\n");
    for p in &t.properties {
        s.push_str(&format!("--conf {}={}\n", p.key, p.value));
    }
    s.push_str("\nComments:\n");
    for c in &t.comments {
        s.push_str(&format!("- {}\n", c.replace('\n', "\n  ")));
    }
    s
}

/// One app's block of the reference's `tuning_summary.log`.
pub fn render_summary(app_id: &str, t: &Tuning) -> String {
    let mut s = format!("App ID: {app_id}\n\tSpark Properties:\n");
    if t.properties.is_empty() {
        s.push_str("\t- No recommendations\n");
    }
    for p in &t.properties {
        s.push_str(&format!("\t--conf {}={}\n", p.key, p.value));
    }
    s.push_str("\tComments:\n");
    if t.comments.is_empty() {
        s.push_str("\t- No comments\n");
    }
    for c in &t.comments {
        s.push_str(&format!("\t- {}\n", c.replace('\n', "\n\t")));
    }
    s
}

/// A spark-defaults file: each property after the comments that concern it.
pub fn render_conf(app_id: &str, w: &Worker, t: &Tuning) -> String {
    let mut s = format!(
        "# Spark properties for {app_id} on {} (aether profile; the RAPIDS profiling AutoTuner's rules)\n",
        w.instance
    );
    if !t.recommended {
        s.push_str("# not a GPU run with the RAPIDS plugin enabled: nothing to recommend\n");
        return s;
    }
    let mut used = BTreeSet::new();
    for p in &t.properties {
        let quoted = format!("'{}", p.key);
        for (i, c) in t.comments.iter().enumerate() {
            if c.contains(&quoted) && used.insert(i) {
                for line in c.lines() {
                    s.push_str(&format!("# {line}\n"));
                }
            }
        }
        let what = match p.change {
            Change::Added => "added",
            Change::Changed => "changed",
            Change::Removed => "remove (the run's value is shown)",
            Change::Unresolved => "fill in",
        };
        let had = p
            .source
            .as_deref()
            .map(|v| {
                let short: String = v.chars().take(60).collect();
                let more = if short.len() < v.len() { "…" } else { "" };
                format!(" (the run had {short}{more})")
            })
            .unwrap_or_default();
        match p.change {
            // not a value Spark can take: left commented out
            Change::Removed | Change::Unresolved => {
                s.push_str(&format!("# {what}{had}\n# {} {}\n", p.key, p.value))
            }
            _ => s.push_str(&format!("# {what}{had}\n{} {}\n", p.key, p.value)),
        }
    }
    let rest: Vec<&String> = t
        .comments
        .iter()
        .enumerate()
        .filter(|(i, _)| !used.contains(i))
        .map(|(_, c)| c)
        .collect();
    if !rest.is_empty() {
        s.push_str("\n# Also:\n");
        for c in rest {
            for line in c.lines() {
                s.push_str(&format!("# {line}\n"));
            }
        }
    }
    s
}

/// The reference profiler's per-app tables aether writes the same: (table, view); each view
/// (`sql/profile_<table>.sql`) equals the reference's CSV of that name.
pub const REFERENCE_TABLES: &[(&str, &str)] = &[
    ("application_information", "profile_application_information"),
    ("executor_information", "profile_executor_information"),
    ("job_information", "profile_job_information"),
    (
        "stage_level_aggregated_task_metrics",
        "profile_stage_level_aggregated_task_metrics",
    ),
    (
        "job_level_aggregated_task_metrics",
        "profile_job_level_aggregated_task_metrics",
    ),
    (
        "sql_level_aggregated_task_metrics",
        "profile_sql_level_aggregated_task_metrics",
    ),
    (
        "sql_plan_metrics_for_application",
        "profile_sql_plan_metrics_for_application",
    ),
    ("failed_stages", "profile_failed_stages"),
    ("removed_executors", "profile_removed_executors"),
    ("removed_blockmanagers", "profile_removed_blockmanagers"),
    ("shuffle_skew_check", "profile_shuffle_skew_check"),
    ("failed_jobs", "profile_failed_jobs"),
    ("failed_tasks", "profile_failed_tasks"),
    (
        "gpu_stage_level_aggregated_task_metrics",
        "profile_gpu_stage_level_aggregated_task_metrics",
    ),
    (
        "gpu_sql_level_aggregated_task_metrics",
        "profile_gpu_sql_level_aggregated_task_metrics",
    ),
    (
        "gpu_app_level_aggregated_task_metrics",
        "profile_gpu_app_level_aggregated_task_metrics",
    ),
    ("io_metrics", "profile_io_metrics"),
    (
        "sql_to_stage_information",
        "profile_sql_to_stage_information",
    ),
    ("system_properties", "profile_system_properties"),
    (
        "spark_rapids_parameters_set_explicitly",
        "profile_spark_rapids_parameters_set_explicitly",
    ),
];

/// What a GPU run tells beyond the reference's tables: (table, view); list columns are written
/// by their text twin (`stage_ids` as `stages`).
pub const BEYOND_TABLES: &[(&str, &str)] = &[
    ("cpu_fallbacks", "profile_cpu_fallbacks"),
    ("slowness", "profile_slowness"),
    ("health", "profile_health"),
];

/// Register what [`inputs`] reads over the base tables of `ctx`.
pub async fn prepare(ctx: &SessionContext) -> Result<()> {
    aether_engine::views::register_views_materialized(
        ctx,
        &Default::default(),
        &[
            "stage_jobs",
            "profile_shuffle_skew_check",
            "profile_sql_plan_metrics_for_application",
        ],
    )
    .await?;
    Ok(())
}

/// Register what [`inputs`] and every table of `aether profile` read, each view computed once.
pub async fn prepare_tables(ctx: &SessionContext) -> Result<()> {
    // (profile_shuffle_skew_check, which inputs also read, is a reference table)
    let views: Vec<&str> = std::iter::once("stage_jobs")
        .chain(
            REFERENCE_TABLES
                .iter()
                .chain(BEYOND_TABLES)
                .map(|(_, v)| *v),
        )
        .collect();
    aether_engine::views::register_views_materialized(ctx, &Default::default(), &views).await?;
    Ok(())
}

/// The rules' inputs of every app in `ctx` (after [`prepare`]), by app id.
pub async fn inputs(ctx: &SessionContext) -> Result<HashMap<String, ProfileInputs>> {
    let mut tuner = crate::autotuner::inputs(ctx).await?;
    let mut all: HashMap<String, ProfileInputs> = HashMap::new();
    let apps = rows_by_app(ctx, "SELECT app_id, spark_version FROM applications").await?;
    for (app, rows) in apps {
        let p = all.entry(app.clone()).or_default();
        p.spark_version = rows
            .first()
            .and_then(|r| r.get("spark_version"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        p.tuner = tuner.remove(&app).unwrap_or_default();
    }
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, key, value FROM properties WHERE category = 'spark'",
    )
    .await?
    {
        let p = all.entry(app).or_default();
        for r in rows {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            p.props.insert(s("key"), s("value"));
        }
        p.tuner.props = p.props.clone();
    }
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT DISTINCT app_id, key FROM properties
         WHERE category = 'classpath' AND key LIKE '%rapids-4-spark_%'",
    )
    .await?
    {
        let p = all.entry(app).or_default();
        let mut v: Vec<String> = rows
            .iter()
            .filter_map(|r| r.get("key").and_then(Value::as_str))
            .filter_map(plugin_version_of)
            .collect();
        v.sort();
        v.dedup();
        p.plugin_versions = v;
    }
    // mean over SQLs of GC time / CPU time (the reference's sql_level_aggregated_task_metrics:
    // a stage's CPU time is its tasks' nanoseconds summed, then cut to milliseconds; a SQL's is
    // the sum of its stages': sub-millisecond tasks still count)
    for (app, rows) in rows_by_app(
        ctx,
        "WITH s AS (SELECT DISTINCT app_id, sql_id, stage_id FROM stage_jobs WHERE sql_id IS NOT NULL),
              st AS (SELECT s.app_id, s.sql_id, s.stage_id, SUM(t.jvm_gc_time_ms) AS gc,
                            SUM(t.executor_cpu_time_ns) / 1000000 AS cpu
                     FROM s JOIN tasks t ON t.app_id = s.app_id AND t.stage_id = s.stage_id
                     GROUP BY s.app_id, s.sql_id, s.stage_id)
         SELECT app_id, sql_id, SUM(gc) AS gc, SUM(cpu) AS cpu FROM st GROUP BY app_id, sql_id",
    )
    .await?
    {
        let fractions: Vec<f64> = rows
            .iter()
            .map(|r| {
                let gc = i(r.get("gc")).unwrap_or(0) as f64;
                gc / i(r.get("cpu")).unwrap_or(0) as f64
            })
            .collect();
        if !fractions.is_empty() {
            all.entry(app).or_default().gc_ratio =
                Some(fractions.iter().sum::<f64>() / fractions.len() as f64);
        }
    }
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, key, value FROM properties
         WHERE (category = 'system' AND key = 'file.encoding')
            OR (category = 'classpath' AND key LIKE '%io.delta_delta-%')
         ORDER BY key",
    )
    .await?
    {
        let p = all.entry(app).or_default();
        for r in rows {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            if s("key") == "file.encoding" {
                p.file_encoding = Some(s("value"));
            } else {
                p.delta_jars.push(s("key"));
            }
        }
    }
    // scan stages with a task that failed on a GPU OOM (the RAPIDS retry framework's errors)
    for (app, rows) in rows_by_app(
        ctx,
        "WITH scans AS (SELECT DISTINCT app_id, unnest(update_stage_ids) AS stage_id
                        FROM sql_metrics WHERE name = 'scan time')
         SELECT t.app_id, COUNT(DISTINCT t.stage_id) AS n
         FROM tasks t JOIN scans s ON s.app_id = t.app_id AND s.stage_id = t.stage_id
         WHERE t.status <> 'success'
           AND (strpos(COALESCE(t.failure_detail, t.end_reason, ''), 'GpuSplitAndRetryOOM') > 0
             OR strpos(COALESCE(t.failure_detail, t.end_reason, ''), 'GpuRetryOOM') > 0
             OR strpos(COALESCE(t.failure_detail, t.end_reason, ''), 'jni.GpuOOM') > 0
             OR strpos(COALESCE(t.failure_detail, t.end_reason, ''), 'jni.SplitAndRetryOOM') > 0
             OR strpos(COALESCE(t.failure_detail, t.end_reason, ''), 'jni.RetryOOM') > 0)
         GROUP BY t.app_id",
    )
    .await?
    {
        all.entry(app).or_default().scan_stages_with_gpu_oom =
            rows.first().and_then(|r| i(r.get("n"))).unwrap_or(0);
    }
    // YARN: failed GPU shuffle stages whose tasks lost their executor to a container kill
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT t.app_id, COUNT(DISTINCT t.stage_id) AS n
         FROM tasks t
         JOIN (SELECT DISTINCT app_id, stage_id FROM stages
               WHERE status = 'failed' AND strpos(name, 'GpuShuffleExchangeExec') > 0) s
           ON s.app_id = t.app_id AND s.stage_id = t.stage_id
         JOIN properties p ON p.app_id = t.app_id AND p.category = 'spark'
                          AND p.key = 'spark.master' AND strpos(p.value, 'yarn') > 0
         WHERE t.status <> 'success'
           AND strpos(COALESCE(t.failure_detail, t.end_reason, ''), 'ExecutorLostFailure') > 0
           AND strpos(COALESCE(t.failure_detail, t.end_reason, ''), 'Exit status: 137') > 0
         GROUP BY t.app_id",
    )
    .await?
    {
        all.entry(app)
            .or_default()
            .shuffle_stages_with_container_oom =
            rows.first().and_then(|r| i(r.get("n"))).unwrap_or(0);
    }
    // the largest data size of a GPU columnar exchange
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, MAX(total) AS b FROM profile_sql_plan_metrics_for_application
         WHERE strpos(\"nodeName\", 'ColumnarExchange') > 0 AND name = 'data size'
         GROUP BY app_id",
    )
    .await?
    {
        all.entry(app).or_default().exchange_max_bytes = rows.first().and_then(|r| i(r.get("b")));
    }
    // stages that failed on Python workers out of memory
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, failure_reason FROM stages
         WHERE status = 'failed' AND strpos(failure_reason, 'PythonException') > 0",
    )
    .await?
    {
        all.entry(app).or_default().python_oom = rows.iter().any(|r| {
            r.get("failure_reason")
                .and_then(Value::as_str)
                .is_some_and(is_python_oom)
        });
    }
    // the stage with the largest task GPU footprint (first stage on ties)
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, stage_id, max, samples, CAST(sum AS DOUBLE) AS sum, sum_squares
         FROM stage_gpu_metrics WHERE metric = 'gpuMaxTaskFootprint' AND max > 0
         ORDER BY app_id, max DESC, stage_id",
    )
    .await?
    {
        if let Some(r) = rows.first() {
            let f = |k: &str| r.get(k).and_then(Value::as_f64);
            let n = i(r.get("samples")).unwrap_or(0);
            let mean = f("sum").unwrap_or(0.0) / n.max(1) as f64;
            // sample standard deviation from the sum of squares
            let sd = f("sum_squares").filter(|_| n > 1).map(|sq| {
                ((sq - n as f64 * mean * mean) / (n - 1) as f64)
                    .max(0.0)
                    .sqrt()
            });
            all.entry(app).or_default().footprint = Some((
                i(r.get("stage_id")).unwrap_or(0),
                i(r.get("max")).unwrap_or(0),
                n,
                mean,
                sd,
            ));
        }
    }
    // stages that read or wrote shuffle data and spilled (memory or disk)
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, stage_id FROM tasks GROUP BY app_id, stage_id
         HAVING SUM(shuffle_remote_bytes_read + shuffle_local_bytes_read + shuffle_bytes_written) > 0
            AND SUM(memory_bytes_spilled + disk_bytes_spilled) > 0",
    )
    .await?
    {
        all.entry(app).or_default().spilled_shuffle_stages =
            rows.iter().filter_map(|r| i(r.get("stage_id"))).collect();
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_versions_from_jar_names() {
        assert_eq!(
            plugin_version_of("/opt/sparkRapidsPlugin/rapids-4-spark_2.12-25.02.0-cuda11.jar")
                .as_deref(),
            Some("25.02.0")
        );
        assert_eq!(
            plugin_version_of("file:///usr/lib/spark/jars/rapids-4-spark_2.12-23.10.0.jar")
                .as_deref(),
            Some("23.10.0")
        );
        assert_eq!(plugin_version_of("/x/cudf-21.06.jar"), None);
        // a one-digit month, a snapshot's short version: not the reference's pattern
        assert_eq!(plugin_version_of("/x/rapids-4-spark_2.12-25.8.0.jar"), None);
        assert_eq!(
            plugin_version_of("/x/rapids-4-spark_2.12-0.6.0-SNAPSHOT.jar"),
            None
        );
    }

    #[test]
    fn python_out_of_memory_reasons() {
        let r = "Lost task 0.3: org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n  File \"w.py\", line 1\nMemoryError\n";
        assert!(is_python_oom(r));
        assert!(is_python_oom(&r.replace(
            "MemoryError",
            "pyarrow.lib.ArrowMemoryError: out of memory"
        )));
        assert!(!is_python_oom(&r.replace("MemoryError", "ValueError: bad")));
        assert!(!is_python_oom("MemoryError\n"));
        assert!(!is_python_oom(
            &r.replace("PythonException", "PythonExceptions")
        ));
    }

    #[test]
    fn a_cpu_run_gets_nothing() {
        let t = recommend(&ProfileInputs::default(), &Worker::default());
        assert!(!t.recommended);
        assert!(render_section_d(&t).contains("Cannot recommend properties. See Comments."));
    }
}
