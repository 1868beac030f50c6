-- One row per stage attempt: tasks by status, task duration / run-time distribution (successful
-- tasks), skew, I/O, shuffle, spill, GC and fetch-wait shares, scheduler delay, executors used.
WITH t AS (
    SELECT
        app_id,
        app_attempt_id,
        stage_id,
        stage_attempt_id,
        COUNT(*) AS tasks_count,
        COUNT(*) FILTER (WHERE status = 'success') AS tasks_succeeded_count,
        COUNT(*) FILTER (WHERE status = 'failed') AS tasks_failed_count,
        COUNT(*) FILTER (WHERE status = 'killed') AS tasks_killed_count,
        COUNT(*) FILTER (WHERE speculative) AS tasks_speculative_count,
        MIN(duration_ms) FILTER (WHERE status = 'success') AS task_duration_min_ms,
        percentile_cont(duration_ms, 0.5) FILTER (WHERE status = 'success') AS task_duration_p50_ms,
        percentile_cont(duration_ms, 0.95) FILTER (WHERE status = 'success') AS task_duration_p95_ms,
        MAX(duration_ms) FILTER (WHERE status = 'success') AS task_duration_max_ms,
        MIN(executor_run_time_ms) FILTER (WHERE status = 'success') AS run_time_min_ms,
        percentile_cont(executor_run_time_ms, 0.5) FILTER (WHERE status = 'success') AS run_time_p50_ms,
        percentile_cont(executor_run_time_ms, 0.95) FILTER (WHERE status = 'success') AS run_time_p95_ms,
        MAX(executor_run_time_ms) FILTER (WHERE status = 'success') AS run_time_max_ms,
        SUM(duration_ms) AS task_time_ms,
        SUM(executor_run_time_ms) AS run_time_ms,
        SUM(executor_cpu_time_ns) / 1e6 AS cpu_time_ms,
        SUM(jvm_gc_time_ms) AS gc_time_ms,
        SUM(input_bytes_read) AS input_bytes,
        SUM(input_records_read) AS input_records,
        SUM(output_bytes_written) AS output_bytes,
        SUM(output_records_written) AS output_records,
        SUM(shuffle_remote_bytes_read + shuffle_local_bytes_read) AS shuffle_read_bytes,
        SUM(shuffle_records_read) AS shuffle_read_records,
        SUM(shuffle_bytes_written) AS shuffle_write_bytes,
        SUM(shuffle_records_written) AS shuffle_write_records,
        SUM(shuffle_fetch_wait_time_ms) AS shuffle_fetch_wait_ms,
        SUM(memory_bytes_spilled) AS memory_spill_bytes,
        SUM(disk_bytes_spilled) AS disk_spill_bytes,
        MAX(peak_execution_memory_bytes) AS peak_execution_memory_max_bytes,
        SUM(GREATEST(duration_ms - executor_run_time_ms - executor_deserialize_time_ms
            - result_serialization_time_ms, 0)) AS scheduler_delay_ms,
        COUNT(DISTINCT executor_id) AS executors_used_count
    FROM tasks
    GROUP BY app_id, app_attempt_id, stage_id, stage_attempt_id
)
SELECT
    s.app_id,
    s.app_attempt_id,
    s.stage_id,
    s.attempt_id AS stage_attempt_id,
    sj.job_id,
    sj.sql_id,
    s.name,
    s.status,
    s.num_tasks,
    s.submit_ms,
    s.complete_ms,
    s.complete_ms - s.submit_ms AS duration_ms,
    COALESCE(t.tasks_count, 0) AS tasks_count,
    COALESCE(t.tasks_succeeded_count, 0) AS tasks_succeeded_count,
    COALESCE(t.tasks_failed_count, 0) AS tasks_failed_count,
    COALESCE(t.tasks_killed_count, 0) AS tasks_killed_count,
    COALESCE(t.tasks_speculative_count, 0) AS tasks_speculative_count,
    t.task_duration_min_ms,
    t.task_duration_p50_ms,
    t.task_duration_p95_ms,
    t.task_duration_max_ms,
    t.run_time_min_ms,
    t.run_time_p50_ms,
    t.run_time_p95_ms,
    t.run_time_max_ms,
    CAST(t.task_duration_max_ms AS DOUBLE) / NULLIF(t.task_duration_p50_ms, 0) AS skew_ratio,
    COALESCE(t.task_time_ms, 0) AS task_time_ms,
    COALESCE(t.run_time_ms, 0) AS run_time_ms,
    COALESCE(t.cpu_time_ms, 0) AS cpu_time_ms,
    COALESCE(t.gc_time_ms, 0) AS gc_time_ms,
    CAST(t.gc_time_ms AS DOUBLE) / NULLIF(t.run_time_ms, 0) AS gc_ratio,
    COALESCE(t.input_bytes, 0) AS input_bytes,
    COALESCE(t.input_records, 0) AS input_records,
    COALESCE(t.output_bytes, 0) AS output_bytes,
    COALESCE(t.output_records, 0) AS output_records,
    COALESCE(t.shuffle_read_bytes, 0) AS shuffle_read_bytes,
    COALESCE(t.shuffle_read_records, 0) AS shuffle_read_records,
    COALESCE(t.shuffle_write_bytes, 0) AS shuffle_write_bytes,
    COALESCE(t.shuffle_write_records, 0) AS shuffle_write_records,
    COALESCE(t.shuffle_fetch_wait_ms, 0) AS shuffle_fetch_wait_ms,
    CAST(t.shuffle_fetch_wait_ms AS DOUBLE) / NULLIF(t.run_time_ms, 0) AS shuffle_fetch_wait_ratio,
    COALESCE(t.memory_spill_bytes, 0) AS memory_spill_bytes,
    COALESCE(t.disk_spill_bytes, 0) AS disk_spill_bytes,
    t.peak_execution_memory_max_bytes,
    COALESCE(t.scheduler_delay_ms, 0) AS scheduler_delay_ms,
    CAST(t.scheduler_delay_ms AS DOUBLE) / NULLIF(t.tasks_count, 0) AS scheduler_delay_avg_ms,
    COALESCE(t.executors_used_count, 0) AS executors_used_count
FROM stages s
LEFT JOIN t
  ON t.app_id = s.app_id AND (t.app_attempt_id IS NOT DISTINCT FROM s.app_attempt_id)
 AND t.stage_id = s.stage_id AND t.stage_attempt_id = s.attempt_id
LEFT JOIN (
    SELECT app_id, app_attempt_id, stage_id, MIN(job_id) AS job_id, MIN(sql_id) AS sql_id
    FROM stage_jobs
    GROUP BY app_id, app_attempt_id, stage_id
) sj
  ON sj.app_id = s.app_id AND (sj.app_attempt_id IS NOT DISTINCT FROM s.app_attempt_id)
 AND sj.stage_id = s.stage_id
