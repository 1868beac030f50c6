//! Compression codecs exactly as Spark writes event logs.
//!
//! * `.lz4`: lz4-java `LZ4BlockOutputStream` (not the LZ4 frame format): blocks of
//!   `"LZ4Block"`, a token, little-endian compressed / original lengths and an XXHash32 checksum
//!   (seed `0x9747b28c`, masked to 28 bits) of the original bytes. The checksum is verified.
//! * `.snappy`: snappy-java `SnappyOutputStream`: a 16-byte header, then chunks of a big-endian
//!   length followed by one raw snappy block.
//! * `.lzf`: ning compress-lzf chunks (`ZV`, type, lengths) holding raw LZF blocks.
//! * `.zstd` / `.zst`: standard zstd, any number of concatenated frames.
//! * `.gz`: gzip, any number of members.
//!
//! The codec is chosen by extension and confirmed by the magic bytes at the start of the file.

use std::io::{self, BufRead, BufReader, Read};

/// A Spark event-log compression codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// Uncompressed JSON lines.
    Plain,
    /// lz4-java block stream.
    Lz4,
    /// snappy-java stream.
    Snappy,
    /// ning LZF chunks.
    Lzf,
    /// zstd frames.
    Zstd,
    /// gzip members.
    Gzip,
}

impl Codec {
    /// Short name as Spark spells it (`spark.eventLog.compression.codec`).
    pub fn name(self) -> &'static str {
        match self {
            Codec::Plain => "none",
            Codec::Lz4 => "lz4",
            Codec::Snappy => "snappy",
            Codec::Lzf => "lzf",
            Codec::Zstd => "zstd",
            Codec::Gzip => "gzip",
        }
    }

    /// The codec implied by a file name (after any `.inprogress` suffix is removed).
    pub fn from_file_name(name: &str) -> Option<Codec> {
        let name = name.strip_suffix(".inprogress").unwrap_or(name);
        let ext = name.rsplit_once('.').map(|(_, e)| e)?;
        match ext.to_ascii_lowercase().as_str() {
            "lz4" => Some(Codec::Lz4),
            "snappy" => Some(Codec::Snappy),
            "lzf" => Some(Codec::Lzf),
            "zstd" | "zst" => Some(Codec::Zstd),
            "gz" | "gzip" => Some(Codec::Gzip),
            _ => None,
        }
    }

    /// The codec whose magic bytes start `head`, if any.
    pub fn from_magic(head: &[u8]) -> Option<Codec> {
        if head.starts_with(LZ4_MAGIC) {
            Some(Codec::Lz4)
        } else if head.starts_with(SNAPPY_MAGIC) {
            Some(Codec::Snappy)
        } else if head.starts_with(&[0x28, 0xB5, 0x2F, 0xFD])
            || (head.len() >= 4 && head[0] & 0xF0 == 0x50 && head[1..4] == [0x2A, 0x4D, 0x18])
        {
            Some(Codec::Zstd)
        } else if head.starts_with(&[0x1F, 0x8B]) {
            Some(Codec::Gzip)
        } else if head.starts_with(b"ZV") && head.len() >= 3 && head[2] <= 1 {
            Some(Codec::Lzf)
        } else {
            None
        }
    }
}

const LZ4_MAGIC: &[u8; 8] = b"LZ4Block";
const SNAPPY_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
const LZ4_SEED: u32 = 0x9747_b28c;

/// Decide the codec of a file from its name and its first bytes.
///
/// The extension decides; the magic bytes must agree. A file without a codec extension whose
/// content starts with a known magic is read with that codec.
pub fn detect(file_name: &str, head: &[u8]) -> Result<Codec, String> {
    if head.is_empty() {
        return Err("empty file".to_string());
    }
    let by_magic = Codec::from_magic(head);
    match Codec::from_file_name(file_name) {
        Some(c) => {
            if by_magic == Some(c) {
                Ok(c)
            } else {
                Err(format!(
                    "the name says {} but the content does not start with {} magic bytes{}",
                    c.name(),
                    c.name(),
                    match by_magic {
                        Some(m) => format!(" (it looks like {})", m.name()),
                        None => String::new(),
                    }
                ))
            }
        }
        None => Ok(by_magic.unwrap_or(Codec::Plain)),
    }
}

/// Wrap a raw byte stream in the decoder for `codec`.
pub fn decoder<'a, R: Read + Send + 'a>(
    codec: Codec,
    raw: R,
) -> io::Result<Box<dyn Read + Send + 'a>> {
    Ok(match codec {
        Codec::Plain => Box::new(raw),
        Codec::Lz4 => Box::new(BlockReader::new(Lz4JavaBlocks::new(
            BufReader::with_capacity(1 << 16, raw),
        ))),
        Codec::Snappy => Box::new(BlockReader::new(SnappyJavaBlocks::new(
            BufReader::with_capacity(1 << 16, raw),
        ))),
        Codec::Lzf => Box::new(BlockReader::new(LzfBlocks::new(BufReader::with_capacity(
            1 << 16,
            raw,
        )))),
        Codec::Zstd => Box::new(zstd::stream::read::Decoder::new(raw)?),
        Codec::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
            1 << 16,
            raw,
        ))),
    })
}

fn corrupt(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Read as much of `buf` as `r` has: the count, short only at the end of the input.
pub(crate) fn read_full<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Read exactly `buf.len()` bytes; `Ok(false)` on a clean end of input before the first byte.
fn read_exact_or_eof<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<bool> {
    match read_full(r, buf)? {
        n if n == buf.len() => Ok(true),
        0 => Ok(false),
        n => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("truncated block header ({n} of {} bytes)", buf.len()),
        )),
    }
}

/// A block codec: decodes the next block of output at a time.
pub trait BlockDecode {
    /// Decode the next block into `out` (replacing its contents); false at the end of the input.
    fn decode_block(&mut self, out: &mut Vec<u8>) -> io::Result<bool>;
}

/// `Read` over any [`BlockDecode`]: serves the current block, decodes the next when it is used up.
pub struct BlockReader<D> {
    dec: D,
    out: Vec<u8>,
    pos: usize,
    done: bool,
}

impl<D: BlockDecode> BlockReader<D> {
    /// Read the blocks `dec` decodes.
    pub fn new(dec: D) -> Self {
        BlockReader {
            dec,
            out: Vec::new(),
            pos: 0,
            done: false,
        }
    }
}

impl<D: BlockDecode> Read for BlockReader<D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.out.len() {
            if self.done || !self.dec.decode_block(&mut self.out)? {
                self.done = true;
                return Ok(0);
            }
            self.pos = 0;
        }
        let n = (self.out.len() - self.pos).min(buf.len());
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Decoder of lz4-java's `LZ4BlockOutputStream` format, checksums verified.
pub struct Lz4JavaBlocks<R> {
    inner: R,
    compressed: Vec<u8>,
    block_no: u64,
}

impl<R: Read> Lz4JavaBlocks<R> {
    /// Decode the lz4-java block stream read from `inner` (wrap in a [`BlockReader`] to read it).
    pub fn new(inner: R) -> Self {
        Lz4JavaBlocks {
            inner,
            compressed: Vec::new(),
            block_no: 0,
        }
    }
}

impl<R: Read> BlockDecode for Lz4JavaBlocks<R> {
    fn decode_block(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        let mut header = [0u8; 21];
        if !read_exact_or_eof(&mut self.inner, &mut header)? {
            return Ok(false);
        }
        self.block_no += 1;
        let b = self.block_no;
        if &header[..8] != LZ4_MAGIC {
            return Err(corrupt(format!(
                "lz4 block {b}: bad magic (not an lz4-java block stream)"
            )));
        }
        let token = header[8];
        let method = token & 0xF0;
        let level = 10 + (token & 0x0F) as u32;
        let comp_len = i32::from_le_bytes(header[9..13].try_into().unwrap());
        let orig_len = i32::from_le_bytes(header[13..17].try_into().unwrap());
        let check = u32::from_le_bytes(header[17..21].try_into().unwrap());
        let max = 1i64 << level;
        if orig_len < 0
            || comp_len < 0
            || orig_len as i64 > max
            || (method == 0x10 && orig_len != comp_len)
            || (method != 0x10 && method != 0x20)
        {
            return Err(corrupt(format!(
                "lz4 block {b}: corrupt header (method {method:#x}, lengths {comp_len}/{orig_len})"
            )));
        }
        out.clear();
        if orig_len == 0 {
            // end-of-stream marker; another stream may follow (Spark reads concatenated streams)
            return Ok(true);
        }
        self.compressed.resize(comp_len as usize, 0);
        self.inner.read_exact(&mut self.compressed).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("lz4 block {b}: truncated data"),
                )
            } else {
                e
            }
        })?;
        if method == 0x10 {
            std::mem::swap(out, &mut self.compressed);
        } else {
            out.resize(orig_len as usize, 0);
            let n = lz4_flex::block::decompress_into(&self.compressed, out)
                .map_err(|e| corrupt(format!("lz4 block {b}: {e}")))?;
            if n != orig_len as usize {
                return Err(corrupt(format!(
                    "lz4 block {b}: decoded {n} bytes, header says {orig_len}"
                )));
            }
        }
        let actual = xxhash_rust::xxh32::xxh32(out, LZ4_SEED) & 0x0FFF_FFFF;
        if actual != check {
            return Err(corrupt(format!(
                "lz4 block {b}: checksum mismatch (stored {check:#x}, computed {actual:#x})"
            )));
        }
        Ok(true)
    }
}

/// Decoder of snappy-java's `SnappyOutputStream` format.
pub struct SnappyJavaBlocks<R> {
    inner: R,
    compressed: Vec<u8>,
    decoder: snap::raw::Decoder,
    chunk_no: u64,
}

impl<R: BufRead> SnappyJavaBlocks<R> {
    /// Decode the snappy-java stream read from `inner`.
    pub fn new(inner: R) -> Self {
        SnappyJavaBlocks {
            inner,
            compressed: Vec::new(),
            decoder: snap::raw::Decoder::new(),
            chunk_no: 0,
        }
    }
}

impl<R: BufRead> BlockDecode for SnappyJavaBlocks<R> {
    fn decode_block(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        // A stream header may start the input and may reappear (concatenated streams).
        loop {
            let head = self.inner.fill_buf()?;
            if head.is_empty() {
                return Ok(false);
            }
            if head.len() >= 8 && &head[..8] == SNAPPY_MAGIC {
                let mut header = [0u8; 16];
                self.inner
                    .read_exact(&mut header)
                    .map_err(|_| corrupt("snappy: truncated stream header"))?;
                continue;
            }
            break;
        }
        let mut len = [0u8; 4];
        if !read_exact_or_eof(&mut self.inner, &mut len)? {
            return Ok(false);
        }
        self.chunk_no += 1;
        let c = self.chunk_no;
        let n = i32::from_be_bytes(len);
        if !(0..=(1 << 30)).contains(&n) {
            return Err(corrupt(format!("snappy chunk {c}: bad length {n}")));
        }
        self.compressed.resize(n as usize, 0);
        self.inner.read_exact(&mut self.compressed).map_err(|_| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("snappy chunk {c}: truncated data"),
            )
        })?;
        let out_len = snap::raw::decompress_len(&self.compressed)
            .map_err(|e| corrupt(format!("snappy chunk {c}: {e}")))?;
        out.resize(out_len, 0);
        self.decoder
            .decompress(&self.compressed, out)
            .map_err(|e| corrupt(format!("snappy chunk {c}: {e}")))?;
        Ok(true)
    }
}

/// Decoder of ning compress-lzf's chunked format.
pub struct LzfBlocks<R> {
    inner: R,
    compressed: Vec<u8>,
    chunk_no: u64,
}

impl<R: Read> LzfBlocks<R> {
    /// Decode the LZF chunk stream read from `inner`.
    pub fn new(inner: R) -> Self {
        LzfBlocks {
            inner,
            compressed: Vec::new(),
            chunk_no: 0,
        }
    }
}

impl<R: Read> BlockDecode for LzfBlocks<R> {
    fn decode_block(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        let mut head = [0u8; 5];
        if !read_exact_or_eof(&mut self.inner, &mut head)? {
            return Ok(false);
        }
        self.chunk_no += 1;
        let c = self.chunk_no;
        if &head[..2] != b"ZV" {
            return Err(corrupt(format!("lzf chunk {c}: bad signature")));
        }
        let first_len = u16::from_be_bytes([head[3], head[4]]) as usize;
        match head[2] {
            0 => {
                out.resize(first_len, 0);
                self.inner.read_exact(out).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("lzf chunk {c}: truncated"),
                    )
                })?;
            }
            1 => {
                let mut ul = [0u8; 2];
                self.inner.read_exact(&mut ul).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("lzf chunk {c}: truncated"),
                    )
                })?;
                let orig = u16::from_be_bytes(ul) as usize;
                self.compressed.resize(first_len, 0);
                self.inner.read_exact(&mut self.compressed).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("lzf chunk {c}: truncated"),
                    )
                })?;
                out.clear();
                lzf_decompress(&self.compressed, out, orig)
                    .map_err(|e| corrupt(format!("lzf chunk {c}: {e}")))?;
            }
            t => return Err(corrupt(format!("lzf chunk {c}: unknown chunk type {t}"))),
        }
        Ok(true)
    }
}

/// Decompress one raw LZF block (liblzf format) of `expected` bytes into `out`.
pub fn lzf_decompress(input: &[u8], out: &mut Vec<u8>, expected: usize) -> Result<(), String> {
    out.reserve(expected);
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = input[ip] as usize;
        ip += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let lit = input
                .get(ip..ip + run)
                .ok_or("literal run past the end of the block")?;
            out.extend_from_slice(lit);
            ip += run;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input
                    .get(ip)
                    .ok_or("back-reference past the end of the block")?
                    as usize;
                ip += 1;
            }
            let low = *input
                .get(ip)
                .ok_or("back-reference past the end of the block")? as usize;
            ip += 1;
            let dist = ((ctrl & 0x1f) << 8) + low + 1;
            if dist > out.len() {
                return Err("back-reference before the start of the block".into());
            }
            let start = out.len() - dist;
            for k in 0..len + 2 {
                let b = out[start + k];
                out.push(b);
            }
        }
        if out.len() > expected {
            return Err(format!(
                "decoded more than the {expected} bytes the header says"
            ));
        }
    }
    if out.len() != expected {
        return Err(format!(
            "decoded {} bytes, header says {expected}",
            out.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(codec: Codec, bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        decoder(codec, bytes)?.read_to_end(&mut out)?;
        Ok(out)
    }

    /// Write lz4-java blocks the way `LZ4BlockOutputStream` does.
    fn lz4_java_encode(data: &[u8], block: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for chunk in data.chunks(block) {
            let comp = lz4_flex::block::compress(chunk);
            out.extend_from_slice(LZ4_MAGIC);
            out.push(0x20 | 6); // LZ4, level 16 (64 KiB)
            out.extend_from_slice(&(comp.len() as i32).to_le_bytes());
            out.extend_from_slice(&(chunk.len() as i32).to_le_bytes());
            let check = xxhash_rust::xxh32::xxh32(chunk, LZ4_SEED) & 0x0FFF_FFFF;
            out.extend_from_slice(&check.to_le_bytes());
            out.extend_from_slice(&comp);
        }
        out.extend_from_slice(LZ4_MAGIC);
        out.push(0x10 | 6);
        out.extend_from_slice(&[0; 12]);
        out
    }

    #[test]
    fn lz4_java_round_trip_and_checksum() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{{\"n\":{i}}}\n").into_bytes())
            .collect();
        let enc = lz4_java_encode(&data, 65536);
        assert_eq!(read_all(Codec::Lz4, &enc).unwrap(), data);
        // two concatenated streams
        let mut twice = enc.clone();
        twice.extend_from_slice(&enc);
        assert_eq!(read_all(Codec::Lz4, &twice).unwrap().len(), data.len() * 2);
        // flip one byte of the payload: the checksum (or the decoder) must catch it
        let mut bad = enc.clone();
        let at = 21 + 100;
        bad[at] ^= 0x55;
        assert!(read_all(Codec::Lz4, &bad).is_err());
        // cut in the middle of a block
        let err = read_all(Codec::Lz4, &enc[..enc.len() / 2]).unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
    }

    #[test]
    fn snappy_java_round_trip() {
        let data: Vec<u8> = (0..50_000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let mut enc = Vec::new();
        enc.extend_from_slice(SNAPPY_MAGIC);
        enc.extend_from_slice(&1i32.to_be_bytes());
        enc.extend_from_slice(&1i32.to_be_bytes());
        let mut e = snap::raw::Encoder::new();
        for chunk in data.chunks(32 * 1024) {
            let c = e.compress_vec(chunk).unwrap();
            enc.extend_from_slice(&(c.len() as i32).to_be_bytes());
            enc.extend_from_slice(&c);
        }
        assert_eq!(read_all(Codec::Snappy, &enc).unwrap(), data);
        let mut bad = enc.clone();
        let l = bad.len();
        bad.truncate(l - 10);
        assert!(read_all(Codec::Snappy, &bad).is_err());
    }

    #[test]
    fn lzf_literal_and_backref() {
        // "abcabcabc": literal "abc" then a back-reference of length 6 at distance 3
        let block = [2u8, b'a', b'b', b'c', (4 << 5) as u8, 2];
        let mut out = Vec::new();
        lzf_decompress(&block, &mut out, 9).unwrap();
        assert_eq!(out, b"abcabcabc");
        let mut chunked = b"ZV\x01\x00\x06\x00\x09".to_vec();
        chunked.extend_from_slice(&block);
        chunked.extend_from_slice(b"ZV\x00\x00\x02hi");
        assert_eq!(read_all(Codec::Lzf, &chunked).unwrap(), b"abcabcabchi");
        assert!(lzf_decompress(&[(4 << 5) as u8, 9], &mut Vec::new(), 6).is_err());
    }

    #[test]
    fn detection() {
        assert_eq!(detect("x.lz4", b"LZ4Block...").unwrap(), Codec::Lz4);
        assert_eq!(
            detect("x.zstd.inprogress", &[0x28, 0xB5, 0x2F, 0xFD]).unwrap(),
            Codec::Zstd
        );
        assert_eq!(detect("eventlog", b"{\"Event\"").unwrap(), Codec::Plain);
        assert_eq!(detect("eventlog", &[0x1F, 0x8B, 8]).unwrap(), Codec::Gzip);
        assert!(detect("x.lz4", b"{\"Event\"").unwrap_err().contains("lz4"));
        assert_eq!(detect("x", b"").unwrap_err(), "empty file");
    }
}
