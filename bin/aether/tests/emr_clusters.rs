//! `aether cluster … --platform emr` over the wire (aws-sdk-emr) against a local moto server
//! (never real AWS): a RAPIDS GPU cluster from qualify's shape, a retried create with the same
//! request token makes no second cluster, the bootstrap action is put under the artifacts
//! path, terminate ends it, unknown ids and missing settings are clear errors.

mod common;

use common::{err, out};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn aether(home: &Path, endpoint: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aether"))
        .args(args)
        .env("AETHER_HOME", home)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_PROFILE")
        .output()
        .expect("run aether")
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

#[test]
fn emr_clusters_from_the_qualified_shape_through_the_sdk() {
    let moto = common::start_moto();
    let ep = &moto.endpoint;
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let boto = format!(
        "import boto3, json\nkw = dict(endpoint_url='{ep}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\n"
    );
    python(&format!(
        "{boto}boto3.client('s3', **kw).create_bucket(Bucket='art')"
    ));
    let log =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sample/local-1796009671201");
    let o = aether(
        &home,
        ep,
        &["qualify", "--event_log", log.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", err(&o));
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let (shape, job, instance): (i64, i64, String) = db
        .query_row(
            "SELECT qualification_id, job_id, json_extract(gpu_cluster_json, '$.shape.instance') FROM qualifications",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let shape = shape.to_string();

    // the artifacts path is needed (the bootstrap action goes there)
    let create = [
        "cluster",
        "create",
        "--platform",
        "emr",
        "--cluster_shape_id",
        &shape,
        "--request_token",
        "tok-1",
    ];
    let o = aether(&home, ep, &create);
    assert!(
        !o.status.success() && err(&o).contains("platform.emr.cluster.artifacts_path"),
        "{}",
        err(&o)
    );
    for (k, v) in [
        ("platform.emr.cluster.artifacts_path", "s3://art/aether"),
        ("platform.emr.cluster.log_path", "s3://art/logs"),
        ("platform.emr.spark_event_log_dir", "s3://art/spark-logs"),
    ] {
        assert!(aether(&home, ep, &["config", "set", k, v]).status.success());
    }
    let o = aether(&home, ep, &create);
    assert!(o.status.success(), "{}", err(&o));
    let cluster = out(&o).split('\t').next().unwrap().to_string();
    assert!(cluster.starts_with("j-"), "{}", out(&o));
    // a retried create (same token) finds the first cluster
    let o = aether(&home, ep, &create);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o).split('\t').next().unwrap(), cluster);

    // what EMR was asked for, as EMR tells it
    let got = python(&format!(
        "{boto}emr = boto3.client('emr', **kw)\n\
         cs = emr.list_clusters()['Clusters']\n\
         c = emr.describe_cluster(ClusterId='{cluster}')['Cluster']\n\
         gs = emr.list_instance_groups(ClusterId='{cluster}')['InstanceGroups']\n\
         ba = emr.list_bootstrap_actions(ClusterId='{cluster}')['BootstrapActions']\n\
         s3 = boto3.client('s3', **kw).get_object(Bucket='art', Key='aether/cgroup-bootstrap-action.sh')['Body'].read().decode()\n\
         print(json.dumps(dict(n=len(cs), release=c['ReleaseLabel'], apps=sorted(a['Name'] for a in c['Applications']),\n\
           classes=sorted(x['Classification'] for x in c['Configurations']), log=c.get('LogUri'),\n\
           tags={{t['Key']: t['Value'] for t in c['Tags']}},\n\
           groups=sorted((g['InstanceGroupType'], g['InstanceType'], g['RequestedInstanceCount'], g['Market']) for g in gs),\n\
           bootstrap=[b['ScriptPath'] for b in ba], script=s3)))"
    ));
    let v: serde_json::Value = serde_json::from_str(&got).unwrap();
    assert_eq!(v["n"], 1, "one cluster for two creates: {v}");
    assert!(v["release"].as_str().unwrap().starts_with("emr-7."), "{v}");
    assert_eq!(v["apps"], serde_json::json!(["Hadoop", "Spark"]));
    assert_eq!(
        v["classes"],
        serde_json::json!([
            "capacity-scheduler",
            "container-executor",
            "spark",
            "spark-defaults",
            "yarn-site"
        ])
    );
    assert_eq!(v["tags"]["aether:job-id"], job.to_string());
    assert_eq!(v["tags"]["aether:request-token"], "tok-1");
    assert!(
        v["log"].as_str().unwrap().starts_with("s3://art/logs"),
        "{v}"
    );
    let groups = v["groups"].as_array().unwrap();
    assert!(
        groups
            .iter()
            .any(|g| g[0] == "CORE" && g[1] == instance.as_str() && g[3] == "ON_DEMAND"),
        "{v}"
    );
    assert!(groups.iter().any(|g| g[0] == "MASTER"), "{v}");
    assert_eq!(
        v["bootstrap"],
        serde_json::json!(["s3://art/aether/cgroup-bootstrap-action.sh"])
    );
    assert!(
        v["script"]
            .as_str()
            .unwrap()
            .contains("mount -t cgroup -o devices")
    );

    // a step that never finishes (moto's never do): the deadline cancels it; moto answers
    // CancelSteps with a 500, which the user is told and the run's record keeps
    let job = "spark-submit --deploy-mode cluster s3://art/job.py s3://art/in 2026-12-01";
    let o = aether(
        &home,
        ep,
        &[
            "submit",
            "--platform",
            "emr",
            "--config_id",
            "1",
            "--cluster_id",
            &cluster,
            "--job",
            job,
            "--timeout_s",
            "3",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}\n{}", out(&o), err(&o));
    assert!(
        err(&o).contains("cancelling step") && err(&o).contains("CancelSteps"),
        "{}",
        err(&o)
    );
    let (step, status, why): (String, String, String) = db
        .query_row(
            "SELECT step_id, status, failure_reason FROM runs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(status, "TIMED_OUT");
    assert!(why.contains("cancelling the step failed"), "{why}");
    let step_cfg = python(&format!(
        "{boto}s = boto3.client('emr', **kw).describe_step(ClusterId='{cluster}', StepId='{step}')['Step']\n\
         print(json.dumps(dict(jar=s['Config']['Jar'], args=s['Config']['Args'], on_failure=s['ActionOnFailure'])))"
    ));
    let v: serde_json::Value = serde_json::from_str(&step_cfg).unwrap();
    assert_eq!(v["jar"], "command-runner.jar");
    assert_eq!(v["on_failure"], "CONTINUE");
    let args: Vec<&str> = v["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "spark-submit");
    assert_eq!(
        &args[args.len() - 3..],
        ["s3://art/job.py", "s3://art/in", "2026-12-01"]
    );
    // the AutoTuner's config goes with it (a GPU cluster keeps the plugin), placeholders do not
    assert!(
        args.contains(&"spark.plugins=com.nvidia.spark.SQLPlugin"),
        "{args:?}"
    );
    assert!(
        args.contains(&"spark.submit.deployMode=cluster"),
        "{args:?}"
    );
    assert!(!args.iter().any(|a| a.contains("FILL_IN")), "{args:?}");

    let o = aether(&home, ep, &["cluster", "list", "--platform", "emr"]);
    assert!(
        // RUNNING: the step it was given is still there (moto's steps never end)
        out(&o).contains(&cluster) && out(&o).contains("RUNNING"),
        "{}",
        out(&o)
    );
    let o = aether(
        &home,
        ep,
        &[
            "cluster",
            "terminate",
            "--platform",
            "emr",
            "--cluster_id",
            &cluster,
        ],
    );
    assert!(
        o.status.success() && out(&o).contains("TERMINATED"),
        "{}\n{}",
        out(&o),
        err(&o)
    );
    assert_eq!(common::cluster_state(&db, &cluster), "TERMINATED");
    let o = aether(
        &home,
        ep,
        &[
            "cluster",
            "describe",
            "--platform",
            "emr",
            "--cluster_id",
            "j-NOPE",
        ],
    );
    assert!(
        !o.status.success() && err(&o).contains("unknown cluster j-NOPE"),
        "{}",
        err(&o)
    );
}
