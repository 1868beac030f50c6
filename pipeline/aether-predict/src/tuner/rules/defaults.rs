//! No executors in the run (or `spark.executor.instances=0`): the cluster cannot be sized, and
//! the reference gives its default advice as comments.

use super::Rule;
use crate::tuner::Tuner;

pub(crate) struct Defaults;

impl Rule for Defaults {
    fn name(&self) -> &'static str {
        "defaults"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.executors.is_none()
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        for c in [
            "Could not infer the cluster configuration, recommendations are generated using default values!",
            "'spark.executor.cores' should be set to 16.",
            "'spark.executor.instances' should be set to (cpuCoresPerNode * numWorkers) / 'spark.executor.cores'.",
            "'spark.task.resource.gpu.amount' should be set to 0.001.",
            "'spark.rapids.sql.enabled' should be true to enable SQL operations on the GPU.",
            "'spark.sql.adaptive.enabled' should be enabled for better performance.",
            "'spark.executor.memory' should be set to 2g/core.",
            "'spark.rapids.memory.pinnedPool.size' should be set to 2g.",
        ] {
            t.comment(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Inputs, Mode, Worker};

    #[test]
    fn only_a_run_without_executors_gets_the_default_advice() {
        let w = Worker::default();
        let a = apply(&Defaults, Mode::Profiling, &Inputs::default(), &w);
        assert_eq!(a.comments.len(), 8);
        assert!(a.sets.is_empty());
        let zero = run_with(4, 2, &[("spark.executor.instances", "0")]);
        assert_eq!(
            apply(&Defaults, Mode::Profiling, &zero, &w).comments.len(),
            8
        );
        assert!(
            apply(&Defaults, Mode::Profiling, &run_with(4, 2, &[]), &w)
                .comments
                .is_empty()
        );
    }
}
