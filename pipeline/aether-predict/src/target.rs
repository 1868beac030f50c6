//! The cluster a profiled job's next run is for, as the reference profiler's users describe it
//! (`--target_cluster_info`): a worker's cores, memory and GPUs (model and count), or an EC2
//! instance type. The GPU model sets the GPU memory (concurrent GPU tasks) and, for T4 and A100,
//! the AQE partition size and count the reference tunes large shuffles with.

use serde::Deserialize;

pub use crate::worker::{GPUS, GpuModel, Worker, gpu_model};

/// A target that cannot be used, with why.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{file}: {error}")]
    File { file: String, error: String },
    #[error(
        "unknown GPU {0:?}: known are t4, a100, l4, l20, a10g, a10, v100, p100, k80, p4, h100, l40s"
    )]
    UnknownGpu(String),
    #[error("{0}")]
    Invalid(String),
}

/// The reference's target-cluster YAML (`workerInfo`; `driverInfo` and `sparkProperties` are
/// read and not used).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetFile {
    #[serde(default)]
    pub worker_info: WorkerInfo,
    #[serde(default)]
    pub driver_info: Option<serde_yaml::Value>,
    #[serde(default)]
    pub spark_properties: Option<serde_yaml::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkerInfo {
    pub instance_type: Option<String>,
    pub cpu_cores: Option<i64>,
    #[serde(rename = "memoryGB")]
    pub memory_gb: Option<i64>,
    pub gpu: Option<GpuInfo>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuInfo {
    pub count: Option<i64>,
    pub name: Option<String>,
}

/// A worker with `cores`, `memory_mib` and `gpus` GPUs of `model` (EMR keeps 30 % of a node's
/// memory, as for the default worker).
pub fn worker(instance: &str, cores: i64, memory_mib: i64, gpus: i64, model: &GpuModel) -> Worker {
    Worker {
        instance: instance.to_string(),
        cores,
        memory_mib,
        gpus,
        gpu_memory_mib: model.memory_mib,
        gpu: *model,
        ..Worker::default()
    }
}

/// The worker an EC2 GPU instance type is (from the instance catalog).
pub fn of_instance(cat: &crate::cluster::Catalog, instance: &str) -> Result<Worker, TargetError> {
    let i = cat
        .instance(instance)
        .filter(|i| i.gpus > 0)
        .ok_or_else(|| {
            TargetError::Invalid(format!(
                "{instance:?} is not a GPU instance type the catalog knows (such as g6.4xlarge, g5.8xlarge, p4d.24xlarge)"
            ))
        })?;
    let name = i.gpu.clone().unwrap_or_default();
    let model = gpu_model(&name).ok_or(TargetError::UnknownGpu(name))?;
    Ok(worker(instance, i.vcpus, i.memory_mib, i.gpus, model))
}

/// The worker of a running cluster: the first of its nodes' instance types that is a GPU type
/// of the catalog with a known GPU (its core or executor nodes; the primary has none).
pub fn of_nodes<'a>(
    cat: &crate::cluster::Catalog,
    instances: impl IntoIterator<Item = &'a str>,
) -> Option<Worker> {
    instances.into_iter().find_map(|i| of_instance(cat, i).ok())
}

impl TargetFile {
    /// The worker it describes: an instance type, or cores, memory and GPUs (not both).
    pub fn worker(&self, cat: &crate::cluster::Catalog) -> Result<Worker, TargetError> {
        let w = &self.worker_info;
        let onprem = w.cpu_cores.is_some() || w.memory_gb.is_some();
        let bad = |m: &str| Err(TargetError::Invalid(m.to_string()));
        match (&w.instance_type, onprem) {
            (Some(_), true) => bad(
                "workerInfo: both instanceType and cpuCores/memoryGB are given: give one of them",
            ),
            (Some(t), false) => {
                let mut worker = of_instance(cat, t)?;
                if let Some(g) = &w.gpu {
                    if let Some(n) = &g.name {
                        let m = gpu_model(n).ok_or_else(|| TargetError::UnknownGpu(n.clone()))?;
                        worker.gpu = *m;
                        worker.gpu_memory_mib = m.memory_mib;
                    }
                    if let Some(c) = g.count.filter(|c| *c > 0) {
                        worker.gpus = c;
                    }
                }
                Ok(worker)
            }
            (None, false) => {
                bad("workerInfo: give instanceType, or cpuCores, memoryGB and gpu {count, name}")
            }
            (None, true) => {
                let (Some(cores), Some(mem)) = (w.cpu_cores, w.memory_gb) else {
                    return bad("workerInfo: cpuCores and memoryGB are both needed");
                };
                if cores <= 0 || mem <= 0 {
                    return bad("workerInfo: cpuCores and memoryGB must be above 0");
                }
                let Some(g) = &w.gpu else {
                    return bad(
                        "workerInfo: gpu {count, name} is needed with cpuCores and memoryGB",
                    );
                };
                let name = g.name.clone().unwrap_or_else(|| "t4".into());
                let model = gpu_model(&name).ok_or(TargetError::UnknownGpu(name))?;
                let count = g.count.unwrap_or(1);
                if count <= 0 || count > cores {
                    return bad("workerInfo: gpu count must be from 1 to cpuCores");
                }
                Ok(worker("", cores, mem * 1024, count, model))
            }
        }
    }
}

/// The target `spec` names: a YAML file, else an EC2 GPU instance type.
pub fn resolve(spec: &str, cat: &crate::cluster::Catalog) -> Result<Worker, TargetError> {
    let path = std::path::Path::new(spec);
    if path.is_file() {
        let file = |error: String| TargetError::File {
            file: spec.to_string(),
            error,
        };
        let text = std::fs::read_to_string(path).map_err(|e| file(e.to_string()))?;
        let t: TargetFile = serde_yaml::from_str(&text).map_err(|e| file(e.to_string()))?;
        return t.worker(cat).map_err(|e| file(e.to_string()));
    }
    if spec.contains('.')
        && !spec.contains('/')
        && !spec.ends_with(".yaml")
        && !spec.ends_with(".yml")
    {
        return of_instance(cat, spec);
    }
    Err(TargetError::File {
        file: spec.to_string(),
        error: "no such file (give a target-cluster YAML or a GPU instance type)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat() -> crate::cluster::Catalog {
        crate::cluster::Catalog::load(&crate::prices::Terms::list()).unwrap()
    }

    fn yaml(text: &str) -> Result<Worker, TargetError> {
        let t: TargetFile =
            serde_yaml::from_str(text).map_err(|e| TargetError::Invalid(e.to_string()))?;
        t.worker(&cat())
    }

    #[test]
    fn the_reference_yaml_and_instance_types() {
        let w = yaml(
            "workerInfo:\n  cpuCores: 32\n  memoryGB: 256\n  gpu:\n    count: 4\n    name: A100\n",
        )
        .unwrap();
        assert_eq!(
            (w.cores, w.memory_mib, w.gpus, w.gpu_memory_mib),
            (32, 262144, 4, 40960)
        );
        assert_eq!(w.gpu.initial_partitions, Some(400));
        let w = yaml(
            "workerInfo:\n  cpuCores: 16\n  memoryGB: 64\n  gpu:\n    count: 1\n    name: t4\n",
        )
        .unwrap();
        assert_eq!(
            (w.gpu_memory_mib, w.gpu.advisory_partition_size),
            (15109, Some("32m"))
        );
        let w = resolve("g5.12xlarge", &cat()).unwrap();
        assert_eq!((w.cores, w.gpus, w.gpu.name), (48, 4, "a10g"));
        let w = yaml("workerInfo:\n  instanceType: g6.4xlarge\n").unwrap();
        assert_eq!(
            (w.cores, w.memory_mib, w.gpus, w.gpu.name),
            (16, 65536, 1, "l4")
        );
        // the default worker is that one
        let d = Worker::default();
        assert_eq!(
            (d.cores, d.memory_mib, d.gpus, d.gpu_memory_mib, d.gpu.name),
            (16, 65536, 1, 24576, "l4")
        );
    }

    #[test]
    fn bad_targets_say_why() {
        for (text, want) in [
            (
                "workerInfo:\n  instanceType: g6.4xlarge\n  cpuCores: 8\n  memoryGB: 32\n",
                "give one of them",
            ),
            (
                "workerInfo:\n  cpuCores: 8\n  memoryGB: 32\n",
                "gpu {count, name} is needed",
            ),
            (
                "workerInfo:\n  cpuCores: 8\n  memoryGB: 32\n  gpu:\n    count: 1\n    name: b200\n",
                "unknown GPU \"b200\"",
            ),
            (
                "workerInfo:\n  cpuCores: 8\n  gpu:\n    count: 1\n    name: t4\n",
                "both needed",
            ),
            (
                "workerInfo:\n  cpuCores: 8\n  memoryGB: 32\n  gpu:\n    count: 0\n    name: t4\n",
                "gpu count",
            ),
            (
                "workerInfo:\n  instanceType: m5d.xlarge\n",
                "not a GPU instance type",
            ),
            ("workerInfo:\n  cores: 8\n", "unknown field"),
            ("{}", "give instanceType"),
        ] {
            let e = yaml(text).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains(want), "{text:?}: {e:?}");
        }
        let e = resolve("/no/such/target.yaml", &cat())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("/no/such/target.yaml") && e.contains("no such file"),
            "{e}"
        );
    }
}
