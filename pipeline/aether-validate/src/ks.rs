//! The two-sample Kolmogorov–Smirnov test's p-value from its statistic D (computed exactly in
//! SQL by the caller), with the asymptotic Kolmogorov distribution and Stephens' small-sample
//! correction of the effective size. D = 0 (the usual case here) gives p = 1 at once.

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
