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

fn write_exe(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn realpath(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A Python without the venv/ensurepip modules (Debian 12 without python3-venv): setup asks
/// apt-get for python3-venv; as a user whose sudo cannot install, it stops and says what to
/// install; as root, it installs it and makes the virtualenv from that Python.
#[test]
fn setup_installs_python3_venv_when_the_python_cannot_make_a_venv() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let log = dir.path().join("apt.log");
    let installed = dir.path().join("python3-venv-installed");
    // Debian's python3 until python3-venv is there: no ensurepip, so no `-m venv` either
    let py = dir.path().join("python3");
    write_exe(
        &py,
        &format!(
            "#!/bin/sh\nif [ ! -e {installed} ]; then case \"$*\" in *ensurepip*|*venv*)\n  \
             echo \"ModuleNotFoundError: No module named 'ensurepip'\" >&2; exit 1 ;;\nesac; fi\n\
             exec /usr/bin/python3 \"$@\"\n",
            installed = installed.display()
        ),
    );
    let apt = format!(
        "#!/bin/sh\necho \"$@\" >> {log}\ncase \"$*\" in *install*python3-venv*) : > {installed} ;; esac\n",
        log = log.display(),
        installed = installed.display()
    );
    write_exe(&bin.join("apt-get"), &apt);
    let venv = dir.path().join("venv");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = || {
        Command::new("scripts/setup")
            .arg("--venv")
            .current_dir(repo())
            .env("AETHER_PYTHON", &py)
            .env("AETHER_VENV", &venv)
            .env("AETHER_UV", "")
            .env("PATH", &path)
            .env_remove("VIRTUAL_ENV")
            .output()
            .expect("scripts/setup runs")
    };

    // not root, and sudo may not install: a clear error, nothing made
    write_exe(&bin.join("id"), "#!/bin/sh\necho 1000\n");
    write_exe(
        &bin.join("sudo"),
        "#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n",
    );
    let o = run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("has no venv/ensurepip module: installing python3-venv"),
        "{err}"
    );
    assert!(
        err.contains("'apt-get install python3-venv' failed: install them as root (sudo apt-get install python3-venv)"),
        "{err}"
    );
    assert!(!venv.exists() && !installed.exists());

    // root: apt-get installs python3-venv, then the virtualenv is made from that Python
    fs::remove_file(bin.join("id")).unwrap();
    fs::remove_file(bin.join("sudo")).unwrap();
    let o = run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let apt_calls = fs::read_to_string(&log).expect("apt-get was called");
    assert!(
        apt_calls.contains("install -y -q python3-venv"),
        "{apt_calls}"
    );
    assert!(
        err.contains(&format!("python venv: made {}", venv.display())),
        "{err}"
    );
    assert_eq!(
        realpath(&venv.join("bin/python")),
        realpath(Path::new("/usr/bin/python3"))
    );

    // the second run finds it and installs nothing
    fs::remove_file(&log).unwrap();
    let o = run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("python venv: found {}", venv.display())),
        "{err}"
    );
    assert!(!log.exists(), "apt-get ran again");
}

/// What `python -c CODE` prints (trimmed), failing the test when it fails.
fn py_out(python: &Path, code: &str) -> String {
    let o = Command::new(python)
        .args(["-c", code])
        .env_remove("PYTHONPATH")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        python.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    stdout(&o)
}

/// `scripts/setup --python-tools` with this machine's Debian `/usr/bin/python3`, which carries
/// the real PEP 668 marker (EXTERNALLY-MANAGED): moto, boto3 and pyspark go into a virtualenv
/// made from it, and the system Python's site-packages are left as they were. With only the
/// system directories on PATH, any `python3 -m pip install` outside the virtualenv would be
/// refused by the marker and fail the run.
#[test]
fn setup_puts_python_tools_in_a_venv_under_pep_668() {
    let system = Path::new("/usr/bin/python3");
    let stdlib = py_out(
        system,
        "import sysconfig; print(sysconfig.get_path('stdlib'))",
    );
    let marker = Path::new(&stdlib).join("EXTERNALLY-MANAGED");
    assert!(
        marker.is_file(),
        "{} missing: this test needs a PEP 668 system Python (Debian 12)",
        marker.display()
    );
    // the marker is in force: pip refuses the system Python (or there is no pip at all, as on a
    // fresh Debian 12)
    let o = Command::new(system)
        .args([
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-index",
            "aether-never-installed",
        ])
        .env_remove("PIP_BREAK_SYSTEM_PACKAGES")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("externally-managed-environment") || err.contains("No module named pip"),
        "{err}"
    );
    // the system Python's site-packages (and its user site), entry by entry
    let sites = || -> Vec<(String, Vec<String>)> {
        let dirs = py_out(
            system,
            "import site; print('\\n'.join(site.getsitepackages() + [site.getusersitepackages()]))",
        );
        dirs.lines()
            .map(|d| {
                let mut names: Vec<String> = fs::read_dir(d)
                    .map(|r| {
                        r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                names.sort();
                (d.to_string(), names)
            })
            .collect()
    };
    let before = sites();

    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let run = || {
        Command::new("scripts/setup")
            .arg("--python-tools")
            .current_dir(repo())
            .env("AETHER_PYTHON", system)
            .env("AETHER_VENV", &venv)
            .env("AETHER_UV", "")
            // python3 is Debian's: no pyenv, no other virtualenv, no pip override of PEP 668
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .env_remove("VIRTUAL_ENV")
            .env_remove("PYTHONPATH")
            .env_remove("PYTHONHOME")
            .env_remove("PIP_USER")
            .env_remove("PIP_BREAK_SYSTEM_PACKAGES")
            .output()
            .expect("scripts/setup runs")
    };
    let o = run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v = venv.display();
    for line in [
        format!("python venv: made {v} (Python "),
        format!("moto_server 5.2.5: installed {v}/bin/moto_server"),
        "pyspark 3.5.".to_string(),
        format!("installed {v}/bin/spark-submit"),
    ] {
        assert!(err.contains(&line), "{line:?} not in:\n{err}");
    }

    // (a) a virtualenv of the system Python
    let py = venv.join("bin/python");
    assert!(venv.join("pyvenv.cfg").is_file());
    assert_eq!(realpath(&py), realpath(system));
    assert_eq!(
        py_out(&py, "import sys; print(sys.prefix != sys.base_prefix)"),
        "True"
    );
    // (b) the tools are in it
    let files = py_out(
        &py,
        "import boto3, moto, pyspark; print(boto3.__file__); print(moto.__file__); print(pyspark.__file__)",
    );
    let venv_real = realpath(&venv);
    for f in files.lines() {
        assert!(
            realpath(Path::new(f)).starts_with(&venv_real),
            "{f} is outside {v}"
        );
    }
    for tool in ["moto_server", "spark-submit"] {
        assert!(venv.join("bin").join(tool).is_file(), "{tool}");
    }
    // (c) nothing written to the system Python
    assert_eq!(sites(), before, "the system Python's site-packages changed");

    // the second run finds everything and installs nothing
    let o = run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("python venv: found {v}")), "{err}");
    assert!(
        err.contains(&format!("moto_server 5.2.5: found {v}/bin/moto_server")),
        "{err}"
    );
    assert!(!err.contains("installing"), "{err}");
}

/// setup on macOS (checked here with `uname` stood in for): the library is libxgboost.dylib from
/// the PyPI wheel xgboost (xgboost-cpu has none for macOS), a real Mach-O for arm64 needing macOS
/// 12; the libomp it loads is Homebrew's, installed with brew when missing, and a machine without
/// brew is told what to install; no libclang from apt (Xcode's serves bindgen); the tests' tools
/// are Debian's only and say so.
#[test]
fn setup_on_macos_takes_the_dylib_and_homebrews_libomp() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let omp = dir.path().join("libomp");
    let log = dir.path().join("brew.log");
    write_exe(
        &bin.join("brew"),
        &format!(
            "#!/bin/sh\necho \"$@\" >> {log}\ncase \"$*\" in\n  \"--prefix libomp\") echo {omp} ;;\n  \
             \"install libomp\") mkdir -p {omp}/lib && : > {omp}/lib/libomp.dylib ;;\n  *) exit 1 ;;\nesac\n",
            log = log.display(),
            omp = omp.display()
        ),
    );
    // apt-get must not be asked for anything
    write_exe(
        &bin.join("apt-get"),
        "#!/bin/sh\necho apt-get \"$@\" >&2\nexit 3\n",
    );
    let dest = dir.path().join("xgb");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = |args: &[&str], path: &str| {
        Command::new("scripts/setup")
            .args(args)
            .current_dir(repo())
            .env("AETHER_SETUP_OS", "Darwin")
            .env("AETHER_XGBOOST_DEST", &dest)
            .env("AETHER_SETUP_PIP_PLATFORM", "macosx_12_0_arm64")
            .env("PATH", path)
            .output()
            .expect("scripts/setup runs")
    };
    let o = run(&[], &path);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("installing from the PyPI wheel xgboost into"),
        "{err}"
    );
    let lib = dest.join("xgboost/lib/libxgboost.dylib");
    assert!(
        err.contains(&format!("installed {}", lib.display())),
        "{err}"
    );
    assert!(!dest.join("xgboost/lib/libxgboost.so").exists());
    assert!(err.contains("libomp: installed"), "{err}");
    assert!(err.contains("bindgen uses Xcode's"), "{err}");
    assert!(!err.contains("apt-get"), "{err}");
    assert!(fs::read_to_string(&log).unwrap().contains("install libomp"));
    // the library is the macOS wheel's: arm64, macOS 12, loading libomp through its run path
    let o = Command::new("python3")
        .arg(repo().join("scripts/lib/macho.py"))
        .arg(&lib)
        .output()
        .unwrap();
    let facts = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{facts}");
    assert!(
        facts.contains("\"arch\": \"arm64\"") && facts.contains("\"minos\": [12, 0, 0]"),
        "{facts}"
    );
    assert!(facts.contains("@rpath/libomp.dylib"), "{facts}");

    // again: both found, nothing installed; --test stops, naming why
    fs::remove_file(&log).unwrap();
    let o = run(&["--test"], &path);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("xgboost 3.2.0: found"), "{err}");
    assert!(err.contains("libomp: found"), "{err}");
    assert!(
        err.contains("the tests' tools (moto, pyspark, chromium, the image check) are set up on Debian/Ubuntu only"),
        "{err}"
    );
    assert!(!fs::read_to_string(&log).unwrap().contains("install"));

    // no libomp and no brew: what to install
    fs::remove_dir_all(&omp).unwrap();
    fs::remove_file(bin.join("brew")).unwrap();
    let o = run(&[], &path);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "libxgboost.dylib loads libomp.dylib: install Homebrew's libomp (brew install libomp)"
        ),
        "{err}"
    );
}
