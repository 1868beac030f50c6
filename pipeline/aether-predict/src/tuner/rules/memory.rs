//! Executor memory: 2 GiB of heap a core; what is left of the executor's share of the node
//! (after EMR's) beside off-heap and PySpark memory must hold the JVM overhead, a pinned pool
//! of at least 2 GiB and 2 GiB of spill space, else the values are left to fill in. Profiling
//! also raises the Python workers' memory after they ran out of it, and writes the run's
//! off-heap memory out.

use super::Rule;
use crate::tuner::{MemoryPlan, Tuner};
use crate::units::parse_bytes;

pub(crate) struct Memory;

/// Spark's off-heap memory (when enabled), MiB.
fn offheap_mib(t: &Tuner<'_>) -> i64 {
    if t.is_true("spark.memory.offHeap.enabled") {
        t.bytes("spark.memory.offHeap.size").unwrap_or(0) >> 20
    } else {
        0
    }
}

/// The PySpark workers' memory, MiB (a bare number is MiB).
pub(super) fn pyspark_mib(t: &Tuner<'_>) -> i64 {
    t.get("spark.executor.pyspark.memory")
        .and_then(|v| parse_bytes(&v, true))
        .unwrap_or(0)
        >> 20
}

impl Rule for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.executors.is_some()
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        let m = MemoryPlan::of(t.worker);
        let (offheap, pyspark) = (offheap_mib(t), pyspark_mib(t));
        let left = m.usable - m.heap - offheap - pyspark;
        if left < m.min_overhead() {
            not_enough(t, &m, offheap + pyspark);
            return;
        }
        let pinned = 8192.min((left - m.jvm_overhead) / 2);
        t.set(
            "spark.rapids.memory.pinnedPool.size",
            format!("{pinned}m"),
            "host memory pinned for GPU transfers: half of what heap and overhead leave, at most 8g",
        );
        if t.yarn_or_k8s() {
            let overhead = (m.jvm_overhead + 2 * pinned).max(left);
            t.set(
                "spark.executor.memoryOverhead",
                format!("{overhead}m"),
                "the rest of the executor's memory: JVM overhead, pinned pool and spill",
            );
        }
        // Python workers ran out of memory: their memory raised by half (whole GiB), taken from
        // the heap as long as 750m a core is left
        let mut heap = m.heap;
        if t.inp.python_oom && pyspark > 0 {
            let target = (pyspark * 3 / 2 + 1023) / 1024 * 1024;
            let delta = target - pyspark;
            if delta > 0 && heap - delta >= 750 * t.cores {
                heap -= delta;
                t.set(
                    "spark.executor.pyspark.memory",
                    format!("{target}m"),
                    "Python workers ran out of memory: raised by half, taken from the heap",
                );
            }
        }
        t.set(
            "spark.executor.memory",
            format!("{heap}m"),
            "2 GiB of heap per core",
        );
        if offheap > 0 && t.profiling() {
            let why = "the run's off-heap memory, kept beside the heap";
            t.set("spark.memory.offHeap.size", format!("{offheap}m"), why);
            t.set("spark.memory.offHeap.enabled", "true", why);
        }
    }
}

/// Too little memory per executor: the reference's advice, the sizes left to fill in.
fn not_enough(t: &mut Tuner<'_>, m: &MemoryPlan, offheap_and_pyspark: i64) {
    let need = ((m.heap + m.min_overhead() + offheap_and_pyspark) as f64
        / (1.0 - t.worker.reserved_fraction)) as i64;
    t.comment(format!(
        "This node/worker configuration is not ideal for using the cuDF plugin\n\
         because it doesn't have enough memory for the executors.\n\
         We recommend either using nodes with more memory or reducing 'spark.memory.offHeap.size',\n\
         as off-heap memory is unused by the cuDF plugin, unless explicitly required by\n\
         the application. Need at least {need} MB memory per executor."
    ));
    let mut keys = vec!["spark.rapids.memory.pinnedPool.size"];
    if t.yarn_or_k8s() {
        keys.push("spark.executor.memoryOverhead");
    }
    keys.push("spark.executor.memory");
    for k in keys {
        t.comment(format!(
            "Not enough memory to set '{k}'. See comments for more details."
        ));
        t.fill_in(
            k,
            "not enough memory per executor on this node type: fill in",
            true,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{FILL_IN, Mode, Worker};

    /// g6.4xlarge (docs/reference/autotuner.md §5.14): 32g heap, 4915m pinned; on YARN the
    /// overhead takes the rest (13107m).
    #[test]
    fn a_g6_4xlarge_executor() {
        let w = Worker::default();
        let a = apply(&Memory, Mode::Qualification, &run_with(8, 2, &[]), &w);
        assert_eq!(a.value("spark.executor.memory"), Some("32g"));
        assert_eq!(
            a.value("spark.rapids.memory.pinnedPool.size"),
            Some("4915m")
        );
        assert_eq!(a.value("spark.executor.memoryOverhead"), None);
        let yarn = run_with(8, 2, &[("spark.master", "yarn")]);
        let a = apply(&Memory, Mode::Profiling, &yarn, &w);
        assert_eq!(a.value("spark.executor.memoryOverhead"), Some("13107m"));
    }

    /// Off-heap memory that leaves too little: the three sizes to fill in, with the reference's
    /// need (heap 32768 + overhead 3276 + 4096 + off-heap 8192, over 0.7).
    #[test]
    fn too_little_memory_is_left_to_fill_in() {
        let w = Worker::default();
        let inp = run_with(
            8,
            2,
            &[
                ("spark.master", "yarn"),
                ("spark.memory.offHeap.enabled", "true"),
                ("spark.memory.offHeap.size", "8g"),
            ],
        );
        let a = apply(&Memory, Mode::Profiling, &inp, &w);
        for k in [
            "spark.executor.memory",
            "spark.executor.memoryOverhead",
            "spark.rapids.memory.pinnedPool.size",
        ] {
            assert_eq!(a.value(k), Some(FILL_IN), "{k}");
        }
        let need = ((32768 + 3276 + 4096 + 8192) as f64 / 0.7) as i64;
        assert!(
            a.comments
                .iter()
                .any(|c| c.contains(&format!("Need at least {need} MB"))),
            "{:?}",
            a.comments
        );
    }

    /// Python workers out of memory: 2g becomes 3g, the heap gives up 1g.
    #[test]
    fn python_workers_out_of_memory_get_half_more() {
        let w = Worker::default();
        let mut inp = run_with(8, 2, &[("spark.executor.pyspark.memory", "2g")]);
        inp.python_oom = true;
        let a = apply(&Memory, Mode::Profiling, &inp, &w);
        assert_eq!(a.value("spark.executor.pyspark.memory"), Some("3g"));
        assert_eq!(a.value("spark.executor.memory"), Some("31g"));
    }
}
