//! Dynamic allocation on: the run's initial/min/max executors scaled by the ratio of its
//! executor cores (`spark.executor.cores`, else 1) to the GPU executor's, the executor count
//! following the initial one, then min <= initial <= max restored, each with the reference's
//! comment. Off: the run's dynamic-allocation counts are removed.

use std::collections::HashMap;

use super::Rule;
use crate::tuner::Tuner;

const INITIAL: &str = "spark.dynamicAllocation.initialExecutors";
const MIN: &str = "spark.dynamicAllocation.minExecutors";
const MAX: &str = "spark.dynamicAllocation.maxExecutors";
const INSTANCES: &str = "spark.executor.instances";
const WHY: &str = "dynamic allocation: the run's executors scaled by its cores over the GPU executor's (min <= initial <= max)";

pub(crate) struct DynamicAllocation;

impl Rule for DynamicAllocation {
    fn name(&self) -> &'static str {
        "dynamic_allocation"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.executors.is_some()
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        if !t.is_true("spark.dynamicAllocation.enabled") {
            for k in [INITIAL, MIN, MAX] {
                if t.source(k).is_some() {
                    t.remove(k);
                }
            }
            return;
        }
        let src_cores = t.source_int("spark.executor.cores").unwrap_or(1);
        if src_cores <= 0 || t.cores <= 0 {
            return;
        }
        let ratio = src_cores as f64 / t.cores as f64;
        let scaled = |t: &Tuner<'_>, k: &str| {
            t.source_int(k)
                .map(|v| ((v as f64 * ratio).floor() as i64).max(1))
        };
        // the values recommended so far, this rule's included
        let mut rec: HashMap<&'static str, i64> = [INSTANCES, INITIAL, MIN, MAX]
            .into_iter()
            .filter_map(|k| Some((k, t.recommended(k)?.trim().parse::<i64>().ok()?)))
            .collect();
        let changed = |t: &Tuner<'_>, k: &str, v: i64| {
            t.source_int(k).filter(|s| *s > 0).is_some_and(|s| s != v)
        };
        let mut tuned: Vec<&str> = Vec::new();
        if let Some(v) = scaled(t, INITIAL) {
            let running = [INSTANCES, INITIAL, MIN]
                .iter()
                .filter_map(|k| rec.get(k).copied())
                .max();
            let value = match running {
                Some(r) if r > v => r,
                _ => {
                    if changed(t, INITIAL, v) {
                        tuned.push(INITIAL);
                    }
                    v
                }
            };
            put(t, &mut rec, INITIAL, value);
            put(t, &mut rec, INSTANCES, value);
        }
        for k in [MIN, MAX] {
            if let Some(v) = scaled(t, k) {
                if changed(t, k, v) {
                    tuned.push(k);
                }
                put(t, &mut rec, k, v);
            }
        }
        let fixed = restore_order(t, &mut rec);
        if !fixed.is_empty() {
            t.comment(format!(
                "Adjusted dynamic allocation properties to enforce\nminExecutors <= initialExecutors <= maxExecutors:\n{}.",
                fixed.join("; ")
            ));
        }
        if !tuned.is_empty() {
            t.comment(format!(
                "Tuned dynamic allocation properties ({})\nbased on cores ratio (source: {src_cores} cores, target: {} cores).",
                tuned.join(", "),
                t.cores
            ));
        }
    }
}

/// Recommend `v` for `k`, and remember it.
fn put(t: &mut Tuner<'_>, rec: &mut HashMap<&'static str, i64>, k: &'static str, v: i64) {
    rec.insert(k, v);
    t.set(k, v, WHY);
}

/// min <= initial <= max, the executor count following the initial one; what was adjusted.
fn restore_order(t: &mut Tuner<'_>, rec: &mut HashMap<&'static str, i64>) -> Vec<String> {
    let mut fixed: Vec<String> = Vec::new();
    let set = put;
    if let (Some(&initial), Some(&max)) = (rec.get(INITIAL), rec.get(MAX))
        && initial > max
    {
        set(t, rec, INITIAL, max);
        set(t, rec, INSTANCES, max);
        fixed.push(format!("'{INITIAL}' adjusted from {initial} to {max}"));
        fixed.push(format!("'{INSTANCES}' adjusted from {initial} to {max}"));
    }
    if let (Some(&min), Some(&max)) = (rec.get(MIN), rec.get(MAX))
        && min > max
    {
        set(t, rec, MIN, max);
        fixed.push(format!("'{MIN}' adjusted from {min} to {max}"));
    }
    if let (Some(&min), Some(&initial)) = (rec.get(MIN), rec.get(INITIAL))
        && min > initial
    {
        set(t, rec, INITIAL, min);
        set(t, rec, INSTANCES, min);
        fixed.push(format!("'{INITIAL}' adjusted from {initial} to {min}"));
        fixed.push(format!("'{INSTANCES}' adjusted from {initial} to {min}"));
    }
    fixed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    /// 4-core CPU executors onto 16-core GPU ones: a quarter of each count (at least 1); min 8
    /// over max 3 becomes 3 with the reference's comment.
    #[test]
    fn counts_scale_by_the_cores_ratio_and_keep_their_order() {
        let w = Worker::default();
        let inp = run_with(
            4,
            10,
            &[
                ("spark.dynamicAllocation.enabled", "true"),
                ("spark.executor.cores", "4"),
                (INITIAL, "8"),
                (MIN, "40"),
                (MAX, "12"),
            ],
        );
        let a = apply(&DynamicAllocation, Mode::Profiling, &inp, &w);
        assert_eq!(a.value(INITIAL), Some("3"));
        assert_eq!(a.value(INSTANCES), Some("3"));
        assert_eq!((a.value(MIN), a.value(MAX)), (Some("3"), Some("3")));
        assert!(a.comments.iter().any(|c| c.contains("'spark.dynamicAllocation.minExecutors' adjusted from 10 to 3")), "{:?}", a.comments);
        assert!(
            a.comments
                .iter()
                .any(|c| c.contains("source: 4 cores, target: 16 cores"))
        );
        // off: the run's counts removed
        let off = run_with(4, 10, &[(MIN, "2")]);
        let a = apply(&DynamicAllocation, Mode::Qualification, &off, &w);
        assert_eq!(a.sets.get(MIN), Some(&None));
    }
}
