//! The macOS wheel's facts, read from Mach-O load commands by scripts/lib/macho.py (no otool on
//! Linux): what libxgboost.dylib loads, its run paths, its minimum macOS, and from those the
//! wheel's platform tag and the libraries it must carry. The input is the head (Mach-O header and
//! load commands) of libxgboost.dylib from the PyPI wheel xgboost 3.2.0 for macOS arm64; the
//! expected facts are what llvm-otool-14 -L / -l prints for the whole file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn fixture() -> PathBuf {
    repo().join("tests/golden/macho/libxgboost-3.2.0-macosx_12_0_arm64.head")
}

fn python(code: &str, args: &[&Path]) -> Output {
    Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import sys, json; sys.path.insert(0, {:?}); import macho\n{code}",
            repo().join("scripts/lib").display().to_string()
        ))
        .args(args)
        .output()
        .expect("python3 runs")
}

fn ok(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn macho_reads_the_xgboost_dylib_as_otool_does() {
    let o = Command::new("python3")
        .arg(repo().join("scripts/lib/macho.py"))
        .arg(fixture())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(ok(&o).trim()).unwrap();
    let s = &v["slices"];
    assert_eq!(s.as_array().unwrap().len(), 1, "{v}");
    let s = &s[0];
    assert_eq!(s["arch"], "arm64", "{v}");
    assert_eq!(s["filetype"], 6, "MH_DYLIB: {v}");
    assert_eq!(s["id"], "@rpath/libxgboost.dylib", "{v}");
    assert_eq!(
        s["needed"],
        serde_json::json!([
            "@rpath/libomp.dylib",
            "/usr/lib/libc++.1.dylib",
            "/usr/lib/libSystem.B.dylib"
        ]),
        "{v}"
    );
    assert_eq!(
        s["rpaths"],
        serde_json::json!(["/opt/homebrew/opt/libomp/lib"]),
        "{v}"
    );
    assert_eq!(s["minos"], serde_json::json!([12, 0, 0]), "{v}");
}

/// The tag, and the libraries a wheel holding the files still lacks: libomp until it is carried
/// (under any path @rpath names), none after; a universal file of both architectures tags as
/// universal2; a higher minimum macOS in any file raises the tag.
#[test]
fn the_macos_wheel_tag_and_what_it_must_carry() {
    let dir = tempfile::tempdir().unwrap();
    let xgb = dir.path().join("libxgboost.dylib");
    std::fs::copy(fixture(), &xgb).unwrap();
    let code = r#"
import struct, shutil, os
xgb = sys.argv[1]
d = os.path.dirname(xgb)
out = {"alone": macho.wheel_tag([xgb])}
omp = os.path.join(d, "libomp.dylib")
shutil.copyfile(xgb, omp)
out["carried"] = macho.wheel_tag([xgb, omp])
# an x86_64 copy (cputype patched) and a universal file of the two slices
thin = open(xgb, "rb").read()
x86 = bytearray(thin); struct.pack_into("<i", x86, 4, 0x01000007)
fat = struct.pack(">II", 0xCAFEBABE, 2)
fat += struct.pack(">iiIII", 0x0100000C, 0, 4096, len(thin), 12)
fat += struct.pack(">iiIII", 0x01000007, 3, 8192, len(x86), 12)
fat = fat.ljust(4096, b"\0") + thin.ljust(4096, b"\0") + bytes(x86)
uni = os.path.join(d, "universal", "libxgboost.dylib")
os.makedirs(os.path.dirname(uni))
open(uni, "wb").write(fat)
uni_omp = os.path.join(d, "universal", "libomp.dylib")
shutil.copyfile(uni, uni_omp)
out["universal"] = macho.wheel_tag([uni, uni_omp])
# an arm64-only file beside it: the wheel is arm64
out["mixed"] = macho.wheel_tag([uni, omp])[0]
out["universal_archs"] = [s["arch"] for s in macho.read(uni)]
# minos 14.2 in the x86_64 copy (LC_BUILD_VERSION's minos word: 0x000e0200)
at = thin.find(struct.pack("<II", 0x32, 32))
struct.pack_into("<I", x86, at + 12, 0x000E0200)
newer = os.path.join(d, "newer", "libxgboost.dylib")
os.makedirs(os.path.dirname(newer))
open(newer, "wb").write(bytes(x86))
out["newer"] = macho.wheel_tag([newer])
print(json.dumps(out))
"#;
    let o = python(code, &[&xgb]);
    let v: serde_json::Value = serde_json::from_str(ok(&o).trim()).unwrap();
    assert_eq!(
        v["alone"],
        serde_json::json!([
            "macosx_12_0_arm64",
            ["@rpath/libomp.dylib (needed by libxgboost.dylib)"]
        ]),
        "{v}"
    );
    assert_eq!(
        v["carried"],
        serde_json::json!(["macosx_12_0_arm64", []]),
        "{v}"
    );
    assert_eq!(
        v["universal"],
        serde_json::json!(["macosx_12_0_universal2", []]),
        "{v}"
    );
    assert_eq!(v["mixed"], "macosx_12_0_arm64", "{v}");
    assert_eq!(
        v["universal_archs"],
        serde_json::json!(["arm64", "x86_64"]),
        "{v}"
    );
    assert_eq!(v["newer"][0], "macosx_14_0_x86_64", "{v}");
}

/// A file that is not Mach-O, or whose load commands are cut off, is named with its problem and
/// the exit status says so; the other files given are still read.
#[test]
fn bad_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.dylib");
    std::fs::write(&cut, &std::fs::read(fixture()).unwrap()[..600]).unwrap();
    let elf = std::env::current_exe().unwrap();
    let o = Command::new("python3")
        .arg(repo().join("scripts/lib/macho.py"))
        .args([elf.as_path(), cut.as_path(), fixture().as_path()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{}: not a Mach-O file", elf.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}: the load commands run past the end of the file",
            cut.display()
        )),
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.lines().count(), 1, "the good file is still read: {out}");
    assert!(out.contains("@rpath/libomp.dylib"), "{out}");
}

/// What dyld loaded, read from its DYLD_PRINT_LIBRARIES lines (the wheel check's proof that both
/// libraries come from the new virtualenv): macOS 13 and later print the image's UUID before the
/// path (dyld's Loader.cpp: "<%s> %s"), earlier ones the path alone; the program's own output and
/// other lines are not images.
#[test]
fn dyld_loads_are_read_in_both_formats() {
    let text = "dyld[4242]: <8F1C2A3B-0D4E-3F5A-9B6C-7D8E9F0A1B2C> /private/var/folders/ab/T/aether-wheel-check-x/venv/bin/aether\n\
                dyld[4242]: <11111111-2222-3333-4444-555555555555> /private/var/folders/ab/T/aether-wheel-check-x/venv/lib/xgboost/lib/libxgboost.dylib\n\
                dyld[17]: /usr/lib/libSystem.B.dylib\n\
                aether 0.1.0\n\
                dyld: warning, something else\n";
    let dir = tempfile::tempdir().unwrap();
    let stderr = dir.path().join("stderr.txt");
    std::fs::write(&stderr, text).unwrap();
    let o = python(
        "print(json.dumps(macho.dyld_loads(open(sys.argv[1]).read())))",
        &[&stderr],
    );
    let v: serde_json::Value = serde_json::from_str(ok(&o).trim()).unwrap();
    assert_eq!(
        v,
        serde_json::json!([
            "/private/var/folders/ab/T/aether-wheel-check-x/venv/bin/aether",
            "/private/var/folders/ab/T/aether-wheel-check-x/venv/lib/xgboost/lib/libxgboost.dylib",
            "/usr/lib/libSystem.B.dylib"
        ])
    );
}
