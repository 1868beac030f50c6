-- The profiler's stage_level_aggregated_task_metrics: per stage that ran, its tasks' metrics
-- (profile_task_agg) and the stage's own duration: its attempt's, or the sum of its attempts'
-- (an unfinished one counting 0), as the profiler adds up the attempts of a retried stage.
WITH d AS (
    SELECT app_id, stage_id,
           CASE WHEN COUNT(*) = 1 THEN MAX(complete_ms - submit_ms)
                ELSE SUM(COALESCE(complete_ms - submit_ms, 0)) END AS duration
    FROM stages WHERE submit_ms IS NOT NULL GROUP BY app_id, stage_id
)
SELECT
    a.app_id,
    a.key AS "stageId",
    a."numTasks",
    d.duration AS "Duration",
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
FROM profile_task_agg a JOIN d ON d.app_id = a.app_id AND d.stage_id = a.key
WHERE a.level = 'stage'
