//! Which glibc a binary needs, and which the nodes of an EMR release have: `fleet submit` ships
//! this binary to the cluster's nodes, where an older glibc than it was linked against stops
//! every task at load time ("version `GLIBC_2.35' not found"). Told before anything is uploaded.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// A glibc version, (major, minor).
pub type Version = (u32, u32);

const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;

fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(i..i + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

fn read_at(f: &mut File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    if len > 256 << 20 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a section too large",
        ));
    }
    f.seek(SeekFrom::Start(offset))?;
    let mut b = vec![0u8; len as usize];
    f.read_exact(&mut b)?;
    Ok(b)
}

/// The newest glibc the ELF file at `path` needs, from its symbol-version requirements
/// (`GLIBC_2.N`; `GLIBC_ABI_DT_RELR`, packed relocations, is glibc 2.36). `None`: not a 64-bit
/// little-endian ELF file, or no glibc version needed.
pub fn needs(path: &Path) -> io::Result<Option<Version>> {
    let mut f = File::open(path)?;
    let mut h = [0u8; 64];
    if f.read(&mut h)? < 64 || &h[..4] != b"\x7fELF" || h[4] != 2 || h[5] != 1 {
        return Ok(None);
    }
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "a damaged ELF header");
    let shoff = u64_at(&h, 0x28).ok_or_else(bad)?;
    let shentsize = u64::from(u16_at(&h, 0x3a).ok_or_else(bad)?);
    let shnum = u64::from(u16_at(&h, 0x3c).ok_or_else(bad)?);
    if shentsize < 64 {
        return Ok(None);
    }
    let sh = read_at(&mut f, shoff, shentsize * shnum)?;
    let section = |i: u64| {
        let o = (i * shentsize) as usize;
        Some((
            u32_at(&sh, o + 4)?,
            u64_at(&sh, o + 0x18)?,
            u64_at(&sh, o + 0x20)?,
            u32_at(&sh, o + 0x28)?,
        ))
    };
    let mut newest: Option<Version> = None;
    for i in 0..shnum {
        let Some((kind, offset, size, link)) = section(i) else {
            return Err(bad());
        };
        if kind != SHT_GNU_VERNEED {
            continue;
        }
        let (_, str_off, str_size, _) = section(u64::from(link)).ok_or_else(bad)?;
        let need = read_at(&mut f, offset, size)?;
        let strings = read_at(&mut f, str_off, str_size)?;
        let name = |at: u32| {
            let s = strings.get(at as usize..)?;
            let end = s.iter().position(|&c| c == 0)?;
            std::str::from_utf8(&s[..end]).ok()
        };
        // Verneed entries, each with its Vernaux list
        let mut at = 0usize;
        loop {
            let count = u16_at(&need, at + 2).ok_or_else(bad)?;
            let aux = u32_at(&need, at + 8).ok_or_else(bad)? as usize;
            let next = u32_at(&need, at + 12).ok_or_else(bad)? as usize;
            let mut a = at + aux;
            for _ in 0..count {
                let v = name(u32_at(&need, a + 8).ok_or_else(bad)?).and_then(version_of);
                newest = newest.max(v);
                let step = u32_at(&need, a + 12).ok_or_else(bad)? as usize;
                if step == 0 {
                    break;
                }
                a += step;
            }
            if next == 0 {
                break;
            }
            at += next;
        }
    }
    Ok(newest)
}

/// The glibc a symbol-version name stands for.
fn version_of(name: &str) -> Option<Version> {
    if name == "GLIBC_ABI_DT_RELR" {
        return Some((2, 36));
    }
    let rest = name.strip_prefix("GLIBC_")?;
    let mut parts = rest.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The glibc of an EMR release's nodes: Amazon Linux 2023 from emr-7.0.0 (2.34), Amazon Linux 2
/// for emr-6.x and emr-5.30 on (2.26), the first Amazon Linux before (2.17).
pub fn of_emr_release(label: &str) -> Option<Version> {
    let v = label.strip_prefix("emr-")?;
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next()??, parts.next().flatten().unwrap_or(0));
    Some(match major {
        7.. => (2, 34),
        6 => (2, 26),
        5 if minor >= 30 => (2, 26),
        _ => (2, 17),
    })
}

/// A version written `a.b`.
pub fn parse(text: &str) -> Option<Version> {
    let (a, b) = text.trim().split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// `a.b` of a version.
pub fn show(v: Version) -> String {
    format!("{}.{}", v.0, v.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The newest `GLIBC_` version binutils' objdump lists for a file.
    fn objdump_newest(path: &Path) -> Option<Version> {
        let out = std::process::Command::new("objdump")
            .arg("-T")
            .arg(path)
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .split(|c: char| c == '(' || c == ')' || c.is_whitespace())
            .filter_map(version_of)
            .max()
    }

    #[test]
    fn versions_needed_equal_objdumps() {
        // this test binary, and the XGBoost library the build links (manylinux_2_28)
        let lib =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.xgboost/xgboost/lib/libxgboost.so");
        let exe = std::env::current_exe().unwrap();
        for path in [exe.as_path(), lib.as_path()] {
            let ours = needs(path).unwrap();
            assert!(ours.is_some(), "{}", path.display());
            if let Some(theirs) = objdump_newest(path) {
                assert_eq!(ours, Some(theirs), "{}", path.display());
            }
        }
        assert!(
            needs(&lib).unwrap().unwrap() <= (2, 28),
            "the wheel says manylinux_2_28"
        );
        // not an ELF file
        assert_eq!(
            needs(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("Cargo.toml")
                    .as_path()
            )
            .unwrap(),
            None
        );
    }

    #[test]
    fn emr_releases() {
        assert_eq!(of_emr_release("emr-7.9.0"), Some((2, 34)));
        assert_eq!(of_emr_release("emr-6.15.0"), Some((2, 26)));
        assert_eq!(of_emr_release("emr-5.36.1"), Some((2, 26)));
        assert_eq!(of_emr_release("emr-5.29.0"), Some((2, 17)));
        assert_eq!(of_emr_release("spark-3.5"), None);
        assert_eq!(version_of("GLIBC_2.35"), Some((2, 35)));
        assert_eq!(version_of("GLIBC_ABI_DT_RELR"), Some((2, 36)));
        assert_eq!(version_of("GCC_3.0"), None);
    }
}
