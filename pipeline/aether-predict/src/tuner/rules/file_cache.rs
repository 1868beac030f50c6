//! The same Parquet files read again and again (fewer than half the scans' locations distinct,
//! more than 100 GiB read from locations scanned more than once): the reference's file cache
//! rule (its value, `false`, is the tuning config's default; the comment says when to turn it
//! on).

use std::collections::BTreeMap;

use super::Rule;
use crate::tuner::Tuner;

pub(crate) struct FileCache;

/// Whether scans `reads` ((location, a Parquet scan, bytes read) each) re-read the same files.
fn rereads(reads: &[(String, bool, i64)]) -> bool {
    if reads.is_empty() {
        return false;
    }
    let mut by_location: BTreeMap<&str, (usize, bool, i64)> = BTreeMap::new();
    for (loc, parquet, bytes) in reads {
        let e = by_location.entry(loc.as_str()).or_default();
        e.0 += 1;
        e.1 |= *parquet;
        e.2 = e.2.saturating_add(*bytes);
    }
    let distinct_pct = 100.0 * by_location.len() as f64 / reads.len() as f64;
    let redundant: i64 = by_location
        .values()
        .filter(|(n, parquet, _)| *n > 1 && *parquet)
        .map(|(_, _, b)| *b)
        .sum();
    distinct_pct < 50.0 && redundant > 100 << 30
}

impl Rule for FileCache {
    fn name(&self) -> &'static str {
        "file_cache"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        rereads(&t.inp.file_reads)
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        t.set(
            "spark.rapids.filecache.enabled",
            "false",
            "the same Parquet files are read again and again: the file cache can serve them (turn it on only with local disks over 1 GB/s and room for it)",
        );
        t.comment(
            "Enable file cache only if Spark local disks bandwidth is > 1 GB/s and you have sufficient disk space available to fit both cache and normal Spark temporary data.",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rereading_over_100_gib() {
        let scan = |loc: &str, gib: i64| (loc.to_string(), true, gib << 30);
        assert!(rereads(&[
            scan("a", 60),
            scan("a", 60),
            scan("b", 1),
            scan("a", 1),
            scan("a", 1)
        ]));
        // half the locations distinct: no
        assert!(!rereads(&[
            scan("a", 60),
            scan("a", 60),
            scan("b", 1),
            scan("c", 1)
        ]));
        // 100 GiB exactly: no
        assert!(!rereads(&[scan("a", 50), scan("a", 50), scan("a", 0)]));
        assert!(!rereads(&[]));
    }
}
