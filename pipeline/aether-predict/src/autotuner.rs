//! Bootstrap Spark configs for the GPU cluster: the reference tool's AutoTuner rules for
//! qualification (docs/reference/autotuner.md), for any target shape, each value with the
//! reason it is set.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::Result;
use crate::version;
use aether_engine::SessionContext;
use serde_json::Value;

use crate::rows::{Row, rows_by_app};

pub(crate) const TUNING_TABLE: &str =
    include_str!("../../../datasets/reference/rapids-plugin/tuning-table.csv");
const THP: &str = "-XX:-UseTransparentHugePages";
const PLUGIN: &str = "com.nvidia.spark.SQLPlugin";
const CACHE_SERIALIZER: &str = "com.nvidia.spark.ParquetCachedBatchSerializer";
const FILL_IN: &str = "[FILL_IN_VALUE]";

/// The GPU executors the configs are for.
#[derive(Clone, Debug)]
pub struct Target {
    pub cores_per_executor: i64,
    /// Host memory per executor (node memory / GPUs per node), MiB.
    pub memory_per_executor_mib: i64,
    pub gpu_memory_mib: i64,
    /// Share of node memory EMR keeps for itself.
    pub reserved_fraction: f64,
}

/// What the rules read from the CPU run.
#[derive(Clone, Debug, Default)]
pub struct TunerInputs {
    pub props: BTreeMap<String, String>,
    pub spark_version: String,
    /// Largest executor core count, and the most executors alive at once (`None`: no executors).
    pub cluster: Option<(i64, i64)>,
    /// Hosts the executors ran on.
    pub hosts: i64,
    /// Per stage: (input bytes max of a task, shuffle read, shuffle write, disk spill).
    pub stages: BTreeMap<i64, (i64, i64, i64, i64)>,
    /// Stages with a task reading > 3 × the mean shuffle bytes and > 100 MiB.
    pub skewed_stages: BTreeSet<i64>,
    /// Per SQL with stages: (input bytes, shuffle read bytes).
    pub sql_io: Vec<(i64, i64)>,
    /// Largest task input of a file-scan stage (no cached-table scan in it), bytes.
    pub file_scan_task_input_max: Option<i64>,
    /// The plans read a cached table (InMemoryTableScan, …).
    pub cache_evidence: bool,
    /// Every file scan of every plan version, as the reference's data_source_information
    /// lists them: (location, a Parquet scan, bytes of files read).
    pub file_reads: Vec<(String, bool, i64)>,
}

/// One property of the bootstrap config.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    pub key: String,
    pub value: String,
    /// Why it is set (or `kept from the CPU run` for a value echoed unchanged).
    pub reason: String,
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum ConfType {
    Int,
    Double,
    Bool,
    Byte { mib: bool },
    Text,
}

struct TableEntry {
    conf: ConfType,
}

fn table() -> BTreeMap<String, TableEntry> {
    let mut out = BTreeMap::new();
    let mut r = csv::Reader::from_reader(TUNING_TABLE.as_bytes());
    for rec in r.records().flatten() {
        let key = rec[0].to_string();
        // EMR turns the two JVM-options entries on
        let enabled = &rec[1] == "true" || key.ends_with(".extraJavaOptions");
        if !enabled {
            continue;
        }
        let conf = match &rec[2] {
            "int" | "long" => ConfType::Int,
            "double" => ConfType::Double,
            "boolean" => ConfType::Bool,
            "byte" => ConfType::Byte {
                mib: &rec[3] == "MiB",
            },
            _ => ConfType::Text,
        };
        out.insert(key, TableEntry { conf });
    }
    out
}

/// Executor memory on the target, MiB: (heap, usable after EMR's share, base overhead) with
/// the AutoTuner's 2 GiB of heap per core and 10 % JVM overhead.
fn memory_plan(t: &Target) -> (i64, i64, i64) {
    let heap = 2048 * t.cores_per_executor;
    let usable = (t.memory_per_executor_mib as f64 * (1.0 - t.reserved_fraction)) as i64;
    (heap, usable, (heap as f64 * 0.1) as i64)
}

/// Whether a target's executors have the memory the configs need: heap, overhead, and at least
/// 2 GiB each of pinned and spill memory (no off-heap, no PySpark memory).
pub fn memory_fits(t: &Target) -> bool {
    let (heap, usable, base_overhead) = memory_plan(t);
    usable - heap >= base_overhead + 2048 + 2048
}

pub use crate::units::{format_bytes, parse_bytes};

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

/// Shuffle reader/writer threads for an executor's cores (none under 4 cores).
pub(crate) fn shuffle_threads(cores: i64) -> Option<i64> {
    match cores {
        c if c < 4 => None,
        c if c < 16 => Some(20),
        c if c < 20 => Some(28),
        c => Some((c as f64 * 1.5) as i64),
    }
}

/// Multi-threaded file-reading threads for an executor's cores (cloud storage).
pub(crate) fn read_threads(cores: i64) -> i64 {
    match cores {
        c if c < 8 => 20.max(c),
        c if c < 16 => 40.max(c),
        c if c < 20 => 80.max(c),
        c => (2 * c).clamp(20, 1000),
    }
}

/// Spark's off-heap memory (when enabled), MiB, with `get` giving each property's value.
pub(crate) fn offheap_mib(get: impl Fn(&str) -> Option<String>) -> i64 {
    if get("spark.memory.offHeap.enabled").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        get("spark.memory.offHeap.size")
            .and_then(|v| parse_bytes(&v, false))
            .unwrap_or(0)
            >> 20
    } else {
        0
    }
}

/// The executor memory taken by off-heap (when enabled) and PySpark memory, MiB, with `get`
/// giving each property's value.
pub(crate) fn offheap_and_pyspark_mib(get: impl Fn(&str) -> Option<String>) -> i64 {
    let pyspark = get("spark.executor.pyspark.memory")
        .and_then(|v| parse_bytes(&v, true))
        .unwrap_or(0)
        >> 20;
    offheap_mib(get) + pyspark
}

/// The cores and executors of the CPU run as the AutoTuner counts them: `spark.executor.cores`
/// and (without dynamic allocation) `spark.executor.instances` when set, else the log's.
pub fn source_cores_and_executors(inp: &TunerInputs) -> Option<(i64, i64)> {
    let (ev_cores, ev_execs) = inp.cluster?;
    let prop = |k: &str| inp.props.get(k).and_then(|v| v.trim().parse::<i64>().ok());
    let dyn_alloc = inp
        .props
        .get("spark.dynamicAllocation.enabled")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let cores = prop("spark.executor.cores").unwrap_or(ev_cores);
    let execs = if dyn_alloc {
        ev_execs
    } else {
        prop("spark.executor.instances").unwrap_or(ev_execs)
    };
    (execs > 0).then_some((cores, execs))
}

struct Rec {
    table: BTreeMap<String, TableEntry>,
    props: BTreeMap<String, String>,
    out: BTreeMap<String, Setting>,
}

impl Rec {
    fn get(&self, key: &str) -> Option<String> {
        self.out
            .get(key)
            .map(|s| s.value.clone())
            .or_else(|| self.props.get(key).cloned())
    }

    fn set(&mut self, key: &str, value: &str, reason: &str) {
        let conf = self
            .table
            .get(key)
            .map(|e| e.conf)
            .unwrap_or(ConfType::Text);
        self.out.insert(
            key.to_string(),
            Setting {
                key: key.into(),
                value: normalize(conf, value),
                reason: reason.into(),
            },
        );
    }

    fn set_raw(&mut self, key: &str, value: &str, reason: &str) {
        self.out.insert(
            key.to_string(),
            Setting {
                key: key.into(),
                value: value.into(),
                reason: reason.into(),
            },
        );
    }

    fn int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }

    fn is_true_or_unset(&self, key: &str) -> bool {
        self.get(key)
            .is_none_or(|v| v.trim().eq_ignore_ascii_case("true"))
    }
}

/// The bootstrap configs, sorted by property name.
pub fn recommend(inp: &TunerInputs, t: &Target) -> Vec<Setting> {
    let mut r = Rec {
        table: table(),
        props: inp.props.clone(),
        out: BTreeMap::new(),
    };
    // the CPU run's values of every tunable property are kept unless a rule changes them
    let seeded: Vec<(String, String)> = inp
        .props
        .iter()
        .filter(|(k, _)| r.table.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in seeded {
        r.set(&k, &v, "kept from the CPU run");
    }
    let c = t.cores_per_executor;
    let src = source_cores_and_executors(inp);
    if let Some((cores, execs)) = src {
        r.set(
            "spark.executor.cores",
            &c.to_string(),
            "the GPU node's cores divided by its GPUs (one executor per GPU)",
        );
        let n = (cores * execs + c - 1) / c;
        if n > 0 {
            r.set(
                "spark.executor.instances",
                &n.to_string(),
                &format!("keeps the CPU run's {} cores ({cores} x {execs} executors) on {c}-core GPU executors", cores * execs),
            );
        }
    }
    for who in ["driver", "executor"] {
        let key = format!("spark.{who}.extraJavaOptions");
        let has = r
            .get(&key)
            .is_some_and(|v| v.split_whitespace().any(|x| x == THP));
        if !has {
            r.set(
                &key,
                THP,
                "EMR: Transparent Huge Pages off (replaces the CPU run's options; add any you need)",
            );
        }
    }
    if !r.get("spark.plugins").is_some_and(|v| v.contains(PLUGIN)) {
        r.set("spark.plugins", PLUGIN, "loads the RAPIDS Accelerator");
    }
    r.set("spark.rapids.sql.enabled", "true", "runs SQL on the GPU");

    if let Some(f) = inp.file_scan_task_input_max.filter(|f| *f > 0) {
        let cur = r
            .get("spark.sql.files.maxPartitionBytes")
            .and_then(|v| parse_bytes(&v, false))
            .map(|b| b / 1048576)
            .unwrap_or(512) as f64;
        let x = f as f64 / 1048576.0;
        let new = if x < 128.0 {
            Some((cur * (128.0 / x)).min(4096.0))
        } else if x > 256.0 {
            Some((cur / (x / 256.0)).min(4096.0))
        } else {
            None
        };
        if let Some(mib) = new {
            r.set(
                "spark.sql.files.maxPartitionBytes",
                &format_bytes((mib as i64) << 20),
                &format!(
                    "the largest scan task read {x:.1} MiB: partitions sized so a GPU task reads 128-256 MiB (at most 4g)"
                ),
            );
        }
    }
    let aqe_key = (r.is_true_or_unset("spark.sql.adaptive.enabled")
        && r.is_true_or_unset("spark.sql.adaptive.coalescePartitions.enabled"))
    .then_some("spark.sql.adaptive.coalescePartitions.initialPartitionNum");
    let base = |r: &Rec| -> i64 {
        let a = aqe_key.and_then(|k| r.int(k));
        let s = r.int("spark.sql.shuffle.partitions");
        match (a, s) {
            (None, None) => 200,
            (a, s) => a.unwrap_or(0).max(s.unwrap_or(0)),
        }
    };
    let spilling: Vec<i64> = inp
        .stages
        .iter()
        .filter(|(_, (_, sr, sw, disk))| sr + sw > 0 && *disk > 0)
        .map(|(s, _)| *s)
        .collect();
    let b = base(&r);
    if !spilling.is_empty() && !spilling.iter().any(|s| inp.skewed_stages.contains(s)) {
        r.set(
            "spark.sql.shuffle.partitions",
            &(b * 2).to_string(),
            "doubled: shuffle stages spilled to disk in the CPU run",
        );
    } else {
        r.set(
            "spark.sql.shuffle.partitions",
            &b.to_string(),
            "the CPU run's shuffle partitions (Spark's 200 when unset)",
        );
    }
    if inp.cache_evidence
        && !r
            .get("spark.rapids.sql.exec.InMemoryTableScanExec")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
    {
        let cur = r.get("spark.sql.cache.serializer");
        let default = "org.apache.spark.sql.execution.columnar.DefaultCachedBatchSerializer";
        if cur.as_deref().is_none_or(|v| v == default) {
            r.set(
                "spark.sql.cache.serializer",
                CACHE_SERIALIZER,
                "the app caches tables: the GPU's Parquet cache serializer keeps them columnar",
            );
        }
    }
    let k = crate::rules::kryo(|k| r.get(k));
    for (key, v) in k.sets {
        let why = if key == "spark.kryo.registrator" {
            "Kryo serialization: the GPU's registrator appended to the run's"
        } else {
            "Kryo serialization: a buffer large enough for GPU batches (512m)"
        };
        r.set(&key, &v, why);
    }
    for (key, v) in crate::rules::file_cache(&inp.file_reads).sets {
        r.set(
            &key,
            &v,
            "the same Parquet files are read again and again: the file cache can serve them (turn it on only with local disks over 1 GB/s and room for it)",
        );
    }

    if src.is_some() {
        let gpu_amount = r.get("spark.executor.resource.gpu.amount");
        if gpu_amount
            .as_deref()
            .is_none_or(|v| v.trim().is_empty() || v.trim().parse::<i64>() == Ok(0))
        {
            r.set(
                "spark.executor.resource.gpu.amount",
                "1",
                "one GPU per executor",
            );
        }
        r.set(
            "spark.task.resource.gpu.amount",
            "0.001",
            "lets every core's task share the executor's GPU",
        );
        r.set(
            "spark.rapids.sql.concurrentGpuTasks",
            &(4.min(t.gpu_memory_mib / 7500)).to_string(),
            &format!(
                "tasks on the GPU at once: {} MiB of GPU memory / 7500 MiB, at most 4",
                t.gpu_memory_mib
            ),
        );
        // memory, MiB
        let (heap, usable, base_overhead) = memory_plan(t);
        let left = usable - heap - offheap_and_pyspark_mib(|k| r.get(k));
        let master = r.get("spark.master").unwrap_or_default();
        if left >= base_overhead + 2048 + 2048 {
            let pinned = 8192.min((left - base_overhead) / 2);
            let overhead = (base_overhead + 2 * pinned).max(left);
            r.set(
                "spark.rapids.memory.pinnedPool.size",
                &format!("{pinned}m"),
                "host memory pinned for GPU transfers: half of what heap and overhead leave, at most 8g",
            );
            if master.contains("yarn") || master.contains("k8s") {
                r.set(
                    "spark.executor.memoryOverhead",
                    &format!("{overhead}m"),
                    "the rest of the executor's memory: JVM overhead, pinned pool and spill",
                );
            }
            r.set(
                "spark.executor.memory",
                &format!("{heap}m"),
                "2 GiB of heap per core",
            );
        } else {
            let why = "not enough memory per executor on this node type: fill in";
            r.set_raw("spark.rapids.memory.pinnedPool.size", FILL_IN, why);
            if master.contains("yarn") || master.contains("k8s") {
                r.set_raw("spark.executor.memoryOverhead", FILL_IN, why);
            }
            r.set_raw("spark.executor.memory", FILL_IN, why);
        }
        let p = crate::rules::pyspark_resource(|k| r.get(k), &master);
        for (key, v) in p.sets {
            r.set(
                &key,
                &v,
                "PySpark workers: the cluster manager reserves their memory",
            );
        }
        let threads = shuffle_threads(c);
        if let Some(n) = threads {
            for k in [
                "spark.rapids.shuffle.multiThreaded.reader.threads",
                "spark.rapids.shuffle.multiThreaded.writer.threads",
            ] {
                r.set(
                    k,
                    &n.to_string(),
                    "shuffle threads for the executor's cores",
                );
            }
        }
        let read_threads = read_threads(c);
        r.set(
            "spark.rapids.sql.multiThreadedRead.numThreads",
            &read_threads.to_string(),
            "file-reading threads for the executor's cores (cloud storage)",
        );
        if c >= 16 {
            r.set(
                "spark.rapids.sql.format.parquet.multithreaded.combine.waitTime",
                "1000",
                "lets the reader combine small Parquet files",
            );
        }
        // dynamic allocation: scaled by the cores ratio when on, dropped when off
        let dyn_keys = [
            "spark.dynamicAllocation.initialExecutors",
            "spark.dynamicAllocation.minExecutors",
            "spark.dynamicAllocation.maxExecutors",
        ];
        if r.get("spark.dynamicAllocation.enabled")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        {
            let d = crate::rules::dynamic_allocation(
                |k| inp.props.get(k).cloned(),
                |k| {
                    r.out
                        .get(k)
                        .filter(|s| s.reason != "kept from the CPU run")
                        .map(|s| s.value.clone())
                },
                c,
            );
            for (key, v) in d.sets {
                r.set(
                    &key,
                    &v,
                    "dynamic allocation: the CPU run's executors scaled by its cores over the GPU executor's (min <= initial <= max)",
                );
            }
        } else {
            for k in dyn_keys {
                r.out.remove(k);
            }
        }
        let v32 = version::at_least(&inp.spark_version, &[3, 2, 0]);
        if v32 {
            if r.get("spark.sql.adaptive.coalescePartitions.minPartitionSize")
                .is_none()
            {
                r.set(
                    "spark.sql.adaptive.coalescePartitions.minPartitionSize",
                    "4m",
                    "GPU tasks cost more to start: no partitions under 4 MiB",
                );
            }
        } else if r
            .get("spark.sql.adaptive.coalescePartitions.minPartitionNum")
            .is_none()
            && let Some((ev_cores, ev_execs)) = inp.cluster
        {
            r.set(
                "spark.sql.adaptive.coalescePartitions.minPartitionNum",
                &(ev_cores * ev_execs).to_string(),
                "Spark < 3.2: at least one partition per core of the CPU run",
            );
        }
        let n = inp.sql_io.len().max(1) as f64;
        let mean_input = inp.sql_io.iter().map(|x| x.0 as f64).sum::<f64>() / n;
        let mean_shuffle = inp.sql_io.iter().map(|x| x.1 as f64).sum::<f64>() / n;
        if mean_input < 35000.0
            && r.get("spark.sql.adaptive.advisoryPartitionSizeInBytes")
                .is_none()
        {
            r.set(
                "spark.sql.adaptive.advisoryPartitionSizeInBytes",
                "128m",
                "small inputs: 128 MiB shuffle partitions fill the GPU better",
            );
        }
        if mean_input > 35000.0 && mean_shuffle > 50000.0 {
            r.set(
                "spark.sql.adaptive.coalescePartitions.parallelismFirst",
                "false",
                "so AQE honours the advisory partition size",
            );
        }
        let fin = base(&r);
        if let Some(k) = aqe_key {
            r.set(
                k,
                &fin.to_string(),
                "AQE starts from the shuffle partitions",
            );
        }
        r.set(
            "spark.sql.shuffle.partitions",
            &fin.to_string(),
            &r.out
                .get("spark.sql.shuffle.partitions")
                .map(|s| s.reason.clone())
                .unwrap_or_default(),
        );
        if r.get("spark.sql.adaptive.autoBroadcastJoinThreshold")
            .is_none()
        {
            r.set_raw(
                "spark.sql.adaptive.autoBroadcastJoinThreshold",
                FILL_IN,
                "not set in the CPU run: choose a value (the tool suggests at most 100m)",
            );
        }
    }
    r.set("spark.rapids.sql.batchSizeBytes", "1g", "1 GiB GPU batches");
    r.set(
        "spark.locality.wait",
        "0",
        "GPU tasks should not wait for data locality",
    );
    r.out.into_values().collect()
}

/// Render as a spark-defaults file, each property after a comment saying why.
pub fn render_conf(app_id: &str, target: &str, settings: &[Setting]) -> String {
    let mut s = format!(
        "# Spark configs for {app_id} on {target} (aether qualify; the RAPIDS AutoTuner's rules)\n"
    );
    for x in settings {
        s.push_str(&format!("# {}\n{} {}\n", x.reason, x.key, x.value));
    }
    s
}

fn int(v: Option<&Value>) -> i64 {
    crate::rows::i(v).unwrap_or(0)
}

/// Read the rules' inputs of every app in `ctx` (its tables and views), by app id. The Spark
/// properties and version (`props`, `spark_version`) are left for the caller to fill in.
pub async fn inputs(ctx: &SessionContext) -> Result<HashMap<String, TunerInputs>> {
    let mut all: HashMap<String, TunerInputs> = HashMap::new();
    // executors: the most cores, and the most alive at once (the driver only in local mode)
    for (app, ex) in rows_by_app(
        ctx,
        "SELECT app_id, executor_id, host, cores, added_ms, removed_ms FROM executors
         WHERE cores IS NOT NULL",
    )
    .await?
    {
        let inp = all.entry(app).or_default();
        let is_driver = |e: &&Row| e.get("executor_id").and_then(Value::as_str) == Some("driver");
        let workers: Vec<&Row> = if ex.iter().any(|e| !is_driver(&e)) {
            ex.iter().filter(|e| !is_driver(e)).collect()
        } else {
            ex.iter().collect()
        };
        inp.hosts = workers
            .iter()
            .filter_map(|e| e.get("host").and_then(Value::as_str))
            .collect::<BTreeSet<_>>()
            .len() as i64;
        if !workers.is_empty() {
            let cores = workers
                .iter()
                .map(|e| int(e.get("cores")))
                .max()
                .unwrap_or(1);
            let mut events: Vec<(i64, i64)> = Vec::new();
            for e in &workers {
                events.push((int(e.get("added_ms")), 1));
                if e.get("removed_ms").is_some_and(|v| !v.is_null()) {
                    events.push((int(e.get("removed_ms")), -1));
                }
            }
            // removals before additions at the same instant
            events.sort();
            let (mut alive, mut peak) = (0i64, 0i64);
            for (_, d) in events {
                alive += d;
                peak = peak.max(alive);
            }
            inp.cluster = Some((cores, peak.max(1)));
        }
    }
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT app_id, stage_id, MAX(input_bytes_read) AS input_max,
                SUM(shuffle_remote_bytes_read + shuffle_local_bytes_read) AS sr,
                SUM(shuffle_bytes_written) AS sw, SUM(disk_bytes_spilled) AS disk
         FROM tasks GROUP BY app_id, stage_id",
    )
    .await?
    {
        let inp = all.entry(app).or_default();
        for r in rows {
            inp.stages.insert(
                int(r.get("stage_id")),
                (
                    int(r.get("input_max")),
                    int(r.get("sr")),
                    int(r.get("sw")),
                    int(r.get("disk")),
                ),
            );
        }
    }
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT DISTINCT app_id, \"stageId\" AS stage_id FROM profile_shuffle_skew_check",
    )
    .await?
    {
        let inp = all.entry(app).or_default();
        inp.skewed_stages
            .extend(rows.iter().map(|r| int(r.get("stage_id"))));
    }
    for (app, rows) in rows_by_app(
        ctx,
        "WITH s AS (SELECT DISTINCT app_id, sql_id, stage_id FROM stage_jobs WHERE sql_id IS NOT NULL),
              k AS (SELECT DISTINCT app_id, stage_id FROM stages
                    WHERE status IN ('complete', 'failed', 'active'))
         SELECT s.app_id, s.sql_id, COALESCE(SUM(t.input_bytes_read), 0) AS input,
                COALESCE(SUM(t.shuffle_remote_bytes_read + t.shuffle_local_bytes_read), 0) AS sr
         FROM s JOIN k ON k.app_id = s.app_id AND k.stage_id = s.stage_id
         LEFT JOIN tasks t ON t.app_id = s.app_id AND t.stage_id = s.stage_id
         GROUP BY s.app_id, s.sql_id",
    )
    .await?
    {
        let inp = all.entry(app).or_default();
        inp.sql_io.extend(
            rows.iter()
                .map(|r| (int(r.get("input")), int(r.get("sr")))),
        );
    }
    for (app, rows) in rows_by_app(
        ctx,
        "WITH node_stage AS (
             SELECT DISTINCT n.app_id, n.sql_id, n.node_id, n.node_name, n.description,
                    UNNEST(m.update_stage_ids) AS stage_id
             FROM sql_plan_nodes n
             JOIN sql_metrics m ON m.app_id = n.app_id AND m.sql_id = n.sql_id
              AND m.plan_version = n.plan_version AND m.node_id = n.node_id
             WHERE n.is_final
         ),
         cached AS (
             SELECT DISTINCT app_id, sql_id, stage_id FROM node_stage
             WHERE node_name LIKE '%InMemoryTableScan%' OR node_name LIKE '%InMemoryRelation%'
                OR description LIKE '%InMemoryTableScan%' OR description LIKE '%InMemoryRelation%'
         ),
         scan_stages AS (
             SELECT DISTINCT ns.app_id, ns.stage_id FROM node_stage ns
             WHERE ((ns.node_name LIKE 'Scan %' AND ns.node_name NOT LIKE 'Scan OneRowRelation%'
                     AND ns.node_name NOT LIKE 'Scan In-memory%')
                    OR ns.node_name LIKE 'GpuScan %'
                    OR ns.node_name LIKE '%BatchScan%' OR ns.node_name LIKE '%JDBCRelation%')
               AND NOT EXISTS (SELECT 1 FROM cached c WHERE c.app_id = ns.app_id
                               AND c.sql_id = ns.sql_id AND c.stage_id = ns.stage_id)
         )
         SELECT t.app_id, MAX(t.input_bytes_read) AS f
         FROM tasks t JOIN scan_stages s ON s.app_id = t.app_id AND s.stage_id = t.stage_id
         WHERE t.input_bytes_read > 0
         GROUP BY t.app_id",
    )
    .await?
    {
        all.entry(app).or_default().file_scan_task_input_max = rows
            .first()
            .and_then(|r| r.get("f"))
            .filter(|v| !v.is_null())
            .map(|v| int(Some(v)));
    }
    for (app, rows) in rows_by_app(
        ctx,
        // a cache node in any plan version, or a stage's RDD run in a cache scope
        "WITH names AS (
             SELECT app_id, node_name AS name FROM sql_plan_nodes
             UNION ALL
             SELECT app_id, unnest(rdd_scopes) AS name FROM stages)
         SELECT app_id, COUNT(*) AS n FROM names
         WHERE name IN ('InMemoryRelation', 'InMemoryTableScan', 'TableCacheQueryStage', 'GpuInMemoryTableScan')
            OR starts_with(name, 'Scan In-memory table ')
         GROUP BY app_id",
    )
    .await?
    {
        all.entry(app).or_default().cache_evidence =
            int(rows.first().and_then(|r| r.get("n"))) > 0;
    }
    // file scans of every plan version: where, which format, how many bytes
    for (app, rows) in rows_by_app(
        ctx,
        "SELECT n.app_id, n.node_name, n.description, MAX(m.value) AS size
         FROM sql_plan_nodes n
         LEFT JOIN sql_metrics m ON m.app_id = n.app_id AND m.sql_id = n.sql_id
          AND m.plan_version = n.plan_version AND m.node_id = n.node_id
          AND m.name = 'size of files read'
         WHERE strpos(n.node_name, 'Scan') > 0 AND strpos(n.description, 'Location: ') > 0
         GROUP BY n.app_id, n.sql_id, n.plan_version, n.node_id, n.node_name, n.description",
    )
    .await?
    {
        let p = all.entry(app).or_default();
        for r in rows {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
            if let Some(loc) = crate::rules::scan_location(s("node_name"), s("description")) {
                p.file_reads.push((
                    loc,
                    s("description").contains("Format: Parquet"),
                    int(r.get("size")),
                ));
            }
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_versions() {
        assert_eq!(format_bytes(32 << 30), "32g");
        assert_eq!(format_bytes(4915 << 20), "4915m");
        assert_eq!(format_bytes(4096 << 20), "4g");
        assert_eq!(normalize(ConfType::Byte { mib: true }, "8g"), "8g");
        assert_eq!(normalize(ConfType::Byte { mib: true }, "8192"), "8g");
        assert_eq!(normalize(ConfType::Double, "1"), "1.0");
        assert_eq!(normalize(ConfType::Int, "016"), "16");
        assert!(version::at_least("3.3.0-amzn-0", &[3, 2, 0]));
        assert!(version::at_least("4.3.0", &[3, 2, 0]));
        assert!(!version::at_least("3.1.1", &[3, 2, 0]));
        assert!(!version::at_least("3.2.0-SNAPSHOT", &[3, 2, 0]));
    }

    /// The reference tool's g6.4xlarge values (docs/reference/autotuner.md §5.13-5.16).
    #[test]
    fn g6_4xlarge_constants() {
        let inp = TunerInputs {
            cluster: Some((8, 2)),
            spark_version: "3.5.1".into(),
            ..Default::default()
        };
        let t = Target {
            cores_per_executor: 16,
            memory_per_executor_mib: 65536,
            gpu_memory_mib: 24576,
            reserved_fraction: 0.3,
        };
        let got: BTreeMap<String, String> = recommend(&inp, &t)
            .into_iter()
            .map(|s| (s.key, s.value))
            .collect();
        for (k, v) in [
            ("spark.executor.cores", "16"),
            ("spark.executor.instances", "1"),
            ("spark.executor.memory", "32g"),
            ("spark.rapids.memory.pinnedPool.size", "4915m"),
            ("spark.rapids.sql.concurrentGpuTasks", "3"),
            ("spark.rapids.shuffle.multiThreaded.reader.threads", "28"),
            ("spark.rapids.sql.multiThreadedRead.numThreads", "80"),
            ("spark.sql.shuffle.partitions", "200"),
            (
                "spark.sql.adaptive.coalescePartitions.initialPartitionNum",
                "200",
            ),
            ("spark.task.resource.gpu.amount", "0.001"),
            ("spark.sql.adaptive.autoBroadcastJoinThreshold", FILL_IN),
        ] {
            assert_eq!(got.get(k).map(String::as_str), Some(v), "{k}");
        }
    }
}
