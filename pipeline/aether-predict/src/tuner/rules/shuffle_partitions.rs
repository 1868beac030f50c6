//! Shuffle partitions: the run's (the larger of `spark.sql.shuffle.partitions` and, with AQE
//! coalescing, its initial partition count; Spark's 200 when unset), doubled when shuffle stages
//! spilled without skew or containers were killed in GPU shuffle stages; for large inputs and
//! shuffles the GPU model's initial count (T4 800, A100 400); at least one GPU batch per
//! partition of the largest GPU exchange. AQE starts from the same count.

use super::Rule;
use crate::tuner::Tuner;

const PARTITIONS: &str = "spark.sql.shuffle.partitions";
const INITIAL: &str = "spark.sql.adaptive.coalescePartitions.initialPartitionNum";

pub(crate) struct ShufflePartitions;

impl Rule for ShufflePartitions {
    fn name(&self) -> &'static str {
        "shuffle_partitions"
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        // (as the reference reads them: the comment for `false` only, AQE on for `true` only)
        let lower = |t: &Tuner<'_>, k: &str| {
            t.get(k)
                .map(|v| v.to_ascii_lowercase())
                .unwrap_or_else(|| "true".into())
        };
        let aqe = lower(t, "spark.sql.adaptive.enabled");
        if aqe == "false" {
            t.comment("'spark.sql.adaptive.enabled' should be enabled for better performance.");
        }
        let coalescing =
            aqe == "true" && lower(t, "spark.sql.adaptive.coalescePartitions.enabled") == "true";
        let base = [
            t.source_int(PARTITIONS),
            coalescing.then(|| t.source_int(INITIAL)).flatten(),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(200);
        let (mut parts, mut why) = after_spills(t, base);
        // YARN killed executors' containers in GPU shuffle stages: more, smaller partitions
        if t.inp.shuffle_stages_with_container_oom > 0 {
            parts = parts.max(base * 2);
            why = "doubled: containers were killed in GPU shuffle stages".into();
            t.comment(
                "Shuffle partitions should be increased since task OOM occurred in shuffle stages.",
            );
        }
        // large inputs and shuffles: the GPU model's initial partition count when the run's is
        // at most 200
        if t.inp.large_io()
            && let Some(n) = t.worker.gpu.initial_partitions
            && t.source_int(INITIAL).unwrap_or(0) <= 200
            && n > parts
        {
            parts = n;
            why = format!(
                "large inputs and shuffles: the {} GPU's count",
                t.worker.gpu.name
            );
        }
        let cluster = t.executors.is_some();
        if coalescing && cluster {
            parts = exchange_bound(t, parts, &mut why);
        }
        t.set(PARTITIONS, parts, why);
        if coalescing && cluster {
            t.set(INITIAL, parts, "AQE starts from the shuffle partitions");
        }
    }
}

/// Doubled when shuffle stages spilled and none of them is skewed (more partitions would not
/// split a skewed key).
fn after_spills(t: &mut Tuner<'_>, base: i64) -> (i64, String) {
    let kept = "the run's shuffle partitions (Spark's 200 when unset)".to_string();
    let spilled = &t.inp.spilled_shuffle_stages;
    if spilled.is_empty() {
        return (base, kept);
    }
    if spilled.iter().any(|s| t.inp.skewed_stages.contains(s)) {
        t.comment(
            "Shuffle skew exists (when task's Shuffle Read Size > 3 * Avg Stage-level size) in\n\
             stages with spilling. Increasing shuffle partitions is not recommended in this\n\
             case since keys will still hash to the same task.",
        );
        return (base, kept);
    }
    t.comment("Shuffle partitions should be increased since spilling occurred in shuffle stages.");
    (
        base * 2,
        "doubled: shuffle stages spilled in the run".into(),
    )
}

/// At least one GPU batch per partition of the largest GPU exchange.
fn exchange_bound(t: &mut Tuner<'_>, parts: i64, why: &mut String) -> i64 {
    let Some(b) = t.inp.exchange_max_bytes else {
        return parts;
    };
    let batch = t
        .bytes("spark.rapids.sql.batchSizeBytes")
        .unwrap_or(super::batch::PROFILING_BATCH_BYTES)
        .max(1);
    let need = (b as f64 / batch as f64).ceil() as i64;
    if need <= parts {
        return parts;
    }
    t.comment(format!(
        "'{INITIAL}' adjusted from {parts} to {need} based on ColumnarExchange data size ({b} bytes) and GPU batch size ({batch} bytes)"
    ));
    *why = "one GPU batch per partition of the largest GPU exchange".into();
    need
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Inputs, Mode, Worker};

    fn parts(inp: &Inputs, w: &Worker) -> (Option<String>, Option<String>, Vec<String>) {
        let a = apply(&ShufflePartitions, Mode::Profiling, inp, w);
        let v = |k| a.value(k).map(String::from);
        (v(PARTITIONS), v(INITIAL), a.comments)
    }

    #[test]
    fn the_runs_partitions_doubled_after_spills_without_skew() {
        let w = Worker::default();
        let mut inp = run_with(4, 1, &[(INITIAL, "300")]);
        assert_eq!(parts(&inp, &w).0.as_deref(), Some("300"));
        inp.spilled_shuffle_stages = vec![2, 3];
        let (p, i, c) = parts(&inp, &w);
        assert_eq!((p.as_deref(), i.as_deref()), (Some("600"), Some("600")));
        assert!(c[0].starts_with("Shuffle partitions should be increased"));
        inp.skewed_stages.insert(3);
        let (p, _, c) = parts(&inp, &w);
        assert_eq!(p.as_deref(), Some("300"));
        assert!(c[0].starts_with("Shuffle skew exists"));
        // no AQE: the initial count is neither read nor set
        let inp = run_with(
            4,
            1,
            &[(INITIAL, "300"), ("spark.sql.adaptive.enabled", "false")],
        );
        let (p, i, _) = parts(&inp, &w);
        assert_eq!((p.as_deref(), i), (Some("200"), None));
    }

    /// A T4 target with large inputs and shuffles: 800 (the reference's T4 answers,
    /// tests/golden/target-cluster); an exchange of 3 x 2147483647 bytes needs 3 at least.
    #[test]
    fn the_gpu_model_and_the_exchange_bound_the_count() {
        let w = Worker {
            gpu: *crate::worker::gpu_model("t4").unwrap(),
            ..Default::default()
        };
        let mut inp = run_with(4, 1, &[]);
        inp.sql_io = vec![(1 << 20, 1 << 20)];
        assert_eq!(parts(&inp, &w).0.as_deref(), Some("800"));
        let mut inp = run_with(4, 1, &[(PARTITIONS, "2")]);
        inp.exchange_max_bytes = Some(3 * 2147483647);
        let (p, _, c) = parts(&inp, &Worker::default());
        assert_eq!(p.as_deref(), Some("3"));
        assert!(c[0].contains("adjusted from 2 to 3"), "{c:?}");
    }
}
