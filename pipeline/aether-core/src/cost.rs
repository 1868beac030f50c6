//! Cost arithmetic every place shares (qualify's savings range, the reports' fleet range).

/// A job's savings per run at the ends of its speedup range: the GPU run's cost scales with
/// its duration, so with the speedup as `gpu_cost x speedup / s` (low, high). No range (or a
/// speedup of 0): the point estimate at both ends.
pub fn savings_range(
    cpu_cost: f64,
    gpu_cost: f64,
    speedup: f64,
    low: Option<f64>,
    high: Option<f64>,
) -> (f64, f64) {
    let at = |s: Option<f64>| match s.filter(|s| *s > 0.0 && speedup > 0.0) {
        Some(s) => cpu_cost - gpu_cost * speedup / s,
        None => cpu_cost - gpu_cost,
    };
    (at(low), at(high))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn savings_at_the_ends_of_the_speedup_range() {
        // $10 on the CPU, $4 on the GPU at 2.5x: at 2x the GPU run lasts 25 % longer ($5),
        // at 3x it is 5/6 as long
        let (lo, hi) = savings_range(10.0, 4.0, 2.5, Some(2.0), Some(3.0));
        assert!((lo - 5.0).abs() < 1e-12, "{lo}");
        assert!((hi - (10.0 - 4.0 * 2.5 / 3.0)).abs() < 1e-12, "{hi}");
        // no range recorded: the point estimate at both ends
        assert_eq!(savings_range(10.0, 4.0, 2.5, None, None), (6.0, 6.0));
    }
}
