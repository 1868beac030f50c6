-- The plan nodes of a GPU run (the RAPIDS plugin enabled) that still ran on the CPU, and the
-- row/columnar transitions between the GPU and the CPU around them: the first reason a GPU job
-- is slow. Plan glue that costs nothing (AdaptiveSparkPlan, query stages, subquery wrappers,
-- commands) and WholeStageCodegen wrappers (their members are listed) are left out. Per node:
-- its stages, their task time, and why the plugin did not take it (the plugin's tables).
SELECT
    o.app_id,
    o.sql_id,
    o.node_id,
    o.node_name,
    o.operator,
    CASE WHEN o.node_name IN ('GpuColumnarToRow', 'GpuRowToColumnar') THEN 'transition'
         ELSE 'cpu' END AS kind,
    o.stage_ids,
    '[' || array_to_string(o.stage_ids, ',') || ']' AS stages,
    o.stages_task_time_ms AS task_time_ms,
    COALESCE(o.details, '') AS why
FROM operators o
JOIN profile_application_information a ON a.app_id = o.app_id
WHERE a."pluginEnabled"
  AND (o.node_name IN ('GpuColumnarToRow', 'GpuRowToColumnar')
       OR (NOT starts_with(o.node_name, 'Gpu')
           AND o.action <> 'IgnoreNoPerf'
           AND NOT starts_with(o.node_name, 'Execute ')
           AND o.node_name NOT LIKE 'WholeStageCodegen%'
           AND o.node_name NOT IN ('InputAdapter', 'ReusedExchange', 'ReusedSubquery',
                                   'Subquery', 'SubqueryBroadcast', 'ShuffleQueryStage',
                                   'BroadcastQueryStage', 'TableCacheQueryStage',
                                   'AQEShuffleRead', 'CustomShuffleReader')))
