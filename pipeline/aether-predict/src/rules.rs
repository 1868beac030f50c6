//! AutoTuner rules both AutoTuners apply the same way (profiling on a GPU run, qualification on a
//! CPU run): each reads property values through `get` (a recommended value, else the run's) and
//! `source` (the run's only), and answers the properties to set and the reference's comments.

use crate::units::parse_bytes;

const KRYO_REGISTRATOR: &str = "com.nvidia.spark.rapids.GpuKryoRegistrator";
/// `KRYO_SERIALIZER_BUFFER`'s max in the tool's tuningConfigs.yaml.
const KRYO_BUFFER_MAX_MIB: i64 = 512;

/// What a rule decided: properties to set (in order), comments to add.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Outcome {
    pub sets: Vec<(String, String)>,
    pub comments: Vec<String>,
}

/// Class names of a comma-separated list property, trimmed, without blanks and repeats, in
/// order, with `class` appended when it is not there yet (`None`: nothing to add).
pub(crate) fn with_class(value: Option<&str>, class: &str) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for n in value.unwrap_or("").split(',').map(str::trim) {
        if !n.is_empty() && !names.contains(&n) {
            names.push(n);
        }
    }
    if names.contains(&class) {
        return None;
    }
    names.push(class);
    Some(names.join(","))
}

/// Kryo: the GPU registrator appended to the run's, and a buffer large enough for GPU batches.
/// `get` gives a recommended value, else the run's (not Spark's default).
pub(crate) fn kryo(get: impl Fn(&str) -> Option<String>) -> Outcome {
    let mut o = Outcome::default();
    if !get("spark.serializer")
        .is_some_and(|v| v.contains("org.apache.spark.serializer.KryoSerializer"))
    {
        return o;
    }
    if let Some(v) = with_class(get("spark.kryo.registrator").as_deref(), KRYO_REGISTRATOR) {
        o.sets.push(("spark.kryo.registrator".into(), v));
    }
    let buffer_mib = get("spark.kryoserializer.buffer.max")
        .and_then(|v| parse_bytes(&v, true))
        .map(|b| b >> 20)
        .unwrap_or(0);
    if buffer_mib < KRYO_BUFFER_MAX_MIB {
        o.sets.push((
            "spark.kryoserializer.buffer.max".into(),
            format!("{KRYO_BUFFER_MAX_MIB}m"),
        ));
    }
    o
}

/// PySpark workers on YARN / Kubernetes: the memory they take is reserved for them.
pub(crate) fn pyspark_resource(get: impl Fn(&str) -> Option<String>, master: &str) -> Outcome {
    let mut o = Outcome::default();
    if get("spark.executor.pyspark.memory")
        .and_then(|v| parse_bytes(&v, true))
        .is_some_and(|b| b > 0)
    {
        if master.contains("yarn") {
            o.sets.push(("spark.yarn.isPython".into(), "true".into()));
        } else if master.contains("k8s") {
            o.sets
                .push(("spark.kubernetes.resource.type".into(), "python".into()));
        }
    }
    o
}

/// Dynamic allocation on: the run's initial/min/max executors scaled by the ratio of its executor
/// cores (`spark.executor.cores`, else 1) to the GPU executor's `cores`, the executor count
/// following the initial one, then min <= initial <= max restored; each with the reference's
/// comment. `source` gives the run's values, `recommended` the values recommended so far.
pub(crate) fn dynamic_allocation(
    source: impl Fn(&str) -> Option<String>,
    recommended: impl Fn(&str) -> Option<String>,
    cores: i64,
) -> Outcome {
    const INITIAL: &str = "spark.dynamicAllocation.initialExecutors";
    const MIN: &str = "spark.dynamicAllocation.minExecutors";
    const MAX: &str = "spark.dynamicAllocation.maxExecutors";
    const INSTANCES: &str = "spark.executor.instances";
    let mut o = Outcome::default();
    let src_int = |k: &str| source(k).and_then(|v| v.trim().parse::<i64>().ok());
    let src_cores = src_int("spark.executor.cores").unwrap_or(1);
    if src_cores <= 0 || cores <= 0 {
        return o;
    }
    let ratio = src_cores as f64 / cores as f64;
    let scaled = |k: &str| src_int(k).map(|v| ((v as f64 * ratio).floor() as i64).max(1));
    // the values recommended so far, this rule's included
    let mut rec: std::collections::HashMap<&str, i64> = [INSTANCES, INITIAL, MIN, MAX]
        .into_iter()
        .filter_map(|k| Some((k, recommended(k)?.trim().parse::<i64>().ok()?)))
        .collect();
    fn set<'a>(
        o: &mut Outcome,
        rec: &mut std::collections::HashMap<&'a str, i64>,
        k: &'a str,
        v: i64,
    ) {
        rec.insert(k, v);
        o.sets.push((k.to_string(), v.to_string()));
    }
    let mut tuned: Vec<&str> = Vec::new();
    let changed = |k: &str, v: i64| src_int(k).filter(|s| *s > 0).is_some_and(|s| s != v);
    if let Some(v) = scaled(INITIAL) {
        let running = [INSTANCES, INITIAL, MIN]
            .iter()
            .filter_map(|k| rec.get(k).copied())
            .max();
        let value = match running {
            Some(r) if r > v => r,
            _ => {
                if changed(INITIAL, v) {
                    tuned.push(INITIAL);
                }
                v
            }
        };
        set(&mut o, &mut rec, INITIAL, value);
        set(&mut o, &mut rec, INSTANCES, value);
    }
    for k in [MIN, MAX] {
        if let Some(v) = scaled(k) {
            if changed(k, v) {
                tuned.push(k);
            }
            set(&mut o, &mut rec, k, v);
        }
    }
    let mut fixed: Vec<String> = Vec::new();
    if let (Some(&initial), Some(&max)) = (rec.get(INITIAL), rec.get(MAX))
        && initial > max
    {
        set(&mut o, &mut rec, INITIAL, max);
        set(&mut o, &mut rec, INSTANCES, max);
        fixed.push(format!("'{INITIAL}' adjusted from {initial} to {max}"));
        fixed.push(format!("'{INSTANCES}' adjusted from {initial} to {max}"));
    }
    if let (Some(&min), Some(&max)) = (rec.get(MIN), rec.get(MAX))
        && min > max
    {
        set(&mut o, &mut rec, MIN, max);
        fixed.push(format!("'{MIN}' adjusted from {min} to {max}"));
    }
    if let (Some(&min), Some(&initial)) = (rec.get(MIN), rec.get(INITIAL))
        && min > initial
    {
        set(&mut o, &mut rec, INITIAL, min);
        set(&mut o, &mut rec, INSTANCES, min);
        fixed.push(format!("'{INITIAL}' adjusted from {initial} to {min}"));
        fixed.push(format!("'{INSTANCES}' adjusted from {initial} to {min}"));
    }
    if !fixed.is_empty() {
        o.comments.push(format!(
            "Adjusted dynamic allocation properties to enforce\nminExecutors <= initialExecutors <= maxExecutors:\n{}.",
            fixed.join("; ")
        ));
    }
    if !tuned.is_empty() {
        o.comments.push(format!(
            "Tuned dynamic allocation properties ({})\nbased on cores ratio (source: {src_cores} cores, target: {cores} cores).",
            tuned.join(", ")
        ));
    }
    o
}

/// The same Parquet files read again and again (fewer than half the scans' locations distinct,
/// more than 100 GiB read from locations scanned more than once): the reference's file cache
/// rule (its recommended value, `false`, is the tuning config's default; the comment says when
/// to turn it on). `reads`: (location, a Parquet scan, bytes of files read) per scan.
pub(crate) fn file_cache(reads: &[(String, bool, i64)]) -> Outcome {
    let mut o = Outcome::default();
    if reads.is_empty() {
        return o;
    }
    let mut by_location: std::collections::BTreeMap<&str, (usize, bool, i64)> = Default::default();
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
    if distinct_pct < 50.0 && redundant > 100 << 30 {
        o.sets
            .push(("spark.rapids.filecache.enabled".into(), "false".into()));
        o.comments.push(
            "Enable file cache only if Spark local disks bandwidth is > 1 GB/s and you have sufficient disk space available to fit both cache and normal Spark temporary data.".into(),
        );
    }
    o
}

/// Where a scan reads, as the reference's data_source_information writes it: a CPU scan's
/// `Location` (`InMemoryFileIndex[…]`), a GPU scan's paths inside it.
pub(crate) fn scan_location(node: &str, desc: &str) -> Option<String> {
    let rest = &desc[desc.find("Location: ")? + "Location: ".len()..];
    let open = rest.find('[')?;
    let close = open + rest[open..].find(']')?;
    Some(if node.trim_start().starts_with("Gpu") {
        rest[open + 1..close].to_string()
    } else {
        rest[..=close].to_string()
    })
}
