//! Layer 4, the distribution: per numeric column the two-sample Kolmogorov–Smirnov statistic D
//! (computed exactly: both sides' values sorted in SQL and walked together) and its p-value,
//! with the asymptotic Kolmogorov distribution and Stephens' small-sample correction of the
//! effective size. D = 0 (the usual case here) gives p = 1 at once.

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Field;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use crate::{Builder, Error, Result, Verdict, ident, one_row, q};

/// `Q_KS(λ) = 2 Σ_{k≥1} (-1)^{k-1} exp(-2 k² λ²)`: the probability that the Kolmogorov
/// statistic scaled by √n exceeds λ.
fn q_ks(lambda: f64) -> f64 {
    if lambda < 0.2 {
        // the series converges slowly here and its value is 1 to double precision
        return 1.0;
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for k in 1..=100 {
        let term = (-2.0 * (k as f64).powi(2) * lambda * lambda).exp();
        sum += sign * term;
        if term < 1e-17 {
            break;
        }
        sign = -sign;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// The p-value of D for samples of `n1` and `n2` values.
pub fn p_value(d: f64, n1: u64, n2: u64) -> f64 {
    if d <= 0.0 || n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let (a, b) = (n1 as f64, n2 as f64);
    let en = (a * b / (a + b)).sqrt();
    q_ks((en + 0.12 + 0.11 / en) * d)
}

/// A sorted stream of doubles, read value by value.
struct Sorted {
    s: datafusion::physical_plan::SendableRecordBatchStream,
    batch: Option<datafusion::arrow::array::Float64Array>,
    i: usize,
}

impl Sorted {
    fn new(s: datafusion::physical_plan::SendableRecordBatchStream) -> Self {
        Sorted {
            s,
            batch: None,
            i: 0,
        }
    }

    /// The next value, without taking it; `None` at the end.
    async fn peek(&mut self) -> Result<Option<f64>> {
        loop {
            if let Some(a) = &self.batch
                && self.i < a.len()
            {
                return Ok(Some(a.value(self.i)));
            }
            match self.s.next().await {
                None => return Ok(None),
                Some(b) => {
                    let b = b.map_err(q)?;
                    self.batch = Some(
                        b.column(0)
                            .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                            .clone(),
                    );
                    self.i = 0;
                }
            }
        }
    }

    /// Take every next value equal to `v`: how many.
    async fn take_equal(&mut self, v: f64) -> Result<u64> {
        let mut n = 0;
        while let Some(x) = self.peek().await? {
            if x != v {
                break;
            }
            self.i += 1;
            n += 1;
        }
        Ok(n)
    }
}

/// The KS row of a column whose values are known to be the same multiset on both sides (every
/// row hashed alike, floats to the tolerance): D = 0 and p = 1, without sorting.
pub(crate) fn same_distribution(f: &Field, b: &mut Builder) {
    ks_row(
        f,
        0.0,
        p_value(0.0, 1, 1),
        "not sorted: every row hashes alike (floats to the tolerance), so the column's values \
         are the same multiset on both sides",
        b,
    );
}

/// A column's KS row: a difference only when it is both unlikely by chance and not negligible
/// (`pass_note`: the detail when it passes).
fn ks_row(f: &Field, d: f64, p: f64, pass_note: &str, b: &mut Builder) {
    let (verdict, detail) = if p < 1e-3 && d > 1e-3 {
        (
            Verdict::Fail,
            format!(
                "column {} is distributed differently: D = {d:.6}, p = {p:.3e}",
                f.name()
            ),
        )
    } else {
        (Verdict::Pass, pass_note.to_string())
    };
    b.add(
        "distribution",
        "Kolmogorov-Smirnov",
        Some(f.name()),
        format!("D={d:.6}"),
        format!("p={p:.3e}"),
        None,
        verdict,
        detail,
    );
}

/// The exact two-sample KS statistic of one column and its p-value.
pub(crate) async fn ks_column(ctx: &SessionContext, f: &Field, b: &mut Builder) -> Result<()> {
    let c = ident(f.name());
    let x = format!("CAST({c} AS DOUBLE)");
    let filter = format!("{c} IS NOT NULL AND NOT isnan({x})");
    let n = |t: &str| {
        let sql = format!("SELECT COUNT(*) FROM {t} WHERE {filter}");
        async move {
            Ok::<u64, Error>(
                one_row(ctx, &sql).await?[0]
                    .as_deref()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            )
        }
    };
    let (n1, n2) = (n("cpu").await?, n("gpu").await?);
    // both sides' values sorted (the sorts spill beyond the memory limit), walked together: the
    // largest gap between the two empirical distribution functions is D, exactly
    let sorted = |t: &str| {
        let sql = format!("SELECT {x} AS x FROM {t} WHERE {filter} ORDER BY x");
        async move {
            ctx.sql(&sql)
                .await
                .map_err(q)?
                .execute_stream()
                .await
                .map_err(q)
        }
    };
    let mut sides = [
        Sorted::new(sorted("cpu").await?),
        Sorted::new(sorted("gpu").await?),
    ];
    let (mut ca, mut cb, mut d) = (0u64, 0u64, 0f64);
    loop {
        let (va, vb) = (sides[0].peek().await?, sides[1].peek().await?);
        let v = match (va, vb) {
            (None, None) => break,
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (Some(a), Some(b)) => a.min(b),
        };
        ca += sides[0].take_equal(v).await?;
        cb += sides[1].take_equal(v).await?;
        if n1 > 0 && n2 > 0 {
            d = d.max((ca as f64 / n1 as f64 - cb as f64 / n2 as f64).abs());
        }
    }
    let d = if d.is_finite() { d } else { 0.0 };
    ks_row(f, d, p_value(d, n1, n2), "", b);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // Q_KS(1.36) ~ 0.049 and Q_KS(1.63) ~ 0.0098: the classic 5 % and 1 % critical values
        assert!((q_ks(1.36) - 0.0494).abs() < 1e-3, "{}", q_ks(1.36));
        assert!((q_ks(1.63) - 0.0098).abs() < 5e-4, "{}", q_ks(1.63));
        assert_eq!(p_value(0.0, 1_000_000, 1_000_000), 1.0);
        // a shift of a tenth of a standard deviation over 10k values is far from chance
        assert!(p_value(0.04, 10_000, 10_000) < 1e-3);
        assert!(p_value(0.001, 1000, 1000) > 0.99);
    }
}
