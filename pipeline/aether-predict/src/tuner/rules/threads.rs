//! Thread pools for the executor's cores: the multithreaded shuffle's reader and writer threads
//! (none under 4 cores), the multithreaded file reader's (cloud storage), and for 16 cores or
//! more a wait that lets the Parquet reader combine small files.

use super::Rule;
use crate::tuner::Tuner;

pub(crate) struct Threads;

/// Shuffle reader/writer threads for an executor's cores (none under 4 cores).
pub(crate) fn shuffle_threads(cores: i64) -> Option<i64> {
    match cores {
        c if c < 4 => None,
        c if c < 16 => Some(20),
        c if c < 20 => Some(28),
        c => Some((c as f64 * 1.5) as i64),
    }
}

/// Multithreaded file-reading threads for an executor's cores (cloud storage).
pub(crate) fn read_threads(cores: i64) -> i64 {
    match cores {
        c if c < 8 => 20.max(c),
        c if c < 16 => 40.max(c),
        c if c < 20 => 80.max(c),
        c => (2 * c).clamp(20, 1000),
    }
}

impl Rule for Threads {
    fn name(&self) -> &'static str {
        "threads"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        t.executors.is_some()
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        let c = t.cores;
        if let Some(n) = shuffle_threads(c) {
            for k in [
                "spark.rapids.shuffle.multiThreaded.reader.threads",
                "spark.rapids.shuffle.multiThreaded.writer.threads",
            ] {
                t.set(k, n, "shuffle threads for the executor's cores");
            }
        }
        t.set(
            "spark.rapids.sql.multiThreadedRead.numThreads",
            read_threads(c),
            "file-reading threads for the executor's cores (cloud storage)",
        );
        if c >= 16 {
            t.set(
                "spark.rapids.sql.format.parquet.multithreaded.combine.waitTime",
                1000,
                "lets the reader combine small Parquet files",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's steps (docs/reference/autotuner.md §5.15).
    #[test]
    fn threads_by_cores() {
        let shuffle: Vec<Option<i64>> = [2, 4, 15, 16, 19, 20, 32].map(shuffle_threads).to_vec();
        assert_eq!(
            shuffle,
            [
                None,
                Some(20),
                Some(20),
                Some(28),
                Some(28),
                Some(30),
                Some(48)
            ]
        );
        let read: Vec<i64> = [4, 8, 16, 20, 48, 800].map(read_threads).to_vec();
        assert_eq!(read, [20, 40, 80, 40, 96, 1000]);
    }
}
