//! GPU batches and task locality: 1 GiB batches in a bootstrap config, the profiler's
//! 2147483647 bytes (its `BATCH_SIZE_BYTES`); GPU tasks do not wait for data locality.

use super::Rule;
use crate::tuner::{Mode, Tuner};

/// Profiling's batch size (`BATCH_SIZE_BYTES` of the reference's tuningConfigs.yaml): the
/// largest GPU batch, 2^31 - 1 bytes.
pub(crate) const PROFILING_BATCH_BYTES: i64 = 2147483647;

pub(crate) struct Batch;

impl Rule for Batch {
    fn name(&self) -> &'static str {
        "batch"
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        match t.mode {
            Mode::Qualification => {
                t.set("spark.rapids.sql.batchSizeBytes", "1g", "1 GiB GPU batches")
            }
            Mode::Profiling => t.set(
                "spark.rapids.sql.batchSizeBytes",
                PROFILING_BATCH_BYTES,
                "the largest GPU batch",
            ),
        }
        t.set(
            "spark.locality.wait",
            0,
            "GPU tasks should not wait for data locality",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::Worker;
    use crate::tuner::testing::{apply, run_with};

    /// Both AutoTuners bound the batch as the reference does: 1g in qualification, the
    /// 2147483647-byte GPU batch in profiling (pinned: the reference's shuffle-partition bound
    /// divides by it).
    #[test]
    fn batch_size_by_mode() {
        let (w, inp) = (Worker::default(), run_with(4, 1, &[]));
        let q = apply(&Batch, Mode::Qualification, &inp, &w);
        assert_eq!(q.value("spark.rapids.sql.batchSizeBytes"), Some("1g"));
        let p = apply(&Batch, Mode::Profiling, &inp, &w);
        assert_eq!(
            p.value("spark.rapids.sql.batchSizeBytes"),
            Some("2147483647b")
        );
        assert_eq!(p.value("spark.locality.wait"), Some("0"));
    }
}
