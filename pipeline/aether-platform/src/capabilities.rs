//! What differs between the run platforms, said once: the workflow asks a platform's
//! [`Capabilities`] instead of matching on which platform it is.

use aether_core::config::RunOn;

/// How a run's cost is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostBasis {
    /// The cluster's nodes for the run's wall time (EC2 + the EMR fee per node).
    ClusterNodes,
    /// The run's driver and executor pods' share of the nodes Karpenter launched (EMR on EKS:
    /// no EMR fee per node; vCPU and memory per pod-second).
    PodShare,
    /// Nothing is paid (this machine).
    Free,
}

/// What a platform can and cannot do, as the workflow needs to know before it acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// A cluster can be described by an EMR cluster configuration file (`--config_file`:
    /// instance groups, bootstrap actions, configurations).
    pub cluster_file: bool,
    /// A cluster must be sized: a qualified shape, or instance groups in the cluster file.
    pub needs_size: bool,
    /// Its GPU nodes come from Karpenter NodePools and pod templates written from the shape.
    pub karpenter_capacity: bool,
    /// Tables a job writes can go to a sandboxed warehouse: the run has a metastore of its own
    /// (a shared one, as EMR's Glue catalog, cannot be sandboxed).
    pub own_metastore: bool,
    /// How a run's cost is counted.
    pub cost: CostBasis,
    /// What starting GPU runs pays for, asked before anything is made (`{n}`: how many jobs);
    /// `None` when nothing is paid.
    paid: Option<&'static str>,
}

impl Capabilities {
    /// Amazon EMR: clusters of instance groups, paid per node, Glue or Hive metastore shared.
    pub const EMR: Capabilities = Capabilities {
        cluster_file: true,
        needs_size: true,
        karpenter_capacity: false,
        own_metastore: false,
        cost: CostBasis::ClusterNodes,
        paid: Some(
            "this creates up to {n} EMR GPU cluster(s), one per job, each terminated after its runs",
        ),
    };
    /// EMR on EKS: job runs on a virtual cluster, GPU nodes from Karpenter.
    pub const EMR_EKS: Capabilities = Capabilities {
        cluster_file: false,
        needs_size: true,
        karpenter_capacity: true,
        own_metastore: false,
        cost: CostBasis::PodShare,
        paid: Some(
            "this starts GPU job runs on EMR on EKS for {n} job(s) (Karpenter launches their \
             nodes and removes them after consolidateAfter)",
        ),
    };
    /// This machine's Spark: one process, its own metastore folder, nothing paid.
    pub const LOCAL: Capabilities = Capabilities {
        cluster_file: false,
        needs_size: false,
        karpenter_capacity: false,
        own_metastore: true,
        cost: CostBasis::Free,
        paid: None,
    };

    /// The capabilities of `platform`.
    pub fn of(platform: RunOn) -> Capabilities {
        match platform {
            RunOn::Emr => Self::EMR,
            RunOn::EmrEks => Self::EMR_EKS,
            RunOn::Local => Self::LOCAL,
        }
    }

    /// What GPU runs of `jobs` jobs would pay for, to confirm first; `None`: nothing is paid.
    pub fn paid_notice(&self, jobs: usize) -> Option<String> {
        self.paid.map(|p| p.replace("{n}", &jobs.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paid_platforms_ask_first_and_say_how_many() {
        assert_eq!(Capabilities::of(RunOn::Local).paid_notice(3), None);
        let emr = Capabilities::of(RunOn::Emr).paid_notice(3).unwrap();
        assert!(emr.contains("up to 3 EMR GPU cluster(s)"), "{emr}");
        let eks = Capabilities::of(RunOn::EmrEks).paid_notice(2).unwrap();
        assert!(eks.contains("for 2 job(s)"), "{eks}");
    }

    #[test]
    fn each_platform_says_what_it_can_do() {
        // only EMR reads a cluster file; only local needs no size and keeps its own metastore
        let all = RunOn::ALL.map(Capabilities::of);
        assert_eq!(all.map(|c| c.cluster_file), [true, false, false]);
        assert_eq!(all.map(|c| c.needs_size), [true, true, false]);
        assert_eq!(all.map(|c| c.own_metastore), [false, false, true]);
        assert_eq!(all.map(|c| c.karpenter_capacity), [false, true, false]);
        assert_eq!(
            all.map(|c| c.cost),
            [
                CostBasis::ClusterNodes,
                CostBasis::PodShare,
                CostBasis::Free
            ]
        );
    }
}
