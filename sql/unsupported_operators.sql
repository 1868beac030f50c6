-- One row per operator the GPU would not run, and per stage it ran in (stage_id -1 when none),
-- followed by one row per unsupported expression inside it (unsupported_type 'Expr'): the
-- qualification tool's unsupported_operators.csv. A WholeStageCodegen node is represented by its
-- unsupported members. `stage_duration_ms` is the stage's wall time (stage_wall).
WITH u AS (
    SELECT o.*, CASE WHEN cardinality(o.stage_ids) = 0 THEN [-1] ELSE o.stage_ids END AS stages
    FROM operators o
    WHERE NOT o.supported AND o.node_name NOT LIKE 'WholeStageCodegen%'
),
per_stage AS (
    SELECT app_id, app_attempt_id, sql_id, node_id, operator, operator_type, details, action,
           UNNEST(stages) AS stage_id
    FROM u
),
exprs AS (
    SELECT app_id, app_attempt_id, sql_id, node_id, UNNEST(unsupported_expressions) AS e
    FROM u
),
rows_ AS (
    SELECT
        p.app_id, p.app_attempt_id, p.sql_id, p.stage_id, p.node_id,
        CASE WHEN p.operator_type IN ('UDF', 'DataSet') THEN 'Exec' ELSE p.operator_type END AS unsupported_type,
        p.operator AS unsupported_operator,
        p.details,
        p.action
    FROM per_stage p
    UNION ALL
    SELECT
        p.app_id, p.app_attempt_id, p.sql_id, p.stage_id, p.node_id,
        'Expr',
        x.e['name'],
        -- an operator held back for a reason of its own (a Delta Lake metadata query) does not
        -- blame its expressions
        CASE WHEN p.details = 'Exec is part of Delta Lake metadata query' THEN 'Unsupported'
             ELSE x.e['details'] END,
        p.action
    FROM per_stage p
    JOIN exprs x
      ON x.app_id = p.app_id AND (x.app_attempt_id IS NOT DISTINCT FROM p.app_attempt_id)
     AND x.sql_id = p.sql_id AND x.node_id = p.node_id
)
SELECT
    r.app_id,
    r.app_attempt_id,
    r.sql_id,
    r.stage_id,
    r.node_id,
    r.unsupported_type,
    r.unsupported_operator,
    r.details,
    COALESCE(w.wall_ms, 0) AS stage_duration_ms,
    r.action
FROM rows_ r
LEFT JOIN stage_wall w
  ON w.app_id = r.app_id AND (w.app_attempt_id IS NOT DISTINCT FROM r.app_attempt_id) AND w.stage_id = r.stage_id
