//! The AutoTuner's rules, one per file, in the order they run ([`RULES`]). A rule reads the run,
//! the worker and the values recommended so far (`Tuner::get`), and sets properties, each with
//! the reason qualify's bootstrap config shows, and the reference's comments, which profile
//! shows. Where the reference's qualification and profiling AutoTuners differ, the rule says so
//! and asks `Tuner::mode`.

use super::Tuner;

mod aqe;
mod batch;
mod cache_serializer;
mod concurrent_gpu_tasks;
mod defaults;
mod delta_lake;
mod dynamic_allocation;
mod executors;
mod file_cache;
mod file_encoding;
mod gc;
mod gpu_resources;
mod jvm_options;
mod kryo;
mod max_partition_bytes;
mod memory;
mod plugin;
mod pyspark;
mod python_procfs;
mod shuffle_manager;
mod shuffle_partitions;
mod threads;

/// One AutoTuner rule.
pub(crate) trait Rule: Sync {
    /// Its name (its file's).
    fn name(&self) -> &'static str;
    /// Whether it runs for this run and mode (by default: always).
    fn applies(&self, _t: &Tuner<'_>) -> bool {
        true
    }
    fn apply(&self, t: &mut Tuner<'_>);
}

/// Every rule, in the order they run: a rule that reads another's value comes after it (the
/// GPU share of a task before concurrent GPU tasks; the batch size before shuffle partitions;
/// the executor count before dynamic allocation).
pub(crate) static RULES: &[&dyn Rule] = &[
    &executors::Executors,
    &defaults::Defaults,
    &memory::Memory,
    &gpu_resources::GpuResources,
    &concurrent_gpu_tasks::ConcurrentGpuTasks,
    &threads::Threads,
    &batch::Batch,
    &pyspark::Pyspark,
    &plugin::Plugin,
    &cache_serializer::CacheSerializer,
    &kryo::Kryo,
    &jvm_options::JvmOptions,
    &shuffle_manager::ShuffleManager,
    &max_partition_bytes::MaxPartitionBytes,
    &shuffle_partitions::ShufflePartitions,
    &aqe::Aqe,
    &dynamic_allocation::DynamicAllocation,
    &file_encoding::FileEncoding,
    &delta_lake::DeltaLake,
    &python_procfs::PythonProcfs,
    &file_cache::FileCache,
    &gc::Gc,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_registered_once_under_its_file_name() {
        let names: Vec<&str> = RULES.iter().map(|r| r.name()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tuner/rules");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|f| f != "mod.rs")
            .map(|f| f.trim_end_matches(".rs").to_string())
            .collect();
        files.sort();
        assert_eq!(files, unique);
    }
}

/// Class names of a comma-separated list property, trimmed, without blanks and repeats, in
/// order, with `class` appended when it is not there yet (`None`: nothing to add).
pub(crate) fn with_class(value: Option<&str>, class: &str) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for n in value.unwrap_or("").split(',').map(str::trim) {
        if !n.is_empty() && !names.contains(&n) {
            names.push(n);
        }
    }
    if names.contains(&class) {
        return None;
    }
    names.push(class);
    Some(names.join(","))
}

#[cfg(test)]
mod class_list_tests {
    use super::with_class;

    #[test]
    fn a_class_is_appended_once() {
        assert_eq!(with_class(None, "B").as_deref(), Some("B"));
        assert_eq!(with_class(Some(" A , ,A"), "B").as_deref(), Some("A,B"));
        assert_eq!(with_class(Some("A,B"), "B"), None);
    }
}
