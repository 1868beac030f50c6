//! What the build must not bring in again (docs/performance.md, "Build time"): a second crypto
//! library beside ring (aws-lc, whose C build alone takes ~2 minutes of CPU; OpenSSL, a system
//! library the wheel could not carry), and the SDK crates of the calls signed by hand instead
//! (EC2, IAM, Service Quotas: aether-platform's signed.rs).

fn locked_packages() -> Vec<String> {
    let lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    let text = std::fs::read_to_string(&lock).expect("Cargo.lock");
    text.lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .map(|n| n.trim_end_matches('"').to_string())
        .collect()
}

#[test]
fn one_crypto_stack_and_no_heavy_sdk_crates() {
    let pkgs = locked_packages();
    assert!(
        pkgs.len() > 300,
        "{} packages: Cargo.lock not read",
        pkgs.len()
    );
    assert!(pkgs.iter().any(|p| p == "ring"), "ring is the crypto stack");
    for banned in [
        "aws-lc-rs",
        "aws-lc-sys",
        "aws-lc-fips-sys",
        "openssl-sys",
        "aws-sdk-ec2",
    ] {
        assert!(
            !pkgs.iter().any(|p| p == banned),
            "{banned} is back in Cargo.lock (cargo tree -i {banned} says who brings it)"
        );
    }
}
