//! `aether cluster create --platform emr-eks`: the Karpenter capacity of a shape qualify
//! recommended for a real log (the bundled sample), written as YAML files that fit Karpenter's
//! v1 CRDs, the pod templates put in S3 (a local moto server), and the refusals: no EKS cluster
//! set, kubectl missing for --apply (the files are still written), a lease that does not exist. (Runs themselves: `emr_eks_runs.rs`.)

mod common;

use std::path::Path;
use std::process::Command;

use common::{err, out};

fn sample() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/sample/local-1796009671201")
        .display()
        .to_string()
}

#[test]
fn capacity_manifests_for_a_qualified_shape() {
    let moto = common::start_moto();
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let path = std::env::var("PATH").unwrap();
    let aether_on = |args: &[&str], path: &str| {
        moto.aws_env(&mut Command::new(env!("CARGO_BIN_EXE_aether")))
            .args(args)
            .env("AETHER_HOME", &home)
            .env("PATH", path)
            .output()
            .unwrap()
    };
    let aether = |args: &[&str]| aether_on(args, &path);
    let o = aether(&["qualify", "--event_log", &sample()]);
    assert!(o.status.success(), "{}", err(&o));
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let (shape, instance, nodes): (i64, String, i64) = db
        .query_row(
            "SELECT qualification_id, json_extract(gpu_cluster_json, '$.shape.instance'),
                    json_extract(gpu_cluster_json, '$.shape.nodes') FROM qualifications LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let shape_s = shape.to_string();
    let dir = d.path().join("capacity");
    let create = |extra: &[&str]| {
        let mut args = vec![
            "cluster",
            "create",
            "--platform",
            "emr-eks",
            "--cluster_shape_id",
            &shape_s,
            "--output",
            dir.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        aether(&args)
    };
    // the EKS cluster must be named: its discovery tag finds the subnets
    let o = create(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("platform.emr_eks.eks_cluster_name"),
        "{}",
        err(&o)
    );
    for (k, v) in [
        ("platform.emr_eks.eks_cluster_name", "analytics"),
        ("platform.emr_eks.availability_zone", "us-east-1b"),
        ("platform.emr_eks.consolidate_after_s", "45"),
        ("platform.emr_eks.artifacts_path", "s3://art/eks"),
    ] {
        let o = aether(&["config", "set", k, v]);
        assert!(o.status.success(), "{k}: {}", err(&o));
    }
    let o = aether(&[
        "config",
        "set",
        "platform.emr_eks.eks_cluster_name",
        "two words",
    ]);
    assert_eq!(o.status.code(), Some(2), "a name with a space is refused");
    let o = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import boto3\nboto3.client('s3', endpoint_url='{}', region_name='us-east-1', \
             aws_access_key_id='testing', aws_secret_access_key='testing').create_bucket(Bucket='art')",
            moto.endpoint
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));

    let o = create(&[]);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(
        err(&o).contains("NVIDIA device plugin"),
        "what the cluster needs: {}",
        err(&o)
    );
    let pool_file = dir.join(format!("nodepool-aether-gpu-shape-{shape}.yaml"));
    let mut objects = Vec::new();
    for f in [
        "ec2nodeclass.yaml".to_string(),
        format!("nodepool-aether-gpu-shape-{shape}.yaml"),
        "nodepool-aether-driver.yaml".into(),
        "pod-template-driver.yaml".into(),
        "pod-template-executor.yaml".into(),
    ] {
        let text = std::fs::read_to_string(dir.join(&f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        let v: serde_json::Value = serde_yaml::from_str(&text).unwrap();
        objects.push((f, v));
    }
    // the files as written fit Karpenter's CRDs
    let (errors, _) = aether_platform::karpenter::check(&objects);
    assert_eq!(errors, Vec::<String>::new());
    let pool = &objects[1].1;
    assert_eq!(pool["spec"]["disruption"]["consolidateAfter"], "45s");
    let reqs = pool["spec"]["template"]["spec"]["requirements"].to_string();
    let family = instance.split('.').next().unwrap();
    assert!(reqs.contains(&format!("\"{family}\"")), "{reqs}");
    assert!(reqs.contains("us-east-1b"), "{reqs}");
    assert_eq!(
        pool["spec"]["limits"]["nvidia.com/gpu"],
        (nodes + 1).to_string(),
        "the shape's nodes and one more"
    );
    assert_eq!(objects[0].1["spec"]["role"], "KarpenterNodeRole-analytics");
    assert_eq!(
        objects[4].1["spec"]["nodeSelector"]["karpenter.sh/nodepool"],
        format!("aether-gpu-shape-{shape}")
    );
    assert!(pool_file.exists());
    assert!(
        std::fs::read_to_string(dir.join("README.txt"))
            .unwrap()
            .contains("kubectl apply")
    );
    // the pod templates are in S3, where the runs' spark-defaults will name them
    let listed = out(&o);
    for f in ["pod-template-driver.yaml", "pod-template-executor.yaml"] {
        assert!(
            listed.contains(&format!("s3://art/eks/pod-templates/shape-{shape}/{f}")),
            "{listed}"
        );
    }
    let o2 = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import boto3\nprint(boto3.client('s3', endpoint_url='{}', region_name='us-east-1', \
             aws_access_key_id='testing', aws_secret_access_key='testing').get_object(Bucket='art', \
             Key='eks/pod-templates/shape-{shape}/pod-template-driver.yaml')['Body'].read().decode())",
            moto.endpoint
        ))
        .output()
        .unwrap();
    assert!(
        out(&o2).contains("karpenter.sh/do-not-disrupt"),
        "{}",
        err(&o2)
    );

    // --apply without kubectl: told, the files are still there
    std::fs::remove_dir_all(&dir).unwrap();
    let o = aether_on(
        &[
            "cluster",
            "create",
            "--platform",
            "emr-eks",
            "--cluster_shape_id",
            &shape_s,
            "--output",
            dir.to_str().unwrap(),
            "--apply",
        ],
        "/nonexistent",
    );
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(e.contains("--apply: kubectl could not be run"), "{e}");
    assert!(pool_file.exists());
    // a lease aether never made: said
    let o = aether(&[
        "cluster",
        "describe",
        "--platform",
        "emr-eks",
        "--cluster_id",
        "eks-1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("unknown cluster eks-1"), "{}", err(&o));
    let o = aether(&[
        "cluster",
        "create",
        "--platform",
        "emr-eks",
        "--cluster_shape_id",
        "999",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("unknown cluster shape id 999"),
        "{}",
        err(&o)
    );
}
