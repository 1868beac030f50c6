//! Profiling, a Delta Lake session (its extension or catalog): Delta Lake 3.3.0 or later is
//! recommended (the version read from the Delta jar on the classpath), and GPU Delta writes on.

use super::Rule;
use crate::tuner::Tuner;
use crate::version;

const WRITE: &str = "spark.rapids.sql.format.delta.write.enabled";

pub(crate) struct DeltaLake;

/// The Delta Lake version a jar name carries (`…/io.delta_delta-core_2.12-2.4.0.jar` → 2.4.0),
/// as the reference's `.*io\.delta_delta-[\w.-]+-(\d+\.\d+\.\d+)\.jar` reads it.
fn version_of(jar: &str) -> Option<String> {
    let (_, rest) = jar.split_once("io.delta_delta-")?;
    let rest = rest.strip_suffix(".jar")?;
    let (name, version) = rest.rsplit_once('-')?;
    let parts: Vec<&str> = version.split('.').collect();
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '-')
        && parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    ok.then(|| version.to_string())
}

impl Rule for DeltaLake {
    fn name(&self) -> &'static str {
        "delta_lake"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.profiling()
            && (t
                .source("spark.sql.extensions")
                .is_some_and(|v| v.contains("DeltaSparkSessionExtension"))
                || t.source("spark.sql.catalog.spark_catalog")
                    .is_some_and(|v| v.contains("DeltaCatalog")))
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        match t.inp.delta_jars.iter().find_map(|j| version_of(j)) {
            Some(v) if version::at_least(&v, &[3, 3, 0]) => {}
            Some(v) => t.comment(format!(
                "Delta Lake version is {v}. It is recommended to upgrade to Delta Lake version 3.3.0 or above for better compatibility with the cuDF plugin."
            )),
            None => t.comment(
                "Delta Lake version could not be determined. It is recommended to use Delta Lake version 3.3.0 or above for better compatibility with the cuDF plugin.",
            ),
        }
        if t.is_false(WRITE) {
            t.set(WRITE, "true", "GPU Delta Lake writes");
        }
        t.comment(format!(
            "'{WRITE}' controls whether the writing of Delta Lake tables is accelerated by the cuDF plugin. Default is 'true'."
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    #[test]
    fn delta_versions_and_writes() {
        assert_eq!(
            version_of("/j/io.delta_delta-core_2.12-2.4.0.jar").as_deref(),
            Some("2.4.0")
        );
        assert_eq!(
            version_of("/j/io.delta_delta-spark_2.12-3.3.0.jar").as_deref(),
            Some("3.3.0")
        );
        assert_eq!(version_of("/j/io.delta_delta-core_2.12-2.4.jar"), None);
        let w = Worker::default();
        let mut inp = run_with(
            4,
            1,
            &[
                (
                    "spark.sql.extensions",
                    "io.delta.sql.DeltaSparkSessionExtension",
                ),
                (WRITE, "false"),
            ],
        );
        inp.delta_jars = vec!["/j/io.delta_delta-core_2.12-2.4.0.jar".into()];
        let a = apply(&DeltaLake, Mode::Profiling, &inp, &w);
        assert_eq!(a.value(WRITE), Some("true"));
        assert!(
            a.comments
                .iter()
                .any(|c| c.starts_with("Delta Lake version is 2.4.0."))
        );
        assert!(
            apply(&DeltaLake, Mode::Qualification, &inp, &w)
                .sets
                .is_empty()
        );
    }
}
