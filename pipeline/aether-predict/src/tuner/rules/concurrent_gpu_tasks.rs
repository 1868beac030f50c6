//! Tasks on a GPU at once: its memory over 7,500 MiB, at most 4. From plugin 25.06 the plugin
//! tunes this itself; where the run measured its tasks' GPU footprints, the reference seeds it
//! from the largest one: the target's nominal RMM pool over that footprint, capped by the GPU's
//! task slots and the plugin's 32 MiB permits (the 26.08.4 profiler's discrete-GPU model).

use super::Rule;
use crate::tuner::Tuner;
use crate::units::parse_bytes;
use crate::version;

const KEY: &str = "spark.rapids.sql.concurrentGpuTasks";

pub(crate) struct ConcurrentGpuTasks;

impl Rule for ConcurrentGpuTasks {
    fn name(&self) -> &'static str {
        "concurrent_gpu_tasks"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.executors.is_some()
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        // (one plugin version on the classpath, 25.06 or later: seeded where measured)
        match t.inp.plugin_versions.as_slice() {
            [v] if version::at_least(v, &[25, 6, 0]) => {
                if let Some(f) = t.inp.footprint {
                    let v = v.clone();
                    seed(t, &v, Footprint::from(f));
                }
            }
            _ => {
                let mib = t.worker.gpu_memory_mib;
                t.set(
                    KEY,
                    4.min(mib / 7500),
                    format!(
                        "tasks on the GPU at once: {mib} MiB of GPU memory / 7500 MiB, at most 4"
                    ),
                );
            }
        }
    }
}

/// The largest task GPU footprint the run measured.
struct Footprint {
    stage: i64,
    max: i64,
    count: i64,
    mean: f64,
    sd: Option<f64>,
}

impl From<(i64, i64, i64, f64, Option<f64>)> for Footprint {
    fn from((stage, max, count, mean, sd): (i64, i64, i64, f64, Option<f64>)) -> Self {
        Footprint {
            stage,
            max,
            count,
            mean,
            sd,
        }
    }
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

fn not_seeded(why: &str) -> String {
    format!("'{KEY}' was not recommended from historical 'gpuMaxTaskFootprint' because {why}")
}

/// The batch size the footprint was measured with must be the target's (the profiler's).
fn same_batch_size(t: &mut Tuner<'_>) -> bool {
    let target = super::batch::PROFILING_BATCH_BYTES;
    match t
        .source("spark.rapids.sql.batchSizeBytes")
        .and_then(|v| parse_bytes(&v, false))
        .filter(|b| *b > 0)
    {
        None => {
            t.comment(not_seeded("the source or target 'spark.rapids.sql.batchSizeBytes' could not be resolved. Set or preserve a known target batch size that matches the profiled value, or re-profile with the intended target configuration."));
            false
        }
        Some(b) if b != target => {
            t.comment(not_seeded(&format!("the recommended target configuration changes 'spark.rapids.sql.batchSizeBytes' from {b}b to {target}b. Batch-size tuning is independent of this heuristic, and cross-batch footprint scaling is not modeled. Re-profile with {target}b, or preserve or enforce {b}b, to enable the footprint-based recommendation.")));
            false
        }
        Some(_) => true,
    }
}

/// The nominal RMM pool (the plugin's discrete-GPU pool sizing, 512-byte aligned), or why it
/// cannot be modeled.
fn rmm_pool(t: &Tuner<'_>) -> Result<RmmPool, String> {
    let trunc = |b: f64| (b as i64) / 512 * 512;
    let invalid = |k: &str| format!("'{k}' could not be resolved to a valid value");
    let fraction = |k: &str, d: f64| match t.get(k) {
        None => Ok(d),
        Some(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| (0.0..=1.0).contains(x))
            .ok_or_else(|| invalid(k)),
    };
    let bytes = |k: &str, d: i64| match t.get(k) {
        None => Ok(d),
        Some(v) => parse_bytes(&v, false).ok_or_else(|| invalid(k)),
    };
    if t.get("spark.rapids.memory.gpu.allocSize").is_some() {
        return Err("'spark.rapids.memory.gpu.allocSize' exact allocation is not modeled".into());
    }
    if t.is_true("spark.rapids.memory.uvm.enabled") {
        return Err("'spark.rapids.memory.uvm.enabled=true' is not modeled".into());
    }
    let kind = t
        .get("spark.rapids.memory.gpu.pool")
        .unwrap_or_else(|| "ASYNC".into())
        .trim()
        .to_ascii_uppercase();
    if !["ASYNC", "DEFAULT", "ARENA"].contains(&kind.as_str()) {
        return Err(format!("unsupported 'spark.rapids.memory.gpu.pool={kind}'"));
    }
    let shuffle = t
        .get("spark.rapids.shuffle.mode")
        .unwrap_or_else(|| "MULTITHREADED".into());
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
    let cap = t.worker.gpu_memory_mib << 20;
    let free = cap - chunked;
    let ucx = if shuffle == "UCX" && kind == "ASYNC" {
        2 * bounce
    } else {
        0
    };
    if reserve + ucx >= free {
        return Err("RMM reserve exceeds nominal free GPU memory".into());
    }
    let (min_b, max_b) = (trunc(min_f * cap as f64), trunc(max_f * cap as f64));
    let pool = trunc(alloc * (free - reserve - ucx) as f64);
    if pool < min_b {
        return Err("nominal RMM pool is below minAllocFraction".into());
    }
    if pool > max_b {
        return Err("nominal RMM pool exceeds maxAllocFraction".into());
    }
    let pool = pool.min(trunc((max_b - reserve - ucx) as f64));
    if pool <= 0 {
        return Err("nominal RMM pool is below minAllocFraction".into());
    }
    Ok(RmmPool {
        pool,
        cap,
        chunked,
        free,
        reserve,
        kind,
        shuffle,
        fractions: [alloc, min_f, max_f],
        ucx,
    })
}

/// The GPU's task slots: (slots, CPU cap, CPU(s) per task, GPU cap, GPU share of a task).
fn task_slots(t: &Tuner<'_>) -> (i64, i64, i64, i64, f64) {
    let task_cpus = t
        .get("spark.task.cpus")
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|c| *c > 0)
        .unwrap_or(1);
    let task_gpu = t
        .get("spark.task.resource.gpu.amount")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(0.001);
    let cpu_cap = t.cores / task_cpus;
    let gpu_cap = if task_gpu > 0.0 && task_gpu <= 0.5 {
        (1.0 / task_gpu).floor() as i64
    } else {
        1
    };
    (cpu_cap.min(gpu_cap), cpu_cap, task_cpus, gpu_cap, task_gpu)
}

fn seed(t: &mut Tuner<'_>, plugin: &str, f: Footprint) {
    if !same_batch_size(t) {
        return;
    }
    let p = match rmm_pool(t) {
        Ok(p) => p,
        Err(why) => {
            t.comment(not_seeded(&format!("a nominal target RMM pool could not be modeled: {why}. Set a valid target GPU device capacity and ordinary discrete-GPU RMM settings, or rely on plugin runtime auto-tuning.")));
            return;
        }
    };
    let (slots, ..) = task_slots(t);
    let quotient = p.pool / f.max.max(1);
    let permits = (p.pool / (32 << 20)).max(1);
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
                t.comment(not_seeded("the prospective plugin task-count ceiling could not be resolved: 'spark.rapids.sql.maxConcurrentGpuTasks' could not be resolved to a valid integer. Set a valid integer value, resolve conflicting target controls, or rely on plugin runtime auto-tuning."));
                return;
            }
        }
    }
    t.set(
        KEY,
        seed,
        "seeded from the largest GPU task footprint the run measured",
    );
    let why = explain(t, &p, &f, seed, quotient, permits, &plugin_cap);
    t.comment(why);
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

/// The reference's comment on a seeded value: the model, step by step.
fn explain(
    t: &Tuner<'_>,
    p: &RmmPool,
    f: &Footprint,
    seed: i64,
    quotient: i64,
    permits: i64,
    plugin_cap: &str,
) -> String {
    let (slots, cpu_cap, task_cpus, gpu_cap, task_gpu) = task_slots(t);
    let cores = t.cores;
    let (stage, max, count) = (f.stage, f.max, f.count);
    let cv =
        f.sd.filter(|_| f.count > 1 && f.mean > 0.0)
            .map(|sd| two_decimals(sd / f.mean))
            .unwrap_or_else(|| "not available".into());
    let ratio = if f.mean > 0.0 {
        two_decimals(f.max as f64 / f.mean)
    } else {
        "not available".into()
    };
    let async_note = if p.kind == "ASYNC" {
        " The effective ASYNC allocator is assumed to remain effective on the target CUDA runtime and driver."
    } else {
        ""
    };
    let warn = if p.pool < f.max {
        " WARN: The nominal target RMM pool is smaller than the historical single-task footprint, so seed 1 does not establish that the task will fit."
    } else {
        ""
    };
    let RmmPool {
        pool,
        cap,
        chunked,
        free,
        reserve,
        ucx,
        ..
    } = *p;
    let (pool_kind, shuffle) = (&p.kind, &p.shuffle);
    let [alloc, min_f, max_f] = p.fractions.map(java_double);
    format!(
        "'{KEY}' was seeded at {seed} from historical 'gpuMaxTaskFootprint'. Stage {stage} reported a maximum of {max}b across {count} task-attempt update(s), with CV {cv} and max/mean {ratio}. The unpadded nominal target RMM pool is {pool}b. The model treats {cap}b from device catalog as both CUDA total and pre-startup free memory, subtracts the {chunked}b chunked-pack allocation and leaves {free}b nominal free before the {reserve}b base reserve. The effective reserve is {}b. The {pool_kind} allocator with {shuffle} shuffle applies alloc/min/max fractions {alloc}/{min_f}/{max_f}, and truncates RMM values to 512-byte alignment under the discrete-gpu-rmm-v1 compatibility profile. The effective reserve includes {ucx}b from the plugin pool-sizing UCX adjustment, not the full UCX allocation. CUDA context, driver, and other future startup use are not modeled.{async_note} Its floor quotient is {quotient}, with caps for target task slots {slots} (CPU cap {cpu_cap} from {cores} executor cores and {task_cpus} CPU(s) per task; GPU cap {gpu_cap} from {} GPU per task), 32 MiB permit representation {permits}{plugin_cap}. This is a memory-admission seed, not a guarantee of observed task concurrency or spill avoidance.{warn}",
        reserve + ucx,
        java_double(task_gpu),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    /// Before plugin 25.06: 24,576 MiB / 7,500 = 3 (an L4); 4 at most (an A100's 40,960).
    #[test]
    fn gpu_memory_over_7500_at_most_4() {
        let mut w = Worker::default();
        let a = apply(
            &ConcurrentGpuTasks,
            Mode::Qualification,
            &run_with(8, 2, &[]),
            &w,
        );
        assert_eq!(a.value(KEY), Some("3"));
        w.gpu_memory_mib = 40960;
        let a = apply(
            &ConcurrentGpuTasks,
            Mode::Profiling,
            &run_with(8, 2, &[]),
            &w,
        );
        assert_eq!(a.value(KEY), Some("4"));
    }

    /// Plugin 25.08 with a measured footprint on an L4 (24,576 MiB): the pool is
    /// (24,576 MiB - 10 MiB chunked - 640 MiB reserve), 512-aligned; 2 GiB tasks fit 11 of them,
    /// capped by the 16 cores' slots. A run batch size other than the target's: not seeded.
    #[test]
    fn seeded_from_the_largest_footprint() {
        let w = Worker::default();
        let mut inp = run_with(16, 1, &[("spark.rapids.sql.batchSizeBytes", "2147483647")]);
        inp.plugin_versions = vec!["25.08.0".into()];
        inp.footprint = Some((3, 2 << 30, 10, 1.5e9, Some(1e8)));
        let a = apply(&ConcurrentGpuTasks, Mode::Profiling, &inp, &w);
        let pool = ((24576i64 - 10 - 640) << 20) / 512 * 512;
        assert_eq!(a.value(KEY), Some((pool / (2 << 30)).to_string().as_str()));
        assert!(
            a.comments[0].contains(&format!("pool is {pool}b")),
            "{:?}",
            a.comments
        );
        inp.props
            .insert("spark.rapids.sql.batchSizeBytes".into(), "1g".into());
        let a = apply(&ConcurrentGpuTasks, Mode::Profiling, &inp, &w);
        assert_eq!(a.value(KEY), None);
        assert!(a.comments[0].contains("from 1073741824b to 2147483647b"));
    }
}
