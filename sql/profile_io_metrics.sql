-- The profiler's io_metrics: per SQL execution, the bytes and records its tasks read, wrote,
-- spilled and shuffled (profile_task_agg).
SELECT
    a.app_id,
    a.app_id AS "appID",
    a.key AS "sqlID",
    a."input_bytesRead_sum",
    a."input_recordsRead_sum",
    a."output_bytesWritten_sum",
    a."output_recordsWritten_sum",
    a."diskBytesSpilled_sum",
    a."memoryBytesSpilled_sum",
    a."sr_totalBytesRead_sum",
    a."sw_bytesWritten_sum"
FROM profile_task_agg a
JOIN sql_executions e ON e.app_id = a.app_id AND e.sql_id = a.key
WHERE a.level = 'sql'
