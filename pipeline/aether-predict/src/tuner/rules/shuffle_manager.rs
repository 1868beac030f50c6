//! Profiling: the RAPIDS Shuffle Manager built for the run's Spark version (a Databricks
//! runtime's own version where the run names one), or why none can be recommended; and where
//! its jar must be found.

use super::Rule;
use crate::tuner::Tuner;

/// Spark versions the RAPIDS Shuffle Manager has a build for.
const VERSIONS: &[&str] = &[
    "3.2.0", "3.2.1", "3.2.2", "3.2.3", "3.2.4", "3.3.0", "3.3.1", "3.3.2", "3.3.3", "3.3.4",
    "3.4.0", "3.4.1", "3.4.2", "3.4.3", "3.5.0", "3.5.1", "3.5.2", "3.5.3", "3.5.4", "3.5.5",
    "3.5.6", "3.5.7", "4.0.0",
];

const CLASSPATH: &str = "The RAPIDS Shuffle Manager requires spark.driver.extraClassPath\n\
and spark.executor.extraClassPath settings to include the\n\
path to the cuDF plugin jar.\n\
If the cuDF plugin jar is being bundled with your Spark\n\
distribution, this step is not needed.";

const SEE: &str = "See supported versions: https://docs.nvidia.com/spark-rapids/user-guide/latest/additional-functionality/rapids-shuffle.html#rapids-shuffle-manager.";

pub(crate) struct ShuffleManager;

impl Rule for ShuffleManager {
    fn name(&self) -> &'static str {
        "shuffle_manager"
    }

    /// (the reference's qualification leaves the shuffle manager alone)
    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.profiling()
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        let databricks = t.source("spark.databricks.clusterUsageTags.sparkVersion");
        let lookup = databricks
            .clone()
            .unwrap_or_else(|| t.inp.spark_version.clone());
        match VERSIONS.iter().find(|v| lookup.contains(*v)) {
            Some(v) => t.set(
                "spark.shuffle.manager",
                format!(
                    "com.nvidia.spark.rapids.spark{}.RapidsShuffleManager",
                    v.replace('.', "")
                ),
                "the RAPIDS Shuffle Manager of the run's Spark version",
            ),
            None if databricks.is_some() => t.comment(format!(
                "Cannot recommend RAPIDS Shuffle Manager for Databricks runtime '{lookup}' on platform 'emr'.\n\
                 If the runtime is supported, rerun with '--platform databricks-aws' or '--platform databricks-azure' to get a recommendation.\n\
                 {SEE}"
            )),
            None => t.comment(format!(
                "Cannot recommend RAPIDS Shuffle Manager for unsupported Spark version: '{}'.\n\
                 To enable RAPIDS Shuffle Manager, use a supported Spark version (e.g., '4.0.0')\n\
                 and set: '--conf spark.shuffle.manager=com.nvidia.spark.rapids.spark400.RapidsShuffleManager'.\n\
                 {SEE}",
                t.inp.spark_version
            )),
        }
        t.comment(CLASSPATH);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    #[test]
    fn the_shuffle_manager_of_the_spark_version() {
        let w = Worker::default();
        let mut inp = run_with(4, 1, &[]);
        let a = apply(&ShuffleManager, Mode::Profiling, &inp, &w);
        assert_eq!(
            a.value("spark.shuffle.manager"),
            Some("com.nvidia.spark.rapids.spark351.RapidsShuffleManager")
        );
        assert!(
            apply(&ShuffleManager, Mode::Qualification, &inp, &w)
                .sets
                .is_empty()
        );
        inp.spark_version = "3.1.1".into();
        let a = apply(&ShuffleManager, Mode::Profiling, &inp, &w);
        assert!(a.sets.is_empty());
        assert!(
            a.comments
                .iter()
                .any(|c| c.contains("unsupported Spark version: '3.1.1'"))
        );
    }
}
