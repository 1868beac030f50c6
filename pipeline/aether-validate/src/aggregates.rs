//! Layer 2, the aggregates: the row count and, per column, the statistics of its type (count,
//! nulls, min, max, exact sums, mean, standard deviation, approximate distinct count), with the
//! deviation in percent; and the key found from them when none is given.

use std::collections::HashMap;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::prelude::SessionContext;

use crate::{
    Builder, CheckKind, Options, Result, Verdict, aliased, ident, is_decimal, is_float, is_int,
    is_nested, is_string, is_temporal, one_row, pct, q,
};

/// A column's statistics on one side, as text (NULL: None).
type Stats = HashMap<String, Vec<Option<String>>>;

/// The statistics computed per column, in order, with how they compare.
/// A statistic: its name, its SQL, how the two sides compare.
type Stat = (&'static str, String, Cmp);

fn stat_exprs(f: &Field, o: &Options) -> Vec<Stat> {
    let c = ident(f.name());
    let t = f.data_type();
    let mut v: Vec<Stat> = vec![("non-null count", format!("COUNT({c})"), Cmp::Exact)];
    if is_nested(t) {
        return v;
    }
    let tol = o.tol(t);
    if is_float(t) {
        let x = format!("CAST({c} AS DOUBLE)");
        let finite = format!("(NOT isnan({x}) AND abs({x}) < 1e27)");
        v.push((
            "NaN count",
            format!("SUM(CASE WHEN isnan({x}) THEN 1 ELSE 0 END)"),
            Cmp::Exact,
        ));
        v.push((
            "min",
            format!("MIN(CASE WHEN NOT isnan({x}) THEN {x} END)"),
            Cmp::Float(tol),
        ));
        v.push((
            "max",
            format!("MAX(CASE WHEN NOT isnan({x}) THEN {x} END)"),
            Cmp::Float(tol),
        ));
        // a sum that does not depend on the order of addition; its tolerance scales with Σ|x|
        v.push((
            "sum",
            format!(
                "CAST(SUM(CASE WHEN {finite} THEN CAST({x} AS DECIMAL(38,10)) END) AS VARCHAR)"
            ),
            Cmp::Sum(tol),
        ));
        v.push((
            "sum of |x|",
            format!(
                "CAST(SUM(CASE WHEN {finite} THEN CAST(abs({x}) AS DECIMAL(38,10)) END) AS VARCHAR)"
            ),
            Cmp::Float(tol),
        ));
        v.push((
            "mean",
            format!("AVG(CASE WHEN NOT isnan({x}) THEN {x} END)"),
            Cmp::Float(tol.max(1e-9)),
        ));
        v.push((
            "stddev",
            format!("STDDEV(CASE WHEN NOT isnan({x}) THEN {x} END)"),
            Cmp::Float(tol.max(1e-9)),
        ));
    } else if is_int(t) || is_decimal(t) {
        v.push(("min", format!("CAST(MIN({c}) AS VARCHAR)"), Cmp::Exact));
        v.push(("max", format!("CAST(MAX({c}) AS VARCHAR)"), Cmp::Exact));
        let sum = if is_int(t) {
            // integers summed as 38-digit decimals: no silent wrap-around
            format!("CAST(SUM(CAST({c} AS DECIMAL(38,0))) AS VARCHAR)")
        } else {
            format!("CAST(SUM({c}) AS VARCHAR)")
        };
        v.push(("sum", sum, Cmp::Exact));
        v.push((
            "mean",
            format!("AVG(CAST({c} AS DOUBLE))"),
            Cmp::Float(1e-9),
        ));
        v.push((
            "stddev",
            format!("STDDEV(CAST({c} AS DOUBLE))"),
            Cmp::Float(1e-9),
        ));
    } else if is_string(t) {
        v.push(("min", format!("MIN(CAST({c} AS VARCHAR))"), Cmp::Exact));
        v.push(("max", format!("MAX(CAST({c} AS VARCHAR))"), Cmp::Exact));
        v.push((
            "empty strings",
            format!("SUM(CASE WHEN CAST({c} AS VARCHAR) = '' THEN 1 ELSE 0 END)"),
            Cmp::Exact,
        ));
        v.push((
            "total length",
            format!("SUM(CAST(character_length(CAST({c} AS VARCHAR)) AS BIGINT))"),
            Cmp::Exact,
        ));
    } else if is_temporal(t) {
        v.push(("min", format!("CAST(MIN({c}) AS VARCHAR)"), Cmp::Exact));
        v.push(("max", format!("CAST(MAX({c}) AS VARCHAR)"), Cmp::Exact));
        if matches!(
            t,
            DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64
        ) {
            v.push((
                "mean (epoch s)",
                format!("AVG(CAST(to_unixtime({c}) AS DOUBLE))"),
                Cmp::Float(1e-12),
            ));
        }
    } else if matches!(t, DataType::Boolean) {
        v.push((
            "true count",
            format!("SUM(CASE WHEN {c} THEN 1 ELSE 0 END)"),
            Cmp::Exact,
        ));
    }
    if !is_float(t) && !matches!(t, DataType::Boolean) {
        v.push((
            "approx distinct",
            format!("approx_distinct({c})"),
            Cmp::Approx,
        ));
    }
    v
}

#[derive(Clone, Copy, Debug)]
enum Cmp {
    Exact,
    /// Floats within a relative tolerance.
    Float(f64),
    /// A float column's sum, within tolerance × Σ|x| (the next statistic).
    Sum(f64),
    /// An estimate: a difference is a warning.
    Approx,
}

pub(crate) async fn aggregates(
    ctx: &SessionContext,
    common: &[Field],
    o: &Options,
    b: &mut Builder,
) -> Result<(u64, u64, Stats)> {
    let aggs = o.checks.contains(&CheckKind::Aggregates);
    let mut exprs = vec!["COUNT(*)".to_string()];
    let mut plan: Vec<(&Field, Vec<Stat>)> = Vec::new();
    if aggs {
        for f in common {
            let s = stat_exprs(f, o);
            exprs.extend(s.iter().map(|(_, e, _)| e.clone()));
            plan.push((f, s));
        }
    }
    let select = aliased(&exprs);
    let cpu = one_row(ctx, &format!("SELECT {select} FROM cpu")).await?;
    let gpu = one_row(ctx, &format!("SELECT {select} FROM gpu")).await?;
    let n = |v: &Option<String>| {
        v.as_deref()
            .and_then(|x| x.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (cr, gr) = (n(&cpu[0]), n(&gpu[0]));
    b.gate(
        "aggregates",
        "row count",
        None,
        cr,
        gr,
        pct(cr as f64, gr as f64),
        cr == gr,
        Verdict::Fail,
        || format!("{} rows on the CPU, {} on the GPU", cr, gr),
    );
    let mut stats: Stats = HashMap::new();
    let mut i = 1;
    for (f, s) in &plan {
        let name = f.name();
        let cvals: Vec<Option<String>> = cpu[i..i + s.len()].to_vec();
        let gvals: Vec<Option<String>> = gpu[i..i + s.len()].to_vec();
        for (j, (stat, _, cmp)) in s.iter().enumerate() {
            let (c, g) = (&cvals[j], &gvals[j]);
            let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "NULL".into());
            let num = |v: &Option<String>| v.as_deref().and_then(|x| x.parse::<f64>().ok());
            let (cn, gn) = (num(c), num(g));
            let dev = match (cn, gn) {
                (Some(a), Some(b)) => pct(a, b),
                _ => None,
            };
            let within = |tol: f64, scale: f64| match (cn, gn) {
                (Some(a), Some(b)) => {
                    (a - b).abs() <= tol * scale + o.abs_tol || (a.is_nan() && b.is_nan())
                }
                _ => c == g,
            };
            let verdict = match cmp {
                Cmp::Exact => c == g,
                Cmp::Float(tol) => {
                    within(*tol, cn.unwrap_or(0.0).abs().max(gn.unwrap_or(0.0).abs()))
                }
                Cmp::Sum(tol) => {
                    let scale = num(&cvals[j + 1])
                        .unwrap_or(0.0)
                        .max(num(&gvals[j + 1]).unwrap_or(0.0));
                    within(*tol, scale)
                }
                Cmp::Approx => c == g,
            };
            let verdict = match (verdict, cmp) {
                (true, _) => Verdict::Pass,
                (false, Cmp::Approx) => Verdict::Warn,
                (false, _) => Verdict::Fail,
            };
            let detail = if verdict == Verdict::Pass {
                String::new()
            } else {
                format!(
                    "{stat} of column {name}: CPU {} vs GPU {}",
                    show(c),
                    show(g)
                )
            };
            b.add(
                "aggregates",
                stat,
                Some(name),
                show(c),
                show(g),
                dev,
                verdict,
                detail,
            );
            if *stat == "non-null count" {
                let nulls = |v: &Option<String>, rows: u64| rows.saturating_sub(n(v));
                let (cnul, gnul) = (nulls(c, cr), nulls(g, gr));
                b.gate(
                    "aggregates",
                    "nulls",
                    Some(name),
                    cnul,
                    gnul,
                    pct(cnul as f64, gnul as f64),
                    cnul == gnul,
                    Verdict::Fail,
                    || format!("column {name} has {cnul} nulls on the CPU, {gnul} on the GPU"),
                );
            }
        }
        stats.insert(name.to_string(), cvals);
        i += s.len();
    }
    Ok((cr, gr, stats))
}

/// A unique, never-null, flat column of the CPU output (checked exactly), preferring id-like
/// names; none when there is no such column.
pub(crate) async fn find_key(
    ctx: &SessionContext,
    common: &[Field],
    stats: &Stats,
    rows: u64,
    memory_mb: usize,
) -> Result<Vec<String>> {
    if rows == 0 {
        return Ok(Vec::new());
    }
    let mut cands: Vec<&Field> = common
        .iter()
        .filter(|f| {
            let t = f.data_type();
            (is_int(t) || is_string(t) || is_decimal(t))
                && stats.get(f.name()).is_some_and(|s| {
                    s.first()
                        .cloned()
                        .flatten()
                        .and_then(|x| x.parse::<u64>().ok())
                        == Some(rows)
                        && s.last()
                            .cloned()
                            .flatten()
                            .and_then(|x| x.parse::<f64>().ok())
                            .is_some_and(|d| d >= rows as f64 * 0.97)
                })
        })
        .collect();
    let score = |f: &Field| {
        let n = f.name().to_ascii_lowercase();
        if n == "id" || n.ends_with("_id") || n.ends_with("key") {
            0
        } else {
            1
        }
    };
    cands.sort_by_key(|f| score(f));
    for f in cands.into_iter().take(3) {
        let range = stats.get(f.name()).and_then(|s| int_range(f, s));
        let check = range.map_or(RangeCheck::Count, |(min, max)| {
            by_range(min, max, rows, memory_mb)
        });
        let unique = match (check, range) {
            (RangeCheck::TooFewValues, _) => false,
            (RangeCheck::Bitmap, Some((min, max))) => distinct_ints(ctx, f, min, max).await?,
            _ => {
                let c = ident(f.name());
                let d = one_row(ctx, &format!("SELECT COUNT(DISTINCT {c}) FROM cpu")).await?;
                d[0].as_deref().and_then(|x| x.parse::<u64>().ok()) == Some(rows)
            }
        };
        if unique {
            return Ok(vec![f.name().to_string()]);
        }
    }
    Ok(Vec::new())
}

/// How an integer key candidate with values in `min..=max` is checked unique.
#[derive(Debug, PartialEq)]
enum RangeCheck {
    /// The range holds fewer values than there are rows: some repeat.
    TooFewValues,
    /// A bitmap of the range fits a quarter of the memory.
    Bitmap,
    /// Neither: `COUNT(DISTINCT)`.
    Count,
}

fn by_range(min: i64, max: i64, rows: u64, memory_mb: usize) -> RangeCheck {
    // (in 128 bits: the range of two 64-bit values overflows 64)
    let values = max as i128 - min as i128 + 1;
    if values < rows as i128 {
        RangeCheck::TooFewValues
    } else if values <= (memory_mb as i128) << 21 {
        RangeCheck::Bitmap
    } else {
        RangeCheck::Count
    }
}

/// An integer column's (min, max) from its statistics (non-null count, min, max, …), when both
/// fit a 64-bit signed integer.
fn int_range(f: &Field, s: &[Option<String>]) -> Option<(i64, i64)> {
    if !is_int(f.data_type()) {
        return None;
    }
    let v = |i: usize| s.get(i).cloned().flatten()?.parse::<i64>().ok();
    Some((v(1)?, v(2)?))
}

/// Whether the non-null values of an integer column of the CPU output, all within
/// `min..=max`, are all distinct: one bit per possible value, stopping at the first repeat
/// (instead of a hash set of every value).
async fn distinct_ints(ctx: &SessionContext, f: &Field, min: i64, max: i64) -> Result<bool> {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::Int64Type;
    use futures::StreamExt;
    let c = ident(f.name());
    let mut s = ctx
        .sql(&format!(
            "SELECT CAST({c} AS BIGINT) FROM cpu WHERE {c} IS NOT NULL"
        ))
        .await
        .map_err(q)?
        .execute_stream()
        .await
        .map_err(q)?;
    let span = (max as i128 - min as i128 + 1) as usize;
    let mut bits = vec![0u64; span.div_ceil(64)];
    while let Some(batch) = s.next().await {
        let batch = batch.map_err(q)?;
        let a = batch.column(0).as_primitive::<Int64Type>();
        for &v in a.values().iter() {
            // (the statistics bound every value; one outside means they were stale: not unique)
            let Some(i) = v
                .checked_sub(min)
                .and_then(|i| usize::try_from(i).ok())
                .filter(|i| *i < span)
            else {
                return Ok(false);
            };
            let (w, m) = (i / 64, 1u64 << (i % 64));
            if bits[w] & m != 0 {
                return Ok(false);
            }
            bits[w] |= m;
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::Schema;
    use std::sync::Arc;

    /// The way a key is checked, from its range, the rows and the memory (no overflow at the
    /// extremes of 64 bits).
    #[test]
    fn range_decides_the_check() {
        assert_eq!(by_range(0, 8, 10, 512), RangeCheck::TooFewValues);
        assert_eq!(by_range(0, 9, 10, 512), RangeCheck::Bitmap);
        assert_eq!(by_range(-5, (512 << 21) - 6, 10, 512), RangeCheck::Bitmap);
        assert_eq!(by_range(-5, (512 << 21) - 5, 10, 512), RangeCheck::Count);
        assert_eq!(by_range(i64::MIN, i64::MAX, 10, 512), RangeCheck::Count);
        assert_eq!(by_range(i64::MAX, i64::MAX, 1, 512), RangeCheck::Bitmap);
    }

    /// The bitmap test of a key tells the truth on distinct values, on a repeat (also across
    /// batches), and when a value lies outside the range the statistics gave.
    #[test]
    fn distinct_ints_finds_repeats() {
        let field = Field::new("id", DataType::Int64, true);
        let schema = Arc::new(Schema::new(vec![field.clone()]));
        let check = |batches: Vec<Vec<Option<i64>>>, min: i64, max: i64| {
            let batches = batches
                .into_iter()
                .map(|v| {
                    RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(v))])
                        .unwrap()
                })
                .collect();
            let ctx = SessionContext::new();
            let t =
                datafusion::datasource::MemTable::try_new(schema.clone(), vec![batches]).unwrap();
            ctx.register_table("cpu", Arc::new(t)).unwrap();
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(distinct_ints(&ctx, &field, min, max)).unwrap()
        };
        let distinct = vec![
            vec![Some(-5), Some(3), None],
            vec![Some(63), Some(64), None],
        ];
        assert!(check(distinct, -5, 64));
        let repeat = vec![vec![Some(-5), Some(64)], vec![Some(7), Some(64)]];
        assert!(!check(repeat, -5, 64));
        assert!(
            !check(vec![vec![Some(1), Some(99)]], 1, 10),
            "99 is past max"
        );
        assert!(check(
            vec![vec![Some(i64::MIN), Some(i64::MIN + 1)]],
            i64::MIN,
            i64::MIN + 1
        ));
    }
}
