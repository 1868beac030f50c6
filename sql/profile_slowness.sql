-- Why a GPU run was slow, ranked by the time each cause cost (beyond the reference profiler):
-- per app, the task time of the stages where plan nodes fell back to the CPU and of the tasks
-- that spilled (the time those causes touched: an upper bound of what they cost), and the time
-- spent waiting for shuffle blocks and writing shuffle data, waiting for the GPU (semaphore),
-- spilling GPU memory, redoing work after GPU OOM retries (the plugin's task metrics) and in
-- JVM GC, each with its share of the app's task time and what would help.
WITH total AS (
    SELECT app_id, SUM(duration_ms) AS ms FROM tasks GROUP BY app_id
),
fallback_stages AS (
    SELECT DISTINCT f.app_id, UNNEST(f.stage_ids) AS stage_id FROM profile_cpu_fallbacks f
),
fallback_ops AS (
    SELECT app_id, string_agg(DISTINCT operator, ', ') AS ops FROM profile_cpu_fallbacks
    WHERE kind = 'cpu' GROUP BY app_id
),
causes AS (
    SELECT s.app_id, 'CPU fallbacks' AS cause, SUM(t.duration_ms) AS time_ms,
           COALESCE('operators on the CPU: ' || MAX(o.ops), 'row/columnar transitions between the GPU and the CPU') AS detail,
           'check why each operator is not on the GPU (profile_cpu_fallbacks.why); avoid UDFs and unsupported types or expressions in those stages' AS remedy
    FROM fallback_stages s JOIN tasks t ON t.app_id = s.app_id AND t.stage_id = s.stage_id
    LEFT JOIN fallback_ops o ON o.app_id = s.app_id
    GROUP BY s.app_id
    UNION ALL
    SELECT app_id, 'spill', SUM(duration_ms) FILTER (WHERE memory_bytes_spilled + disk_bytes_spilled > 0),
           'spilled ' || format_bytes(SUM(memory_bytes_spilled)) || ' from memory, ' || format_bytes(SUM(disk_bytes_spilled)) || ' to disk',
           'more shuffle partitions (spark.sql.shuffle.partitions), fewer concurrent GPU tasks (spark.rapids.sql.concurrentGpuTasks), more pinned memory'
    FROM tasks GROUP BY app_id HAVING SUM(memory_bytes_spilled + disk_bytes_spilled) > 0
    UNION ALL
    SELECT app_id, 'shuffle', SUM(shuffle_fetch_wait_time_ms) + SUM(shuffle_write_time_ns) / 1000000,
           'read ' || format_bytes(SUM(shuffle_remote_bytes_read + shuffle_local_bytes_read)) || ', wrote ' || format_bytes(SUM(shuffle_bytes_written)),
           'the RAPIDS shuffle manager (spark.shuffle.manager), more shuffle threads (spark.rapids.shuffle.multiThreaded.*.threads)'
    FROM tasks GROUP BY app_id
    HAVING SUM(shuffle_fetch_wait_time_ms) + SUM(shuffle_write_time_ns) / 1000000 > 0
    UNION ALL
    SELECT app_id, 'GPU semaphore wait', SUM(sum), 'tasks waiting for their turn on the GPU',
           'fewer tasks per executor than the GPU can hold, or more concurrent GPU tasks (spark.rapids.sql.concurrentGpuTasks) when GPU memory allows'
    FROM stage_gpu_metrics WHERE metric = 'gpuSemaphoreWait' GROUP BY app_id
    UNION ALL
    SELECT app_id, 'GPU spill', SUM(sum), 'GPU memory spilled to host or disk and read back',
           'more GPU memory per task: fewer concurrent GPU tasks, more shuffle partitions, smaller file partitions'
    FROM stage_gpu_metrics
    WHERE metric IN ('gpuSpillToHostTime', 'gpuSpillToDiskTime', 'gpuReadSpillFromHostTime', 'gpuReadSpillFromDiskTime')
    GROUP BY app_id
    UNION ALL
    SELECT app_id, 'GPU OOM retries', SUM(sum), 'work redone or blocked after GPU out-of-memory retries',
           'fewer concurrent GPU tasks (spark.rapids.sql.concurrentGpuTasks), smaller batches and partitions'
    FROM stage_gpu_metrics WHERE metric IN ('gpuRetryBlockTime', 'gpuRetryComputationTime')
    GROUP BY app_id
    UNION ALL
    SELECT app_id, 'JVM GC', SUM(jvm_gc_time_ms), 'garbage collection in the executors',
           'another garbage collector (G1GC), more executor memory, fewer rows converted to the CPU'
    FROM tasks GROUP BY app_id HAVING SUM(jvm_gc_time_ms) > 0
)
SELECT
    c.app_id,
    ROW_NUMBER() OVER (PARTITION BY c.app_id ORDER BY c.time_ms DESC, c.cause) AS rank,
    c.cause,
    c.time_ms,
    round(100.0 * c.time_ms / NULLIF(t.ms, 0), 1) AS task_time_pct,
    c.detail,
    c.remedy
FROM causes c JOIN total t ON t.app_id = c.app_id
JOIN profile_application_information a ON a.app_id = c.app_id
WHERE a."pluginEnabled" AND c.time_ms > 0
