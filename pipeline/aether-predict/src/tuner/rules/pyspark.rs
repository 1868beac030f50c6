//! PySpark workers with memory of their own on YARN or Kubernetes: the cluster manager is told
//! they run Python, so it reserves that memory for them.

use super::Rule;
use crate::tuner::Tuner;

pub(crate) struct Pyspark;

impl Rule for Pyspark {
    fn name(&self) -> &'static str {
        "pyspark"
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        if t.get("spark.executor.pyspark.memory")
            .and_then(|v| crate::units::parse_bytes(&v, true))
            .is_none_or(|b| b <= 0)
        {
            return;
        }
        let why = "PySpark workers: the cluster manager reserves their memory";
        if t.master.contains("yarn") {
            t.set("spark.yarn.isPython", "true", why);
        } else if t.master.contains("k8s") {
            t.set("spark.kubernetes.resource.type", "python", why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    #[test]
    fn python_memory_is_reserved_on_yarn_and_kubernetes() {
        let w = Worker::default();
        let on = |master: &str, mem: &str| {
            let inp = run_with(
                4,
                1,
                &[
                    ("spark.master", master),
                    ("spark.executor.pyspark.memory", mem),
                ],
            );
            apply(&Pyspark, Mode::Qualification, &inp, &w)
        };
        assert_eq!(on("yarn", "2g").value("spark.yarn.isPython"), Some("true"));
        assert_eq!(
            on("k8s://https://x", "512").value("spark.kubernetes.resource.type"),
            Some("python")
        );
        assert!(on("local[4]", "2g").sets.is_empty());
        assert!(on("yarn", "0").sets.is_empty());
    }
}
