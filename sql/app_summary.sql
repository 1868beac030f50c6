-- One row per application attempt: duration, executors and cores over time (peak and
-- time-weighted average), task time and CPU share, jobs / stages / tasks by status, rows and bytes
-- read and written, shuffle, spill and GC totals.
-- Executors here are those that run tasks: the driver counts only in local mode (where
-- ExecutorAdded announces it with its cores), not for its block manager alone.
WITH execs AS (
    SELECT * FROM executors WHERE NOT (executor_id = 'driver' AND cores IS NULL)
),
bounds AS (
    SELECT
        a.app_id,
        a.attempt_id AS app_attempt_id,
        a.start_ms,
        -- an in-progress log has no end: the last thing that finished stands in for it
        COALESCE(a.end_ms, GREATEST(j.last_job_end_ms, t.last_task_end_ms)) AS end_ms
    FROM applications a
    LEFT JOIN (SELECT app_id, app_attempt_id, MAX(end_ms) AS last_job_end_ms
               FROM jobs GROUP BY app_id, app_attempt_id) j
      ON j.app_id = a.app_id AND (j.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
    LEFT JOIN (SELECT app_id, app_attempt_id, MAX(finish_ms) AS last_task_end_ms
               FROM tasks GROUP BY app_id, app_attempt_id) t
      ON t.app_id = a.app_id AND (t.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
),
exec_life AS (
    SELECT
        e.app_id,
        e.app_attempt_id,
        e.cores,
        GREATEST(e.added_ms, b.start_ms) AS from_ms,
        LEAST(COALESCE(e.removed_ms, b.end_ms), b.end_ms) AS to_ms
    FROM execs e
    JOIN bounds b ON b.app_id = e.app_id AND (b.app_attempt_id IS NOT DISTINCT FROM e.app_attempt_id)
),
exec_avg AS (
    SELECT
        l.app_id,
        l.app_attempt_id,
        COUNT(*) AS executors_count,
        SUM(GREATEST(l.to_ms - l.from_ms, 0)) AS executor_ms,
        SUM(GREATEST(l.to_ms - l.from_ms, 0) * l.cores) AS core_ms
    FROM exec_life l
    GROUP BY l.app_id, l.app_attempt_id
),
exec_events AS (
    SELECT app_id, app_attempt_id, added_ms AS at_ms, 1 AS d_executors, cores AS d_cores
    FROM execs WHERE added_ms IS NOT NULL
    UNION ALL
    SELECT app_id, app_attempt_id, removed_ms, -1, -cores
    FROM execs WHERE removed_ms IS NOT NULL
),
exec_running AS (
    SELECT
        app_id,
        app_attempt_id,
        -- removals before additions at the same millisecond
        SUM(d_executors) OVER (PARTITION BY app_id, app_attempt_id ORDER BY at_ms, d_executors
                               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS executors,
        SUM(d_cores) OVER (PARTITION BY app_id, app_attempt_id ORDER BY at_ms, d_executors
                           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cores
    FROM exec_events
),
exec_peak AS (
    SELECT app_id, app_attempt_id, MAX(executors) AS executors_peak_count,
           MAX(cores) AS cores_peak_count
    FROM exec_running GROUP BY app_id, app_attempt_id
),
job_counts AS (
    SELECT app_id, app_attempt_id,
           COUNT(*) AS jobs_count,
           COUNT(*) FILTER (WHERE status = 'succeeded') AS jobs_succeeded_count,
           COUNT(*) FILTER (WHERE status = 'failed') AS jobs_failed_count
    FROM jobs GROUP BY app_id, app_attempt_id
),
stage_counts AS (
    SELECT app_id, app_attempt_id,
           COUNT(*) AS stage_attempts_count,
           COUNT(*) FILTER (WHERE status = 'complete') AS stages_complete_count,
           COUNT(*) FILTER (WHERE status = 'failed') AS stages_failed_count,
           COUNT(*) FILTER (WHERE status = 'skipped') AS stages_skipped_count
    FROM stages GROUP BY app_id, app_attempt_id
),
sql_counts AS (
    SELECT app_id, app_attempt_id, COUNT(*) AS sql_count,
           COUNT(*) FILTER (WHERE error IS NOT NULL) AS sql_failed_count
    FROM sql_executions GROUP BY app_id, app_attempt_id
),
task_totals AS (
    SELECT
        app_id,
        app_attempt_id,
        COUNT(*) AS tasks_count,
        COUNT(*) FILTER (WHERE status = 'success') AS tasks_succeeded_count,
        COUNT(*) FILTER (WHERE status = 'failed') AS tasks_failed_count,
        COUNT(*) FILTER (WHERE status = 'killed') AS tasks_killed_count,
        SUM(duration_ms) AS task_time_ms,
        SUM(executor_run_time_ms) AS run_time_ms,
        SUM(executor_cpu_time_ns) / 1e6 AS cpu_time_ms,
        SUM(jvm_gc_time_ms) AS gc_time_ms,
        SUM(input_records_read) AS rows_read,
        SUM(output_records_written) AS rows_written,
        SUM(input_bytes_read) AS bytes_read,
        SUM(output_bytes_written) AS bytes_written,
        SUM(shuffle_remote_bytes_read + shuffle_local_bytes_read) AS shuffle_read_bytes,
        SUM(shuffle_bytes_written) AS shuffle_write_bytes,
        SUM(memory_bytes_spilled) AS memory_spill_bytes,
        SUM(disk_bytes_spilled) AS disk_spill_bytes
    FROM tasks GROUP BY app_id, app_attempt_id
)
SELECT
    a.app_id,
    a.attempt_id AS app_attempt_id,
    a.app_name,
    a.spark_version,
    a.complete,
    b.start_ms,
    b.end_ms,
    b.end_ms - b.start_ms AS duration_ms,
    COALESCE(x.executors_count, 0) AS executors_count,
    COALESCE(p.executors_peak_count, 0) AS executors_peak_count,
    CAST(x.executor_ms AS DOUBLE) / NULLIF(b.end_ms - b.start_ms, 0) AS executors_avg_count,
    COALESCE(p.cores_peak_count, 0) AS cores_peak_count,
    CAST(x.core_ms AS DOUBLE) / NULLIF(b.end_ms - b.start_ms, 0) AS cores_avg_count,
    COALESCE(jc.jobs_count, 0) AS jobs_count,
    COALESCE(jc.jobs_succeeded_count, 0) AS jobs_succeeded_count,
    COALESCE(jc.jobs_failed_count, 0) AS jobs_failed_count,
    COALESCE(sc.stage_attempts_count, 0) AS stage_attempts_count,
    COALESCE(sc.stages_complete_count, 0) AS stages_complete_count,
    COALESCE(sc.stages_failed_count, 0) AS stages_failed_count,
    COALESCE(sc.stages_skipped_count, 0) AS stages_skipped_count,
    COALESCE(q.sql_count, 0) AS sql_count,
    COALESCE(q.sql_failed_count, 0) AS sql_failed_count,
    COALESCE(t.tasks_count, 0) AS tasks_count,
    COALESCE(t.tasks_succeeded_count, 0) AS tasks_succeeded_count,
    COALESCE(t.tasks_failed_count, 0) AS tasks_failed_count,
    COALESCE(t.tasks_killed_count, 0) AS tasks_killed_count,
    COALESCE(t.task_time_ms, 0) AS task_time_ms,
    COALESCE(t.run_time_ms, 0) AS run_time_ms,
    COALESCE(t.cpu_time_ms, 0) AS cpu_time_ms,
    t.cpu_time_ms / NULLIF(t.run_time_ms, 0) AS cpu_time_ratio,
    COALESCE(t.gc_time_ms, 0) AS gc_time_ms,
    CAST(t.gc_time_ms AS DOUBLE) / NULLIF(t.run_time_ms, 0) AS gc_ratio,
    COALESCE(t.rows_read, 0) AS rows_read,
    COALESCE(t.rows_written, 0) AS rows_written,
    COALESCE(t.bytes_read, 0) AS bytes_read,
    COALESCE(t.bytes_written, 0) AS bytes_written,
    COALESCE(t.shuffle_read_bytes, 0) AS shuffle_read_bytes,
    COALESCE(t.shuffle_write_bytes, 0) AS shuffle_write_bytes,
    COALESCE(t.memory_spill_bytes, 0) AS memory_spill_bytes,
    COALESCE(t.disk_spill_bytes, 0) AS disk_spill_bytes
FROM applications a
JOIN bounds b ON b.app_id = a.app_id AND (b.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
LEFT JOIN exec_avg x ON x.app_id = a.app_id AND (x.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
LEFT JOIN exec_peak p ON p.app_id = a.app_id AND (p.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
LEFT JOIN job_counts jc ON jc.app_id = a.app_id AND (jc.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
LEFT JOIN stage_counts sc ON sc.app_id = a.app_id AND (sc.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
LEFT JOIN sql_counts q ON q.app_id = a.app_id AND (q.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
LEFT JOIN task_totals t ON t.app_id = a.app_id AND (t.app_attempt_id IS NOT DISTINCT FROM a.attempt_id)
