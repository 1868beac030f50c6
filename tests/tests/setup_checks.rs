//! The fresh-machine path of `scripts/setup`: its checks (scripts/lib/checks.sh) fed directories
//! that look like machines that never ran it, and the whole script run against a fake machine
//! root with a recording `apt-get`, so the decision to install is tested, not assumed.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `source scripts/lib/checks.sh; <script>` in bash.
fn checks(script: &str) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!(". scripts/lib/checks.sh; {script}"))
        .current_dir(repo())
        .env_remove("LIBCLANG_PATH")
        .output()
        .expect("bash runs")
}

fn touch(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, b"\x7fELF").unwrap();
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn libclang_cpp_alone_is_not_libclang() {
    // a fresh Debian machine: llvm pulled in libclang-cpp14, not libclang1-14
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("usr/lib/llvm-14/lib");
    touch(&lib.join("libclang-cpp.so.14"));
    touch(&lib.join("libLLVM-14.so.1"));
    let o = checks(&format!("find_libclang {}", lib.display()));
    assert_eq!(o.status.code(), Some(1), "found {:?}", stdout(&o));
    assert_eq!(stdout(&o), "");
}

#[test]
fn each_name_bindgen_loads_is_found() {
    for name in [
        "libclang-14.so.1",
        "libclang.so.1",
        "libclang.so",
        "libclang-17.so",
    ] {
        let dir = tempfile::tempdir().unwrap();
        touch(&dir.path().join("libclang-cpp.so.14"));
        touch(&dir.path().join(name));
        let o = checks(&format!(
            "find_libclang /nonexistent {}",
            dir.path().display()
        ));
        assert!(o.status.success(), "{name} not found");
        assert_eq!(stdout(&o), dir.path().join(name).display().to_string());
    }
}

#[test]
fn clang_headers_need_stddef() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    fs::create_dir_all(lib.join("clang/14.0.6/include")).unwrap();
    let o = checks(&format!("find_clang_headers {}", lib.display()));
    assert_eq!(
        o.status.code(),
        Some(1),
        "an empty include directory is not the headers"
    );
    touch(&lib.join("clang/14.0.6/include/stddef.h"));
    let o = checks(&format!("find_clang_headers {}", lib.display()));
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        lib.join("clang/14.0.6/include").display().to_string()
    );
}

#[test]
fn xgboost_needs_the_library_at_the_pinned_version() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    assert_eq!(
        checks(&format!("xgboost_ok {d} 3.2.0")).status.code(),
        Some(1)
    );
    touch(&dir.path().join("xgboost/lib/libxgboost.so"));
    // no VERSION file: an unpack from before the pin, or one that died midway
    assert_eq!(
        checks(&format!("xgboost_ok {d} 3.2.0")).status.code(),
        Some(1)
    );
    fs::write(dir.path().join("VERSION"), "3.1.0\n").unwrap();
    assert_eq!(
        checks(&format!("xgboost_ok {d} 3.2.0")).status.code(),
        Some(1)
    );
    fs::write(dir.path().join("VERSION"), "3.2.0\n").unwrap();
    let o = checks(&format!("xgboost_ok {d} 3.2.0"));
    assert!(o.status.success());
    assert!(stdout(&o).ends_with("xgboost/lib/libxgboost.so"));
}

#[test]
fn moto_at_another_version_or_missing_means_install() {
    // a python that has none of moto's modules
    let dir = tempfile::tempdir().unwrap();
    let py = dir.path().join("python-without-moto");
    fs::write(&py, "#!/bin/sh\nexec python3 -I -S \"$@\"\n").unwrap();
    fs::set_permissions(&py, fs::Permissions::from_mode(0o755)).unwrap();
    let o = checks(&format!("moto_ok 5.2.5 {}", py.display()));
    assert_eq!(o.status.code(), Some(1));
    // the real one (scripts/check installed it) at a version nobody pinned
    assert_eq!(checks("moto_ok 0.0.1").status.code(), Some(1));
    let o = checks("moto_ok 5.2.5");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o), "5.2.5");
}

#[test]
fn chromium_needs_its_driver_at_the_same_major_version() {
    // fake programs first on PATH: what each prints decides
    let dir = tempfile::tempdir().unwrap();
    let prog = |name: &str, out: Option<&str>| {
        let p = dir.path().join(name);
        match out {
            Some(o) => {
                fs::write(&p, format!("#!/bin/sh\necho '{o}'\n")).unwrap();
                fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
            }
            None => {
                let _ = fs::remove_file(&p);
            }
        }
    };
    // PATH is the fake folder alone, with the two tools the check uses (no real chromium)
    for tool in ["grep", "head"] {
        let real = Command::new("bash")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        std::os::unix::fs::symlink(stdout(&real).trim(), dir.path().join(tool)).unwrap();
    }
    let run = || checks(&format!("PATH={}; chromium_ok", dir.path().display()));
    prog("chromium", Some("Chromium 148.0.7778.167 built on Debian"));
    prog("chromedriver", None);
    assert_eq!(run().status.code(), Some(1), "no driver");
    prog(
        "chromedriver",
        Some("ChromeDriver 147.0.7727.55 (abc-refs/branch-heads/7727@{#1})"),
    );
    assert_eq!(run().status.code(), Some(1), "another major version");
    prog(
        "chromedriver",
        Some("ChromeDriver 148.0.7778.167 (abc-refs/branch-heads/7778@{#1})"),
    );
    let o = run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        stdout(&o),
        "chromium 148.0.7778.167, chromedriver 148.0.7778.167"
    );
}

/// The whole script on a fake machine holding only libclang-cpp: it must call apt-get for
/// libclang1-14 and libclang-common-14-dev, then find what that installed.
#[test]
fn setup_installs_libclang_on_a_fresh_machine() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    touch(&root.join("usr/lib/llvm-14/lib/libclang-cpp.so.14"));
    let bin = dir.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let log = dir.path().join("apt.log");
    // apt-get: records its arguments; `install` of libclang1-14 puts the files in the fake root
    let apt = format!(
        "#!/bin/sh\necho \"$@\" >> {log}\ncase \"$*\" in *install*libclang1-14*)\n  \
         mkdir -p {lib}/clang/14.0.6/include && : > {lib}/libclang-14.so.1 && : > {lib}/clang/14.0.6/include/stddef.h ;;\nesac\n",
        log = log.display(),
        lib = root.join("usr/lib/llvm-14/lib").display()
    );
    fs::write(bin.join("apt-get"), apt).unwrap();
    fs::write(bin.join("sudo"), "#!/bin/sh\nexec \"$@\"\n").unwrap();
    for f in ["apt-get", "sudo"] {
        fs::set_permissions(bin.join(f), fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = || {
        Command::new("scripts/setup")
            .current_dir(repo())
            .env("AETHER_SETUP_ROOT", &root)
            .env("PATH", &path)
            .env_remove("LIBCLANG_PATH")
            .output()
            .expect("scripts/setup runs")
    };
    let o = run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let apt_calls = fs::read_to_string(&log).expect("apt-get was called");
    assert!(
        apt_calls.contains("install -y -q libclang1-14 libclang-common-14-dev"),
        "{apt_calls}"
    );
    assert!(err.contains("libclang: installed"), "{err}");
    assert!(
        err.contains(
            &root
                .join("usr/lib/llvm-14/lib/libclang-14.so.1")
                .display()
                .to_string()
        ),
        "{err}"
    );

    // the second run finds it and installs nothing
    fs::remove_file(&log).unwrap();
    let o = run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("libclang: found"), "{err}");
    assert!(!log.exists(), "apt-get ran again");
}
