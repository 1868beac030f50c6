//! One GPU per executor (where the run set none, or 0), and a task's share of it small enough
//! for every core's task to run at once (0.001).

use super::Rule;
use crate::tuner::Tuner;

pub(crate) struct GpuResources;

impl Rule for GpuResources {
    fn name(&self) -> &'static str {
        "gpu_resources"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.executors.is_some()
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        // (the reference reads the amount as a whole number: "0.0" is not zero to it)
        if t.get("spark.executor.resource.gpu.amount")
            .is_none_or(|v| v.trim().is_empty() || v.trim().parse::<i64>() == Ok(0))
        {
            t.set(
                "spark.executor.resource.gpu.amount",
                1,
                "one GPU per executor",
            );
        }
        t.set(
            "spark.task.resource.gpu.amount",
            "0.001",
            "lets every core's task share the executor's GPU",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    #[test]
    fn one_gpu_per_executor_unless_the_run_set_one() {
        let w = Worker::default();
        for (run, want) in [
            (None, Some("1")),
            (Some("0"), Some("1")),
            (Some("0.0"), None),
            (Some("2"), None),
        ] {
            let kv: Vec<(&str, &str)> = run
                .map(|v| ("spark.executor.resource.gpu.amount", v))
                .into_iter()
                .collect();
            let a = apply(&GpuResources, Mode::Profiling, &run_with(4, 1, &kv), &w);
            assert_eq!(
                a.value("spark.executor.resource.gpu.amount"),
                want,
                "{run:?}"
            );
            assert_eq!(a.value("spark.task.resource.gpu.amount"), Some("0.001"));
        }
    }
}
