//! A hand-written reader for the hot event, `SparkListenerTaskEnd`, its accumulables jumped over
//! (the caller finds and reads them). It reads exactly the fields the serde structs in
//! [`crate::event_types`] read, with the same meaning, and gives up (returns `None`) on anything
//! it is not sure of: the caller then parses the line with serde_json, which also produces the
//! error message. Tests check that both agree on every TaskEnd of the real logs.

use crate::event_types::{
    AccUpdate, BlockManagerAddress, ExecutorMetrics, InputMetrics, Num, OutputMetrics,
    ShuffleReadMetrics, ShuffleWriteMetrics, TaskEnd, TaskEndReason, TaskInfo, TaskMetrics, Text,
};

/// The value of at most 18 ASCII digits (cannot overflow).
#[inline]
fn digits_value(d: &[u8]) -> i64 {
    d.iter().fold(0i64, |v, c| v * 10 + (c - b'0') as i64)
}

struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    #[inline]
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek()? == c {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// The raw bytes of a string (escapes not processed) and whether it has any.
    #[inline]
    fn raw_string(&mut self) -> Option<(&'a [u8], bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let (end, escaped) = crate::scan::string_end_escaped(self.b, start)?;
        self.i = end + 1;
        Some((&self.b[start..end], escaped))
    }

    /// A string value as owned text (escapes processed).
    fn string(&mut self) -> Option<String> {
        let start = self.i;
        let (raw, escaped) = self.raw_string()?;
        if escaped {
            let quoted = &self.b[start..self.i];
            let quoted = &quoted[quoted.iter().position(|c| *c == b'"')?..];
            serde_json::from_slice(quoted).ok()
        } else {
            std::str::from_utf8(raw).ok().map(str::to_string)
        }
    }

    /// `null` or a string.
    fn opt_string(&mut self) -> Option<Option<String>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        self.string().map(Some)
    }

    /// `null` or a string, as [`Text`] (no allocation for short ones).
    fn opt_text(&mut self) -> Option<Option<Text>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        let start = self.i;
        let (raw, escaped) = self.raw_string()?;
        if !escaped {
            return std::str::from_utf8(raw).ok().map(|s| Some(Text::new(s)));
        }
        self.i = start;
        self.string().map(|s| Some(Text::new(&s)))
    }

    fn literal<const N: usize>(&mut self, word: &[u8; N]) -> Option<()> {
        self.ws();
        self.lit(word)
    }

    /// `lit` next, with no whitespace before it: consumed. Compared in place: a literal's
    /// length is known, so the comparison is a few loads, not a call to `memcmp`.
    #[inline(always)]
    fn lit<const N: usize>(&mut self, lit: &[u8; N]) -> Option<()> {
        self.at(lit).then(|| self.i += N)
    }

    /// Whether `lit` comes next (nothing consumed).
    #[inline(always)]
    fn at<const N: usize>(&self, lit: &[u8; N]) -> bool {
        self.b
            .get(self.i..self.i + N)
            .and_then(|s| <&[u8; N]>::try_from(s).ok())
            .is_some_and(|s| s == lit)
    }

    /// `true`, `false` or `null`.
    fn opt_bool(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b't' => self.literal(b"true").map(|_| Some(true)),
            b'f' => self.literal(b"false").map(|_| Some(false)),
            b'n' => self.literal(b"null").map(|_| None),
            _ => None,
        }
    }

    /// A JSON number as i64 (integers only; anything else gives up).
    fn int(&mut self) -> Option<i64> {
        self.ws();
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let digits = self.b[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits == 0 || digits > 18 {
            return None;
        }
        let neg = self.b[start] == b'-';
        let v = digits_value(&self.b[self.i..self.i + digits]);
        self.i += digits;
        if matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(if neg { -v } else { v })
    }

    /// A value as [`Num`]: an integer, `null`, or a numeric string; other shapes give up.
    fn num(&mut self) -> Option<Num> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|_| Num(None)),
            b'"' => {
                let (raw, escaped) = self.raw_string()?;
                if escaped {
                    return None;
                }
                if !raw.is_empty() && raw.len() <= 18 && raw.iter().all(u8::is_ascii_digit) {
                    return Some(Num(Some(digits_value(raw))));
                }
                Some(Num(crate::event_types::num_from_str(
                    std::str::from_utf8(raw).ok()?,
                )))
            }
            _ => self.int().map(|v| Num(Some(v))),
        }
    }

    /// Skip any value.
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.raw_string().map(|_| ()),
            b'{' => {
                let end = crate::scan::object_end(self.b, self.i).ok()?;
                self.i = end + 1;
                Some(())
            }
            b'[' => {
                // arrays here are small (block updates): walk their values
                self.i += 1;
                if self.eat(b']').is_some() {
                    return Some(());
                }
                loop {
                    self.skip()?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => {
                // a number: validate its shape loosely, serde checks it on the fallback path
                let start = self.i;
                while self.i < self.b.len()
                    && matches!(
                        self.b[self.i],
                        b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'
                    )
                {
                    self.i += 1;
                }
                (self.i > start).then_some(())
            }
        }
    }

    /// Walk an object, calling `f` with each key (raw bytes, unescaped keys only) positioned
    /// at its value; `f` must consume the value.
    fn object(&mut self, mut f: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let (key, escaped) = self.raw_string()?;
            if escaped {
                return None;
            }
            self.eat(b':')?;
            f(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Walk an object whose keys come in the order of `keys` (the order Spark writes them),
    /// calling `f` with each key's index in `keys` (`usize::MAX` for a key not there),
    /// positioned at its value; `f` must consume the value. The key expected next is recognised
    /// by comparing bytes in place; a key out of that order is read and looked up.
    fn object_keys(
        &mut self,
        keys: &[&[u8]],
        mut f: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        let mut next = 0;
        loop {
            self.ws();
            // `"key"`: a key without quotes or backslashes is these bytes exactly
            let at = self.i + 1;
            let expected = keys.get(next).filter(|k| {
                self.b.get(self.i) == Some(&b'"')
                    && self.b.get(at..at + k.len()) == Some(**k)
                    && self.b.get(at + k.len()) == Some(&b'"')
            });
            let idx = match expected {
                Some(k) => {
                    self.i = at + k.len() + 1;
                    next
                }
                None => {
                    let (key, escaped) = self.raw_string()?;
                    if escaped {
                        return None;
                    }
                    keys.iter().position(|k| *k == key).unwrap_or(usize::MAX)
                }
            };
            if idx != usize::MAX {
                next = idx + 1;
            }
            self.eat(b':')?;
            f(self, idx)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `null` (→ None) or an object read by `f` (see [`Cur::object_keys`]).
    fn opt_object<T: Default>(
        &mut self,
        keys: &[&[u8]],
        mut f: impl FnMut(&mut Self, usize, &mut T) -> Option<()>,
    ) -> Option<Option<T>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        let mut v = T::default();
        self.object_keys(keys, |c, k| f(c, k, &mut v))?;
        Some(Some(v))
    }
}

/// The keys of a task's end reason, in Spark's order (ExceptionFailure's, then the others').
const REASON: &[&[u8]] = &[
    b"Reason",
    b"Class Name",
    b"Description",
    b"Stack Trace",
    b"Full Stack Trace",
    b"Accumulator Updates",
    b"Kill Reason",
    b"Loss Reason",
    b"Executor ID",
    b"Exit Caused By App",
    b"Block Manager Address",
    b"Shuffle ID",
    b"Map ID",
    b"Map Index",
    b"Reduce ID",
    b"Message",
];

fn reason(c: &mut Cur, k: usize, r: &mut TaskEndReason) -> Option<()> {
    match k {
        0 => r.reason = c.opt_text()?,
        1 => r.class_name = c.opt_string()?,
        2 => r.description = c.opt_string()?,
        4 => r.full_stack_trace = c.opt_string()?,
        6 => r.kill_reason = c.opt_string()?,
        7 => r.loss_reason = c.opt_string()?,
        8 => r.executor_id = c.opt_string()?,
        9 => r.exit_caused_by_app = c.opt_bool()?,
        10 => {
            r.block_manager = c.opt_object(
                &[b"Executor ID", b"Host", b"Port"],
                |c, k, b: &mut BlockManagerAddress| {
                    match k {
                        0 => b.executor_id = c.opt_string()?,
                        1 => b.host = c.opt_string()?,
                        2 => b.port = c.num()?,
                        _ => c.skip()?,
                    }
                    Some(())
                },
            )?
        }
        11 => r.shuffle_id = c.num()?,
        12 => r.map_id = c.num()?,
        13 => r.map_index = c.num()?,
        14 => r.reduce_id = c.num()?,
        15 => r.message = c.opt_string()?,
        _ => c.skip()?,
    }
    Some(())
}

/// The keys of a task's info, in Spark's order.
const INFO: &[&[u8]] = &[
    b"Task ID",
    b"Index",
    b"Attempt",
    b"Partition ID",
    b"Launch Time",
    b"Executor ID",
    b"Host",
    b"Locality",
    b"Speculative",
    b"Getting Result Time",
    b"Finish Time",
    b"Failed",
    b"Killed",
    b"Accumulables",
];

fn info(
    c: &mut Cur,
    k: usize,
    t: &mut TaskInfo,
    has_id: &mut bool,
    hole: Option<(usize, usize)>,
) -> Option<()> {
    match k {
        0 => {
            t.task_id = c.int()?;
            *has_id = true;
        }
        1 => t.index = c.num()?,
        2 => t.attempt = c.num()?,
        4 => t.launch_time = c.num()?,
        5 => t.executor_id = c.opt_text()?,
        6 => t.host = c.opt_text()?,
        7 => t.locality = c.opt_text()?,
        8 => t.speculative = c.opt_bool()?,
        10 => t.finish_time = c.num()?,
        11 => t.failed = c.opt_bool()?,
        12 => t.killed = c.opt_bool()?,
        // read separately by the caller, which found where the array opens and closes: jumped
        // over (or emptied); anything else here gives up
        13 => {
            c.ws();
            if let Some((open, close)) = hole
                && c.i == open
                && c.b.get(c.i) == Some(&b'[')
            {
                c.i = close;
            } else {
                c.eat(b'[')?;
                c.eat(b']')?;
            }
        }
        _ => c.skip()?,
    }
    Some(())
}

/// The keys of a task's metrics, in Spark's order.
const METRICS: &[&[u8]] = &[
    b"Executor Deserialize Time",
    b"Executor Deserialize CPU Time",
    b"Executor Run Time",
    b"Executor CPU Time",
    b"Peak Execution Memory",
    b"Peak On Heap Execution Memory",
    b"Peak Off Heap Execution Memory",
    b"Result Size",
    b"JVM GC Time",
    b"Result Serialization Time",
    b"Memory Bytes Spilled",
    b"Disk Bytes Spilled",
    b"Shuffle Read Metrics",
    b"Shuffle Write Metrics",
    b"Input Metrics",
    b"Output Metrics",
    b"Updated Blocks",
];

/// The keys of a task's shuffle read metrics, in Spark's order.
const SHUFFLE_READ: &[&[u8]] = &[
    b"Remote Blocks Fetched",
    b"Local Blocks Fetched",
    b"Fetch Wait Time",
    b"Remote Bytes Read",
    b"Remote Bytes Read To Disk",
    b"Local Bytes Read",
    b"Total Records Read",
    b"Remote Requests Duration",
    b"Push Based Shuffle",
];

fn metrics(c: &mut Cur, k: usize, m: &mut TaskMetrics) -> Option<()> {
    match k {
        0 => m.executor_deserialize_time = c.num()?,
        1 => m.executor_deserialize_cpu_time = c.num()?,
        2 => m.executor_run_time = c.num()?,
        3 => m.executor_cpu_time = c.num()?,
        4 => m.peak_execution_memory = c.num()?,
        5 => m.peak_on_heap_execution_memory = c.num()?,
        6 => m.peak_off_heap_execution_memory = c.num()?,
        7 => m.result_size = c.num()?,
        8 => m.jvm_gc_time = c.num()?,
        9 => m.result_serialization_time = c.num()?,
        10 => m.memory_bytes_spilled = c.num()?,
        11 => m.disk_bytes_spilled = c.num()?,
        12 => {
            m.shuffle_read = c.opt_object(SHUFFLE_READ, |c, k, s: &mut ShuffleReadMetrics| {
                match k {
                    0 => s.remote_blocks_fetched = c.num()?,
                    1 => s.local_blocks_fetched = c.num()?,
                    2 => s.fetch_wait_time = c.num()?,
                    3 => s.remote_bytes_read = c.num()?,
                    4 => s.remote_bytes_read_to_disk = c.num()?,
                    5 => s.local_bytes_read = c.num()?,
                    6 => s.records_read = c.num()?,
                    _ => c.skip()?,
                }
                Some(())
            })?
        }
        13 => {
            m.shuffle_write = c.opt_object(
                &[
                    b"Shuffle Bytes Written",
                    b"Shuffle Write Time",
                    b"Shuffle Records Written",
                ],
                |c, k, s: &mut ShuffleWriteMetrics| {
                    match k {
                        0 => s.bytes_written = c.num()?,
                        1 => s.write_time = c.num()?,
                        2 => s.records_written = c.num()?,
                        _ => c.skip()?,
                    }
                    Some(())
                },
            )?
        }
        14 => {
            m.input = c.opt_object(
                &[b"Bytes Read", b"Records Read"],
                |c, k, s: &mut InputMetrics| {
                    match k {
                        0 => s.bytes_read = c.num()?,
                        1 => s.records_read = c.num()?,
                        _ => c.skip()?,
                    }
                    Some(())
                },
            )?
        }
        15 => {
            m.output = c.opt_object(
                &[b"Bytes Written", b"Records Written"],
                |c, k, s: &mut OutputMetrics| {
                    match k {
                        0 => s.bytes_written = c.num()?,
                        1 => s.records_written = c.num()?,
                        _ => c.skip()?,
                    }
                    Some(())
                },
            )?
        }
        _ => c.skip()?,
    }
    Some(())
}

/// The keys of a TaskEnd event, in Spark's order.
const TASK_END: &[&[u8]] = &[
    b"Event",
    b"Stage ID",
    b"Stage Attempt ID",
    b"Task Type",
    b"Task End Reason",
    b"Task Info",
    b"Task Executor Metrics",
    b"Task Metrics",
];

/// The name of the one executor metric read.
static TOTAL_GC_TIME: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"TotalGCTime\""));

/// The keys of the JSON object `line`, in order, repeats included, as text; its values are
/// skipped (nested objects by a structural scan). `None` when unsure: an escaped key, a key
/// that is not UTF-8, or anything but one object up to the end (the caller asks serde).
pub fn keys_of(line: &[u8]) -> Option<Vec<&str>> {
    let mut c = Cur { b: line, i: 0 };
    let mut keys = Vec::new();
    c.object(|c, k| {
        keys.push(std::str::from_utf8(k).ok()?);
        c.skip()
    })?;
    c.ws();
    (c.i == line.len()).then_some(keys)
}

/// Where the value of the TotalGCTime key in `obj`, a `Task Executor Metrics` object, starts:
/// `Some(None)` when the object has no such key, `None` when unsure (an escape anywhere, an
/// object or array inside it, the name twice, or the name not followed by a colon). Spark
/// writes numbers only there, so an unescaped `"TotalGCTime"` followed by a colon is its key.
pub(crate) fn gc_time_at(obj: &[u8]) -> Option<Option<usize>> {
    let inner = obj.get(1..)?;
    if memchr::memchr3(b'\\', b'{', b'[', inner).is_some() {
        return None;
    }
    let Some(g) = TOTAL_GC_TIME.find(obj) else {
        return Some(None);
    };
    if TOTAL_GC_TIME.find(&obj[g + 1..]).is_some() {
        return None;
    }
    let mut i = g + TOTAL_GC_TIME.needle().len();
    while obj.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    (obj.get(i) == Some(&b':')).then_some(Some(i + 1))
}

/// A `Task Executor Metrics` object at `c` (some 30 numbers, of which only TotalGCTime is read)
/// read without walking its keys: its end found by a structural scan, its TotalGCTime by
/// [`gc_time_at`], read as the walk reads it. `None` (nothing consumed): walk it.
fn read_executor_metrics(c: &mut Cur) -> Option<ExecutorMetrics> {
    let end = crate::scan::object_end(c.b, c.i).ok()?;
    let mut m = ExecutorMetrics::default();
    if let Some(at) = gc_time_at(&c.b[c.i..=end])? {
        let mut v = Cur {
            b: &c.b[..=end],
            i: c.i + at,
        };
        m.total_gc_time = v.num()?;
        if !matches!(v.peek()?, b',' | b'}') {
            return None;
        }
    }
    c.i = end + 1;
    Some(m)
}

/// Read a TaskEnd line; its `Accumulables` array, `line[hole.0..hole.1]` when given, is jumped
/// over (read by the caller), or must be empty. `None`: use serde instead.
pub fn task_end(line: &[u8], hole: Option<(usize, usize)>) -> Option<TaskEnd> {
    let mut c = Cur { b: line, i: 0 };
    let mut stage_id = None;
    let mut stage_attempt_id = Num(None);
    let mut task_type = None;
    let mut reason_v = TaskEndReason::default();
    let mut info_v = None;
    let mut metrics_v = None;
    let mut executor_metrics = None;
    c.object_keys(TASK_END, |c, k| {
        match k {
            1 => stage_id = Some(c.int()?),
            2 => stage_attempt_id = c.num()?,
            3 => task_type = c.opt_text()?,
            4 => {
                reason_v = c
                    .opt_object(REASON, |c, k, r: &mut TaskEndReason| reason(c, k, r))?
                    .unwrap_or_default()
            }
            5 => {
                let mut t = TaskInfo::default();
                let mut has_id = false;
                c.object_keys(INFO, |c, k| info(c, k, &mut t, &mut has_id, hole))?;
                if !has_id {
                    return None;
                }
                info_v = Some(t);
            }
            6 => {
                if c.peek()? == b'{'
                    && let Some(m) = read_executor_metrics(c)
                {
                    executor_metrics = Some(m);
                    return Some(());
                }
                executor_metrics =
                    c.opt_object(&[b"TotalGCTime"], |c, k, m: &mut ExecutorMetrics| {
                        match k {
                            0 => m.total_gc_time = c.num()?,
                            _ => c.skip()?,
                        }
                        Some(())
                    })?
            }
            7 => metrics_v = c.opt_object(METRICS, |c, k, m: &mut TaskMetrics| metrics(c, k, m))?,
            _ => c.skip()?,
        }
        Some(())
    })?;
    c.ws();
    if c.i != line.len() {
        return None;
    }
    Some(TaskEnd {
        stage_id: stage_id?,
        stage_attempt_id,
        task_type,
        reason: reason_v,
        info: info_v?,
        metrics: metrics_v,
        executor_metrics,
    })
}

/// One accumulable object: `Some(Some(update))` for a numeric SQL-metric update,
/// `Some(None)` for one that is not (internal task metric, no name, non-numeric update),
/// `None` when unsure (the caller parses it with serde).
#[inline]
pub fn acc_update(obj: &[u8]) -> Option<Option<AccUpdate>> {
    if let Some(u) = spark_layout_acc_update(obj) {
        return Some(u);
    }
    acc_update_any_order(obj)
}

/// [`acc_update`] for Spark's own layout, read straight through: `{"ID":<n>,"Name":"<name>",
/// "Update":<n or "n">,"Value":…,"Internal":<bool>,"Count Failed Values":<bool>…}`. `None`
/// when the object is laid out any other way.
#[inline]
fn spark_layout_acc_update(obj: &[u8]) -> Option<Option<AccUpdate>> {
    let mut c = Cur { b: obj, i: 0 };
    c.lit(b"{\"ID\":")?;
    let id = c.int()?;
    // internal task metrics (most entries) are recognised without reading further
    if c.at(b",\"Name\":\"internal.") {
        return Some(None);
    }
    c.lit(b",\"Name\":")?;
    let (name, escaped) = c.raw_string()?;
    if escaped {
        return None;
    }
    if name.starts_with(b"internal.") {
        return Some(None);
    }
    c.lit(b",\"Update\":")?;
    let update = match c.b.get(c.i)? {
        b'"' | b'-' | b'0'..=b'9' => c.num()?,
        _ => return None,
    };
    // the rest: Value, Internal, then the flag we need; anything unexpected gives up
    c.lit(b",\"Value\":")?;
    c.skip()?;
    c.lit(b",\"Internal\":")?;
    c.opt_bool()?;
    c.lit(b",\"Count Failed Values\":")?;
    let count_failed = c.opt_bool()?;
    // only `"Metadata"` may follow, then the end
    if c.b.get(c.i) == Some(&b',') {
        c.i += 1;
        let (key, _) = c.raw_string()?;
        if key != b"Metadata" {
            return None;
        }
        c.eat(b':')?;
        c.skip()?;
    }
    c.eat(b'}')?;
    if c.i != obj.len() {
        return None;
    }
    Some(update.0.map(|update| AccUpdate {
        id,
        update,
        count_failed: count_failed != Some(false),
        gpu: crate::event_types::gpu_metric(name),
    }))
}

/// [`acc_update`] for objects in any key order.
fn acc_update_any_order(obj: &[u8]) -> Option<Option<AccUpdate>> {
    let mut c = Cur { b: obj, i: 0 };
    let (mut id, mut update, mut count_failed) = (Num(None), Num(None), None);
    let mut name: Option<(&[u8], bool)> = None;
    c.object(|c, k| {
        match k {
            b"ID" => id = c.num()?,
            b"Name" => {
                if c.peek()? == b'n' {
                    c.literal(b"null")?;
                } else {
                    let (raw, escaped) = c.raw_string()?;
                    name = Some((raw, escaped));
                }
            }
            b"Update" => {
                update = match c.peek()? {
                    b'[' | b'{' => {
                        c.skip()?;
                        Num(None)
                    }
                    _ => c.num()?,
                }
            }
            b"Count Failed Values" => count_failed = c.opt_bool()?,
            _ => c.skip()?,
        }
        Some(())
    })?;
    c.ws();
    if c.i != obj.len() {
        return None;
    }
    let Some((name, escaped)) = name else {
        return Some(None);
    };
    if escaped {
        return None;
    }
    if name.starts_with(b"internal.") {
        return Some(None);
    }
    Some(match (id.0, update.0) {
        (Some(id), Some(update)) => Some(AccUpdate {
            id,
            update,
            count_failed: count_failed != Some(false),
            gpu: crate::event_types::gpu_metric(name),
        }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde(line: &[u8]) -> TaskEnd {
        serde_json::from_slice(line).unwrap()
    }

    #[test]
    fn numbers_strings_nulls_and_nesting_read_as_serde_does() {
        let line = br#"{"Event":"SparkListenerTaskEnd","Stage ID":-3,"Stage Attempt ID":"2","Task Type":"ResultTask","Task End Reason":{"Reason":"ExceptionFailure","Description":"boom \"x\"\n at y","Stack Trace":[{"Declaring Class":"A","Line Number":1}]},"Task Info":{"Task ID":9,"Index":null,"Executor ID":"7","Host":"h\u00e9","Speculative":true,"Failed":true,"Accumulables":[]},"Task Metrics":{"Executor Run Time":123456789012345678,"JVM GC Time":"17","Shuffle Read Metrics":{"Remote Bytes Read":5,"Push Based Shuffle":{"Merged Fetch Fallback Count":0}},"Updated Blocks":[{"Block ID":"rdd_1","Status":{"Memory Size":1}}],"Output Metrics":null}}"#;
        let fast = task_end(line, None).expect("the hand-written reader takes this line");
        assert_eq!(format!("{fast:?}"), format!("{:?}", serde(line)));
        assert_eq!(fast.stage_id, -3);
        assert_eq!(
            fast.reason.description.as_deref(),
            Some("boom \"x\"\n at y")
        );
    }

    /// The executor's metrics, read without walking their keys, read as serde reads them: the
    /// GC time as a number, a numeric string or null, missing, at the start or the end.
    #[test]
    fn executor_metrics_read_as_serde_does() {
        let head = r#"{"Event":"SparkListenerTaskEnd","Stage ID":1,"Task Info":{"Task ID":9,"Accumulables":[]},"Task Executor Metrics":"#;
        for (metrics, read_in_place) in [
            (
                r#"{"JVMHeapMemory":5,"TotalGCTime":42,"TotalGCCount":3}"#,
                true,
            ),
            (r#"{"TotalGCTime":7}"#, true),
            (r#"{"MinorGCCount":1, "TotalGCTime" : "12" }"#, true),
            (r#"{"TotalGCTime":null,"X":1}"#, true),
            (r#"{"JVMHeapMemory":5}"#, true),
            (r#"{}"#, true),
            (r#"{"TotalGCTime":-4}"#, true),
            (r#"{"X":"TotalGCTime","TotalGCTime":1}"#, false),
            (r#"{"X":{"TotalGCTime":5}}"#, false),
            (r#"{"X":[1],"TotalGCTime":6}"#, false),
            (r#"{"Total\u0047CTime":1}"#, false),
            ("null", false),
        ] {
            let line = format!(r#"{head}{metrics},"Task Metrics":{{"Executor Run Time":5}}}}"#);
            let line = line.as_bytes();
            // an escaped key: the reader gives up (serde reads the line)
            let Some(fast) = task_end(line, None) else {
                assert!(metrics.contains('\\'), "{metrics}");
                continue;
            };
            assert_eq!(
                format!("{fast:?}"),
                format!("{:?}", serde(line)),
                "{metrics}"
            );
            let at = head.len();
            let mut c = Cur { b: line, i: at };
            assert_eq!(
                read_executor_metrics(&mut c).is_some(),
                read_in_place,
                "{metrics}"
            );
        }
        // two GC times: walked, as before
        let two = format!(r#"{head}{{"TotalGCTime":1,"TotalGCTime":2}}}}"#);
        let mut c = Cur {
            b: two.as_bytes(),
            i: head.len(),
        };
        assert!(read_executor_metrics(&mut c).is_none());
        assert_eq!(c.i, head.len(), "nothing consumed");
    }

    /// Keys in any order (here sorted, as serde_json's map writes them) and keys Spark never
    /// wrote read as in Spark's order.
    #[test]
    fn keys_out_of_spark_order_read_the_same() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sample");
        let mut n = 0;
        for name in ["local-1796009671201", "local-1796009777604"] {
            let log = std::fs::read(dir.join(name)).expect("bundled sample log");
            for line in log
                .split(|b| *b == b'\n')
                .filter(|l| l.starts_with(b"{\"Event\":\"SparkListenerTaskEnd\""))
            {
                let mut v: serde_json::Value = serde_json::from_slice(line).unwrap();
                v["Task Info"]["Accumulables"] = serde_json::json!([]);
                let without_extras = serde_json::to_vec(&v).unwrap();
                v["Task Metrics"]["A New Metric"] = serde_json::json!({"x": [1, "}"]});
                v["Task Info"]["Zz"] = serde_json::json!(null);
                let sorted = serde_json::to_vec(&v).unwrap();
                let fast =
                    task_end(&sorted, None).expect("the hand-written reader takes this line");
                assert_eq!(format!("{fast:?}"), format!("{:?}", serde(&sorted)));
                assert_eq!(format!("{fast:?}"), format!("{:?}", serde(&without_extras)));
                n += 1;
            }
        }
        assert!(n > 10, "{n} task ends");
    }

    #[test]
    fn gives_up_where_unsure() {
        // a float, a 19-digit number, a missing task id, trailing garbage
        for line in [
            &br#"{"Stage ID":1,"Task Info":{"Task ID":1},"Task Metrics":{"Executor Run Time":1.5}}"#[..],
            br#"{"Stage ID":1,"Task Info":{"Task ID":1},"Task Metrics":{"Executor Run Time":1234567890123456789}}"#,
            br#"{"Stage ID":1,"Task Info":{"Index":1}}"#,
            br#"{"Stage ID":1,"Task Info":{"Task ID":1}} x"#,
        ] {
            assert!(task_end(line, None).is_none(), "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn spark_layout_and_any_order_agree() {
        for obj in [
            &br#"{"ID":5,"Name":"number of output rows","Update":"25000","Value":"25000","Internal":true,"Count Failed Values":true,"Metadata":"sql"}"#[..],
            br#"{"ID":7,"Name":"duration","Update":12,"Value":40,"Internal":true,"Count Failed Values":false}"#,
            br#"{"ID":8,"Name":"internal.metrics.executorRunTime","Update":5,"Value":9,"Internal":true,"Count Failed Values":true}"#,
            br#"{"ID":9,"Name":"x","Update":"abc","Value":"abc","Internal":false,"Count Failed Values":true}"#,
        ] {
            let fast = spark_layout_acc_update(obj).expect("Spark's layout");
            assert_eq!(Some(fast), acc_update_any_order(obj), "{}", String::from_utf8_lossy(obj));
        }
        // other layouts are left to the general reader
        assert_eq!(
            spark_layout_acc_update(br#"{"Name":"x","ID":1,"Update":2}"#),
            None
        );
        assert_eq!(
            spark_layout_acc_update(br#"{"ID":1,"Name":"x","Update":[1]}"#),
            None
        );
    }

    #[test]
    fn accumulable_objects() {
        let u = |s: &[u8]| acc_update(s);
        assert_eq!(
            u(br#"{"ID":5,"Name":"number of output rows","Update":"25000","Value":"25000","Internal":true,"Count Failed Values":true,"Metadata":"sql"}"#),
            Some(Some(AccUpdate { id: 5, update: 25000, count_failed: true, gpu: None }))
        );
        assert_eq!(
            u(br#"{"ID":6,"Name":"internal.metrics.x","Update":1}"#),
            Some(None)
        );
        assert_eq!(
            u(br#"{"ID":6,"Name":"blocks","Update":[{"Block ID":"b"}]}"#),
            Some(None)
        );
        assert_eq!(
            u(br#"{"ID":6,"Name":"x\"y","Update":1}"#),
            None,
            "escaped names go to serde"
        );
    }
}
