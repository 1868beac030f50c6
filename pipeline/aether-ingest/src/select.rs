//! Which logs and apps a run reads: the reference qualification's filters (its
//! `--filter-criteria`, `--application-name`, `--start-app-time`, `--match-event-logs`,
//! `--user-name`, `--spark-property`, `--min/max-event-log-size`, `--fs-start/end-time`,
//! `--any`/`--all`), with its semantics, in one place for every command that reads logs.
//!
//! Two stages, cheap first. The file filters (name, stored size, file time, the N newest or
//! oldest files) decide from the listing alone, before any log is opened. The app filters (name,
//! user, Spark properties, start time, the N newest or oldest apps overall or per app name) read
//! each remaining log only as far as its `SparkListenerApplicationStart` and first
//! `SparkListenerEnvironmentUpdate` ([`read_head`]). Every log left out gets a reason, which the
//! commands report as `SKIPPED: …`.

use crate::source::LogSource;
pub use crate::utc::{format_utc, parse_utc};
use std::io::{BufRead, BufReader};

/// Newest or oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Newest,
    Oldest,
}

/// What "newest" is measured by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// The application's start (`N-newest`, `N-oldest`).
    AppStart,
    /// The log's file time (`N-newest-filesystem`, `N-oldest-filesystem`).
    FileTime,
    /// The application's start, N for each app name (`N-newest-per-app-name`).
    PerAppName,
}

/// `--filter_criteria`: the N newest or oldest logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Criteria {
    pub n: usize,
    pub order: Order,
    pub by: By,
}

impl std::str::FromStr for Criteria {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "{s:?}: expected N-newest, N-oldest, N-newest-filesystem, N-oldest-filesystem, \
                 N-newest-per-app-name or N-oldest-per-app-name (e.g. 100-newest)"
            )
        };
        let (n, rest) = s.trim().split_once('-').ok_or_else(bad)?;
        let n: usize = n.parse().map_err(|_| bad())?;
        let (order, by) = match rest {
            "newest" => (Order::Newest, By::AppStart),
            "oldest" => (Order::Oldest, By::AppStart),
            "newest-filesystem" => (Order::Newest, By::FileTime),
            "oldest-filesystem" => (Order::Oldest, By::FileTime),
            "newest-per-app-name" => (Order::Newest, By::PerAppName),
            "oldest-per-app-name" => (Order::Oldest, By::PerAppName),
            _ => return Err(bad()),
        };
        if n == 0 {
            return Err(format!("{s:?}: N must be at least 1"));
        }
        Ok(Criteria { n, order, by })
    }
}

fn order_word(o: Order) -> &'static str {
    match o {
        Order::Newest => "newest",
        Order::Oldest => "oldest",
    }
}

impl std::fmt::Display for Criteria {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let order = order_word(self.order);
        let by = match self.by {
            By::AppStart => "",
            By::FileTime => "-filesystem",
            By::PerAppName => "-per-app-name",
        };
        write!(f, "{}-{order}{by}", self.n)
    }
}

/// `--application_name`: a substring, an exact name or a regular expression matching the
/// whole name (as Java's `String.matches`); `~NAME` selects every other app.
#[derive(Clone, Debug)]
pub struct AppName {
    text: String,
    regex: Option<regex::Regex>,
    negate: bool,
}

impl std::str::FromStr for AppName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (negate, text) = match s.strip_prefix('~') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        if text.is_empty() {
            return Err("an empty application name".to_string());
        }
        // a name that is not a valid pattern still matches as a substring (the reference stops
        // with an error there; a name such as "etl (v2" is a fair thing to look for)
        let regex = regex::Regex::new(&format!("^(?:{text})$")).ok();
        Ok(AppName {
            text: text.to_string(),
            regex,
            negate,
        })
    }
}

impl AppName {
    /// Whether an app of this name is selected.
    pub fn selects(&self, name: &str) -> bool {
        let hit =
            name.contains(&self.text) || self.regex.as_ref().is_some_and(|r| r.is_match(name));
        hit != self.negate
    }
}

impl std::fmt::Display for AppName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", if self.negate { "~" } else { "" }, self.text)
    }
}

/// `--spark_property KEY[:VALUE]`: apps that set KEY (to VALUE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparkProperty {
    pub key: String,
    pub value: Option<String>,
}

impl std::str::FromStr for SparkProperty {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (key, value) = match s.split_once(':') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (s, None),
        };
        if key.trim().is_empty() {
            return Err(format!("{s:?}: expected KEY or KEY:VALUE"));
        }
        Ok(SparkProperty {
            key: key.trim().to_string(),
            value,
        })
    }
}

impl std::fmt::Display for SparkProperty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{}:{v}", self.key),
            None => f.write_str(&self.key),
        }
    }
}

/// The selection a command was given; the default selects every log.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// `--match_event_logs`: the log's file (or directory) name contains this.
    pub match_logs: Option<String>,
    /// `--min_event_log_size` / `--max_event_log_size`, stored bytes (every part of the log).
    pub min_bytes: Option<u64>,
    pub max_bytes: Option<u64>,
    /// `--fs_start_time` / `--fs_end_time`: the log's file time, ms since the epoch, inclusive.
    pub fs_start_ms: Option<i64>,
    pub fs_end_ms: Option<i64>,
    /// `--no_recursion`: a directory's own logs, not those of its subdirectories.
    pub no_recursion: bool,
    /// `--filter_criteria`.
    pub criteria: Option<Criteria>,
    /// `--application_name`.
    pub app_name: Option<AppName>,
    /// `--start_app_time`: apps started at or after this (ms), from a period such as `7d`.
    pub started_since_ms: Option<i64>,
    /// `--user_name`: apps this user submitted (the start event's `User`).
    pub user: Option<String>,
    /// `--spark_property` (any of them).
    pub spark_properties: Vec<SparkProperty>,
    /// `--any`: an app passing any one app filter is selected (default: all of them).
    pub any: bool,
}

/// A log the selection leaves out, and why (with what was known of it: a dry run lists it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub log: String,
    pub reason: String,
    /// Stored bytes, every part.
    pub bytes: u64,
    pub modified_ms: Option<i64>,
    /// Its first events, when the app filters read them.
    pub head: Option<Head>,
}

impl Skipped {
    fn new(log: &LogSource, reason: String, head: Option<Head>) -> Self {
        Skipped {
            log: log.display.clone(),
            reason,
            bytes: log.size(),
            modified_ms: log.modified_ms(),
            head,
        }
    }
}

impl Selection {
    /// Whether any app filter is given: the logs' first events must then be read.
    pub fn reads_apps(&self) -> bool {
        self.app_name.is_some()
            || self.started_since_ms.is_some()
            || self.user.is_some()
            || !self.spark_properties.is_empty()
            || self.criteria.is_some_and(|c| c.by != By::FileTime)
    }

    /// The file filters, in the reference's order (name, then size, then file time, then the N
    /// newest or oldest files); what they leave out, with the reason.
    pub fn files(&self, logs: Vec<LogSource>) -> (Vec<LogSource>, Vec<Skipped>) {
        let mut kept = Vec::with_capacity(logs.len());
        let mut skipped = Vec::new();
        for log in logs {
            match self.file_reason(&log) {
                Some(reason) => skipped.push(Skipped::new(&log, reason, None)),
                None => kept.push(log),
            }
        }
        if let Some(c) = self.criteria.filter(|c| c.by == By::FileTime) {
            // ties (the same file time) in path order, whichever the order asked
            kept.sort_by(|a, b| {
                let (ta, tb) = (
                    a.modified_ms().unwrap_or(i64::MIN),
                    b.modified_ms().unwrap_or(i64::MIN),
                );
                let t = match c.order {
                    Order::Newest => tb.cmp(&ta),
                    Order::Oldest => ta.cmp(&tb),
                };
                t.then_with(|| a.display.cmp(&b.display))
            });
            for log in kept.split_off(c.n.min(kept.len())) {
                let reason = format!(
                    "not among the {} {} by file time (--filter_criteria {c})",
                    c.n,
                    order_word(c.order)
                );
                skipped.push(Skipped::new(&log, reason, None));
            }
        }
        (kept, skipped)
    }

    fn file_reason(&self, log: &LogSource) -> Option<String> {
        if let Some(m) = &self.match_logs {
            let name = log.file_name();
            if !name.contains(m.as_str()) {
                return Some(format!(
                    "its name {name:?} does not contain {m:?} (--match_event_logs)"
                ));
            }
        }
        let size = log.size();
        if let Some(min) = self.min_bytes.filter(|&m| size < m) {
            return Some(format!(
                "{size} bytes stored, under --min_event_log_size ({min} bytes)"
            ));
        }
        if let Some(max) = self.max_bytes.filter(|&m| size > m) {
            return Some(format!(
                "{size} bytes stored, over --max_event_log_size ({max} bytes)"
            ));
        }
        if self.fs_start_ms.is_some() || self.fs_end_ms.is_some() {
            let Some(t) = log.modified_ms() else {
                return Some("no file time to compare with --fs_start_time/--fs_end_time".into());
            };
            if let Some(start) = self.fs_start_ms.filter(|&s| t < s) {
                return Some(format!(
                    "file time {}, before --fs_start_time {}",
                    format_utc(t),
                    format_utc(start)
                ));
            }
            if let Some(end) = self.fs_end_ms.filter(|&e| t > e) {
                return Some(format!(
                    "file time {}, after --fs_end_time {}",
                    format_utc(t),
                    format_utc(end)
                ));
            }
        }
        None
    }

    /// The app filters, over logs whose first events were read: name, user, Spark properties and
    /// start time (all of them, or with `--any` one of them), then the N newest or oldest apps
    /// (overall or per app name), by start time. A log whose head could not be read is kept (its
    /// reading reports why); one without an application start is left out: no app filter can
    /// judge it.
    pub fn apps(&self, logs: Vec<(LogSource, Result<Head, String>)>) -> Selected {
        let mut out = Selected::default();
        let mut judged: Vec<(LogSource, Head)> = Vec::new();
        for (log, head) in logs {
            match head {
                Err(_) => out.kept.push((log, None)),
                Ok(h) if h.start_ms.is_none() => {
                    let reason = format!(
                        "no SparkListenerApplicationStart in its first {} MiB (an in-progress or \
                         cut-off log): the app filters cannot judge it",
                        HEAD_LIMIT >> 20
                    );
                    out.skipped.push(Skipped::new(&log, reason, Some(h)));
                }
                Ok(h) => match self.app_reason(&h) {
                    Some(reason) => out.skipped.push(Skipped::new(&log, reason, Some(h))),
                    None => judged.push((log, h)),
                },
            }
        }
        if let Some(c) = self.criteria.filter(|c| c.by != By::FileTime) {
            // by start time, ties in path order; per app name: N of each name
            judged.sort_by(|(la, a), (lb, b)| {
                let t = match c.order {
                    Order::Newest => b.start_ms.cmp(&a.start_ms),
                    Order::Oldest => a.start_ms.cmp(&b.start_ms),
                };
                t.then_with(|| la.display.cmp(&lb.display))
            });
            let mut taken: std::collections::HashMap<String, usize> = Default::default();
            for (log, h) in judged {
                let group = match c.by {
                    By::PerAppName => h.app_name.clone().unwrap_or_default(),
                    _ => String::new(),
                };
                let n = taken.entry(group).or_default();
                if *n < c.n {
                    *n += 1;
                    out.kept.push((log, Some(h)));
                } else {
                    let of = match c.by {
                        By::PerAppName => format!(
                            " of the app name {:?}",
                            h.app_name.as_deref().unwrap_or_default()
                        ),
                        _ => String::new(),
                    };
                    let reason = format!(
                        "not among the {} {}{of} by application start (--filter_criteria {c})",
                        c.n,
                        order_word(c.order)
                    );
                    out.skipped.push(Skipped::new(&log, reason, Some(h)));
                }
            }
        } else {
            out.kept
                .extend(judged.into_iter().map(|(l, h)| (l, Some(h))));
        }
        out
    }

    /// Why an app fails the app filters (all, or with `--any` every one), if it does.
    fn app_reason(&self, h: &Head) -> Option<String> {
        let mut fails: Vec<String> = Vec::new();
        let mut passes = 0;
        let mut check = |given: bool, ok: bool, why: String| {
            if given {
                if ok {
                    passes += 1;
                } else {
                    fails.push(why);
                }
            }
        };
        let name = h.app_name.as_deref().unwrap_or_default();
        if let Some(f) = &self.app_name {
            check(
                true,
                f.selects(name),
                format!("app name {name:?} is not selected by --application_name {f}"),
            );
        }
        if let Some(u) = &self.user {
            let user = h.user.as_deref().unwrap_or_default();
            // the reference: the start event's user contains the name given
            check(
                true,
                user.contains(u.as_str()),
                format!("user {user:?} is not {u:?} (--user_name)"),
            );
        }
        if !self.spark_properties.is_empty() {
            let ok = self.spark_properties.iter().any(|p| {
                h.props
                    .iter()
                    .any(|(k, v)| *k == p.key && p.value.as_ref().is_none_or(|want| want == v))
            });
            let list: Vec<String> = self
                .spark_properties
                .iter()
                .map(|p| p.to_string())
                .collect();
            check(
                true,
                ok,
                format!(
                    "sets none of the Spark properties {} (--spark_property)",
                    list.join(", ")
                ),
            );
        }
        if let Some(since) = self.started_since_ms {
            let start = h.start_ms.unwrap_or(i64::MIN);
            check(
                true,
                start >= since,
                format!(
                    "started {}, before {} (--start_app_time)",
                    format_utc(start),
                    format_utc(since)
                ),
            );
        }
        if self.any {
            (passes == 0 && !fails.is_empty()).then(|| fails.join("; "))
        } else {
            fails.into_iter().next()
        }
    }
}

/// What the app filters kept (with the head read, when one was) and left out.
#[derive(Debug, Default)]
pub struct Selected {
    pub kept: Vec<(LogSource, Option<Head>)>,
    pub skipped: Vec<Skipped>,
}

/// How much of a log's decoded start [`read_head`] reads at most, looking for the start events.
pub const HEAD_LIMIT: u64 = 64 << 20;

/// A log's first events: what the app filters and a dry run need.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// The codec of its first part (by name and magic bytes).
    pub codec: String,
    pub spark_version: Option<String>,
    pub app_id: Option<String>,
    pub app_name: Option<String>,
    pub attempt_id: Option<String>,
    /// `SparkListenerApplicationStart`'s time, ms since the epoch.
    pub start_ms: Option<i64>,
    pub user: Option<String>,
    /// The first `SparkListenerEnvironmentUpdate`'s Spark properties, in file order.
    pub props: Vec<(String, String)>,
}

impl Head {
    /// What ran the app's SQL (from [`Head::props`]).
    pub fn engine(&self) -> crate::engine::Engine {
        crate::engine::Engine::of_list(&self.props)
    }
}

/// Read `log`'s first part until its application start and environment update are both seen
/// (or [`HEAD_LIMIT`] decoded bytes, or its end). Lines that are not events are passed over: a
/// damaged line does not stop the selection (the full reading reports it).
pub fn read_head(log: &LogSource, rt: &tokio::runtime::Handle) -> Result<Head, String> {
    let part = log.parts.first().ok_or("a log without files")?;
    let (codec, reader) = crate::read::open_decoded(&part.location, rt)?;
    let mut head = Head {
        codec: codec.name().to_string(),
        ..Default::default()
    };
    let mut r = BufReader::with_capacity(1 << 16, std::io::Read::take(reader, HEAD_LIMIT));
    let mut line = Vec::new();
    let (mut started, mut env) = (false, false);
    while !(started && env) {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("cannot read: {e}")),
        }
        let Ok(crate::events::Parsed::Event(_, ev)) = crate::events::parse_line(&line) else {
            continue;
        };
        match ev {
            crate::events::Event::LogStart(s) => head.spark_version = s.spark_version,
            crate::events::Event::ApplicationStart(s) if !started => {
                started = true;
                head.app_id = s.app_id;
                head.app_name = s.app_name;
                head.attempt_id = s.attempt_id;
                head.start_ms = s.timestamp.0;
                head.user = s.user;
            }
            crate::events::Event::EnvironmentUpdate(e) if !env => {
                env = true;
                head.props = e.spark.0;
            }
            _ => {}
        }
    }
    Ok(head)
}

/// `--start_app_time`: the start of a period back from `now_ms`, as the reference reads it: a
/// positive whole number and a unit, `min` (minutes), `h`, `d` (the default), `w` or `m`
/// (calendar months).
pub fn period_start(text: &str, now_ms: i64) -> Result<i64, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let bad = || {
        format!(
            "{text:?}: expected a period greater than 0: N followed by min (minutes), h, d (days, \
             the default), w or m (months), e.g. 7d"
        )
    };
    let n: i64 = t[..digits].parse().map_err(|_| bad())?;
    if n <= 0 {
        return Err(bad());
    }
    const MIN: i64 = 60_000;
    Ok(match &t[digits..] {
        "min" => now_ms - n * MIN,
        "h" => now_ms - n * 60 * MIN,
        "" | "d" => now_ms - n * 24 * 60 * MIN,
        "w" => now_ms - n * 7 * 24 * 60 * MIN,
        "m" => months_back(now_ms, n),
        _ => return Err(bad()),
    })
}

/// [`period_start`] back from the present time.
pub fn since_now(text: &str) -> Result<i64, String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    period_start(text, now)
}

/// `now_ms` moved back `n` calendar months, the day clamped to the month's length (as
/// `java.util.Calendar.add(MONTH, -n)`).
fn months_back(now_ms: i64, n: i64) -> i64 {
    let day_ms = 86_400_000;
    let days = now_ms.div_euclid(day_ms);
    let in_day = now_ms.rem_euclid(day_ms);
    let (y, m, d) = crate::utc::civil_from_days(days);
    let total = y * 12 + (m as i64 - 1) - n;
    let (y2, m2) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
    let d2 = d.min(crate::utc::days_in_month(y2, m2));
    crate::utc::days_from_civil(y2, m2, d2) * day_ms + in_day
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criteria_spellings() {
        let c: Criteria = "100-newest".parse().unwrap();
        assert_eq!((c.n, c.order, c.by), (100, Order::Newest, By::AppStart));
        let c: Criteria = "3-oldest-filesystem".parse().unwrap();
        assert_eq!((c.n, c.order, c.by), (3, Order::Oldest, By::FileTime));
        let c: Criteria = "2-newest-per-app-name".parse().unwrap();
        assert_eq!((c.n, c.order, c.by), (2, Order::Newest, By::PerAppName));
        assert_eq!(c.to_string(), "2-newest-per-app-name");
        for bad in ["newest", "0-newest", "5-latest", "-5-newest", "5"] {
            assert!(bad.parse::<Criteria>().is_err(), "{bad}");
        }
    }

    #[test]
    fn app_names_as_the_reference_matches_them() {
        let f: AppName = "tpch".parse().unwrap();
        assert!(f.selects("tpch_q3"), "a substring");
        assert!(!f.selects("sales_report"));
        let f: AppName = "tpch_q[0-9]+".parse().unwrap();
        assert!(f.selects("tpch_q18"), "a pattern matching the whole name");
        assert!(
            !f.selects("tpch_q18__defaults"),
            "the pattern must match the whole name"
        );
        let f: AppName = "~tpch".parse().unwrap();
        assert!(
            !f.selects("tpch_q3") && f.selects("sales_report"),
            "negated"
        );
        // not a valid pattern: still a substring
        let f: AppName = "etl (v2".parse().unwrap();
        assert!(f.selects("nightly etl (v2 rerun)"));
        assert!("~".parse::<AppName>().is_err());
    }

    #[test]
    fn properties_are_keys_or_pairs() {
        let p: SparkProperty = "spark.eventLog.enabled:true".parse().unwrap();
        assert_eq!(p.value.as_deref(), Some("true"));
        let p: SparkProperty = "spark.driver.port".parse().unwrap();
        assert_eq!(p.value, None);
        // the value keeps its own colons
        let p: SparkProperty = "spark.master:spark://h:7077".parse().unwrap();
        assert_eq!(
            (p.key.as_str(), p.value.as_deref()),
            ("spark.master", Some("spark://h:7077"))
        );
    }

    #[test]
    fn periods_and_dates() {
        let now = parse_utc("2026-03-31 12:00:00").unwrap();
        assert_eq!(
            period_start("7", now).unwrap(),
            parse_utc("2026-03-24 12:00:00").unwrap()
        );
        assert_eq!(
            period_start("2h", now).unwrap(),
            parse_utc("2026-03-31 10:00:00").unwrap()
        );
        assert_eq!(
            period_start("90min", now).unwrap(),
            parse_utc("2026-03-31 10:30:00").unwrap()
        );
        assert_eq!(
            period_start("1w", now).unwrap(),
            parse_utc("2026-03-24 12:00:00").unwrap()
        );
        // a calendar month back from March 31st is February 28th (2026 is not a leap year)
        assert_eq!(
            period_start("1m", now).unwrap(),
            parse_utc("2026-02-28 12:00:00").unwrap()
        );
        assert_eq!(
            period_start("13m", now).unwrap(),
            parse_utc("2025-02-28 12:00:00").unwrap()
        );
        for bad in ["0d", "-1d", "d", "3y", "1.5h", ""] {
            assert!(period_start(bad, now).is_err(), "{bad}");
        }
        assert_eq!(parse_utc("1970-01-01 00:00:01").unwrap(), 1000);
        assert_eq!(
            parse_utc("2024-02-29").unwrap(),
            parse_utc("2024-02-29 00:00:00").unwrap()
        );
        assert!(parse_utc("2026-02-29 00:00:00").is_err());
        assert!(parse_utc("2026-13-01 00:00:00").is_err());
        assert_eq!(
            format_utc(parse_utc("2026-12-07 16:05:09").unwrap()),
            "2026-12-07 16:05:09"
        );
    }
}
