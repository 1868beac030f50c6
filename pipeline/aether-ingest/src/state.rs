//! Replays the events of one application attempt into table rows, as Spark's own status
//! listeners would (stage attempts by status, skipped stages, task status from the end reason,
//! SQL metric values from task accumulable updates plus driver updates).

use crate::events::*;
use crate::tables::*;
use arrow_array::RecordBatch;
use std::collections::HashMap;

#[derive(Default)]
struct JobRow {
    job_id: i64,
    sql_id: Option<i64>,
    submit_ms: Option<i64>,
    end_ms: Option<i64>,
    status: &'static str,
    stage_ids: Vec<i64>,
    failure_reason: Option<String>,
}

#[derive(Default)]
struct StageRow {
    stage_id: i64,
    attempt_id: i64,
    name: Option<String>,
    num_tasks: Option<i64>,
    submit_ms: Option<i64>,
    complete_ms: Option<i64>,
    submitted: bool,
    completed: bool,
    failure_reason: Option<String>,
    parent_ids: Vec<i64>,
    rdd_scopes: Vec<String>,
    job_ids: Vec<i64>,
}

#[derive(Default)]
struct ExecRow {
    executor_id: String,
    host: Option<String>,
    cores: Option<i64>,
    added_ms: Option<i64>,
    removed_ms: Option<i64>,
    removed_reason: Option<String>,
    block_manager_removed_ms: Option<i64>,
    resource_profile_id: Option<i64>,
    gpus: Option<i64>,
    max_memory: Option<i64>,
    max_onheap_memory: Option<i64>,
    max_offheap_memory: Option<i64>,
    /// Whether the History Server's listener holds it as live (added by ExecutorAdded or a
    /// block manager, until ExecutorRemoved): only a live executor's totals change.
    live: bool,
    totals: ExecTotals,
    /// The peak of its JVM's `TotalGCTime` (the listener's `peakExecutorMetrics`), once any
    /// executor metrics came: those of its task ends (Spark 3.5's History Server reads a task
    /// end without them as zeros) and its StageExecutorMetrics. The History Server answers it as
    /// the driver's `totalGCTime`.
    peak_gc_time: Option<i64>,
}

/// An executor's task totals as Spark's AppStatusListener keeps them (its `LiveExecutor`): a
/// TaskStart counts a task and an active one; a TaskEnd ends it, counts it completed (Success),
/// failed (any reason but a kill or a denied commit) or neither, and adds the attempt's duration;
/// its metrics (GC time, input, shuffle read and write bytes) count unless the end is a
/// `Resubmitted` one (a finished map task re-run after its executor was lost).
#[derive(Default, Clone, Copy)]
struct ExecTotals {
    tasks: i64,
    active: i64,
    completed: i64,
    failed: i64,
    duration_ms: i64,
    gc_time_ms: i64,
    input_bytes: i64,
    shuffle_read_bytes: i64,
    shuffle_write_bytes: i64,
}

#[derive(Default)]
struct ResourceProfileRow {
    id: i64,
    executor_cores: Option<i64>,
    executor_memory_mib: Option<i64>,
    executor_memory_overhead_mib: Option<i64>,
    executor_offheap_mib: Option<i64>,
    executor_gpus: Option<i64>,
    task_cpus: Option<f64>,
    task_gpus: Option<f64>,
}

#[derive(Default)]
struct SqlRow {
    sql_id: i64,
    root_sql_id: Option<i64>,
    description: Option<String>,
    details: Option<String>,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
    error: Option<String>,
    query_id: Option<String>,
    plan_hash: Option<String>,
    versions: i64,
}

/// A node of a flattened SQL plan.
struct PlanNodeRow {
    sql_id: i64,
    version: i64,
    node_id: i64,
    parent: Option<i64>,
    name: String,
    desc: String,
    codegen: Option<i64>,
    /// the `WholeStageCodegen` node this node belongs to
    cluster: Option<i64>,
}

/// Where one plan version's nodes and metrics lie in `plan_nodes` / `metric_defs`, and the
/// edges of its graph `(child, parent)` in build order (re-used exchanges included).
struct PlanGraph {
    nodes: std::ops::Range<usize>,
    metrics: std::ops::Range<usize>,
    edges: Vec<(i64, i64)>,
}

/// A SQL-metric accumulator: the sum of the task updates Spark counts, and the stages whose
/// tasks or `Stage Info` listed it, with what each stage reported.
/// One GPU task metric of one stage: the task ends that reported it, their sum, largest,
/// smallest and sum of squares, and the accumulator they updated (for the value StageCompleted
/// lists).
struct GpuStat {
    samples: i64,
    sum: i64,
    max: i64,
    min: i64,
    sum_squares: f64,
    accumulator: i64,
}

#[derive(Default)]
struct AccAgg {
    total: Option<i64>,
    stages: Vec<AccStage>,
    /// how many of `stages` have statistics
    with_stats: u32,
}

/// One stage of an accumulator: the sum of all its tasks' updates (any task status) and the
/// value its StageCompleted event listed.
struct AccStage {
    stage: i64,
    task_sum: Option<i64>,
    completed: Option<i64>,
    /// the task updates' distribution, as the reference profiler keeps it (see [`TaskStats`])
    stats: Option<TaskStats>,
    /// when `stats` was first set, counted over the accumulator's stages
    stats_seq: u32,
}

/// The task updates of one accumulator in one stage, kept as the reference profiler keeps them
/// for `sql_plan_metrics_for_application`: smallest, largest, count, and a running mean updated
/// with integer division at every task (the reference calls it the median). A stage whose
/// StageCompleted lists the accumulator before any task updated it starts at zeros.
#[derive(Clone, Copy)]
struct TaskStats {
    min: i64,
    mean: i64,
    max: i64,
    count: i64,
}

/// `(mean * count + v) / (count + 1)`, truncated toward zero as Java's long division is, in
/// 64 bits when nothing overflows (a 128-bit division is several times slower, on every task's
/// every metric) and in 128 bits when something would.
fn running_mean(mean: i64, count: i64, v: i64) -> i64 {
    match mean
        .checked_mul(count)
        .and_then(|m| m.checked_add(v))
        .zip(count.checked_add(1))
    {
        Some((n, d)) => n / d,
        None => ((mean as i128 * count as i128 + v as i128) / (count as i128 + 1)) as i64,
    }
}

impl TaskStats {
    fn add(s: Option<Self>, v: i64) -> Self {
        let s = s.unwrap_or(TaskStats {
            min: v,
            mean: 0,
            max: v,
            count: 0,
        });
        TaskStats {
            min: s.min.min(v),
            mean: running_mean(s.mean, s.count, v),
            max: s.max.max(v),
            count: s.count + 1,
        }
    }

    /// The stages' statistics together: smallest, largest, and the count-weighted mean of the
    /// means (integer division at each step, so the order given matters).
    fn combine(stages: impl Iterator<Item = Self>) -> Option<Self> {
        stages.reduce(|a, b| {
            let count = a.count + b.count;
            TaskStats {
                min: a.min.min(b.min),
                mean: if count == 0 {
                    0
                } else {
                    ((a.mean as i128 * a.count as i128 + b.mean as i128 * b.count as i128)
                        / count as i128) as i64
                },
                max: a.max.max(b.max),
                count,
            }
        })
    }
}

impl AccAgg {
    fn stage(&mut self, stage: i64) -> &mut AccStage {
        let i = Self::index(&mut self.stages, stage);
        &mut self.stages[i]
    }

    /// Where `stage` is in `stages` (added when it is not yet).
    fn index(stages: &mut Vec<AccStage>, stage: i64) -> usize {
        match stages.iter().rposition(|s| s.stage == stage) {
            Some(i) => i,
            None => {
                stages.push(AccStage {
                    stage,
                    task_sum: None,
                    completed: None,
                    stats: None,
                    stats_seq: 0,
                });
                stages.len() - 1
            }
        }
    }

    /// Update the statistics of one stage (numbering the stage when it gets its first), and
    /// give the stage for its other figures: one lookup per update on the ingest's hot path.
    fn update_stats(
        &mut self,
        stage: i64,
        f: impl FnOnce(Option<TaskStats>) -> TaskStats,
    ) -> &mut AccStage {
        let i = Self::index(&mut self.stages, stage);
        let st = &mut self.stages[i];
        if st.stats.is_none() {
            st.stats_seq = self.with_stats;
            self.with_stats += 1;
        }
        st.stats = Some(f(st.stats));
        st
    }

    /// The stages the accumulator was updated in (by a task, or listed at StageCompleted).
    fn updated_stages(&self) -> impl Iterator<Item = &AccStage> {
        self.stages
            .iter()
            .filter(|s| s.task_sum.is_some() || s.completed.is_some())
    }

    /// Σ over updated stages of max(task updates, StageCompleted value), as the reference tool
    /// totals a metric; `None` when no stage updated it.
    fn task_total(&self) -> Option<i64> {
        self.updated_stages()
            .map(|s| s.task_sum.unwrap_or(0).max(s.completed.unwrap_or(0)))
            .fold(None, |acc, v| Some(acc.unwrap_or(0) + v))
    }
}

struct MetricDef {
    sql_id: i64,
    version: i64,
    node_id: Option<i64>,
    accumulator_id: i64,
    name: Option<String>,
    metric_type: Option<String>,
}

/// A map keyed by ids the log gives (executors, jobs, stages, SQLs, accumulators), looked up once
/// or more per task: hashed with foldhash (seeded per process) rather than SipHash, whose cost
/// showed in profiles (an accumulator's every update is a lookup).
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Everything read from one application attempt, ready to become table rows.
#[derive(Default)]
pub struct AppState {
    pub event_log: String,
    pub log_bytes: u64,
    pub app_id: Option<String>,
    pub attempt_id: Option<String>,
    app_name: Option<String>,
    spark_version: Option<String>,
    user: Option<String>,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
    exit_code: Option<i64>,
    complete: bool,
    /// Whether any Spark event was seen.
    pub saw_event: bool,
    /// The tasks' accumulables were not read: the tables made of them
    /// ([`crate::TASK_ACCUMULABLE_TABLES`]) are left out.
    pub skip_task_accumulables: bool,
    executors: Vec<ExecRow>,
    exec_idx: Map<String, usize>,
    jobs: Vec<JobRow>,
    job_idx: Map<i64, usize>,
    stages: Vec<StageRow>,
    stage_idx: Map<(i64, i64), usize>,
    tasks: Tasks,
    sqls: Vec<SqlRow>,
    sql_idx: Map<i64, usize>,
    plan_nodes: Vec<PlanNodeRow>,
    metric_defs: Vec<MetricDef>,
    plans: Vec<PlanGraph>,
    accum_task: Map<i64, AccAgg>,
    /// GPU task metrics by (stage, metric): samples, sum, max, min, sum of squares, and the
    /// accumulator the tasks updated (for the value StageCompleted lists)
    gpu_metrics: std::collections::BTreeMap<(i64, u8), GpuStat>,
    /// driver-side updates by (accumulator, SQL execution), in event order
    accum_driver: Map<(i64, i64), Vec<i64>>,
    resource_profiles: Vec<ResourceProfileRow>,
    dbc_spark_version: Option<String>,
    props: Properties,
    event_counts: Map<String, (bool, i64)>,
    ignored_fields: std::collections::BTreeMap<(String, String), i64>,
}

/// Rows of one application attempt, one batch per table.
#[derive(Clone)]
pub struct AppBatches {
    pub app_id: String,
    pub attempt_id: Option<String>,
    pub batches: Vec<(&'static str, RecordBatch)>,
    /// The tables left out (not read: the tasks' accumulables, when asked), absent from
    /// `batches`.
    pub left_out: Vec<&'static str>,
}

impl AppState {
    /// Whether the application's start (`SparkListenerApplicationStart`) was read.
    pub fn app_started(&self) -> bool {
        self.start_ms.is_some()
    }

    /// A new, empty state for the log at `event_log` of `log_bytes` bytes.
    pub fn new(event_log: String, log_bytes: u64) -> Self {
        AppState {
            event_log,
            log_bytes,
            ..Default::default()
        }
    }

    /// Count `n` events named `name` (`read`: whether aether parsed them).
    pub fn count_events(&mut self, name: &[u8], read: bool, n: i64) {
        let name = String::from_utf8_lossy(name);
        let name = name
            .strip_prefix("org.apache.spark.sql.execution.ui.")
            .unwrap_or(&name);
        if let Some(c) = self.event_counts.get_mut(name) {
            c.1 += n;
        } else {
            self.event_counts.insert(name.to_string(), (read, n));
        }
    }

    /// Note a top-level field of `event` that aether does not read (seen in a sampled event).
    pub fn ignored_field(&mut self, event: String, field: String) {
        let event = match event.strip_prefix("org.apache.spark.sql.execution.ui.") {
            Some(short) => short.to_string(),
            None => event,
        };
        *self.ignored_fields.entry((event, field)).or_insert(0) += 1;
    }

    fn stage(&mut self, stage_id: i64, attempt_id: i64) -> &mut StageRow {
        let n = self.stages.len();
        let i = *self.stage_idx.entry((stage_id, attempt_id)).or_insert(n);
        if i == n {
            self.stages.push(StageRow {
                stage_id,
                attempt_id,
                ..Default::default()
            });
        }
        &mut self.stages[i]
    }

    fn stage_info(&mut self, info: StageInfo) -> &mut StageRow {
        for &(id, _) in &info.accumulables.0 {
            self.accum_task.entry(id).or_default().stage(info.stage_id);
        }
        let s = self.stage(info.stage_id, info.attempt_id.0.unwrap_or(0));
        if info.name.is_some() {
            s.name = info.name;
        }
        if info.num_tasks.0.is_some() {
            s.num_tasks = info.num_tasks.0;
        }
        if let Some(p) = info.parent_ids {
            s.parent_ids = p;
        }
        if !info.rdd_scopes.0.is_empty() {
            s.rdd_scopes = info.rdd_scopes.0;
        }
        if info.submission_time.0.is_some() {
            s.submit_ms = info.submission_time.0;
        }
        if info.completion_time.0.is_some() {
            s.complete_ms = info.completion_time.0;
        }
        if info.failure_reason.is_some() {
            s.failure_reason = info.failure_reason;
        }
        s
    }

    fn executor(&mut self, id: &str) -> &mut ExecRow {
        let n = self.executors.len();
        let i = *self.exec_idx.entry(id.to_string()).or_insert(n);
        if i == n {
            self.executors.push(ExecRow {
                executor_id: id.to_string(),
                ..Default::default()
            });
        }
        &mut self.executors[i]
    }

    /// The executor an ExecutorAdded or BlockManagerAdded registers, as the History Server's
    /// listener does: one it no longer holds as live (removed, or only named so far by other
    /// events) starts over with no task totals and no metric peaks.
    fn register_executor(&mut self, id: &str) -> &mut ExecRow {
        let x = self.executor(id);
        if !x.live {
            x.live = true;
            x.totals = ExecTotals::default();
            x.peak_gc_time = None;
        }
        x
    }

    /// The executor a task runs on, when the History Server's listener holds it as live.
    fn live_executor(&mut self, id: Option<&str>) -> Option<&mut ExecRow> {
        let i = *self.exec_idx.get(id?)?;
        let x = &mut self.executors[i];
        x.live.then_some(x)
    }

    fn sql(&mut self, sql_id: i64) -> &mut SqlRow {
        let n = self.sqls.len();
        let i = *self.sql_idx.entry(sql_id).or_insert(n);
        if i == n {
            self.sqls.push(SqlRow {
                sql_id,
                ..Default::default()
            });
        }
        &mut self.sqls[i]
    }

    /// Apply one event.
    pub fn apply(&mut self, ev: Event) {
        self.saw_event = true;
        match ev {
            Event::LogStart(e) => self.spark_version = e.spark_version,
            Event::DbcMetadata(e) => self.dbc_spark_version = e.spark_version,
            Event::BlockManagerAdded(e) => {
                let Some(id) = e.id.executor_id else { return };
                // as the History Server does, a block manager makes its executor known (the
                // driver's too, which no ExecutorAdded announces outside local mode; it keeps
                // NULL cores then: it runs no tasks). ExecutorAdded's host and time come first.
                let x = self.register_executor(&id);
                if x.host.is_none() {
                    x.host = e.id.host;
                }
                if x.added_ms.is_none() {
                    x.added_ms = e.timestamp.0;
                }
                x.max_memory = e.max_memory.0;
                x.max_onheap_memory = e.max_onheap_memory.0;
                x.max_offheap_memory = e.max_offheap_memory.0;
            }
            Event::BlockManagerRemoved(e) => {
                let Some(id) = e.id.executor_id else { return };
                self.executor(&id).block_manager_removed_ms = e.timestamp.0;
            }
            Event::ResourceProfileAdded(e) => {
                let exec = e.executor.unwrap_or_default();
                let task = e.task.unwrap_or_default();
                let ex = |k: &str| exec.get(k).and_then(|a| a.value()).map(|v| v as i64);
                let row = ResourceProfileRow {
                    id: e.id,
                    executor_cores: ex("cores"),
                    executor_memory_mib: ex("memory"),
                    executor_memory_overhead_mib: ex("memoryOverhead"),
                    executor_offheap_mib: ex("offHeap"),
                    executor_gpus: ex("gpu"),
                    task_cpus: task.get("cpus").and_then(|a| a.value()),
                    task_gpus: task.get("gpu").and_then(|a| a.value()),
                };
                match self.resource_profiles.iter_mut().find(|r| r.id == e.id) {
                    Some(r) => *r = row,
                    None => self.resource_profiles.push(row),
                }
            }
            Event::ApplicationStart(e) => {
                self.app_name = e.app_name;
                if e.app_id.is_some() {
                    self.app_id = e.app_id;
                }
                self.attempt_id = e.attempt_id;
                self.start_ms = e.timestamp.0;
                self.user = e.user;
            }
            Event::ApplicationEnd(e) => {
                self.end_ms = e.timestamp.0;
                self.exit_code = e.exit_code.0;
                self.complete = true;
            }
            Event::EnvironmentUpdate(e) => {
                let e = *e;
                for (cat, map) in [
                    ("jvm", e.jvm),
                    ("spark", e.spark),
                    ("hadoop", e.hadoop),
                    ("system", e.system),
                    ("classpath", e.classpath),
                ] {
                    for (k, v) in map.0 {
                        self.props.category.append_value(cat);
                        self.props.key.append_value(k);
                        self.props.value.append_value(v);
                    }
                }
            }
            Event::ExecutorAdded(e) => {
                let gpus = e
                    .info
                    .resources
                    .as_ref()
                    .map(|r| r.get("gpu").map(|g| g.addresses.len() as i64).unwrap_or(0));
                let x = self.register_executor(&e.executor_id);
                x.host = e.info.host;
                x.cores = e.info.total_cores.0;
                x.added_ms = e.timestamp.0;
                x.resource_profile_id = e.info.resource_profile_id.0;
                x.gpus = gpus;
            }
            Event::ExecutorRemoved(e) => {
                let x = self.executor(&e.executor_id);
                x.removed_ms = e.timestamp.0;
                x.removed_reason = e.reason;
                x.live = false;
            }
            Event::TaskStart(e) => {
                if let Some(x) = self.live_executor(e.info.executor_id.as_deref()) {
                    x.totals.tasks += 1;
                    x.totals.active += 1;
                }
            }
            Event::StageExecutorMetrics(e) => {
                // the listener keeps the peaks of live executors and of removed ones it still
                // tracks; only the driver's (never removed) is read
                if let Some(&i) = self.exec_idx.get(&e.executor_id) {
                    let x = &mut self.executors[i];
                    let gc = e.metrics.total_gc_time.0.unwrap_or(0);
                    x.peak_gc_time = Some(x.peak_gc_time.unwrap_or(0).max(gc));
                }
            }
            Event::JobStart(e) => {
                let sql_id = e
                    .properties
                    .as_ref()
                    .and_then(|p| p.sql_execution_id.as_deref())
                    .and_then(|s| s.trim().parse().ok());
                let mut stage_ids = e.stage_ids;
                for info in e.stage_infos {
                    if !stage_ids.contains(&info.stage_id) {
                        stage_ids.push(info.stage_id);
                    }
                    let s = self.stage_info(info);
                    s.job_ids.push(e.job_id);
                }
                let n = self.jobs.len();
                let i = *self.job_idx.entry(e.job_id).or_insert(n);
                if i == n {
                    self.jobs.push(JobRow::default());
                }
                self.jobs[i] = JobRow {
                    job_id: e.job_id,
                    sql_id,
                    submit_ms: e.submission_time.0,
                    end_ms: None,
                    status: "running",
                    stage_ids,
                    failure_reason: None,
                };
            }
            Event::JobEnd(e) => {
                let n = self.jobs.len();
                let i = *self.job_idx.entry(e.job_id).or_insert(n);
                if i == n {
                    self.jobs.push(JobRow {
                        job_id: e.job_id,
                        ..Default::default()
                    });
                }
                let j = &mut self.jobs[i];
                j.end_ms = e.completion_time.0;
                j.failure_reason = e.result.exception.and_then(|x| x.message);
                j.status = match e.result.result.as_deref() {
                    Some("JobSucceeded") => "succeeded",
                    _ => "failed",
                };
            }
            Event::StageSubmitted(e) => {
                let s = self.stage_info(e.info);
                s.submitted = true;
            }
            Event::StageCompleted(e) => {
                for &(id, value) in &e.info.accumulables.0 {
                    let st =
                        self.accum_task
                            .entry(id)
                            .or_default()
                            .update_stats(e.info.stage_id, |s| {
                                s.unwrap_or(TaskStats {
                                    min: 0,
                                    mean: 0,
                                    max: 0,
                                    count: 0,
                                })
                            });
                    st.completed = Some(st.completed.unwrap_or(0).max(value.unwrap_or(0)));
                }
                let s = self.stage_info(e.info);
                s.submitted = true;
                s.completed = true;
            }
            Event::TaskEnd(t) => self.task_end(t),
            Event::SqlExecutionStart(e) => {
                let e = *e;
                let s = self.sql(e.execution_id);
                s.root_sql_id = e.root_execution_id.0;
                s.description = e.description;
                s.details = e.details;
                s.start_ms = e.time.0;
                s.query_id = e.query_id;
                if let Some(plan) = &e.plan {
                    s.plan_hash = crate::planhash::plan_hash(plan);
                }
                if let Some(plan) = e.plan {
                    self.add_plan(e.execution_id, &plan);
                }
            }
            Event::SqlExecutionEnd(e) => {
                let s = self.sql(e.execution_id);
                s.end_ms = e.time.0;
                s.error = e.error_message.filter(|m| !m.is_empty());
            }
            Event::SqlAdaptiveExecutionUpdate(e) => {
                if let Some(plan) = e.plan {
                    self.add_plan(e.execution_id, &plan);
                }
            }
            Event::SqlAdaptiveMetricUpdates(e) => {
                let version = (self.sql(e.execution_id).versions - 1).max(0);
                for m in e.metrics {
                    if let Some(acc) = m.accumulator_id.0 {
                        self.metric_defs.push(MetricDef {
                            sql_id: e.execution_id,
                            version,
                            node_id: None,
                            accumulator_id: acc,
                            name: m.name,
                            metric_type: m.metric_type,
                        });
                    }
                }
            }
            Event::DriverAccumUpdates(e) => {
                for (id, v) in e.updates {
                    if let (Some(id), Some(v)) = (id.0, v.0) {
                        self.accum_driver
                            .entry((id, e.execution_id))
                            .or_default()
                            .push(v);
                    }
                }
            }
        }
    }

    /// A task's end (read in place: the event is a kilobyte of fields, moved nowhere).
    fn task_end(&mut self, t: Box<TaskEnd>) {
        let info = &t.info;
        let reason = t.reason.reason.as_deref().unwrap_or("");
        let status = match reason {
            "Success" => "success",
            "TaskKilled" | "TaskCommitDenied" => "killed",
            "" => {
                if info.killed == Some(true) {
                    "killed"
                } else if info.failed == Some(true) {
                    "failed"
                } else {
                    "success"
                }
            }
            _ => "failed",
        };
        let succeeded = status == "success";
        if let Some(e) = self.live_executor(info.executor_id.as_deref()) {
            let x = &mut e.totals;
            x.active -= 1;
            match status {
                "success" => x.completed += 1,
                "killed" => {}
                _ => x.failed += 1,
            }
            // Spark's TaskInfo has no duration while its finish time is 0 (the listener stops
            // there)
            let finish = info.finish_time.0.unwrap_or(0);
            if finish != 0 {
                let add = |total: &mut i64, v: i64| *total = total.saturating_add(v);
                add(
                    &mut x.duration_ms,
                    finish.saturating_sub(info.launch_time.0.unwrap_or(0)),
                );
                // the executor's metrics at the task's end count towards its peaks (Spark 3.5's
                // History Server reads absent ones as zeros)
                let gc = t.executor_metrics.as_ref().and_then(|m| m.total_gc_time.0);
                e.peak_gc_time = Some(e.peak_gc_time.unwrap_or(0).max(gc.unwrap_or(0)));
                if let (false, Some(m)) = (reason == "Resubmitted", &t.metrics) {
                    let n = |v: Num| v.0.unwrap_or(0);
                    add(&mut x.gc_time_ms, n(m.jvm_gc_time));
                    if let Some(i) = &m.input {
                        add(&mut x.input_bytes, n(i.bytes_read));
                    }
                    if let Some(r) = &m.shuffle_read {
                        add(&mut x.shuffle_read_bytes, n(r.local_bytes_read));
                        add(&mut x.shuffle_read_bytes, n(r.remote_bytes_read));
                    }
                    if let Some(w) = &m.shuffle_write {
                        add(&mut x.shuffle_write_bytes, n(w.bytes_written));
                    }
                }
            }
        }
        for a in &info.accumulables.0 {
            if let Some(k) = a.gpu {
                let e = self.gpu_metrics.entry((t.stage_id, k)).or_insert(GpuStat {
                    samples: 0,
                    sum: 0,
                    max: i64::MIN,
                    min: i64::MAX,
                    sum_squares: 0.0,
                    accumulator: a.id,
                });
                e.samples += 1;
                e.sum = e.sum.saturating_add(a.update);
                e.max = e.max.max(a.update);
                e.min = e.min.min(a.update);
                e.sum_squares += (a.update as f64) * (a.update as f64);
            }
            let agg = self.accum_task.entry(a.id).or_default();
            if succeeded || a.count_failed {
                let t = agg.total.get_or_insert(0);
                *t = t.saturating_add(a.update);
            }
            let st = agg.update_stats(t.stage_id, |s| TaskStats::add(s, a.update));
            let sum = st.task_sum.get_or_insert(0);
            *sum = sum.saturating_add(a.update);
        }
        let b = &mut self.tasks;
        b.stage_id.append_value(t.stage_id);
        b.stage_attempt_id
            .append_value(t.stage_attempt_id.0.unwrap_or(0));
        b.task_id.append_value(info.task_id);
        b.task_index.append_option(info.index.0);
        b.attempt.append_option(info.attempt.0);
        b.executor_id.append_option(info.executor_id.as_deref());
        b.host.append_option(info.host.as_deref());
        b.locality.append_option(info.locality.as_deref());
        b.speculative.append_option(info.speculative);
        let launch = info.launch_time.0.filter(|v| *v > 0);
        let finish = info.finish_time.0.filter(|v| *v > 0);
        b.launch_ms.append_option(launch);
        b.finish_ms.append_option(finish);
        b.duration_ms.append_option(match (launch, finish) {
            (Some(l), Some(f)) => Some(f - l),
            _ => None,
        });
        b.status.append_value(status);
        let end_reason = if succeeded {
            None
        } else {
            let r = &t.reason;
            let detail = r
                .kill_reason
                .as_deref()
                .or(r.loss_reason.as_deref())
                .or(r.description.as_deref())
                .or(r.class_name.as_deref());
            Some(match detail {
                Some(d) if !reason.is_empty() => format!("{reason}: {d}"),
                Some(d) => d.to_string(),
                None => reason.to_string(),
            })
        };
        b.end_reason.append_option(end_reason);
        let failure_detail = if succeeded {
            None
        } else {
            t.reason.error_string()
        };
        let no_metrics;
        let m = match &t.metrics {
            Some(m) => m,
            None => {
                no_metrics = TaskMetrics::default();
                &no_metrics
            }
        };
        let has = |n: Num| n.0;
        b.executor_run_time_ms
            .append_option(has(m.executor_run_time));
        b.executor_cpu_time_ns
            .append_option(has(m.executor_cpu_time));
        b.executor_deserialize_time_ms
            .append_option(has(m.executor_deserialize_time));
        b.executor_deserialize_cpu_time_ns
            .append_option(has(m.executor_deserialize_cpu_time));
        b.result_size_bytes.append_option(has(m.result_size));
        b.jvm_gc_time_ms.append_option(has(m.jvm_gc_time));
        b.result_serialization_time_ms
            .append_option(has(m.result_serialization_time));
        b.memory_bytes_spilled
            .append_option(has(m.memory_bytes_spilled));
        b.disk_bytes_spilled
            .append_option(has(m.disk_bytes_spilled));
        b.peak_execution_memory_bytes
            .append_option(has(m.peak_execution_memory));
        b.peak_on_heap_execution_memory_bytes
            .append_option(has(m.peak_on_heap_execution_memory));
        b.peak_off_heap_execution_memory_bytes
            .append_option(has(m.peak_off_heap_execution_memory));
        let input = m.input.as_ref();
        b.input_bytes_read
            .append_option(input.and_then(|i| i.bytes_read.0));
        b.input_records_read
            .append_option(input.and_then(|i| i.records_read.0));
        let output = m.output.as_ref();
        b.output_bytes_written
            .append_option(output.and_then(|o| o.bytes_written.0));
        b.output_records_written
            .append_option(output.and_then(|o| o.records_written.0));
        let no_read;
        let sr = match &m.shuffle_read {
            Some(r) => r,
            None => {
                no_read = ShuffleReadMetrics::default();
                &no_read
            }
        };
        b.shuffle_remote_blocks_fetched
            .append_option(sr.remote_blocks_fetched.0);
        b.shuffle_local_blocks_fetched
            .append_option(sr.local_blocks_fetched.0);
        b.shuffle_fetch_wait_time_ms
            .append_option(sr.fetch_wait_time.0);
        b.shuffle_remote_bytes_read
            .append_option(sr.remote_bytes_read.0);
        b.shuffle_remote_bytes_read_to_disk
            .append_option(sr.remote_bytes_read_to_disk.0);
        b.shuffle_local_bytes_read
            .append_option(sr.local_bytes_read.0);
        b.shuffle_records_read.append_option(sr.records_read.0);
        let sw = m.shuffle_write.as_ref();
        b.shuffle_bytes_written
            .append_option(sw.and_then(|w| w.bytes_written.0));
        b.shuffle_write_time_ns
            .append_option(sw.and_then(|w| w.write_time.0));
        b.shuffle_records_written
            .append_option(sw.and_then(|w| w.records_written.0));
        b.task_type.append_option(t.task_type.as_deref());
        b.failure_detail.append_option(failure_detail.as_deref());
    }

    /// Flatten a plan tree the way Spark's `SparkPlanGraph` numbers its nodes: pre-order ids,
    /// `WholeStageCodegen` as a cluster whose members carry its codegen id, `InputAdapter` and
    /// query-stage wrappers elided, re-used exchanges pointing at the original.
    fn add_plan(&mut self, sql_id: i64, plan: &SparkPlanInfo) {
        let s = self.sql(sql_id);
        let version = s.versions;
        s.versions += 1;
        let mut ctx = PlanCtx {
            sql_id,
            version,
            next_id: 0,
            nodes: Vec::new(),
            metrics: Vec::new(),
            exchanges: HashMap::new(),
            edges: Vec::new(),
        };
        ctx.walk(plan, None, None);
        let n0 = self.plan_nodes.len();
        let m0 = self.metric_defs.len();
        self.plan_nodes.extend(ctx.nodes);
        self.metric_defs.extend(ctx.metrics);
        self.plans.push(PlanGraph {
            nodes: n0..self.plan_nodes.len(),
            metrics: m0..self.metric_defs.len(),
            edges: ctx.edges,
        });
    }

    /// The stages of every plan node (in `plan_nodes` order), see [`crate::plangraph`].
    fn node_stages(&self) -> Vec<Vec<i64>> {
        let acc_stages = |id: i64| -> Vec<i64> {
            self.accum_task
                .get(&id)
                .map(|a| a.stages.iter().map(|s| s.stage).collect())
                .unwrap_or_default()
        };
        let mut out = vec![Vec::new(); self.plan_nodes.len()];
        for g in &self.plans {
            let mut accs: HashMap<i64, Vec<i64>> = HashMap::new();
            for m in &self.metric_defs[g.metrics.clone()] {
                if let Some(n) = m.node_id {
                    accs.entry(n).or_default().push(m.accumulator_id);
                }
            }
            let nodes: Vec<crate::plangraph::GraphNode> = self.plan_nodes[g.nodes.clone()]
                .iter()
                .map(|n| crate::plangraph::GraphNode {
                    id: n.node_id,
                    name: &n.name,
                    cluster: n.cluster,
                    is_cluster: n.name.starts_with("WholeStageCodegen"),
                    accumulators: accs.remove(&n.node_id).unwrap_or_default(),
                })
                .collect();
            let stages = crate::plangraph::assign_stages(&nodes, &g.edges, acc_stages);
            for (slot, s) in out[g.nodes.clone()].iter_mut().zip(stages) {
                *slot = s;
            }
        }
        out
    }

    /// Turn the state into one batch per table.
    pub fn finish(mut self, fallback_app_id: &str) -> AppBatches {
        let app_id = self
            .app_id
            .clone()
            .unwrap_or_else(|| fallback_app_id.to_string());
        let attempt = self.attempt_id.clone();
        let key = [Some(app_id.as_str()), attempt.as_deref()];
        let mut out: Vec<(&'static str, RecordBatch)> = Vec::new();

        let mut a = Applications::default();
        a.app_name.append_option(self.app_name.as_deref());
        a.spark_version.append_option(
            self.spark_version
                .as_deref()
                .or(self.dbc_spark_version.as_deref()),
        );
        a.user.append_option(self.user.as_deref());
        a.start_ms.append_option(self.start_ms);
        a.end_ms.append_option(self.end_ms);
        a.duration_ms
            .append_option(match (self.start_ms, self.end_ms) {
                (Some(s), Some(e)) => Some(e - s),
                _ => None,
            });
        a.exit_code.append_option(self.exit_code);
        a.event_log.append_value(&self.event_log);
        a.log_bytes.append_value(self.log_bytes as i64);
        a.complete.append_value(self.complete);
        out.push((Applications::NAME, a.finish(&key)));

        let mut x = Executors::default();
        for e in &self.executors {
            x.executor_id.append_value(&e.executor_id);
            x.host.append_option(e.host.as_deref());
            x.cores.append_option(e.cores);
            x.added_ms.append_option(e.added_ms);
            x.removed_ms.append_option(e.removed_ms);
            x.removed_reason.append_option(e.removed_reason.as_deref());
            x.block_manager_removed_ms
                .append_option(e.block_manager_removed_ms);
            x.resource_profile_id.append_option(e.resource_profile_id);
            x.gpus.append_option(e.gpus);
            x.max_memory_bytes.append_option(e.max_memory);
            x.max_onheap_memory_bytes.append_option(e.max_onheap_memory);
            x.max_offheap_memory_bytes
                .append_option(e.max_offheap_memory);
            let t = &e.totals;
            // The History Server answers for the driver the application's duration (while it
            // runs: the time since it started, NULL here) and, once it has executor metrics,
            // its JVM's GC time peak (Spark 3.3+, SPARK-37493: its AppStatusStore replaces
            // them); for an executor, or a log without an application start, its tasks' totals.
            let driver = e.executor_id == "driver";
            let duration = match (driver, self.start_ms, self.end_ms) {
                (true, Some(s), Some(end)) => Some(end.saturating_sub(s)),
                (true, Some(_), None) => None,
                _ => Some(t.duration_ms),
            };
            let gc = match (driver, e.peak_gc_time) {
                (true, Some(peak)) => peak,
                _ => t.gc_time_ms,
            };
            x.is_active.append_value(e.live);
            x.total_tasks.append_value(t.tasks);
            x.active_tasks.append_value(t.active);
            x.completed_tasks.append_value(t.completed);
            x.failed_tasks.append_value(t.failed);
            x.total_duration_ms.append_option(duration);
            x.total_gc_time_ms.append_value(gc);
            x.total_input_bytes.append_value(t.input_bytes);
            x.total_shuffle_read_bytes
                .append_value(t.shuffle_read_bytes);
            x.total_shuffle_write_bytes
                .append_value(t.shuffle_write_bytes);
        }
        out.push((Executors::NAME, x.finish(&key)));

        let mut r = ResourceProfiles::default();
        for p in &self.resource_profiles {
            r.resource_profile_id.append_value(p.id);
            r.executor_cores.append_option(p.executor_cores);
            r.executor_memory_mib.append_option(p.executor_memory_mib);
            r.executor_memory_overhead_mib
                .append_option(p.executor_memory_overhead_mib);
            r.executor_offheap_mib.append_option(p.executor_offheap_mib);
            r.executor_gpus.append_option(p.executor_gpus);
            r.task_cpus.append_option(p.task_cpus);
            r.task_gpus.append_option(p.task_gpus);
        }
        out.push((ResourceProfiles::NAME, r.finish(&key)));

        let mut j = Jobs::default();
        let mut job_ended: HashMap<i64, bool> = HashMap::new();
        for r in &self.jobs {
            job_ended.insert(r.job_id, r.status != "running");
            j.job_id.append_value(r.job_id);
            j.sql_id.append_option(r.sql_id);
            j.submit_ms.append_option(r.submit_ms);
            j.end_ms.append_option(r.end_ms);
            j.status.append_value(if r.status.is_empty() {
                "running"
            } else {
                r.status
            });
            j.stage_ids.values().append_slice(&r.stage_ids);
            j.stage_ids.append(true);
            j.failure_reason.append_option(r.failure_reason.as_deref());
        }
        out.push((Jobs::NAME, j.finish(&key)));

        let mut g = StageGpuMetrics::default();
        for (&(stage, k), st) in &self.gpu_metrics {
            let (n, task_sum, max, min, sq, id) = (
                st.samples,
                st.sum,
                st.max,
                st.min,
                st.sum_squares,
                st.accumulator,
            );
            let (name, unit, kind) = crate::events::GPU_TASK_METRICS[k as usize];
            // the tasks' ms are each cut to whole ms; the stage's own total is exact: the larger
            let completed = self
                .accum_task
                .get(&id)
                .and_then(|a| a.stages.iter().find(|s| s.stage == stage))
                .and_then(|s| s.completed);
            let sum = completed.map_or(task_sum, |c| c.max(task_sum));
            g.stage_id.append_value(stage);
            g.metric.append_value(name);
            g.unit.append_value(unit);
            g.kind.append_value(kind);
            g.samples.append_value(n);
            g.sum.append_value(sum);
            g.task_sum.append_value(task_sum);
            g.max.append_value(max);
            g.min.append_value(min);
            g.sum_squares.append_value(sq);
        }
        out.push((StageGpuMetrics::NAME, g.finish(&key)));

        let mut s = Stages::default();
        for r in &self.stages {
            let status = if r.completed {
                if r.failure_reason.is_some() {
                    "failed"
                } else {
                    "complete"
                }
            } else if r.submitted {
                "active"
            } else if r
                .job_ids
                .iter()
                .any(|id| job_ended.get(id).copied().unwrap_or(false))
            {
                "skipped"
            } else {
                "pending"
            };
            s.stage_id.append_value(r.stage_id);
            s.attempt_id.append_value(r.attempt_id);
            s.name.append_option(r.name.as_deref());
            s.num_tasks.append_option(r.num_tasks);
            s.submit_ms.append_option(r.submit_ms);
            s.complete_ms.append_option(r.complete_ms);
            s.status.append_value(status);
            s.failure_reason.append_option(r.failure_reason.as_deref());
            s.parent_ids.values().append_slice(&r.parent_ids);
            s.parent_ids.append(true);
            for n in &r.rdd_scopes {
                s.rdd_scopes.values().append_value(n);
            }
            s.rdd_scopes.append(true);
        }
        out.push((Stages::NAME, s.finish(&key)));

        out.push((Tasks::NAME, self.tasks.finish(&key)));

        let mut q = SqlExecutions::default();
        for r in &self.sqls {
            q.sql_id.append_value(r.sql_id);
            q.root_sql_id.append_option(r.root_sql_id);
            q.description.append_option(r.description.as_deref());
            q.details.append_option(r.details.as_deref());
            q.start_ms.append_option(r.start_ms);
            q.end_ms.append_option(r.end_ms);
            q.duration_ms.append_option(match (r.start_ms, r.end_ms) {
                (Some(s), Some(e)) => Some(e - s),
                _ => None,
            });
            q.error.append_option(r.error.as_deref());
            q.query_id.append_option(r.query_id.as_deref());
            q.plan_hash.append_option(r.plan_hash.as_deref());
        }
        out.push((SqlExecutions::NAME, q.finish(&key)));

        let versions: HashMap<i64, i64> =
            self.sqls.iter().map(|r| (r.sql_id, r.versions)).collect();
        let node_stages = self.node_stages();
        let mut p = SqlPlanNodes::default();
        for (n, stages) in self.plan_nodes.iter().zip(&node_stages) {
            p.sql_id.append_value(n.sql_id);
            p.plan_version.append_value(n.version);
            p.is_final
                .append_value(versions.get(&n.sql_id).copied() == Some(n.version + 1));
            p.node_id.append_value(n.node_id);
            p.parent_node_id.append_option(n.parent);
            p.node_name.append_value(&n.name);
            p.description.append_value(&n.desc);
            p.codegen_stage_id.append_option(n.codegen);
            p.cluster_node_id.append_option(n.cluster);
            p.stage_ids.values().append_slice(stages);
            p.stage_ids.append(true);
        }
        out.push((SqlPlanNodes::NAME, p.finish(&key)));

        let mut m = SqlMetrics::default();
        let mut driver_sums: HashMap<i64, i64> = HashMap::new();
        for (&(acc, _), v) in &self.accum_driver {
            let s = driver_sums.entry(acc).or_insert(0);
            *s = v.iter().fold(*s, |a, &b| a.saturating_add(b));
        }
        for d in &self.metric_defs {
            let t = self
                .accum_task
                .get(&d.accumulator_id)
                .and_then(|a| a.total.as_ref());
            let dr = driver_sums.get(&d.accumulator_id);
            let value = match (t, dr) {
                (None, None) => None,
                (a, b) => Some(a.copied().unwrap_or(0) + b.copied().unwrap_or(0)),
            };
            let agg = self.accum_task.get(&d.accumulator_id);
            m.task_total.append_option(agg.and_then(|a| a.task_total()));
            let driver = self.accum_driver.get(&(d.accumulator_id, d.sql_id));
            m.driver_total
                .append_option(driver.map(|v| v.iter().fold(0i64, |a, &b| a.saturating_add(b))));
            let stats = agg.and_then(|a| {
                // in the reference's map order: stages by when they first had statistics
                let mut st: Vec<(u32, i64, TaskStats)> = a
                    .stages
                    .iter()
                    .filter_map(|s| s.stats.map(|x| (s.stats_seq, s.stage, x)))
                    .collect();
                st.sort_by_key(|(seq, _, _)| *seq);
                let keys: Vec<i32> = st.iter().map(|(_, stage, _)| *stage as i32).collect();
                TaskStats::combine(
                    crate::scala_order::iteration_order(&keys)
                        .into_iter()
                        .map(|i| st[i].2),
                )
            });
            m.task_min.append_option(stats.map(|x| x.min));
            m.task_mean.append_option(stats.map(|x| x.mean));
            m.task_max.append_option(stats.map(|x| x.max));
            m.task_count.append_option(stats.map(|x| x.count));
            let (dmin, dmed, dmax) = match driver {
                Some(v) if !v.is_empty() => {
                    let mut v = v.clone();
                    v.sort_unstable();
                    let mid = (v.len() - 1) / 2;
                    let med = if v.len() % 2 == 0 {
                        ((v[mid] as i128 + v[mid + 1] as i128) / 2) as i64
                    } else {
                        v[mid]
                    };
                    (Some(v[0]), Some(med), v.last().copied())
                }
                _ => (None, None, None),
            };
            m.driver_min.append_option(dmin);
            m.driver_median.append_option(dmed);
            m.driver_max.append_option(dmax);
            if let Some(a) = agg {
                let vals = m.update_stage_ids.values();
                for st in a.updated_stages() {
                    vals.append_value(st.stage);
                }
            }
            m.update_stage_ids.append(true);
            m.sql_id.append_value(d.sql_id);
            m.plan_version.append_value(d.version);
            m.node_id.append_option(d.node_id);
            m.accumulator_id.append_value(d.accumulator_id);
            m.name.append_option(d.name.as_deref());
            m.metric_type.append_option(d.metric_type.as_deref());
            m.value.append_option(value);
        }
        out.push((SqlMetrics::NAME, m.finish(&key)));

        out.push((Properties::NAME, self.props.finish(&key)));

        let mut c = EventCounts::default();
        let mut counts: Vec<_> = self.event_counts.into_iter().collect();
        counts.sort();
        for (name, (read, n)) in counts {
            c.event.append_value(name);
            c.read.append_value(read);
            c.count.append_value(n);
        }
        out.push((EventCounts::NAME, c.finish(&key)));

        let mut f = IgnoredFields::default();
        for ((event, field), n) in &self.ignored_fields {
            f.event.append_value(event);
            f.field.append_value(field);
            f.sampled_events.append_value(*n);
        }
        out.push((IgnoredFields::NAME, f.finish(&key)));

        let left_out = match self.skip_task_accumulables {
            true => crate::TASK_ACCUMULABLE_TABLES.to_vec(),
            false => Vec::new(),
        };
        out.retain(|(name, _)| !left_out.contains(name));
        AppBatches {
            app_id,
            attempt_id: attempt,
            batches: out,
            left_out,
        }
    }
}

struct PlanCtx {
    sql_id: i64,
    version: i64,
    next_id: i64,
    nodes: Vec<PlanNodeRow>,
    metrics: Vec<MetricDef>,
    /// exchanges and subqueries seen, by structural fingerprint → node id
    exchanges: HashMap<u64, i64>,
    /// `(child, parent)` edges in build order
    edges: Vec<(i64, i64)>,
}

/// The `WholeStageCodegen` cluster a walk is inside.
#[derive(Clone, Copy)]
struct Cluster {
    node_id: i64,
    codegen: Option<i64>,
}

fn fingerprint(p: &SparkPlanInfo) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    fn walk(p: &SparkPlanInfo, h: &mut impl Hasher) {
        p.node_name.hash(h);
        p.simple_string.hash(h);
        for m in &p.metrics {
            m.accumulator_id.0.hash(h);
        }
        p.children.len().hash(h);
        for c in &p.children {
            walk(c, h);
        }
    }
    walk(p, &mut h);
    h.finish()
}

fn codegen_id(name: &str) -> Option<i64> {
    let open = name.find('(')?;
    let close = name[open..].find(')')? + open;
    name[open + 1..close].trim().parse().ok()
}

impl PlanCtx {
    fn push(&mut self, p: &SparkPlanInfo, parent: Option<i64>, sub: Option<Cluster>) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.nodes.push(PlanNodeRow {
            sql_id: self.sql_id,
            version: self.version,
            node_id: id,
            parent,
            name: p.node_name.clone(),
            desc: p.simple_string.clone(),
            codegen: sub.and_then(|c| c.codegen),
            cluster: sub.map(|c| c.node_id),
        });
        for m in &p.metrics {
            if let Some(acc) = m.accumulator_id.0 {
                self.metrics.push(MetricDef {
                    sql_id: self.sql_id,
                    version: self.version,
                    node_id: Some(id),
                    accumulator_id: acc,
                    name: m.name.clone(),
                    metric_type: m.metric_type.clone(),
                });
            }
        }
        id
    }

    /// An edge from an already-built node to `parent` (a re-used exchange or subquery).
    fn reuse_edge(&mut self, of: &SparkPlanInfo, parent: Option<i64>) {
        if let (Some(&from), Some(to)) = (self.exchanges.get(&fingerprint(of)), parent) {
            self.edges.push((from, to));
        }
    }

    /// Build the graph as Spark's `SparkPlanGraph` does, with the reference tool's reading of
    /// RAPIDS names: a `Gpu` prefix is ignored when matching (`GpuSubqueryBroadcast` is a
    /// `SubqueryBroadcast`), and a `ReusedSubquery` is no node of its own: its subquery is the
    /// one already drawn.
    fn walk(&mut self, p: &SparkPlanInfo, parent: Option<i64>, sub: Option<Cluster>) {
        let full = p.node_name.as_str();
        let name = full.strip_prefix("Gpu").unwrap_or(full);
        if name.starts_with("WholeStageCodegen") {
            // the cluster has no edge of its own; its members link to the real parent
            let cg = codegen_id(name);
            let id = self.push(p, parent, None);
            if let Some(n) = self.nodes.last_mut() {
                n.codegen = cg;
            }
            if let Some(c) = p.children.first() {
                self.walk(
                    c,
                    parent,
                    Some(Cluster {
                        node_id: id,
                        codegen: cg,
                    }),
                );
            }
            return;
        }
        match name {
            "InputAdapter" | "TableCacheQueryStage" => {
                if let Some(c) = p.children.first() {
                    self.walk(c, parent, None);
                }
            }
            "BroadcastQueryStage" | "ShuffleQueryStage" => {
                if let Some(c) = p.children.first() {
                    if self.exchanges.contains_key(&fingerprint(c)) {
                        self.reuse_edge(c, parent);
                        return;
                    }
                    self.walk(c, parent, None);
                }
            }
            "Subquery" | "SubqueryBroadcast" if sub.is_some() => self.walk(p, parent, None),
            "Subquery" | "SubqueryBroadcast" if self.exchanges.contains_key(&fingerprint(p)) => {
                self.reuse_edge(p, parent);
            }
            "ReusedSubquery" => {
                if let Some(c) = p.children.first() {
                    self.walk(c, parent, sub);
                }
            }
            "ReusedExchange"
                if p.children
                    .first()
                    .is_some_and(|c| self.exchanges.contains_key(&fingerprint(c))) =>
            {
                if let Some(c) = p.children.first() {
                    self.reuse_edge(c, parent);
                }
            }
            _ => {
                let id = self.push(p, parent, sub);
                if let Some(to) = parent {
                    self.edges.push((id, to));
                }
                if name.contains("Exchange") || name.contains("Subquery") {
                    self.exchanges.insert(fingerprint(p), id);
                }
                for c in &p.children {
                    self.walk(c, Some(id), sub);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codegen_ids() {
        assert_eq!(codegen_id("WholeStageCodegen (12)"), Some(12));
        assert_eq!(codegen_id("WholeStageCodegen"), None);
    }

    #[test]
    fn running_mean_is_the_128_bit_division() {
        let wide =
            |m: i64, c: i64, v: i64| ((m as i128 * c as i128 + v as i128) / (c as i128 + 1)) as i64;
        let values = [
            i64::MIN,
            i64::MIN + 1,
            -1 << 40,
            -7,
            -1,
            0,
            1,
            2,
            7,
            1 << 40,
            i64::MAX - 1,
            i64::MAX,
        ];
        let counts = [0, 1, 2, 3, 1000, 1 << 31, i64::MAX / 2, i64::MAX - 1];
        for &m in &values {
            for &c in &counts {
                for &v in &values {
                    assert_eq!(
                        running_mean(m, c, v),
                        wide(m, c, v),
                        "mean {m} count {c} v {v}"
                    );
                }
            }
        }
    }
}
