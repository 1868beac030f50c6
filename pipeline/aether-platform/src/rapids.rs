//! What every GPU run of the RAPIDS Accelerator must carry, decided in one place for EMR (YARN)
//! and EMR on EKS (Kubernetes): the plugin, a GPU per executor, the GPU share of a task, and on
//! YARN the CUDA library path AWS lists as required.
//!
//! A step's own values are checked, not trusted: an executor without a GPU amount gets no
//! `yarn.io/gpu` container (and with YARN's GPU isolation the plugin then fails at executor
//! start), so a missing amount is added, and a value no GPU run can take (0, a fraction, more
//! than the one GPU an executor of the RAPIDS Accelerator uses, a task share above the
//! executor's) is refused before anything is submitted, naming the property. A step that sets
//! its own `spark.executor.extraLibraryPath` replaces the cluster's: the CUDA folders missing
//! from it are added after the step's own.
//!
//! The values are AWS's, from the Amazon EMR Release Guide page "Use the Nvidia Spark-RAPIDS
//! Accelerator for Apache Spark" (see docs/emr-settings.md for each setting beside AWS's).

use std::collections::BTreeMap;

/// The RAPIDS Accelerator's Spark plugin.
pub const PLUGIN: &str = "com.nvidia.spark.SQLPlugin";
/// GPUs per executor.
pub const EXECUTOR_GPU_AMOUNT: &str = "spark.executor.resource.gpu.amount";
/// The GPU share of one task.
pub const TASK_GPU_AMOUNT: &str = "spark.task.resource.gpu.amount";
/// The executors' native library path.
pub const EXTRA_LIBRARY_PATH: &str = "spark.executor.extraLibraryPath";
/// The script that tells Spark which GPU an executor got (EMR 7's Spark on YARN).
pub const DISCOVERY_SCRIPT: &str = "/usr/lib/spark/scripts/gpu/getGpusResources.sh";

/// The executors' library path AWS gives for EMR 7: the CUDA runtime and its forward
/// compatibility libraries, then Hadoop's native libraries (on the host and in Docker).
pub const CUDA_LIBRARY_PATH: &str = "/usr/local/cuda/targets/x86_64-linux/lib:\
/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/compat/lib:/usr/local/cuda/lib:\
/usr/local/cuda/lib64:/usr/lib/hadoop/lib/native:/usr/lib/hadoop-lzo/lib/native:\
/docker/usr/lib/hadoop/lib/native:/docker/usr/lib/hadoop-lzo/lib/native";

/// A task's GPU share when none is set: the reference AutoTuner's (and aether's) 0.001, which
/// leaves the number of concurrent tasks to the executor's cores and
/// `spark.rapids.sql.concurrentGpuTasks` (AWS's example pairs 0.25 with 4 executor cores; a
/// step with 8 cores would then run only 4 tasks at once).
pub const DEFAULT_TASK_GPU_AMOUNT: &str = "0.001";

/// Where a GPU run runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// EMR on EC2: Spark on YARN, GPUs as `yarn.io/gpu`, CUDA from the EMR AMI.
    Yarn,
    /// EMR on EKS: Spark on Kubernetes, GPUs as `nvidia.com/gpu`, CUDA in the RAPIDS image.
    Kubernetes,
}

/// The properties a GPU cluster's `spark-defaults` carry (EMR on EC2), the same values a step
/// gets when it sets none.
pub fn cluster_defaults() -> Vec<(&'static str, &'static str)> {
    vec![
        ("spark.plugins", PLUGIN),
        (
            "spark.executor.resource.gpu.discoveryScript",
            DISCOVERY_SCRIPT,
        ),
        (EXECUTOR_GPU_AMOUNT, "1"),
        (TASK_GPU_AMOUNT, DEFAULT_TASK_GPU_AMOUNT),
        (EXTRA_LIBRARY_PATH, CUDA_LIBRARY_PATH),
    ]
}

/// The GPU properties of a run whose job sets `job` and whose run sets `run` over it (the
/// run's win): what is missing added, what is set checked. Returns the properties to set over
/// both (only those that change or must be said); an error names the property and why no GPU
/// run can take it.
pub fn gpu_conf(
    job: &BTreeMap<String, String>,
    run: &BTreeMap<String, String>,
    rt: Runtime,
) -> Result<BTreeMap<String, String>, String> {
    let get = |k: &str| {
        run.get(k)
            .or_else(|| job.get(k))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty() && !crate::is_placeholder(v))
    };
    let mut out = BTreeMap::new();
    // the plugin: kept with the step's other plugins
    match get("spark.plugins") {
        Some(p) if p.split(',').any(|x| x.trim() == PLUGIN) => {}
        Some(p) => {
            out.insert("spark.plugins".to_string(), format!("{p},{PLUGIN}"));
        }
        None => {
            out.insert("spark.plugins".to_string(), PLUGIN.to_string());
        }
    }
    // one GPU per executor
    let gpus = match get(EXECUTOR_GPU_AMOUNT) {
        None => {
            out.insert(EXECUTOR_GPU_AMOUNT.to_string(), "1".to_string());
            1.0
        }
        Some(v) => match v.parse::<f64>() {
            Ok(n) if n == 1.0 => {
                // said explicitly, so that a cluster without aether's defaults gets it too
                out.insert(EXECUTOR_GPU_AMOUNT.to_string(), "1".to_string());
                n
            }
            Ok(n) if n > 1.0 && n.fract() == 0.0 => {
                return Err(format!(
                    "{EXECUTOR_GPU_AMOUNT}={v}: the RAPIDS Accelerator uses one GPU per executor \
                     (more executors per node use more GPUs); set 1"
                ));
            }
            _ => {
                return Err(format!(
                    "{EXECUTOR_GPU_AMOUNT}={v}: a GPU run needs 1 (a whole GPU per executor; \
                     without it the executor gets no GPU and the plugin fails at start)"
                ));
            }
        },
    };
    match get(TASK_GPU_AMOUNT) {
        None => {
            out.insert(
                TASK_GPU_AMOUNT.to_string(),
                DEFAULT_TASK_GPU_AMOUNT.to_string(),
            );
        }
        Some(v) => match v.parse::<f64>() {
            Ok(n) if n > 0.0 && n <= gpus => {}
            _ => {
                return Err(format!(
                    "{TASK_GPU_AMOUNT}={v}: expected a share of the executor's GPU above 0 and at \
                     most {gpus} (such as {DEFAULT_TASK_GPU_AMOUNT})"
                ));
            }
        },
    }
    if rt == Runtime::Yarn {
        let path = library_path(get(EXTRA_LIBRARY_PATH).as_deref());
        out.insert(EXTRA_LIBRARY_PATH.to_string(), path);
    }
    Ok(out)
}

/// A step's executor library path with AWS's CUDA and Hadoop folders it lacks after its own.
fn library_path(own: Option<&str>) -> String {
    let mut parts: Vec<&str> = own
        .unwrap_or("")
        .split(':')
        .filter(|p| !p.is_empty())
        .collect();
    for p in CUDA_LIBRARY_PATH.split(':') {
        if !parts.contains(&p) {
            parts.push(p);
        }
    }
    parts.join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_step_without_gpu_settings_gets_them() {
        let c = gpu_conf(&conf(&[]), &conf(&[]), Runtime::Yarn).unwrap();
        assert_eq!(c[EXECUTOR_GPU_AMOUNT], "1");
        assert_eq!(c[TASK_GPU_AMOUNT], DEFAULT_TASK_GPU_AMOUNT);
        assert_eq!(c["spark.plugins"], PLUGIN);
        assert_eq!(c[EXTRA_LIBRARY_PATH], CUDA_LIBRARY_PATH);
        // Kubernetes: CUDA is the image's, no library path
        let k = gpu_conf(&conf(&[]), &conf(&[]), Runtime::Kubernetes).unwrap();
        assert_eq!(k[EXECUTOR_GPU_AMOUNT], "1");
        assert!(!k.contains_key(EXTRA_LIBRARY_PATH));
    }

    #[test]
    fn a_step_s_own_values_are_kept_or_refused() {
        // the run's value over the job's; a valid task share kept
        let c = gpu_conf(
            &conf(&[(TASK_GPU_AMOUNT, "0"), ("spark.plugins", "a.B")]),
            &conf(&[(TASK_GPU_AMOUNT, "0.25")]),
            Runtime::Yarn,
        )
        .unwrap();
        assert!(!c.contains_key(TASK_GPU_AMOUNT));
        assert_eq!(c["spark.plugins"], format!("a.B,{PLUGIN}"));
        for (k, v, says) in [
            (EXECUTOR_GPU_AMOUNT, "0", "needs 1"),
            (EXECUTOR_GPU_AMOUNT, "0.5", "needs 1"),
            (EXECUTOR_GPU_AMOUNT, "2", "one GPU per executor"),
            (EXECUTOR_GPU_AMOUNT, "x", "needs 1"),
            (TASK_GPU_AMOUNT, "0", "above 0"),
            (TASK_GPU_AMOUNT, "1.5", "at most 1"),
        ] {
            let e = gpu_conf(&conf(&[]), &conf(&[(k, v)]), Runtime::Kubernetes).unwrap_err();
            assert!(
                e.starts_with(&format!("{k}={v}: ")) && e.contains(says),
                "{e}"
            );
        }
        // a placeholder is no value: the default goes in
        let c = gpu_conf(
            &conf(&[]),
            &conf(&[(TASK_GPU_AMOUNT, "[FILL_IN_VALUE]")]),
            Runtime::Yarn,
        )
        .unwrap();
        assert_eq!(c[TASK_GPU_AMOUNT], DEFAULT_TASK_GPU_AMOUNT);
    }

    #[test]
    fn a_step_s_library_path_keeps_its_own_and_gains_cuda() {
        let c = gpu_conf(
            &conf(&[(EXTRA_LIBRARY_PATH, "/opt/mylib:/usr/local/cuda/compat/lib")]),
            &conf(&[]),
            Runtime::Yarn,
        )
        .unwrap();
        let p: Vec<&str> = c[EXTRA_LIBRARY_PATH].split(':').collect();
        assert_eq!(p[0], "/opt/mylib");
        assert_eq!(p[1], "/usr/local/cuda/compat/lib");
        for want in CUDA_LIBRARY_PATH.split(':') {
            assert_eq!(p.iter().filter(|x| **x == want).count(), 1, "{want}");
        }
    }
}
