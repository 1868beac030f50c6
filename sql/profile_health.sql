-- The health of a run, per app (beyond the reference's separate tables): failed tasks (and
-- those that failed on a GPU out-of-memory error), failed stages and jobs, executors removed and
-- why, skewed shuffle stages (a task reading > 3 x its stage's mean shuffle bytes, > 100 MiB)
-- and spill.
WITH t AS (
    SELECT app_id,
           COUNT(*) FILTER (WHERE status = 'failed') AS failed_tasks,
           COUNT(*) FILTER (WHERE status = 'failed'
                              AND (end_reason LIKE '%GpuRetryOOM%' OR end_reason LIKE '%GpuSplitAndRetryOOM%'
                                   OR end_reason LIKE '%jni.GpuOOM%' OR end_reason LIKE '%SplitAndRetryOOM%'
                                   OR end_reason LIKE '%RetryOOM%' OR end_reason LIKE '%GPU OutOfMemory%'))
               AS gpu_oom_tasks,
           COUNT(*) FILTER (WHERE status = 'failed'
                              AND (end_reason LIKE '%Exit status: 137%' OR end_reason LIKE '%OutOfMemoryError%'))
               AS container_oom_tasks,
           SUM(memory_bytes_spilled) AS memory_spilled,
           SUM(disk_bytes_spilled) AS disk_spilled
    FROM tasks GROUP BY app_id
),
s AS (
    SELECT app_id, COUNT(*) FILTER (WHERE status = 'failed') AS failed_stages FROM stages GROUP BY app_id
),
j AS (
    SELECT app_id, COUNT(*) FILTER (WHERE status = 'failed') AS failed_jobs FROM jobs GROUP BY app_id
),
e AS (
    SELECT app_id, COUNT(*) FILTER (WHERE removed_ms IS NOT NULL AND executor_id <> 'driver') AS removed_executors,
           string_agg(DISTINCT removed_reason, '; ') AS removed_reasons
    FROM executors GROUP BY app_id
),
skew AS (
    SELECT app_id, COUNT(DISTINCT "stageId") AS skewed_stages
    FROM profile_shuffle_skew_check GROUP BY app_id
)
SELECT
    a.app_id,
    COALESCE(t.failed_tasks, 0) AS failed_tasks,
    COALESCE(t.gpu_oom_tasks, 0) AS gpu_oom_tasks,
    COALESCE(t.container_oom_tasks, 0) AS container_oom_tasks,
    COALESCE(s.failed_stages, 0) AS failed_stages,
    COALESCE(j.failed_jobs, 0) AS failed_jobs,
    COALESCE(e.removed_executors, 0) AS removed_executors,
    COALESCE(e.removed_reasons, '') AS removed_reasons,
    COALESCE(skew.skewed_stages, 0) AS skewed_stages,
    COALESCE(t.memory_spilled, 0) AS memory_spilled_bytes,
    COALESCE(t.disk_spilled, 0) AS disk_spilled_bytes
FROM applications a
LEFT JOIN t ON t.app_id = a.app_id
LEFT JOIN s ON s.app_id = a.app_id
LEFT JOIN j ON j.app_id = a.app_id
LEFT JOIN e ON e.app_id = a.app_id
LEFT JOIN skew ON skew.app_id = a.app_id
