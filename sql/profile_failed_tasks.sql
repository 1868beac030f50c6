-- The profiler's failed_tasks: each task attempt that failed or was killed, why (as Spark
-- renders it: the exception with its stack trace, the kill reason, the lost executor or the
-- failed fetch; line breaks and tabs written as \n and \t, as the profiler writes them), and
-- its metrics (0 where the task reported none, as for a lost executor's tasks).
SELECT
    app_id,
    stage_id AS "stageId",
    stage_attempt_id AS "stageAttemptId",
    task_id AS "taskId",
    attempt AS "attempt",
    replace(replace(COALESCE(failure_detail, end_reason, ''), chr(10), '\n'), chr(9), '\t')
        AS "failureReason",
    upper(status) AS "taskStatus",
    task_type AS "taskType",
    COALESCE(speculative, false) AS "speculative",
    COALESCE(duration_ms, 0) AS "duration",
    COALESCE(disk_bytes_spilled, 0) AS "diskBytesSpilled",
    COALESCE(executor_cpu_time_ns, 0) AS "executorCPUTimeNS",
    COALESCE(executor_deserialize_cpu_time_ns, 0) AS "executorDeserializeCPUTimeNS",
    COALESCE(executor_deserialize_time_ms, 0) AS "executorDeserializeTime",
    COALESCE(executor_run_time_ms, 0) AS "executorRunTime",
    COALESCE(input_bytes_read, 0) AS "input_bytesRead",
    COALESCE(input_records_read, 0) AS "input_recordsRead",
    COALESCE(jvm_gc_time_ms, 0) AS "jvmGCTime",
    COALESCE(memory_bytes_spilled, 0) AS "memoryBytesSpilled",
    COALESCE(output_bytes_written, 0) AS "output_bytesWritten",
    COALESCE(output_records_written, 0) AS "output_recordsWritten",
    COALESCE(peak_execution_memory_bytes, 0) AS "peakExecutionMemory",
    COALESCE(result_serialization_time_ms, 0) AS "resultSerializationTime",
    COALESCE(result_size_bytes, 0) AS "resultSize",
    COALESCE(shuffle_fetch_wait_time_ms, 0) AS "sr_fetchWaitTime",
    COALESCE(shuffle_local_blocks_fetched, 0) AS "sr_localBlocksFetched",
    COALESCE(shuffle_local_bytes_read, 0) AS "sr_localBytesRead",
    COALESCE(shuffle_remote_blocks_fetched, 0) AS "sr_remoteBlocksFetched",
    COALESCE(shuffle_remote_bytes_read, 0) AS "sr_remoteBytesRead",
    COALESCE(shuffle_remote_bytes_read_to_disk, 0) AS "sr_remoteBytesReadToDisk",
    COALESCE(shuffle_local_bytes_read + shuffle_remote_bytes_read, 0) AS "sr_totalBytesRead",
    COALESCE(shuffle_bytes_written, 0) AS "sw_bytesWritten",
    COALESCE(shuffle_records_written, 0) AS "sw_recordsWritten",
    COALESCE(shuffle_write_time_ns, 0) AS "sw_writeTimeNS"
FROM tasks
WHERE status IN ('failed', 'killed')
