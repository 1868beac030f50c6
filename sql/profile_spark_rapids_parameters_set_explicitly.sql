-- The profiler's spark_rapids_parameters_set_explicitly: the RAPIDS plugin's properties, UCX
-- settings and the shuffle manager the run set.
SELECT app_id, key AS "propertyName", value AS "propertyValue"
FROM properties
WHERE category = 'spark'
  AND (starts_with(key, 'spark.rapids.') OR starts_with(key, 'spark.executorEnv.UCX')
       OR key IN ('spark.shuffle.manager', 'spark.shuffle.service.enabled'))
