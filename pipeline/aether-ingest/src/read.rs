//! Reading one log: open each part, decode it, split it into chunks of whole lines, parse the
//! chunks (in parallel for large logs), and apply the events in file order.

use crate::codec::{self, Codec};
use crate::events::{self, Event, Parsed};
use crate::source::{Location, LogSource};
use crate::state::{AppBatches, AppState};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufRead, BufReader, Read};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, sync_channel};

/// Most errors recorded per log; later ones are summarised in one row.
pub const MAX_ERRORS_PER_LOG: usize = 100;
const CHUNK: usize = 4 << 20;

/// One problem with a log: the file (part), the line where it applies, and what happened.
#[derive(Debug, Clone)]
pub struct ErrorRow {
    /// The file (the part of a rolling log, or the log itself).
    pub file: String,
    /// 1-based line number, when the problem is on a line.
    pub line: Option<i64>,
    /// What went wrong.
    pub error: String,
}

/// The outcome of reading one log.
pub struct LogOutcome {
    /// The tables, when at least one Spark event was read.
    pub app: Option<AppBatches>,
    /// Problems found (the log may still have tables).
    pub errors: Vec<ErrorRow>,
    /// Uncompressed bytes read.
    pub bytes: u64,
    /// Lines read.
    pub lines: u64,
}

/// A blocking reader over an object-store stream.
struct ObjectReader {
    rt: tokio::runtime::Handle,
    stream: BoxStream<'static, object_store::Result<Bytes>>,
    cur: Bytes,
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.cur.is_empty() {
            match self.rt.block_on(self.stream.next()) {
                None => return Ok(0),
                Some(Ok(b)) => self.cur = b,
                Some(Err(e)) => return Err(io::Error::other(e.to_string())),
            }
        }
        let n = self.cur.len().min(buf.len());
        buf[..n].copy_from_slice(&self.cur[..n]);
        self.cur = self.cur.slice(n..);
        Ok(n)
    }
}

fn open_raw(loc: &Location, rt: &tokio::runtime::Handle) -> io::Result<Box<dyn Read + Send>> {
    match loc {
        Location::Local(p) => Ok(Box::new(std::fs::File::open(p)?)),
        Location::Object { store, path, .. } => {
            use object_store::ObjectStoreExt;
            let res = rt
                .block_on(store.get(path))
                .map_err(|e| io::Error::other(e.to_string()))?;
            Ok(Box::new(ObjectReader {
                rt: rt.clone(),
                stream: res.into_stream(),
                cur: Bytes::new(),
            }))
        }
    }
}

/// Open a part: detect its codec (name, confirmed by magic bytes) and return the decoded stream.
pub fn open_part(
    loc: &Location,
    rt: &tokio::runtime::Handle,
) -> Result<(Codec, Box<dyn Read + Send>), String> {
    let raw = open_raw(loc, rt).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => "no such file".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => format!("cannot open: {e}"),
    })?;
    let mut raw = BufReader::with_capacity(1 << 16, raw);
    let head = peek(&mut raw, 16).map_err(|e| format!("cannot read: {e}"))?;
    let codec = codec::detect(&loc.file_name(), &head)?;
    let dec = codec::decoder(codec, raw)
        .map_err(|e| format!("cannot start {} decoder: {e}", codec.name()))?;
    Ok((codec, dec))
}

/// The first `n` bytes (fewer at end of input) without consuming them.
fn peek<R: Read>(r: &mut BufReader<R>, n: usize) -> io::Result<Vec<u8>> {
    let head = r.fill_buf()?;
    Ok(head[..head.len().min(n)].to_vec())
}

struct Chunk {
    part: usize,
    first_line: u64,
    data: Vec<u8>,
    /// the final chunk of a part (its last line may lack a newline)
    last: bool,
}

#[derive(Default)]
struct ParsedChunk {
    part: usize,
    events: Vec<Event>,
    errors: Vec<(u64, String)>,
    counts: HashMap<Vec<u8>, (bool, i64)>,
    lines: u64,
    bytes: u64,
}

fn event_name_of(line: &[u8]) -> Vec<u8> {
    const P: &[u8] = b"{\"Event\":\"";
    if let Some(rest) = line.strip_prefix(P) {
        if let Some(end) = memchr::memchr(b'"', rest) {
            return rest[..end].to_vec();
        }
    }
    #[derive(serde::Deserialize)]
    struct N {
        #[serde(rename = "Event")]
        event: String,
    }
    sonic_rs::from_slice::<N>(line)
        .map(|n| n.event.into_bytes())
        .unwrap_or_default()
}

fn parse_chunk(c: Chunk) -> ParsedChunk {
    let mut out = ParsedChunk {
        part: c.part,
        bytes: c.data.len() as u64,
        ..Default::default()
    };
    let data = &c.data[..];
    let mut start = 0;
    let mut line_no = c.first_line;
    while start < data.len() {
        let end = memchr::memchr(b'\n', &data[start..])
            .map(|i| start + i)
            .unwrap_or(data.len());
        let line = &data[start..end];
        let cut = end == data.len() && c.last && !data.ends_with(b"\n");
        line_no += 1;
        match events::parse_line(line) {
            Ok(Parsed::Blank) => {}
            Ok(p) => {
                let read = matches!(p, Parsed::Event(_));
                let name = event_name_of(line.trim_ascii_start());
                if let Some(e) = out.counts.get_mut(&name) {
                    e.1 += 1;
                } else {
                    out.counts.insert(name, (read, 1));
                }
                if let Parsed::Event(e) = p {
                    out.events.push(e);
                }
            }
            Err(e) => {
                let msg = if cut {
                    format!("last line is cut off (truncated log): {e}")
                } else {
                    e
                };
                out.errors.push((line_no, msg));
            }
        }
        start = end + 1;
    }
    out.lines = line_no - c.first_line;
    out
}

/// Read `r` in chunks of whole lines, calling `f` for each; returns a read error, if any,
/// with the number of lines delivered before it.
fn chunk_lines(
    part: usize,
    r: &mut dyn Read,
    mut f: impl FnMut(Chunk) -> bool,
) -> Result<(), (u64, io::Error)> {
    let mut carry: Vec<u8> = Vec::new();
    let mut lines: u64 = 0;
    loop {
        let mut buf = std::mem::take(&mut carry);
        let base = buf.len();
        buf.reserve(CHUNK);
        // fill up to CHUNK new bytes
        let mut eof = false;
        let mut filled = base;
        buf.resize(base + CHUNK, 0);
        while filled < buf.len() {
            match r.read(&mut buf[filled..]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    buf.truncate(filled);
                    // deliver the whole lines read before the damage
                    if let Some(pos) = memchr::memrchr(b'\n', &buf) {
                        buf.truncate(pos + 1);
                        let n = memchr::memchr_iter(b'\n', &buf).count() as u64;
                        f(Chunk {
                            part,
                            first_line: lines,
                            data: buf,
                            last: false,
                        });
                        lines += n;
                    }
                    return Err((lines, e));
                }
            }
        }
        buf.truncate(filled);
        if eof {
            if !buf.is_empty() {
                f(Chunk {
                    part,
                    first_line: lines,
                    data: buf,
                    last: true,
                });
            }
            return Ok(());
        }
        match memchr::memrchr(b'\n', &buf) {
            Some(pos) => {
                carry = buf[pos + 1..].to_vec();
                buf.truncate(pos + 1);
                let n = memchr::memchr_iter(b'\n', &buf).count() as u64;
                if !f(Chunk {
                    part,
                    first_line: lines,
                    data: buf,
                    last: false,
                }) {
                    return Ok(());
                }
                lines += n;
            }
            None => carry = buf, // one very long line: keep reading
        }
    }
}

/// Read one log into tables. `threads` > 1 parses chunks in parallel (for large logs).
pub fn read_log(log: &LogSource, rt: &tokio::runtime::Handle, threads: usize) -> LogOutcome {
    let mut state = AppState::new(log.display.clone(), log.size());
    let mut errors: Vec<ErrorRow> = Vec::new();
    let part_names: Vec<String> = log.parts.iter().map(|p| p.location.display()).collect();
    let mut bytes = 0u64;
    let mut lines = 0u64;
    let mut dropped_errors = 0usize;

    let mut apply = |pc: ParsedChunk, state: &mut AppState, errors: &mut Vec<ErrorRow>| {
        bytes += pc.bytes;
        lines += pc.lines;
        for (name, (read, n)) in pc.counts {
            state.count_events(&name, read, n);
        }
        for e in pc.events {
            state.apply(e);
        }
        for (line, msg) in pc.errors {
            if errors.len() < MAX_ERRORS_PER_LOG {
                errors.push(ErrorRow {
                    file: part_names[pc.part].clone(),
                    line: Some(line as i64),
                    error: msg,
                });
            } else {
                dropped_errors += 1;
            }
        }
    };

    // Open every part first (cheap), so an unreadable part is reported even in parallel mode.
    let mut readers: Vec<(usize, Box<dyn Read + Send>)> = Vec::new();
    for (i, part) in log.parts.iter().enumerate() {
        match open_part(&part.location, rt) {
            Ok((_, mut r)) => {
                if i == 0 {
                    // the first decoded bytes must look like JSON: a driver log or binary is not an event log
                    let mut br = BufReader::with_capacity(1 << 16, r);
                    match br.fill_buf() {
                        Ok(head) => {
                            let first = head.iter().find(|b| !b.is_ascii_whitespace());
                            if head.is_empty() {
                                errors.push(ErrorRow {
                                    file: part_names[i].clone(),
                                    line: None,
                                    error: "empty log (no events after decompression)".into(),
                                });
                                continue;
                            }
                            if first.is_some_and(|b| *b != b'{') {
                                errors.push(ErrorRow {
                                    file: part_names[i].clone(),
                                    line: Some(1),
                                    error: "not a Spark event log: the content is not JSON events"
                                        .into(),
                                });
                                return LogOutcome {
                                    app: None,
                                    errors,
                                    bytes: 0,
                                    lines: 0,
                                };
                            }
                        }
                        Err(e) => {
                            errors.push(ErrorRow {
                                file: part_names[i].clone(),
                                line: None,
                                error: format!("cannot decompress: {e}"),
                            });
                            continue;
                        }
                    }
                    r = Box::new(br);
                }
                readers.push((i, r));
            }
            Err(e) => errors.push(ErrorRow {
                file: part_names[i].clone(),
                line: None,
                error: e,
            }),
        }
    }

    let mut read_errors: Vec<ErrorRow> = Vec::new();
    if threads <= 1 {
        for (i, mut r) in readers {
            let res = chunk_lines(i, &mut r, |c| {
                let pc = parse_chunk(c);
                apply(pc, &mut state, &mut errors);
                true
            });
            if let Err((n, e)) = res {
                read_errors.push(ErrorRow {
                    file: part_names[i].clone(),
                    line: Some(n as i64 + 1),
                    error: format!("cannot decompress: {e}"),
                });
            }
        }
    } else {
        let (chunk_tx, chunk_rx) = sync_channel::<(u64, Chunk)>(threads * 2);
        let chunk_rx = Mutex::new(chunk_rx);
        let (done_tx, done_rx) = sync_channel::<(u64, ParsedChunk)>(threads * 2);
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut seq = 0u64;
                let mut errs = Vec::new();
                for (i, mut r) in readers {
                    let res = chunk_lines(i, &mut r, |c| {
                        let ok = chunk_tx.send((seq, c)).is_ok();
                        seq += 1;
                        ok
                    });
                    if let Err((n, e)) = res {
                        errs.push(ErrorRow {
                            file: part_names[i].clone(),
                            line: Some(n as i64 + 1),
                            error: format!("cannot decompress: {e}"),
                        });
                    }
                }
                drop(chunk_tx);
                errs
            });
            for _ in 0..threads {
                let done_tx = done_tx.clone();
                let chunk_rx = &chunk_rx;
                s.spawn(move || {
                    loop {
                        let next = chunk_rx.lock().map(|rx| rx.recv());
                        let Ok(Ok((seq, c))) = next else { break };
                        if done_tx.send((seq, parse_chunk(c))).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(done_tx);
            apply_in_order(done_rx, |pc| apply(pc, &mut state, &mut errors));
            read_errors = reader.join().unwrap_or_default();
        });
    }
    errors.extend(read_errors);
    if dropped_errors > 0 {
        errors.push(ErrorRow {
            file: log.display.clone(),
            line: None,
            error: format!("{dropped_errors} more bad lines not listed"),
        });
    }
    if !state.saw_event {
        if errors.is_empty() {
            errors.push(ErrorRow {
                file: log.display.clone(),
                line: None,
                error: "no Spark events found (is this an event log?)".into(),
            });
        }
        return LogOutcome {
            app: None,
            errors,
            bytes,
            lines,
        };
    }
    if state.app_id.is_none() {
        errors.push(ErrorRow {
            file: log.display.clone(),
            line: None,
            error: "no SparkListenerApplicationStart event: app_id taken from the file name".into(),
        });
    }
    let fallback = log.app_id_from_name();
    LogOutcome {
        app: Some(state.finish(&fallback)),
        errors,
        bytes,
        lines,
    }
}

fn apply_in_order(rx: Receiver<(u64, ParsedChunk)>, mut f: impl FnMut(ParsedChunk)) {
    let mut pending: BTreeMap<u64, ParsedChunk> = BTreeMap::new();
    let mut next = 0u64;
    for (seq, pc) in rx {
        pending.insert(seq, pc);
        while let Some(pc) = pending.remove(&next) {
            f(pc);
            next += 1;
        }
    }
}
