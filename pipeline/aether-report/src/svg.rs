//! Charts as server-rendered SVG: the same markup in the UI, the HTML report files and email
//! (no script, no external file). Every label is XML-escaped here, since the pages embed the
//! SVG as markup.

use std::fmt::Write;

use crate::model::Overview;

/// XML-escape text for SVG content and attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    } else {
        s.to_string()
    }
}

const WIDTH: f64 = 640.0;
const LABEL_W: f64 = 190.0;
const ROW_H: f64 = 26.0;
const TOP: f64 = 34.0;

/// One series of a bar chart.
pub struct Series<'a> {
    pub name: &'a str,
    pub color: &'a str,
}

/// Horizontal bars, one group per item with one bar per series (`values[i][s]`; `None`: no
/// bar). `mark`: a vertical reference line at that value (e.g. 1.0x). `fmt` writes a value.
pub fn bars(
    title: &str,
    labels: &[String],
    series: &[Series<'_>],
    values: &[Vec<Option<f64>>],
    mark: Option<f64>,
    fmt: &dyn Fn(f64) -> String,
) -> String {
    let n_series = series.len().max(1) as f64;
    let group_h = ROW_H * n_series.max(1.0) * 0.6 + 10.0;
    let height = TOP + group_h * labels.len().max(1) as f64 + 30.0;
    let max = values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .chain(mark)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let plot_w = WIDTH - LABEL_W - 80.0;
    let x = |v: f64| LABEL_W + (v.max(0.0) / max) * plot_w;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-label="{t}" class="chart"><title>{t}</title><rect width="100%" height="100%" fill="#ffffff"/><text x="8" y="20" font-family="DejaVu Sans, sans-serif" font-size="14" font-weight="bold" fill="#1f2937">{t}</text>"##,
        t = esc(title)
    );
    // legend
    if series.len() > 1 {
        let mut lx = WIDTH - 12.0;
        for sr in series.iter().rev() {
            let w = 14.0 + sr.name.chars().count() as f64 * 7.0;
            lx -= w + 10.0;
            let _ = write!(
                s,
                r##"<rect x="{lx}" y="10" width="10" height="10" fill="{c}"/><text x="{tx}" y="19" font-family="DejaVu Sans, sans-serif" font-size="11" fill="#374151">{n}</text>"##,
                c = sr.color,
                tx = lx + 14.0,
                n = esc(sr.name)
            );
        }
    }
    if labels.is_empty() {
        let _ = write!(
            s,
            r##"<text x="{LABEL_W}" y="{y}" font-family="DejaVu Sans, sans-serif" font-size="12" fill="#6b7280">no data yet</text>"##,
            y = TOP + 16.0
        );
    }
    let bar_h = (group_h - 10.0) / n_series;
    for (i, label) in labels.iter().enumerate() {
        let gy = TOP + i as f64 * group_h;
        let _ = write!(
            s,
            r##"<text x="{lx}" y="{ty}" text-anchor="end" font-family="DejaVu Sans, sans-serif" font-size="12" fill="#111827">{l}</text>"##,
            lx = LABEL_W - 8.0,
            ty = gy + group_h / 2.0,
            l = esc(&cut(label, 26))
        );
        for (k, sr) in series.iter().enumerate() {
            let Some(v) = values.get(i).and_then(|r| r.get(k)).copied().flatten() else {
                continue;
            };
            let y = gy + k as f64 * bar_h;
            let w = (x(v) - LABEL_W).max(1.0);
            let _ = write!(
                s,
                r##"<rect x="{LABEL_W}" y="{y:.1}" width="{w:.1}" height="{h:.1}" rx="2" fill="{c}"><title>{l}: {val}</title></rect><text x="{tx:.1}" y="{ty:.1}" font-family="DejaVu Sans, sans-serif" font-size="11" fill="#374151">{val}</text>"##,
                h = bar_h - 2.0,
                c = sr.color,
                l = esc(label),
                val = esc(&fmt(v)),
                tx = LABEL_W + w + 4.0,
                ty = y + bar_h / 2.0 + 3.0
            );
        }
    }
    if let Some(m) = mark {
        let _ = write!(
            s,
            r##"<line x1="{mx:.1}" x2="{mx:.1}" y1="{y1}" y2="{y2}" stroke="#9ca3af" stroke-dasharray="4 3"/><text x="{mx:.1}" y="{ty}" text-anchor="middle" font-family="DejaVu Sans, sans-serif" font-size="10" fill="#6b7280">{v}</text>"##,
            mx = x(m),
            y1 = TOP - 4.0,
            y2 = height - 24.0,
            ty = height - 10.0,
            v = esc(&fmt(m))
        );
    }
    s.push_str("</svg>");
    s
}

/// The qualified fleet's categories' colors, best first.
pub const CATEGORY_COLORS: &[&str] = &[
    "#15803d", "#65a30d", "#ca8a04", "#b91c1c", "#6b7280", "#1d4ed8",
];

/// Parts of a whole as one stacked bar with a legend (the qualified fleet's categories).
pub fn parts(title: &str, items: &[(String, usize)], colors: &[&str]) -> String {
    let colors = if colors.is_empty() {
        CATEGORY_COLORS
    } else {
        colors
    };
    let total: usize = items.iter().map(|(_, n)| n).sum();
    let height = 110.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-label="{t}" class="chart"><title>{t}</title><rect width="100%" height="100%" fill="#ffffff"/><text x="8" y="20" font-family="DejaVu Sans, sans-serif" font-size="14" font-weight="bold" fill="#1f2937">{t}</text>"##,
        t = esc(title)
    );
    let (x0, w) = (8.0, WIDTH - 16.0);
    let mut x = x0;
    let mut lx = x0;
    for (i, (name, n)) in items.iter().enumerate() {
        let c = colors[i % colors.len()];
        let bw = if total == 0 {
            0.0
        } else {
            w * *n as f64 / total as f64
        };
        let _ = write!(
            s,
            r##"<rect x="{x:.1}" y="34" width="{bw:.1}" height="26" fill="{c}"><title>{l}: {n}</title></rect>"##,
            l = esc(name)
        );
        x += bw;
        let label = format!("{name}: {n}");
        let _ = write!(
            s,
            r##"<rect x="{lx:.1}" y="76" width="10" height="10" fill="{c}"/><text x="{tx:.1}" y="85" font-family="DejaVu Sans, sans-serif" font-size="11" fill="#374151">{l}</text>"##,
            tx = lx + 14.0,
            l = esc(&label)
        );
        lx += 24.0 + label.chars().count() as f64 * 6.6;
    }
    if total == 0 {
        s.push_str(r##"<text x="8" y="52" font-family="DejaVu Sans, sans-serif" font-size="12" fill="#6b7280">no qualified job yet</text>"##);
    }
    s.push_str("</svg>");
    s
}

/// The overview's charts: speedup per tested job, predicted vs measured, cost per run before
/// and after, the categories of the qualified fleet.
pub fn overview_charts(o: &Overview) -> Vec<String> {
    let x = |v: f64| format!("{v:.2}x");
    let usd = |v: f64| crate::render::usd(Some(v));
    let label = |j: &crate::model::JobRow| format!("{} #{}", j.app_name, j.job_id);
    let tested: Vec<_> = o
        .jobs
        .iter()
        .filter(|j| j.measured_speedup.is_some())
        .collect();
    let qualified: Vec<_> = o
        .jobs
        .iter()
        .filter(|j| j.predicted_speedup.is_some())
        .collect();
    let costed: Vec<_> = o
        .jobs
        .iter()
        .filter(|j| j.cpu_cost_usd.is_some() && j.measured_speedup.is_some())
        .collect();
    vec![
        bars(
            "Measured GPU speedup per tested job",
            &tested.iter().map(|j| label(j)).collect::<Vec<_>>(),
            &[Series {
                name: "measured",
                color: "#15803d",
            }],
            &tested
                .iter()
                .map(|j| vec![j.measured_speedup])
                .collect::<Vec<_>>(),
            Some(1.0),
            &x,
        ),
        bars(
            "Predicted vs measured speedup",
            &qualified.iter().map(|j| label(j)).collect::<Vec<_>>(),
            &[
                Series {
                    name: "predicted",
                    color: "#93c5fd",
                },
                Series {
                    name: "measured",
                    color: "#1d4ed8",
                },
            ],
            &qualified
                .iter()
                .map(|j| vec![j.predicted_speedup, j.measured_speedup])
                .collect::<Vec<_>>(),
            Some(1.0),
            &x,
        ),
        bars(
            "Cost per run: CPU vs GPU",
            &costed.iter().map(|j| label(j)).collect::<Vec<_>>(),
            &[
                Series {
                    name: "CPU",
                    color: "#9ca3af",
                },
                Series {
                    name: "GPU",
                    color: "#76b900",
                },
            ],
            &costed
                .iter()
                .map(|j| vec![j.cpu_cost_usd, j.gpu_cost_usd])
                .collect::<Vec<_>>(),
            None,
            &usd,
        ),
        parts(
            "Qualified fleet by category",
            &o.categories,
            CATEGORY_COLORS,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_bars_scale() {
        let s = bars(
            "t",
            &["<script>alert(1)</script>".to_string(), "b".into()],
            &[Series {
                name: "x",
                color: "#000",
            }],
            &[vec![Some(2.0)], vec![Some(1.0)]],
            None,
            &|v| format!("{v}"),
        );
        assert!(!s.contains("<script>"), "{s}");
        assert!(s.contains("&lt;script&gt;"));
        // the larger value spans the plot, the other half of it
        let full = WIDTH - LABEL_W - 80.0;
        assert!(s.contains(&format!("width=\"{full:.1}\"")), "{s}");
        assert!(s.contains(&format!("width=\"{:.1}\"", full / 2.0)), "{s}");
    }
}
