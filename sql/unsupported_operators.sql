-- One row per operator the GPU would not run, and per stage it ran in (stage_id -1 when none):
-- the qualification tool's unsupported_operators.csv. A WholeStageCodegen node is represented by
-- its unsupported members. `stage_duration_ms` is the stage's wall time (stage_wall).
WITH u AS (
    SELECT o.*, CASE WHEN cardinality(o.stage_ids) = 0 THEN [-1] ELSE o.stage_ids END AS stages
    FROM operators o
    WHERE NOT o.supported AND o.node_name NOT LIKE 'WholeStageCodegen%'
),
per_stage AS (
    SELECT app_id, app_attempt_id, sql_id, node_id, operator, operator_type, details, action,
           UNNEST(stages) AS stage_id
    FROM u
)
SELECT
    p.app_id,
    p.app_attempt_id,
    p.sql_id,
    p.stage_id,
    p.node_id,
    CASE WHEN p.operator_type IN ('UDF', 'DataSet') THEN 'Exec' ELSE p.operator_type END AS unsupported_type,
    p.operator AS unsupported_operator,
    p.details,
    COALESCE(w.wall_ms, 0) AS stage_duration_ms,
    p.action
FROM per_stage p
LEFT JOIN stage_wall w
  ON w.app_id = p.app_id AND (w.app_attempt_id IS NOT DISTINCT FROM p.app_attempt_id) AND w.stage_id = p.stage_id
