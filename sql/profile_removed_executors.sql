-- The profiler's removed_executors: every executor an ExecutorRemoved event took away, when and
-- why (line breaks and tabs written as \n and \t, as the profiler writes them).
SELECT
    app_id,
    executor_id AS "executorId",
    removed_ms AS "time",
    replace(replace(COALESCE(removed_reason, ''), chr(10), '\n'), chr(9), '\t') AS reason
FROM executors
WHERE removed_ms IS NOT NULL
