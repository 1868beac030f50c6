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

/// A chart's opening: the `<svg>` element, its white ground and its title.
fn open(title: &str, height: f64) -> String {
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-label="{t}" class="chart"><title>{t}</title><rect width="100%" height="100%" fill="#ffffff"/><text x="8" y="20" font-family="DejaVu Sans, sans-serif" font-size="14" font-weight="bold" fill="#1f2937">{t}</text>"##,
        t = esc(title)
    )
}

/// A dashed vertical reference line at `x` from `y1` down the plot, labelled under it.
fn mark_line(s: &mut String, x: f64, y1: f64, height: f64, label: &str) {
    let _ = write!(
        s,
        r##"<line x1="{x:.1}" x2="{x:.1}" y1="{y1}" y2="{y2}" stroke="#9ca3af" stroke-dasharray="4 3"/><text x="{x:.1}" y="{ty}" text-anchor="middle" font-family="DejaVu Sans, sans-serif" font-size="10" fill="#6b7280">{v}</text>"##,
        y2 = height - 24.0,
        ty = height - 10.0,
        v = esc(label)
    );
}

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
    let mut s = open(title, height);
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
        mark_line(&mut s, x(m), TOP - 4.0, height, &fmt(m));
    }
    s.push_str("</svg>");
    s
}

/// One job of [`ranges`]: its predicted range and point, and the measured value if any.
pub struct RangeRow {
    pub label: String,
    pub predicted: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub measured: Option<f64>,
    /// Written after the row (the error, whether it fell in the range).
    pub note: String,
}

/// Predicted ranges against what was measured: per job a band from the range's low to its
/// high, a tick at the prediction, a dot at the measured value, the note after it. `mark`: a
/// vertical reference line (1.0x).
pub fn ranges(
    title: &str,
    rows: &[RangeRow],
    mark: Option<f64>,
    fmt: &dyn Fn(f64) -> String,
) -> String {
    let row_h = ROW_H;
    let height = TOP + 20.0 + row_h * rows.len().max(1) as f64 + 30.0;
    let max = rows
        .iter()
        .flat_map(|r| [Some(r.predicted), r.low, r.high, r.measured])
        .flatten()
        .chain(mark)
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let note_w = 120.0;
    let plot_w = WIDTH - LABEL_W - note_w - 10.0;
    let x = |v: f64| LABEL_W + (v.max(0.0) / max) * plot_w;
    let mut s = open(title, height);
    // legend
    let _ = write!(
        s,
        r##"<rect x="{LABEL_W}" y="30" width="18" height="8" fill="#bfdbfe"/><text x="{a}" y="38" font-family="DejaVu Sans, sans-serif" font-size="11" fill="#374151">80% range</text><rect x="{b}" y="28" width="2" height="12" fill="#1e3a8a"/><text x="{c}" y="38" font-family="DejaVu Sans, sans-serif" font-size="11" fill="#374151">predicted</text><circle cx="{d}" cy="34" r="4" fill="#15803d"/><text x="{e}" y="38" font-family="DejaVu Sans, sans-serif" font-size="11" fill="#374151">measured</text>"##,
        a = LABEL_W + 22.0,
        b = LABEL_W + 100.0,
        c = LABEL_W + 106.0,
        d = LABEL_W + 184.0,
        e = LABEL_W + 192.0
    );
    let top = TOP + 20.0;
    if rows.is_empty() {
        let _ = write!(
            s,
            r##"<text x="{LABEL_W}" y="{y}" font-family="DejaVu Sans, sans-serif" font-size="12" fill="#6b7280">no data yet</text>"##,
            y = top + 16.0
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let cy = top + i as f64 * row_h + row_h / 2.0;
        let _ = write!(
            s,
            r##"<text x="{lx}" y="{ty:.1}" text-anchor="end" font-family="DejaVu Sans, sans-serif" font-size="12" fill="#111827">{l}</text>"##,
            lx = LABEL_W - 8.0,
            ty = cy + 4.0,
            l = esc(&cut(&r.label, 26))
        );
        let what = match (r.low, r.high) {
            (Some(lo), Some(hi)) => format!(
                "{}: predicted {} ({} to {})",
                r.label,
                fmt(r.predicted),
                fmt(lo),
                fmt(hi)
            ),
            _ => format!("{}: predicted {}", r.label, fmt(r.predicted)),
        };
        if let (Some(lo), Some(hi)) = (r.low, r.high) {
            let _ = write!(
                s,
                r##"<rect class="range" x="{x0:.1}" y="{y:.1}" width="{w:.1}" height="10" rx="2" fill="#bfdbfe"><title>{t}</title></rect>"##,
                x0 = x(lo),
                y = cy - 5.0,
                w = (x(hi) - x(lo)).max(1.0),
                t = esc(&what)
            );
        }
        let _ = write!(
            s,
            r##"<rect class="predicted" x="{px:.1}" y="{y:.1}" width="2" height="16" fill="#1e3a8a"><title>{t}</title></rect>"##,
            px = x(r.predicted) - 1.0,
            y = cy - 8.0,
            t = esc(&what)
        );
        if let Some(m) = r.measured {
            let _ = write!(
                s,
                r##"<circle class="measured" cx="{mx:.1}" cy="{cy:.1}" r="5" fill="#15803d"><title>{l}: measured {v}</title></circle>"##,
                mx = x(m),
                l = esc(&r.label),
                v = esc(&fmt(m))
            );
        }
        let _ = write!(
            s,
            r##"<text x="{nx:.1}" y="{ty:.1}" font-family="DejaVu Sans, sans-serif" font-size="11" fill="#374151">{n}</text>"##,
            nx = WIDTH - note_w,
            ty = cy + 4.0,
            n = esc(&r.note)
        );
    }
    if let Some(m) = mark {
        mark_line(&mut s, x(m), top - 4.0, height, &fmt(m));
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
    let mut s = open(title, height);
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
        ranges(
            "Predicted vs measured speedup",
            &qualified
                .iter()
                .map(|j| RangeRow {
                    label: label(j),
                    predicted: j.predicted_speedup.unwrap_or(0.0),
                    low: j.predicted_low,
                    high: j.predicted_high,
                    measured: j.measured_speedup,
                    note: match (j.speedup_error_pct, j.within_range) {
                        (Some(e), Some(true)) => format!("error {e:+.0}%, in range"),
                        (Some(e), Some(false)) => format!("error {e:+.0}%, outside"),
                        (Some(e), None) => format!("error {e:+.0}%"),
                        _ => "not measured".into(),
                    },
                })
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

    #[test]
    fn ranges_mark_the_band_the_prediction_and_the_measurement() {
        let rows = [
            RangeRow {
                label: "a".into(),
                predicted: 2.0,
                low: Some(1.0),
                high: Some(4.0),
                measured: Some(3.0),
                note: "error -33%, in range".into(),
            },
            RangeRow {
                label: "b".into(),
                predicted: 1.5,
                low: None,
                high: None,
                measured: None,
                note: "not measured".into(),
            },
        ];
        let s = ranges("t", &rows, Some(1.0), &|v| format!("{v:.2}x"));
        // the axis ends at the largest value (4.0): the band spans 1.0..4.0 of it
        let note_w = 120.0;
        let plot_w = WIDTH - LABEL_W - note_w - 10.0;
        let at = |v: f64| LABEL_W + v / 4.0 * plot_w;
        assert!(
            s.contains(&format!(
                "class=\"range\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\"",
                at(1.0),
                TOP + 20.0 + 13.0 - 5.0,
                at(4.0) - at(1.0)
            )),
            "{s}"
        );
        assert!(
            s.contains(&format!("class=\"measured\" cx=\"{:.1}\"", at(3.0))),
            "{s}"
        );
        assert_eq!(
            s.matches("class=\"range\"").count(),
            1,
            "no band without a range"
        );
        assert_eq!(s.matches("class=\"predicted\"").count(), 2);
        assert_eq!(s.matches("class=\"measured\"").count(), 1);
        assert!(s.contains("error -33%, in range") && s.contains("not measured"));
    }
}
