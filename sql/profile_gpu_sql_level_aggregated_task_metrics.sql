-- The profiler's gpu_sql_level_aggregated_task_metrics (profile_gpu_task_metrics, per SQL).
SELECT app_id, key AS "sqlId", "metricName", "unit", "sum", "max", "avg", "sampleCount",
       "min", "stddev", "cv", "maxOverMean"
FROM profile_gpu_task_metrics WHERE level = 'sql'
