-- The profiler's failed_stages: each failed stage attempt with its reason (trimmed; line
-- breaks and tabs written as \n and \t, as the profiler writes them).
SELECT
    app_id,
    stage_id AS "stageId",
    attempt_id AS "attemptId",
    name AS "name",
    num_tasks AS "numTasks",
    replace(replace(btrim(COALESCE(failure_reason, ''),
                          ' ' || chr(9) || chr(10) || chr(11) || chr(12) || chr(13)),
                    chr(10), '\n'), chr(9), '\t') AS "failureReason"
FROM stages
WHERE status = 'failed'
