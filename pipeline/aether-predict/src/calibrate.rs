//! How far to trust a predicted speedup: a range beside the point estimate, from measured
//! residuals, and a calibration of QualX's prediction fitted on (predicted, measured) pairs.
//!
//! Everything is in log speedup, where a 2x over-prediction and a 2x under-prediction weigh
//! the same and a bias is a factor. The residual of a pair is `ln(measured / predicted)`.
//!
//! - **Range** ([`Range`]): split conformal prediction on the residuals — the interval
//!   `[p·e^lo, p·e^hi]` with `lo`, `hi` the residuals' order statistics at ranks
//!   `⌊(n+1)·α/2⌋` and `⌈(n+1)·(1−α/2)⌉` (α = 1 − coverage), which covers at least the stated
//!   share of new pairs drawn like the calibration ones, whatever their distribution
//!   (distribution-free; it needs `n ≥ 2/α − 1` pairs: 9 for 80 %). Fewer pairs: the
//!   documented prior [`PRIOR_HALF_WIDTH`], labelled as such.
//! - **Calibration** ([`fit`]): `ln m = a + b·ln p` by least squares — the slope only with
//!   [`MIN_PAIRS_SLOPE`] pairs and enough spread of predictions, else `b = 1` (a bias: the
//!   fleet's jobs run faster or slower on GPUs than QualX's benchmarks did). Its error is
//!   measured held out (leave-one-out up to 30 pairs, else 10 folds) against QualX's on the
//!   same pairs, and the held-out residuals give the calibrated range.

use serde::{Deserialize, Serialize};

/// The share of new pairs a range is meant to cover.
pub const COVERAGE: f64 = 0.8;
/// Pairs a calibration needs at least (fewer: refused, with the reason).
pub const MIN_PAIRS_CALIBRATE: usize = 8;
/// Pairs from which the slope is fitted too (fewer: a bias only).
pub const MIN_PAIRS_SLOPE: usize = 30;
/// The prior's half-width in log speedup at [`COVERAGE`]: ln 1.3, a range of ÷1.3 to ×1.3.
/// NVIDIA publishes no error magnitude for QualX (its models carry no metrics; its weekly KPI
/// runs publish only precision and recall of the GPU recommendation, EMR 57 % / 71 % in
/// spark-rapids-tools commit d3b7de4); the one quoted figure is "generally within a bounds of
/// 20–30 % error" on NDS SF3K (NVIDIA/spark-rapids issue #6800, for the qualification
/// estimate before QualX). The prior takes the upper end as its 80 % bound.
pub const PRIOR_HALF_WIDTH: f64 = 0.262_364_264_467_491;

/// One job's predicted and measured speedup.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    /// What the pair is of (an aether job id, an app name).
    pub id: String,
    pub predicted: f64,
    pub measured: f64,
}

impl Pair {
    /// `ln(measured / predicted)`; `None` for a pair without two positive speedups.
    pub fn residual(&self) -> Option<f64> {
        (self.predicted > 0.0
            && self.measured > 0.0
            && self.predicted.is_finite()
            && self.measured.is_finite())
        .then(|| (self.measured / self.predicted).ln())
    }
}

/// Where a range comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Source {
    /// The documented prior: no (or too few) measured pairs.
    Prior { pairs: usize },
    /// The fleet's own measured pairs, QualX's prediction as is.
    Fleet { pairs: usize },
    /// A saved calibration's held-out residuals (the point estimate is calibrated too).
    Calibrated { pairs: usize },
}

impl Source {
    /// In words, for tables and CSVs.
    pub fn label(&self) -> String {
        match self {
            Source::Prior { pairs } => format!(
                "prior ±30% (NVIDIA's quoted 20-30% error; {pairs} measured pairs, {} needed)",
                min_pairs_range(COVERAGE)
            ),
            Source::Fleet { pairs } => format!("fleet: {pairs} measured pairs"),
            Source::Calibrated { pairs } => format!("calibrated on {pairs} pairs"),
        }
    }
}

/// A speedup with its range.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Range {
    pub speedup: f64,
    pub low: f64,
    pub high: f64,
    pub coverage: f64,
    pub source: Source,
}

/// Where a range lies against a threshold (the speedup a GPU migration must clear).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// The whole range clears it: a safe bet.
    Clears,
    /// It straddles it: the point estimate alone decides; a test run should.
    Straddles,
    /// The whole range is below it.
    Below,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Clears => "clears",
            Confidence::Straddles => "straddles",
            Confidence::Below => "below",
        }
    }
}

impl Range {
    pub fn against(&self, threshold: f64) -> Confidence {
        if self.low >= threshold {
            Confidence::Clears
        } else if self.high < threshold {
            Confidence::Below
        } else {
            Confidence::Straddles
        }
    }
}

/// Pairs a conformal range at `coverage` needs: `n ≥ 2/α − 1`.
pub fn min_pairs_range(coverage: f64) -> usize {
    // (a hair off the exact value: 1 − 0.8 is not 0.2 in binary)
    (2.0 / (1.0 - coverage) - 1.0 - 1e-9).ceil() as usize
}

/// The residual bounds (lo, hi) of a split-conformal range at `coverage`; `None` with too few
/// residuals.
pub fn conformal(residuals: &[f64], coverage: f64) -> Option<(f64, f64)> {
    let mut r: Vec<f64> = residuals
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    let n = r.len();
    let alpha = 1.0 - coverage;
    let k_lo = ((n + 1) as f64 * alpha / 2.0 + 1e-9).floor() as usize;
    let k_hi = ((n + 1) as f64 * (1.0 - alpha / 2.0) - 1e-9).ceil() as usize;
    if n == 0 || k_lo < 1 || k_hi > n {
        return None;
    }
    r.sort_by(f64::total_cmp);
    Some((r[k_lo - 1], r[k_hi - 1]))
}

/// The range of `predicted` from the fleet's pairs (QualX as is), else the prior.
pub fn range(predicted: f64, pairs: &[Pair]) -> Range {
    let residuals: Vec<f64> = pairs.iter().filter_map(Pair::residual).collect();
    match conformal(&residuals, COVERAGE) {
        Some((lo, hi)) => Range {
            speedup: predicted,
            low: predicted * lo.exp(),
            high: predicted * hi.exp(),
            coverage: COVERAGE,
            source: Source::Fleet {
                pairs: residuals.len(),
            },
        },
        None => Range {
            speedup: predicted,
            low: predicted * (-PRIOR_HALF_WIDTH).exp(),
            high: predicted * PRIOR_HALF_WIDTH.exp(),
            coverage: COVERAGE,
            source: Source::Prior {
                pairs: residuals.len(),
            },
        },
    }
}

/// What qualify's ranges (and, with a saved calibration, its point estimates) come from.
#[derive(Clone, Debug, Default)]
pub struct Trust {
    /// The fleet's measured pairs (QualX's own speedup, the measured one).
    pub pairs: Vec<Pair>,
    /// A saved calibration (`aether model calibrate --save`), used over the pairs.
    pub calibration: Option<Calibration>,
}

impl Trust {
    /// The speedup of a QualX prediction (calibrated, with a calibration) and its range.
    pub fn range(&self, predicted: f64) -> Range {
        match &self.calibration {
            Some(c) => c.range(predicted),
            None => range(predicted, &self.pairs),
        }
    }

    /// Where the ranges come from, in a line.
    pub fn describe(&self) -> String {
        let pct = COVERAGE * 100.0;
        match &self.calibration {
            Some(c) => format!(
                "speedups calibrated on {} measured pairs (held out: error {:.0}% vs QualX's \
                 {:.0}%); {pct:.0}% ranges from the held-out residuals",
                c.pairs,
                c.held_out.calibrated_mape * 100.0,
                c.held_out.qualx_mape * 100.0
            ),
            None => {
                let n = self.pairs.iter().filter(|p| p.residual().is_some()).count();
                if n >= min_pairs_range(COVERAGE) {
                    format!(
                        "{pct:.0}% speedup ranges from the fleet's {n} measured pairs \
                         (split conformal on log speedup)"
                    )
                } else {
                    format!(
                        "{pct:.0}% speedup ranges from the prior (÷1.3 to ×1.3, NVIDIA's quoted \
                         20-30% error): {n} measured pairs, {} needed for the fleet's own",
                        min_pairs_range(COVERAGE)
                    )
                }
            }
        }
    }
}

/// Held-out errors of QualX as is and calibrated, on the same pairs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeldOut {
    /// How the pairs were split: `leave-one-out` or `10-fold`.
    pub scheme: String,
    /// Mean |ln(predicted/measured)|: QualX's, the calibration's.
    pub qualx_log_error: f64,
    pub calibrated_log_error: f64,
    /// Mean |predicted − measured| / measured (MAPE on speedup).
    pub qualx_mape: f64,
    pub calibrated_mape: f64,
}

/// A calibration of QualX's prediction: `speedup = e^a · p^b`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub a: f64,
    pub b: f64,
    pub pairs: usize,
    pub held_out: HeldOut,
    /// The conformal bounds of the held-out residuals (log speedup) at `coverage`.
    pub residual_low: f64,
    pub residual_high: f64,
    pub coverage: f64,
    /// The model it calibrates (`emr`, `onprem`, a file's name).
    pub model: String,
    pub created_ms: i64,
}

impl Calibration {
    /// The calibrated speedup of a QualX prediction.
    pub fn apply(&self, predicted: f64) -> f64 {
        if predicted > 0.0 {
            (self.a + self.b * predicted.ln()).exp()
        } else {
            predicted
        }
    }

    /// The calibrated speedup of a QualX prediction with its range.
    pub fn range(&self, predicted: f64) -> Range {
        let s = self.apply(predicted);
        Range {
            speedup: s,
            low: s * self.residual_low.exp(),
            high: s * self.residual_high.exp(),
            coverage: self.coverage,
            source: Source::Calibrated { pairs: self.pairs },
        }
    }

    /// Whether it predicts better than QualX held out.
    pub fn improves(&self) -> bool {
        self.held_out.calibrated_log_error < self.held_out.qualx_log_error
    }
}

/// `(a, b)` of `y = a + b·x` over the points: with the slope when there are enough points with
/// enough spread, else `b = 1`.
fn line(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    // a spread of predictions below ~10 % (log sd 0.1) says nothing of a slope
    if points.len() >= MIN_PAIRS_SLOPE && sxx / n >= 0.01 {
        let b = sxy / sxx;
        (my - b * mx, b)
    } else {
        (my - mx, 1.0)
    }
}

/// Fit a calibration on `pairs` (see the module's doc); an error says why none can be fitted.
pub fn fit(pairs: &[Pair], model: &str, now_ms: i64) -> Result<Calibration, String> {
    let points: Vec<(f64, f64)> = pairs
        .iter()
        .filter(|p| p.residual().is_some())
        .map(|p| (p.predicted.ln(), p.measured.ln()))
        .collect();
    let n = points.len();
    if n < MIN_PAIRS_CALIBRATE {
        return Err(format!(
            "{n} (predicted, measured) pairs with positive speedups: a calibration needs at least \
             {MIN_PAIRS_CALIBRATE} (held-out errors from fewer say nothing); measure more jobs \
             (tune / run) or bring pairs (--pairs FILE)"
        ));
    }
    let folds = if n <= 30 { n } else { 10 };
    let mut held = Vec::with_capacity(n);
    let (mut q_log, mut c_log, mut q_ape, mut c_ape) = (0.0, 0.0, 0.0, 0.0);
    for f in 0..folds {
        let train: Vec<(f64, f64)> = points
            .iter()
            .enumerate()
            .filter(|(i, _)| i % folds != f)
            .map(|(_, p)| *p)
            .collect();
        let (a, b) = line(&train);
        for (_, &(x, y)) in points.iter().enumerate().filter(|(i, _)| i % folds == f) {
            let fit = a + b * x;
            held.push(y - fit);
            q_log += (y - x).abs();
            c_log += (y - fit).abs();
            let m = y.exp();
            q_ape += (x.exp() - m).abs() / m;
            c_ape += (fit.exp() - m).abs() / m;
        }
    }
    let nf = n as f64;
    let (a, b) = line(&points);
    let (residual_low, residual_high) = conformal(&held, COVERAGE)
        .ok_or_else(|| format!("{n} pairs give no {:.0} % range", COVERAGE * 100.0))?;
    Ok(Calibration {
        a,
        b,
        pairs: n,
        held_out: HeldOut {
            scheme: if folds == n {
                "leave-one-out".into()
            } else {
                format!("{folds}-fold")
            },
            qualx_log_error: q_log / nf,
            calibrated_log_error: c_log / nf,
            qualx_mape: q_ape / nf,
            calibrated_mape: c_ape / nf,
        },
        residual_low,
        residual_high,
        coverage: COVERAGE,
        model: model.to_string(),
        created_ms: now_ms,
    })
}

/// Pairs from a CSV with the columns `predicted` and `measured` (speedups; an `id` column
/// optional), in any order; errors name the line and the field.
pub fn read_pairs_csv(text: &str, file: &str) -> Result<Vec<Pair>, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines
        .next()
        .ok_or_else(|| format!("{file}: empty: expected a header with predicted,measured"))?;
    let cols: Vec<String> = header
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    let at = |name: &str| cols.iter().position(|c| c == name);
    let (p, m) = match (at("predicted"), at("measured")) {
        (Some(p), Some(m)) => (p, m),
        _ => {
            return Err(format!(
                "{file}: line 1: expected columns predicted and measured (speedups), found {header:?}"
            ));
        }
    };
    let id = at("id");
    let mut out = Vec::new();
    for (i, l) in lines {
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        let num = |c: usize, name: &str| -> Result<f64, String> {
            let v = f.get(c).copied().unwrap_or("");
            v.parse::<f64>()
                .ok()
                .filter(|x| *x > 0.0 && x.is_finite())
                .ok_or_else(|| {
                    format!(
                        "{file}: line {}: {name} {v:?}: expected a speedup above 0",
                        i + 1
                    )
                })
        };
        out.push(Pair {
            id: id
                .and_then(|c| f.get(c))
                .map(|s| s.to_string())
                .unwrap_or_else(|| format!("{file}:{}", i + 1)),
            predicted: num(p, "predicted")?,
            measured: num(m, "measured")?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic normal sample (Box-Muller over a xorshift stream).
    struct Draw(u64);
    impl Draw {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
    }

    /// Pairs whose measured speedup is the prediction times e^(bias + noise·N(0,1)), the
    /// predictions spread log-uniformly over 1.2x to 6x.
    fn pairs(n: usize, bias: f64, noise: f64, seed: u64) -> Vec<Pair> {
        let mut d = Draw(seed);
        (0..n)
            .map(|i| {
                let p = (1.2f64.ln() + d.uniform() * (6.0f64 / 1.2).ln()).exp();
                Pair {
                    id: i.to_string(),
                    predicted: p,
                    measured: p * (bias + noise * d.normal()).exp(),
                }
            })
            .collect()
    }

    #[test]
    fn the_stated_80_percent_range_covers_about_80_percent_of_held_out_pairs() {
        // many trials of 40 calibration pairs, each judged on 200 new pairs of the same kind
        let mut covered = 0usize;
        let mut judged = 0usize;
        for t in 0..200u64 {
            let cal = pairs(40, 0.15, 0.25, 1000 + t);
            let new = pairs(200, 0.15, 0.25, 9_000_000 + t);
            for q in &new {
                let r = range(q.predicted, &cal);
                assert_eq!(r.source, Source::Fleet { pairs: 40 });
                covered += usize::from(r.low <= q.measured && q.measured <= r.high);
                judged += 1;
            }
        }
        let share = covered as f64 / judged as f64;
        assert!((0.75..=0.85).contains(&share), "covered {share}");
    }

    #[test]
    fn calibration_recovers_a_known_bias_and_beats_qualx_held_out() {
        // the fleet's jobs run 35 % faster on GPUs than predicted, with 20 % noise
        let cal = fit(&pairs(25, 0.30, 0.2, 7), "emr", 0).unwrap();
        assert_eq!(cal.b, 1.0, "25 pairs: a bias only");
        assert!((cal.a - 0.30).abs() < 0.1, "a = {}", cal.a);
        assert!(cal.improves(), "{:?}", cal.held_out);
        assert!(cal.held_out.calibrated_mape < cal.held_out.qualx_mape);
        assert_eq!(cal.held_out.scheme, "leave-one-out");
        // its range covers about 80 % of new pairs, around the calibrated speedup
        let new = pairs(2000, 0.30, 0.2, 99);
        let covered = new
            .iter()
            .filter(|q| {
                let r = cal.range(q.predicted);
                r.low <= q.measured && q.measured <= r.high
            })
            .count() as f64
            / new.len() as f64;
        assert!((0.7..=0.9).contains(&covered), "{covered}");
        // a slope with many pairs: measured = 1.1 · p^0.8
        let slope: Vec<Pair> = pairs(200, 0.0, 0.05, 3)
            .into_iter()
            .map(|p| Pair {
                measured: 1.1 * p.measured.powf(0.8),
                ..p
            })
            .collect();
        let cal = fit(&slope, "emr", 0).unwrap();
        assert!((cal.b - 0.8).abs() < 0.05, "b = {}", cal.b);
        assert!((cal.a - 1.1f64.ln()).abs() < 0.05, "a = {}", cal.a);
        assert_eq!(cal.held_out.scheme, "10-fold");
        // unbiased pairs: the calibration does not beat QualX by much (nothing to correct)
        let cal = fit(&pairs(25, 0.0, 0.2, 11), "emr", 0).unwrap();
        assert!(cal.a.abs() < 0.15, "a = {}", cal.a);
    }

    #[test]
    fn too_few_pairs_are_refused_and_the_prior_says_so() {
        let e = fit(&pairs(5, 0.0, 0.1, 1), "emr", 0).unwrap_err();
        assert!(
            e.starts_with("5 (predicted, measured) pairs") && e.contains("at least 8"),
            "{e}"
        );
        let r = range(2.0, &pairs(5, 0.0, 0.1, 1));
        assert_eq!(r.source, Source::Prior { pairs: 5 });
        assert!(
            (r.low - 2.0 / 1.3).abs() < 1e-9 && (r.high - 2.6).abs() < 1e-9,
            "{r:?}"
        );
        assert!(
            r.source.label().contains("9 needed"),
            "{}",
            r.source.label()
        );
        assert_eq!(min_pairs_range(0.8), 9);
        assert!(conformal(&[0.1; 8], 0.8).is_none());
        assert!(conformal(&[0.1; 9], 0.8).is_some());
        // pairs without two positive speedups do not count
        let bad = Pair {
            id: "x".into(),
            predicted: 0.0,
            measured: 2.0,
        };
        assert_eq!(bad.residual(), None);
    }

    #[test]
    fn a_range_against_the_threshold() {
        let r = |low, high| Range {
            speedup: 1.5,
            low,
            high,
            coverage: 0.8,
            source: Source::Prior { pairs: 0 },
        };
        assert_eq!(r(1.3, 2.0).against(1.3), Confidence::Clears);
        assert_eq!(r(1.1, 2.0).against(1.3), Confidence::Straddles);
        assert_eq!(r(0.8, 1.2).against(1.3), Confidence::Below);
    }

    #[test]
    fn pairs_from_a_csv() {
        let p = read_pairs_csv("id,measured,predicted\na,2.5,2\nb,1.1,1.4\n", "p.csv").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].id, "a");
        assert_eq!((p[0].predicted, p[0].measured), (2.0, 2.5));
        let e = read_pairs_csv("predicted,measured\n2,x\n", "p.csv").unwrap_err();
        assert!(e.contains("p.csv: line 2: measured \"x\""), "{e}");
        let e = read_pairs_csv("pred,meas\n", "p.csv").unwrap_err();
        assert!(e.contains("p.csv: line 1"), "{e}");
        let e = read_pairs_csv("predicted,measured\n0,1\n", "p.csv").unwrap_err();
        assert!(e.contains("predicted \"0\""), "{e}");
    }
}
