//! `aether validate --phase`: where a GPU run first diverges from its CPU run, from the two
//! event logs alone (the troubleshooting step when a GPU output differs).
//!
//! Each run's final plans are reduced to the operators that mark a point of the data flow, the
//! *checkpoints*: scans (rows and bytes read per source), exchanges (records written per
//! shuffle, rows per broadcast), joins and aggregates (output rows) and write commands (rows
//! written). Plan glue (projections, filters, sorts, codegen and query-stage wrappers, the
//! GPU's row/columnar transitions and batch coalescing) is skipped, so a CPU plan and its GPU
//! plan reduce to the same tree whatever the operators' names (`SortMergeJoin` and
//! `GpuShuffledHashJoin` are both a join, `Exchange` and `GpuColumnarExchange` both an
//! exchange). Checkpoints are matched by their place in that tree (the SQL, by description and
//! occurrence; then the path of checkpoint kinds and child positions from the root), never by
//! stage ids, which AQE and GPU-only stages move. Records are compared, not bytes (a GPU
//! shuffle's bytes differ by design). The first divergence is the first checkpoint, in
//! data-flow order (SQLs in order; inputs before the operator that reads them), whose row
//! count differs.

use std::collections::{BTreeMap, HashMap};

use datafusion::prelude::SessionContext;
use serde::Serialize;

use crate::logs::{load, writes};
use crate::{Error, Result, text_rows as rows};

/// A part of the data flow `--phase` looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Scan,
    Shuffle,
    Join,
    Aggregate,
    Output,
}

impl Phase {
    pub const ALL: [Phase; 5] = [
        Phase::Scan,
        Phase::Shuffle,
        Phase::Join,
        Phase::Aggregate,
        Phase::Output,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Phase::Scan => "scan",
            Phase::Shuffle => "shuffle",
            Phase::Join => "join",
            Phase::Aggregate => "aggregate",
            Phase::Output => "output",
        }
    }
}

/// `--phase`: one phase, or all of them (the first divergence wherever it is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseChoice {
    One(Phase),
    All,
}

impl std::str::FromStr for PhaseChoice {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "all" => Ok(PhaseChoice::All),
            p => Phase::ALL
                .iter()
                .find(|x| x.name() == p)
                .map(|x| PhaseChoice::One(*x))
                .ok_or_else(|| {
                    format!("unknown phase {s:?} (scan, shuffle, join, aggregate, output, all)")
                }),
        }
    }
}

/// One run's side of a checkpoint.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Side {
    pub sql_id: i64,
    pub node_id: i64,
    /// The plan node's name (`GpuScan parquet`, `Exchange`, …).
    pub operator: String,
    /// What it reads or writes, where the plan says (a scan's location, a write's target).
    pub detail: String,
    /// Rows out (a scan's rows read, an exchange's records written, a write's rows written).
    pub rows: Option<i64>,
    /// Bytes read (scans) or written (exchanges, writes), shown only.
    pub bytes: Option<i64>,
    /// The stages it ran in (an exchange: its map side).
    pub stages: Vec<i64>,
}

/// A point of the data flow both runs have.
#[derive(Clone, Debug, Serialize)]
pub struct Checkpoint {
    pub phase: Phase,
    /// The SQL execution, as `description #occurrence`.
    pub sql: String,
    /// Its place in the reduced plan (`Write/Aggregate/Exchange/Aggregate/Join/Exchange[0]`).
    pub path: String,
    pub cpu: Side,
    pub gpu: Side,
}

impl Checkpoint {
    /// The row counts differ (a side without a count does not decide).
    pub fn diverges(&self) -> bool {
        matches!((self.cpu.rows, self.gpu.rows), (Some(a), Some(b)) if a != b)
    }
}

/// Where the runs first part.
#[derive(Clone, Debug, Serialize)]
pub struct Divergence {
    /// Index into [`PhaseReport::checkpoints`].
    pub checkpoint: usize,
    pub phase: Phase,
    /// The GPU run's stage it happened in, and the CPU run's.
    pub gpu_stage: Option<i64>,
    pub cpu_stage: Option<i64>,
    /// The GPU run's operators in that stage, in plan order.
    pub operators: Vec<String>,
    /// Those of them that ran on the CPU in the GPU run (the RAPIDS plugin's fallbacks).
    pub cpu_fallbacks: Vec<String>,
}

/// The phases of a CPU and a GPU run side by side.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseReport {
    pub cpu_app: String,
    pub gpu_app: String,
    /// Whether the GPU run had the RAPIDS plugin enabled.
    pub gpu_plugin: bool,
    /// Every checkpoint both runs have, in data-flow order.
    pub checkpoints: Vec<Checkpoint>,
    /// Checkpoints (or whole SQLs) only one run has: `cpu: …` / `gpu: …`.
    pub unmatched: Vec<String>,
    /// The first divergence among the phases asked for.
    pub first: Option<Divergence>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Scan,
    Exchange,
    Join,
    Aggregate,
    Write,
}

impl Kind {
    fn of(name: &str, is_write: bool) -> Option<Kind> {
        let n = name.strip_prefix("Gpu").unwrap_or(name);
        if is_write {
            Some(Kind::Write)
        } else if n.starts_with("Scan ")
            || n.starts_with("FileGpuScan")
            || n.contains("BatchScan")
            || n.starts_with("FileScan")
            || n == "InMemoryTableScan"
        {
            Some(Kind::Scan)
        } else if (n.contains("Exchange") && !n.starts_with("Reused")) || n == "ColumnarExchange" {
            Some(Kind::Exchange)
        } else if n.contains("Join") || n == "CartesianProduct" {
            Some(Kind::Join)
        } else if n.ends_with("Aggregate") {
            Some(Kind::Aggregate)
        } else {
            None
        }
    }
    fn label(self) -> &'static str {
        match self {
            Kind::Scan => "Scan",
            Kind::Exchange => "Exchange",
            Kind::Join => "Join",
            Kind::Aggregate => "Aggregate",
            Kind::Write => "Write",
        }
    }
    fn phase(self) -> Phase {
        match self {
            Kind::Scan => Phase::Scan,
            Kind::Exchange => Phase::Shuffle,
            Kind::Join => Phase::Join,
            Kind::Aggregate => Phase::Aggregate,
            Kind::Write => Phase::Output,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Node {
    parent: Option<i64>,
    name: String,
    desc: String,
    stages: Vec<i64>,
    metrics: HashMap<String, i64>,
}

/// A run's checkpoints in one SQL, in data-flow order: (path, kind, the run's side).
type Points = Vec<(String, Kind, Side)>;

/// One run, reduced: per SQL (in order) its checkpoints in data-flow order, keyed by path.
struct Run {
    app: String,
    plugin: bool,
    /// (SQL key, [(path, kind, side)])
    sqls: Vec<(String, Points)>,
    /// Per stage, the operators that ran in it (node order), and the GPU run's CPU fallbacks.
    stage_ops: BTreeMap<i64, Vec<String>>,
    fallbacks: BTreeMap<i64, Vec<String>>,
}

fn int(v: &Option<String>) -> Option<i64> {
    v.as_deref().and_then(|s| s.trim().parse().ok())
}

fn stage_list(v: &Option<String>) -> Vec<i64> {
    v.as_deref()
        .unwrap_or("")
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

/// What a scan reads: the `Location: …[paths]` of its description, else its name.
fn scan_source(name: &str, desc: &str) -> String {
    if let Some(i) = desc.find("Location: ") {
        let rest = &desc[i + "Location: ".len()..];
        if let (Some(a), Some(b)) = (rest.find('['), rest.find(']'))
            && a < b
        {
            return rest[a + 1..b].to_string();
        }
        return rest.split(", ").next().unwrap_or(rest).to_string();
    }
    name.to_string()
}

fn rows_of(kind: Kind, m: &HashMap<String, i64>) -> Option<i64> {
    let pick = |keys: &[&str]| keys.iter().find_map(|k| m.get(*k).copied());
    match kind {
        Kind::Exchange => pick(&[
            "shuffle records written",
            "number of output rows",
            "output rows",
        ]),
        _ => pick(&["number of output rows", "output rows"]),
    }
}

fn bytes_of(kind: Kind, m: &HashMap<String, i64>) -> Option<i64> {
    let pick = |keys: &[&str]| keys.iter().find_map(|k| m.get(*k).copied());
    match kind {
        Kind::Scan => pick(&["size of files read", "size of files read total"]),
        Kind::Exchange => pick(&["shuffle bytes written", "data size"]),
        Kind::Write => pick(&["written output"]),
        _ => None,
    }
}

async fn reduce(log: &str) -> Result<Run> {
    let ctx: SessionContext = load(log).await?;
    let app = rows(&ctx, "SELECT app_id FROM applications")
        .await?
        .into_iter()
        .filter_map(|r| r[0].clone())
        .collect::<Vec<_>>();
    if app.len() != 1 {
        return Err(Error::Input(format!(
            "{log}: {} applications; give one run's event log",
            app.len()
        )));
    }
    let plugin = rows(
        &ctx,
        "SELECT value FROM properties WHERE category = 'spark' AND key = 'spark.plugins'",
    )
    .await?
    .iter()
    .any(|r| {
        r[0].as_deref()
            .is_some_and(|v| v.contains("com.nvidia.spark.SQLPlugin"))
    });
    let write_nodes: std::collections::HashSet<(i64, i64)> = writes(&ctx)
        .await?
        .into_iter()
        .map(|(s, n, _)| (s, n))
        .collect();
    let write_targets: HashMap<(i64, i64), String> = writes(&ctx)
        .await?
        .into_iter()
        .map(|(s, n, t)| {
            (
                (s, n),
                t.table
                    .clone()
                    .or(t.path.clone())
                    .unwrap_or(t.command.clone()),
            )
        })
        .collect();
    // final plans, their row/byte metrics
    let mut plans: BTreeMap<i64, BTreeMap<i64, Node>> = BTreeMap::new();
    for r in rows(
        &ctx,
        "SELECT sql_id, node_id, parent_node_id, node_name, description,
                CAST(stage_ids AS VARCHAR)
         FROM sql_plan_nodes WHERE is_final ORDER BY sql_id, node_id",
    )
    .await?
    {
        let (Some(sql), Some(id)) = (int(&r[0]), int(&r[1])) else {
            continue;
        };
        plans.entry(sql).or_default().insert(
            id,
            Node {
                parent: int(&r[2]),
                name: r[3].as_deref().unwrap_or("").trim().to_string(),
                desc: r[4].clone().unwrap_or_default(),
                stages: stage_list(&r[5]),
                metrics: HashMap::new(),
            },
        );
    }
    for r in rows(
        &ctx,
        "SELECT \"sqlID\", \"nodeID\", name, total FROM profile_sql_plan_metrics_for_application
         WHERE name IN ('number of output rows', 'output rows', 'shuffle records written',
                        'size of files read', 'size of files read total',
                        'shuffle bytes written', 'data size', 'written output')",
    )
    .await?
    {
        if let (Some(sql), Some(id), Some(name), Some(v)) =
            (int(&r[0]), int(&r[1]), r[2].clone(), int(&r[3]))
            && let Some(n) = plans.get_mut(&sql).and_then(|p| p.get_mut(&id))
        {
            n.metrics.insert(name, v);
        }
    }
    let descs: HashMap<i64, String> = rows(
        &ctx,
        "SELECT sql_id, description FROM sql_executions ORDER BY sql_id",
    )
    .await?
    .into_iter()
    .filter_map(|r| Some((int(&r[0])?, r[1].clone().unwrap_or_default())))
    .collect();
    let mut occurrences: HashMap<String, usize> = HashMap::new();
    let mut sqls = Vec::new();
    let mut stage_ops: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (sql, nodes) in &plans {
        for n in nodes.values() {
            if n.name.starts_with("WholeStageCodegen") || n.name == "InputAdapter" {
                continue;
            }
            for s in &n.stages {
                let ops = stage_ops.entry(*s).or_default();
                if !ops.contains(&n.name) {
                    ops.push(n.name.clone());
                }
            }
        }
        let kind_of = |id: i64, n: &Node| Kind::of(&n.name, write_nodes.contains(&(*sql, id)));
        // the checkpoint ancestor of each node, then each checkpoint's children in plan order
        let nearest = |mut id: i64| -> Option<i64> {
            loop {
                let p = nodes.get(&id)?.parent?;
                if nodes.get(&p).is_some_and(|n| kind_of(p, n).is_some()) {
                    return Some(p);
                }
                id = p;
            }
        };
        let mut children: BTreeMap<Option<i64>, Vec<i64>> = BTreeMap::new();
        for (id, n) in nodes {
            if kind_of(*id, n).is_some() {
                children.entry(nearest(*id)).or_default().push(*id);
            }
        }
        let mut points = Vec::new();
        // post-order: a checkpoint after the ones it reads from
        fn walk(
            parent: Option<i64>,
            prefix: &str,
            children: &BTreeMap<Option<i64>, Vec<i64>>,
            visit: &mut dyn FnMut(i64, String),
            kind: &dyn Fn(i64) -> Kind,
        ) {
            for (i, id) in children.get(&parent).into_iter().flatten().enumerate() {
                let path = format!("{prefix}/{}[{i}]", kind(*id).label());
                walk(Some(*id), &path, children, visit, kind);
                visit(*id, path);
            }
        }
        let kind = |id: i64| kind_of(id, &nodes[&id]).unwrap_or(Kind::Scan);
        walk(
            None,
            "",
            &children,
            &mut |id, path| {
                let n = &nodes[&id];
                let k = kind(id);
                let detail = match k {
                    Kind::Scan => scan_source(&n.name, &n.desc),
                    Kind::Write => write_targets.get(&(*sql, id)).cloned().unwrap_or_default(),
                    _ => String::new(),
                };
                points.push((
                    path,
                    k,
                    Side {
                        sql_id: *sql,
                        node_id: id,
                        operator: n.name.clone(),
                        detail,
                        rows: rows_of(k, &n.metrics),
                        bytes: bytes_of(k, &n.metrics),
                        stages: n.stages.clone(),
                    },
                ));
            },
            &kind,
        );
        if points.is_empty() {
            continue;
        }
        let d = descs.get(sql).cloned().unwrap_or_default();
        let o = occurrences.entry(d.clone()).or_default();
        *o += 1;
        sqls.push((format!("{d} #{o}"), points));
    }
    let mut fallbacks: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    if plugin {
        aether_engine::views::register_views_materialized(
            &ctx,
            &Default::default(),
            &["profile_cpu_fallbacks"],
        )
        .await
        .map_err(|e| Error::Query(e.to_string()))?;
        for r in rows(
            &ctx,
            "SELECT node_name, stages FROM profile_cpu_fallbacks ORDER BY sql_id, node_id",
        )
        .await?
        {
            for s in stage_list(&r[1]) {
                let f = fallbacks.entry(s).or_default();
                let name = r[0].as_deref().unwrap_or("").trim().to_string();
                if !f.contains(&name) {
                    f.push(name);
                }
            }
        }
    }
    Ok(Run {
        app: app[0].clone(),
        plugin,
        sqls,
        stage_ops,
        fallbacks,
    })
}

/// Compare the CPU and the GPU run's event logs phase by phase; `choice` picks the phases the
/// first divergence is looked for in.
pub async fn phases(cpu_log: &str, gpu_log: &str, choice: PhaseChoice) -> Result<PhaseReport> {
    let cpu = reduce(cpu_log).await?;
    let gpu = reduce(gpu_log).await?;
    let mut checkpoints = Vec::new();
    let mut unmatched = Vec::new();
    let gpu_sqls: HashMap<&str, &Points> = gpu.sqls.iter().map(|(k, v)| (k.as_str(), v)).collect();
    for (sql, points) in &cpu.sqls {
        let Some(theirs) = gpu_sqls.get(sql.as_str()) else {
            unmatched.push(format!("cpu: SQL {sql}"));
            continue;
        };
        let by_path: HashMap<&str, &Side> =
            theirs.iter().map(|(p, _, s)| (p.as_str(), s)).collect();
        for (path, kind, side) in points {
            match by_path.get(path.as_str()) {
                Some(g) => checkpoints.push(Checkpoint {
                    phase: kind.phase(),
                    sql: sql.clone(),
                    path: path.clone(),
                    cpu: side.clone(),
                    gpu: (*g).clone(),
                }),
                None => unmatched.push(format!("cpu: {sql} {path} ({})", side.operator)),
            }
        }
        let ours: std::collections::HashSet<&str> =
            points.iter().map(|(p, _, _)| p.as_str()).collect();
        for (path, _, side) in theirs.iter() {
            if !ours.contains(path.as_str()) {
                unmatched.push(format!("gpu: {sql} {path} ({})", side.operator));
            }
        }
    }
    let cpu_keys: std::collections::HashSet<&str> =
        cpu.sqls.iter().map(|(k, _)| k.as_str()).collect();
    for (sql, _) in &gpu.sqls {
        if !cpu_keys.contains(sql.as_str()) {
            unmatched.push(format!("gpu: SQL {sql}"));
        }
    }
    let first = checkpoints
        .iter()
        .enumerate()
        .find(|(_, c)| {
            c.diverges()
                && match choice {
                    PhaseChoice::All => true,
                    PhaseChoice::One(p) => c.phase == p,
                }
        })
        .map(|(i, c)| {
            let gpu_stage = c.gpu.stages.first().copied();
            Divergence {
                checkpoint: i,
                phase: c.phase,
                gpu_stage,
                cpu_stage: c.cpu.stages.first().copied(),
                operators: gpu_stage
                    .and_then(|s| gpu.stage_ops.get(&s).cloned())
                    .unwrap_or_default(),
                cpu_fallbacks: gpu_stage
                    .and_then(|s| gpu.fallbacks.get(&s).cloned())
                    .unwrap_or_default(),
            }
        });
    Ok(PhaseReport {
        cpu_app: cpu.app,
        gpu_app: gpu.app,
        gpu_plugin: gpu.plugin,
        checkpoints,
        unmatched,
        first,
    })
}

fn n(v: Option<i64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// The report as text: the checkpoints of the phases asked for, then the verdict.
pub fn render(r: &PhaseReport, choice: PhaseChoice) -> String {
    let mut s = format!(
        "CPU run {} vs GPU run {}{}\n",
        r.cpu_app,
        r.gpu_app,
        if r.gpu_plugin {
            ""
        } else {
            " (the RAPIDS plugin was not enabled in it)"
        }
    );
    let shown: Vec<&Checkpoint> = r
        .checkpoints
        .iter()
        .filter(|c| match choice {
            PhaseChoice::All => true,
            PhaseChoice::One(p) => c.phase == p,
        })
        .collect();
    let mut t = vec![vec![
        "phase".to_string(),
        "sql".into(),
        "operator (cpu / gpu)".into(),
        "reads / writes".into(),
        "rows cpu".into(),
        "rows gpu".into(),
        "bytes cpu".into(),
        "bytes gpu".into(),
        "stages cpu / gpu".into(),
        "".into(),
    ]];
    for c in &shown {
        let op = if c.cpu.operator == c.gpu.operator {
            c.cpu.operator.clone()
        } else {
            format!("{} / {}", c.cpu.operator, c.gpu.operator)
        };
        let detail = if c.cpu.detail == c.gpu.detail {
            c.cpu.detail.clone()
        } else {
            format!("{} / {}", c.cpu.detail, c.gpu.detail)
        };
        let stages = |v: &[i64]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        t.push(vec![
            c.phase.name().to_string(),
            c.sql.clone(),
            op,
            detail,
            n(c.cpu.rows),
            n(c.gpu.rows),
            n(c.cpu.bytes),
            n(c.gpu.bytes),
            format!("{} / {}", stages(&c.cpu.stages), stages(&c.gpu.stages)),
            if c.diverges() { "DIFFERS" } else { "" }.into(),
        ]);
    }
    let widths: Vec<usize> = (0..t[0].len())
        .map(|i| {
            t.iter()
                .map(|r| r[i].chars().count().min(60))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &t {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| {
                let c: String = c.chars().take(60).collect();
                format!("{c:<w$}")
            })
            .collect();
        s.push_str(cells.join("  ").trim_end());
        s.push('\n');
    }
    for u in &r.unmatched {
        s.push_str(&format!("only in one run: {u}\n"));
    }
    let scope = match choice {
        PhaseChoice::All => "any phase".to_string(),
        PhaseChoice::One(p) => format!("the {} phase", p.name()),
    };
    match &r.first {
        None => s.push_str(&format!(
            "no divergence in {scope} ({} checkpoints compared)\n",
            shown.len()
        )),
        Some(d) => {
            let c = &r.checkpoints[d.checkpoint];
            s.push_str(&format!(
                "first divergence: phase {}, {} in {} ({}): {} rows on the CPU, {} on the GPU; GPU stage {} (CPU stage {})\n",
                d.phase.name(),
                c.gpu.operator,
                c.sql,
                c.path,
                n(c.cpu.rows),
                n(c.gpu.rows),
                n(d.gpu_stage),
                n(d.cpu_stage),
            ));
            if !d.operators.is_empty() {
                s.push_str(&format!(
                    "  operators in that stage: {}\n",
                    d.operators.join(", ")
                ));
            }
            if r.gpu_plugin {
                s.push_str(&format!(
                    "  CPU fallbacks there: {}\n",
                    if d.cpu_fallbacks.is_empty() {
                        "none".to_string()
                    } else {
                        d.cpu_fallbacks.join(", ")
                    }
                ));
            }
        }
    }
    s
}
