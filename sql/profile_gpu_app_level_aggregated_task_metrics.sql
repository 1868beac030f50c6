-- The profiler's gpu_app_level_aggregated_task_metrics (profile_gpu_task_metrics, per app).
SELECT app_id, app_id AS "appId", "metricName", "unit", "sum", "max", "avg", "sampleCount",
       "min", "stddev", "cv", "maxOverMean"
FROM profile_gpu_task_metrics WHERE level = 'app'
