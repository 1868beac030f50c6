//! The least-privilege IAM policy of `docs/aws-setup.md` is valid JSON and allows every AWS SDK
//! operation aether-platform calls (an operation added without its action fails here), and the
//! S3 actions aether's object_store reads and writes need.

use std::collections::BTreeSet;
use std::path::Path;

fn policy_actions() -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/aws-setup.md")).unwrap();
    let start = doc
        .find("```json\n")
        .expect("a ```json block in docs/aws-setup.md")
        + 8;
    let end = start + doc[start..].find("```").unwrap();
    let policy: serde_json::Value =
        serde_json::from_str(&doc[start..end]).expect("the policy is JSON");
    assert_eq!(policy["Version"], "2012-10-17");
    let mut actions = BTreeSet::new();
    for s in policy["Statement"].as_array().expect("Statement") {
        assert_eq!(s["Effect"], "Allow", "{s}");
        assert!(s["Resource"].is_string() || s["Resource"].is_array(), "{s}");
        match &s["Action"] {
            serde_json::Value::String(a) => {
                actions.insert(a.clone());
            }
            serde_json::Value::Array(a) => {
                actions.extend(a.iter().map(|a| a.as_str().unwrap().to_string()));
            }
            a => panic!("Action {a}"),
        }
    }
    actions
}

#[test]
fn the_documented_policy_allows_every_call_aether_makes() {
    let actions = policy_actions();
    // `get_aws_default_service_quota` is `servicequotas:GetAWSDefaultServiceQuota`
    let allowed: BTreeSet<String> = actions
        .iter()
        .map(|a| a.split(':').nth(1).unwrap().to_ascii_lowercase())
        .collect();
    let call =
        regex::Regex::new(r"(?:client|Client::new\([^)]*\))\s*\.\s*([a-z][a-z0-9_]*)\(\)").unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut calls = BTreeSet::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        for c in call.captures_iter(&text) {
            calls.insert((c[1].to_string(), p.file_name().unwrap().to_owned()));
        }
    }
    // the scan finds the calls (of each SDK client)
    for op in [
        "run_job_flow",
        "start_job_run",
        "put_metric_data",
        "get_caller_identity",
    ] {
        assert!(
            calls.iter().any(|(c, _)| c == op),
            "{op} not found: {calls:?}"
        );
    }
    let mut missing: Vec<_> = calls
        .iter()
        .filter(|(op, _)| !allowed.contains(&op.replace('_', "")))
        .collect();
    // the calls signed by hand (signed.rs): EC2's `lookup("DescribeSubnets", …)` in ec2.rs,
    // IAM's `self.iam("GetRole", …)` and Service Quotas' `"{TARGET}.GetServiceQuota"` in
    // preflight.rs
    let hand = |file: &str, pattern: &str, service: &str| -> Vec<String> {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        regex::Regex::new(pattern)
            .unwrap()
            .captures_iter(&text)
            .map(|c| format!("{service}:{}", &c[1]))
            .collect()
    };
    let ec2_calls = hand("ec2.rs", r#"\.lookup\(\s*"([A-Za-z]+)""#, "ec2");
    assert!(ec2_calls.len() >= 5, "{ec2_calls:?}");
    let iam_calls = hand("preflight.rs", r#"self\.iam\(\s*"([A-Za-z]+)""#, "iam");
    assert_eq!(iam_calls, ["iam:GetRole", "iam:GetInstanceProfile"]);
    let quota_calls = hand(
        "preflight.rs",
        r#"\{TARGET\}\.([A-Za-z]+)""#,
        "servicequotas",
    );
    assert_eq!(
        quota_calls,
        [
            "servicequotas:GetServiceQuota",
            "servicequotas:GetAWSDefaultServiceQuota"
        ]
    );
    let signed = [ec2_calls, iam_calls, quota_calls].concat();
    let signed_missing: Vec<&String> = signed.iter().filter(|a| !actions.contains(*a)).collect();
    assert!(
        signed_missing.is_empty(),
        "calls signed by hand without an action in docs/aws-setup.md's policy: {signed_missing:?}"
    );
    missing.sort();
    assert!(
        missing.is_empty(),
        "SDK calls without an action in docs/aws-setup.md's policy: {missing:?}"
    );
    for a in [
        "s3:GetObject",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:ListBucket",
        "iam:PassRole",
    ] {
        assert!(actions.contains(a), "{a} not in the policy");
    }
}
