//! The GPU executors: one per GPU, each with the worker's cores per GPU. Profiling keeps the
//! run's executor count (the reference keeps it on a cloud platform); qualification keeps the
//! CPU run's total cores.

use super::Rule;
use crate::tuner::{Mode, Tuner};

pub(crate) struct Executors;

impl Rule for Executors {
    fn name(&self) -> &'static str {
        "executors"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.executors.is_some()
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        let Some((cores, execs)) = t.executors else {
            return;
        };
        let c = t.cores;
        t.set(
            "spark.executor.cores",
            c,
            "the GPU node's cores divided by its GPUs (one executor per GPU)",
        );
        match t.mode {
            Mode::Profiling => t.set(
                "spark.executor.instances",
                execs,
                "the run's executor count",
            ),
            Mode::Qualification if c > 0 => {
                let n = (cores * execs + c - 1) / c;
                if n > 0 {
                    t.set(
                        "spark.executor.instances",
                        n,
                        format!(
                            "keeps the CPU run's {} cores ({cores} x {execs} executors) on {c}-core GPU executors",
                            cores * execs
                        ),
                    );
                }
            }
            Mode::Qualification => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Inputs, Worker};

    /// The reference's g6.4xlarge answers (docs/reference/autotuner.md §5.13): 16 cores an
    /// executor; 2 CPU executors of 8 cores become one GPU executor in qualification, and stay
    /// 2 in profiling.
    #[test]
    fn one_executor_per_gpu_with_the_nodes_cores() {
        let inp = run_with(8, 2, &[]);
        let w = Worker::default();
        let q = apply(&Executors, Mode::Qualification, &inp, &w);
        assert_eq!(q.value("spark.executor.cores"), Some("16"));
        assert_eq!(q.value("spark.executor.instances"), Some("1"));
        let p = apply(&Executors, Mode::Profiling, &inp, &w);
        assert_eq!(p.value("spark.executor.instances"), Some("2"));
        // spark.executor.instances wins over the log's count without dynamic allocation
        let inp = run_with(8, 2, &[("spark.executor.instances", "5")]);
        let q = apply(&Executors, Mode::Qualification, &inp, &w);
        assert_eq!(q.value("spark.executor.instances"), Some("3"));
        // no executors: nothing
        let none = apply(&Executors, Mode::Profiling, &Inputs::default(), &w);
        assert!(none.sets.is_empty());
    }
}
