//! Python workers that ran out of memory, on a Spark version whose procfs metrics the reference
//! does not trust (before 3.5.7, and 4.0.0): it says their memory peaks were not used (aether
//! does not keep them).

use super::Rule;
use crate::tuner::Tuner;
use crate::version;

pub(crate) struct PythonProcfs;

impl Rule for PythonProcfs {
    fn name(&self) -> &'static str {
        "python_procfs"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.inp.python_oom
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        let v = &t.inp.spark_version;
        let trusted = (version::at_least(v, &[3, 5, 7]) && !version::at_least(v, &[4, 0, 0]))
            || version::at_least(v, &[4, 0, 1]);
        if !trusted {
            let c = format!(
                "ProcessTreePythonVMemory evidence was not used because Spark version {v} can report unreliable procfs metrics."
            );
            t.comment(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    #[test]
    fn procfs_trusted_from_3_5_7_and_after_4_0_0() {
        let w = Worker::default();
        let mut inp = run_with(4, 1, &[]);
        inp.python_oom = true;
        for (v, n) in [("3.5.1", 1), ("3.5.7", 0), ("4.0.0", 1), ("4.0.1", 0)] {
            inp.spark_version = v.into();
            assert_eq!(
                apply(&PythonProcfs, Mode::Profiling, &inp, &w)
                    .comments
                    .len(),
                n,
                "{v}"
            );
        }
    }
}
