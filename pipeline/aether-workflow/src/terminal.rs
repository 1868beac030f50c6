//! The job list for a terminal (`aether report list`, the end of `aether run`): the KPIs, then
//! a line per job, fitted to the terminal's width by `aether_core::table` (long names and
//! reasons cut, secondary columns left out when they do not fit). The full list
//! (`report list --wide`) and every other form are aether-report's.

use aether_core::table::{Column, Table};
use aether_report::model::Overview;
use aether_report::render;

/// The job list at `width` columns; with `None`, every column at full width
/// (`aether_report::render::jobs_text`).
pub fn jobs_text(o: &Overview, width: Option<usize>) -> String {
    let Some(width) = width else {
        return render::jobs_text(o);
    };
    let mut t = Table::new(vec![
        Column::new("Job").right(),
        Column::new("App").shrink(10),
        Column::new("Category").optional(4),
        Column::new("Pred.").right(),
        Column::new("Meas.").right(),
        Column::new("CPU $/run").right().optional(2),
        Column::new("GPU $/run").right().optional(1),
        Column::new("Valid.").optional(3),
        Column::new("Action"),
        Column::new("Reason").shrink(24).optional(5),
        Column::new("Config").right(),
    ]);
    for j in &o.jobs {
        t.row(j.list_cells());
    }
    let mut out = String::new();
    // a long value (the prices' label) wraps under itself
    for (k, v) in render::kpi_lines(&o.kpis) {
        let lines = aether_core::table::wrap_line(&v, width.saturating_sub(39).max(20));
        for (i, l) in lines.iter().enumerate() {
            let k = if i == 0 { k } else { "" };
            out.push_str(&format!("{k:<38} {}\n", l.trim_start()));
        }
    }
    out.push('\n');
    out.push_str(&t.render(width));
    out
}
