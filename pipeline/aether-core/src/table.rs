//! Text for a terminal, fitted to its width: aligned tables whose long cells are cut (`…`) and
//! whose secondary columns are left out when even cut they do not fit, and prose wrapped at
//! spaces. The one table layout of the CLI's terminal views (`qualify`, `report list`, `run`,
//! `profile`); CSV, JSON and files are never fitted.
//!
//! Widths are counted in characters (`char`s), which is what a terminal shows for the ASCII
//! and Latin text of Spark logs; East Asian wide characters would count as one column each.

/// The width to fit to when the terminal's is unknown (output piped to a file or a program).
pub const DEFAULT_WIDTH: usize = 120;

/// The width to fit terminal output to: `COLUMNS` when it is set to a number, else the width
/// of the terminal stdout is (when it is one), else [`DEFAULT_WIDTH`].
pub fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|w| *w > 0)
        .or_else(stdout_columns)
        .unwrap_or(DEFAULT_WIDTH)
}

/// The columns of the terminal stdout is, if it is one (`TIOCGWINSZ`).
#[cfg(unix)]
fn stdout_columns() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    // SAFETY: a plain C struct of integers, for which all zeroes is a valid value
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which points at one
    let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (r == 0 && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

#[cfg(not(unix))]
fn stdout_columns() -> Option<usize> {
    None
}

/// Characters, as a terminal counts columns (see the module's note).
fn len(s: &str) -> usize {
    s.chars().count()
}

/// `s` cut to `width` characters, its last one `…` when anything was cut.
pub fn ellipsize(s: &str, width: usize) -> String {
    if len(s) <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// `s` cut to `width` characters in its middle, `…` where it was cut: the start and the end
/// of a path or URL stay (`/work/shared/…/gpu_oom_eventlog.zstd`).
pub fn ellipsize_middle(s: &str, width: usize) -> String {
    let n = len(s);
    if n <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let tail = (width - 1) / 2;
    let head = width - 1 - tail;
    let mut out: String = s.chars().take(head).collect();
    out.push('…');
    out.extend(s.chars().skip(n - tail));
    out
}

/// One column of a [`Table`]: its header, its alignment and what may give way when the table
/// is too wide.
#[derive(Clone, Debug)]
pub struct Column {
    header: String,
    right: bool,
    /// Cut down to this many characters at most (`None`: never cut).
    shrink_to: Option<usize>,
    /// Left out when the table does not fit, highest first (0: always shown).
    drop_rank: u8,
}

impl Column {
    /// A left-aligned column, always shown, never cut.
    pub fn new(header: impl Into<String>) -> Column {
        Column {
            header: header.into(),
            right: false,
            shrink_to: None,
            drop_rank: 0,
        }
    }

    /// Right-aligned (figures), its header too.
    pub fn right(mut self) -> Column {
        self.right = true;
        self
    }

    /// Its cells (and header) may be cut, with `…`, down to `min` characters.
    pub fn shrink(mut self, min: usize) -> Column {
        self.shrink_to = Some(min.max(1));
        self
    }

    /// Left out when the table cannot fit with every shrinking column cut to its minimum:
    /// the column of the highest `rank` first.
    pub fn optional(mut self, rank: u8) -> Column {
        self.drop_rank = rank;
        self
    }
}

/// Rows under headers, printed aligned (two spaces between columns, no borders) and fitted
/// to a width.
#[derive(Clone, Debug)]
pub struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            columns,
            rows: Vec::new(),
        }
    }

    /// Add a row (one cell per column; missing cells are empty, extra ones ignored; line
    /// breaks and tabs in a cell become spaces).
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells: Vec<String> = cells
            .into_iter()
            .take(self.columns.len())
            .map(|c| c.replace(['\n', '\r', '\t'], " "))
            .collect();
        cells.resize(self.columns.len(), String::new());
        self.rows.push(cells);
    }

    /// The columns shown and their widths at `width`: every column at its full width when
    /// that fits; else the shrinking columns cut (the widest first) down to their minimums;
    /// else the optional columns left out one by one (highest rank first), the others given
    /// their room again. Past that (a very narrow terminal) the lines are wider than `width`.
    fn layout(&self, width: usize) -> Vec<(usize, usize)> {
        let mut shown: Vec<usize> = (0..self.columns.len()).collect();
        loop {
            let mut w: Vec<usize> = shown
                .iter()
                .map(|&c| {
                    self.rows
                        .iter()
                        .map(|r| len(&r[c]))
                        .chain([len(&self.columns[c].header)])
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            let gaps = 2 * shown.len().saturating_sub(1);
            let mut total = w.iter().sum::<usize>() + gaps;
            while total > width {
                // the widest column still above its minimum gives one character
                let widest = shown
                    .iter()
                    .enumerate()
                    .filter(|(i, c)| self.columns[**c].shrink_to.is_some_and(|m| w[*i] > m))
                    .max_by_key(|(i, _)| (w[*i], usize::MAX - *i))
                    .map(|(i, _)| i);
                let Some(i) = widest else { break };
                w[i] -= 1;
                total -= 1;
            }
            let droppable = shown
                .iter()
                .enumerate()
                .filter(|(_, c)| self.columns[**c].drop_rank > 0)
                .max_by_key(|(i, c)| (self.columns[**c].drop_rank, *i))
                .map(|(i, _)| i);
            match droppable {
                Some(i) if total > width => {
                    shown.remove(i);
                }
                _ => return shown.into_iter().zip(w).collect(),
            }
        }
    }

    /// The table in lines of at most `width` characters (when its columns allow), each ending
    /// in a line break.
    pub fn render(&self, width: usize) -> String {
        let layout = self.layout(width);
        let line = |cells: Vec<&str>| -> String {
            let mut out = String::new();
            for (k, ((c, w), cell)) in layout.iter().zip(cells).enumerate() {
                if k > 0 {
                    out.push_str("  ");
                }
                let cut = ellipsize(cell, *w);
                let pad = " ".repeat(w - len(&cut));
                if self.columns[*c].right {
                    out.push_str(&pad);
                    out.push_str(&cut);
                } else {
                    out.push_str(&cut);
                    out.push_str(&pad);
                }
            }
            let mut out = out.trim_end().to_string();
            out.push('\n');
            out
        };
        let mut out = line(
            layout
                .iter()
                .map(|(c, _)| self.columns[*c].header.as_str())
                .collect(),
        );
        for r in &self.rows {
            out.push_str(&line(layout.iter().map(|(c, _)| r[*c].as_str()).collect()));
        }
        out
    }
}

/// The list marker a line of prose starts with (after its indent), as long as it is: `- `,
/// `-> `, `* `, `12. `; 0 for none.
fn marker(s: &str) -> usize {
    for m in ["-> ", "- ", "* "] {
        if s.starts_with(m) {
            return m.len();
        }
    }
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && s[digits..].starts_with(". ") {
        return digits + 2;
    }
    0
}

/// One line of prose in lines of at most `width` characters: broken at spaces (runs of spaces
/// become one where it breaks), each next line indented under the text (past the line's
/// indent and list marker; two more spaces when it has none). A word is never cut (a path, a
/// URL, a property stay whole to copy): one longer than a line has a line of its own, which
/// it overflows (a terminal folds it). A line that fits is kept as it is.
pub fn wrap_line(line: &str, width: usize) -> Vec<String> {
    let line = line.trim_end();
    if len(line) <= width {
        return vec![line.to_string()];
    }
    let body = line.trim_start();
    let indent = line.len() - body.len();
    let m = marker(body);
    let hang = if m == 0 { indent + 2 } else { indent + m };
    // the text keeps at least half the width (or 10 characters)
    let next = " ".repeat(hang.min(width.saturating_sub((width / 2).max(10))));
    let mut out = Vec::new();
    let mut cur = line[..indent + m].to_string();
    let mut has_word = false;
    for word in line[indent + m..].split_whitespace() {
        if has_word && len(&cur) + 1 + len(word) > width {
            out.push(std::mem::replace(&mut cur, next.clone()));
            has_word = false;
        }
        if has_word {
            cur.push(' ');
        }
        cur.push_str(word);
        has_word = true;
    }
    out.push(cur);
    out
}

/// Every line of `text` through [`wrap_line`] (its line breaks kept; a final one too).
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    for l in text.lines() {
        for w in wrap_line(l, width) {
            out.push_str(&w);
            out.push('\n');
        }
    }
    if !text.ends_with('\n') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widths(s: &str) -> Vec<usize> {
        s.lines().map(len).collect()
    }

    fn sample() -> Table {
        let mut t = Table::new(vec![
            Column::new("Job").right(),
            Column::new("App ID"),
            Column::new("App Name").shrink(8).optional(1),
            Column::new("Speedup").right(),
            Column::new("GPU Cluster").optional(2),
        ]);
        t.row(vec![
            "7".into(),
            "application_1700000000000_0001".into(),
            "a rather long application name".into(),
            "1.25".into(),
            "2 x g6.4xlarge".into(),
        ]);
        t.row(vec![
            "12".into(),
            "local-1796009671201".into(),
            "tpch_q3".into(),
            "0.96".into(),
        ]);
        t
    }

    #[test]
    fn a_table_that_fits_is_printed_whole_and_aligned() {
        let text = sample().render(200);
        assert_eq!(
            text,
            "Job  App ID                          App Name                        Speedup  GPU Cluster\n\
             \x20 7  application_1700000000000_0001  a rather long application name     1.25  2 x g6.4xlarge\n\
             \x2012  local-1796009671201             tpch_q3                            0.96\n"
        );
    }

    #[test]
    fn too_wide_cuts_then_drops_columns_and_never_exceeds_the_width() {
        // full: 3+30+30+7+14 + 8 = 92; 80 cuts the name to 18
        let t = sample().render(80);
        assert!(widths(&t).iter().all(|w| *w <= 80), "{t}");
        assert!(t.contains("a rather long app…  "), "{t}");
        assert!(t.contains("2 x g6.4xlarge"), "{t}");
        // 60: the name at its minimum (8) is still too wide (68): the cluster goes, the name
        // gets room again (60 - 46 = 14)
        let t = sample().render(60);
        assert!(widths(&t).iter().all(|w| *w <= 60), "{t}");
        assert!(
            !t.contains("GPU Cluster") && !t.contains("g6.4xlarge"),
            "{t}"
        );
        assert!(t.contains("a rather long…"), "{t}");
        // 50: the name goes too; what is left is never cut
        let t = sample().render(50);
        assert_eq!(
            t.lines().next().unwrap(),
            "Job  App ID                          Speedup"
        );
        assert!(t.contains("application_1700000000000_0001     1.25"), "{t}");
        // narrower than the columns that stay: wider lines, nothing lost
        let t = sample().render(10);
        assert!(t.contains("application_1700000000000_0001"), "{t}");
    }

    #[test]
    fn cells_are_one_line() {
        let mut t = Table::new(vec![Column::new("a"), Column::new("b")]);
        t.row(vec!["x\ny".into(), "z\tw".into()]);
        assert_eq!(t.render(80), "a    b\nx y  z w\n");
    }

    #[test]
    fn ellipsize_in_the_middle_keeps_both_ends() {
        let p = "/work/shared/datasets/rapids-tools/spark-events-profiling/gpu_oom_eventlog.zstd";
        let cut = ellipsize_middle(p, 40);
        assert_eq!(len(&cut), 40);
        assert_eq!(cut, "/work/shared/dataset…u_oom_eventlog.zstd");
        assert_eq!(ellipsize_middle("short", 40), "short");
        assert_eq!(ellipsize_middle("abcdef", 1), "…");
    }

    #[test]
    fn ellipsize_counts_characters() {
        assert_eq!(ellipsize("tpch_q18__defaults", 10), "tpch_q18_…");
        assert_eq!(ellipsize("tpch_q3", 10), "tpch_q3");
        assert_eq!(ellipsize("ééééé", 4), "ééé…");
        assert_eq!(ellipsize("abc", 0), "");
    }

    #[test]
    fn prose_wraps_at_spaces_under_its_marker() {
        let l =
            "  1. spill 2324128 ms (69.2% of task time): spilled 232.3 GB from memory, 0 B to disk";
        let w = wrap_line(l, 40);
        assert_eq!(
            w,
            [
                "  1. spill 2324128 ms (69.2% of task",
                "     time): spilled 232.3 GB from",
                "     memory, 0 B to disk"
            ]
        );
        let w = wrap_line(
            "- 'spark.executor.cores' was not set, nor anything else",
            30,
        );
        assert_eq!(
            w,
            [
                "- 'spark.executor.cores' was",
                "  not set, nor anything else"
            ]
        );
        // no marker: the next lines hang by two
        let w = wrap_line(
            "App ID: local-1: health: 0 failed tasks, 0 failed stages",
            30,
        );
        assert_eq!(
            w,
            [
                "App ID: local-1: health: 0",
                "  failed tasks, 0 failed",
                "  stages"
            ]
        );
        // a word longer than a line is never cut: it has a line of its own
        let path =
            "/work/shared/datasets/rapids-tools/spark-events-profiling/gpu_oom_eventlog.zstd";
        let w = wrap_line(&format!("App ID: app-1 ({path}) is read"), 40);
        assert_eq!(
            w,
            [
                "App ID: app-1".to_string(),
                format!("  ({path})"),
                "  is read".into()
            ]
        );
        let url = "https://docs.nvidia.com/spark-rapids/user-guide/latest/additional-functionality/rapids-shuffle.html";
        let w = wrap_line(&format!("  See supported versions: {url}."), 40);
        assert_eq!(
            w,
            [
                "  See supported versions:".to_string(),
                format!("    {url}.")
            ]
        );
        // what fits is kept as is (double spaces too)
        assert_eq!(wrap_line("a  b", 10), ["a  b"]);
        assert_eq!(
            wrap("a\n\nword word word word\n", 12),
            "a\n\nword word\n  word word\n"
        );
        assert_eq!(wrap("word word word", 12), "word word\n  word");
    }
}
