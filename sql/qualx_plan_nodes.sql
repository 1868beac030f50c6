-- QualX building block: final-plan nodes with at least one updated metric and a GPU-support verdict
-- (M(q) in docs/reference/qualx-features.md §3.2), with the metric totals per node.
WITH node_sup AS (
    SELECT
        app_id, COALESCE(app_attempt_id, '') AS att, sql_id, node_id,
        bool_and(supported OR action = 'IgnoreNoPerf' OR operator LIKE 'WholeStageCodegen%') AS sup
    FROM operators
    GROUP BY app_id, COALESCE(app_attempt_id, ''), sql_id, node_id
)
SELECT DISTINCT r.app_id, r.att, r.sql_id, r.node_id, r.node_name, s.sup
FROM qualx_node_metrics r
JOIN node_sup s USING (app_id, att, sql_id, node_id)
WHERE r.total IS NOT NULL
