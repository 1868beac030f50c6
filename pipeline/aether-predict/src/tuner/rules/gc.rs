//! Very high JVM GC time (over 30 % of CPU time, the mean over SQLs): other garbage collectors.

use super::Rule;
use crate::tuner::Tuner;

pub(crate) struct Gc;

impl Rule for Gc {
    fn name(&self) -> &'static str {
        "gc"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.inp.gc_ratio.is_some_and(|r| r > 0.3)
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        t.comment(
            "Average JVM GC time is very high. Other Garbage Collectors can be used for better performance.",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    /// Variant gc-sub-ms: a NaN ratio (no GC, no CPU) gives no comment, as the reference's.
    #[test]
    fn over_thirty_percent() {
        let w = Worker::default();
        let mut inp = run_with(4, 1, &[]);
        for (r, n) in [(0.31, 1), (0.3, 0), (f64::NAN, 0), (f64::INFINITY, 1)] {
            inp.gc_ratio = Some(r);
            assert_eq!(
                apply(&Gc, Mode::Profiling, &inp, &w).comments.len(),
                n,
                "{r}"
            );
        }
    }
}
