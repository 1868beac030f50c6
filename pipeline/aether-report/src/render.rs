//! The reports as text tables, CSV and Markdown (JSON is the structs themselves), and the
//! display of their figures, which the HTML pages use too.

use crate::model::{JobDetail, JobRow, Kpis, Overview, RunRow, ValidationReport, ValidationRow};

/// A duration: `850 ms`, `12.3 s`, `4 min 05 s`, `2 h 10 min`.
pub fn duration(ms: Option<i64>) -> String {
    let Some(ms) = ms else {
        return "–".into();
    };
    let s = ms as f64 / 1000.0;
    if ms < 1000 {
        format!("{ms} ms")
    } else if s < 60.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        format!("{} min {:02} s", (s / 60.0) as i64, (s % 60.0) as i64)
    } else {
        format!(
            "{} h {:02} min",
            (s / 3600.0) as i64,
            ((s % 3600.0) / 60.0) as i64
        )
    }
}

pub use crate::money::usd;

/// A speedup: `2.41x`.
pub fn speedup(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.2}x")).unwrap_or_else(|| "–".into())
}

/// A date and time in UTC: `2026-12-01 21:05`.
pub fn when(ms: Option<i64>) -> String {
    let Some(ms) = ms else {
        return "–".into();
    };
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // civil from days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60
    )
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(|x| x.to_string()).unwrap_or_default()
}

/// Rows of text under headers, rendered as an aligned table, CSV or Markdown.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// An aligned text table (cells cut at 60 characters).
    pub fn text(&self) -> String {
        let cut = |s: &str| {
            if s.chars().count() > 60 {
                format!("{}…", s.chars().take(59).collect::<String>())
            } else {
                s.to_string()
            }
        };
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(cut(c).chars().count());
            }
        }
        let line = |cells: &[String]| {
            cells
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{:<w$}", cut(c), w = w[i]))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        };
        let mut out = line(&self.headers);
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
            out.push('\n');
        }
        out
    }

    /// CSV with a header row.
    pub fn csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let _ = w.write_record(&self.headers);
        for r in &self.rows {
            let _ = w.write_record(r);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// A Markdown table (`|` and newlines in cells escaped).
    pub fn markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let mut out = format!(
            "| {} |\n|{}|\n",
            self.headers
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | "),
            self.headers
                .iter()
                .map(|_| "---")
                .collect::<Vec<_>>()
                .join("|")
        );
        for r in &self.rows {
            out.push_str(&format!(
                "| {} |\n",
                r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            ));
        }
        out
    }
}

impl JobRow {
    pub fn predicted(&self) -> String {
        speedup(self.predicted_speedup)
    }
    pub fn measured(&self) -> String {
        speedup(self.measured_speedup)
    }
    /// What the job list sorts its speedups by: measured, else predicted.
    pub fn speedup_key(&self) -> f64 {
        self.measured_speedup
            .or(self.predicted_speedup)
            .unwrap_or(0.0)
    }
    pub fn cpu_cost(&self) -> String {
        usd(self.cpu_cost_usd)
    }
    /// The app id in pieces that end at its `_` and `-`, where a narrow column may break it.
    pub fn app_id_parts(&self) -> Vec<&str> {
        self.app_id.split_inclusive(['_', '-']).collect()
    }
    /// The GPU cost per run without its `(est.)` mark (the job list shows an estimate apart).
    pub fn gpu_cost_figure(&self) -> String {
        usd(self.gpu_cost_usd)
    }
    pub fn gpu_cost(&self) -> String {
        let c = usd(self.gpu_cost_usd);
        if self.gpu_cost_usd.is_some() && !self.gpu_cost_measured {
            format!("{c} (est.)")
        } else {
            c
        }
    }
    pub fn savings(&self) -> String {
        usd(self.savings_per_run_usd)
    }
    pub fn monthly_usd(&self) -> String {
        usd(self.savings_per_month_usd)
    }
    /// How often the job runs: `2.0 runs/month`.
    pub fn frequency(&self) -> String {
        self.runs_per_month
            .map(|n| format!("{n:.1} runs/month"))
            .unwrap_or_default()
    }
    pub fn monthly(&self) -> String {
        match (self.savings_per_month_usd, self.runs_per_month) {
            (Some(s), Some(n)) => format!("{} ({n:.1} runs)", usd(Some(s))),
            _ => "–".into(),
        }
    }
    pub fn cpu_time(&self) -> String {
        duration(self.cpu_duration_ms)
    }
    pub fn gpu_time(&self) -> String {
        duration(self.gpu_duration_ms)
    }
    pub fn verdict(&self) -> String {
        self.validation.clone().unwrap_or_else(|| "–".into())
    }
    /// The cells of this job's row in `report list`: Job, App, Category, Pred., Meas., CPU $/run,
    /// GPU $/run, Valid., Action, Reason, Config (the full table and the one that fits alike).
    pub fn list_cells(&self) -> Vec<String> {
        vec![
            self.job_id.to_string(),
            self.app_name.clone(),
            self.category_text(),
            self.predicted(),
            self.measured(),
            self.cpu_cost(),
            self.gpu_cost(),
            self.verdict(),
            self.action().into(),
            self.recommendation.reason.clone(),
            self.config(),
        ]
    }

    /// The prediction beside the measurement: the speedup's error (and whether the measured
    /// speedup fell in the predicted range), the GPU cost's; which runs measured it.
    pub fn prediction_error(&self) -> String {
        let Some(e) = self.speedup_error_pct else {
            return "– (no successful GPU run yet)".into();
        };
        let range = match (self.predicted_low, self.predicted_high, self.within_range) {
            (Some(l), Some(h), Some(w)) => format!(
                "; {} the predicted range {l:.2}x-{h:.2}x",
                if w { "within" } else { "outside" }
            ),
            _ => String::new(),
        };
        let cost = self
            .gpu_cost_error_pct
            .map(|c| format!("; GPU cost {c:+.0}%"))
            .unwrap_or_default();
        let run = self
            .best_run_id
            .map(|r| format!(" (the CPU run against GPU run {r})"))
            .unwrap_or_default();
        format!("speedup {e:+.0}%{range}{cost}{run}")
    }

    pub fn category_text(&self) -> String {
        self.category.clone().unwrap_or_else(|| "–".into())
    }
    pub fn action(&self) -> &'static str {
        self.recommendation.action.label()
    }
    pub fn config(&self) -> String {
        self.config_id
            .map(|c| c.to_string())
            .unwrap_or_else(|| "–".into())
    }
}

impl RunRow {
    pub fn duration(&self) -> String {
        duration(self.duration_ms)
    }
    pub fn cost(&self) -> String {
        usd(self.cost_usd)
    }
    pub fn started(&self) -> String {
        when(self.start_ms)
    }
    pub fn speedup_text(&self) -> String {
        speedup(self.speedup)
    }
    /// `25% idle ($1.25)`.
    pub fn idle_text(&self) -> String {
        match &self.idle {
            Some(i) => format!(
                "{:.0}% idle{}",
                i.pct(),
                i.idle_cost_usd
                    .map(|c| format!(" ({})", usd(Some(c))))
                    .unwrap_or_default()
            ),
            None => "–".into(),
        }
    }
    /// The run's cost with idle executors released after 60 s.
    pub fn scale_to_zero_text(&self) -> String {
        usd(self.idle.as_ref().and_then(|i| i.scale_to_zero_cost_usd))
    }
    /// The config changes as `key: before → after` lines.
    pub fn changes(&self) -> Vec<String> {
        self.changed
            .iter()
            .map(|(k, a, b)| {
                format!(
                    "{k}: {} → {}",
                    a.as_deref().unwrap_or("(unset)"),
                    b.as_deref().unwrap_or("(unset)")
                )
            })
            .collect()
    }
}

impl ValidationRow {
    pub fn created(&self) -> String {
        when(Some(self.created_ms))
    }
}

/// The KPIs as (label, value) pairs, in the order the reports show them.
pub fn kpi_lines(k: &Kpis) -> Vec<(&'static str, String)> {
    vec![
        ("Jobs", k.jobs.to_string()),
        ("Qualified", k.qualified.to_string()),
        ("Recommended for GPU", k.recommended.to_string()),
        ("Tested on GPU", k.tested.to_string()),
        (
            "Measured vs predicted only",
            format!(
                "{} measured, {} predicted only",
                k.measured, k.predicted_only
            ),
        ),
        ("Validated", k.validated.to_string()),
        ("To migrate", k.migrate.to_string()),
        ("Measured speedup", speedup(k.measured_speedup)),
        ("Predicted speedup (untested)", speedup(k.predicted_speedup)),
        ("Cost per run before", usd(Some(k.cost_before_usd))),
        ("Cost per run after", usd(Some(k.cost_after_usd))),
        ("Savings per run", usd(Some(k.savings_per_run_usd))),
        ("Savings per month", usd(k.savings_per_month_usd)),
        (
            "Predicted savings per run (untested)",
            usd(Some(k.predicted_savings_per_run_usd)),
        ),
        (
            "Predicted savings, 80% range",
            format!(
                "{} to {}",
                usd(Some(k.predicted_savings_low_usd)),
                usd(Some(k.predicted_savings_high_usd))
            ),
        ),
        ("Costs at", prices_text(k)),
    ]
}

/// The prices the qualified jobs' costs are at: one source, or each with its jobs.
pub fn prices_text(k: &Kpis) -> String {
    match k.price_sources.as_slice() {
        [] => "no costed job yet".into(),
        [(p, _)] => p.clone(),
        many => many
            .iter()
            .map(|(p, n)| format!("{p} ({n} job{})", if *n == 1 { "" } else { "s" }))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// The job list.
pub fn jobs_table(o: &Overview) -> Table {
    let mut t = Table::new(&[
        "Job ID",
        "App Name",
        "App ID",
        "Category",
        "Predicted Speedup",
        "Measured Speedup",
        "CPU Duration",
        "GPU Duration",
        "CPU Cost USD",
        "GPU Cost USD",
        "GPU Cost Measured",
        "Savings USD",
        "Savings Per Month USD",
        "Validation",
        "Recommendation",
        "Reason",
        "Config ID",
        "Qualifications",
        "Event Log",
        "Predicted Low",
        "Predicted High",
        "Speedup Error Percent",
        "Within Range",
        "Predicted GPU Cost USD",
        "GPU Cost Error Percent",
    ]);
    let f2 = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_default();
    let f4 = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_default();
    for j in &o.jobs {
        t.rows.push(vec![
            j.job_id.to_string(),
            j.app_name.clone(),
            j.app_id.clone(),
            opt(&j.category),
            f2(j.predicted_speedup),
            f2(j.measured_speedup),
            opt(&j.cpu_duration_ms),
            opt(&j.gpu_duration_ms),
            f4(j.cpu_cost_usd),
            f4(j.gpu_cost_usd),
            j.gpu_cost_measured.to_string(),
            f4(j.savings_per_run_usd),
            f4(j.savings_per_month_usd),
            opt(&j.validation),
            j.recommendation.action.label().into(),
            j.recommendation.reason.clone(),
            opt(&j.config_id),
            j.qualifications.to_string(),
            j.event_log.clone(),
            f2(j.predicted_low),
            f2(j.predicted_high),
            f2(j.speedup_error_pct),
            opt(&j.within_range),
            f4(j.predicted_gpu_cost_usd),
            f2(j.gpu_cost_error_pct),
        ]);
    }
    t
}

/// The job list for a terminal: the columns that fit, figures formatted.
pub fn jobs_text(o: &Overview) -> String {
    let mut t = Table::new(&[
        "Job",
        "App",
        "Category",
        "Pred.",
        "Meas.",
        "CPU $/run",
        "GPU $/run",
        "Valid.",
        "Action",
        "Reason",
        "Config",
    ]);
    for j in &o.jobs {
        t.rows.push(j.list_cells());
    }
    let mut out = String::new();
    for (k, v) in kpi_lines(&o.kpis) {
        out.push_str(&format!("{k:<38} {v}\n"));
    }
    out.push('\n');
    out.push_str(&t.text());
    out
}

/// A job's runs.
pub fn runs_table(d: &JobDetail) -> Table {
    let mut t = Table::new(&[
        "Run ID",
        "Kind",
        "Cluster",
        "Status",
        "Started",
        "Duration",
        "Speedup",
        "Cost",
        "Idle Executors",
        "Cost Scale-to-zero 60s",
        "Config ID",
        "Changes",
        "Decision",
        "Validation",
        "Best",
    ]);
    for r in &d.runs {
        t.rows.push(vec![
            r.run_id.to_string(),
            r.kind.clone(),
            r.cluster.clone(),
            r.status.clone(),
            r.started(),
            r.duration(),
            r.speedup_text(),
            r.cost(),
            r.idle_text(),
            r.scale_to_zero_text(),
            opt(&r.config_id),
            match r.changed.len() {
                0 => String::new(),
                n => format!("{n} changed"),
            },
            r.decision.clone().unwrap_or_default(),
            r.validation.clone().unwrap_or_default(),
            if r.best { "best".into() } else { String::new() },
        ]);
    }
    t
}

/// A job's page as text (`md`: Markdown).
pub fn job_text(d: &JobDetail, md: bool) -> String {
    let j = &d.job;
    let mut out = String::new();
    let h = |s: &str| {
        if md {
            format!("\n## {s}\n\n")
        } else {
            format!("\n{s}\n")
        }
    };
    out.push_str(&if md {
        format!("# Job {}: {}\n\n", j.job_id, j.app_name)
    } else {
        format!("job {}: {} ({})\n", j.job_id, j.app_name, j.app_id)
    });
    let facts = [
        ("App ID", j.app_id.clone()),
        ("Event log", j.event_log.clone()),
        ("Category", j.category_text()),
        ("Predicted speedup", j.predicted()),
        ("Measured speedup", j.measured()),
        ("Prediction error", j.prediction_error()),
        ("CPU duration", j.cpu_time()),
        ("Best GPU duration", j.gpu_time()),
        ("CPU cost per run", j.cpu_cost()),
        ("GPU cost per run", j.gpu_cost()),
        ("Savings per run", j.savings()),
        ("Savings per month", j.monthly()),
        ("Validation", j.verdict()),
        (
            "Recommendation",
            format!("{}: {}", j.action(), j.recommendation.reason),
        ),
        ("Config to use", j.config()),
    ];
    for (k, v) in facts {
        out.push_str(&if md {
            format!("- **{k}**: {}\n", v.replace('\n', " "))
        } else {
            format!("  {k:<20} {v}\n")
        });
    }
    out.push_str(&h("Runs"));
    let t = runs_table(d);
    out.push_str(&if md { t.markdown() } else { t.text() });
    // how an EMR on EKS run's cost is made up
    for r in &d.runs {
        if let Some(n) = &r.cost_note {
            out.push_str(&format!(
                "{}run {} cost: {n}\n",
                if md { "\n- " } else { "" },
                r.run_id
            ));
        }
    }
    // each run's config changes in full (a table cell would cut them)
    let changed: Vec<_> = d.runs.iter().filter(|r| !r.changed.is_empty()).collect();
    if !changed.is_empty() {
        out.push_str(&h("Config changes (against the previous GPU run)"));
        for r in changed {
            out.push_str(&format!(
                "{}run {} (config {}):\n",
                if md { "- " } else { "" },
                r.run_id,
                opt(&r.config_id)
            ));
            for c in r.changes() {
                out.push_str(&if md {
                    format!("  - `{c}`\n")
                } else {
                    format!("  {c}\n")
                });
            }
        }
    }
    if !d.validations.is_empty() {
        out.push_str(&h("Validations"));
        let t = validations_table(&d.validations);
        out.push_str(&if md { t.markdown() } else { t.text() });
    }
    if !d.spark_defaults.is_empty() {
        out.push_str(&h("spark-defaults.conf (the config to use)"));
        out.push_str(&if md {
            format!("```\n{}```\n", d.spark_defaults)
        } else {
            d.spark_defaults.clone()
        });
    }
    if !d.cluster.is_empty() && d.cluster != "null" {
        out.push_str(&h("GPU cluster"));
        out.push_str(&if md {
            format!("```json\n{}\n```\n", d.cluster)
        } else {
            format!("{}\n", d.cluster)
        });
    }
    out
}

/// Validations, one row each.
pub fn validations_table(v: &[ValidationRow]) -> Table {
    let mut t = Table::new(&[
        "Validation ID",
        "Job ID",
        "App Name",
        "When",
        "Verdict",
        "Failed Checks",
        "GPU Run",
        "Reasons",
    ]);
    for r in v {
        t.rows.push(vec![
            r.validation_id.to_string(),
            r.job_id.to_string(),
            r.app_name.clone(),
            r.created(),
            r.verdict.clone(),
            r.failed_checks.to_string(),
            opt(&r.gpu_run_id),
            r.reasons.join("; "),
        ]);
    }
    t
}

/// The validation report as text or Markdown.
pub fn validation_text(r: &ValidationReport, md: bool) -> String {
    let mut out = if md {
        format!(
            "# Validation report {} – {}\n\n",
            when(Some(r.since_ms)),
            when(Some(r.until_ms))
        )
    } else {
        format!(
            "validations {} – {} (UTC)\n",
            when(Some(r.since_ms)),
            when(Some(r.until_ms))
        )
    };
    out.push_str(&format!(
        "{} jobs validated: {} PASS, {} WARN, {} FAIL; {} new failure(s), {} fixed\n\n",
        r.latest.len(),
        r.pass,
        r.warn,
        r.fail,
        r.new_failures.len(),
        r.fixed.len()
    ));
    let mut t = validations_table(&r.latest);
    t.headers.insert(0, "New".into());
    for (row, v) in t.rows.iter_mut().zip(&r.latest) {
        row.insert(
            0,
            if r.new_failures.contains(&v.job_id) {
                "NEW".into()
            } else if r.fixed.contains(&v.job_id) {
                "fixed".into()
            } else {
                String::new()
            },
        );
    }
    out.push_str(&if md { t.markdown() } else { t.text() });
    out
}

/// A finished run as `submit` and `tune` print it (tab-separated, one line).
pub fn run_line(run: &aether_core::history::Run) -> String {
    format!(
        "run {}\t{}\tstep {}\tduration {} ms\tevent log {}",
        run.run_id,
        run.status,
        run.step_id.as_deref().unwrap_or("-"),
        run.duration_ms.unwrap_or(0),
        run.event_log.as_deref().unwrap_or("-")
    )
}

/// A tune iteration as `tune` prints it: its run, config, time, cost, what changed, the
/// decision (tab-separated, one line).
pub fn iteration_line(it: &aether_core::history::TuneIteration) -> String {
    let changed = it
        .changed
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("(removed)")))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "-".into());
    format!(
        "iteration {}\trun {}\tconfig {}\t{} ms\t${:.4}\t{}\tchanged: {changed}\t{}",
        it.iteration,
        it.run_id.map(|r| r.to_string()).unwrap_or("-".into()),
        it.config_id,
        it.duration_ms.map(|d| d.to_string()).unwrap_or("-".into()),
        it.cost_usd.unwrap_or(0.0),
        it.status,
        it.decision
    )
}

/// A tune session's best run against the CPU run (its duration and cost per run).
pub fn tune_best(
    best: &aether_core::history::Run,
    cpu_ms: Option<i64>,
    cpu_cost_usd: Option<f64>,
) -> String {
    let d = best.duration_ms.unwrap_or(0);
    format!(
        "best: run {} with config {} in {d} ms{}{}",
        best.run_id,
        best.config_id.unwrap_or(0),
        cpu_ms
            .filter(|_| d > 0)
            .map(|c| format!(", {:.2}x the CPU run's {c} ms", c as f64 / d as f64))
            .unwrap_or_default(),
        match (cpu_cost_usd, best.cost_usd) {
            (Some(c), Some(g)) => format!("; cost per run ${c:.4} (CPU) -> ${g:.4}"),
            (None, Some(g)) => format!("; cost per run ${g:.4}"),
            _ => String::new(),
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures() {
        assert_eq!(usd(None), "–");
        assert_eq!(usd(Some(f64::NAN)), "–");
        // nothing is $0, whatever its sign
        assert_eq!(usd(Some(0.0)), "$0");
        assert_eq!(usd(Some(-0.0)), "$0");
        // from $100: whole dollars, grouped
        assert_eq!(usd(Some(1234.5)), "$1,235");
        assert_eq!(usd(Some(1_234_567.4)), "$1,234,567");
        assert_eq!(usd(Some(100.0)), "$100");
        assert_eq!(usd(Some(99.996)), "$100");
        assert_eq!(usd(Some(-250.0)), "-$250");
        // from $1: cents
        assert_eq!(usd(Some(99.99)), "$99.99");
        assert_eq!(usd(Some(10.0)), "$10.00");
        assert_eq!(usd(Some(4.375)), "$4.38");
        assert_eq!(usd(Some(1.0)), "$1.00");
        assert_eq!(usd(Some(0.9996)), "$1.00");
        assert_eq!(usd(Some(-1.25)), "-$1.25");
        // below $1: two significant digits, never rounded to $0.00 or $0.01
        assert_eq!(usd(Some(0.5)), "$0.50");
        assert_eq!(usd(Some(-0.5)), "-$0.50");
        assert_eq!(usd(Some(0.123)), "$0.12");
        assert_eq!(usd(Some(0.0137)), "$0.014");
        assert_eq!(usd(Some(0.0119)), "$0.012");
        assert_eq!(usd(Some(0.0042)), "$0.0042");
        assert_eq!(usd(Some(0.0011)), "$0.0011");
        assert_eq!(usd(Some(0.001_154_311)), "$0.0012");
        assert_eq!(usd(Some(0.002_972_135)), "$0.0030");
        assert_eq!(usd(Some(-0.0012)), "-$0.0012");
        assert_eq!(usd(Some(0.00996)), "$0.010");
        assert_eq!(usd(Some(0.0996)), "$0.10");
        assert_eq!(usd(Some(0.000_012_34)), "$0.000012");
        assert_eq!(duration(Some(850)), "850 ms");
        assert_eq!(duration(Some(12_340)), "12.3 s");
        assert_eq!(duration(Some(245_000)), "4 min 05 s");
        assert_eq!(duration(Some(7_800_000)), "2 h 10 min");
        // 2026-12-01 21:05 UTC
        assert_eq!(when(Some(1_796_159_100_000)), "2026-12-01 21:05");
        assert_eq!(when(Some(0)), "1970-01-01 00:00");
    }

    #[test]
    fn tables_escape_what_they_must() {
        let t = Table {
            headers: vec!["a".into(), "b".into()],
            rows: vec![vec!["x|y".into(), "1,2".into()]],
        };
        assert_eq!(t.markdown(), "| a | b |\n|---|---|\n| x\\|y | 1,2 |\n");
        assert_eq!(t.csv(), "a,b\nx|y,\"1,2\"\n");
    }
}
