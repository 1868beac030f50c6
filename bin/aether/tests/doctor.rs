//! `aether doctor` against a local moto server (never real AWS): a new account (no roles, no
//! buckets) fails with what to run; after what `aws emr create-default-roles` and `aws s3 mb`
//! make, every check passes; a release not offered, a vCPU quota of 0 (Service Quotas from a
//! stand-in: moto serves only VPC quotas) and missing credentials fail, each naming the fix;
//! the quota moto cannot serve is a WARN that says how to check it by hand.

mod common;

use common::{doctor_check as check, err, out};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn doctor(home: &Path, endpoint: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_aether"));
    c.arg("doctor")
        .args(args)
        .env("AETHER_HOME", home)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT_URL_S3")
        .env_remove("AWS_ENDPOINT_URL_SERVICE_QUOTAS");
    for (k, v) in env {
        match v {
            &"" => c.env_remove(k),
            v => c.env(k, v),
        };
    }
    c.output().expect("run aether doctor")
}

fn python(script: &str) -> String {
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A stand-in for Service Quotas (GetServiceQuota, JSON 1.1) answering `values` per quota
/// code, on a free loopback port; killed on drop.
struct Quotas {
    child: std::process::Child,
    endpoint: String,
}

impl Drop for Quotas {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn quotas(values: &str) -> Quotas {
    let port = common::free_port();
    let script = r#"
import http.server, json, sys
values = json.loads(sys.argv[2])
names = {"L-DB2E81BA": "Running On-Demand G and VT instances", "L-417A185B": "Running On-Demand P instances"}
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        code = req.get("QuotaCode", "")
        body = json.dumps({"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "QuotaName": names.get(code, code), "Value": float(values.get(code, 0)), "Unit": "None", "Adjustable": True}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;
    let child = Command::new("python3")
        .args(["-c", script, &port.to_string(), values])
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Quotas {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
    }
}

#[test]
fn doctor_names_what_fails_and_how_to_fix_it() {
    let moto = common::start_moto();
    let ep = moto.endpoint.as_str();
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    for (k, v) in [
        ("platform.emr.region", "us-east-1"),
        ("platform.emr.cluster.artifacts_path", "s3://gpu-art/aether"),
        ("platform.emr.cluster.log_path", "s3://gpu-logs/emr"),
    ] {
        let o = common::aether(&home, &["config", "set", k, v]);
        assert!(o.status.success(), "config set {k}: {}", err(&o));
    }

    // a new account: no roles, no buckets; each FAIL says what to run
    let o = doctor(&home, ep, &[], &[]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}{}", err(&o));
    let (line, _) = check(&text, "credentials");
    assert!(
        line.starts_with("OK") && line.contains("123456789012") && line.contains("us-east-1"),
        "{line}"
    );
    let (line, fix) = check(&text, "service role");
    assert!(
        line.starts_with("FAIL")
            && line.contains("EMR_DefaultRole")
            && line.contains("does not exist"),
        "{line}"
    );
    assert!(
        fix.contains("aws emr create-default-roles --region us-east-1"),
        "{fix}"
    );
    let (line, fix) = check(&text, "instance profile");
    assert!(
        line.starts_with("FAIL") && line.contains("EMR_EC2_DefaultRole"),
        "{line}"
    );
    assert!(fix.contains("aws emr create-default-roles"), "{fix}");
    let (line, fix) = check(&text, "artifacts bucket");
    assert!(
        line.starts_with("FAIL")
            && line.contains("bucket gpu-art")
            && line.contains("does not exist"),
        "{line}"
    );
    assert!(
        fix.contains("aws s3 mb s3://gpu-art --region us-east-1"),
        "{fix}"
    );
    let (line, fix) = check(&text, "logs bucket");
    assert!(
        line.starts_with("FAIL") && line.contains("gpu-logs"),
        "{line}"
    );
    assert!(fix.contains("aws s3 mb s3://gpu-logs"), "{fix}");
    assert!(
        text.ends_with("4 FAIL, 2 WARN, 6 OK: fix what FAILs before `aether cluster create`\n"),
        "{text}"
    );

    // what `aws emr create-default-roles` and `aws s3 mb` make: every check passes but the
    // quota, which moto cannot serve (a WARN naming how to check it, not a crash)
    python(&format!(
        r#"import boto3, json
kw = dict(endpoint_url='{ep}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')
iam = boto3.client('iam', **kw)
def trust(service):
    return json.dumps({{"Version": "2012-10-17", "Statement": [{{"Effect": "Allow", "Principal": {{"Service": service}}, "Action": "sts:AssumeRole"}}]}})
iam.create_role(RoleName='EMR_DefaultRole', AssumeRolePolicyDocument=trust('elasticmapreduce.amazonaws.com'))
iam.create_role(RoleName='EMR_EC2_DefaultRole', AssumeRolePolicyDocument=trust('ec2.amazonaws.com'))
iam.create_instance_profile(InstanceProfileName='EMR_EC2_DefaultRole')
iam.add_role_to_instance_profile(InstanceProfileName='EMR_EC2_DefaultRole', RoleName='EMR_EC2_DefaultRole')
s3 = boto3.client('s3', **kw)
s3.create_bucket(Bucket='gpu-art')
s3.create_bucket(Bucket='gpu-logs')
"#
    ));
    let o = doctor(&home, ep, &[], &[]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}{}", err(&o));
    assert!(
        check(&text, "prices")
            .0
            .contains("costs at AWS list prices"),
        "{text}"
    );
    for name in [
        "platform",
        "prices",
        "credentials",
        "service role",
        "instance profile",
        "artifacts bucket",
        "logs bucket",
        "release label",
        "instance types",
    ] {
        assert!(check(&text, name).0.starts_with("OK"), "{name}:\n{text}");
    }
    assert!(
        check(&text, "artifacts bucket")
            .0
            .contains("s3://gpu-art/aether writable")
    );
    assert!(check(&text, "release label").0.contains("emr-7.9.0"));
    let (line, fix) = check(&text, "vCPU quota G/VT");
    assert!(
        line.starts_with("WARN") && line.contains("L-DB2E81BA") && line.contains("not readable"),
        "{line}"
    );
    assert!(
        fix.contains(
            "aws service-quotas get-service-quota --service-code ec2 --quota-code L-DB2E81BA"
        ),
        "{fix}"
    );
    // the probes were deleted
    let left = python(&format!(
        "import boto3\ns3 = boto3.client('s3', endpoint_url='{ep}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\nprint(sum(s3.list_objects_v2(Bucket=b).get('KeyCount', 0) for b in ['gpu-art', 'gpu-logs']))"
    ));
    assert_eq!(left, "0");

    // the same as JSON
    let o = doctor(&home, ep, &[], &["--json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("doctor --json");
    assert_eq!(j["account"], "123456789012");
    assert_eq!(j["region"], "us-east-1");
    let status = |name: &str| {
        j["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == name)
            .map(|c| c["status"].as_str().unwrap().to_string())
    };
    assert_eq!(status("service role").as_deref(), Some("OK"), "{j}");
    assert_eq!(status("vCPU quota P").as_deref(), Some("WARN"), "{j}");

    // a GPU quota of 0 (the usual in a new account): FAIL with the increase to ask for; the
    // shape's nodes all count
    let log =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sample/local-1796009671201");
    let o = common::aether(&home, &["qualify", "--event_log", log.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    let q = quotas(r#"{"L-DB2E81BA": 0, "L-417A185B": 0}"#);
    let sq = [("AWS_ENDPOINT_URL_SERVICE_QUOTAS", q.endpoint.as_str())];
    let o = doctor(&home, ep, &sq, &["--cluster_shape_id", "1"]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}{}", err(&o));
    let (line, fix) = check(&text, "instance types");
    assert!(
        line.starts_with("OK") && line.contains("(shape 1)"),
        "{line}"
    );
    let (line, fix_q) = check(&text, "vCPU quota");
    assert!(
        line.starts_with("FAIL")
            && line.contains("G and VT on-demand vCPUs: 0 in us-east-1 (L-DB2E81BA)"),
        "{line}"
    );
    assert!(
        fix_q.contains("aws service-quotas request-service-quota-increase --service-code ec2"),
        "{fix_q}"
    );
    assert!(fix.is_empty(), "{fix}");
    // enough quota: OK
    drop(q);
    let q = quotas(r#"{"L-DB2E81BA": 512, "L-417A185B": 512}"#);
    let sq = [("AWS_ENDPOINT_URL_SERVICE_QUOTAS", q.endpoint.as_str())];
    let o = doctor(&home, ep, &sq, &[]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}{}", err(&o));
    let (line, _) = check(&text, "vCPU quota G/VT");
    assert!(
        line.starts_with("OK") && line.contains("vCPUs: 512 in") && line.contains("4 needed for"),
        "{line}"
    );
    assert!(text.ends_with("0 FAIL, 0 WARN, 12 OK\n"), "{text}");
    let o = doctor(&home, ep, &[], &["--cluster_shape_id", "99"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        err(&o).contains("unknown cluster shape id 99"),
        "{}",
        err(&o)
    );

    // a release the region does not offer: FAIL naming the newest one; the instance types are
    // not checked for it
    let o = common::aether(
        &home,
        &["config", "set", "platform.emr.release_label", "emr-7.99.0"],
    );
    assert!(o.status.success(), "{}", err(&o));
    let o = doctor(&home, ep, &[], &[]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    let (line, fix) = check(&text, "release label");
    assert!(
        line.starts_with("FAIL")
            && line.contains("emr-7.99.0 is not an EMR release offered in us-east-1"),
        "{line}"
    );
    assert!(
        fix.contains("fix: aether config set platform.emr.release_label emr-7."),
        "{fix}"
    );
    assert!(
        check(&text, "instance types").0.starts_with("SKIP"),
        "{text}"
    );

    // no credentials anywhere: FAIL saying how to give them; nothing else is asked
    let o = doctor(
        &home,
        ep,
        &[
            ("AWS_ACCESS_KEY_ID", ""),
            ("AWS_SECRET_ACCESS_KEY", ""),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("AWS_CONFIG_FILE", "/nonexistent/aws-config"),
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                "/nonexistent/aws-credentials",
            ),
        ],
        &[],
    );
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}{}", err(&o));
    let (line, fix) = check(&text, "credentials");
    assert!(line.starts_with("FAIL"), "{line}");
    assert!(fix.contains("aws configure"), "{fix}");
    assert!(check(&text, "service role").0.starts_with("SKIP"), "{text}");

    // no region in the settings nor the environment: FAIL naming the setting
    let bare = d.path().join("bare");
    let no_region = [
        ("AWS_REGION", ""),
        ("AWS_DEFAULT_REGION", ""),
        ("AWS_CONFIG_FILE", "/nonexistent/aws-config"),
    ];
    // ... and a prices file that cannot be used: FAIL naming the file, line and field
    std::fs::create_dir_all(&bare).unwrap();
    let prices = bare.join("prices.csv");
    std::fs::write(
        &prices,
        "region,instance,ec2_usd_per_hour,emr_usd_per_hour\nus-east-1,g5.xlarge,1,0.2\nus-east-1,g6.xlarge,free,0\n",
    )
    .unwrap();
    std::fs::write(
        bare.join("config.toml"),
        format!("[prices]\nfile = {:?}\n", prices.display().to_string()),
    )
    .unwrap();
    let o = doctor(&bare, ep, &no_region, &[]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}{}", err(&o));
    let (line, fix) = check(&text, "prices");
    assert!(
        line.starts_with("FAIL")
            && line.contains("prices.csv:3")
            && line.contains("ec2_usd_per_hour"),
        "{line}"
    );
    assert!(fix.contains("prices.file"), "{fix}");
    let (line, fix) = check(&text, "credentials");
    assert!(
        line.starts_with("FAIL") && line.contains("no AWS region"),
        "{line}"
    );
    assert!(
        fix.contains("aether config set platform.emr.region"),
        "{fix}"
    );
}
