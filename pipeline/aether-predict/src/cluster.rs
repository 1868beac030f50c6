//! EMR cluster shapes and costs: the CPU cluster an app ran on (inferred from its log), the GPU
//! cluster the reference tool recommends, and aether's ranking of GPU instance types by
//! estimated cost. Instance specs and prices come from `datasets/reference/emr/` (compiled in),
//! prices overridable by a user CSV.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;

const CATALOG: &str = include_str!("../../../datasets/reference/emr/emr-instance-catalog.json");
const GPU_INSTANCES: &str = include_str!("../../../datasets/reference/emr/gpu-instances.csv");
const PRICES: &str = include_str!("../../../datasets/reference/emr/prices.csv");
const PRICE_SOURCE: &str =
    "aether built-in on-demand EC2 + EMR prices (datasets/reference/emr/prices.csv, Nov 2026)";

/// The reference tool's CPU worker types (`emr-configs.json` clusterInference) and driver.
const CPU_WORKERS: &[&str] = &[
    "m5d.large",
    "m5d.xlarge",
    "m5d.2xlarge",
    "m5d.4xlarge",
    "m5d.8xlarge",
    "m5d.12xlarge",
    "m5d.16xlarge",
];
const DRIVER: &str = "i3.2xlarge";
/// The reference tool's default GPU worker.
pub const DEFAULT_GPU_WORKER: &str = "g6.4xlarge";

/// An instance type's resources.
#[derive(Clone, Debug, Serialize)]
pub struct Instance {
    pub name: String,
    pub vcpus: i64,
    pub memory_mib: i64,
    pub gpus: i64,
    pub gpu: Option<String>,
    pub gpu_memory_mib: i64,
}

/// Hourly prices of an instance type.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Price {
    pub ec2_usd_per_hour: f64,
    pub emr_usd_per_hour: f64,
    /// The EC2 spot price, where a prices file gives one (`spot_usd_per_hour`); EMR on EKS
    /// prices spot executor nodes with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spot_usd_per_hour: Option<f64>,
}

impl Price {
    pub fn total(&self) -> f64 {
        self.ec2_usd_per_hour + self.emr_usd_per_hour
    }
}

/// Instance specs and prices.
pub struct Catalog {
    instances: BTreeMap<String, Instance>,
    prices: BTreeMap<(String, String), Price>,
    pub price_source: String,
}

fn parse_prices(
    text: &str,
    file: &str,
    into: &mut BTreeMap<(String, String), Price>,
) -> Result<()> {
    let mut r = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let h = r
        .headers()
        .with_context(|| format!("prices {file}: no header"))?
        .clone();
    let col = |n: &str| {
        h.iter().position(|c| c == n).with_context(|| {
            format!(
                "prices {file}: missing column {n:?} (expected region,instance,ec2_usd_per_hour,emr_usd_per_hour)"
            )
        })
    };
    let (cr, ci, ce, cm) = (
        col("region")?,
        col("instance")?,
        col("ec2_usd_per_hour")?,
        col("emr_usd_per_hour")?,
    );
    // optional: spot prices (EMR on EKS executor nodes)
    let cs = h.iter().position(|c| c == "spot_usd_per_hour");
    for (n, rec) in r.records().enumerate() {
        let line = n + 2;
        let rec = rec.with_context(|| format!("prices {file}:{line}"))?;
        let num = |c: usize, what: &str| -> Result<f64> {
            let v = rec.get(c).unwrap_or("");
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
                _ => bail!("prices {file}:{line}: {what} {v:?} is not a price (USD per hour, ≥ 0)"),
            }
        };
        let price = Price {
            ec2_usd_per_hour: num(ce, "ec2_usd_per_hour")?,
            emr_usd_per_hour: num(cm, "emr_usd_per_hour")?,
            spot_usd_per_hour: match cs.and_then(|c| rec.get(c)).filter(|v| !v.is_empty()) {
                Some(_) => Some(num(cs.unwrap_or(0), "spot_usd_per_hour")?),
                None => None,
            },
        };
        let region = rec.get(cr).unwrap_or("").to_string();
        let inst = rec.get(ci).unwrap_or("").to_string();
        if region.is_empty() || inst.is_empty() {
            bail!("prices {file}:{line}: region and instance must not be empty");
        }
        into.insert((region, inst), price);
    }
    Ok(())
}

impl Catalog {
    /// The built-in catalog, with prices from `pricing_file` replacing the built-in ones where
    /// both have a region + instance.
    pub fn load(pricing_file: Option<&Path>) -> Result<Catalog> {
        let raw: BTreeMap<String, serde_json::Value> = serde_json::from_str(CATALOG)?;
        let mut instances = BTreeMap::new();
        for (name, v) in raw {
            let g = v["GpuInfo"].get(0);
            instances.insert(
                name.clone(),
                Instance {
                    name,
                    vcpus: v["VCpuCount"].as_i64().unwrap_or(0),
                    memory_mib: v["MemoryInMB"].as_i64().unwrap_or(0),
                    gpus: g.and_then(|g| g["Count"][0].as_i64()).unwrap_or(0),
                    gpu: g.and_then(|g| g["Name"].as_str()).map(String::from),
                    gpu_memory_mib: 0,
                },
            );
        }
        let mut r = csv::Reader::from_reader(GPU_INSTANCES.as_bytes());
        for rec in r.records() {
            let rec = rec?;
            let n = |i: usize| rec[i].parse::<i64>().unwrap_or(0);
            instances.insert(
                rec[0].to_string(),
                Instance {
                    name: rec[0].to_string(),
                    gpu: Some(rec[2].to_string()),
                    gpus: n(3),
                    gpu_memory_mib: n(4),
                    vcpus: n(5),
                    memory_mib: n(6),
                },
            );
        }
        let mut prices = BTreeMap::new();
        parse_prices(PRICES, "built-in", &mut prices)?;
        let mut price_source = PRICE_SOURCE.to_string();
        if let Some(p) = pricing_file {
            let shown = p.display().to_string();
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("prices {shown}: cannot read"))?;
            parse_prices(&text, &shown, &mut prices)?;
            price_source = format!("{shown} over the built-in prices");
        }
        Ok(Catalog {
            instances,
            prices,
            price_source,
        })
    }

    pub fn instance(&self, name: &str) -> Option<&Instance> {
        self.instances.get(name)
    }

    pub fn price(&self, region: &str, instance: &str) -> Option<Price> {
        self.prices
            .get(&(region.to_string(), instance.to_string()))
            .copied()
    }

    /// GPU instance types of the given families (`g5`, or a full type `g5.4xlarge`).
    pub fn gpu_instances(&self, families: &[String]) -> Vec<&Instance> {
        self.instances
            .values()
            .filter(|i| i.gpus > 0 && i.gpu_memory_mib > 0)
            .filter(|i| {
                let fam = i.name.split('.').next().unwrap_or("");
                families.iter().any(|f| f == fam || *f == i.name)
            })
            .collect()
    }
}

/// The CPU cluster an app ran on, as its log shows it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SourceCluster {
    pub cores_per_executor: i64,
    pub num_executors: i64,
    pub num_worker_nodes: i64,
    /// Executors per node when they divide evenly, else -1.
    pub executors_per_node: i64,
    pub executor_heap_mib: i64,
    pub dynamic_allocation: bool,
    /// The worker type: the reference tool's m5d size with exactly the cores a node used, else
    /// the smallest m5d size with at least those cores.
    pub worker_instance: Option<String>,
    /// `exact` (the reference rule) or `nearest`.
    pub worker_instance_match: String,
    pub driver_instance: String,
}

/// A GPU cluster shape and what it would cost for the predicted run.
#[derive(Clone, Debug, Serialize)]
pub struct GpuShape {
    pub instance: String,
    pub gpu: String,
    pub gpu_memory_mib: i64,
    pub nodes: i64,
    pub gpus_per_node: i64,
    pub executors: i64,
    pub cores_per_executor: i64,
    pub node_memory_mib: i64,
    pub hourly_usd: Option<f64>,
    pub cost_usd: Option<f64>,
    pub fits_memory: bool,
}

impl GpuShape {
    /// `N x instance`.
    pub fn summary(&self) -> String {
        format!("{} x {}", self.nodes, self.instance)
    }

    /// The executors the Spark configs are for (EMR keeps 30 % of a node's memory).
    pub fn tuner_target(&self) -> crate::autotuner::Target {
        crate::autotuner::Target {
            cores_per_executor: self.cores_per_executor,
            memory_per_executor_mib: self.node_memory_mib / self.gpus_per_node.max(1),
            gpu_memory_mib: self.gpu_memory_mib,
            reserved_fraction: 0.3,
        }
    }
}

/// The reference tool's shape (g6.4xlarge, cores conserved), without prices.
pub fn reference_shape(facts: &ExecutorFacts) -> GpuShape {
    let inst = Instance {
        name: DEFAULT_GPU_WORKER.into(),
        vcpus: 16,
        memory_mib: 65536,
        gpus: 1,
        gpu: Some("L4".into()),
        gpu_memory_mib: 24576,
    };
    shape(
        &inst,
        facts.cores_per_executor.max(1) * facts.num_executors.max(1),
    )
}

/// The cluster recommendation of one app.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterRecommendation {
    pub region: String,
    pub source: SourceCluster,
    /// The reference tool's rule: conserve CPU cores, one GPU per executor, on g6.4xlarge.
    pub reference: GpuShape,
    /// Every candidate GPU instance type, cheapest first.
    pub candidates: Vec<GpuShape>,
    /// The cheapest candidate that fits memory (the reference shape when none has a price).
    pub recommended: GpuShape,
    /// `N x instance` of the recommendation.
    pub summary: String,
    pub cpu_hourly_usd: Option<f64>,
    pub cpu_cost_usd: Option<f64>,
    pub gpu_cost_usd: Option<f64>,
    pub savings_usd: Option<f64>,
    pub savings_pct: Option<f64>,
    pub price_source: String,
    pub notes: Vec<String>,
}

/// What the log says about the executors.
#[derive(Clone, Debug, Default)]
pub struct ExecutorFacts {
    /// Cores of the first executor (the reference tool's "head" executor).
    pub cores_per_executor: i64,
    pub num_executors: i64,
    pub hosts: i64,
    pub heap_mib: i64,
    pub dynamic_allocation: bool,
}

/// Infer the CPU cluster.
pub fn source_cluster(f: &ExecutorFacts) -> SourceCluster {
    let cores = f.cores_per_executor.max(1);
    let nodes = f.hosts.max(1);
    let per_node = if f.num_executors > 0 && f.num_executors % nodes == 0 {
        f.num_executors / nodes
    } else {
        -1
    };
    let node_cores = cores * per_node.max(1);
    let vcpus = |n: &&str| match n.split('.').nth(1) {
        Some("large") => 2,
        Some("xlarge") => 4,
        Some(s) => s.trim_end_matches("xlarge").parse::<i64>().unwrap_or(0) * 4,
        None => 0,
    };
    let exact = (per_node > 0)
        .then(|| CPU_WORKERS.iter().find(|n| vcpus(n) == node_cores))
        .flatten();
    let (worker, how) = match exact {
        Some(w) => (Some(w.to_string()), "exact"),
        None => (
            CPU_WORKERS
                .iter()
                .find(|n| vcpus(n) >= node_cores)
                .or(CPU_WORKERS.last())
                .map(|w| w.to_string()),
            "nearest",
        ),
    };
    SourceCluster {
        cores_per_executor: cores,
        num_executors: f.num_executors,
        num_worker_nodes: nodes,
        executors_per_node: per_node,
        executor_heap_mib: f.heap_mib,
        dynamic_allocation: f.dynamic_allocation,
        worker_instance: worker,
        worker_instance_match: how.into(),
        driver_instance: DRIVER.into(),
    }
}

/// The shape on `inst` that keeps the CPU cluster's cores: one executor per GPU, each with the
/// node's cores divided by its GPUs. It fits when the Spark configs' memory plan fits
/// ([`crate::autotuner::memory_fits`]) and the GPU has at least 16 GiB.
fn shape(inst: &Instance, total_cores: i64) -> GpuShape {
    let gpus = inst.gpus.max(1);
    let cores = (inst.vcpus / gpus).max(1);
    let executors = ((total_cores.max(1) + cores - 1) / cores).max(1);
    let nodes = (executors + gpus - 1) / gpus;
    let mut s = GpuShape {
        instance: inst.name.clone(),
        gpu: inst.gpu.clone().unwrap_or_default(),
        gpu_memory_mib: inst.gpu_memory_mib,
        nodes,
        gpus_per_node: gpus,
        executors: nodes * gpus,
        cores_per_executor: cores,
        node_memory_mib: inst.memory_mib,
        hourly_usd: None,
        cost_usd: None,
        fits_memory: false,
    };
    s.fits_memory =
        crate::autotuner::memory_fits(&s.tuner_target()) && inst.gpu_memory_mib >= 16384;
    s
}

/// Recommend the GPU cluster and cost both clusters for one app.
///
/// `app_duration_ms` is the CPU run; `gpu_duration_ms` the predicted GPU run (QualX predicts one
/// speedup per app, not per GPU model, so every candidate is costed for that duration).
pub fn recommend(
    cat: &Catalog,
    region: &str,
    families: &[String],
    facts: &ExecutorFacts,
    app_duration_ms: i64,
    gpu_duration_ms: i64,
) -> ClusterRecommendation {
    let source = source_cluster(facts);
    let total_cores = source.cores_per_executor * source.num_executors.max(1);
    let hours = |ms: i64| ms.max(0) as f64 / 3_600_000.0;
    let driver = cat.price(region, DRIVER);
    let mut notes = Vec::new();
    let cost = |s: &mut GpuShape| {
        if let (Some(p), Some(d)) = (cat.price(region, &s.instance), driver) {
            let hourly = s.nodes as f64 * p.total() + d.total();
            s.hourly_usd = Some(hourly);
            s.cost_usd = Some(hourly * hours(gpu_duration_ms));
        }
    };
    let mut reference = reference_shape(facts);
    cost(&mut reference);
    let mut candidates: Vec<GpuShape> = cat
        .gpu_instances(families)
        .into_iter()
        .map(|i| {
            let mut s = shape(i, total_cores);
            cost(&mut s);
            s
        })
        .filter(|s| s.cost_usd.is_some())
        .collect();
    candidates.sort_by(|a, b| {
        let ka = (!a.fits_memory, a.cost_usd.unwrap_or(f64::MAX));
        let kb = (!b.fits_memory, b.cost_usd.unwrap_or(f64::MAX));
        ka.0.cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then(a.nodes.cmp(&b.nodes))
            .then(a.instance.cmp(&b.instance))
    });
    let recommended = match candidates.iter().find(|c| c.fits_memory) {
        Some(c) => c.clone(),
        None => {
            notes.push(format!(
                "no priced GPU instance of {} in {region} fits: the reference shape is shown",
                families.join(", ")
            ));
            reference.clone()
        }
    };
    let cpu_hourly = match (source.worker_instance.as_deref(), driver) {
        (Some(w), Some(d)) => cat
            .price(region, w)
            .map(|p| source.num_worker_nodes as f64 * p.total() + d.total()),
        _ => None,
    };
    if cpu_hourly.is_none() {
        notes.push(format!(
            "no prices for region {region}: costs not estimated"
        ));
    }
    let cpu_cost = cpu_hourly.map(|h| h * hours(app_duration_ms));
    let gpu_cost = recommended.cost_usd;
    let savings = cpu_cost.zip(gpu_cost).map(|(c, g)| c - g);
    ClusterRecommendation {
        region: region.to_string(),
        summary: recommended.summary(),
        source,
        reference,
        candidates,
        recommended,
        cpu_hourly_usd: cpu_hourly,
        cpu_cost_usd: cpu_cost,
        gpu_cost_usd: gpu_cost,
        savings_usd: savings,
        savings_pct: savings
            .zip(cpu_cost)
            .filter(|(_, c)| *c > 0.0)
            .map(|(s, c)| 100.0 * s / c),
        price_source: cat.price_source.clone(),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(cores: i64, execs: i64, hosts: i64) -> ExecutorFacts {
        ExecutorFacts {
            cores_per_executor: cores,
            num_executors: execs,
            hosts,
            heap_mib: 1024,
            dynamic_allocation: false,
        }
    }

    /// The reference tool's shapes (golden cluster_information.json): CPU worker by exact cores,
    /// GPU executors = ceil(CPU cores / 16) on g6.4xlarge.
    #[test]
    fn reference_rules() {
        let cat = Catalog::load(None).unwrap();
        let fams = vec!["g6".to_string()];
        for (f, worker, execs) in [
            (facts(8, 2, 2), Some("m5d.2xlarge"), 1),
            (facts(2, 1, 1), Some("m5d.large"), 1),
            (facts(1, 2, 1), Some("m5d.large"), 1),
            (facts(4, 8, 5), None, 2),
            (facts(3, 10, 1), Some("m5d.8xlarge"), 2),
            (facts(12, 3, 3), None, 3),
            (facts(12, 4, 3), None, 3),
        ] {
            let r = recommend(&cat, "us-east-1", &fams, &f, 3_600_000, 1_800_000);
            if let Some(w) = worker {
                assert_eq!(r.source.worker_instance.as_deref(), Some(w), "{f:?}");
            }
            assert_eq!(r.reference.instance, "g6.4xlarge");
            assert_eq!(r.reference.executors, execs, "{f:?}");
            assert_eq!(r.reference.cores_per_executor, 16);
        }
        // 3 x 10 executors on one node = 30 cores: no exact m5d, the nearest is m5d.8xlarge
        let r = recommend(
            &cat,
            "us-east-1",
            &fams,
            &facts(3, 10, 1),
            3_600_000,
            1_800_000,
        );
        assert_eq!(r.source.worker_instance_match, "nearest");
    }

    #[test]
    fn costs_rank_candidates_and_a_user_price_file_wins() {
        let cat = Catalog::load(None).unwrap();
        let fams: Vec<String> = ["g4dn", "g5", "g6"].iter().map(|s| s.to_string()).collect();
        let r = recommend(
            &cat,
            "us-east-1",
            &fams,
            &facts(8, 4, 4),
            3_600_000,
            1_800_000,
        );
        // cheapest first, and the recommendation is the cheapest that fits
        let costs: Vec<f64> = r
            .candidates
            .iter()
            .filter(|c| c.fits_memory)
            .map(|c| c.cost_usd.unwrap())
            .collect();
        assert!(costs.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(r.gpu_cost_usd, Some(costs[0]));
        // 4 x m5d.2xlarge + driver for an hour
        let cpu = 4.0 * (0.452 * 1.25) + 0.624 * 1.25;
        assert!(
            (r.cpu_cost_usd.unwrap() - cpu).abs() < 1e-9,
            "{:?}",
            r.cpu_cost_usd
        );
        assert!((r.savings_usd.unwrap() - (cpu - costs[0])).abs() < 1e-9);

        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.csv");
        std::fs::write(
            &p,
            "region,instance,ec2_usd_per_hour,emr_usd_per_hour\nus-east-1,g6.4xlarge,0.01,0\n",
        )
        .unwrap();
        let cat = Catalog::load(Some(&p)).unwrap();
        let r = recommend(
            &cat,
            "us-east-1",
            &fams,
            &facts(8, 4, 4),
            3_600_000,
            1_800_000,
        );
        assert_eq!(r.recommended.instance, "g6.4xlarge");
        assert!(r.price_source.contains("p.csv"));
    }

    #[test]
    fn spot_prices_are_an_optional_column() {
        let cat = Catalog::load(None).unwrap();
        assert_eq!(
            cat.price("us-east-1", "g4dn.2xlarge")
                .unwrap()
                .spot_usd_per_hour,
            None
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("spot.csv");
        std::fs::write(
            &p,
            "region,instance,ec2_usd_per_hour,emr_usd_per_hour,spot_usd_per_hour
             us-east-1,g4dn.2xlarge,0.752,0.188,0.30
us-east-1,g5.xlarge,1.006,0.252,
",
        )
        .unwrap();
        let cat = Catalog::load(Some(&p)).unwrap();
        let g4 = cat.price("us-east-1", "g4dn.2xlarge").unwrap();
        assert_eq!(
            (g4.ec2_usd_per_hour, g4.spot_usd_per_hour),
            (0.752, Some(0.30))
        );
        assert_eq!(
            cat.price("us-east-1", "g5.xlarge")
                .unwrap()
                .spot_usd_per_hour,
            None
        );
        std::fs::write(
            &p,
            "region,instance,ec2_usd_per_hour,emr_usd_per_hour,spot_usd_per_hour
             us-east-1,g4dn.2xlarge,0.752,0.188,-1
",
        )
        .unwrap();
        let e = Catalog::load(Some(&p)).err().unwrap().to_string();
        assert!(
            e.contains("spot.csv:2") && e.contains("spot_usd_per_hour"),
            "{e}"
        );
    }

    #[test]
    fn broken_price_files_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.csv");
        std::fs::write(
            &p,
            "region,instance,ec2_usd_per_hour,emr_usd_per_hour\nus-east-1,g5.xlarge,cheap,0\n",
        )
        .unwrap();
        let e = Catalog::load(Some(&p)).err().unwrap().to_string();
        assert!(e.contains("bad.csv:2") && e.contains("cheap"), "{e}");
        std::fs::write(&p, "instance,price\ng5.xlarge,1\n").unwrap();
        let e = format!("{:#}", Catalog::load(Some(&p)).err().unwrap());
        assert!(e.contains("missing column"), "{e}");
        let e = format!(
            "{:#}",
            Catalog::load(Some(&dir.path().join("none.csv")))
                .err()
                .unwrap()
        );
        assert!(e.contains("none.csv"), "{e}");
        // no prices for a region: no costs, but a shape
        let cat = Catalog::load(None).unwrap();
        let r = recommend(
            &cat,
            "mars-1",
            &["g6".to_string()],
            &facts(8, 2, 2),
            1000,
            500,
        );
        assert!(r.cpu_cost_usd.is_none() && r.notes.iter().any(|n| n.contains("mars-1")));
        assert_eq!(r.summary, "1 x g6.4xlarge");
    }
}
