-- QualX model inputs: one row per (app, SQL execution, executor resource profile), the features
-- NVIDIA's qualification tool (QualX) computes from a CPU event log and feeds its XGBoost model
-- (docs/reference/qualx-features.md says how each is defined, and tests/tests/qualx_features.rs
-- compares every value with the reference tool's features.csv). Column names are the model's
-- feature names. A SQL gets a row when its jobs ran tasks in stages its final plan's metrics
-- were updated in; its task metrics are aggregated over those stages (S(q)), supported or not.
WITH known_attempt AS (
    -- stage attempts Spark submitted or completed, with their tasks (any status)
    SELECT
        s.app_id, COALESCE(s.app_attempt_id, '') AS att, s.stage_id, s.attempt_id,
        COUNT(t.task_id) AS n,
        COALESCE(SUM(t.duration_ms), 0) AS dsum,
        COALESCE(MAX(t.duration_ms), 0) AS dmax,
        COALESCE(MIN(t.duration_ms), 0) AS dmin,
        COALESCE(SUM(t.executor_cpu_time_ns), 0) / 1000000 AS cpu_ms,
        COALESCE(SUM(t.executor_deserialize_cpu_time_ns), 0) / 1000000 AS deser_cpu_ms,
        COALESCE(SUM(t.shuffle_write_time_ns), 0) / 1000000 AS sw_write_ms,
        COALESCE(SUM(t.executor_deserialize_time_ms), 0) AS deser_ms,
        COALESCE(SUM(t.executor_run_time_ms), 0) AS run_ms,
        COALESCE(SUM(t.jvm_gc_time_ms), 0) AS gc_ms,
        COALESCE(SUM(t.result_serialization_time_ms), 0) AS ser_ms,
        COALESCE(SUM(t.shuffle_fetch_wait_time_ms), 0) AS fetch_wait_ms,
        COALESCE(SUM(t.disk_bytes_spilled), 0) AS disk_spill,
        COALESCE(SUM(t.memory_bytes_spilled), 0) AS mem_spill,
        COALESCE(SUM(t.input_bytes_read), 0) AS in_bytes,
        COALESCE(SUM(t.input_records_read), 0) AS in_records,
        COALESCE(SUM(t.output_bytes_written), 0) AS out_bytes,
        COALESCE(SUM(t.output_records_written), 0) AS out_records,
        COALESCE(SUM(t.shuffle_local_blocks_fetched), 0) AS sr_local_blocks,
        COALESCE(SUM(t.shuffle_local_bytes_read), 0) AS sr_local_bytes,
        COALESCE(SUM(t.shuffle_remote_blocks_fetched), 0) AS sr_remote_blocks,
        COALESCE(SUM(t.shuffle_remote_bytes_read), 0) AS sr_remote_bytes,
        COALESCE(SUM(t.shuffle_remote_bytes_read_to_disk), 0) AS sr_remote_disk,
        COALESCE(SUM(t.shuffle_remote_bytes_read + t.shuffle_local_bytes_read), 0) AS sr_total_bytes,
        COALESCE(SUM(t.shuffle_bytes_written), 0) AS sw_bytes,
        COALESCE(SUM(t.shuffle_records_written), 0) AS sw_records,
        COALESCE(MAX(t.peak_execution_memory_bytes), 0) AS peak_mem,
        COALESCE(MAX(t.result_size_bytes), 0) AS result_size
    FROM stages s
    LEFT JOIN tasks t
        ON t.app_id = s.app_id AND (t.app_attempt_id IS NOT DISTINCT FROM s.app_attempt_id)
        AND t.stage_id = s.stage_id AND t.stage_attempt_id = s.attempt_id
    WHERE s.status IN ('complete', 'failed', 'active')
    GROUP BY s.app_id, COALESCE(s.app_attempt_id, ''), s.stage_id, s.attempt_id
),
stage_agg AS (
    SELECT
        app_id, att, stage_id, COUNT(*) AS attempts,
        SUM(n) AS n, SUM(dsum) AS dsum, MAX(dmax) AS dmax, MIN(dmin) AS dmin,
        SUM(cpu_ms) AS cpu_ms, SUM(deser_cpu_ms) AS deser_cpu_ms, SUM(sw_write_ms) AS sw_write_ms,
        SUM(deser_ms) AS deser_ms, SUM(run_ms) AS run_ms, SUM(gc_ms) AS gc_ms, SUM(ser_ms) AS ser_ms,
        SUM(fetch_wait_ms) AS fetch_wait_ms, SUM(disk_spill) AS disk_spill,
        SUM(mem_spill) AS mem_spill, SUM(in_bytes) AS in_bytes, SUM(in_records) AS in_records,
        SUM(out_bytes) AS out_bytes, SUM(out_records) AS out_records,
        SUM(sr_local_blocks) AS sr_local_blocks, SUM(sr_local_bytes) AS sr_local_bytes,
        SUM(sr_remote_blocks) AS sr_remote_blocks, SUM(sr_remote_bytes) AS sr_remote_bytes,
        SUM(sr_remote_disk) AS sr_remote_disk, SUM(sr_total_bytes) AS sr_total_bytes,
        SUM(sw_bytes) AS sw_bytes, SUM(sw_records) AS sw_records, MAX(peak_mem) AS peak_mem,
        MAX(result_size) AS result_size
    FROM known_attempt
    GROUP BY app_id, att, stage_id
),
-- final-plan nodes and their metric declarations
node_metric AS (
    SELECT
        n.app_id, COALESCE(n.app_attempt_id, '') AS att, n.sql_id, n.node_id, n.node_name,
        m.name AS metric, m.metric_type, m.task_total, m.driver_total, m.update_stage_ids
    FROM sql_plan_nodes n
    JOIN sql_metrics m
        ON m.app_id = n.app_id AND (m.app_attempt_id IS NOT DISTINCT FROM n.app_attempt_id)
        AND m.sql_id = n.sql_id AND m.plan_version = n.plan_version AND m.node_id = n.node_id
    WHERE n.is_final
),
-- metrics that were updated (by tasks, or by the driver for this SQL), with their totals
metric_row AS (
    SELECT
        app_id, att, sql_id, node_id, node_name, metric, metric_type,
        GREATEST(COALESCE(task_total, 0), COALESCE(driver_total, 0)) AS total
    FROM node_metric
    WHERE task_total IS NOT NULL OR driver_total IS NOT NULL
),
node_sup AS (
    SELECT
        app_id, COALESCE(app_attempt_id, '') AS att, sql_id, node_id,
        bool_and(supported OR action = 'IgnoreNoPerf' OR operator LIKE 'WholeStageCodegen%') AS sup
    FROM operators
    GROUP BY app_id, COALESCE(app_attempt_id, ''), sql_id, node_id
),
-- M(q): nodes with an updated metric and a support verdict
m_nodes AS (
    SELECT DISTINCT r.app_id, r.att, r.sql_id, r.node_id, r.node_name, s.sup
    FROM metric_row r
    JOIN node_sup s USING (app_id, att, sql_id, node_id)
),
-- the stages each node's metrics were updated in
raw_stages AS (
    SELECT DISTINCT app_id, att, sql_id, node_id, stage_id
    FROM (
        SELECT app_id, att, sql_id, node_id, UNNEST(update_stage_ids) AS stage_id
        FROM node_metric
    ) u
),
-- S(q) with each stage's support: all of q's nodes that ran in it are supported
sq_stage AS (
    SELECT r.app_id, r.att, r.sql_id, r.stage_id, bool_and(m.sup) AS supp
    FROM raw_stages r
    JOIN m_nodes m USING (app_id, att, sql_id, node_id)
    JOIN stage_agg g ON g.app_id = r.app_id AND g.att = r.att AND g.stage_id = r.stage_id
    GROUP BY r.app_id, r.att, r.sql_id, r.stage_id
),
agg AS (
    SELECT
        x.app_id, x.att, x.sql_id,
        SUM(g.n) AS n, SUM(g.dsum) AS dsum, MAX(g.dmax) AS dmax, MIN(g.dmin) AS dmin,
        SUM(g.cpu_ms) AS cpu_ms, SUM(g.deser_cpu_ms) AS deser_cpu_ms,
        SUM(g.sw_write_ms) AS sw_write_ms, SUM(g.deser_ms) AS deser_ms, SUM(g.run_ms) AS run_ms,
        SUM(g.gc_ms) AS gc_ms, SUM(g.ser_ms) AS ser_ms, SUM(g.fetch_wait_ms) AS fetch_wait_ms,
        SUM(g.disk_spill) AS disk_spill, SUM(g.mem_spill) AS mem_spill,
        SUM(g.in_bytes) AS in_bytes, SUM(g.in_records) AS in_records,
        SUM(g.out_bytes) AS out_bytes, SUM(g.out_records) AS out_records,
        SUM(g.sr_local_blocks) AS sr_local_blocks, SUM(g.sr_local_bytes) AS sr_local_bytes,
        SUM(g.sr_remote_blocks) AS sr_remote_blocks, SUM(g.sr_remote_bytes) AS sr_remote_bytes,
        SUM(g.sr_remote_disk) AS sr_remote_disk, SUM(g.sr_total_bytes) AS sr_total_bytes,
        SUM(g.sw_bytes) AS sw_bytes, SUM(g.sw_records) AS sw_records,
        MAX(g.peak_mem) AS peak_mem, MAX(g.result_size) AS result_size,
        CAST(SUM(CASE WHEN x.supp THEN g.dsum ELSE 0 END) AS DOUBLE)
            / CAST(SUM(g.dsum) AS DOUBLE) AS fraction_supported,
        SUM(CASE WHEN x.supp THEN g.dsum ELSE 0 END) AS supported_task_ms
    FROM sq_stage x
    JOIN stage_agg g ON g.app_id = x.app_id AND g.att = x.att AND g.stage_id = x.stage_id
    GROUP BY x.app_id, x.att, x.sql_id
),
job_stage AS (
    SELECT app_id, COALESCE(app_attempt_id, '') AS att, sql_id, stage_id
    FROM stage_jobs
    WHERE sql_id IS NOT NULL AND sql_id >= 0
),
-- R2: the SQL's jobs ran tasks in known stages
with_tasks AS (
    SELECT j.app_id, j.att, j.sql_id
    FROM job_stage j
    JOIN stage_agg g ON g.app_id = j.app_id AND g.att = j.att AND g.stage_id = j.stage_id
    GROUP BY j.app_id, j.att, j.sql_id
    HAVING SUM(g.n) > 0
),
-- R3: a known stage of the SQL's jobs is one its final plan's metrics were updated in
with_execs AS (
    SELECT DISTINCT j.app_id, j.att, j.sql_id
    FROM job_stage j
    JOIN stage_agg g ON g.app_id = j.app_id AND g.att = j.att AND g.stage_id = j.stage_id
    JOIN raw_stages r ON r.app_id = j.app_id AND r.att = j.att AND r.sql_id = j.sql_id
        AND r.stage_id = j.stage_id
),
-- failed or killed task attempts of the SQL's job stages, once per job listing and stage attempt
failed AS (
    SELECT j.app_id, j.att, j.sql_id, SUM(f.n * g.attempts) AS failed_tasks
    FROM job_stage j
    JOIN (
        SELECT app_id, COALESCE(app_attempt_id, '') AS att, stage_id, COUNT(*) AS n
        FROM tasks WHERE status <> 'success'
        GROUP BY app_id, COALESCE(app_attempt_id, ''), stage_id
    ) f ON f.app_id = j.app_id AND f.att = j.att AND f.stage_id = j.stage_id
    JOIN stage_agg g ON g.app_id = j.app_id AND g.att = j.att AND g.stage_id = j.stage_id
    GROUP BY j.app_id, j.att, j.sql_id
),
-- file scans: scan time (ms), bytes read, GPU decode time
scans AS (
    SELECT
        app_id, att, sql_id,
        SUM(CASE WHEN metric = 'scan time' THEN
                CASE WHEN metric_type = 'nsTiming' THEN total / 1000000 ELSE total END END) AS scan_time,
        SUM(CASE WHEN metric = 'size of files read' THEN total END) AS data_size,
        SUM(CASE WHEN metric = 'GPU decode time' THEN
                CASE WHEN metric_type = 'nsTiming' THEN total / 1000000 ELSE total END END) AS decode_time
    FROM metric_row
    WHERE (node_name LIKE 'Scan %' AND node_name NOT LIKE 'Scan OneRowRelation%')
        OR node_name LIKE '%BatchScan%'
    GROUP BY app_id, att, sql_id
),
-- Databricks IO cache hits and misses of supported nodes
cache AS (
    SELECT
        r.app_id, r.att, r.sql_id,
        SUM(CASE WHEN r.metric = 'cache hits size' THEN r.total END) AS hits,
        SUM(CASE WHEN r.metric = 'cache misses size' THEN r.total END) AS misses
    FROM metric_row r
    JOIN m_nodes m USING (app_id, att, sql_id, node_id)
    WHERE m.sup AND r.metric IN ('cache hits size', 'cache misses size')
    GROUP BY r.app_id, r.att, r.sql_id
),
-- operator names present in the SQL: supported nodes with an updated metric, and every member
-- of a whole-stage-codegen cluster
op_names AS (
    SELECT app_id, att, sql_id, node_name
    FROM m_nodes
    WHERE sup AND node_name NOT LIKE 'WholeStageCodegen%'
    UNION
    SELECT app_id, COALESCE(app_attempt_id, ''), sql_id, node_name
    FROM sql_plan_nodes
    WHERE is_final AND cluster_node_id IS NOT NULL
),
ops AS (
    SELECT
        app_id, att, sql_id,
        CASE
            WHEN starts_with(node_name, 'Scan DeltaCDFRelation') THEN 'Scan DeltaCDFRelation'
            WHEN starts_with(node_name, 'Scan ExistingRDD Delta Table Checkpoint')
                THEN 'Scan ExistingRDD Delta Table Checkpoint'
            WHEN starts_with(node_name, 'Scan ExistingRDD Delta Table State')
                THEN 'Scan ExistingRDD Delta Table State'
            WHEN starts_with(node_name, 'Scan jdbc') THEN 'Scan jdbc'
            WHEN starts_with(node_name, 'Scan parquet') THEN 'Scan parquet'
            WHEN starts_with(node_name, 'GpuScan parquet') THEN 'GpuScan parquet'
            ELSE node_name
        END AS op
    FROM op_names
),
op_flags AS (
    SELECT
    o.app_id, o.att, o.sql_id,
    COALESCE(MAX(CASE WHEN o.op = 'AQEShuffleRead' THEN 1 END), 0) AS "sqlOp_AQEShuffleRead",
    COALESCE(MAX(CASE WHEN o.op = 'BatchEvalPython' THEN 1 END), 0) AS "sqlOp_BatchEvalPython",
    COALESCE(MAX(CASE WHEN o.op = 'BroadcastExchange' THEN 1 END), 0) AS "sqlOp_BroadcastExchange",
    COALESCE(MAX(CASE WHEN o.op = 'BroadcastHashJoin' THEN 1 END), 0) AS "sqlOp_BroadcastHashJoin",
    COALESCE(MAX(CASE WHEN o.op = 'BroadcastNestedLoopJoin' THEN 1 END), 0) AS "sqlOp_BroadcastNestedLoopJoin",
    COALESCE(MAX(CASE WHEN o.op = 'CartesianProduct' THEN 1 END), 0) AS "sqlOp_CartesianProduct",
    COALESCE(MAX(CASE WHEN o.op = 'ColumnarToRow' THEN 1 END), 0) AS "sqlOp_ColumnarToRow",
    COALESCE(MAX(CASE WHEN o.op = 'CommandResult' THEN 1 END), 0) AS "sqlOp_CommandResult",
    COALESCE(MAX(CASE WHEN o.op = 'CustomShuffleReader' THEN 1 END), 0) AS "sqlOp_CustomShuffleReader",
    COALESCE(MAX(CASE WHEN o.op = 'DeserializeToObject' THEN 1 END), 0) AS "sqlOp_DeserializeToObject",
    COALESCE(MAX(CASE WHEN o.op = 'Exchange' THEN 1 END), 0) AS "sqlOp_Exchange",
    COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand csv' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand csv",
    COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand json' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand json",
    COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand orc' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand orc",
    COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand parquet' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand parquet",
    COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand text' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand text",
    COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand unknown' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand unknown",
    COALESCE(MAX(CASE WHEN o.op = 'Expand' THEN 1 END), 0) AS "sqlOp_Expand",
    COALESCE(MAX(CASE WHEN o.op = 'Filter' THEN 1 END), 0) AS "sqlOp_Filter",
    COALESCE(MAX(CASE WHEN o.op = 'Generate' THEN 1 END), 0) AS "sqlOp_Generate",
    COALESCE(MAX(CASE WHEN o.op = 'GenerateBloomFilter' THEN 1 END), 0) AS "sqlOp_GenerateBloomFilter",
    COALESCE(MAX(CASE WHEN o.op = 'GlobalLimit' THEN 1 END), 0) AS "sqlOp_GlobalLimit",
    COALESCE(MAX(CASE WHEN o.op = 'HashAggregate' THEN 1 END), 0) AS "sqlOp_HashAggregate",
    COALESCE(MAX(CASE WHEN o.op = 'HashAggregatePrefixGroupingSets' THEN 1 END), 0) AS "sqlOp_HashAggregatePrefixGroupingSets",
    COALESCE(MAX(CASE WHEN o.op = 'LocalLimit' THEN 1 END), 0) AS "sqlOp_LocalLimit",
    COALESCE(MAX(CASE WHEN o.op = 'LocalTableScan' THEN 1 END), 0) AS "sqlOp_LocalTableScan",
    COALESCE(MAX(CASE WHEN o.op = 'MapElements' THEN 1 END), 0) AS "sqlOp_MapElements",
    COALESCE(MAX(CASE WHEN o.op = 'ObjectHashAggregate' THEN 1 END), 0) AS "sqlOp_ObjectHashAggregate",
    COALESCE(MAX(CASE WHEN o.op = 'OutputAdapter' THEN 1 END), 0) AS "sqlOp_OutputAdapter",
    COALESCE(MAX(CASE WHEN o.op = 'PartialWindow' THEN 1 END), 0) AS "sqlOp_PartialWindow",
    COALESCE(MAX(CASE WHEN o.op = 'Project' THEN 1 END), 0) AS "sqlOp_Project",
    COALESCE(MAX(CASE WHEN o.op = 'ReusedSort' THEN 1 END), 0) AS "sqlOp_ReusedSort",
    COALESCE(MAX(CASE WHEN o.op = 'RunningWindowFunction' THEN 1 END), 0) AS "sqlOp_RunningWindowFunction",
    COALESCE(MAX(CASE WHEN o.op = 'Scan csv' THEN 1 END), 0) AS "sqlOp_Scan csv",
    COALESCE(MAX(CASE WHEN o.op = 'Scan ExistingRDD' THEN 1 END), 0) AS "sqlOp_Scan ExistingRDD",
    COALESCE(MAX(CASE WHEN o.op = 'Scan ExistingRDD Delta Table Checkpoint' THEN 1 END), 0) AS "sqlOp_Scan ExistingRDD Delta Table Checkpoint",
    COALESCE(MAX(CASE WHEN o.op = 'Scan ExistingRDD Delta Table State' THEN 1 END), 0) AS "sqlOp_Scan ExistingRDD Delta Table State",
    COALESCE(MAX(CASE WHEN o.op = 'Scan jdbc' THEN 1 END), 0) AS "sqlOp_Scan jdbc",
    COALESCE(MAX(CASE WHEN o.op = 'Scan json' THEN 1 END), 0) AS "sqlOp_Scan json",
    COALESCE(MAX(CASE WHEN o.op = 'Scan OneRowRelation' THEN 1 END), 0) AS "sqlOp_Scan OneRowRelation",
    COALESCE(MAX(CASE WHEN o.op = 'Scan orc' THEN 1 END), 0) AS "sqlOp_Scan orc",
    COALESCE(MAX(CASE WHEN o.op = 'Scan parquet' THEN 1 END), 0) AS "sqlOp_Scan parquet",
    COALESCE(MAX(CASE WHEN o.op = 'Scan text' THEN 1 END), 0) AS "sqlOp_Scan text",
    COALESCE(MAX(CASE WHEN o.op = 'Scan unknown' THEN 1 END), 0) AS "sqlOp_Scan unknown",
    COALESCE(MAX(CASE WHEN o.op = 'SerializeFromObject' THEN 1 END), 0) AS "sqlOp_SerializeFromObject",
    COALESCE(MAX(CASE WHEN o.op = 'Sort' THEN 1 END), 0) AS "sqlOp_Sort",
    COALESCE(MAX(CASE WHEN o.op = 'SortAggregate' THEN 1 END), 0) AS "sqlOp_SortAggregate",
    COALESCE(MAX(CASE WHEN o.op = 'SortMergeJoin' THEN 1 END), 0) AS "sqlOp_SortMergeJoin",
    COALESCE(MAX(CASE WHEN o.op = 'Subquery' THEN 1 END), 0) AS "sqlOp_Subquery",
    COALESCE(MAX(CASE WHEN o.op = 'SubqueryBroadcast' THEN 1 END), 0) AS "sqlOp_SubqueryBroadcast",
    COALESCE(MAX(CASE WHEN o.op = 'SubqueryOutputBroadcast' THEN 1 END), 0) AS "sqlOp_SubqueryOutputBroadcast",
    COALESCE(MAX(CASE WHEN o.op = 'TakeOrderedAndProject' THEN 1 END), 0) AS "sqlOp_TakeOrderedAndProject",
    COALESCE(MAX(CASE WHEN o.op = 'Window' THEN 1 END), 0) AS "sqlOp_Window",
    COALESCE(MAX(CASE WHEN o.op = 'WindowGroupLimit' THEN 1 END), 0) AS "sqlOp_WindowGroupLimit",
    COALESCE(MAX(CASE WHEN o.op = 'WindowSort' THEN 1 END), 0) AS "sqlOp_WindowSort"
    FROM ops o
    GROUP BY o.app_id, o.att, o.sql_id
),
-- executors per resource profile (the driver only in local mode); the first one stands for all
executor_rank AS (
    SELECT
        app_id, COALESCE(app_attempt_id, '') AS att,
        COALESCE(resource_profile_id, 0) AS resource_profile_id, cores,
        max_memory_bytes, max_onheap_memory_bytes, max_offheap_memory_bytes,
        COUNT(*) OVER (PARTITION BY app_id, app_attempt_id, COALESCE(resource_profile_id, 0)) AS n,
        ROW_NUMBER() OVER (
            PARTITION BY app_id, app_attempt_id, COALESCE(resource_profile_id, 0)
            ORDER BY added_ms NULLS LAST, executor_id
        ) AS rn
    FROM executors
    WHERE cores IS NOT NULL OR max_memory_bytes IS NOT NULL
),
exec_info AS (
    SELECT
        e.app_id, e.att, e.resource_profile_id, e.n AS num_executors,
        e.cores, COALESCE(e.max_memory_bytes, 0) AS max_mem,
        COALESCE(e.max_onheap_memory_bytes, -1) AS max_on_heap,
        COALESCE(e.max_offheap_memory_bytes, 0) AS max_off_heap,
        CASE WHEN p.resource_profile_id IS NOT NULL THEN CAST(COALESCE(p.executor_memory_mib, 0) AS DOUBLE) END AS executor_memory,
        CASE WHEN p.resource_profile_id IS NOT NULL THEN CAST(COALESCE(p.executor_gpus, 0) AS DOUBLE) END AS gpus,
        CASE WHEN p.resource_profile_id IS NOT NULL THEN CAST(COALESCE(p.executor_offheap_mib, 0) AS DOUBLE) END AS offheap,
        COALESCE(p.task_cpus, 0.0) AS task_cpu,
        COALESCE(p.task_gpus, 0.0) AS task_gpu
    FROM executor_rank e
    LEFT JOIN resource_profiles p
        ON p.app_id = e.app_id AND COALESCE(p.app_attempt_id, '') = e.att
        AND p.resource_profile_id = e.resource_profile_id
    WHERE e.rn = 1
),
app AS (
    SELECT
        a.app_id, COALESCE(a.attempt_id, '') AS att, a.app_name,
        COALESCE(NULLIF(a.spark_version, ''), 'Unknown') AS spark_version,
        d.app_duration_ms
    FROM applications a
    LEFT JOIN app_duration d
        ON d.app_id = a.app_id AND (d.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
),
base AS (
    SELECT
        g.*,
        CAST(GREATEST(g.in_bytes, COALESCE(c.hits, 0) + COALESCE(c.misses, 0)) AS DOUBLE) AS ib,
        CASE WHEN COALESCE(c.hits, 0) + COALESCE(c.misses, 0) > 0
             THEN CAST(COALESCE(c.hits, 0) AS DOUBLE) / (COALESCE(c.hits, 0) + COALESCE(c.misses, 0))
             ELSE 0.0 END AS cache_hit_ratio,
        CAST(g.n AS DOUBLE) AS nd
    FROM agg g
    LEFT JOIN cache c USING (app_id, att, sql_id)
)
SELECT
    b.app_id,
    NULLIF(b.att, '') AS app_attempt_id,
    b.sql_id,
    e.resource_profile_id,
    a.app_name AS "appName",
    a.app_duration_ms AS "appDuration",
    q.duration_ms AS "Duration",
    q.description,
    q.plan_hash AS hash,
    'SPARK' AS "sparkRuntime",
    a.spark_version AS "sparkVersion",
    false AS "pluginEnabled",
    b.fraction_supported,
    b.supported_task_ms,
    b.n AS "numTasks_sum",
    b.dsum AS duration_sum,
    b.dmax AS duration_max,
    b.dmin AS duration_min,
    b.dsum / b.nd AS duration_mean,
    b.in_records AS "input_recordsRead_sum",
    b.out_records AS "output_recordsWritten_sum",
    b.peak_mem AS "peakExecutionMemory_max",
    b.ser_ms AS "resultSerializationTime_sum",
    b.result_size AS "resultSize_max",
    b.sr_local_blocks AS "sr_localBlocksFetched_sum",
    b.sr_remote_blocks AS "sr_remoteBlocksFetched_sum",
    b.sw_records AS "sw_recordsWritten_sum",
    e.num_executors AS "numExecutors",
    e.cores AS "executorCores",
    e.max_mem AS "maxMem",
    e.max_on_heap AS "maxOnHeapMem",
    e.max_off_heap AS "maxOffHeapMem",
    e.executor_memory AS "executorMemory",
    e.gpus AS "numGpusPerExecutor",
    e.offheap AS "executorOffHeap",
    e.task_cpu AS "taskCpu",
    e.task_gpu AS "taskGpu",
    CASE WHEN q.duration_ms > 0 THEN b.dsum / CAST(q.duration_ms AS DOUBLE) ELSE 0.0 END AS duration_ratio,
    CAST(COALESCE(f.failed_tasks, 0) AS DOUBLE) AS failed_tasks,
    CASE WHEN b.n > 0 THEN COALESCE(f.failed_tasks, 0) / b.nd ELSE 0.0 END AS failed_tasks_ratio,
    b.cache_hit_ratio,
    CASE WHEN COALESCE(s.scan_time, 0) > 0
         THEN COALESCE(s.data_size, 0) / CAST(s.scan_time AS DOUBLE) ELSE 0.0 END AS scan_bw,
    CAST(COALESCE(s.scan_time, 0) AS DOUBLE) AS scan_time,
    CAST(COALESCE(s.decode_time, 0) AS DOUBLE) AS decode_time,
    CAST(COALESCE(s.data_size, 0) AS DOUBLE) AS data_size,
    CASE WHEN b.fetch_wait_ms > 0 THEN b.sr_total_bytes / CAST(b.fetch_wait_ms AS DOUBLE) ELSE 0.0 END AS shuffle_read_bw,
    CASE WHEN b.sw_write_ms > 0 THEN b.sw_bytes / CAST(b.sw_write_ms AS DOUBLE) ELSE 0.0 END AS shuffle_write_bw,
    CASE WHEN b.ib > 0 THEN b.disk_spill / b.ib ELSE 0.0 END AS "diskBytesSpilledRatio",
    CASE WHEN b.ib > 0 THEN b.mem_spill / b.ib ELSE 0.0 END AS "memoryBytesSpilledRatio",
    CASE WHEN b.ib > 0 THEN b.ib / b.ib ELSE 0.0 END AS "input_bytesReadRatio",
    CASE WHEN b.ib > 0 THEN b.out_bytes / b.ib ELSE 0.0 END AS "output_bytesWrittenRatio",
    CASE WHEN b.ib > 0 THEN b.sr_local_bytes / b.ib ELSE 0.0 END AS "sr_localBytesReadRatio",
    CASE WHEN b.ib > 0 THEN b.sr_remote_bytes / b.ib ELSE 0.0 END AS "sr_remoteBytesReadRatio",
    CASE WHEN b.ib > 0 THEN b.sr_remote_disk / b.ib ELSE 0.0 END AS "sr_remoteBytesReadToDiskRatio",
    CASE WHEN b.ib > 0 THEN b.sr_total_bytes / b.ib ELSE 0.0 END AS "sr_totalBytesReadRatio",
    CASE WHEN b.ib > 0 THEN b.sw_bytes / b.ib ELSE 0.0 END AS "sw_bytesWrittenRatio",
    CASE WHEN b.n > 0 THEN b.disk_spill / b.nd ELSE 0.0 END AS "diskBytesSpilled_mean",
    CASE WHEN b.n > 0 THEN b.mem_spill / b.nd ELSE 0.0 END AS "memoryBytesSpilled_mean",
    CASE WHEN b.n > 0 THEN b.ib / b.nd ELSE 0.0 END AS "input_bytesRead_mean",
    CASE WHEN b.n > 0 THEN b.out_bytes / b.nd ELSE 0.0 END AS "output_bytesWritten_mean",
    CASE WHEN b.n > 0 THEN b.sr_local_bytes / b.nd ELSE 0.0 END AS "sr_localBytesRead_mean",
    CASE WHEN b.n > 0 THEN b.sr_remote_bytes / b.nd ELSE 0.0 END AS "sr_remoteBytesRead_mean",
    CASE WHEN b.n > 0 THEN b.sr_remote_disk / b.nd ELSE 0.0 END AS "sr_remoteBytesReadToDisk_mean",
    CASE WHEN b.n > 0 THEN b.sr_total_bytes / b.nd ELSE 0.0 END AS "sr_totalBytesRead_mean",
    CASE WHEN b.n > 0 THEN b.sw_bytes / b.nd ELSE 0.0 END AS "sw_bytesWritten_mean",
    CASE WHEN b.n > 0 THEN b.cpu_ms / b.nd ELSE 0.0 END AS "executorCPUTime_mean",
    CASE WHEN b.n > 0 THEN b.deser_cpu_ms / b.nd ELSE 0.0 END AS "executorDeserializeCPUTime_mean",
    CASE WHEN b.n > 0 THEN b.deser_ms / b.nd ELSE 0.0 END AS "executorDeserializeTime_mean",
    CASE WHEN b.n > 0 THEN b.run_ms / b.nd ELSE 0.0 END AS "executorRunTime_mean",
    CASE WHEN b.n > 0 THEN b.gc_ms / b.nd ELSE 0.0 END AS "jvmGCTime_mean",
    CASE WHEN b.n > 0 THEN b.fetch_wait_ms / b.nd ELSE 0.0 END AS "sr_fetchWaitTime_mean",
    CASE WHEN b.n > 0 THEN b.sw_write_ms / b.nd ELSE 0.0 END AS "sw_writeTime_mean",
    COALESCE(of."sqlOp_AQEShuffleRead", 0) AS "sqlOp_AQEShuffleRead",
    COALESCE(of."sqlOp_BatchEvalPython", 0) AS "sqlOp_BatchEvalPython",
    COALESCE(of."sqlOp_BroadcastExchange", 0) AS "sqlOp_BroadcastExchange",
    COALESCE(of."sqlOp_BroadcastHashJoin", 0) AS "sqlOp_BroadcastHashJoin",
    COALESCE(of."sqlOp_BroadcastNestedLoopJoin", 0) AS "sqlOp_BroadcastNestedLoopJoin",
    COALESCE(of."sqlOp_CartesianProduct", 0) AS "sqlOp_CartesianProduct",
    COALESCE(of."sqlOp_ColumnarToRow", 0) AS "sqlOp_ColumnarToRow",
    COALESCE(of."sqlOp_CommandResult", 0) AS "sqlOp_CommandResult",
    COALESCE(of."sqlOp_CustomShuffleReader", 0) AS "sqlOp_CustomShuffleReader",
    COALESCE(of."sqlOp_DeserializeToObject", 0) AS "sqlOp_DeserializeToObject",
    COALESCE(of."sqlOp_Exchange", 0) AS "sqlOp_Exchange",
    COALESCE(of."sqlOp_Execute InsertIntoHadoopFsRelationCommand csv", 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand csv",
    COALESCE(of."sqlOp_Execute InsertIntoHadoopFsRelationCommand json", 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand json",
    COALESCE(of."sqlOp_Execute InsertIntoHadoopFsRelationCommand orc", 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand orc",
    COALESCE(of."sqlOp_Execute InsertIntoHadoopFsRelationCommand parquet", 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand parquet",
    COALESCE(of."sqlOp_Execute InsertIntoHadoopFsRelationCommand text", 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand text",
    COALESCE(of."sqlOp_Execute InsertIntoHadoopFsRelationCommand unknown", 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand unknown",
    COALESCE(of."sqlOp_Expand", 0) AS "sqlOp_Expand",
    COALESCE(of."sqlOp_Filter", 0) AS "sqlOp_Filter",
    COALESCE(of."sqlOp_Generate", 0) AS "sqlOp_Generate",
    COALESCE(of."sqlOp_GenerateBloomFilter", 0) AS "sqlOp_GenerateBloomFilter",
    COALESCE(of."sqlOp_GlobalLimit", 0) AS "sqlOp_GlobalLimit",
    COALESCE(of."sqlOp_HashAggregate", 0) AS "sqlOp_HashAggregate",
    COALESCE(of."sqlOp_HashAggregatePrefixGroupingSets", 0) AS "sqlOp_HashAggregatePrefixGroupingSets",
    COALESCE(of."sqlOp_LocalLimit", 0) AS "sqlOp_LocalLimit",
    COALESCE(of."sqlOp_LocalTableScan", 0) AS "sqlOp_LocalTableScan",
    COALESCE(of."sqlOp_MapElements", 0) AS "sqlOp_MapElements",
    COALESCE(of."sqlOp_ObjectHashAggregate", 0) AS "sqlOp_ObjectHashAggregate",
    COALESCE(of."sqlOp_OutputAdapter", 0) AS "sqlOp_OutputAdapter",
    COALESCE(of."sqlOp_PartialWindow", 0) AS "sqlOp_PartialWindow",
    COALESCE(of."sqlOp_Project", 0) AS "sqlOp_Project",
    COALESCE(of."sqlOp_ReusedSort", 0) AS "sqlOp_ReusedSort",
    COALESCE(of."sqlOp_RunningWindowFunction", 0) AS "sqlOp_RunningWindowFunction",
    COALESCE(of."sqlOp_Scan csv", 0) AS "sqlOp_Scan csv",
    COALESCE(of."sqlOp_Scan ExistingRDD", 0) AS "sqlOp_Scan ExistingRDD",
    COALESCE(of."sqlOp_Scan ExistingRDD Delta Table Checkpoint", 0) AS "sqlOp_Scan ExistingRDD Delta Table Checkpoint",
    COALESCE(of."sqlOp_Scan ExistingRDD Delta Table State", 0) AS "sqlOp_Scan ExistingRDD Delta Table State",
    COALESCE(of."sqlOp_Scan jdbc", 0) AS "sqlOp_Scan jdbc",
    COALESCE(of."sqlOp_Scan json", 0) AS "sqlOp_Scan json",
    COALESCE(of."sqlOp_Scan OneRowRelation", 0) AS "sqlOp_Scan OneRowRelation",
    COALESCE(of."sqlOp_Scan orc", 0) AS "sqlOp_Scan orc",
    COALESCE(of."sqlOp_Scan parquet", 0) AS "sqlOp_Scan parquet",
    COALESCE(of."sqlOp_Scan text", 0) AS "sqlOp_Scan text",
    COALESCE(of."sqlOp_Scan unknown", 0) AS "sqlOp_Scan unknown",
    COALESCE(of."sqlOp_SerializeFromObject", 0) AS "sqlOp_SerializeFromObject",
    COALESCE(of."sqlOp_Sort", 0) AS "sqlOp_Sort",
    COALESCE(of."sqlOp_SortAggregate", 0) AS "sqlOp_SortAggregate",
    COALESCE(of."sqlOp_SortMergeJoin", 0) AS "sqlOp_SortMergeJoin",
    COALESCE(of."sqlOp_Subquery", 0) AS "sqlOp_Subquery",
    COALESCE(of."sqlOp_SubqueryBroadcast", 0) AS "sqlOp_SubqueryBroadcast",
    COALESCE(of."sqlOp_SubqueryOutputBroadcast", 0) AS "sqlOp_SubqueryOutputBroadcast",
    COALESCE(of."sqlOp_TakeOrderedAndProject", 0) AS "sqlOp_TakeOrderedAndProject",
    COALESCE(of."sqlOp_Window", 0) AS "sqlOp_Window",
    COALESCE(of."sqlOp_WindowGroupLimit", 0) AS "sqlOp_WindowGroupLimit",
    COALESCE(of."sqlOp_WindowSort", 0) AS "sqlOp_WindowSort"
FROM base b
JOIN with_tasks USING (app_id, att, sql_id)
JOIN with_execs USING (app_id, att, sql_id)
JOIN app a ON a.app_id = b.app_id AND a.att = b.att
JOIN sql_executions q
    ON q.app_id = b.app_id AND COALESCE(q.app_attempt_id, '') = b.att AND q.sql_id = b.sql_id
JOIN exec_info e ON e.app_id = b.app_id AND e.att = b.att
LEFT JOIN failed f ON f.app_id = b.app_id AND f.att = b.att AND f.sql_id = b.sql_id
LEFT JOIN scans s ON s.app_id = b.app_id AND s.att = b.att AND s.sql_id = b.sql_id
LEFT JOIN op_flags of ON of.app_id = b.app_id AND of.att = b.att AND of.sql_id = b.sql_id
