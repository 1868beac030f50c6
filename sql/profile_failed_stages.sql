-- The profiler's failed_stages: each failed stage attempt with its reason (line breaks and
-- tabs written as \n and \t, as the profiler writes them).
SELECT
    app_id,
    stage_id AS "stageId",
    attempt_id AS "attemptId",
    name AS "name",
    num_tasks AS "numTasks",
    replace(replace(COALESCE(failure_reason, ''), chr(10), '\n'), chr(9), '\t') AS "failureReason"
FROM stages
WHERE status = 'failed'
