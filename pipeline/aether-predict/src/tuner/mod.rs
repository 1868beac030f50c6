//! The AutoTuner: the reference tool's Spark-property rules for the RAPIDS Accelerator
//! (docs/reference/autotuner.md), one rule per file under [`rules`], applied in one order
//! ([`rules::RULES`]) by both of its users:
//!
//! - qualification ([`bootstrap`]): the bootstrap configs of a CPU run for the GPU cluster
//!   qualify recommends, every tunable property of the run kept unless a rule changes it, each
//!   value with the reason it is set;
//! - profiling ([`recommend`]): what a GPU run should change, as the reference profiler lists
//!   it (only the properties added, changed, removed or left to fill in, with its comments).
//!
//! A rule reads the run ([`Inputs`]), the worker the next run is for ([`Worker`]) and the
//! values recommended so far, and sets properties (each with its reason) and comments.

mod inputs;
mod output;
pub(crate) mod rules;
pub(crate) mod table;

use std::collections::{BTreeMap, BTreeSet};

pub use crate::worker::Worker;
pub use inputs::{inputs, plugin_version_of};
pub use output::{Change, Recommended, Setting, Tuning, render_bootstrap};

use crate::units::parse_bytes;

/// What a value left to the user is written as.
pub(crate) const FILL_IN: &str = "[FILL_IN_VALUE]";
pub(crate) const PLUGIN: &str = "com.nvidia.spark.SQLPlugin";

/// Which AutoTuner is asking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Bootstrap configs for a CPU run's first GPU run (the reference's qualification).
    Qualification,
    /// What a GPU run should change (the reference's profiler).
    Profiling,
}

/// What the rules read from one run.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// Spark properties of the run.
    pub props: BTreeMap<String, String>,
    pub spark_version: String,
    /// Largest executor core count, and the most executors alive at once (`None`: no executors).
    pub cluster: Option<(i64, i64)>,
    /// Hosts the executors ran on.
    pub hosts: i64,
    /// Stages with a task reading > 3 × the mean shuffle bytes and > 100 MiB.
    pub skewed_stages: BTreeSet<i64>,
    /// Stages that read or wrote shuffle data and spilled (qualification: to disk; profiling:
    /// to memory or disk, as each of the reference's AutoTuners counts them).
    pub spilled_shuffle_stages: Vec<i64>,
    /// Per SQL with stages: (input bytes, shuffle read bytes).
    pub sql_io: Vec<(i64, i64)>,
    /// Largest task input of a file-scan stage (no cached-table scan in it), bytes.
    pub file_scan_task_input_max: Option<i64>,
    /// The plans read a cached table (InMemoryTableScan, …), or a stage ran in a cache scope.
    pub cache_evidence: bool,
    /// Every file scan of every plan version, as the reference's data_source_information
    /// lists them: (location, a Parquet scan, bytes of files read).
    pub file_reads: Vec<(String, bool, i64)>,
    /// Profiling only, below. Versions of the RAPIDS plugin jars on the classpath.
    pub plugin_versions: Vec<String>,
    /// Mean over SQLs of JVM GC time / executor CPU time (infinite when a SQL collected garbage
    /// without CPU time, NaN when one had neither, as the reference's division gives).
    pub gc_ratio: Option<f64>,
    /// The JVM's `file.encoding` system property.
    pub file_encoding: Option<String>,
    /// Delta Lake jars on the classpath (`…/io.delta_delta-core_2.12-2.4.0.jar`).
    pub delta_jars: Vec<String>,
    /// A stage failed on Python workers running out of memory.
    pub python_oom: bool,
    /// The stage whose tasks reported the largest GPU memory footprint (`gpuMaxTaskFootprint`):
    /// (stage, max bytes, task-attempt updates, mean, sample standard deviation).
    pub footprint: Option<(i64, i64, i64, f64, Option<f64>)>,
    /// Scan stages with a task that failed on a GPU out-of-memory error.
    pub scan_stages_with_gpu_oom: i64,
    /// On YARN, failed GPU shuffle stages with a task whose container was killed (exit 137).
    pub shuffle_stages_with_container_oom: i64,
    /// The largest `data size` of a `*ColumnarExchange*` plan node, bytes.
    pub exchange_max_bytes: Option<i64>,
}

impl Inputs {
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

    /// The cores and executors of the run as the AutoTuner counts them: `spark.executor.cores`
    /// and (without dynamic allocation) `spark.executor.instances` when set, else the log's.
    pub fn cores_and_executors(&self) -> Option<(i64, i64)> {
        let (ev_cores, ev_execs) = self.cluster?;
        let prop = |k: &str| self.props.get(k).and_then(|v| v.trim().parse::<i64>().ok());
        let dyn_alloc = self
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

    /// The mean input and shuffle-read bytes of the run's SQLs.
    pub(crate) fn mean_io(&self) -> (f64, f64) {
        let n = self.sql_io.len().max(1) as f64;
        let sum = |f: fn(&(i64, i64)) -> i64| self.sql_io.iter().map(|x| f(x) as f64).sum::<f64>();
        (sum(|x| x.0) / n, sum(|x| x.1) / n)
    }

    /// A large input and a large shuffle (the reference's AQE thresholds, 35,000 and 50,000
    /// bytes).
    pub(crate) fn large_io(&self) -> bool {
        let (input, shuffle) = self.mean_io();
        input > 35000.0 && shuffle > 50000.0
    }
}

/// Executor memory on a worker, MiB: the AutoTuner's 2 GiB of heap per core, what is usable
/// per executor after EMR's share, and the 10 % JVM overhead.
pub(crate) struct MemoryPlan {
    pub heap: i64,
    pub usable: i64,
    pub jvm_overhead: i64,
}

impl MemoryPlan {
    pub(crate) fn of(w: &Worker) -> MemoryPlan {
        let gpus = w.gpus.max(1);
        let heap = 2048 * (w.cores / gpus);
        MemoryPlan {
            heap,
            usable: (w.memory_mib as f64 * (1.0 - w.reserved_fraction)) as i64 / gpus,
            jvm_overhead: heap / 10,
        }
    }

    /// The least an executor needs beside its heap: JVM overhead, 2 GiB of pinned memory and
    /// 2 GiB of spill space.
    pub(crate) fn min_overhead(&self) -> i64 {
        self.jvm_overhead + 2048 + 2048
    }
}

/// Whether a worker's executors have the memory the configs need (no off-heap, no PySpark
/// memory).
pub fn memory_fits(w: &Worker) -> bool {
    let m = MemoryPlan::of(w);
    m.usable - m.heap >= m.min_overhead()
}

/// A property a rule set, with why.
#[derive(Clone, Debug)]
struct Set {
    value: String,
    reason: String,
    /// The rule that set it.
    rule: &'static str,
}

/// The values recommended so far, and the comments, while the rules run.
pub(crate) struct Tuner<'a> {
    pub mode: Mode,
    pub inp: &'a Inputs,
    pub worker: &'a Worker,
    /// The GPU executor's cores (the worker's cores per GPU).
    pub cores: i64,
    /// The run's executor cores and count ([`Inputs::cores_and_executors`]); without them the
    /// rules that size the cluster do not run.
    pub executors: Option<(i64, i64)>,
    /// `spark.master` of the run.
    pub master: String,
    /// Recommended values (`None`: remove).
    out: BTreeMap<String, Option<Set>>,
    comments: BTreeSet<String>,
    /// Properties left to fill in that get no `was not set.` comment (their own says why).
    silent: BTreeSet<String>,
    /// The rule running.
    rule: &'static str,
}

impl<'a> Tuner<'a> {
    pub(crate) fn new(mode: Mode, inp: &'a Inputs, worker: &'a Worker) -> Tuner<'a> {
        Tuner {
            mode,
            inp,
            worker,
            cores: worker.cores / worker.gpus.max(1),
            executors: inp.cores_and_executors(),
            master: inp.props.get("spark.master").cloned().unwrap_or_default(),
            out: BTreeMap::new(),
            comments: BTreeSet::new(),
            silent: BTreeSet::new(),
            rule: "",
        }
    }

    pub(crate) fn profiling(&self) -> bool {
        self.mode == Mode::Profiling
    }

    /// The executors run in YARN containers or Kubernetes pods (their overhead is set).
    pub(crate) fn yarn_or_k8s(&self) -> bool {
        self.master.contains("yarn") || self.master.contains("k8s")
    }

    /// The run's value.
    pub(crate) fn source(&self, key: &str) -> Option<String> {
        self.inp.props.get(key).cloned()
    }

    /// The run's value as a whole number.
    pub(crate) fn source_int(&self, key: &str) -> Option<i64> {
        self.source(key).and_then(|v| v.trim().parse().ok())
    }

    /// A value recommended so far (`None` also for a removed one).
    pub(crate) fn recommended(&self, key: &str) -> Option<String> {
        self.out.get(key).cloned().flatten().map(|s| s.value)
    }

    /// The value recommended so far, else the run's (not Spark's default).
    pub(crate) fn current(&self, key: &str) -> Option<String> {
        match self.out.get(key) {
            Some(v) => v.as_ref().map(|s| s.value.clone()),
            None => self.source(key),
        }
    }

    /// The value now: recommended, else the run's, else Spark's default (tuning table).
    pub(crate) fn get(&self, key: &str) -> Option<String> {
        self.current(key).or_else(|| {
            (!self.out.contains_key(key))
                .then(|| table::table().get(key).and_then(|e| e.default.clone()))
                .flatten()
        })
    }

    /// The value now is `true` (any case).
    pub(crate) fn is_true(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// The value now is `false` (any case).
    pub(crate) fn is_false(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
    }

    /// The value now as bytes (a bare number is bytes).
    pub(crate) fn bytes(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| parse_bytes(&v, false))
    }

    /// Set `key` to `value`, written as its type is, because of `why`.
    pub(crate) fn set(&mut self, key: &str, value: impl ToString, why: impl Into<String>) {
        let value = value.to_string();
        let value = if value == FILL_IN {
            value
        } else {
            table::normalize(table::conf(key), &value)
        };
        self.out.insert(
            key.to_string(),
            Some(Set {
                value,
                reason: why.into(),
                rule: self.rule,
            }),
        );
    }

    /// Leave `key` for the user to fill in; `silent`: its own comment says why (no
    /// `was not set.`).
    pub(crate) fn fill_in(&mut self, key: &str, why: &str, silent: bool) {
        self.set(key, FILL_IN, why);
        if silent {
            self.silent.insert(key.to_string());
        }
    }

    /// Remove the run's `key`.
    pub(crate) fn remove(&mut self, key: &str) {
        self.out.insert(key.to_string(), None);
    }

    pub(crate) fn comment(&mut self, c: impl Into<String>) {
        self.comments.insert(c.into());
    }
}

/// Apply every rule for `mode`.
fn run<'a>(mode: Mode, inp: &'a Inputs, w: &'a Worker) -> Tuner<'a> {
    let mut t = Tuner::new(mode, inp, w);
    for r in rules::RULES {
        if r.applies(&t) {
            t.rule = r.name();
            r.apply(&mut t);
        }
    }
    t
}

/// The bootstrap configs of a CPU run for GPU worker `w`, sorted by property name.
pub fn bootstrap(inp: &Inputs, w: &Worker) -> Vec<Setting> {
    output::bootstrap(run(Mode::Qualification, inp, w))
}

/// The profiling AutoTuner's recommendation for a GPU run, for GPU worker `w`.
pub fn recommend(inp: &Inputs, w: &Worker) -> Tuning {
    if !inp.plugin_enabled() {
        return Tuning::default();
    }
    output::profile(run(Mode::Profiling, inp, w))
}

#[cfg(test)]
pub(crate) mod testing {
    //! Running one rule on hand-made inputs.
    use super::*;

    /// What one rule set and commented, for `mode`, on a run with properties `props`.
    pub(crate) struct Applied {
        pub sets: BTreeMap<String, Option<String>>,
        pub comments: Vec<String>,
    }

    impl Applied {
        pub(crate) fn value(&self, key: &str) -> Option<&str> {
            self.sets.get(key).and_then(|v| v.as_deref())
        }
    }

    pub(crate) fn props(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    pub(crate) fn apply(rule: &dyn rules::Rule, mode: Mode, inp: &Inputs, w: &Worker) -> Applied {
        let mut t = Tuner::new(mode, inp, w);
        if rule.applies(&t) {
            t.rule = rule.name();
            rule.apply(&mut t);
        }
        Applied {
            sets: t
                .out
                .into_iter()
                .map(|(k, v)| (k, v.map(|s| s.value)))
                .collect(),
            comments: t.comments.into_iter().collect(),
        }
    }

    /// A run with executors: `cores` cores each, `execs` of them.
    pub(crate) fn run_with(cores: i64, execs: i64, kv: &[(&str, &str)]) -> Inputs {
        Inputs {
            props: props(kv),
            spark_version: "3.5.1".into(),
            cluster: Some((cores, execs)),
            hosts: execs,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference tool's bootstrap values for g6.4xlarge (docs/reference/autotuner.md
    /// §5.13-5.16) from every rule together.
    #[test]
    fn g6_4xlarge_bootstrap() {
        let inp = testing::run_with(8, 2, &[("spark.sql.shuffle.partitions", "200")]);
        let got: BTreeMap<String, String> = bootstrap(&inp, &Worker::default())
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
            ("spark.rapids.sql.batchSizeBytes", "1g"),
        ] {
            assert_eq!(got.get(k).map(String::as_str), Some(v), "{k}");
        }
        // qualification leaves the shuffle manager alone
        assert!(!got.contains_key("spark.shuffle.manager"));
    }

    /// Profiling lists only what differs from the run: a value the run already has is not
    /// shown, a removed one shows the run's value.
    #[test]
    fn profiling_lists_only_changes() {
        let mut inp = testing::run_with(
            16,
            1,
            &[
                ("spark.plugins", PLUGIN),
                ("spark.executor.cores", "16"),
                ("spark.dynamicAllocation.maxExecutors", "9"),
            ],
        );
        inp.spark_version = "3.5.1".into();
        let t = recommend(&inp, &Worker::default());
        assert!(t.recommended);
        let find = |k: &str| t.properties.iter().find(|p| p.key == k);
        assert!(find("spark.executor.cores").is_none());
        assert!(find("spark.plugins").is_none());
        let removed = find("spark.dynamicAllocation.maxExecutors").unwrap();
        assert_eq!(
            (removed.change, removed.value.as_str()),
            (Change::Removed, "9")
        );
        let added = find("spark.executor.memory").unwrap();
        assert_eq!((added.change, added.value.as_str()), (Change::Added, "32g"));
        assert!(
            t.comments
                .contains(&"'spark.executor.memory' was not set.".to_string())
        );
    }
}
