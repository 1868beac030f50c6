//! The public tables: names, columns and units (a contract the SQL views and users rely on).
//!
//! Every table starts with `app_id` and `app_attempt_id` (the application attempt, NULL when the
//! application has a single attempt), except `applications` and `properties`, which call the
//! latter `attempt_id`, and `ingest_errors`, which is keyed by the log file. Times are epoch
//! milliseconds (`_ms`), sizes bytes (`_bytes`), CPU times nanoseconds (`_ns`).

use arrow_array::RecordBatch;
use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Float64Builder, Int64Builder, ListBuilder, StringBuilder,
};
use arrow_array::{ArrayRef, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::sync::Arc;

/// A column kind: its Arrow builder and field.
pub trait ColKind {
    type Builder: ArrayBuilder;
    fn field(name: &str) -> Field;
    /// An empty builder that allocates as rows come: a finished column keeps its builder's
    /// buffers, and Arrow's default room for 1,024 values in every column of every table held
    /// ~1.5 MB per log, most of a small log's tables.
    fn builder() -> Self::Builder;
}

/// UTF-8 text.
pub struct Str;
/// 64-bit integer.
pub struct I64;
/// 64-bit float.
pub struct F64;
/// Boolean.
pub struct Bool;
/// List of 64-bit integers.
pub struct ListI64;
/// List of UTF-8 texts.
pub struct ListStr;

impl ColKind for Str {
    type Builder = StringBuilder;
    fn field(name: &str) -> Field {
        Field::new(name, DataType::Utf8, true)
    }
    fn builder() -> Self::Builder {
        StringBuilder::with_capacity(0, 0)
    }
}
impl ColKind for I64 {
    type Builder = Int64Builder;
    fn field(name: &str) -> Field {
        Field::new(name, DataType::Int64, true)
    }
    fn builder() -> Self::Builder {
        Int64Builder::with_capacity(0)
    }
}
impl ColKind for F64 {
    type Builder = Float64Builder;
    fn field(name: &str) -> Field {
        Field::new(name, DataType::Float64, true)
    }
    fn builder() -> Self::Builder {
        Float64Builder::with_capacity(0)
    }
}
impl ColKind for Bool {
    type Builder = BooleanBuilder;
    fn field(name: &str) -> Field {
        Field::new(name, DataType::Boolean, true)
    }
    fn builder() -> Self::Builder {
        BooleanBuilder::with_capacity(0)
    }
}
impl ColKind for ListI64 {
    type Builder = ListBuilder<Int64Builder>;
    fn field(name: &str) -> Field {
        Field::new_list(name, Field::new_list_field(DataType::Int64, true), true)
    }
    fn builder() -> Self::Builder {
        ListBuilder::with_capacity(Int64Builder::with_capacity(0), 0)
    }
}

impl ColKind for ListStr {
    type Builder = ListBuilder<StringBuilder>;
    fn field(name: &str) -> Field {
        Field::new_list(name, Field::new_list_field(DataType::Utf8, true), true)
    }
    fn builder() -> Self::Builder {
        ListBuilder::with_capacity(StringBuilder::with_capacity(0, 0), 0)
    }
}

fn key_fields(app_key: &[&'static str]) -> Vec<Field> {
    app_key
        .iter()
        .map(|k| Field::new(*k, DataType::Utf8, true))
        .collect()
}

macro_rules! table {
    ($(#[$m:meta])* $name:ident = $sql:literal, key [$($key:literal),*] { $($(#[$cm:meta])* $col:ident : $ty:ident),* $(,)? }) => {
        $(#[$m])*
        #[allow(missing_docs)]
        pub struct $name {
            $($(#[$cm])* pub $col: <$ty as ColKind>::Builder,)*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $($col: <$ty as ColKind>::builder(),)* }
            }
        }

        impl $name {
            /// The SQL name of the table.
            pub const NAME: &'static str = $sql;

            /// The table's schema.
            pub fn schema() -> SchemaRef {
                let mut fields = key_fields(&[$($key),*]);
                $(fields.push(<$ty as ColKind>::field(stringify!($col)));)*
                Arc::new(Schema::new(fields))
            }

            /// Rows appended so far.
            pub fn len(&mut self) -> usize {
                let lens = [$(ArrayBuilder::len(&self.$col)),*];
                lens[0]
            }

            /// Whether no row was appended.
            pub fn is_empty(&mut self) -> bool {
                self.len() == 0
            }

            /// Finish the rows appended so far into a batch whose key columns hold `key`.
            pub fn finish(&mut self, key: &[Option<&str>]) -> RecordBatch {
                let n = self.len();
                let mut cols: Vec<ArrayRef> = key
                    .iter()
                    .map(|k| Arc::new(StringArray::from(vec![*k; n])) as ArrayRef)
                    .collect();
                $(cols.push(Arc::new(self.$col.finish()) as ArrayRef);)*
                RecordBatch::try_new(Self::schema(), cols).expect("table columns match the schema")
            }
        }
    };
}

table! {
    /// One row per application attempt (one event log).
    Applications = "applications", key ["app_id", "attempt_id"] {
        app_name: Str,
        spark_version: Str,
        user: Str,
        start_ms: I64,
        end_ms: I64,
        duration_ms: I64,
        exit_code: I64,
        event_log: Str,
        log_bytes: I64,
        complete: Bool,
    }
}

table! {
    /// One row per executor, as the History Server lists them: every ExecutorAdded and every
    /// block manager (so the driver too; outside local mode no ExecutorAdded announces it and
    /// its `cores` stay NULL: it runs no tasks). The `is_active` .. `total_shuffle_write_bytes`
    /// columns are the History Server's executor summary (`/allexecutors`), computed as its
    /// listener does; see `total_duration_ms` and `total_gc_time_ms` for the driver.
    Executors = "executors", key ["app_id", "app_attempt_id"] {
        executor_id: Str,
        host: Str,
        cores: I64,
        added_ms: I64,
        removed_ms: I64,
        removed_reason: Str,
        /// when its block manager was removed (BlockManagerRemoved)
        block_manager_removed_ms: I64,
        resource_profile_id: I64,
        gpus: I64,
        /// storage + execution memory of its block manager (last BlockManagerAdded)
        max_memory_bytes: I64,
        max_onheap_memory_bytes: I64,
        max_offheap_memory_bytes: I64,
        /// not removed since it was last added (`isActive`)
        is_active: Bool,
        /// tasks started on it while it was active (`totalTasks`); of them still running
        /// (`activeTasks`), ended successfully (`completedTasks`), failed (`failedTasks`: any
        /// end but a kill, a denied commit or success, `Resubmitted` included)
        total_tasks: I64,
        active_tasks: I64,
        completed_tasks: I64,
        failed_tasks: I64,
        /// its task attempts' durations (`totalDuration`); for the driver, as the History
        /// Server answers, the application's duration (NULL while it has not ended)
        total_duration_ms: I64,
        /// its tasks' JVM GC time (`totalGCTime`); for the driver, as the History Server
        /// answers, once it has executor metrics (it ran a task, or the log has its stage
        /// executor metrics), the peak of its JVM's total GC time (0 where the log lacks it)
        total_gc_time_ms: I64,
        /// its tasks' input bytes, shuffle bytes read (local + remote) and written, counting no
        /// `Resubmitted` end (`totalInputBytes`, `totalShuffleRead`, `totalShuffleWrite`)
        total_input_bytes: I64,
        total_shuffle_read_bytes: I64,
        total_shuffle_write_bytes: I64,
    }
}
table! {
    /// One row per resource profile (Spark 3.1+): what executors and tasks ask for.
    ResourceProfiles = "resource_profiles", key ["app_id", "app_attempt_id"] {
        resource_profile_id: I64,
        executor_cores: I64,
        executor_memory_mib: I64,
        executor_memory_overhead_mib: I64,
        executor_offheap_mib: I64,
        executor_gpus: I64,
        task_cpus: F64,
        task_gpus: F64,
    }
}

table! {
    /// One row per job.
    Jobs = "jobs", key ["app_id", "app_attempt_id"] {
        job_id: I64,
        sql_id: I64,
        submit_ms: I64,
        end_ms: I64,
        status: Str,
        stage_ids: ListI64,
        /// Why a failed job failed (the message of its JobFailed result).
        failure_reason: Str,
    }
}

table! {
    /// One row per stage attempt, skipped and pending stages included.
    Stages = "stages", key ["app_id", "app_attempt_id"] {
        stage_id: I64,
        attempt_id: I64,
        name: Str,
        num_tasks: I64,
        submit_ms: I64,
        complete_ms: I64,
        status: Str,
        failure_reason: Str,
        parent_ids: ListI64,
        /// The operation scopes its RDDs ran in (`RDD Info` → `Scope` → `name`, each once):
        /// `InMemoryTableScan`, `GpuColumnarExchange`, `WholeStageCodegen (1)`, …
        rdd_scopes: ListStr,
    }
}

table! {
    /// One row per task attempt that ended (failed and killed attempts included).
    Tasks = "tasks", key ["app_id", "app_attempt_id"] {
        stage_id: I64,
        stage_attempt_id: I64,
        task_id: I64,
        task_index: I64,
        attempt: I64,
        executor_id: Str,
        host: Str,
        locality: Str,
        speculative: Bool,
        launch_ms: I64,
        finish_ms: I64,
        duration_ms: I64,
        status: Str,
        end_reason: Str,
        executor_run_time_ms: I64,
        executor_cpu_time_ns: I64,
        executor_deserialize_time_ms: I64,
        executor_deserialize_cpu_time_ns: I64,
        result_size_bytes: I64,
        jvm_gc_time_ms: I64,
        result_serialization_time_ms: I64,
        memory_bytes_spilled: I64,
        disk_bytes_spilled: I64,
        peak_execution_memory_bytes: I64,
        peak_on_heap_execution_memory_bytes: I64,
        peak_off_heap_execution_memory_bytes: I64,
        input_bytes_read: I64,
        input_records_read: I64,
        output_bytes_written: I64,
        output_records_written: I64,
        shuffle_remote_blocks_fetched: I64,
        shuffle_local_blocks_fetched: I64,
        shuffle_fetch_wait_time_ms: I64,
        shuffle_remote_bytes_read: I64,
        shuffle_remote_bytes_read_to_disk: I64,
        shuffle_local_bytes_read: I64,
        shuffle_records_read: I64,
        shuffle_bytes_written: I64,
        shuffle_write_time_ns: I64,
        shuffle_records_written: I64,
        /// ShuffleMapTask or ResultTask.
        task_type: Str,
        /// Why a task failed, as Spark's `toErrorString` renders it: the exception with its
        /// stack trace as the executor printed it, or a lost executor's or failed fetch's text.
        failure_detail: Str,
    }
}

table! {
    /// One row per SQL execution.
    SqlExecutions = "sql_executions", key ["app_id", "app_attempt_id"] {
        sql_id: I64,
        root_sql_id: I64,
        description: Str,
        details: Str,
        start_ms: I64,
        end_ms: I64,
        duration_ms: I64,
        error: Str,
        query_id: Str,
        /// QualX's signature of the initial plan (a big integer, decimal)
        plan_hash: Str,
    }
}

table! {
    /// One row per node of each version of each SQL plan (0 = initial, then each AQE update).
    SqlPlanNodes = "sql_plan_nodes", key ["app_id", "app_attempt_id"] {
        sql_id: I64,
        plan_version: I64,
        is_final: Bool,
        node_id: I64,
        parent_node_id: I64,
        node_name: Str,
        description: Str,
        codegen_stage_id: I64,
        cluster_node_id: I64,
        stage_ids: ListI64,
    }
}

table! {
    /// One row per SQL metric of each plan version, with its final value.
    SqlMetrics = "sql_metrics", key ["app_id", "app_attempt_id"] {
        sql_id: I64,
        plan_version: I64,
        node_id: I64,
        accumulator_id: I64,
        name: Str,
        metric_type: Str,
        value: I64,
        /// Σ over `update_stage_ids` of max(task updates in the stage, its StageCompleted value)
        task_total: I64,
        /// the driver-side updates (DriverAccumUpdates) of this SQL execution
        driver_total: I64,
        /// the task updates over all stages: smallest, largest, how many, and the reference
        /// profiler's running mean (integer division per task, then per stage weighted by
        /// count), which it reports as the "median"; a stage whose StageCompleted listed the
        /// accumulator without task updates counts as one of zeros
        task_min: I64,
        task_mean: I64,
        task_max: I64,
        task_count: I64,
        /// this SQL execution's driver-side updates: smallest, median, largest
        driver_min: I64,
        driver_median: I64,
        driver_max: I64,
        /// stages whose tasks updated the accumulator or whose StageCompleted listed it
        update_stage_ids: ListI64,
    }
}

table! {
    /// Spark, Hadoop, system, JVM properties and classpath entries of the environment.
    Properties = "properties", key ["app_id", "attempt_id"] {
        category: Str,
        key: Str,
        value: Str,
    }
}

table! {
    /// What was skipped and why: one row per problem, naming the file and line.
    IngestErrors = "ingest_errors", key [] {
        event_log: Str,
        line: I64,
        error: Str,
    }
}

table! {
    /// How many events of each kind each log held (`read` = false: skipped as not needed).
    EventCounts = "event_counts", key ["app_id", "app_attempt_id"] {
        event: Str,
        read: Bool,
        count: I64,
    }
}

table! {
    /// Top-level event fields aether does not read, per event kind, from sampled events (the
    /// first event of each kind in every 4 MiB chunk): schema drift shows up here.
    IgnoredFields = "ignored_fields", key ["app_id", "app_attempt_id"] {
        event: Str,
        field: Str,
        sampled_events: I64,
    }
}

table! {
    /// The RAPIDS plugin's GPU task metrics per stage (task accumulators such as gpuTime and
    /// gpuSemaphoreWait, durations in ms): how many task ends reported each, the stage's total,
    /// the tasks' sum, largest, smallest and sum of squares (for means and deviations at any
    /// level).
    StageGpuMetrics = "stage_gpu_metrics", key ["app_id", "app_attempt_id"] {
        stage_id: I64,
        metric: Str,
        unit: Str,
        /// `sum` (a quantity) or `max` (a per-task peak, whose sum means nothing).
        kind: Str,
        samples: I64,
        /// The stage's total: the larger of the tasks' sum and the value StageCompleted listed.
        sum: I64,
        /// The tasks' updates summed (each in whole ms for durations).
        task_sum: I64,
        max: I64,
        min: I64,
        sum_squares: F64,
    }
}

/// Every table name with its schema, in the order they are registered.
pub fn all_schemas() -> Vec<(&'static str, SchemaRef)> {
    vec![
        (Applications::NAME, Applications::schema()),
        (Executors::NAME, Executors::schema()),
        (ResourceProfiles::NAME, ResourceProfiles::schema()),
        (Jobs::NAME, Jobs::schema()),
        (Stages::NAME, Stages::schema()),
        (Tasks::NAME, Tasks::schema()),
        (SqlExecutions::NAME, SqlExecutions::schema()),
        (SqlPlanNodes::NAME, SqlPlanNodes::schema()),
        (SqlMetrics::NAME, SqlMetrics::schema()),
        (Properties::NAME, Properties::schema()),
        (IngestErrors::NAME, IngestErrors::schema()),
        (EventCounts::NAME, EventCounts::schema()),
        (IgnoredFields::NAME, IgnoredFields::schema()),
        (StageGpuMetrics::NAME, StageGpuMetrics::schema()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table holds about what its rows need: an empty one (most tables of a small log) a few
    /// bytes per column, not a builder's default room for 1,024 values in every column (~8 KB
    /// per number column, ~12 KB per text column, held as long as the log's tables are).
    #[test]
    fn empty_tables_hold_almost_nothing() {
        let key = [Some("app-1"), None];
        for b in [
            Tasks::default().finish(&key),
            Stages::default().finish(&key),
            SqlPlanNodes::default().finish(&key),
        ] {
            assert_eq!(b.num_rows(), 0);
            let per_col = b.get_array_memory_size() / b.num_columns();
            // array headers and one offset: a few hundred bytes (8–12 KB with the default room)
            assert!(per_col < 1024, "{per_col} bytes per empty column");
        }
    }
}
