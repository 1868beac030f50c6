//! Build script shared by every package whose binaries link the XGBoost C library (through the
//! `xgb` crate): it adds the library's folder to the linker search path and as an rpath, so the
//! binaries and tests run without LD_LIBRARY_PATH. `XGBOOST_LIB_DIR` comes from
//! `.cargo/config.toml` (the folder `scripts/setup` fills from the PyPI wheel xgboost-cpu).
fn main() {
    println!("cargo:rerun-if-env-changed=XGBOOST_LIB_DIR");
    // macOS (the release workflow's macOS wheels): Apple's linker, Mach-O run paths; the ELF
    // linker's layout flags below are not for it
    let macos = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos");
    // release binaries: identical functions folded into one (the many copies of one generic
    // instance that each crate makes): a smaller binary, and fewer code pages touched per run
    if std::env::var("PROFILE").as_deref() == Ok("release") && !macos {
        println!("cargo:rustc-link-arg=-Wl,--icf=all");
        release_layout();
    }
    // an install laid out as bin/aether beside lib/ (scripts/image --files, the container
    // image, the wheel) finds the wheel's library there first, wherever it is copied
    let origin = if macos { "@executable_path" } else { "$ORIGIN" };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{origin}/../lib/xgboost/lib");
    match std::env::var("XGBOOST_LIB_DIR") {
        Ok(dir) => {
            println!("cargo:rustc-link-search=native={dir}");
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
        Err(_) => println!(
            "cargo:warning=XGBOOST_LIB_DIR is not set: run scripts/setup (it unpacks libxgboost.so)"
        ),
    }
}

/// The release binary's layout for a small resident set: the functions the common commands run
/// (bin/aether/code-order.txt, written by scripts/code-order) placed side by side, so a run maps
/// a few MB of code instead of pages across all of it; and relative relocations packed (RELR),
/// a few KB instead of a 7 MB table read at every start, where the loader of the building machine
/// reads them (glibc 2.36 and later: the binary then needs such a glibc).
fn release_layout() {
    if std::env::var("CARGO_PKG_NAME").as_deref() == Ok("aether") {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        let order = std::path::Path::new(&dir).join("code-order.txt");
        println!("cargo:rerun-if-changed={}", order.display());
        if order.is_file() {
            println!(
                "cargo:rustc-link-arg=-Wl,--symbol-ordering-file={}",
                order.display()
            );
            // names a later build no longer has (a new toolchain changes the hashes) cost
            // memory, not correctness: scripts/code-order rewrites the list
            println!("cargo:rustc-link-arg=-Wl,--no-warn-symbol-ordering");
        }
    }
    if glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the building machine's glibc (`getconf GNU_LIBC_VERSION`, e.g. "glibc 2.36") is at
/// least major.minor; false where it is not glibc or cannot be told.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let out = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output();
    let Ok(out) = out else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a, b) >= (major, minor)
}
