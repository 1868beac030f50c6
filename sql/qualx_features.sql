-- QualX model inputs: one row per (app, SQL execution, executor resource profile), the features
-- NVIDIA's qualification tool (QualX) computes from a CPU event log and feeds its XGBoost model
-- (docs/reference/qualx-features.md says how each is defined, and tests/tests/qualx_features.rs
-- compares every value with the reference tool's features.csv). Column names are the model's
-- feature names. A SQL gets a row when its jobs ran tasks in stages its final plan's metrics
-- were updated in; its task metrics are aggregated over those stages (S(q)), supported or not.
WITH job_stage AS (
    SELECT app_id, COALESCE(app_attempt_id, '') AS att, sql_id, stage_id
    FROM stage_jobs
    WHERE sql_id IS NOT NULL AND sql_id >= 0
),
-- R2: the SQL's jobs ran tasks in known stages
with_tasks AS (
    SELECT j.app_id, j.att, j.sql_id
    FROM job_stage j
    JOIN qualx_stage_agg g ON g.app_id = j.app_id AND g.att = j.att AND g.stage_id = j.stage_id
    GROUP BY j.app_id, j.att, j.sql_id
    HAVING SUM(g.n) > 0
),
-- R3: a known stage of the SQL's jobs is one its final plan's metrics were updated in
with_execs AS (
    SELECT DISTINCT j.app_id, j.att, j.sql_id
    FROM job_stage j
    JOIN qualx_stage_agg g ON g.app_id = j.app_id AND g.att = j.att AND g.stage_id = j.stage_id
    JOIN qualx_node_stages r ON r.app_id = j.app_id AND r.att = j.att AND r.sql_id = j.sql_id
        AND r.stage_id = j.stage_id
),
-- failed or killed task attempts of the SQL's job stages, once per job listing and stage attempt.
-- As the reference tool judges by the TaskInfo: a finished shuffle-map task re-run because its
-- output was lost with its executor (end reason Resubmitted, TaskInfo still successful) is not a
-- failure here, while tasks.status keeps Spark's count (failed).
failed AS (
    SELECT j.app_id, j.att, j.sql_id, SUM(f.n * g.attempts) AS failed_tasks
    FROM job_stage j
    JOIN (
        SELECT app_id, COALESCE(app_attempt_id, '') AS att, stage_id, COUNT(*) AS n
        FROM tasks WHERE status <> 'success' AND end_reason IS DISTINCT FROM 'Resubmitted'
        GROUP BY app_id, COALESCE(app_attempt_id, ''), stage_id
    ) f ON f.app_id = j.app_id AND f.att = j.att AND f.stage_id = j.stage_id
    JOIN qualx_stage_agg g ON g.app_id = j.app_id AND g.att = j.att AND g.stage_id = j.stage_id
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
    FROM qualx_node_metrics
    WHERE total IS NOT NULL
      AND ((node_name LIKE 'Scan %' AND node_name NOT LIKE 'Scan OneRowRelation%')
           OR node_name LIKE '%BatchScan%')
    GROUP BY app_id, att, sql_id
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
    WHERE (cores IS NOT NULL OR max_memory_bytes IS NOT NULL)
      AND NOT (executor_id = 'driver' AND cores IS NULL)
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
FROM qualx_sql_agg b
JOIN with_tasks USING (app_id, att, sql_id)
JOIN with_execs USING (app_id, att, sql_id)
JOIN app a ON a.app_id = b.app_id AND a.att = b.att
JOIN sql_executions q
    ON q.app_id = b.app_id AND COALESCE(q.app_attempt_id, '') = b.att AND q.sql_id = b.sql_id
JOIN exec_info e ON e.app_id = b.app_id AND e.att = b.att
LEFT JOIN failed f ON f.app_id = b.app_id AND f.att = b.att AND f.sql_id = b.sql_id
LEFT JOIN scans s ON s.app_id = b.app_id AND s.att = b.att AND s.sql_id = b.sql_id
LEFT JOIN qualx_op_flags of ON of.app_id = b.app_id AND of.att = b.att AND of.sql_id = b.sql_id
