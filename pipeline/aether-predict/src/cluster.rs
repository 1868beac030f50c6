//! EMR cluster shapes and costs: the CPU cluster an app ran on (inferred from its log), the GPU
//! cluster the reference tool recommends, and aether's ranking of GPU instance types by
//! estimated cost. Instance specs come from `datasets/reference/emr/` (compiled in), prices from
//! [`crate::prices`] (AWS's list prices, or your terms).

use std::collections::BTreeMap;

use crate::error::Result;
use aether_core::config::Market;
use serde::Serialize;

use crate::prices::{PriceBook, Terms};

const CATALOG: &str = include_str!("../../../datasets/reference/emr/emr-instance-catalog.json");
const GPU_INSTANCES: &str = include_str!("../../../datasets/reference/emr/gpu-instances.csv");
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

/// Instance specs and prices.
pub struct Catalog {
    instances: BTreeMap<String, Instance>,
    /// What an hour of each type costs (list prices, or your terms; its `label` says which).
    pub prices: PriceBook,
}

impl Catalog {
    /// The built-in catalog, priced with `terms` (AWS's list prices, a prices file's rows over
    /// them, your market and discounts).
    pub fn load(terms: &Terms) -> Result<Catalog> {
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
            let rec = rec.map_err(|source| crate::error::PredictError::Csv {
                what: "the GPU instance catalog".into(),
                source,
            })?;
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
        let prices = PriceBook::load(terms)?;
        Ok(Catalog { instances, prices })
    }

    pub fn instance(&self, name: &str) -> Option<&Instance> {
        self.instances.get(name)
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
    /// The market its worker nodes are priced at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub market: Option<Market>,
    pub fits_memory: bool,
}

impl GpuShape {
    /// `N x instance`.
    pub fn summary(&self) -> String {
        format!("{} x {}", self.nodes, self.instance)
    }

    /// The GPU worker the Spark configs are for (EMR keeps 30 % of a node's memory); its GPU
    /// model by name, else one of its memory.
    pub fn worker(&self) -> crate::tuner::Worker {
        let gpu = crate::worker::gpu_model(&self.gpu)
            .copied()
            .unwrap_or(crate::worker::GpuModel {
                memory_mib: self.gpu_memory_mib,
                ..crate::tuner::Worker::default().gpu
            });
        crate::tuner::Worker {
            instance: self.instance.clone(),
            cores: self.cores_per_executor * self.gpus_per_node.max(1),
            memory_mib: self.node_memory_mib,
            gpus: self.gpus_per_node.max(1),
            gpu_memory_mib: self.gpu_memory_mib,
            reserved_fraction: 0.3,
            gpu,
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
    /// The GPU run's cost and the savings at the ends of the speedup range (the low cost at the
    /// high speedup); the point estimate's where no range was set.
    pub gpu_cost_low_usd: Option<f64>,
    pub gpu_cost_high_usd: Option<f64>,
    pub savings_low_usd: Option<f64>,
    pub savings_high_usd: Option<f64>,
    /// What the costs are at (list prices, or your terms), and whether they are list prices.
    pub price_source: String,
    pub list_prices: bool,
    pub notes: Vec<String>,
}

impl ClusterRecommendation {
    /// Cost the ends of the speedup range `low..high` around the point estimate `speedup`.
    pub fn with_range(&mut self, speedup: f64, low: f64, high: f64) {
        let (Some(cpu), Some(gpu)) = (self.cpu_cost_usd, self.gpu_cost_usd) else {
            return;
        };
        let (s_low, s_high) =
            aether_core::cost::savings_range(cpu, gpu, speedup, Some(low), Some(high));
        self.savings_low_usd = Some(s_low);
        self.savings_high_usd = Some(s_high);
        self.gpu_cost_high_usd = Some(cpu - s_low);
        self.gpu_cost_low_usd = Some(cpu - s_high);
    }
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
/// ([`crate::tuner::memory_fits`]) and the GPU has at least 16 GiB.
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
        market: None,
        fits_memory: false,
    };
    s.fits_memory = crate::tuner::memory_fits(&s.worker()) && inst.gpu_memory_mib >= 16384;
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
    let book = &cat.prices;
    let market = book.worker_market();
    // the primary node is on-demand; the workers on your market
    let driver = book.hourly(region, DRIVER, Market::OnDemand, true);
    let mut notes = Vec::new();
    let cost = |s: &mut GpuShape| {
        if let (Some(p), Some(d)) = (book.hourly(region, &s.instance, market, true), driver) {
            let hourly = s.nodes as f64 * p.usd + d.usd;
            s.hourly_usd = Some(hourly);
            s.cost_usd = Some(hourly * hours(gpu_duration_ms));
            s.market = Some(p.market);
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
    let cpu_worker = source
        .worker_instance
        .as_deref()
        .and_then(|w| book.hourly(region, w, market, true));
    let cpu_hourly = cpu_worker
        .zip(driver)
        .map(|(p, d)| source.num_worker_nodes as f64 * p.usd + d.usd);
    if market == Market::Spot {
        let mut on_demand: Vec<&str> = candidates
            .iter()
            .filter(|c| c.market == Some(Market::OnDemand))
            .map(|c| c.instance.as_str())
            .collect();
        if cpu_worker.is_some_and(|p| p.market == Market::OnDemand) {
            on_demand.extend(source.worker_instance.as_deref());
        }
        if !on_demand.is_empty() {
            let more = on_demand.len().saturating_sub(4);
            on_demand.truncate(4);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            notes.push(format!(
                "no spot price for {}{more} in the prices file: priced on-demand",
                on_demand.join(", ")
            ));
        }
    }
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
        gpu_cost_low_usd: gpu_cost,
        gpu_cost_high_usd: gpu_cost,
        savings_low_usd: savings,
        savings_high_usd: savings,
        price_source: book.label.clone(),
        list_prices: book.is_list(),
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
        let cat = Catalog::load(&Terms::list()).unwrap();
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
        let cat = Catalog::load(&Terms::list()).unwrap();
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
        let cat = Catalog::load(&Terms::list().with_file(Some(&p))).unwrap();
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
    fn spot_workers_rank_at_their_spot_price_and_the_cost_range_follows_the_speedup() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("spot.csv");
        std::fs::write(
            &p,
            "region,instance,ec2_usd_per_hour,emr_usd_per_hour,spot_usd_per_hour\n\
             us-east-1,g5.4xlarge,1.624,0.406,0.05\n",
        )
        .unwrap();
        let terms = Terms {
            market: Market::Spot,
            ..Terms::list().with_file(Some(&p))
        };
        let cat = Catalog::load(&terms).unwrap();
        let fams: Vec<String> = ["g5", "g6"].iter().map(|s| s.to_string()).collect();
        let mut r = recommend(
            &cat,
            "us-east-1",
            &fams,
            &facts(8, 4, 4),
            3_600_000,
            1_800_000,
        );
        assert_eq!(r.recommended.instance, "g5.4xlarge");
        assert_eq!(r.recommended.market, Some(Market::Spot));
        assert!(!r.list_prices && r.price_source.contains("spot"));
        // 2 nodes at spot + the EMR fee, the primary on-demand, for half an hour
        let gpu = (r.recommended.nodes as f64 * (0.05 + 0.406) + 0.624 + 0.156) * 0.5;
        assert!((r.gpu_cost_usd.unwrap() - gpu).abs() < 1e-9, "{r:?}");
        // the others have no spot price: on-demand, and said
        assert!(
            r.notes
                .iter()
                .any(|n| n.starts_with("no spot price for") && n.ends_with("priced on-demand")),
            "{:?}",
            r.notes
        );
        // a 2x prediction with a 1x..4x range: the GPU run costs twice as much at the low end,
        // half as much at the high end
        let cpu = r.cpu_cost_usd.unwrap();
        r.with_range(2.0, 1.0, 4.0);
        assert!((r.gpu_cost_high_usd.unwrap() - 2.0 * gpu).abs() < 1e-9);
        assert!((r.gpu_cost_low_usd.unwrap() - 0.5 * gpu).abs() < 1e-9);
        assert!((r.savings_low_usd.unwrap() - (cpu - 2.0 * gpu)).abs() < 1e-9);
        assert!((r.savings_high_usd.unwrap() - (cpu - 0.5 * gpu)).abs() < 1e-9);
    }

    #[test]
    fn a_region_without_prices_has_a_shape_and_no_costs() {
        // no prices for a region: no costs, but a shape
        let cat = Catalog::load(&Terms::list()).unwrap();
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
