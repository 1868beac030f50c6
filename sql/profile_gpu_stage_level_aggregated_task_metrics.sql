-- The profiler's gpu_stage_level_aggregated_task_metrics: per stage and GPU task metric of the
-- RAPIDS plugin (stage_gpu_metrics), the tasks that reported it, the stage's total (none for
-- per-task peaks), the largest, the mean of the tasks' values, the smallest, their (sample)
-- standard deviation, its ratio to the mean and the largest over the mean.
WITH n AS (SELECT app_id, stage_id, COUNT(*) AS tasks FROM tasks GROUP BY app_id, stage_id)
SELECT
    g.app_id,
    g.stage_id AS "stageId",
    n.tasks AS "numTasks",
    g.metric AS "metricName",
    g.unit AS "unit",
    CASE WHEN g.kind = 'sum' THEN g.sum END AS "sum",
    g.max AS "max",
    round(CAST(g.task_sum AS DOUBLE) / g.samples, 2) AS "avg",
    g.samples AS "sampleCount",
    g.min AS "min",
    round(sqrt(greatest(g.sum_squares - g.samples * power(CAST(g.task_sum AS DOUBLE) / g.samples, 2), 0) / NULLIF(g.samples - 1, 0)), 2) AS "stddev",
    round(sqrt(greatest(g.sum_squares - g.samples * power(CAST(g.task_sum AS DOUBLE) / g.samples, 2), 0) / NULLIF(g.samples - 1, 0))
          / NULLIF(CAST(g.task_sum AS DOUBLE) / g.samples, 0), 2) AS "cv",
    round(g.max / NULLIF(CAST(g.task_sum AS DOUBLE) / g.samples, 0), 2) AS "maxOverMean"
FROM stage_gpu_metrics g
LEFT JOIN n ON n.app_id = g.app_id AND n.stage_id = g.stage_id
-- a metric no task of the stage moved is left out
WHERE g.max <> 0
