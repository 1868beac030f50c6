//! AQE's partitions: no partitions under 4 MiB (Spark 3.2+; before, at least one partition per
//! core of the run); 128 MiB shuffle partitions for small inputs; for large inputs and shuffles
//! the GPU model's partition size (T4 32m, A100 64m) and the advisory size honoured; and a
//! broadcast threshold the user must choose where the run set none (over 100m is warned of).

use super::Rule;
use crate::tuner::Tuner;
use crate::units::parse_bytes;
use crate::version;

const ADVISORY: &str = "spark.sql.adaptive.advisoryPartitionSizeInBytes";
const BROADCAST: &str = "spark.sql.adaptive.autoBroadcastJoinThreshold";

pub(crate) struct Aqe;

impl Rule for Aqe {
    fn name(&self) -> &'static str {
        "aqe"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.executors.is_some()
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        if version::at_least(&t.inp.spark_version, &[3, 2, 0]) {
            let k = "spark.sql.adaptive.coalescePartitions.minPartitionSize";
            if t.source(k).is_none() {
                t.set(
                    k,
                    "4m",
                    "GPU tasks cost more to start: no partitions under 4 MiB",
                );
            }
        } else if let Some((c, e)) = t.inp.cluster.filter(|(_, e)| *e > 0) {
            let k = "spark.sql.adaptive.coalescePartitions.minPartitionNum";
            if t.source(k).is_none() {
                t.set(
                    k,
                    c * e,
                    "Spark < 3.2: at least one partition per core of the run",
                );
            }
        }
        let (mean_input, _) = t.inp.mean_io();
        if mean_input < 35000.0 && t.source(ADVISORY).is_none() {
            t.set(
                ADVISORY,
                "128m",
                "small inputs: 128 MiB shuffle partitions fill the GPU better",
            );
        }
        if t.inp.large_io() {
            if let Some(size) = t.worker.gpu.advisory_partition_size {
                let why = format!(
                    "large inputs and shuffles: the {} GPU's partition size",
                    t.worker.gpu.name
                );
                t.set(ADVISORY, size, why);
            }
            t.set(
                "spark.sql.adaptive.coalescePartitions.parallelismFirst",
                "false",
                "so AQE honours the advisory partition size",
            );
        }
        // (a value that is not a size, e.g. -1 for no broadcasts, is left alone)
        match t.source(BROADCAST).map(|v| parse_bytes(&v, false)) {
            None => t.fill_in(
                BROADCAST,
                "not set in the run: choose a value (the tool suggests at most 100m)",
                false,
            ),
            Some(Some(b)) if b >> 20 > 100 => t.comment(
                "Setting 'spark.sql.adaptive.autoBroadcastJoinThreshold' > 100m could lead to performance\n\
                 regression. Should be set to a lower number.",
            ),
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{FILL_IN, Mode, Worker};

    #[test]
    fn aqe_partitions_by_version_input_and_gpu() {
        let w = Worker::default();
        let mut inp = run_with(4, 3, &[(BROADCAST, "200m")]);
        let a = apply(&Aqe, Mode::Qualification, &inp, &w);
        assert_eq!(
            a.value("spark.sql.adaptive.coalescePartitions.minPartitionSize"),
            Some("4m")
        );
        assert_eq!(a.value(ADVISORY), Some("128m"));
        assert_eq!(a.value(BROADCAST), None);
        assert!(a.comments[0].contains("> 100m"));
        inp.spark_version = "3.1.1".into();
        inp.props.remove(BROADCAST);
        let a = apply(&Aqe, Mode::Profiling, &inp, &w);
        assert_eq!(
            a.value("spark.sql.adaptive.coalescePartitions.minPartitionNum"),
            Some("12")
        );
        assert_eq!(a.value(BROADCAST), Some(FILL_IN));
        // large inputs and shuffles on an A100: 64m, parallelism second
        let w = Worker {
            gpu: *crate::worker::gpu_model("a100").unwrap(),
            ..Default::default()
        };
        inp.sql_io = vec![(1 << 20, 1 << 20)];
        let a = apply(&Aqe, Mode::Profiling, &inp, &w);
        assert_eq!(a.value(ADVISORY), Some("64m"));
        assert_eq!(
            a.value("spark.sql.adaptive.coalescePartitions.parallelismFirst"),
            Some("false")
        );
    }
}
