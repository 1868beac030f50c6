//! zstd frames decoded block by block straight into the chunk buffers. The streaming decoder
//! decodes into a window of its own and copies every byte out (a tenth of a second per GB of
//! log, on the thread that every other thread waits for); zstd's buffer-less API writes into
//! the caller's memory instead, as long as the output a block may refer back to stays where it
//! was written. It keeps two stretches of output as history: the stretch being written and the
//! one before it. So a buffer is handed on (its whole lines, as chunks) only once it holds at
//! least a window of a frame's output, the decoder keeps a shared reference to it while writing
//! the next buffer, and lets it go only after writing into that next buffer, when zstd has
//! moved its history on. Frames whose window is larger than [`MAX_DIRECT_WINDOW`] at the start
//! of a part go through the streaming decoder instead (`read::open_part` decides).

use crate::chunks::{Chunk, Pool};
use crate::codec::read_full;
use std::ffi::{CStr, c_int, c_void};
use std::io::{self, Read};
use std::sync::Arc;
use zstd::zstd_safe::zstd_sys::{self as sys, ZSTD_DCtx};

/// The most output one block holds (zstd's `ZSTD_BLOCKSIZE_MAX`).
const BLOCK_MAX: usize = 128 << 10;

/// The largest window a part may start with to be decoded here. Buffers hold at least a window
/// (cut into chunks of [`crate::chunks::CHUNK`] for the parsing threads), and the buffers that
/// chunks in flight share, plus the two the decoder writes and refers back into, cost a few
/// windows; past 8 MiB (the zstd command line's widest window below its `--ultra` levels) the
/// streaming decoder's one window costs less, and its copying out (a tenth of a second per GB of
/// log) is the price. Spark writes 512 KiB windows at its default level.
pub const MAX_DIRECT_WINDOW: u64 = 8 << 20;

/// zstd's own default limit on a frame's window: the streaming decoder refuses larger ones.
const MAX_WINDOW: u64 = 1 << 27;

/// `ZSTD_nextInputType`: the frame header is being read.
const INPUT_FRAME_HEADER: c_int = 0;

// zstd's buffer-less streaming API (zstd.h, `ZSTD_STATIC_LINKING_ONLY`): part of the static
// library that zstd-sys builds and links, not in its default bindings.
unsafe extern "C" {
    fn ZSTD_decompressBegin(dctx: *mut ZSTD_DCtx) -> usize;
    fn ZSTD_nextSrcSizeToDecompress(dctx: *mut ZSTD_DCtx) -> usize;
    fn ZSTD_nextInputType(dctx: *mut ZSTD_DCtx) -> c_int;
    fn ZSTD_decompressContinue(
        dctx: *mut ZSTD_DCtx,
        dst: *mut c_void,
        dst_capacity: usize,
        src: *const c_void,
        src_size: usize,
    ) -> usize;
}

/// The window that a zstd frame header (its first bytes) asks for; `None` when `h` is not the
/// start of a zstd frame or is too short to tell.
pub fn frame_window(h: &[u8]) -> Option<u64> {
    if h.get(..4)? != [0x28, 0xB5, 0x2F, 0xFD] {
        return None;
    }
    let fhd = *h.get(4)?;
    if fhd & 0x20 == 0 {
        // a window descriptor: exponent and mantissa
        let wd = *h.get(5)?;
        let base = 1u64 << (10 + (wd >> 3) as u32);
        return Some(base + (base >> 3) * (wd & 7) as u64);
    }
    // a single segment: the window is the frame's content size
    let dict_id = [0, 1, 2, 4][(fhd & 3) as usize];
    let size_len = [1, 2, 4, 8][(fhd >> 6) as usize];
    let raw = h.get(5 + dict_id..5 + dict_id + size_len)?;
    let size = raw.iter().rev().fold(0u64, |v, b| (v << 8) | u64::from(*b));
    Some(if size_len == 2 { size + 256 } else { size })
}

struct Dctx(*mut ZSTD_DCtx);

impl Drop for Dctx {
    fn drop(&mut self) {
        // SAFETY: created by ZSTD_createDCtx, freed once
        unsafe { sys::ZSTD_freeDCtx(self.0) };
    }
}

/// A zstd result code as a result.
fn check(code: usize) -> io::Result<usize> {
    // SAFETY: plain functions of a code; the name is a static C string
    if unsafe { sys::ZSTD_isError(code) } == 0 {
        return Ok(code);
    }
    let name = unsafe { CStr::from_ptr(sys::ZSTD_getErrorName(code)) };
    Err(io::Error::other(name.to_string_lossy().into_owned()))
}

/// An empty buffer of the pool with room for `len` bytes. Its room is never filled before the
/// decoder writes it: a small log's buffer costs only the pages its output touches.
fn buffer(pool: &Pool, len: usize) -> Vec<u8> {
    let mut b = pool.take();
    b.clear();
    b.reserve_exact(len);
    b
}

/// Decode the zstd frames of `raw` (compressed bytes) into chunks of whole lines, as
/// [`crate::chunks::chunk_lines`] does for a decoded stream: `f` gets each chunk in order until
/// it returns false; a chunk holds at least `chunk` bytes (bar the last) and at least a window
/// (`window`: the first frame's, from its header). On a decoding or read error the whole lines
/// decoded before it are delivered, then the error returned.
pub(crate) fn chunk_lines(
    part: usize,
    raw: &mut dyn Read,
    chunk: usize,
    window: u64,
    pool: &Pool,
    mut f: impl FnMut(Chunk) -> bool,
) -> io::Result<()> {
    // SAFETY: a fresh context (null when out of memory)
    let dctx = Dctx(unsafe { sys::ZSTD_createDCtx() });
    if dctx.0.is_null() {
        return Err(io::Error::other("cannot create a zstd decoder"));
    }
    // the output a buffer holds before it is handed on: a window at least (the first
    // frame's header, read below, has the last word)
    let mut need = chunk.max(window.min(MAX_DIRECT_WINDOW) as usize);
    let mut buf = buffer(pool, need + BLOCK_MAX);
    // bytes at the start of `buf` (a line the previous buffer cut), before the decoded output
    let mut carry = 0usize;
    // the previous buffer: the decoder may refer back into it while it writes `buf`
    let mut history: Option<Arc<Vec<u8>>> = None;
    // the buffer before that, let go once the decoder has written into `buf`
    let mut retired: Option<Arc<Vec<u8>>> = None;
    let mut src: Vec<u8> = Vec::new();
    let mut header: Vec<u8> = Vec::new();
    let mut in_frame = false;

    // The whole lines decoded so far (in chunks, as any buffer), then the error.
    let fail = |e: io::Error, buf: Vec<u8>, mut f: &mut dyn FnMut(Chunk) -> bool| {
        if let Some(p) = memchr::memrchr(b'\n', &buf) {
            hand_on(part, Arc::new(buf), p + 1, false, chunk, &mut f);
        }
        Err(e)
    };

    loop {
        if !in_frame {
            // SAFETY: a valid context
            if let Err(e) = check(unsafe { ZSTD_decompressBegin(dctx.0) }) {
                return fail(e, buf, &mut f);
            }
            header.clear();
        }
        // SAFETY: a valid context
        let (n, input) = unsafe {
            (
                ZSTD_nextSrcSizeToDecompress(dctx.0),
                ZSTD_nextInputType(dctx.0),
            )
        };
        if n == 0 {
            // the frame is complete: another may follow
            in_frame = false;
            continue;
        }
        if src.len() < n {
            src.resize(n, 0);
        }
        let got = match read_full(raw, &mut src[..n]) {
            Ok(got) => got,
            Err(e) => return fail(e, buf, &mut f),
        };
        if got == 0 && !in_frame {
            break;
        }
        if got < n {
            let e = io::Error::new(io::ErrorKind::UnexpectedEof, "incomplete frame");
            return fail(e, buf, &mut f);
        }
        in_frame = true;
        if input == INPUT_FRAME_HEADER {
            header.extend_from_slice(&src[..n]);
        } else if !header.is_empty() {
            // the header is read: its window decides how long the next buffers are
            let w = frame_window(&header).unwrap_or(0);
            header.clear();
            if w > MAX_WINDOW {
                let e = io::Error::other("Frame requires too much memory for decoding");
                return fail(e, buf, &mut f);
            }
            // a frame needs no history at its start: when its window is longer than the
            // buffers, a longer buffer begins here (the check below)
            need = need.max(w as usize);
        }
        if buf.capacity() - buf.len() < BLOCK_MAX || buf.capacity() - carry < need + BLOCK_MAX {
            // hand on the whole lines; the rest of the last one starts the next buffer
            let cut = memchr::memrchr(b'\n', &buf).map_or(0, |p| p + 1);
            let tail = buf.len() - cut;
            let mut next = buffer(pool, tail + need + BLOCK_MAX);
            next.extend_from_slice(&buf[cut..]);
            let done = Arc::new(std::mem::replace(&mut buf, next));
            // (the buffer before the previous one was let go after the last write)
            retired = history.replace(done.clone());
            carry = tail;
            if !hand_on(part, done, cut, false, chunk, &mut f) {
                return Ok(());
            }
        }
        // SAFETY: `dst` is the unwritten room of `buf` (at least a block long), `src` holds
        // exactly the `n` bytes asked for. The output written before (in `buf`, and in the
        // previous buffer kept as `history`) is never written again nor freed while the
        // decoder may refer back to it; the decoder forgets the buffer before `history` at
        // this call (it starts writing a new stretch), so `retired` is let go after it.
        let len = buf.len();
        let wrote = unsafe {
            ZSTD_decompressContinue(
                dctx.0,
                buf.as_mut_ptr().add(len).cast(),
                buf.capacity() - len,
                src.as_ptr().cast(),
                n,
            )
        };
        match check(wrote) {
            // SAFETY: the decoder wrote these `w` bytes (within the capacity)
            Ok(w) => unsafe { buf.set_len(len + w) },
            Err(e) => return fail(e, buf, &mut f),
        }
        if let Some(old) = retired.take() {
            pool.give(old);
        }
    }
    if !buf.is_empty() {
        let end = buf.len();
        hand_on(part, Arc::new(buf), end, true, chunk, &mut f);
    }
    Ok(())
}

/// Hand on `data[..end]` (whole lines, but for the part's last) as chunks of about `chunk`
/// bytes, each ending on a line: a buffer holds a window, longer than a chunk for a frame with
/// a wide window, and the parsing threads get chunks of one size whatever the window (their
/// output per chunk stays as large, and they start on a buffer's first lines while the others
/// wait). The chunks share the buffer; it goes back to the pool when the last is parsed. The
/// last of them is the part's last when `last`. False when `f` says to stop.
fn hand_on(
    part: usize,
    data: Arc<Vec<u8>>,
    end: usize,
    last: bool,
    chunk: usize,
    f: &mut impl FnMut(Chunk) -> bool,
) -> bool {
    let mut start = 0;
    while start < end {
        // a chunk and a half at most; past a chunk, to the end of the line there
        let stop = if end - start <= chunk + chunk / 2 {
            end
        } else {
            memchr::memchr(b'\n', &data[start + chunk..end]).map_or(end, |p| start + chunk + p + 1)
        };
        let go_on = f(Chunk {
            part,
            data: data.clone(),
            start,
            len: stop - start,
            last: last && stop == end,
        });
        if !go_on {
            return false;
        }
        start = stop;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The bundled sample log, its numbers varied from copy to copy (so matches reach back
    /// across the whole window, not only to the line before).
    fn log(copies: usize) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../datasets/sample/local-1796009671201");
        let one = std::fs::read(p).expect("bundled sample log");
        let mut out = Vec::new();
        for k in 0..copies {
            out.extend(one.iter().map(|b| match b {
                b'0'..=b'9' => b'0' + (b - b'0' + k as u8) % 10,
                _ => *b,
            }));
        }
        out
    }

    fn compress(data: &[u8], level: i32, window_log: u32, checksum: bool) -> Vec<u8> {
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), level).unwrap();
        e.window_log(window_log).unwrap();
        e.include_checksum(checksum).unwrap();
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Decode `z` in chunks of `chunk`, checking that each chunk ends on a line, and spoiling
    /// every buffer handed back that no one else holds: a buffer let go while the decoder
    /// still refers back into it would corrupt the output.
    fn decode(z: &[u8], chunk: usize) -> (Vec<u8>, io::Result<()>, usize) {
        let pool = Pool::default();
        let window = frame_window(z).unwrap_or(0);
        let (mut out, mut chunks) = (Vec::new(), 0);
        let mut r = z;
        let res = chunk_lines(0, &mut r, chunk, window, &pool, |c| {
            assert!(c.last || c.bytes().ends_with(b"\n"), "chunks end on a line");
            out.extend_from_slice(c.bytes());
            chunks += 1;
            if let Some(mut data) = Arc::into_inner(c.data) {
                data.fill(b'#');
                pool.give(Arc::new(data));
            }
            true
        });
        (out, res, chunks)
    }

    #[test]
    fn small_windows_many_buffers_same_bytes() {
        let data = log(6);
        for (level, wlog) in [(19, 10), (3, 12), (1, 17)] {
            let z = compress(&data, level, wlog, wlog == 12);
            assert_eq!(frame_window(&z), Some(1 << wlog));
            let (out, res, chunks) = decode(&z, 1000);
            res.unwrap();
            assert!(chunks > 8, "{chunks} chunks");
            assert!(out == data, "level {level}, window 2^{wlog}");
        }
    }

    #[test]
    fn frames_of_any_window_and_skippable_frames_in_a_row() {
        let a = log(2);
        let b = log(3);
        let mut z = compress(&a, 19, 10, false);
        // a skippable frame (magic 0x184D2A50, 4-byte length, payload)
        z.extend_from_slice(&[0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 1, 2, 3]);
        // a larger window than the buffers so far: longer buffers from there on
        z.extend(compress(&b, 19, 20, true));
        z.extend(compress(&a, 3, 11, true));
        let (out, res, _) = decode(&z, 1000);
        res.unwrap();
        assert!(out == [&a[..], &b[..], &a[..]].concat());
    }

    /// A buffer holding a wide window is handed on as chunks of about the chunk size, each
    /// ending on a line (longer only by the line a chunk ends in), the last chunk marked last.
    #[test]
    fn wide_windows_are_handed_on_in_chunks() {
        let data = log(6);
        let longest = data.split(|b| *b == b'\n').map(<[u8]>::len).max().unwrap();
        let chunk = 64 << 10;
        for wlog in [20, 22] {
            let z = compress(&data, 3, wlog, true);
            let pool = Pool::default();
            let (mut out, mut lens, mut lasts) = (Vec::new(), Vec::new(), 0);
            let mut r = &z[..];
            chunk_lines(0, &mut r, chunk, frame_window(&z).unwrap(), &pool, |c| {
                assert!(c.last || c.bytes().ends_with(b"\n"), "chunks end on a line");
                out.extend_from_slice(c.bytes());
                lens.push(c.len);
                lasts += usize::from(c.last);
                pool.give(c.data);
                true
            })
            .unwrap();
            assert!(out == data, "window 2^{wlog}");
            assert_eq!(lasts, 1);
            assert!(lens.len() >= data.len() / (chunk + longest), "{lens:?}");
            assert!(
                lens.iter()
                    .all(|l| *l <= (chunk + chunk / 2).max(chunk + longest + 1)),
                "{lens:?}"
            );
        }
    }

    #[test]
    fn a_line_longer_than_a_buffer() {
        let mut data = log(1);
        let long: Vec<u8> = (0..600_000u32)
            .map(|i| b'a' + (i.wrapping_mul(2_654_435_761) >> 27) as u8 % 26)
            .collect();
        data.extend_from_slice(&long);
        data.push(b'\n');
        data.extend(log(1));
        let z = compress(&data, 3, 10, false);
        let (out, res, _) = decode(&z, 1000);
        res.unwrap();
        assert!(out == data);
    }

    #[test]
    fn single_segment_frame() {
        // a frame compressed in one call (its size known) has a single segment: the window
        // is the content size
        let data = log(1);
        let z = zstd::bulk::compress(&data, 3).unwrap();
        assert_eq!(frame_window(&z), Some(data.len() as u64));
        let (out, res, _) = decode(&z, 1000);
        res.unwrap();
        assert!(out == data);
    }

    /// A cut-off frame (a log still being written) gives the whole lines that the streaming
    /// decoder gives, then its error.
    #[test]
    fn cut_off_frame_gives_whole_lines_then_the_error() {
        let data = log(3);
        let z = compress(&data, 3, 12, false);
        for cut in [z.len() - 3, z.len() / 2, 20, 5, 2] {
            let (out, res, _) = decode(&z[..cut], 1000);
            let e = res.expect_err("cut off");
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
            let mut streamed = Vec::new();
            let mut d = zstd::stream::read::Decoder::new(&z[..cut]).unwrap();
            let _ = d.read_to_end(&mut streamed);
            let whole = memchr::memrchr(b'\n', &streamed).map_or(0, |p| p + 1);
            assert!(out == streamed[..whole], "cut at {cut}");
        }
    }

    #[test]
    fn corrupt_frames_are_errors_not_panics() {
        let data = log(2);
        let z = compress(&data, 3, 12, true);
        let mut seed = 7u64;
        for _ in 0..200 {
            let mut bad = z.clone();
            for _ in 0..3 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = 4 + (seed % (bad.len() as u64 - 4)) as usize;
                bad[at] ^= 1 << ((seed >> 60) % 8);
            }
            let (out, res, _) = decode(&bad, 1000);
            // either an error, or (a flip the format does not notice) output of a length
            if res.is_ok() {
                assert!(!out.is_empty());
            }
        }
        // a frame asking for a window larger than zstd allows
        let mut huge = z.clone();
        huge[5] = 28 << 3;
        let (_, res, _) = decode(&huge, 1000);
        assert!(res.is_err());
    }
}
