//! The validation result as a text table, JSON, Markdown or HTML.

use crate::{Report, Verdict};

fn dev(d: Option<f64>) -> String {
    match d {
        Some(0.0) => "0".into(),
        Some(x) => format!("{x:+.6}%"),
        None => String::new(),
    }
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// One column of the text table: how to get its text from a check.
type Cell = Box<dyn Fn(&crate::Check) -> String>;

/// The checks that matter in a terminal: every non-PASS one, and one line per layer.
pub fn table(r: &Report, all: bool) -> String {
    let mut out = format!(
        "validate: {} vs {}\nverdict: {} ({} rows on the CPU, {} on the GPU{}; {} ms)\n",
        r.cpu,
        r.gpu,
        r.verdict,
        r.cpu_rows,
        r.gpu_rows,
        if r.key.is_empty() {
            String::new()
        } else {
            format!("; key {}", r.key.join(","))
        },
        r.elapsed_ms
    );
    let rows: Vec<_> = r
        .checks
        .iter()
        .filter(|c| all || c.verdict != Verdict::Pass || c.column.is_none())
        .collect();
    let w = |f: &dyn Fn(&crate::Check) -> String, min: usize| {
        rows.iter()
            .map(|c| f(c).chars().count())
            .max()
            .unwrap_or(0)
            .clamp(min, 40)
    };
    let cols: [(&str, Cell); 7] = [
        ("layer", Box::new(|c| c.layer.clone())),
        ("check", Box::new(|c| c.check.clone())),
        ("column", Box::new(|c| c.column.clone().unwrap_or_default())),
        ("cpu", Box::new(|c| c.cpu.clone())),
        ("gpu", Box::new(|c| c.gpu.clone())),
        ("deviation", Box::new(|c| dev(c.deviation_pct))),
        ("verdict", Box::new(|c| c.verdict.to_string())),
    ];
    let widths: Vec<usize> = cols.iter().map(|(h, f)| w(f.as_ref(), h.len())).collect();
    let line = |vals: Vec<String>| {
        vals.iter()
            .zip(&widths)
            .map(|(v, w)| format!("{:<w$}", cut(v, *w), w = *w))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    out.push_str(&line(cols.iter().map(|(h, _)| h.to_string()).collect()));
    out.push('\n');
    for c in &rows {
        out.push_str(&line(cols.iter().map(|(_, f)| f(c)).collect()));
        out.push('\n');
    }
    if !r.reasons.is_empty() {
        out.push_str("why:\n");
        for x in &r.reasons {
            out.push_str(&format!("  - {x}\n"));
        }
    }
    out
}

/// Write `validation.json`, `validation.md` and `validation.html` into `dir` (made if missing);
/// an error names the file.
pub fn write_all(dir: &std::path::Path, r: &Report) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, text) in [
        ("validation.json", json(r)),
        ("validation.md", markdown(r)),
        ("validation.html", html(r)),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

pub fn json(r: &Report) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn markdown(r: &Report) -> String {
    let mut out = format!(
        "# Validation: {}\n\nCPU output `{}`, GPU output `{}`: {} and {} rows{}.\n\n",
        r.verdict,
        r.cpu,
        r.gpu,
        r.cpu_rows,
        r.gpu_rows,
        if r.key.is_empty() {
            String::new()
        } else {
            format!(", key `{}`", r.key.join(","))
        }
    );
    if !r.reasons.is_empty() {
        out.push_str("## Why\n\n");
        for x in &r.reasons {
            out.push_str(&format!("- {}\n", md_cell(x)));
        }
        out.push('\n');
    }
    out.push_str("## Checks\n\n| layer | check | column | CPU | GPU | deviation | verdict | detail |\n|---|---|---|---|---|---|---|---|\n");
    for c in &r.checks {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            c.layer,
            md_cell(&c.check),
            md_cell(c.column.as_deref().unwrap_or("")),
            md_cell(&c.cpu),
            md_cell(&c.gpu),
            dev(c.deviation_pct),
            c.verdict,
            md_cell(&c.detail)
        ));
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn html(r: &Report) -> String {
    let color = |v: Verdict| match v {
        Verdict::Pass => "#1a7f37",
        Verdict::Warn => "#9a6700",
        Verdict::Fail => "#cf222e",
    };
    let mut out = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>aether validate: {v}</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}\
         .v{{font-weight:bold}}</style></head><body>\
         <h1>Validation: <span style=\"color:{c}\">{v}</span></h1>\
         <p>CPU output <code>{cpu}</code> ({cr} rows), GPU output <code>{gpu}</code> ({gr} rows){key}.</p>",
        v = r.verdict,
        c = color(r.verdict),
        cpu = esc(&r.cpu),
        gpu = esc(&r.gpu),
        cr = r.cpu_rows,
        gr = r.gpu_rows,
        key = if r.key.is_empty() {
            String::new()
        } else {
            format!(", key <code>{}</code>", esc(&r.key.join(",")))
        }
    );
    if !r.reasons.is_empty() {
        out.push_str("<h2>Why</h2><ul>");
        for x in &r.reasons {
            out.push_str(&format!("<li>{}</li>", esc(x)));
        }
        out.push_str("</ul>");
    }
    out.push_str("<h2>Checks</h2><table><tr><th>layer</th><th>check</th><th>column</th><th>CPU</th><th>GPU</th><th>deviation</th><th>verdict</th><th>detail</th></tr>");
    for c in &r.checks {
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"v\" style=\"color:{}\">{}</td><td>{}</td></tr>",
            esc(&c.layer),
            esc(&c.check),
            esc(c.column.as_deref().unwrap_or("")),
            esc(&c.cpu),
            esc(&c.gpu),
            dev(c.deviation_pct),
            color(c.verdict),
            c.verdict,
            esc(&c.detail)
        ));
    }
    out.push_str("</table></body></html>\n");
    out
}
