//! The GPU worker a run is sized for: its cores, memory and GPUs (model and count). The GPU
//! model sets the GPU memory (concurrent GPU tasks) and, for T4 and A100, the AQE partition size
//! and count the reference tunes large shuffles with.

use serde::Serialize;

/// The GPU worker the recommendations are for: EMR's default `g6.4xlarge` (16 vCPU, 64 GiB,
/// one L4 of 24 GiB).
#[derive(Clone, Debug, Serialize)]
pub struct Worker {
    pub instance: String,
    pub cores: i64,
    pub memory_mib: i64,
    pub gpus: i64,
    pub gpu_memory_mib: i64,
    /// Share of node memory EMR keeps for itself.
    pub reserved_fraction: f64,
    /// The GPU model (what large-shuffle partitioning is tuned by).
    pub gpu: GpuModel,
}

impl Default for Worker {
    fn default() -> Self {
        Worker {
            instance: "g6.4xlarge".into(),
            cores: 16,
            memory_mib: 65536,
            gpus: 1,
            gpu_memory_mib: 24576,
            reserved_fraction: 0.3,
            gpu: *gpu_model("l4").expect("l4 is a known GPU"),
        }
    }
}

/// A GPU model the sizing knows.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GpuModel {
    /// As the reference names it (lower case; `a10g`).
    pub name: &'static str,
    pub memory_mib: i64,
    /// `spark.sql.adaptive.advisoryPartitionSizeInBytes` for large inputs and shuffles.
    pub advisory_partition_size: Option<&'static str>,
    /// `spark.sql.adaptive.coalescePartitions.initialPartitionNum` for large inputs and shuffles.
    pub initial_partitions: Option<i64>,
    /// Whether the reference profiler (26.08.4) knows it (it refuses the others).
    pub reference: bool,
}

const fn gpu(name: &'static str, memory_mib: i64) -> GpuModel {
    GpuModel {
        name,
        memory_mib,
        advisory_partition_size: None,
        initial_partitions: None,
        reference: true,
    }
}

/// The reference's GPU devices (its `GpuDevice`: memory as it counts it), then H100 (80 GiB) and
/// L40S (45 GiB, the EMR catalog's figure), which it does not know.
pub const GPUS: &[GpuModel] = &[
    GpuModel {
        advisory_partition_size: Some("32m"),
        initial_partitions: Some(800),
        ..gpu("t4", 15109)
    },
    GpuModel {
        advisory_partition_size: Some("64m"),
        initial_partitions: Some(400),
        ..gpu("a100", 40960)
    },
    gpu("l4", 24576),
    gpu("l20", 49152),
    gpu("a10g", 24576),
    gpu("a10", 24576),
    gpu("v100", 16384),
    gpu("p100", 16384),
    gpu("k80", 12288),
    gpu("p4", 8192),
    GpuModel {
        reference: false,
        ..gpu("h100", 81920)
    },
    GpuModel {
        reference: false,
        ..gpu("l40s", 46068)
    },
];

/// The model named `name` (any case).
pub fn gpu_model(name: &str) -> Option<&'static GpuModel> {
    let n = name.trim().to_ascii_lowercase();
    GPUS.iter().find(|g| g.name == n)
}
