-- The profiler's sql_level_aggregated_task_metrics: per SQL execution, the metrics of its
-- tasks (profile_task_agg), its duration and its executors' CPU share of run time (%).
SELECT
    a.app_id,
    a.app_id AS "appID",
    a.key AS "sqlID",
    e.description AS "description",
    a."numTasks",
    e.duration_ms AS "Duration",
    CASE WHEN a."executorRunTime_sum" > 0
         THEN round(100.0 * a."executorCPUTime_sum" / a."executorRunTime_sum", 2) ELSE 0.0 END
        AS "executorCPURatio",
    a."diskBytesSpilled_sum",
    a."duration_sum",
    a."duration_max",
    a."duration_min",
    a."duration_avg",
    a."executorCPUTime_sum",
    a."executorDeserializeCPUTime_sum",
    a."executorDeserializeTime_sum",
    a."executorRunTime_sum",
    a."input_bytesRead_sum",
    a."input_bytesRead_max",
    a."input_recordsRead_sum",
    a."jvmGCTime_sum",
    a."memoryBytesSpilled_sum",
    a."output_bytesWritten_sum",
    a."output_recordsWritten_sum",
    a."peakExecutionMemory_max",
    a."resultSerializationTime_sum",
    a."resultSize_max",
    a."sr_fetchWaitTime_sum",
    a."sr_localBlocksFetched_sum",
    a."sr_localBytesRead_sum",
    a."sr_remoteBlocksFetched_sum",
    a."sr_remoteBytesRead_sum",
    a."sr_remoteBytesReadToDisk_sum",
    a."sr_totalBytesRead_sum",
    a."sw_bytesWritten_sum",
    a."sw_recordsWritten_sum",
    a."sw_writeTime_sum"
FROM profile_task_agg a JOIN sql_executions e ON e.app_id = a.app_id AND e.sql_id = a.key
WHERE a.level = 'sql'
