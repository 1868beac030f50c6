//! File partitions sized so a GPU task reads 128-256 MiB: `spark.sql.files.maxPartitionBytes`
//! scaled by how far the largest file-scan task input was from that band (at most 4g); halved
//! after GPU out-of-memory errors in scan stages (profiling, where a scan input was measured).

use super::Rule;
use crate::tuner::Tuner;
use crate::units::format_bytes;

const KEY: &str = "spark.sql.files.maxPartitionBytes";

pub(crate) struct MaxPartitionBytes;

impl Rule for MaxPartitionBytes {
    fn name(&self) -> &'static str {
        "max_partition_bytes"
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        let cur = (t.bytes(KEY).unwrap_or(512 << 20) >> 20) as f64;
        let x = t.inp.file_scan_task_input_max.unwrap_or(0).max(0) as f64 / 1048576.0;
        // (no file-scan input: nothing computed, as the 26.08 jar does)
        let mut new_mib = if x == 0.0 {
            None
        } else if x < 128.0 {
            Some((cur * (128.0 / x)).min(4096.0) as i64)
        } else if x > 256.0 {
            Some((cur / (x / 256.0)).min(4096.0) as i64)
        } else {
            None
        };
        let mut why = format!(
            "the largest scan task read {x:.1} MiB: partitions sized so a GPU task reads 128-256 MiB (at most 4g)"
        );
        if t.inp.scan_stages_with_gpu_oom > 0
            && x > 0.0
            && let Some(s) = t.bytes(KEY)
        {
            let halved = (s >> 20) / 2;
            new_mib = Some(new_mib.map_or(halved, |n| n.min(halved)));
            why = "halved: scan stages ran out of GPU memory".into();
        }
        if let Some(mib) = new_mib.filter(|m| *m > 0) {
            t.set(KEY, format_bytes(mib << 20), why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    #[test]
    fn partitions_for_128_to_256_mib_tasks() {
        let w = Worker::default();
        let with = |input_mib: i64, kv: &[(&str, &str)]| {
            let mut inp = run_with(4, 1, kv);
            inp.file_scan_task_input_max = Some(input_mib << 20);
            inp
        };
        // 32 MiB tasks at the default 512m: 4 x 512m = 2g
        let a = apply(&MaxPartitionBytes, Mode::Qualification, &with(32, &[]), &w);
        assert_eq!(a.value(KEY), Some("2g"));
        // 1 MiB tasks: at most 4g
        let a = apply(&MaxPartitionBytes, Mode::Profiling, &with(1, &[]), &w);
        assert_eq!(a.value(KEY), Some("4g"));
        // 1024 MiB tasks at 1g: a quarter
        let a = apply(
            &MaxPartitionBytes,
            Mode::Profiling,
            &with(1024, &[(KEY, "1g")]),
            &w,
        );
        assert_eq!(a.value(KEY), Some("256m"));
        // within the band: unchanged; after scan OOMs: halved
        let mut inp = with(200, &[(KEY, "512m")]);
        assert!(
            apply(&MaxPartitionBytes, Mode::Profiling, &inp, &w)
                .sets
                .is_empty()
        );
        inp.scan_stages_with_gpu_oom = 1;
        let a = apply(&MaxPartitionBytes, Mode::Profiling, &inp, &w);
        assert_eq!(a.value(KEY), Some("256m"));
    }
}
