-- The profiler's shuffle_skew_check: the tasks whose shuffle read is more than 3 times their
-- stage attempt's mean and more than 100 MiB, with the stage attempt's means (all its tasks,
-- any status). Times in seconds, sizes in MiB.
WITH t AS (
    SELECT app_id, stage_id, stage_attempt_id, task_id, attempt, duration_ms, status,
           end_reason, failure_detail, peak_execution_memory_bytes,
           shuffle_remote_bytes_read + shuffle_local_bytes_read AS r
    FROM tasks
),
m AS (
    SELECT app_id, stage_id, stage_attempt_id,
           ROUND(AVG(duration_ms), 2) AS avg_duration, ROUND(AVG(r), 2) AS avg_r
    FROM t GROUP BY app_id, stage_id, stage_attempt_id
)
SELECT
    t.app_id,
    t.stage_id AS "stageId",
    t.stage_attempt_id AS "stageAttemptId",
    t.task_id AS "taskId",
    t.attempt,
    ROUND(t.duration_ms / 1000.0, 2) AS "taskDurationSec",
    ROUND(m.avg_duration / 1000.0, 1) AS "avgDurationSec",
    ROUND(t.r / 1048576.0, 2) AS "taskShuffleReadMB",
    ROUND(m.avg_r / 1048576.0, 2) AS "avgShuffleReadMB",
    ROUND(t.peak_execution_memory_bytes / 1048576.0, 2) AS "taskPeakMemoryMB",
    t.status = 'success' AS successful,
    CASE WHEN t.status = 'success' THEN 'Success'
         ELSE replace(replace(COALESCE(t.failure_detail, t.end_reason, ''), chr(10), '\n'), chr(9), '\t')
    END AS reason
FROM t
JOIN m ON m.app_id = t.app_id AND m.stage_id = t.stage_id AND m.stage_attempt_id = t.stage_attempt_id
WHERE t.r > 3 * m.avg_r AND t.r > 104857600
