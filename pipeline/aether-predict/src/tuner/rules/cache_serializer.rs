//! An app that caches tables (a cache node in a plan, or a stage run in a cache scope): the
//! GPU's Parquet cache serializer keeps cached batches columnar, unless the run chose its own
//! serializer or turned GPU cache scans off. Spark 3.5.0 and 3.5.1 keep cached scans on the CPU
//! under AQE (the reference says so).

use super::Rule;
use crate::tuner::Tuner;
use crate::version;

const KEY: &str = "spark.sql.cache.serializer";
const GPU: &str = "com.nvidia.spark.ParquetCachedBatchSerializer";
const DEFAULT: &str = "org.apache.spark.sql.execution.columnar.DefaultCachedBatchSerializer";
const SCAN: &str = "spark.rapids.sql.exec.InMemoryTableScanExec";

pub(crate) struct CacheSerializer;

impl Rule for CacheSerializer {
    fn name(&self) -> &'static str {
        "cache_serializer"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.inp.cache_evidence
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        if t.is_false(SCAN) {
            t.comment(format!(
                "'{KEY}' is not recommended because '{SCAN}' is disabled, so GPU cache scans remain disabled."
            ));
            return;
        }
        // (the run's value or one recommended, not Spark's default)
        match t.current(KEY).as_deref() {
            Some(GPU) => {}
            Some(c) if c != DEFAULT => t.comment(format!(
                "'{KEY}' uses custom cache serializer '{c}'; preserving it. '{GPU}' is required for GPU InMemoryTableScan."
            )),
            _ => t.set(
                KEY,
                GPU,
                "the app caches tables: the GPU's Parquet cache serializer keeps them columnar",
            ),
        }
        let v = &t.inp.spark_version;
        if version::at_least(v, &[3, 5, 0]) && !version::at_least(v, &[3, 5, 2]) {
            t.comment(format!(
                "'{KEY}' remains compatible, but Spark 3.5.0 and 3.5.1 disable GPU InMemoryTableScan under AQE, so cached scans may remain on the CPU."
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    /// The reference's answers on the cache variants (tests/golden/autotuner-variants: the
    /// 3.5.2-rc1 run gets the 3.5.0/3.5.1 comment, a custom serializer is kept).
    #[test]
    fn cached_tables_get_the_gpu_serializer() {
        let w = Worker::default();
        let mut inp = run_with(4, 1, &[]);
        assert!(
            apply(&CacheSerializer, Mode::Profiling, &inp, &w)
                .sets
                .is_empty()
        );
        inp.cache_evidence = true;
        inp.spark_version = "3.5.2-rc1".into();
        let a = apply(&CacheSerializer, Mode::Profiling, &inp, &w);
        assert_eq!(a.value(KEY), Some(GPU));
        assert!(
            a.comments[0].contains("Spark 3.5.0 and 3.5.1"),
            "{:?}",
            a.comments
        );
        inp.spark_version = "3.5.2".into();
        assert!(
            apply(&CacheSerializer, Mode::Profiling, &inp, &w)
                .comments
                .is_empty()
        );
        inp.props.insert(KEY.into(), "com.example.Mine".into());
        let a = apply(&CacheSerializer, Mode::Qualification, &inp, &w);
        assert!(a.sets.is_empty() && a.comments[0].contains("preserving it"));
        inp.props.insert(SCAN.into(), "false".into());
        let a = apply(&CacheSerializer, Mode::Profiling, &inp, &w);
        assert!(a.sets.is_empty() && a.comments[0].contains("is disabled"));
    }
}
