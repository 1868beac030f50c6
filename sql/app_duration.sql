-- Per application: its duration as the qualification tool counts it — ApplicationEnd minus
-- ApplicationStart, else (a log cut short) the last SQL or job end minus the start.
SELECT
    a.app_id,
    a.attempt_id AS app_attempt_id,
    a.start_ms,
    e.end_ms,
    e.end_ms - a.start_ms AS app_duration_ms
FROM applications a
JOIN (
    SELECT a.app_id, a.attempt_id,
           COALESCE(a.end_ms, GREATEST(q.last_sql_end_ms, j.last_job_end_ms)) AS end_ms
    FROM applications a
    LEFT JOIN (SELECT app_id, app_attempt_id, MAX(end_ms) AS last_sql_end_ms FROM sql_executions
               GROUP BY app_id, app_attempt_id) q
      ON q.app_id = a.app_id AND (q.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
    LEFT JOIN (SELECT app_id, app_attempt_id, MAX(end_ms) AS last_job_end_ms FROM jobs
               GROUP BY app_id, app_attempt_id) j
      ON j.app_id = a.app_id AND (j.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
) e ON e.app_id = a.app_id AND (e.attempt_id IS NOT DISTINCT FROM a.attempt_id)
