-- QualX building block: per stage, its task metrics over the stage attempts Spark submitted or
-- completed (failed and killed tasks included; CPU and shuffle-write ns truncated to ms per
-- attempt), as the reference tool aggregates them (docs/reference/qualx-features.md §2.1).
WITH known_attempt AS (
    -- stage attempts Spark submitted or completed, with their tasks (any status)
    SELECT
        s.app_id, COALESCE(s.app_attempt_id, '') AS att, s.stage_id, s.attempt_id,
        COUNT(t.task_id) AS n,
        COALESCE(SUM(t.duration_ms), 0) AS dsum,
        COALESCE(MAX(t.duration_ms), 0) AS dmax,
        COALESCE(MIN(t.duration_ms), 0) AS dmin,
        COALESCE(SUM(t.executor_cpu_time_ns), 0) / 1000000 AS cpu_ms,
        COALESCE(SUM(t.executor_deserialize_cpu_time_ns), 0) / 1000000 AS deser_cpu_ms,
        COALESCE(SUM(t.shuffle_write_time_ns), 0) / 1000000 AS sw_write_ms,
        COALESCE(SUM(t.executor_deserialize_time_ms), 0) AS deser_ms,
        COALESCE(SUM(t.executor_run_time_ms), 0) AS run_ms,
        COALESCE(SUM(t.jvm_gc_time_ms), 0) AS gc_ms,
        COALESCE(SUM(t.result_serialization_time_ms), 0) AS ser_ms,
        COALESCE(SUM(t.shuffle_fetch_wait_time_ms), 0) AS fetch_wait_ms,
        COALESCE(SUM(t.disk_bytes_spilled), 0) AS disk_spill,
        COALESCE(SUM(t.memory_bytes_spilled), 0) AS mem_spill,
        COALESCE(SUM(t.input_bytes_read), 0) AS in_bytes,
        COALESCE(SUM(t.input_records_read), 0) AS in_records,
        COALESCE(SUM(t.output_bytes_written), 0) AS out_bytes,
        COALESCE(SUM(t.output_records_written), 0) AS out_records,
        COALESCE(SUM(t.shuffle_local_blocks_fetched), 0) AS sr_local_blocks,
        COALESCE(SUM(t.shuffle_local_bytes_read), 0) AS sr_local_bytes,
        COALESCE(SUM(t.shuffle_remote_blocks_fetched), 0) AS sr_remote_blocks,
        COALESCE(SUM(t.shuffle_remote_bytes_read), 0) AS sr_remote_bytes,
        COALESCE(SUM(t.shuffle_remote_bytes_read_to_disk), 0) AS sr_remote_disk,
        COALESCE(SUM(t.shuffle_remote_bytes_read + t.shuffle_local_bytes_read), 0) AS sr_total_bytes,
        COALESCE(SUM(t.shuffle_bytes_written), 0) AS sw_bytes,
        COALESCE(SUM(t.shuffle_records_written), 0) AS sw_records,
        COALESCE(MAX(t.peak_execution_memory_bytes), 0) AS peak_mem,
        COALESCE(MAX(t.result_size_bytes), 0) AS result_size
    FROM stages s
    LEFT JOIN tasks t
        ON t.app_id = s.app_id AND (t.app_attempt_id IS NOT DISTINCT FROM s.app_attempt_id)
        AND t.stage_id = s.stage_id AND t.stage_attempt_id = s.attempt_id
    WHERE s.status IN ('complete', 'failed', 'active')
    GROUP BY s.app_id, COALESCE(s.app_attempt_id, ''), s.stage_id, s.attempt_id
)
SELECT
    app_id, att, stage_id, COUNT(*) AS attempts,
    SUM(n) AS n, SUM(dsum) AS dsum, MAX(dmax) AS dmax, MIN(dmin) AS dmin,
    SUM(cpu_ms) AS cpu_ms, SUM(deser_cpu_ms) AS deser_cpu_ms, SUM(sw_write_ms) AS sw_write_ms,
    SUM(deser_ms) AS deser_ms, SUM(run_ms) AS run_ms, SUM(gc_ms) AS gc_ms, SUM(ser_ms) AS ser_ms,
    SUM(fetch_wait_ms) AS fetch_wait_ms, SUM(disk_spill) AS disk_spill,
    SUM(mem_spill) AS mem_spill, SUM(in_bytes) AS in_bytes, SUM(in_records) AS in_records,
    SUM(out_bytes) AS out_bytes, SUM(out_records) AS out_records,
    SUM(sr_local_blocks) AS sr_local_blocks, SUM(sr_local_bytes) AS sr_local_bytes,
    SUM(sr_remote_blocks) AS sr_remote_blocks, SUM(sr_remote_bytes) AS sr_remote_bytes,
    SUM(sr_remote_disk) AS sr_remote_disk, SUM(sr_total_bytes) AS sr_total_bytes,
    SUM(sw_bytes) AS sw_bytes, SUM(sw_records) AS sw_records, MAX(peak_mem) AS peak_mem,
    MAX(result_size) AS result_size
FROM known_attempt
GROUP BY app_id, att, stage_id
