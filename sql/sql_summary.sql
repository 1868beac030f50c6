-- One row per SQL execution: wall time, outcome, its jobs and stages, task time, CPU, rows and
-- bytes read and written (task metrics over its stages), shuffle, spill, GC.
WITH jobs_of AS (
    SELECT app_id, app_attempt_id, sql_id,
           COUNT(*) AS jobs_count,
           COUNT(*) FILTER (WHERE status = 'failed') AS jobs_failed_count,
           array_agg(job_id ORDER BY job_id) AS job_ids
    FROM jobs WHERE sql_id IS NOT NULL
    GROUP BY app_id, app_attempt_id, sql_id
),
stages_of AS (
    SELECT
        x.app_id, x.app_attempt_id, x.sql_id,
        COUNT(*) AS stage_attempts_count,
        array_sort(array_agg(DISTINCT x.stage_id)) AS stage_ids,
        SUM(s.tasks_count) AS tasks_count,
        SUM(s.tasks_failed_count) AS tasks_failed_count,
        SUM(s.task_time_ms) AS task_time_ms,
        SUM(s.run_time_ms) AS run_time_ms,
        SUM(s.cpu_time_ms) AS cpu_time_ms,
        SUM(s.gc_time_ms) AS gc_time_ms,
        SUM(s.input_records) AS rows_read,
        SUM(s.output_records) AS rows_written,
        SUM(s.input_bytes) AS bytes_read,
        SUM(s.output_bytes) AS bytes_written,
        SUM(s.shuffle_read_bytes) AS shuffle_read_bytes,
        SUM(s.shuffle_write_bytes) AS shuffle_write_bytes,
        SUM(s.memory_spill_bytes) AS memory_spill_bytes,
        SUM(s.disk_spill_bytes) AS disk_spill_bytes
    FROM sql_stages x
    JOIN stage_summary s
      ON s.app_id = x.app_id AND (s.app_attempt_id IS NOT DISTINCT FROM x.app_attempt_id)
     AND s.stage_id = x.stage_id AND s.stage_attempt_id = x.stage_attempt_id
    GROUP BY x.app_id, x.app_attempt_id, x.sql_id
)
SELECT
    q.app_id,
    q.app_attempt_id,
    q.sql_id,
    q.root_sql_id,
    q.description,
    q.start_ms,
    q.end_ms,
    q.duration_ms,
    CASE WHEN q.error IS NOT NULL THEN 'failed'
         WHEN q.end_ms IS NULL THEN 'running'
         ELSE 'succeeded' END AS status,
    COALESCE(j.jobs_count, 0) AS jobs_count,
    COALESCE(j.jobs_failed_count, 0) AS jobs_failed_count,
    j.job_ids,
    COALESCE(s.stage_attempts_count, 0) AS stage_attempts_count,
    s.stage_ids,
    COALESCE(s.tasks_count, 0) AS tasks_count,
    COALESCE(s.tasks_failed_count, 0) AS tasks_failed_count,
    COALESCE(s.task_time_ms, 0) AS task_time_ms,
    COALESCE(s.run_time_ms, 0) AS run_time_ms,
    COALESCE(s.cpu_time_ms, 0) AS cpu_time_ms,
    s.cpu_time_ms / NULLIF(s.run_time_ms, 0) AS cpu_time_ratio,
    COALESCE(s.gc_time_ms, 0) AS gc_time_ms,
    COALESCE(s.rows_read, 0) AS rows_read,
    COALESCE(s.rows_written, 0) AS rows_written,
    COALESCE(s.bytes_read, 0) AS bytes_read,
    COALESCE(s.bytes_written, 0) AS bytes_written,
    COALESCE(s.shuffle_read_bytes, 0) AS shuffle_read_bytes,
    COALESCE(s.shuffle_write_bytes, 0) AS shuffle_write_bytes,
    COALESCE(s.memory_spill_bytes, 0) AS memory_spill_bytes,
    COALESCE(s.disk_spill_bytes, 0) AS disk_spill_bytes
FROM sql_executions q
LEFT JOIN jobs_of j
  ON j.app_id = q.app_id AND (j.app_attempt_id IS NOT DISTINCT FROM q.app_attempt_id) AND j.sql_id = q.sql_id
LEFT JOIN stages_of s
  ON s.app_id = q.app_id AND (s.app_attempt_id IS NOT DISTINCT FROM q.app_attempt_id) AND s.sql_id = q.sql_id
