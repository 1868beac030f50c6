//! Spark properties as the tune loop and the profile change them: a recommendation applied
//! over a run's config, and what a GPU out-of-memory failure calls for.

use aether_predict::profile::{Change, Tuning};
use std::collections::BTreeMap;

/// A config's Spark properties.
pub type Props = BTreeMap<String, String>;

pub(crate) fn int_of(p: &Props, k: &str) -> Option<i64> {
    p.get(k).and_then(|v| v.trim().parse().ok())
}

/// Set the shuffle partitions (and AQE's initial number with them).
pub(crate) fn set_partitions(p: &mut Props, n: i64) {
    p.insert("spark.sql.shuffle.partitions".into(), n.to_string());
    p.insert(
        "spark.sql.adaptive.coalescePartitions.initialPartitionNum".into(),
        n.to_string(),
    );
}

pub(crate) fn partitions(p: &Props) -> i64 {
    int_of(p, "spark.sql.shuffle.partitions")
        .or_else(|| {
            int_of(
                p,
                "spark.sql.adaptive.coalescePartitions.initialPartitionNum",
            )
        })
        .unwrap_or(200)
}

/// A memory value in MiB (a bare number is bytes, or MiB when `bare_is_mib`), as Spark reads
/// the property.
pub(crate) fn mib(v: &str, bare_is_mib: bool) -> Option<i64> {
    aether_predict::units::parse_bytes(v, bare_is_mib).map(|b| b >> 20)
}

/// What a GPU out-of-memory failure calls for (a failed run in the loop, a profile that saw GPU
/// OOMs): fewer concurrent GPU tasks, twice the shuffle partitions, half the file partition
/// size, 50 % more memory overhead (where set). `p` holds the run's values.
pub fn remedies(p: &Props) -> Props {
    let mut q = p.clone();
    let c = int_of(p, "spark.rapids.sql.concurrentGpuTasks").unwrap_or(2);
    q.insert(
        "spark.rapids.sql.concurrentGpuTasks".into(),
        (c - 1).max(1).to_string(),
    );
    set_partitions(&mut q, partitions(p) * 2);
    let mpb = p
        .get("spark.sql.files.maxPartitionBytes")
        .and_then(|v| mib(v, false))
        .unwrap_or(512);
    q.insert(
        "spark.sql.files.maxPartitionBytes".into(),
        format!("{}m", (mpb / 2).max(16)),
    );
    if let Some(o) = p
        .get("spark.executor.memoryOverhead")
        .and_then(|v| mib(v, true))
    {
        q.insert(
            "spark.executor.memoryOverhead".into(),
            format!("{}m", o + o / 2),
        );
    }
    q
}

/// The properties a profile config runs with: the profiled run's own config (when aether ran
/// it) with the recommendations over it; removed properties are dropped, unresolved ones
/// (`[FILL_IN_VALUE]`) kept for the user to fill in (runs never pass them to Spark).
pub fn config_properties(base: BTreeMap<String, String>, t: &Tuning) -> BTreeMap<String, String> {
    let mut props = base;
    for p in &t.properties {
        match p.change {
            Change::Removed => {
                props.remove(&p.key);
            }
            _ => {
                props.insert(p.key.clone(), p.value.clone());
            }
        }
    }
    props
}
