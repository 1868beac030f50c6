-- The profiler's sql_plan_metrics_for_application: every SQL metric of every node of each SQL
-- execution's final plan (WholeStageCodegen clusters and their members), with the task
-- updates' smallest, "median" (the reference's running mean, see sql_metrics.task_mean),
-- largest and total, each the larger of the task side and this SQL's driver-side updates; the
-- GPU peak-memory style metrics total their largest task. The stages are those that
-- updated the node's metrics. Metrics no task or driver ever updated are left out, as the reference does.
WITH m AS (
    SELECT m.*, n.node_name
    FROM sql_plan_nodes n
    JOIN sql_metrics m ON m.app_id = n.app_id AND m.sql_id = n.sql_id
     AND m.plan_version = n.plan_version AND m.node_id = n.node_id
    WHERE n.is_final
),
node_stages AS (
    -- the node's raw stages: those whose tasks (or StageCompleted) updated any of its metrics
    SELECT app_id, sql_id, node_id, string_agg(CAST(stage_id AS VARCHAR), ',' ORDER BY stage_id) AS ids
    FROM (SELECT DISTINCT app_id, sql_id, node_id, UNNEST(update_stage_ids) AS stage_id FROM m) x
    GROUP BY app_id, sql_id, node_id
)
SELECT
    m.app_id,
    m.sql_id AS "sqlID",
    m.node_id AS "nodeID",
    m.node_name AS "nodeName",
    m.accumulator_id AS "accumulatorId",
    m.name,
    GREATEST(COALESCE(m.task_min, 0), COALESCE(m.driver_min, 0)) AS min,
    GREATEST(COALESCE(m.task_mean, 0), COALESCE(m.driver_median, 0)) AS median,
    GREATEST(COALESCE(m.task_max, 0), COALESCE(m.driver_max, 0)) AS max,
    GREATEST(
        CASE WHEN m.name IN ('gpuMaxPageableMemoryBytes', 'gpuMaxDeviceMemoryBytes',
                             'gpuMaxHostMemoryBytes', 'gpuMaxPinnedMemoryBytes',
                             'gpuMaxDiskMemoryBytes', 'gpuMaxTaskFootprint',
                             'gpuOnGpuTasksWaitingGPUMaxCount', 'gpuMaxConcurrentGpuTasks',
                             'multithreadReaderMaxParallelism')
             THEN COALESCE(m.task_max, 0) ELSE COALESCE(m.task_total, 0) END,
        COALESCE(m.driver_total, 0)) AS total,
    m.metric_type AS "metricType",
    COALESCE(s.ids, '') AS "stageIds"
FROM m
LEFT JOIN node_stages s ON s.app_id = m.app_id AND s.sql_id = m.sql_id AND s.node_id = m.node_id
WHERE m.task_count IS NOT NULL OR m.driver_total IS NOT NULL
