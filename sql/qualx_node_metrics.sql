-- QualX building block: the SQL metrics each final-plan node declares, with the accumulator's
-- task total (Σ per stage of max(task updates, StageCompleted value)), this SQL's driver total,
-- the metric's value (`total`: the larger of the two; NULL when neither tasks nor the driver
-- updated it) and the stages that updated it (docs/reference/qualx-features.md §2.2).
SELECT
    n.app_id, COALESCE(n.app_attempt_id, '') AS att, n.sql_id, n.node_id, n.node_name,
    m.name AS metric, m.metric_type, m.task_total, m.driver_total,
    CASE WHEN m.task_total IS NOT NULL OR m.driver_total IS NOT NULL
         THEN GREATEST(COALESCE(m.task_total, 0), COALESCE(m.driver_total, 0)) END AS total,
    m.update_stage_ids
FROM sql_plan_nodes n
JOIN sql_metrics m
    ON m.app_id = n.app_id AND (m.app_attempt_id IS NOT DISTINCT FROM n.app_attempt_id)
    AND m.sql_id = n.sql_id AND m.plan_version = n.plan_version AND m.node_id = n.node_id
WHERE n.is_final
