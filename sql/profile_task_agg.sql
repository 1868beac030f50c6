-- Task metrics aggregated the way the profiler's {stage,job,sql}_level_aggregated_task_metrics
-- tables do, for the three levels at once (one aggregate list): per stage that ran, per job
-- (the tasks of its stages) and per SQL execution (the tasks of its jobs' stages, each stage
-- once). CPU and write times are summed in ns, then whole ms.
WITH t AS (
    SELECT app_id, stage_id, duration_ms, disk_bytes_spilled, memory_bytes_spilled,
           executor_cpu_time_ns AS cpu_ns,
           executor_deserialize_cpu_time_ns AS deser_cpu_ns,
           executor_deserialize_time_ms, executor_run_time_ms, input_bytes_read,
           input_records_read, jvm_gc_time_ms, output_bytes_written, output_records_written,
           peak_execution_memory_bytes, result_serialization_time_ms, result_size_bytes,
           shuffle_fetch_wait_time_ms, shuffle_local_blocks_fetched, shuffle_local_bytes_read,
           shuffle_remote_blocks_fetched, shuffle_remote_bytes_read,
           shuffle_remote_bytes_read_to_disk, shuffle_bytes_written, shuffle_records_written,
           shuffle_write_time_ns AS write_ns
    FROM tasks
),
m AS (
    SELECT DISTINCT app_id, 'stage' AS level, stage_id AS key, stage_id
    FROM stages WHERE submit_ms IS NOT NULL
    UNION ALL
    SELECT DISTINCT app_id, 'job' AS level, job_id AS key, stage_id FROM stage_jobs
    UNION ALL
    SELECT DISTINCT app_id, 'sql' AS level, sql_id AS key, stage_id
    FROM stage_jobs WHERE sql_id IS NOT NULL
),
-- CPU and write times in whole ms per stage; a job or SQL sums its stages' (as the profiler)
stage_ms AS (
    SELECT app_id, stage_id, SUM(cpu_ns) / 1000000 AS cpu_ms,
           SUM(deser_cpu_ns) / 1000000 AS deser_cpu_ms, SUM(write_ns) / 1000000 AS write_ms
    FROM t GROUP BY app_id, stage_id
),
level_ms AS (
    SELECT m.app_id, m.level, m.key, SUM(s.cpu_ms) AS cpu_ms,
           SUM(s.deser_cpu_ms) AS deser_cpu_ms, SUM(s.write_ms) AS write_ms
    FROM m JOIN stage_ms s ON s.app_id = m.app_id AND s.stage_id = m.stage_id
    GROUP BY m.app_id, m.level, m.key
),
agg AS (
SELECT
    m.app_id,
    m.level,
    m.key,
    COUNT(t.stage_id) AS "numTasks",
    COALESCE(SUM(disk_bytes_spilled), 0) AS "diskBytesSpilled_sum",
    COALESCE(SUM(duration_ms), 0) AS "duration_sum",
    COALESCE(MAX(duration_ms), 0) AS "duration_max",
    MIN(duration_ms) AS "duration_min",
    COALESCE(round(AVG(CAST(duration_ms AS DOUBLE)), 1), 0.0) AS "duration_avg",
    COALESCE(SUM(cpu_ns), 0) / 1000000 AS "executorCPUTime_sum",
    COALESCE(SUM(deser_cpu_ns), 0) / 1000000 AS "executorDeserializeCPUTime_sum",
    COALESCE(SUM(executor_deserialize_time_ms), 0) AS "executorDeserializeTime_sum",
    COALESCE(SUM(executor_run_time_ms), 0) AS "executorRunTime_sum",
    COALESCE(SUM(input_bytes_read), 0) AS "input_bytesRead_sum",
    COALESCE(MAX(input_bytes_read), 0) AS "input_bytesRead_max",
    COALESCE(SUM(input_records_read), 0) AS "input_recordsRead_sum",
    COALESCE(SUM(jvm_gc_time_ms), 0) AS "jvmGCTime_sum",
    COALESCE(SUM(memory_bytes_spilled), 0) AS "memoryBytesSpilled_sum",
    COALESCE(SUM(output_bytes_written), 0) AS "output_bytesWritten_sum",
    COALESCE(SUM(output_records_written), 0) AS "output_recordsWritten_sum",
    COALESCE(MAX(peak_execution_memory_bytes), 0) AS "peakExecutionMemory_max",
    COALESCE(SUM(result_serialization_time_ms), 0) AS "resultSerializationTime_sum",
    COALESCE(MAX(result_size_bytes), 0) AS "resultSize_max",
    COALESCE(SUM(shuffle_fetch_wait_time_ms), 0) AS "sr_fetchWaitTime_sum",
    COALESCE(SUM(shuffle_local_blocks_fetched), 0) AS "sr_localBlocksFetched_sum",
    COALESCE(SUM(shuffle_local_bytes_read), 0) AS "sr_localBytesRead_sum",
    COALESCE(SUM(shuffle_remote_blocks_fetched), 0) AS "sr_remoteBlocksFetched_sum",
    COALESCE(SUM(shuffle_remote_bytes_read), 0) AS "sr_remoteBytesRead_sum",
    COALESCE(SUM(shuffle_remote_bytes_read_to_disk), 0) AS "sr_remoteBytesReadToDisk_sum",
    COALESCE(SUM(shuffle_local_bytes_read + shuffle_remote_bytes_read), 0) AS "sr_totalBytesRead_sum",
    COALESCE(SUM(shuffle_bytes_written), 0) AS "sw_bytesWritten_sum",
    COALESCE(SUM(shuffle_records_written), 0) AS "sw_recordsWritten_sum",
    COALESCE(SUM(write_ns), 0) / 1000000 AS "sw_writeTime_sum"
FROM m LEFT JOIN t ON t.app_id = m.app_id AND t.stage_id = m.stage_id
GROUP BY m.app_id, m.level, m.key
)
SELECT
    agg.* EXCLUDE ("executorCPUTime_sum", "executorDeserializeCPUTime_sum", "sw_writeTime_sum"),
    COALESCE(l.cpu_ms, 0) AS "executorCPUTime_sum",
    COALESCE(l.deser_cpu_ms, 0) AS "executorDeserializeCPUTime_sum",
    COALESCE(l.write_ms, 0) AS "sw_writeTime_sum"
FROM agg LEFT JOIN level_ms l ON l.app_id = agg.app_id AND l.level = agg.level AND l.key = agg.key
