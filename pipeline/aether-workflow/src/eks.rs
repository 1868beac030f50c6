//! EMR on EKS capacity: the Karpenter capacity of a qualified GPU shape (EC2NodeClass, the GPU
//! executor NodePool, the on-demand driver NodePool, the driver and executor pod templates),
//! checked against Karpenter's v1 CRDs, written to a folder, the pod templates uploaded to
//! `platform.emr_eks.artifacts_path`, and with `apply` applied by kubectl.

use std::path::PathBuf;

use crate::error::{Context, Result, bail, invalid};
use crate::workspace::Workspace;
use aether_core::RunOn;
use aether_platform::karpenter::{self, Capacity};

/// What `write_capacity` wrote: the manifest files, the pod templates put in S3, and the
/// executor nodes' GPUs (executors per node).
pub struct Written {
    pub files: Vec<PathBuf>,
    pub uploaded: Vec<String>,
    pub gpus_per_node: i64,
}

/// The Karpenter capacity of a qualified shape, checked, written (and applied), its pod
/// templates put under the artifacts path (`output`: the folder, default
/// `<aether home>/emr-eks/shape-<id>`).
pub fn write_capacity(
    ws: &Workspace,
    shape_id: i64,
    output: Option<PathBuf>,
    apply: bool,
) -> Result<Written> {
    let e = ws.eks_settings();
    let h = ws.history()?;
    let (job, gpu) = h.shape(shape_id)?.ok_or_else(|| {
        invalid!("unknown cluster shape id {shape_id} (see `aether report list`)")
    })?;
    let shape = &gpu["shape"];
    let instance = shape["instance"]
        .as_str()
        .ok_or_else(|| invalid!("shape {shape_id} (job {job}) names no GPU instance type"))?;
    let eks_cluster = e.eks_cluster_name.clone().ok_or_else(|| {
        invalid!(
            "platform.emr_eks.eks_cluster_name is not set: the nodes find their subnets and security \
             groups by its karpenter.sh/discovery tag (aether config set platform.emr_eks.eks_cluster_name NAME)"
        )
    })?;
    let region = ws.region_of(RunOn::EmrEks);
    let c = Capacity {
        shape_id,
        instance: instance.to_string(),
        nodes: shape["nodes"].as_i64().unwrap_or(1),
        gpus_per_node: shape["gpus_per_node"].as_i64().unwrap_or(1),
        cores_per_executor: shape["cores_per_executor"].as_i64().unwrap_or(4),
        node_role: e
            .node_role
            .clone()
            .unwrap_or_else(|| format!("KarpenterNodeRole-{eks_cluster}")),
        zone: e
            .availability_zone
            .clone()
            .unwrap_or_else(|| format!("{region}a")),
        consolidate_after_s: e.consolidate_after_s.unwrap_or(30),
        eks_cluster,
    };
    let objects = karpenter::manifests(&c).map_err(|e| invalid!("shape {shape_id}: {e}"))?;
    // nothing is written that Karpenter would refuse
    let (errors, cel_skipped) = karpenter::check(&objects);
    if !errors.is_empty() {
        bail!(
            "the manifests of shape {shape_id} do not fit Karpenter's CRDs:\n  {}",
            errors.join("\n  ")
        );
    }
    let dir = output.unwrap_or_else(|| ws.home().join(format!("emr-eks/shape-{shape_id}")));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
    let mut files = Vec::new();
    for (name, o) in &objects {
        let p = dir.join(name);
        std::fs::write(&p, karpenter::to_yaml(o)).with_context(|| format!("{}", p.display()))?;
        files.push(p);
    }
    let apply_files: Vec<String> = files
        .iter()
        .filter(|p| !p.display().to_string().contains("pod-template"))
        .map(|p| p.display().to_string())
        .collect();
    let readme = format!(
        "GPU test capacity for shape {shape_id} (job {job}: {} x {instance}), written by aether.\n\n\
         Apply: kubectl apply -f {}\n\n{}\n\
         Checked against Karpenter's v1 CRDs (structure, types, enums, patterns, bounds); {cel_skipped} CEL \
         rules are left to the API server.\n",
        c.nodes,
        apply_files.join(" -f "),
        karpenter::PREREQUISITES
    );
    std::fs::write(dir.join("README.txt"), &readme)?;
    let mut uploaded = Vec::new();
    // the pod templates go where the runs' spark-defaults name them
    if let Some(url) = &e.artifacts_path {
        use object_store::ObjectStoreExt;
        let rt = ws.runtime();
        let s3 = aether_ingest::source::s3_location(
            url,
            &aether_ingest::S3Options {
                region: Some(region.clone()),
                endpoint: None,
            },
        )
        .map_err(|e| invalid!("platform.emr_eks.artifacts_path {url}: {e}"))?;
        for (name, o) in objects
            .iter()
            .filter(|(n, _)| n.starts_with("pod-template"))
        {
            let key = format!("{}/pod-templates/shape-{shape_id}/{name}", s3.prefix);
            let key = object_store::path::Path::from(key.trim_start_matches('/'));
            rt.block_on(s3.store.put(
                &key,
                object_store::PutPayload::from(karpenter::to_yaml(o).into_bytes()),
            ))
            .with_context(|| format!("putting {name} to {url}"))?;
            uploaded.push(format!("s3://{}/{key}", s3.bucket));
        }
    }
    if apply {
        let mut cmd = std::process::Command::new("kubectl");
        cmd.arg("apply");
        for f in &apply_files {
            cmd.args(["-f", f]);
        }
        let status = cmd.status().with_context(|| {
            format!(
                "--apply: kubectl could not be run (the manifests are in {})",
                dir.display()
            )
        })?;
        if !status.success() {
            bail!(
                "--apply: kubectl apply failed ({status}); the manifests are in {}",
                dir.display()
            );
        }
    }
    Ok(Written {
        files,
        uploaded,
        gpus_per_node: c.gpus_per_node,
    })
}
