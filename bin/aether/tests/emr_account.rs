//! Ready for a real EMR account, on the project's EMR emulator (moto's EMR, EC2, IAM and S3 over
//! the wire; never real AWS), every assert from what the emulator received or holds:
//!
//! - `doctor` checks the account's own network and roles by name: a role, subnet, key pair that
//!   does not exist, a VPC without DNS hostnames, a security group of another VPC;
//! - `cluster create` sends the subnet, security groups, key pair, roles, security
//!   configuration and tags of the settings (and of a `--config_file` over them: several subnets
//!   make instance fleets), always with the cgroup bootstrap action and AWS's GPU defaults;
//! - an instance type EMR does not support for the release is refused before RunJobFlow, with
//!   the supported alternatives, and nothing is recorded;
//! - every step carries its GPU amount, task share and CUDA library path; a step whose own value
//!   no GPU run can take is refused before AddJobFlowSteps.

mod common;

use common::{Emulator, doctor_check as check, err, out};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sample/local-1796009671201")
}

fn run(emu: &Emulator, home: &Path, args: &[&str]) -> Output {
    emu.aether(home).args(args).output().unwrap()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    out(&o)
}

/// The requests of `op` the emulator received.
fn requests(emu: &Emulator, op: &str) -> Vec<Value> {
    emu.state()["requests"][op]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// spark-defaults of a RunJobFlow request.
fn spark_defaults(req: &Value) -> Value {
    req["Configurations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["Classification"] == "spark-defaults")
        .unwrap()["Properties"]
        .clone()
}

#[test]
fn a_real_account_s_network_roles_instance_types_and_gpu_steps() {
    let emu = common::start_emulator(1.0);
    // the account: buckets, a VPC of its own (no DNS hostnames yet, as AWS makes a new VPC) with
    // two subnets and two security groups, and a security group of another VPC
    let ids = emu.boto(
        "for b in ('art', 'logs'): s3.create_bucket(Bucket=b)\n\
         ec2 = boto3.client('ec2', **kw)\n\
         v = ec2.create_vpc(CidrBlock='10.20.0.0/16')['Vpc']['VpcId']\n\
         ec2.modify_vpc_attribute(VpcId=v, EnableDnsHostnames={'Value': False})\n\
         a = ec2.create_subnet(VpcId=v, CidrBlock='10.20.1.0/24', AvailabilityZone='us-east-1a')['Subnet']['SubnetId']\n\
         b = ec2.create_subnet(VpcId=v, CidrBlock='10.20.2.0/24', AvailabilityZone='us-east-1b')['Subnet']['SubnetId']\n\
         p = ec2.create_security_group(GroupName='emr-primary', Description='p', VpcId=v)['GroupId']\n\
         c = ec2.create_security_group(GroupName='emr-core', Description='c', VpcId=v)['GroupId']\n\
         sa = ec2.create_security_group(GroupName='emr-service', Description='s', VpcId=v)['GroupId']\n\
         w = ec2.create_vpc(CidrBlock='10.30.0.0/16')['Vpc']['VpcId']\n\
         x = ec2.create_security_group(GroupName='elsewhere', Description='x', VpcId=w)['GroupId']\n\
         print(v, a, b, p, c, sa, x)",
    );
    let ids: Vec<&str> = ids.split(' ').collect();
    let [
        vpc,
        subnet_a,
        subnet_b,
        sg_primary,
        sg_core,
        sg_service,
        sg_other,
    ] = ids[..]
    else {
        panic!("{ids:?}")
    };
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let set = |k: &str, v: &str| {
        ok(run(&emu, &home, &["config", "set", k, v]));
    };
    for (k, v) in [
        ("core.selected_platform", "emr"),
        ("platform.emr.region", "us-east-1"),
        ("platform.emr.spark_event_log_dir", "s3://logs/spark"),
        ("platform.emr.cluster.artifacts_path", "s3://art/aether"),
        ("platform.emr.cluster.log_path", "s3://logs/emr"),
        ("platform.emr.cluster.log_wait_s", "5"),
        ("platform.emr.cluster.subnet_ids", subnet_a),
        ("platform.emr.cluster.primary_security_group", sg_primary),
        ("platform.emr.cluster.core_security_group", sg_core),
        ("platform.emr.cluster.additional_security_groups", sg_other),
        ("platform.emr.cluster.key_name", "data-platform"),
        (
            "platform.emr.cluster.service_role",
            "DataPlatformEmrService",
        ),
        (
            "platform.emr.cluster.instance_profile",
            "DataPlatformEmrNodes",
        ),
        (
            "platform.emr.cluster.tags",
            "team=data-platform,cost-center=4711",
        ),
    ] {
        set(k, v);
    }
    // a setting of the wrong form is refused naming the key
    let o = run(
        &emu,
        &home,
        &["config", "set", "platform.emr.cluster.subnet_ids", "vpc-1"],
    );
    assert!(
        !o.status.success() && err(&o).contains("platform.emr.cluster.subnet_ids"),
        "{}",
        err(&o)
    );

    // doctor: the roles, key pair, DNS hostnames and the other VPC's group, each by name
    let o = run(&emu, &home, &["doctor"]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(1), "{text}{}", err(&o));
    let (line, fix) = check(&text, "service role");
    assert!(
        line.starts_with("FAIL")
            && line.contains("IAM role DataPlatformEmrService")
            && line.contains("does not exist"),
        "{line}"
    );
    assert!(
        fix.contains("aether config set platform.emr.cluster.service_role"),
        "{fix}"
    );
    let (line, _) = check(&text, "instance profile");
    assert!(
        line.starts_with("FAIL") && line.contains("DataPlatformEmrNodes"),
        "{line}"
    );
    let (line, fix) = check(&text, "network");
    assert!(
        line.starts_with("FAIL") && line.contains(vpc) && line.contains("enableDnsHostnames off"),
        "{line}"
    );
    assert!(
        fix.contains("modify-vpc-attribute") && fix.contains(vpc),
        "{fix}"
    );
    let (line, _) = check(&text, "security groups");
    assert!(
        line.starts_with("FAIL") && line.contains(sg_other) && line.contains("not the nodes' VPC"),
        "{line}"
    );
    let (line, fix) = check(&text, "key pair");
    assert!(
        line.starts_with("FAIL") && line.contains("key pair data-platform"),
        "{line}"
    );
    assert!(
        fix.contains("create-key-pair --key-name data-platform"),
        "{fix}"
    );
    // a subnet that does not exist is named
    set("platform.emr.cluster.subnet_ids", "subnet-0000dead");
    let text = out(&run(&emu, &home, &["doctor"]));
    let (line, _) = check(&text, "network");
    assert!(
        line.starts_with("FAIL") && line.contains("subnet subnet-0000dead"),
        "{line}"
    );
    assert!(check(&text, "release label").0.starts_with("OK"), "{text}");

    // the account fixed as the doctor said: every check of the network and roles passes
    emu.boto(&format!(
        "ec2 = boto3.client('ec2', **kw)\niam = boto3.client('iam', **kw)\n\
         ec2.modify_vpc_attribute(VpcId='{vpc}', EnableDnsHostnames={{'Value': True}})\n\
         ec2.create_key_pair(KeyName='data-platform')\n\
         def trust(s):\n\
         \x20   return json.dumps({{'Version': '2012-10-17', 'Statement': [{{'Effect': 'Allow', 'Principal': {{'Service': s}}, 'Action': 'sts:AssumeRole'}}]}})\n\
         iam.create_role(RoleName='DataPlatformEmrService', AssumeRolePolicyDocument=trust('elasticmapreduce.amazonaws.com'))\n\
         iam.create_role(RoleName='DataPlatformEmrNodes', AssumeRolePolicyDocument=trust('ec2.amazonaws.com'))\n\
         iam.create_instance_profile(InstanceProfileName='DataPlatformEmrNodes')\n\
         iam.add_role_to_instance_profile(InstanceProfileName='DataPlatformEmrNodes', RoleName='DataPlatformEmrNodes')"
    ));
    set("platform.emr.cluster.subnet_ids", subnet_a);
    ok(run(
        &emu,
        &home,
        &[
            "config",
            "unset",
            "platform.emr.cluster.additional_security_groups",
        ],
    ));
    // a private subnet (moto's, as a new subnet is) with custom managed groups: EMR needs a
    // service access group too
    let text = out(&run(&emu, &home, &["doctor"]));
    let (line, _) = check(&text, "security groups");
    assert!(
        line.starts_with("FAIL") && line.contains("service access security group"),
        "{line}"
    );
    set(
        "platform.emr.cluster.service_access_security_group",
        sg_service,
    );
    let text = out(&run(&emu, &home, &["doctor"]));
    for name in [
        "service role",
        "instance profile",
        "network",
        "security groups",
        "key pair",
    ] {
        assert!(check(&text, name).0.starts_with("OK"), "{name}:\n{text}");
    }
    assert!(check(&text, "network").0.contains(subnet_a), "{text}");

    // the cluster of qualify's shape, in the account's network with its roles
    let (_, shape, config) = emu.qualify_sample(&home);
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let asked = |emu: &Emulator| emu.state()["calls"]["ListSupportedInstanceTypes"].as_i64();
    let before = asked(&emu).unwrap_or(0);
    let created = ok(run(
        &emu,
        &home,
        &["cluster", "create", "--cluster_shape_id", &shape],
    ));
    // the types are asked once per create (the check before the record, and the create's own)
    assert_eq!(asked(&emu), Some(before + 1));
    let cluster = created.split('\t').next().unwrap().to_string();
    let reqs = requests(&emu, "RunJobFlow");
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    let r = &reqs[0];
    let i = &r["Instances"];
    assert_eq!(i["Ec2SubnetId"], subnet_a, "{r}");
    assert_eq!(i["EmrManagedMasterSecurityGroup"], sg_primary, "{r}");
    assert_eq!(i["EmrManagedSlaveSecurityGroup"], sg_core, "{r}");
    assert_eq!(i["ServiceAccessSecurityGroup"], sg_service, "{r}");
    assert_eq!(i["Ec2KeyName"], "data-platform", "{r}");
    assert!(i.get("AdditionalMasterSecurityGroups").is_none(), "{r}");
    assert_eq!(r["ServiceRole"], "DataPlatformEmrService", "{r}");
    assert_eq!(r["JobFlowRole"], "DataPlatformEmrNodes", "{r}");
    let tags: std::collections::BTreeMap<String, String> = r["Tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["Key"].as_str().unwrap().to_string(),
                t["Value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(tags["team"], "data-platform");
    assert_eq!(tags["cost-center"], "4711");
    assert!(tags.contains_key("aether:request-token"), "{tags:?}");
    assert_eq!(
        r["BootstrapActions"][0]["ScriptBootstrapAction"]["Path"],
        "s3://art/aether/cgroup-bootstrap-action.sh"
    );
    // AWS's GPU defaults on the cluster (docs/emr-settings.md)
    let d = spark_defaults(r);
    assert_eq!(d["spark.executor.resource.gpu.amount"], "1", "{d}");
    assert_eq!(d["spark.task.resource.gpu.amount"], "0.001", "{d}");
    assert!(
        d["spark.executor.extraLibraryPath"]
            .as_str()
            .unwrap()
            .starts_with("/usr/local/cuda/targets/x86_64-linux/lib:"),
        "{d}"
    );
    // what EMR holds of it
    let attrs = emu.boto(&format!(
        "print(json.dumps(emr.describe_cluster(ClusterId='{cluster}')['Cluster']['Ec2InstanceAttributes']))"
    ));
    let attrs: Value = serde_json::from_str(&attrs).unwrap();
    assert_eq!(attrs["Ec2SubnetId"], subnet_a, "{attrs}");
    assert_eq!(
        attrs["IamInstanceProfile"], "DataPlatformEmrNodes",
        "{attrs}"
    );

    // a step whose job and config say nothing of GPUs gets them: the config as the AutoTuner
    // leaves it for a CPU log without executors (no GPU amount, no plugin)
    db.execute(
        "UPDATE configs SET properties_json = json_remove(properties_json, \
         '$.\"spark.executor.resource.gpu.amount\"', '$.\"spark.task.resource.gpu.amount\"', \
         '$.\"spark.plugins\"') WHERE config_id = ?1",
        [&config],
    )
    .unwrap();
    let cfg: String = db
        .query_row(
            "SELECT properties_json FROM configs WHERE config_id = ?1",
            [&config],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!cfg.contains("spark.executor.resource.gpu.amount"), "{cfg}");
    emu.control(
        "steps",
        Some(json!({"mode": "replay", "event_log": sample(), "sleep_s": 1})),
    );
    let submit = |job: &str| {
        run(
            &emu,
            &home,
            &[
                "submit",
                "--config_id",
                &config,
                "--cluster_id",
                &cluster,
                "--job",
                job,
                "--allow_output_overwrite",
            ],
        )
    };
    ok(submit(
        "spark-submit --deploy-mode cluster s3://art/jobs/etl.py s3://art/in/",
    ));
    let steps = requests(&emu, "AddJobFlowSteps");
    assert_eq!(steps.len(), 1, "{steps:?}");
    let args: Vec<String> = steps[0]["Steps"][0]["HadoopJarStep"]["Args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    for want in [
        "spark.executor.resource.gpu.amount=1",
        "spark.task.resource.gpu.amount=0.001",
        "spark.plugins=com.nvidia.spark.SQLPlugin",
    ] {
        assert!(args.iter().any(|a| a == want), "{want}: {args:?}");
    }
    assert!(
        args.iter().any(|a| a.starts_with(
            "spark.executor.extraLibraryPath=/usr/local/cuda/targets/x86_64-linux/lib:"
        )),
        "{args:?}"
    );
    // a step that takes the GPU away is refused before AddJobFlowSteps, naming the property
    let o = submit(
        "spark-submit --conf spark.executor.resource.gpu.amount=0 s3://art/jobs/etl.py s3://art/in/",
    );
    assert!(!o.status.success(), "{}", out(&o));
    assert!(
        err(&o).contains("spark.executor.resource.gpu.amount=0"),
        "{}",
        err(&o)
    );
    assert_eq!(requests(&emu, "AddJobFlowSteps").len(), 1);

    // an instance type EMR does not support for the release: refused before RunJobFlow, with
    // what is supported; nothing on record
    let file = dir.path().join("cluster.yaml");
    std::fs::write(
        &file,
        "instanceGroups:\n\
         \x20 - {name: Primary, instanceType: m5d.xlarge, instanceCount: 1}\n\
         \x20 - {name: Core GPU, instanceType: g4ad.xlarge, instanceCount: 2}\n",
    )
    .unwrap();
    let clusters_before: i64 = db
        .query_row("SELECT count(*) FROM clusters", [], |r| r.get(0))
        .unwrap();
    let o = run(
        &emu,
        &home,
        &["cluster", "create", "--config_file", file.to_str().unwrap()],
    );
    assert!(!o.status.success(), "{}", out(&o));
    let e = err(&o);
    assert!(
        e.contains("g4ad.xlarge (Core GPU) not supported by EMR emr-7.9.0 in us-east-1")
            && e.contains("NVIDIA GPU families supported: ")
            && e.contains("g4dn"),
        "{e}"
    );
    assert_eq!(requests(&emu, "RunJobFlow").len(), 1);
    let clusters_after: i64 = db
        .query_row("SELECT count(*) FROM clusters", [], |r| r.get(0))
        .unwrap();
    assert_eq!(clusters_before, clusters_after);

    // a --config_file over the settings: two subnets (EMR picks one: instance fleets), its own
    // service role and security configuration
    emu.boto(
        "emr.create_security_configuration(Name='at-rest', SecurityConfiguration=json.dumps({'EncryptionConfiguration': {'EnableInTransitEncryption': False, 'EnableAtRestEncryption': False}}))",
    );
    std::fs::write(
        &file,
        format!(
            "ec2SubnetIds: [{subnet_a}, {subnet_b}]\nserviceRole: EMR_DefaultRole_V2\n\
             securityConfiguration: at-rest\ntags: {{owner: ana}}\n\
             instanceGroups:\n\
             \x20 - {{name: Primary, instanceType: m5d.xlarge, instanceCount: 1}}\n\
             \x20 - {{name: Core GPU, instanceType: g5.2xlarge, instanceCount: 2}}\n"
        ),
    )
    .unwrap();
    ok(run(
        &emu,
        &home,
        &["cluster", "create", "--config_file", file.to_str().unwrap()],
    ));
    let reqs = requests(&emu, "RunJobFlow");
    assert_eq!(reqs.len(), 2);
    let r = &reqs[1];
    assert_eq!(
        r["Instances"]["Ec2SubnetIds"],
        json!([subnet_a, subnet_b]),
        "{r}"
    );
    assert!(r["Instances"].get("Ec2SubnetId").is_none(), "{r}");
    assert_eq!(
        r["Instances"]["InstanceFleets"].as_array().map(Vec::len),
        Some(2),
        "{r}"
    );
    assert_eq!(r["ServiceRole"], "EMR_DefaultRole_V2");
    assert_eq!(r["JobFlowRole"], "DataPlatformEmrNodes");
    assert_eq!(r["SecurityConfiguration"], "at-rest");
    assert!(
        r["Tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["Key"] == "owner" && t["Value"] == "ana")
            && r["Tags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["Key"] == "team"),
        "{r}"
    );
    // the doctor checks the security configuration by name
    set(
        "platform.emr.cluster.security_configuration",
        "missing-conf",
    );
    let text = out(&run(&emu, &home, &["doctor"]));
    let (line, _) = check(&text, "security config");
    assert!(
        line.starts_with("FAIL")
            && line.contains("security configuration missing-conf")
            && line.contains("does not exist"),
        "{line}"
    );
    set("platform.emr.cluster.security_configuration", "at-rest");
    let text = out(&run(&emu, &home, &["doctor"]));
    assert!(
        check(&text, "security config").0.starts_with("OK"),
        "{text}"
    );
}
