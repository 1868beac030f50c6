//! Plans made once per process, run in every session that asks the same question.
//!
//! Planning a view costs far more than running it over a few small logs (SQL to a logical plan,
//! its optimizer, the physical planner and its rules: three quarters of a qualify session over
//! dozens of logs). A session made by [`session_with_cached_plans`] keeps its tables' rows in
//! [`Slots`], an extension of its configuration, and registers each table as a [`SlotTable`],
//! whose scan ([`SlotExec`]) reads the rows of whatever session runs it. A plan over slots
//! holds no data and no statistics of it (they are unknown, so the optimizer folds nothing
//! data-dependent into it): [`collect`] keeps it after a run, its state reset, and runs it
//! again for the same statement over tables of the same names and schemas in any session of
//! this process.
//!
//! The scans give estimates of their rows and bytes (inexact, so that nothing is folded from
//! them, as an in-memory table's exact ones would let the optimizer answer `COUNT(*)`): the
//! physical planner puts the smaller side of a join on its build side as it does over in-memory
//! tables. A kept plan keeps the choices made for its first session's tables; the results are
//! the same whichever side a join builds.
//!
//! Only plans made of operators that a reset makes new ([`REUSABLE`]) are kept: an operator that
//! holds what one run built (a nested-loop join's inner table, a repartition's channels) is
//! planned anew each time. Dynamic filters, which one run fills for the next, are off in such
//! sessions. A plan is run at most [`MAX_RUNS`] times (each run leaves its operators' metrics
//! behind), then planned again.

use crate::Result;
use crate::sqltext::{lists_catalog, mentions, skip_leading_comments};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Statistics;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::coop::cooperative;
use datafusion::physical_plan::execution_plan::{
    Boundedness, EmissionType, SchedulingType, reset_plan_states,
};
use datafusion::physical_plan::memory::MemoryStream;
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use datafusion::prelude::SessionContext;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex};

/// The operators whose plans are kept: each holds nothing of a run once reset (most hold
/// nothing at all; a hash join's build side, a sort's and a scalar subquery's results are
/// cleared by the reset).
pub const REUSABLE: &[&str] = &[
    "SlotExec",
    "ProjectionExec",
    "FilterExec",
    "AggregateExec",
    "HashJoinExec",
    "SortMergeJoinExec",
    "CrossJoinExec",
    "SortExec",
    "SortPreservingMergeExec",
    "CoalesceBatchesExec",
    "CoalescePartitionsExec",
    "CooperativeExec",
    "UnionExec",
    "UnnestExec",
    "BoundedWindowAggExec",
    "WindowAggExec",
    "GlobalLimitExec",
    "LocalLimitExec",
    "EmptyExec",
    "PlaceholderRowExec",
    "ScalarSubqueryExec",
];

/// The most runs of one plan before it is planned again (each run's operator metrics stay in
/// the plan: a bound on what a long run of sessions keeps).
pub const MAX_RUNS: u32 = 16;

/// The most plans kept for one statement (one per session running it at the same time).
const MAX_COPIES: usize = 4;

/// The most statements kept; past that the cache starts over.
const MAX_STATEMENTS: usize = 512;

/// The rows of a session's tables, by name (the session's configuration extension).
#[derive(Debug, Default)]
pub struct Slots {
    tables: Mutex<HashMap<String, Slot>>,
}

#[derive(Debug)]
struct Slot {
    /// A hash of the table's schema: a plan is kept for the schemas it was planned over.
    schema_hash: u64,
    batches: Arc<Vec<RecordBatch>>,
}

impl Slots {
    fn set(&self, name: &str, schema: &SchemaRef, batches: Vec<RecordBatch>) {
        let mut h = std::hash::DefaultHasher::new();
        schema.hash(&mut h);
        let slot = Slot {
            schema_hash: h.finish(),
            batches: Arc::new(batches),
        };
        if let Ok(mut t) = self.tables.lock() {
            t.insert(name.to_string(), slot);
        }
    }

    fn batches(&self, name: &str) -> Option<Arc<Vec<RecordBatch>>> {
        let t = self.tables.lock().ok()?;
        t.get(name).map(|s| s.batches.clone())
    }

    fn schema_hash(&self, name: &str) -> Option<u64> {
        let t = self.tables.lock().ok()?;
        t.get(name).map(|s| s.schema_hash)
    }
}

/// A new session (see [`crate::session_with_partitions`]) whose tables are registered as
/// slots ([`register_slot`]) and whose statements run through [`collect`] reuse the plans of
/// earlier sessions. Dynamic filters are off: one run would leave its bounds in a kept plan.
///
/// With `AETHER_PLAN_CACHE=off` in the environment, a plain session (every statement planned
/// anew, tables in memory): to compare the two.
pub fn session_with_cached_plans(partitions: usize) -> SessionContext {
    if std::env::var("AETHER_PLAN_CACHE").is_ok_and(|v| v == "off") {
        return crate::session_with_partitions(partitions);
    }
    let mut cfg = crate::session_config(partitions).with_extension(Arc::new(Slots::default()));
    let o = &mut cfg.options_mut().optimizer;
    o.enable_dynamic_filter_pushdown = false;
    o.enable_join_dynamic_filter_pushdown = false;
    o.enable_topk_dynamic_filter_pushdown = false;
    o.enable_aggregate_dynamic_filter_pushdown = false;
    crate::session_from_config(cfg)
}

fn slots_of(ctx: &SessionContext) -> Option<Arc<Slots>> {
    ctx.state_ref().read().config().get_extension::<Slots>()
}

/// The schema and rows [`register_slot`] gives back, untouched, in a session without slots.
pub type NotSlotted = Option<(SchemaRef, Vec<RecordBatch>)>;

/// Register `batches` as table `name` of a session made by [`session_with_cached_plans`]
/// (replacing any table of that name): `None`. In any other session nothing is done, and the
/// schema and batches come back (`Some`), for the caller to register some other way.
pub fn register_slot(
    ctx: &SessionContext,
    name: &str,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<NotSlotted> {
    let Some(slots) = slots_of(ctx) else {
        return Ok(Some((schema, batches)));
    };
    // as an in-memory table checks its rows
    if batches.iter().any(|b| !schema.contains(&b.schema())) {
        return Err(crate::EngineError::Other(format!(
            "table {name}: rows of another schema than the table's"
        )));
    }
    slots.set(name, &schema, batches);
    ctx.deregister_table(name)?;
    ctx.register_table(
        name,
        Arc::new(SlotTable {
            name: name.to_string(),
            schema,
        }),
    )?;
    Ok(None)
}

/// A table whose rows are those of the session that runs the scan ([`Slots`]).
#[derive(Debug)]
pub struct SlotTable {
    name: String,
    schema: SchemaRef,
}

#[async_trait::async_trait]
impl TableProvider for SlotTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let batches = state
            .config()
            .get_extension::<Slots>()
            .and_then(|s| s.batches(&self.name))
            .unwrap_or_default();
        Ok(Arc::new(SlotExec::new(
            &self.name,
            &self.schema,
            projection.cloned(),
            &batches,
        )?))
    }
}

/// The scan of a [`SlotTable`]: the rows the running session's [`Slots`] hold under its name,
/// in one partition, as an in-memory table of one partition reads them (in batches of the
/// session's batch size), with its statistics made inexact.
#[derive(Debug)]
pub struct SlotExec {
    name: String,
    projection: Option<Vec<usize>>,
    properties: Arc<PlanProperties>,
    /// Estimates from the rows of the session that planned it.
    statistics: Arc<Statistics>,
}

impl SlotExec {
    fn new(
        name: &str,
        schema: &SchemaRef,
        projection: Option<Vec<usize>>,
        batches: &[RecordBatch],
    ) -> datafusion::error::Result<Self> {
        let projected = match &projection {
            Some(p) => Arc::new(schema.project(p)?),
            None => schema.clone(),
        };
        // an in-memory table's statistics, made inexact
        let statistics = datafusion::physical_plan::common::compute_record_batch_statistics(
            &[batches.to_vec()],
            schema,
            projection.clone(),
        )
        .to_inexact();
        Ok(SlotExec {
            name: name.to_string(),
            projection,
            statistics: Arc::new(statistics),
            properties: Arc::new(
                PlanProperties::new(
                    EquivalenceProperties::new(projected),
                    Partitioning::UnknownPartitioning(1),
                    EmissionType::Incremental,
                    Boundedness::Bounded,
                )
                .with_scheduling_type(SchedulingType::Cooperative),
            ),
        })
    }
}

impl DisplayAs for SlotExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "SlotExec: {}", self.name)
    }
}

impl ExecutionPlan for SlotExec {
    fn name(&self) -> &'static str {
        "SlotExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> datafusion::error::Result<TreeNodeRecursion>,
    ) -> datafusion::error::Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> datafusion::error::Result<Arc<Statistics>> {
        Ok(self.statistics.clone())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> datafusion::error::Result<SendableRecordBatchStream> {
        let missing = || {
            datafusion::error::DataFusionError::Execution(format!(
                "table {}: no rows in this session (partition {partition})",
                self.name
            ))
        };
        if partition != 0 {
            return Err(missing());
        }
        let slots = context
            .session_config()
            .get_extension::<Slots>()
            .ok_or_else(missing)?;
        // as an in-memory table's scan gives them: cut to the batch size (a table is one
        // batch; the operators above size their buffers by the batches they get)
        let size = context.session_config().batch_size().max(1);
        let mut sliced = Vec::new();
        for b in slots.batches(&self.name).ok_or_else(missing)?.iter() {
            let mut at = 0;
            while at < b.num_rows() {
                let len = size.min(b.num_rows() - at);
                sliced.push(b.slice(at, len));
                at += len;
            }
        }
        Ok(Box::pin(cooperative(MemoryStream::try_new(
            sliced,
            self.schema(),
            self.projection.clone(),
        )?)))
    }
}

/// A kept plan, with the schema its statement's logical plan gave.
struct Kept {
    plan: Arc<dyn ExecutionPlan>,
    schema: SchemaRef,
    runs: u32,
}

static KEPT: LazyLock<Mutex<HashMap<String, Vec<Kept>>>> = LazyLock::new(Default::default);

/// The key under which `sql`'s plan is kept in `ctx`: the statement, the session's partitions
/// and batch size, and the name and schema of every table it names; `None` when its plan is not
/// to be kept: not a session with slots, not a query, or it names a table that is not a slot
/// (a view, an in-memory table) or lists the catalog.
fn key(ctx: &SessionContext, sql: &str) -> Option<String> {
    let slots = slots_of(ctx)?;
    let lower = sql.to_ascii_lowercase();
    let head = skip_leading_comments(&lower);
    if !(head.starts_with("select") || head.starts_with("with")) || lists_catalog(&lower) {
        return None;
    }
    let (catalog, schema, partitions, batch) = {
        let state = ctx.state_ref();
        let state = state.read();
        let o = state.config().options();
        (
            o.catalog.default_catalog.clone(),
            o.catalog.default_schema.clone(),
            o.execution.target_partitions,
            o.execution.batch_size,
        )
    };
    let mut names = ctx.catalog(&catalog)?.schema(&schema)?.table_names();
    names.sort();
    let mut key = format!("{partitions} {batch}");
    for name in names {
        if mentions(&lower, &name.to_ascii_lowercase()) {
            let hash = slots.schema_hash(&name)?;
            key.push_str(&format!(" {name}:{hash:x}"));
        }
    }
    key.push('\n');
    key.push_str(sql);
    Some(key)
}

/// Whether every operator of `plan` is one of [`REUSABLE`].
fn reusable(plan: &Arc<dyn ExecutionPlan>) -> bool {
    REUSABLE.contains(&plan.name()) && plan.children().into_iter().all(reusable)
}

/// Plan and run one statement, as `ctx.sql(sql)` then `collect` do; in a session made by
/// [`session_with_cached_plans`], a query over its slots runs a plan kept from an earlier run
/// when there is one free, and its plan is kept for the next. Returns the schema of the
/// statement's logical plan and the rows.
pub async fn collect(ctx: &SessionContext, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let Some(key) = key(ctx, sql) else {
        let df = ctx.sql(sql).await?;
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        return Ok((schema, df.collect().await?));
    };
    let free = KEPT
        .lock()
        .ok()
        .and_then(|mut k| k.get_mut(&key).and_then(Vec::pop));
    let kept = match free {
        Some(k) => k,
        None => {
            let df = ctx.sql(sql).await?;
            let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
            let plan = df.create_physical_plan().await?;
            if !reusable(&plan) {
                tracing::debug!(sql, "a plan not kept: an operator keeps what a run built");
                let batches = datafusion::physical_plan::collect(plan, ctx.task_ctx()).await?;
                return Ok((schema, batches));
            }
            Kept {
                plan,
                schema,
                runs: 0,
            }
        }
    };
    tracing::trace!(
        runs = kept.runs,
        plan = %datafusion::physical_plan::displayable(kept.plan.as_ref()).indent(false),
        "a kept plan"
    );
    let batches = datafusion::physical_plan::collect(kept.plan.clone(), ctx.task_ctx()).await?;
    let schema = kept.schema.clone();
    // a plan that cannot be reset is not kept (the next session plans again)
    if kept.runs + 1 < MAX_RUNS
        && let Ok(plan) = reset_plan_states(kept.plan)
        && let Ok(mut k) = KEPT.lock()
    {
        if k.len() >= MAX_STATEMENTS && !k.contains_key(&key) {
            k.clear();
        }
        let copies = k.entry(key).or_default();
        if copies.len() < MAX_COPIES {
            copies.push(Kept {
                plan,
                schema: schema.clone(),
                runs: kept.runs + 1,
            });
        }
    }
    Ok((schema, batches))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::datasource::MemTable;

    /// Two tables whose sizes and contents change with `seed` (names of this test's own).
    fn tables(seed: usize) -> Vec<(&'static str, SchemaRef, RecordBatch)> {
        let apps = Arc::new(Schema::new(vec![
            Field::new("app_id", DataType::Utf8, false),
            Field::new("cores", DataType::Int64, false),
        ]));
        let n_apps = 2 + seed;
        let a = RecordBatch::try_new(
            apps.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(
                    (0..n_apps).map(|i| format!("app{i}")),
                )) as ArrayRef,
                Arc::new(Int64Array::from_iter_values(
                    (0..n_apps as i64).map(|i| i + 1),
                )),
            ],
        )
        .unwrap();
        let tasks = Arc::new(Schema::new(vec![
            Field::new("app_id", DataType::Utf8, false),
            Field::new("stage", DataType::Int64, false),
            Field::new("ms", DataType::Float64, true),
        ]));
        let n_tasks = 40 * (seed + 1) + 7;
        let t = RecordBatch::try_new(
            tasks.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(
                    (0..n_tasks).map(|i| format!("app{}", i % (3 + seed))),
                )) as ArrayRef,
                Arc::new(Int64Array::from_iter_values(
                    (0..n_tasks as i64).map(|i| i % 5),
                )),
                Arc::new(Float64Array::from_iter(
                    (0..n_tasks).map(|i| (i % 11 != 0).then_some((i * 7 % 13) as f64 / 4.0)),
                )),
            ],
        )
        .unwrap();
        vec![("kp_apps", apps, a), ("kp_tasks", tasks, t)]
    }

    /// A join, grouping, a scalar subquery and an ordering: operators a reset makes new.
    const KEPT_SQL: &str = "SELECT a.app_id, a.cores, COUNT(*) AS n, SUM(t.ms) AS ms,
            MAX(t.stage) AS last_stage
        FROM kp_apps a JOIN kp_tasks t ON t.app_id = a.app_id
        WHERE t.ms > (SELECT AVG(ms) FROM kp_tasks)
        GROUP BY a.app_id, a.cores ORDER BY a.app_id";

    /// A join on an inequality: a nested-loop join, which keeps its inner table.
    const NOT_KEPT_SQL: &str = "SELECT a.app_id, COUNT(*) AS n
        FROM kp_apps a JOIN kp_tasks t ON t.ms < a.cores
        GROUP BY a.app_id ORDER BY a.app_id";

    /// What a plain session (in-memory tables, every statement planned) answers.
    async fn plain(seed: usize, sql: &str) -> String {
        let ctx = crate::session_with_partitions(1);
        for (name, schema, batch) in tables(seed) {
            let t = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
            ctx.register_table(name, Arc::new(t)).unwrap();
        }
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        pretty_format_batches(&batches).unwrap().to_string()
    }

    /// A session over slots, with its key for `sql`.
    fn slotted(seed: usize, sql: &str) -> (SessionContext, String) {
        let ctx = session_with_cached_plans(1);
        for (name, schema, batch) in tables(seed) {
            assert!(
                register_slot(&ctx, name, schema, vec![batch])
                    .unwrap()
                    .is_none()
            );
        }
        let k = key(&ctx, sql).expect("a query over slots has a key");
        (ctx, k)
    }

    #[tokio::test]
    async fn kept_plans_answer_each_session_over_its_own_rows() {
        for seed in 0..3 {
            let (ctx, k) = slotted(seed, KEPT_SQL);
            let (schema, batches) = collect(&ctx, KEPT_SQL).await.unwrap();
            assert_eq!(schema.fields().len(), 5);
            let got = pretty_format_batches(&batches).unwrap().to_string();
            assert_eq!(got, plain(seed, KEPT_SQL).await, "seed {seed}");
            assert!(got.lines().count() > 4, "{got}");
            // one plan, kept after each run and run again by the next session
            let kept = KEPT.lock().unwrap();
            assert_eq!(kept[&k].len(), 1);
            assert_eq!(kept[&k][0].runs, seed as u32 + 1);
        }
    }

    #[tokio::test]
    async fn plans_holding_a_run_are_planned_each_time() {
        for seed in 0..2 {
            let (ctx, k) = slotted(seed, NOT_KEPT_SQL);
            let plan = ctx
                .sql(NOT_KEPT_SQL)
                .await
                .unwrap()
                .create_physical_plan()
                .await
                .unwrap();
            let shown = datafusion::physical_plan::displayable(plan.as_ref())
                .indent(false)
                .to_string();
            assert!(shown.contains("NestedLoopJoinExec"), "{shown}");
            assert!(!reusable(&plan));
            let (_, batches) = collect(&ctx, NOT_KEPT_SQL).await.unwrap();
            let got = pretty_format_batches(&batches).unwrap().to_string();
            assert_eq!(got, plain(seed, NOT_KEPT_SQL).await, "seed {seed}");
            assert!(KEPT.lock().unwrap().get(&k).is_none());
        }
    }

    #[tokio::test]
    async fn only_queries_over_slots_have_keys() {
        let (ctx, _) = slotted(0, KEPT_SQL);
        // the key names the tables the statement names, with their schemas
        let k = key(&ctx, "SELECT COUNT(*) FROM kp_apps").unwrap();
        assert!(k.contains(" kp_apps:") && !k.contains("kp_tasks"), "{k}");
        // a statement, not a query; the catalog; a table that is not a slot
        assert!(key(&ctx, "CREATE VIEW v AS SELECT * FROM kp_apps").is_none());
        assert!(key(&ctx, "SELECT * FROM information_schema.tables").is_none());
        let (name, schema, batch) = tables(0).remove(0);
        let mem = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
        ctx.register_table("kp_memory", Arc::new(mem)).unwrap();
        assert!(key(&ctx, "SELECT * FROM kp_memory").is_none());
        assert!(key(&ctx, &format!("SELECT * FROM {name}")).is_some());
        // a session without slots keeps nothing
        assert!(key(&crate::session_with_partitions(1), "SELECT 1").is_none());
        let (_, schema, batch) = tables(0).remove(0);
        let back = register_slot(&crate::session(), "x", schema.clone(), vec![batch.clone()]);
        let (s, b) = back
            .unwrap()
            .expect("a session without slots gives the rows back");
        assert_eq!((s, b), (schema, vec![batch]));
    }
}
