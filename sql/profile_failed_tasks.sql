-- The profiler's failed_tasks: each task attempt that failed or was killed, why (the exception
-- with its stack trace as the executor printed it, or the kill reason; line breaks and tabs
-- written as \n and \t, as the profiler writes them), and its metrics.
SELECT
    app_id,
    stage_id AS "stageId",
    stage_attempt_id AS "stageAttemptId",
    task_id AS "taskId",
    attempt AS "attempt",
    replace(replace(
        CASE
            WHEN failure_detail IS NOT NULL THEN failure_detail
            WHEN end_reason LIKE 'TaskKilled: %' THEN 'TaskKilled (' || substr(end_reason, 13) || ')'
            ELSE COALESCE(end_reason, '')
        END, chr(10), '\n'), chr(9), '\t') AS "failureReason",
    upper(status) AS "taskStatus",
    task_type AS "taskType",
    COALESCE(speculative, false) AS "speculative",
    duration_ms AS "duration",
    disk_bytes_spilled AS "diskBytesSpilled",
    executor_cpu_time_ns AS "executorCPUTimeNS",
    executor_deserialize_cpu_time_ns AS "executorDeserializeCPUTimeNS",
    executor_deserialize_time_ms AS "executorDeserializeTime",
    executor_run_time_ms AS "executorRunTime",
    input_bytes_read AS "input_bytesRead",
    input_records_read AS "input_recordsRead",
    jvm_gc_time_ms AS "jvmGCTime",
    memory_bytes_spilled AS "memoryBytesSpilled",
    output_bytes_written AS "output_bytesWritten",
    output_records_written AS "output_recordsWritten",
    peak_execution_memory_bytes AS "peakExecutionMemory",
    result_serialization_time_ms AS "resultSerializationTime",
    result_size_bytes AS "resultSize",
    shuffle_fetch_wait_time_ms AS "sr_fetchWaitTime",
    shuffle_local_blocks_fetched AS "sr_localBlocksFetched",
    shuffle_local_bytes_read AS "sr_localBytesRead",
    shuffle_remote_blocks_fetched AS "sr_remoteBlocksFetched",
    shuffle_remote_bytes_read AS "sr_remoteBytesRead",
    shuffle_remote_bytes_read_to_disk AS "sr_remoteBytesReadToDisk",
    shuffle_local_bytes_read + shuffle_remote_bytes_read AS "sr_totalBytesRead",
    shuffle_bytes_written AS "sw_bytesWritten",
    shuffle_records_written AS "sw_recordsWritten",
    shuffle_write_time_ns AS "sw_writeTimeNS"
FROM tasks
WHERE status IN ('failed', 'killed')
