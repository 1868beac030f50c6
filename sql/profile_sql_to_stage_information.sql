-- The profiler's sql_to_stage_information: per SQL execution, job and stage attempt, the
-- stage's duration and the plan nodes (final plan) whose metrics the stage's tasks updated, by
-- node id.
WITH acc AS (
    -- an accumulator shown on several nodes (a reused fragment drawn twice) counts for the first
    SELECT m.app_id, m.sql_id, m.accumulator_id, MIN(n.node_id) AS node_id,
           MAX(m.update_stage_ids) AS update_stage_ids
    FROM sql_plan_nodes n
    JOIN sql_metrics m ON m.app_id = n.app_id AND m.sql_id = n.sql_id
     AND m.plan_version = n.plan_version AND m.node_id = n.node_id
    WHERE n.is_final
    GROUP BY m.app_id, m.sql_id, m.accumulator_id
),
nodes AS (
    SELECT DISTINCT app_id, sql_id, node_id, UNNEST(update_stage_ids) AS stage_id FROM acc
),
per_stage AS (
    -- in Spark's plan-graph order: by node id, a WholeStageCodegen's members just before it
    SELECT x.app_id, x.sql_id, x.stage_id,
           string_agg(n.node_name || '(' || CAST(x.node_id AS VARCHAR) || ')', ','
                      ORDER BY COALESCE(n.cluster_node_id, n.node_id),
                               CASE WHEN n.node_name LIKE 'WholeStageCodegen%' THEN 1 ELSE 0 END,
                               n.node_id) AS nodes
    FROM nodes x
    JOIN sql_plan_nodes n ON n.app_id = x.app_id AND n.sql_id = x.sql_id AND n.node_id = x.node_id AND n.is_final
    GROUP BY x.app_id, x.sql_id, x.stage_id
)
SELECT
    j.app_id,
    j.sql_id AS "sqlID",
    j.job_id AS "jobID",
    s.stage_id AS "stageId",
    s.attempt_id AS "stageAttemptId",
    s.complete_ms - s.submit_ms AS "Stage Duration",
    COALESCE(p.nodes, '') AS "SQL Nodes(IDs)"
FROM stage_jobs j
JOIN stages s ON s.app_id = j.app_id AND s.stage_id = j.stage_id
LEFT JOIN per_stage p ON p.app_id = j.app_id AND p.sql_id = j.sql_id AND p.stage_id = j.stage_id
WHERE j.sql_id IS NOT NULL AND s.submit_ms IS NOT NULL
