-- QualX building block: the stages each final-plan node's metrics were updated in (its "raw"
-- stages, docs/reference/qualx-features.md §3.1).
SELECT DISTINCT app_id, att, sql_id, node_id, stage_id
FROM (
    SELECT app_id, att, sql_id, node_id, UNNEST(update_stage_ids) AS stage_id
    FROM qualx_node_metrics
) u
