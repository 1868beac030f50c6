//! Build script shared by every package whose binaries link the XGBoost C library (through the
//! `xgb` crate): it adds the library's folder to the linker search path and as an rpath, so the
//! binaries and tests run without LD_LIBRARY_PATH. `XGBOOST_LIB_DIR` comes from
//! `.cargo/config.toml` (the folder `scripts/setup` fills from the PyPI wheel xgboost-cpu).
fn main() {
    println!("cargo:rerun-if-env-changed=XGBOOST_LIB_DIR");
    // release binaries: identical functions folded into one (the many copies of one generic
    // instance that each crate makes): a smaller binary, and fewer code pages touched per run
    if std::env::var("PROFILE").as_deref() == Ok("release") {
        println!("cargo:rustc-link-arg=-Wl,--icf=all");
    }
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
