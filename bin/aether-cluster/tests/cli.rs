//! The cluster binary's own checks of bad input: a clear error naming the problem, exit 2.
//! (The roles themselves are tested against local DataFusion in bin/aether/tests/ballista.rs,
//! which runs this binary beside `aether`; this test also makes `cargo test` build it.)

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_aether-cluster"))
        .args(args)
        .output()
        .expect("run aether-cluster");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn bad_addresses_are_named() {
    let (code, err) = run(&[
        "sql",
        "--cluster",
        "http://127.0.0.1:50050",
        "--warehouse",
        "/nonexistent",
        "SELECT 1",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("expected df://host:port"), "{err}");

    let (code, err) = run(&["executor", "--scheduler", "no-port-here"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no-port-here: expected host:port"), "{err}");

    let (code, err) = run(&["scheduler", "--bind", "not an address", "--port", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--bind not an address"), "{err}");
}
