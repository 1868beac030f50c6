-- GPU task metrics of the RAPIDS plugin (stage_gpu_metrics) combined per SQL execution and per
-- app, as the profiler's gpu_{sql,app}_level_aggregated_task_metrics do: the stages each one ran
-- (a stage whose tasks never moved the metric is left out, as at stage level), the totals and
-- extremes combined, the mean and (sample) standard deviation of the tasks' values.
WITH g AS (SELECT * FROM stage_gpu_metrics WHERE max <> 0),
members AS (
    SELECT DISTINCT app_id, 'sql' AS level, sql_id AS key, stage_id
    FROM stage_jobs WHERE sql_id IS NOT NULL
    UNION ALL
    SELECT DISTINCT app_id, 'app' AS level, 0 AS key, stage_id FROM stage_gpu_metrics
),
c AS (
    SELECT m.app_id, m.level, m.key, g.metric, g.unit, g.kind,
           SUM(g.samples) AS samples, SUM(g.sum) AS sum, SUM(g.task_sum) AS task_sum,
           MAX(g.max) AS max, MIN(g.min) AS min, SUM(g.sum_squares) AS sum_squares
    FROM members m JOIN g ON g.app_id = m.app_id AND g.stage_id = m.stage_id
    GROUP BY m.app_id, m.level, m.key, g.metric, g.unit, g.kind
)
SELECT
    app_id, level, key,
    metric AS "metricName",
    unit AS "unit",
    CASE WHEN kind = 'sum' THEN sum END AS "sum",
    max AS "max",
    round(CAST(task_sum AS DOUBLE) / samples, 2) AS "avg",
    samples AS "sampleCount",
    min AS "min",
    round(sqrt(greatest(sum_squares - samples * power(CAST(task_sum AS DOUBLE) / samples, 2), 0) / NULLIF(samples - 1, 0)), 2) AS "stddev",
    round(sqrt(greatest(sum_squares - samples * power(CAST(task_sum AS DOUBLE) / samples, 2), 0) / NULLIF(samples - 1, 0))
          / NULLIF(CAST(task_sum AS DOUBLE) / samples, 0), 2) AS "cv",
    round(max / NULLIF(CAST(task_sum AS DOUBLE) / samples, 0), 2) AS "maxOverMean"
FROM c
