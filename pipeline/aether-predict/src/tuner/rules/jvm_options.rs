//! EMR: Transparent Huge Pages off in the driver's and executors' JVM options (the reference
//! replaces the run's options with the flag and says so).

use super::Rule;
use crate::tuner::Tuner;

const THP: &str = "-XX:-UseTransparentHugePages";

pub(crate) struct JvmOptions;

impl Rule for JvmOptions {
    fn name(&self) -> &'static str {
        "jvm_options"
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        for who in ["driver", "executor"] {
            let key = format!("spark.{who}.extraJavaOptions");
            if t.source(&key)
                .is_some_and(|v| v.split_whitespace().any(|x| x == THP))
            {
                continue;
            }
            t.set(
                &key,
                THP,
                "EMR: Transparent Huge Pages off (replaces the run's options; add any you need)",
            );
            t.comment(format!(
                "Set '{key}={THP}' to disable Transparent Huge Pages (THP) for EMR. This recommendation \
                 does not preserve existing {who} JVM options; append any additional options manually. \
                 To view the source extraJavaOptions, please refer to spark_properties.csv in the tool output."
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    #[test]
    fn transparent_huge_pages_off_unless_already() {
        let w = Worker::default();
        let inp = run_with(
            4,
            1,
            &[
                (
                    "spark.driver.extraJavaOptions",
                    "-Xss4m -XX:-UseTransparentHugePages",
                ),
                ("spark.executor.extraJavaOptions", "-Xss4m"),
            ],
        );
        let a = apply(&JvmOptions, Mode::Profiling, &inp, &w);
        assert_eq!(a.value("spark.driver.extraJavaOptions"), None);
        assert_eq!(a.value("spark.executor.extraJavaOptions"), Some(THP));
        assert_eq!(a.comments.len(), 1);
    }
}
