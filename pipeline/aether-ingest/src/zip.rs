//! Event logs kept in `.zip` archives: the central directory read (ZIP64 included), each member
//! opened as a stream of its own (stored or deflated), so a member is read like any other file
//! of a log, its own codec (`.zstd`, `.lz4`, …) detected as usual.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// One file in an archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Its path inside the archive (`/`-separated).
    pub name: String,
    /// 0: stored, 8: deflated.
    pub method: u16,
    pub compressed: u64,
    pub size: u64,
    /// Where its local header starts.
    pub offset: u64,
}

const EOCD: u32 = 0x0605_4b50;
const ZIP64_EOCD: u32 = 0x0606_4b50;
const ZIP64_LOCATOR: u32 = 0x0706_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const LOCAL: u32 = 0x0403_4b50;

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(a)
}

/// The files of the archive at `path` (directories left out), in the central directory's
/// order. Encrypted members and compression methods other than stored and deflate are errors
/// naming the member.
pub fn members(path: &Path) -> io::Result<Vec<Member>> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    // the end record: 22 bytes, after a comment of up to 64 KiB
    let tail_len = len.min(22 + 65_535);
    f.seek(SeekFrom::Start(len - tail_len))?;
    let mut tail = vec![0u8; tail_len as usize];
    f.read_exact(&mut tail)?;
    let at = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| u32_at(&tail, i) == EOCD)
        .ok_or_else(|| bad("no end-of-central-directory record: not a zip archive"))?;
    let eocd = &tail[at..];
    let mut count = u64::from(u16_at(eocd, 10));
    let mut cd_size = u64::from(u32_at(eocd, 12));
    let mut cd_offset = u64::from(u32_at(eocd, 16));
    // ZIP64: a locator just before the end record points to the ZIP64 end record
    let eocd_pos = len - tail_len + at as u64;
    if eocd_pos >= 20 {
        let mut loc = [0u8; 20];
        f.seek(SeekFrom::Start(eocd_pos - 20))?;
        f.read_exact(&mut loc)?;
        if u32_at(&loc, 0) == ZIP64_LOCATOR {
            let rec_pos = u64_at(&loc, 8);
            let mut rec = [0u8; 56];
            f.seek(SeekFrom::Start(rec_pos))?;
            f.read_exact(&mut rec)?;
            if u32_at(&rec, 0) != ZIP64_EOCD {
                return Err(bad("a ZIP64 locator pointing to no ZIP64 end record"));
            }
            count = u64_at(&rec, 32);
            cd_size = u64_at(&rec, 40);
            cd_offset = u64_at(&rec, 48);
        }
    }
    if cd_offset.checked_add(cd_size).is_none_or(|end| end > len) {
        return Err(bad(
            "the central directory lies past the end of the file (a cut-off archive?)",
        ));
    }
    f.seek(SeekFrom::Start(cd_offset))?;
    let mut cd = vec![0u8; cd_size as usize];
    f.read_exact(&mut cd)?;
    let mut out = Vec::new();
    let mut i = 0usize;
    for _ in 0..count {
        if i + 46 > cd.len() || u32_at(&cd, i) != CENTRAL {
            return Err(bad("a damaged central directory entry"));
        }
        let flags = u16_at(&cd, i + 8);
        let method = u16_at(&cd, i + 10);
        let mut compressed = u64::from(u32_at(&cd, i + 20));
        let mut size = u64::from(u32_at(&cd, i + 24));
        let (n, m, k) = (
            usize::from(u16_at(&cd, i + 28)),
            usize::from(u16_at(&cd, i + 30)),
            usize::from(u16_at(&cd, i + 32)),
        );
        let mut offset = u64::from(u32_at(&cd, i + 42));
        let end = i + 46 + n + m + k;
        if end > cd.len() {
            return Err(bad("a damaged central directory entry"));
        }
        let name = String::from_utf8_lossy(&cd[i + 46..i + 46 + n]).into_owned();
        // the ZIP64 extra field holds, in order, the fields saturated at 0xFFFFFFFF
        let mut extra = &cd[i + 46 + n..i + 46 + n + m];
        while extra.len() >= 4 {
            let (id, len) = (u16_at(extra, 0), usize::from(u16_at(extra, 2)));
            let body = &extra[4..(4 + len).min(extra.len())];
            if id == 0x0001 {
                let mut j = 0;
                for field in [&mut size, &mut compressed, &mut offset] {
                    if *field == 0xFFFF_FFFF && j + 8 <= body.len() {
                        *field = u64_at(body, j);
                        j += 8;
                    }
                }
            }
            extra = &extra[(4 + len).min(extra.len())..];
        }
        i = end;
        if name.ends_with('/') {
            continue;
        }
        if flags & 1 != 0 {
            return Err(bad(format!("{name}: encrypted members cannot be read")));
        }
        if method != 0 && method != 8 {
            return Err(bad(format!(
                "{name}: compression method {method} (only stored and deflate are read)"
            )));
        }
        out.push(Member {
            name,
            method,
            compressed,
            size,
            offset,
        });
    }
    Ok(out)
}

/// The bytes of one member, decompressed from the archive's own compression (stored or
/// deflate): what a plain file of that name would hold.
pub fn open(path: &Path, m: &Member) -> io::Result<Box<dyn Read + Send>> {
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(m.offset))?;
    let mut h = [0u8; 30];
    f.read_exact(&mut h)?;
    if u32_at(&h, 0) != LOCAL {
        return Err(bad(format!(
            "{}: no local header where the directory says",
            m.name
        )));
    }
    let skip = u64::from(u16_at(&h, 26)) + u64::from(u16_at(&h, 28));
    f.seek(SeekFrom::Current(skip as i64))?;
    let data = f.take(m.compressed);
    Ok(match m.method {
        0 => Box::new(data),
        _ => Box::new(flate2::read::DeflateDecoder::new(io::BufReader::new(data))),
    })
}

/// Whether a file name is a zip archive's.
pub fn is_zip(name: &str) -> bool {
    name.to_ascii_lowercase().ends_with(".zip")
}
