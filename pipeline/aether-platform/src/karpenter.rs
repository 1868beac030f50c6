//! Capacity for GPU test runs on EMR on EKS, from Karpenter: an `EC2NodeClass`, a GPU executor
//! `NodePool` for a qualified cluster shape (the instance families that carry its GPU, sizes
//! diversified so spot capacity is found, spot with on-demand fallback, the `nvidia.com/gpu`
//! taint, one availability zone, limits from the shape, empty nodes removed after a short
//! `consolidateAfter`), an on-demand driver `NodePool`, and the driver and executor pod
//! templates. The manifests are checked against Karpenter's own v1 CRD schemas (committed in
//! `datasets/reference/karpenter/`, Apache-2.0, see NOTICE) before they are written.

use serde_json::{Value, json};

use crate::k8s_schema;

/// Karpenter's NodePool CRD (karpenter.sh/v1).
pub const NODEPOOL_CRD: &str =
    include_str!("../../../datasets/reference/karpenter/karpenter.sh_nodepools.yaml");
/// Karpenter's EC2NodeClass CRD (karpenter.k8s.aws/v1).
pub const EC2NODECLASS_CRD: &str =
    include_str!("../../../datasets/reference/karpenter/karpenter.k8s.aws_ec2nodeclasses.yaml");

/// What the capacity is for.
#[derive(Clone, Debug, PartialEq)]
pub struct Capacity {
    /// The qualified shape's id (names the GPU pool).
    pub shape_id: i64,
    /// The shape's instance type, e.g. `g4dn.2xlarge`.
    pub instance: String,
    /// GPU nodes the shape asks for.
    pub nodes: i64,
    pub gpus_per_node: i64,
    /// Cores of one executor (one per node): the smallest node has at least as many vCPUs.
    pub cores_per_executor: i64,
    /// The EKS cluster (its subnets and security groups carry `karpenter.sh/discovery: <it>`).
    pub eks_cluster: String,
    /// The nodes' IAM role.
    pub node_role: String,
    /// The one zone the nodes go to (shuffle stays in it).
    pub zone: String,
    /// Seconds an empty node is kept.
    pub consolidate_after_s: i64,
}

/// The GPU of an instance family and the families that carry it (Karpenter's
/// `karpenter.k8s.aws/instance-gpu-name` values).
fn gpu_of(family: &str) -> Option<(&'static str, &'static [&'static str])> {
    Some(match family {
        "g4dn" => ("t4", &["g4dn"]),
        "g5" => ("a10g", &["g5"]),
        "g6" | "gr6" => ("l4", &["g6", "gr6"]),
        "g6e" => ("l40s", &["g6e"]),
        "p3" | "p3dn" => ("v100", &["p3", "p3dn"]),
        "p4d" | "p4de" => ("a100", &["p4d", "p4de"]),
        "p5" => ("h100", &["p5"]),
        _ => return None,
    })
}

/// The names of the pools, the node class and the pod template files.
pub fn gpu_pool(shape_id: i64) -> String {
    format!("aether-gpu-shape-{shape_id}")
}
pub const DRIVER_POOL: &str = "aether-driver";
pub const NODE_CLASS: &str = "aether";

fn requirement(key: &str, op: &str, values: &[&str]) -> Value {
    json!({"key": key, "operator": op, "values": values})
}

/// Every manifest, as (file name, object), in the order to apply them.
pub fn manifests(c: &Capacity) -> Result<Vec<(String, Value)>, String> {
    let family = c.instance.split('.').next().unwrap_or("");
    let (gpu, families) = gpu_of(family).ok_or_else(|| {
        format!(
            "{}: no GPU instance family aether knows (g4dn, g5, g6, g6e, p3, p4d, p5)",
            c.instance
        )
    })?;
    let after = format!("{}s", c.consolidate_after_s);
    let limit_nodes = c.nodes + 1;
    let common = |extra: &mut Vec<Value>| {
        extra.push(requirement("topology.kubernetes.io/zone", "In", &[&c.zone]));
        extra.push(requirement("kubernetes.io/arch", "In", &["amd64"]));
        extra.push(requirement("kubernetes.io/os", "In", &["linux"]));
    };
    let node_class = json!({
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": NODE_CLASS, "labels": {"app.kubernetes.io/managed-by": "aether"}},
        "spec": {
            "role": c.node_role,
            // Amazon Linux 2023: Karpenter picks its NVIDIA variant for GPU instances
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": c.eks_cluster}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": c.eks_cluster}}],
            // Spark's shuffle and spill on the instance's NVMe disks
            "instanceStorePolicy": "RAID0",
            "blockDeviceMappings": [{
                "deviceName": "/dev/xvda",
                "ebs": {"volumeSize": "100Gi", "volumeType": "gp3", "encrypted": true,
                        "deleteOnTermination": true}
            }],
            "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required",
                                "httpPutResponseHopLimit": 2},
            "tags": {"aether:managed": "true", "aether:eks-cluster": c.eks_cluster}
        }
    });
    let mut gpu_req = vec![
        requirement("karpenter.k8s.aws/instance-family", "In", families),
        requirement("karpenter.k8s.aws/instance-gpu-name", "In", &[gpu]),
        requirement(
            "karpenter.k8s.aws/instance-gpu-count",
            "In",
            &[&c.gpus_per_node.to_string()],
        ),
        // sizes from the shape's up: several instance types, so spot capacity is found
        requirement(
            "karpenter.k8s.aws/instance-cpu",
            "Gt",
            &[&(c.cores_per_executor.max(2) - 1).to_string()],
        ),
        // spot first, on-demand when there is none
        requirement("karpenter.sh/capacity-type", "In", &["spot", "on-demand"]),
    ];
    common(&mut gpu_req);
    let gpu_nodepool = json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": gpu_pool(c.shape_id), "labels": {"app.kubernetes.io/managed-by": "aether"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"aether/pool": "gpu", "aether/shape": c.shape_id.to_string()}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": NODE_CLASS},
                    "requirements": gpu_req,
                    "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
                    "expireAfter": "24h"
                }
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": after},
            // the shape's nodes and one more (a replaced spot node)
            "limits": {
                "nvidia.com/gpu": (limit_nodes * c.gpus_per_node).to_string(),
                "cpu": (limit_nodes * (c.cores_per_executor.max(4) * 8)).to_string()
            },
            "weight": 10
        }
    });
    let mut driver_req = vec![
        requirement("karpenter.k8s.aws/instance-category", "In", &["m"]),
        // 5th generation and later (m5d.xlarge, the driver's price, among them)
        requirement("karpenter.k8s.aws/instance-generation", "Gt", &["4"]),
        requirement("karpenter.k8s.aws/instance-cpu", "In", &["4", "8"]),
        // the driver and the job submitter are never on spot
        requirement("karpenter.sh/capacity-type", "In", &["on-demand"]),
    ];
    common(&mut driver_req);
    let driver_pool = json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": DRIVER_POOL, "labels": {"app.kubernetes.io/managed-by": "aether"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"aether/pool": "driver"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": NODE_CLASS},
                    "requirements": driver_req,
                    "expireAfter": "24h"
                }
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": after},
            "limits": {"cpu": "64"}
        }
    });
    let driver_pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "true"},
                     "labels": {"aether/role": "driver"}},
        "spec": {"nodeSelector": {"karpenter.sh/nodepool": DRIVER_POOL,
                                  "karpenter.sh/capacity-type": "on-demand"}}
    });
    let executor_pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": {"aether/role": "executor"}},
        "spec": {
            "nodeSelector": {"karpenter.sh/nodepool": gpu_pool(c.shape_id)},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        }
    });
    Ok(vec![
        ("ec2nodeclass.yaml".into(), node_class),
        (
            format!("nodepool-{}.yaml", gpu_pool(c.shape_id)),
            gpu_nodepool,
        ),
        (format!("nodepool-{DRIVER_POOL}.yaml"), driver_pool),
        ("pod-template-driver.yaml".into(), driver_pod),
        ("pod-template-executor.yaml".into(), executor_pod),
    ])
}

fn crd(text: &str) -> Value {
    serde_yaml::from_str(text).unwrap_or(Value::Null)
}

/// Check Karpenter objects against their CRDs: the violations, each naming the object and the
/// field, and how many CEL rules were not evaluated. Objects of other kinds are not checked.
pub fn check(objects: &[(String, Value)]) -> (Vec<String>, usize) {
    let (pools, classes) = (crd(NODEPOOL_CRD), crd(EC2NODECLASS_CRD));
    let mut errors = Vec::new();
    let mut skipped = 0;
    for (name, o) in objects {
        let schema = match o["kind"].as_str() {
            Some("NodePool") => &pools,
            Some("EC2NodeClass") => &classes,
            _ => continue,
        };
        let c = k8s_schema::check_object(o, schema);
        errors.extend(c.errors.into_iter().map(|e| format!("{name}: {e}")));
        skipped += c.cel_skipped;
    }
    (errors, skipped)
}

/// What the EKS cluster needs that aether does not install.
pub const PREREQUISITES: &str = "\
This capacity needs, on the EKS cluster (aether installs none of them):
- Karpenter v1 (its controller and CRDs), with permission to launch the instance families named here;
- the NVIDIA device plugin (or the NVIDIA GPU operator), so nodes advertise nvidia.com/gpu;
- Karpenter's interruption queue (SQS with EventBridge rules), so spot interruptions drain nodes in time;
- subnets and security groups tagged karpenter.sh/discovery=<cluster>, and the node IAM role;
- an EMR on EKS virtual cluster on the namespace, and a job execution role.
";

/// The manifests as YAML documents.
pub fn to_yaml(v: &Value) -> String {
    serde_yaml::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Capacity {
        Capacity {
            shape_id: 7,
            instance: "g4dn.2xlarge".into(),
            nodes: 2,
            gpus_per_node: 1,
            cores_per_executor: 8,
            eks_cluster: "analytics".into(),
            node_role: "KarpenterNodeRole-analytics".into(),
            zone: "us-east-1a".into(),
            consolidate_after_s: 30,
        }
    }

    #[test]
    fn manifests_are_valid_against_karpenters_crds() {
        let m = manifests(&shape()).unwrap();
        let (errors, cel) = check(&m);
        assert_eq!(errors, Vec::<String>::new());
        // the CEL rules not evaluated are counted
        assert!(cel > 0);
        let pool = &m[1].1;
        assert_eq!(
            pool["spec"]["disruption"]["consolidationPolicy"],
            "WhenEmpty"
        );
        assert_eq!(pool["spec"]["limits"]["nvidia.com/gpu"], "3");
        let reqs = pool["spec"]["template"]["spec"]["requirements"].to_string();
        assert!(
            reqs.contains("\"t4\"") && reqs.contains("\"spot\",\"on-demand\""),
            "{reqs}"
        );
        assert!(reqs.contains("us-east-1a"));
        assert_eq!(
            m[3].1["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"],
            "true"
        );
    }

    #[test]
    fn a_broken_manifest_is_caught() {
        let m = manifests(&shape()).unwrap();
        let broken = |f: &dyn Fn(&mut Value)| {
            let mut m = m.clone();
            f(&mut m[1].1);
            check(&m).0
        };
        // the negative controls: each a mistake the API server would refuse
        let e = broken(&|p| {
            p["spec"]["disruption"]
                .as_object_mut()
                .unwrap()
                .remove("consolidateAfter");
        });
        assert_eq!(
            e,
            ["nodepool-aether-gpu-shape-7.yaml: spec.disruption.consolidateAfter: required"]
        );
        let e = broken(&|p| p["spec"]["disruption"]["consolidateAfter"] = json!("soon"));
        assert!(e[0].contains("does not match the pattern"), "{e:?}");
        let e = broken(&|p| p["spec"]["disruption"]["consolidationPolicy"] = json!("Sometimes"));
        assert!(e[0].contains("is not one of"), "{e:?}");
        let e = broken(&|p| {
            p["spec"]["template"]["spec"]["requirements"][0]["operator"] = json!("Like")
        });
        assert!(e[0].contains("requirements[0].operator"), "{e:?}");
        let e = broken(&|p| p["spec"]["templat"] = json!({}));
        assert!(
            e.iter().any(|x| x.contains("spec.templat: unknown field")),
            "{e:?}"
        );
        // an unknown GPU family is refused
        let mut s = shape();
        s.instance = "m5.xlarge".into();
        assert!(
            manifests(&s)
                .unwrap_err()
                .contains("no GPU instance family")
        );
    }
}
