//! Chunks of whole lines: a log's decoded text cut into buffers of about a mebibyte, each
//! ending on a line, handed to the parsing threads and back.

use std::io::{self, Read};
use std::sync::{Arc, Mutex};

/// A chunk's size (a zstd chunk may hold up to a block more: [`crate::zstd_blocks`]).
pub(crate) const CHUNK: usize = 1 << 20;

pub(crate) struct Chunk {
    pub(crate) part: usize,
    /// a buffer from the [`Pool`]: its `len` bytes from `start` are the chunk's (shared while a
    /// zstd decoder refers back into it, and by the chunks cut from one long buffer)
    pub(crate) data: Arc<Vec<u8>>,
    pub(crate) start: usize,
    pub(crate) len: usize,
    /// the final chunk of a part (its last line may lack a newline)
    pub(crate) last: bool,
}

impl Chunk {
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.data[self.start..self.start + self.len]
    }
}

/// The whole lines of `buf[..filled]` as a chunk (`None` when it holds no line end): what a part
/// gives before a read or decoding error ends it.
pub(crate) fn whole_lines(part: usize, buf: Vec<u8>, filled: usize) -> Option<Chunk> {
    let pos = memchr::memrchr(b'\n', &buf[..filled])?;
    Some(Chunk {
        part,
        data: Arc::new(buf),
        start: 0,
        len: pos + 1,
        last: false,
    })
}

/// Chunk buffers, handed back once parsed: each is allocated (and zero-filled, and its pages
/// faulted in) once per log instead of once per chunk, and a decoder writes straight into it.
#[derive(Default)]
pub(crate) struct Pool(Mutex<Vec<Vec<u8>>>);

impl Pool {
    pub(crate) fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .ok()
            .and_then(|mut v| v.pop())
            .unwrap_or_default()
    }

    pub(crate) fn put(&self, buf: Vec<u8>) {
        if let Ok(mut v) = self.0.lock() {
            v.push(buf);
        }
    }

    /// Hand back a buffer: the last of its holders puts it back in the pool.
    pub(crate) fn give(&self, buf: Arc<Vec<u8>>) {
        if let Some(buf) = Arc::into_inner(buf) {
            self.put(buf);
        }
    }
}

/// Read `r` in chunks of whole lines (in buffers of `pool`), calling `f` for each (until it
/// returns false); a read error ends the part after the whole lines read before it were
/// delivered.
pub(crate) fn chunk_lines(
    part: usize,
    r: &mut dyn Read,
    chunk: usize,
    pool: &Pool,
    mut f: impl FnMut(Chunk) -> bool,
) -> Result<(), io::Error> {
    // the start of a line that the previous buffer cut
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let mut buf = pool.take();
        let want = carry.len() + chunk;
        if buf.len() < want {
            // zero-filled once: a buffer back from the pool is already initialised
            buf.resize(want, 0);
        }
        buf[..carry.len()].copy_from_slice(&carry);
        let mut filled = carry.len();
        carry.clear();
        let mut eof = false;
        while filled < want {
            match r.read(&mut buf[filled..want]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if let Some(c) = whole_lines(part, buf, filled) {
                        f(c);
                    }
                    return Err(e);
                }
            }
        }
        if eof {
            if filled > 0 {
                f(Chunk {
                    part,
                    data: Arc::new(buf),
                    start: 0,
                    len: filled,
                    last: true,
                });
            }
            return Ok(());
        }
        match memchr::memrchr(b'\n', &buf[..filled]) {
            Some(pos) => {
                carry.extend_from_slice(&buf[pos + 1..filled]);
                if !f(Chunk {
                    part,
                    data: Arc::new(buf),
                    start: 0,
                    len: pos + 1,
                    last: false,
                }) {
                    return Ok(());
                }
            }
            None => {
                // one very long line: keep reading
                carry.extend_from_slice(&buf[..filled]);
                pool.put(buf);
            }
        }
    }
}
