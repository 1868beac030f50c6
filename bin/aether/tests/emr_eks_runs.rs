//! GPU test runs on EMR on EKS end to end against the project's emulator (moto's emr-containers
//! and S3 over the wire, job runs executed by the emulator's ticker with the local Spark; never
//! real AWS): a CPU job that ran as an EMR step is qualified from its step id, then re-run as an
//! EMR on EKS job run on a capacity lease of qualify's shape — the Karpenter capacity written,
//! the pod templates in S3, StartJobRun with the RAPIDS release label and the run's confs, the
//! event log `spark-<jobRunId>` fetched, the run recorded with its EKS cost and idle capacity —
//! then a failed run, a StartJobRun whose answer is lost (one run, by its client token), a run
//! cancelled by Ctrl-C, and the lease ended with nothing left running.

mod common;

use common::{err, out};

use common::EKS_ROLE as ROLE;

fn job_runs(emu: &common::Emulator) -> serde_json::Map<String, serde_json::Value> {
    emu.state()["job_runs"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

fn run_row(db: &rusqlite::Connection, step: &str) -> (String, Option<String>, String) {
    db.query_row(
        "SELECT status, failure_reason, details_json FROM runs WHERE step_id = ?1",
        [step],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .unwrap()
}

#[test]
fn gpu_test_runs_on_emr_on_eks() {
    let emu = common::start_emulator(1.0);
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // production: data and code in S3, a CPU EMR cluster whose event logs go to s3://logs/cpu;
    // the platform team's EMR on EKS virtual cluster on namespace spark-gpu
    let (cpu_cluster, cpu_step) = emu.production_step(d.path(), "eks-etl", "s3://logs/cpu/");
    let (cpu_cluster, cpu_step) = (cpu_cluster.as_str(), cpu_step.as_str());
    let vc = emu.boto(
        "print(eks.create_virtual_cluster(name='gpu-tests', containerProvider={'id': 'analytics', 'type': 'EKS',\n\
           'info': {'eksInfo': {'namespace': 'spark-gpu'}}})['id'])",
    );
    let vc = vc.as_str();
    let prod = || emu.production_outputs();
    let prod_before = prod();

    // the EKS user's settings, through `config set` (each key checked)
    let prices = d.path().join("spot.csv");
    let set = |k: &str, v: &str| {
        let o = common::aether(&home, &["config", "set", k, v]);
        assert!(o.status.success(), "config set {k} {v}: {}", err(&o));
    };
    common::set_eks_settings(&home, vc);
    set("platform.emr.region", "us-east-1");
    set("platform.emr_eks.consolidate_after_s", "30");

    // 1. qualify the CPU step: its job, a GPU shape, an AutoTuner config; its idle capacity
    let o = emu
        .aether(&home)
        .args([
            "qualify",
            "--platform_job_id",
            cpu_step,
            "--cluster_id",
            cpu_cluster,
        ])
        // a tiny job: let qualify recommend it
        .args(common::RECOMMEND_TINY)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let db = rusqlite::Connection::open(home.join("history.db")).unwrap();
    let (job_id, shape, config, instance): (i64, i64, i64, String) = db
        .query_row(
            "SELECT q.job_id, q.qualification_id, c.config_id,
                    json_extract(q.gpu_cluster_json, '$.shape.instance')
             FROM qualifications q JOIN configs c USING (job_id) WHERE c.source = 'qualify'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    let cpu_idle: String = db
        .query_row(
            "SELECT json_extract(details_json, '$.idle') FROM runs WHERE kind = 'cpu-original'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let cpu_idle: serde_json::Value = serde_json::from_str(&cpu_idle).unwrap();
    assert!(
        cpu_idle["allocated_ms"].as_i64().unwrap() >= cpu_idle["idle_ms"].as_i64().unwrap(),
        "{cpu_idle}"
    );
    // a spot price for the shape's instance (the catalog has on-demand prices only)
    std::fs::write(
        &prices,
        format!(
            "region,instance,ec2_usd_per_hour,emr_usd_per_hour,spot_usd_per_hour\nus-east-1,{instance},1.0,0.25,0.31\n"
        ),
    )
    .unwrap();
    set(
        "platform.emr_eks.pricing_file",
        &prices.display().to_string(),
    );

    // 2. submit on a lease of the shape, made for the run and ended after it
    let o = emu
        .aether(&home)
        .args([
            "submit",
            "--platform",
            "emr-eks",
            "--config_id",
            &config.to_string(),
            "--cluster_shape_id",
            &shape.to_string(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let (status, run_id, lease, event_log, duration_ms, cost, details, backend): (
        String,
        String,
        String,
        String,
        i64,
        f64,
        String,
        String,
    ) = db
        .query_row(
            "SELECT status, step_id, cluster_id, event_log, duration_ms, cost_usd, details_json, backend
             FROM runs WHERE kind = 'gpu-test'",
            [],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                ))
            },
        )
        .unwrap();
    assert_eq!(
        (status.as_str(), backend.as_str()),
        ("COMPLETED", "emr-eks")
    );
    assert_eq!(event_log, format!("s3://logs/eks-spark/spark-{run_id}"));
    // what aether asked EMR on EKS for
    let runs = job_runs(&emu);
    let r = &runs[&run_id];
    assert_eq!(r["release_label"], "emr-7.9.0-spark-rapids-latest");
    assert_eq!(r["role"], ROLE);
    assert_eq!(r["virtual_cluster"], vc);
    assert_eq!(r["tags"]["aether:lease"], lease.as_str());
    assert_eq!(r["tags"]["aether:job-id"], job_id.to_string());
    let drv = &r["driver"]["sparkSubmitJobDriver"];
    assert_eq!(drv["entryPoint"], "s3://code/jobs/etl.py");
    let sandbox_arg = drv["entryPointArguments"][1].as_str().unwrap().to_string();
    assert_eq!(drv["entryPointArguments"][0], "s3://data/in/");
    assert!(
        sandbox_arg.starts_with(&format!("s3://art/eks/sandbox/job{job_id}-")),
        "{sandbox_arg}"
    );
    let params = drv["sparkSubmitParameters"].as_str().unwrap();
    for want in [
        "spark.plugins=com.nvidia.spark.SQLPlugin",
        "spark.executor.resource.gpu.vendor=nvidia.com",
        "spark.executor.resource.gpu.amount=1",
    ] {
        assert!(params.contains(want), "{want} in {params}");
    }
    assert!(
        !params.contains("--deploy-mode") && !params.contains("spark.eventLog"),
        "{params}"
    );
    let app_conf = r["overrides"]["applicationConfiguration"]
        .as_array()
        .unwrap();
    let class = |n: &str| {
        app_conf
            .iter()
            .find(|c| c["classification"] == n)
            .unwrap_or_else(|| panic!("{n} in {app_conf:?}"))["properties"]
            .clone()
    };
    let templates = format!("s3://art/eks/pod-templates/shape-{shape}");
    assert_eq!(
        class("spark-defaults")["spark.kubernetes.driver.podTemplateFile"],
        format!("{templates}/pod-template-driver.yaml")
    );
    assert_eq!(
        class("spark-defaults")["spark.kubernetes.executor.podTemplateFile"],
        format!("{templates}/pod-template-executor.yaml")
    );
    assert_eq!(
        class("spark-defaults")["spark.eventLog.dir"],
        "s3a://logs/eks-spark"
    );
    assert_eq!(
        class("emr-job-submitter")["jobsubmitter.node.selector.karpenter.sh/capacity-type"],
        "on-demand"
    );
    assert_eq!(
        r["overrides"]["monitoringConfiguration"]["s3MonitoringConfiguration"]["logUri"],
        "s3://logs/eks"
    );
    // the pod templates in S3: Pods on the shape's GPU NodePool and the on-demand driver pool
    let pods = emu.boto(&format!(
        "import yaml\nfor r in ('driver', 'executor'):\n\
         \x20   print(json.dumps(yaml.safe_load(s3.get_object(Bucket='art', Key='eks/pod-templates/shape-{shape}/pod-template-' + r + '.yaml')['Body'].read())))"
    ));
    let pods: Vec<serde_json::Value> = pods
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        pods[0]["spec"]["nodeSelector"]["karpenter.sh/capacity-type"],
        "on-demand"
    );
    assert_eq!(
        pods[0]["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"],
        "true"
    );
    assert_eq!(
        pods[1]["spec"]["nodeSelector"]["karpenter.sh/nodepool"],
        format!("aether-gpu-shape-{shape}")
    );
    assert_eq!(pods[1]["spec"]["tolerations"][0]["key"], "nvidia.com/gpu");
    // the capacity manifests, written for the platform team
    let dir = home.join(format!("emr-eks/shape-{shape}"));
    for f in [
        "ec2nodeclass.yaml".to_string(),
        format!("nodepool-aether-gpu-shape-{shape}.yaml"),
        "nodepool-aether-driver.yaml".to_string(),
    ] {
        assert!(dir.join(&f).is_file(), "{f} in {}", dir.display());
    }
    // the duration is the run's application's, from its event log
    let o = emu
        .aether(&home)
        .args([
            "sql",
            "--event_log",
            &event_log,
            "--format",
            "json",
            "SELECT app_id, duration_ms FROM applications",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let rows: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(rows[0]["app_id"], format!("spark-{run_id}"));
    assert_eq!(rows[0]["duration_ms"].as_i64(), Some(duration_ms));
    // the EKS cost: the executor (in the emulator's local Spark, the driver runs the tasks) at
    // the spot price, the driver on m5d.xlarge on-demand (EC2 $0.226/h), a 30 s tail of each
    let details: serde_json::Value = serde_json::from_str(&details).unwrap();
    let c = &details["cost"];
    assert_eq!(c["executor_price"], "spot");
    assert_eq!(c["executor_usd_per_hour"].as_f64(), Some(0.31));
    assert_eq!(c["driver_usd_per_hour"].as_f64(), Some(0.226));
    let exec_ms = details["idle"]["allocated_ms"].as_i64().unwrap();
    let expected = exec_ms as f64 / 3.6e6 * 0.31
        + duration_ms as f64 / 3.6e6 * 0.226
        + 30.0 / 3600.0 * (0.31 + 0.226);
    assert!((cost - expected).abs() < 1e-9, "cost {cost} != {expected}");
    assert!((c["total_usd"].as_f64().unwrap() - cost).abs() < 1e-12);
    // the lease made for the run ended with it; production untouched, the output in the sandbox
    assert_eq!(common::cluster_state(&db, &lease), "TERMINATED");
    assert_eq!(prod(), prod_before, "production outputs untouched");
    let sandbox = emu.boto(&format!(
        "b, _, k = '{sandbox_arg}'[5:].partition('/')\nprint(sum(o['Key'].endswith('.parquet') for o in s3.list_objects_v2(Bucket=b, Prefix=k)['Contents']))"
    ));
    assert!(sandbox.parse::<i64>().unwrap() > 0, "{sandbox}");

    // 3. a lease kept open for more runs
    let o = emu
        .aether(&home)
        .args([
            "cluster",
            "create",
            "--platform",
            "emr-eks",
            "--cluster_shape_id",
            &shape.to_string(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let lease2 = out(&o).split('\t').next().unwrap().to_string();
    assert!(out(&o).contains("WAITING"), "{}", out(&o));
    let submit = |extra: &[&str]| {
        let mut c = emu.aether(&home);
        c.args([
            "submit",
            "--platform",
            "emr-eks",
            "--config_id",
            &config.to_string(),
            "--cluster_id",
            &lease2,
        ])
        .args(extra);
        c
    };
    let new_run = |before: &serde_json::Map<String, serde_json::Value>| -> Vec<String> {
        job_runs(&emu)
            .keys()
            .filter(|k| !before.contains_key(*k))
            .cloned()
            .collect()
    };

    // 3a. a failed run: FAILED with EMR on EKS's reason and the driver's log
    emu.control("steps", Some(serde_json::json!({"mode": "fail"})));
    let before = job_runs(&emu);
    let o = submit(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}\n{}", out(&o), err(&o));
    let made = new_run(&before);
    assert_eq!(made.len(), 1);
    let (status, reason, _) = run_row(&db, &made[0]);
    assert_eq!(status, "FAILED");
    let reason = reason.unwrap();
    assert!(
        reason.contains("USER_ERROR") && reason.contains("OutOfMemoryError"),
        "{reason}"
    );
    let driver_log: String = db
        .query_row(
            "SELECT driver_log FROM runs WHERE step_id = ?1",
            [&made[0]],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        driver_log,
        format!(
            "s3://logs/eks/{vc}/jobs/{0}/containers/spark-{0}/spark-{0}-driver/stderr.gz",
            made[0]
        )
    );
    assert!(
        err(&o).contains("| ") && err(&o).contains("OutOfMemoryError"),
        "{}",
        err(&o)
    );

    // 3b. StartJobRun's answer lost after the run was made: the retry (same client token)
    // gets that run, not a second one
    emu.control("steps", Some(serde_json::json!({"mode": "fail"})));
    emu.fault(
        serde_json::json!({"operation": "StartJobRun", "status": 500,
        "code": "InternalServerException", "when": "after"}),
    );
    let calls = |e: &common::Emulator| e.state()["calls"]["StartJobRun"].as_i64().unwrap_or(0);
    let (before, calls_before) = (job_runs(&emu), calls(&emu));
    let o = submit(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}\n{}", out(&o), err(&o));
    let made = new_run(&before);
    assert!(calls(&emu) >= calls_before + 2, "the call was retried");
    assert_eq!(made.len(), 1, "one run for one client token: {made:?}");
    assert_eq!(run_row(&db, &made[0]).0, "FAILED");

    // 3c. Ctrl-C during a run: CancelJobRun, recorded INTERRUPTED, exit 130
    emu.control("steps", Some(serde_json::json!({"mode": "hang"})));
    let before = job_runs(&emu);
    let mut guard = common::Interrupt(Some(submit(&[]).spawn().unwrap()));
    let t = std::time::Instant::now();
    let hung = loop {
        let made = new_run(&before);
        if let Some(id) = made.first()
            && job_runs(&emu)[id]["state"] == "RUNNING"
        {
            break id.clone();
        }
        assert!(t.elapsed().as_secs() < 60, "no job run started");
        std::thread::sleep(std::time::Duration::from_millis(300));
    };
    std::thread::sleep(std::time::Duration::from_secs(1));
    let mut child = guard.0.take().unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(job_runs(&emu)[&hung]["state"], "CANCELLED");
    let (status, reason, _) = run_row(&db, &hung);
    assert_eq!(status, "INTERRUPTED", "{reason:?}");
    assert!(
        !emu.state()["alive_steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == hung.as_str()),
        "the run's process is stopped"
    );

    // 4. the lease ended: nothing of it alive, no more runs on it
    let o = emu
        .aether(&home)
        .args([
            "cluster",
            "terminate",
            "--platform",
            "emr-eks",
            "--cluster_id",
            &lease2,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("TERMINATED"), "{}", out(&o));
    assert_eq!(common::cluster_state(&db, &lease2), "TERMINATED");
    assert!(
        job_runs(&emu)
            .values()
            .all(|r| ["COMPLETED", "FAILED", "CANCELLED"].contains(&r["state"].as_str().unwrap())),
        "{:?}",
        job_runs(&emu)
    );
    let o = submit(&[]).output().unwrap();
    assert!(!o.status.success());
    assert!(err(&o).contains("TERMINATED"), "{}", err(&o));
    // 6. the whole workflow on EMR on EKS, unchanged: qualify (done), tune on a lease of the
    // shape (ended after it), validate the best run's S3 outputs, the report
    let cpu_log: String = db
        .query_row(
            "SELECT event_log FROM runs WHERE kind = 'cpu-original'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let before = job_runs(&emu);
    let o = emu
        .aether(&home)
        .args([
            "run",
            "--event_log",
            &cpu_log,
            "--backend",
            "emr-eks",
            "--yes",
            "--min_tuning_iterations",
            "1",
            "--max_tuning_iterations",
            "1",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{}\n{e}", out(&o));
    assert!(e.contains("1 log(s), 1 already qualified"), "{e}");
    let tuned = new_run(&before);
    assert_eq!(tuned.len(), 1, "{tuned:?}\n{e}");
    // the best GPU run (the tuned one or the faster submit above) validated against production
    let verdict: String = db
        .query_row(
            "SELECT v.verdict FROM validations v JOIN runs r ON r.run_id = v.gpu_run_id
             WHERE r.backend = 'emr-eks' ORDER BY v.validation_id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(verdict, "PASS", "{e}");
    let made: String = db
        .query_row(
            "SELECT cluster_id FROM runs WHERE step_id = ?1",
            [&tuned[0]],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(common::cluster_state(&db, &made), "TERMINATED");
    assert_eq!(prod(), prod_before, "production outputs untouched");

    // 5. the job's page: the EKS run's cost made up, idle capacity of the CPU run and the GPU run
    let o = common::aether(
        &home,
        &[
            "report",
            "job",
            "--aether_job_id",
            &job_id.to_string(),
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let page: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let runs = page["runs"].as_array().unwrap();
    let gpu = runs
        .iter()
        .find(|r| r["backend"] == "emr-eks" && r["status"] == "COMPLETED")
        .unwrap();
    assert_eq!(gpu["backend"], "emr-eks");
    assert!(
        gpu["cost_note"]
            .as_str()
            .unwrap()
            .starts_with("executors $")
            && gpu["cost_note"].as_str().unwrap().contains("spot $0.310/h"),
        "{gpu}"
    );
    let exec_usd = c["executor_usd"].as_f64().unwrap();
    let idle = &gpu["idle"];
    let share = idle["idle_ms"].as_f64().unwrap() / idle["allocated_ms"].as_f64().unwrap();
    assert!(
        (idle["idle_cost_usd"].as_f64().unwrap() - exec_usd * share).abs() < 1e-12,
        "the executors' idle share of their nodes' cost: {idle}"
    );
    let cpu = runs.iter().find(|r| r["kind"] == "cpu-original").unwrap();
    assert_eq!(cpu["idle"]["allocated_ms"], cpu_idle["allocated_ms"]);
    let o = common::aether(
        &home,
        &["report", "job", "--aether_job_id", &job_id.to_string()],
    );
    assert!(
        out(&o).contains(&format!("run {} cost: executors $", gpu["run_id"])),
        "{}",
        out(&o)
    );

    // 7. a CPU job that ran on EMR on EKS itself: qualified from its job run id and virtual
    // cluster (DescribeJobRun, its own spark-defaults' event-log folder); a GPU run profiled so
    emu.control("steps", Some(serde_json::json!({"mode": "normal"})));
    let cpu_run = emu.boto(&format!(
        "r = eks.start_job_run(name='prod-etl', virtualClusterId='{vc}', clientToken='prod-1',\n\
           executionRoleArn='{ROLE}', releaseLabel='emr-7.9.0-latest',\n\
           jobDriver={{'sparkSubmitJobDriver': {{'entryPoint': 's3://code/jobs/etl.py',\n\
             'entryPointArguments': ['s3://data/in/', 's3://data/out/eks-agg'],\n\
             'sparkSubmitParameters': '--conf spark.executor.instances=2 --conf spark.sql.shuffle.partitions=8'}}}},\n\
           configurationOverrides={{'applicationConfiguration': [{{'classification': 'spark-defaults',\n\
             'properties': {{'spark.eventLog.enabled': 'true', 'spark.eventLog.dir': 's3a://logs/eks-cpu/'}}}}]}})\n\
         for _ in range(600):\n\
         \x20   st = eks.describe_job_run(id=r['id'], virtualClusterId='{vc}')['jobRun']['state']\n\
         \x20   if st not in ('PENDING', 'SUBMITTED', 'RUNNING'): break\n\
         \x20   time.sleep(0.5)\n\
         print(r['id'], st)"
    ));
    let (cpu_run, st) = cpu_run.split_once(' ').unwrap();
    assert_eq!(st, "COMPLETED");
    let home2 = d.path().join("home2");
    std::fs::create_dir_all(&home2).unwrap();
    std::fs::copy(home.join("config.toml"), home2.join("config.toml")).unwrap();
    let o = emu
        .aether(&home2)
        .args(["qualify", "--platform_job_id", cpu_run, "--cluster_id", vc])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let db2 = rusqlite::Connection::open(home2.join("history.db")).unwrap();
    let (source, def, backend, log): (String, String, String, String) = db2
        .query_row(
            "SELECT d.source, d.definition_json, r.backend, r.event_log
             FROM job_definitions d JOIN runs r USING (job_id) WHERE r.kind = 'cpu-original'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(
        (source.as_str(), backend.as_str()),
        ("emr-eks-job-run", "emr-eks")
    );
    assert_eq!(log, format!("s3://logs/eks-cpu/spark-{cpu_run}"));
    let def: serde_json::Value = serde_json::from_str(&def).unwrap();
    assert_eq!(def["main"], "s3://code/jobs/etl.py");
    assert_eq!(
        def["args"],
        serde_json::json!(["s3://data/in/", "s3://data/out/eks-agg"])
    );
    assert_eq!(def["conf"]["spark.sql.shuffle.partitions"], "8");
    let o = emu
        .aether(&home)
        .args(["profile", "--platform_job_id", &run_id, "--cluster_id", vc])
        .output()
        .unwrap();
    // found and read; the emulator's Spark has no GPU (it drops the plugin from the log), but
    // the run is aether's: its config fills what its log lacks, as the tune loop reads it, and
    // the recommendation is stored as a config of the run's job
    assert!(
        err(&o).contains(&format!(
            "step {run_id} on {vc}: COMPLETED event log {event_log}"
        )),
        "{}",
        err(&o)
    );
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(!err(&o).contains("is not a GPU run"), "{}", err(&o));
    assert!(out(&o).contains("Aether Config ID: "), "{}", out(&o));
    let profiled: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM configs WHERE source = 'profile' AND job_id =
               (SELECT job_id FROM runs WHERE step_id = ?1)",
            [&run_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(profiled, 1);

    let o = emu
        .aether(&home)
        .args(["cluster", "list", "--platform", "emr-eks"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains(&lease) && out(&o).contains(&lease2),
        "{}",
        out(&o)
    );
}
