-- The profiler's failed_jobs: each failed job, its SQL execution, its result and why (line
-- breaks and tabs written as \n and \t, as the profiler writes them).
SELECT
    app_id,
    job_id AS "jobID",
    sql_id AS "sqlID",
    'JobFailed' AS "jobResult",
    'java.lang.Exception: '
        || replace(replace(COALESCE(failure_reason, ''), chr(10), '\n'), chr(9), '\t') AS "failureReason"
FROM jobs
WHERE status = 'failed'
