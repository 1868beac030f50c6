//! Which stages each node of a SQL plan ran in.
//!
//! A node's SQL metrics are accumulators; the stages whose tasks (or whose `Stage Info`) carry
//! those accumulators are the node's stages. Nodes without metrics, and exchanges and shuffle
//! reads that sit on a stage boundary, take their stages from their neighbours in the plan graph:
//! the propagation the RAPIDS qualification tool uses (so that "stages with unsupported
//! operators" agree with it), described here in our own words:
//!
//! 1. every node starts from the stages of its accumulators; an exchange keeps only the lowest
//!    (its map side), a shuffle read only the highest, and only when it saw several;
//! 2. a `WholeStageCodegen` cluster passes its stages to members that have none;
//! 3. nodes still without stages take those of their first child that has some (not shuffle
//!    reads), else of their first parent that has some (not exchanges), until nothing changes;
//! 4. a shuffle read left over takes the highest stage among its children.

use std::collections::{BTreeSet, HashMap};

/// One node of a plan graph, as the propagation needs it.
pub struct GraphNode<'a> {
    /// The node id (pre-order, as in `sql_plan_nodes`).
    pub id: i64,
    /// Spark's node name.
    pub name: &'a str,
    /// The cluster (`WholeStageCodegen`) node this node belongs to.
    pub cluster: Option<i64>,
    /// Whether this node is a `WholeStageCodegen` cluster.
    pub is_cluster: bool,
    /// The accumulator ids of its metrics.
    pub accumulators: Vec<i64>,
}

fn base_name(name: &str) -> &str {
    name.strip_prefix("Gpu").unwrap_or(name)
}

fn is_epilogue(name: &str) -> bool {
    matches!(
        base_name(name),
        "Exchange"
            | "BroadcastQueryStage"
            | "ShuffleQueryStage"
            | "TableCacheQueryStage"
            | "ResultQueryStage"
            | "BroadcastExchange"
    )
}

fn is_prologue(name: &str) -> bool {
    base_name(name).contains("ShuffleRead")
}

/// The stages of every node (same order as `nodes`, sorted ids). `edges` are `(child, parent)`
/// pairs in the order the graph was built; `acc_stages` gives an accumulator's stages.
pub fn assign_stages(
    nodes: &[GraphNode],
    edges: &[(i64, i64)],
    acc_stages: impl Fn(i64) -> Vec<i64>,
) -> Vec<Vec<i64>> {
    let idx: HashMap<i64, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    let mut members: HashMap<i64, Vec<usize>> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        if let Some(c) = n.cluster {
            members.entry(c).or_default().push(i);
        }
    }
    // visiting order: top-level nodes in order, a cluster's members just before the cluster
    let mut order: Vec<usize> = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        if n.cluster.is_some_and(|c| idx.contains_key(&c)) {
            continue;
        }
        if n.is_cluster
            && let Some(m) = members.get(&n.id)
        {
            order.extend(m);
        }
        order.push(i);
    }
    let raw: Vec<BTreeSet<i64>> = nodes
        .iter()
        .map(|n| n.accumulators.iter().flat_map(|&a| acc_stages(a)).collect())
        .collect();
    let mut logical: Vec<Option<BTreeSet<i64>>> = vec![None; nodes.len()];

    // returns whether anything changed
    let commit = |i: usize, s: BTreeSet<i64>, logical: &mut Vec<Option<BTreeSet<i64>>>| -> bool {
        if nodes[i].is_cluster {
            if logical[i].as_ref().is_some_and(|l| l.is_superset(&s)) {
                return false;
            }
            let mut new = s;
            if let Some(l) = &logical[i] {
                new.extend(l.iter().copied());
            }
            logical[i] = Some(new.clone());
            if let Some(m) = members.get(&nodes[i].id) {
                for &c in m {
                    if logical[c].is_none() {
                        logical[c] = Some(new.clone());
                    }
                }
            }
            true
        } else {
            let l = logical[i].get_or_insert_with(BTreeSet::new);
            let before = l.len();
            l.extend(s);
            l.len() != before || before == 0
        }
    };

    let mut orphans: Vec<usize> = Vec::new();
    for &i in &order {
        if logical[i].is_some() {
            continue;
        }
        let r = &raw[i];
        let name = nodes[i].name;
        let init: BTreeSet<i64> = if is_epilogue(name) {
            if r.len() <= 1 {
                r.clone()
            } else {
                r.iter().next().copied().into_iter().collect()
            }
        } else if is_prologue(name) {
            if r.len() <= 1 {
                BTreeSet::new()
            } else {
                r.iter().next_back().copied().into_iter().collect()
            }
        } else {
            r.clone()
        };
        if init.is_empty() {
            orphans.push(i);
        } else {
            commit(i, init, &mut logical);
        }
    }

    let first_assigned = |logical: &Vec<Option<BTreeSet<i64>>>,
                          ids: &mut dyn Iterator<Item = i64>| {
        ids.filter_map(|id| idx.get(&id))
            .find_map(|&j| logical[j].clone().filter(|l| !l.is_empty()))
    };
    loop {
        let mut changed = false;
        for &o in &orphans.clone() {
            if logical[o].as_ref().is_some_and(|l| !l.is_empty()) {
                continue;
            }
            let n = &nodes[o];
            let s = if n.is_cluster {
                members
                    .get(&n.id)
                    .and_then(|m| m.iter().find_map(|&c| logical[c].clone()))
            } else {
                let mut s = None;
                if !is_prologue(n.name) {
                    let mut children = edges.iter().filter(|e| e.1 == n.id).map(|e| e.0);
                    s = first_assigned(&logical, &mut children);
                }
                if s.is_none() && !is_epilogue(n.name) {
                    let mut parents = edges.iter().filter(|e| e.0 == n.id).map(|e| e.1);
                    s = first_assigned(&logical, &mut parents);
                }
                s
            };
            if let Some(s) = s.filter(|s| !s.is_empty()) {
                changed |= commit(o, s, &mut logical);
            }
        }
        orphans.retain(|&o| logical[o].as_ref().is_none_or(|l| l.is_empty()));
        if orphans.is_empty() {
            break;
        }
        if !changed {
            // a shuffle read between two assigned sides: the highest stage among its children
            let fallback = orphans.iter().find_map(|&o| {
                if !is_prologue(nodes[o].name) {
                    return None;
                }
                let best = edges
                    .iter()
                    .filter(|e| e.1 == nodes[o].id)
                    .filter_map(|e| idx.get(&e.0))
                    .filter(|&&j| logical[j].as_ref().is_some_and(|l| !l.is_empty()))
                    .flat_map(|&j| {
                        raw[j]
                            .iter()
                            .chain(logical[j].iter().flatten())
                            .copied()
                            .collect::<Vec<_>>()
                    })
                    .max()?;
                Some((o, best))
            });
            match fallback {
                Some((o, best)) => {
                    commit(o, BTreeSet::from([best]), &mut logical);
                }
                None => break,
            }
        }
    }
    logical
        .into_iter()
        .map(|l| l.map(|s| s.into_iter().collect()).unwrap_or_default())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: i64, name: &'static str, cluster: Option<i64>, accs: &[i64]) -> GraphNode<'static> {
        GraphNode {
            id,
            name,
            cluster,
            is_cluster: name.starts_with("WholeStageCodegen"),
            accumulators: accs.to_vec(),
        }
    }

    #[test]
    fn exchange_between_two_stages() {
        // HashAggregate(final) <- Exchange <- WholeStageCodegen(HashAggregate(partial) <- Scan)
        let nodes = vec![
            node(0, "HashAggregate", None, &[10]),
            node(1, "Exchange", None, &[11, 12]),
            node(2, "WholeStageCodegen (1)", None, &[13]),
            node(3, "HashAggregate", Some(2), &[]),
            node(4, "Scan parquet", Some(2), &[14]),
        ];
        let edges = vec![(1, 0), (3, 1), (4, 3)];
        let acc: HashMap<i64, Vec<i64>> = [
            (10, vec![1]),
            (11, vec![0, 1]),
            (12, vec![0]),
            (13, vec![0]),
            (14, vec![0]),
        ]
        .into_iter()
        .collect();
        let s = assign_stages(&nodes, &edges, |a| acc.get(&a).cloned().unwrap_or_default());
        assert_eq!(s, vec![vec![1], vec![0], vec![0], vec![0], vec![0]]);
    }

    #[test]
    fn nodes_without_metrics_take_a_neighbour() {
        let nodes = vec![
            node(0, "AdaptiveSparkPlan", None, &[]),
            node(1, "Project", None, &[]),
            node(2, "Filter", None, &[5]),
        ];
        let edges = vec![(1, 0), (2, 1)];
        let acc: HashMap<i64, Vec<i64>> = [(5, vec![7])].into_iter().collect();
        let s = assign_stages(&nodes, &edges, |a| acc.get(&a).cloned().unwrap_or_default());
        assert_eq!(s, vec![vec![7], vec![7], vec![7]]);
    }

    #[test]
    fn nothing_known_stays_empty() {
        let nodes = vec![node(0, "LocalTableScan", None, &[1])];
        let s = assign_stages(&nodes, &[], |_| Vec::new());
        assert_eq!(s, vec![Vec::<i64>::new()]);
    }
}
