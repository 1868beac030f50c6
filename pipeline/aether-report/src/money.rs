//! Money as every report, card, table and chart shows it (one format, used by the model and the
//! renderers alike).

/// Dollars with the precision they need, the one money format of every report, card, table and
/// chart: `$1,235` from $100 up (no cents), `$12.35` from $1, two significant digits below
/// (`$0.50`, `$0.014`, `$0.0011`), `$0` for nothing.
pub fn usd(v: Option<f64>) -> String {
    let Some(v) = v.filter(|v| v.is_finite()) else {
        return "–".into();
    };
    let sign = if v < 0.0 { "-" } else { "" };
    let a = v.abs();
    let grouped = |whole: u64| {
        let digits = whole.to_string();
        let mut g = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                g.push(',');
            }
            g.push(c);
        }
        g
    };
    let cents = (a * 100.0).round() as u64;
    if cents >= 100 * 100 {
        // $99.995 and up: whole dollars
        return format!("{sign}${}", grouped(a.round() as u64));
    }
    if cents >= 100 {
        return format!("{sign}${}.{:02}", grouped(cents / 100), cents % 100);
    }
    if a < 5e-13 {
        return "$0".into();
    }
    // below $1: two significant digits (one fewer decimal when rounding makes a third one)
    let mut decimals = (1 - a.log10().floor() as i32).max(2);
    if decimals > 2 && (a * 10f64.powi(decimals)).round() >= 100.0 {
        decimals -= 1;
    }
    format!("{sign}${a:.0$}", decimals as usize)
}
