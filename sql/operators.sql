-- The physical plan of each SQL (final version) as rows, with GPU support from the RAPIDS plugin's
-- tables (gpu_operator(); datasets/reference/rapids-plugin/). Per node: the normalised operator
-- name, the expressions it uses, the stages it ran in and their task time, whether the plugin
-- runs it on the GPU (supported; gpu_support: supported / partially (a scan reading types the
-- plugin supports only partially) / configured off (disabled by default) / not supported), and
-- if not why (details) and what the qualification tool does
-- about it (action: NONE, IgnoreNoPerf = plan glue that disappears on the GPU, IgnorePerf =
-- stays on the CPU but not worth triage, Triage). A WholeStageCodegen node stands for its members:
-- supported when any member is, removed when all are. In a Delta Lake app, every operator of a
-- query that reads the Delta log is part of a metadata query and stays on the CPU.
WITH delta AS (
    SELECT
        app_id,
        attempt_id AS app_attempt_id,
        COUNT(*) FILTER (WHERE key IN ('spark.databricks.clusterUsageTags.clusterAllTags',
                                       'spark.databricks.clusterUsageTags.clusterId',
                                       'spark.databricks.clusterUsageTags.clusterName')
                          AND value <> '') = 3
        OR COUNT(*) FILTER (WHERE key = 'spark.sql.extensions'
                            AND value LIKE '%DeltaSparkSessionExtension%') > 0
        OR COUNT(*) FILTER (WHERE key = 'spark.sql.catalog.spark_catalog'
                            AND value LIKE '%DeltaCatalog%') > 0 AS delta_enabled
    FROM properties
    WHERE category = 'spark'
    GROUP BY app_id, attempt_id
),
classified_struct AS (
    SELECT
        n.app_id, n.app_attempt_id, n.sql_id, n.node_id, n.parent_node_id, n.cluster_node_id,
        n.node_name, n.description, n.stage_ids,
        n.node_name LIKE 'WholeStageCodegen%' AS is_cluster,
        gpu_operator(n.node_name, n.description, COALESCE(d.delta_enabled, false)) AS g
    FROM sql_plan_nodes n
    LEFT JOIN delta d ON d.app_id = n.app_id AND (d.app_attempt_id IS NOT DISTINCT FROM n.app_attempt_id)
    WHERE n.is_final
),
classified AS (
    SELECT
        app_id, app_attempt_id, sql_id, node_id, parent_node_id, cluster_node_id, node_name,
        description, stage_ids, is_cluster,
        g['exec_name'] AS exec_name,
        g['expression_name'] AS expression_name,
        g['op_type'] AS op_type,
        g['supported'] AS g_supported,
        g['should_remove'] AS g_should_remove,
        g['should_ignore'] AS g_should_ignore,
        g['details'] AS g_details,
        g['expressions'] AS expressions,
        g['unsupported_expressions'] AS unsupported_expressions,
        g['partial_types'] AS partial_types
    FROM classified_struct
),
members AS (
    SELECT app_id, app_attempt_id, sql_id, cluster_node_id,
           bool_or(g_supported) AS any_supported,
           bool_and(g_should_remove) AS all_removed
    FROM classified
    WHERE cluster_node_id IS NOT NULL
    GROUP BY app_id, app_attempt_id, sql_id, cluster_node_id
),
with_clusters AS (
    SELECT
        c.*,
        CASE WHEN c.is_cluster THEN COALESCE(m.any_supported, false) ELSE c.g_supported END AS supported0,
        CASE WHEN c.is_cluster THEN COALESCE(m.all_removed, false) ELSE c.g_should_remove END AS should_remove,
        CASE WHEN c.is_cluster THEN false ELSE c.g_should_ignore END AS should_ignore0
    FROM classified c
    LEFT JOIN members m
      ON c.is_cluster AND m.app_id = c.app_id AND (m.app_attempt_id IS NOT DISTINCT FROM c.app_attempt_id)
     AND m.sql_id = c.sql_id AND m.cluster_node_id = c.node_id
),
metadata_sql AS (
    SELECT DISTINCT app_id, app_attempt_id, sql_id
    FROM classified
    WHERE op_type IN ('ReadDeltaLog', 'ReadRDDDeltaLog')
),
marked AS (
    SELECT
        w.*,
        q.sql_id IS NOT NULL AND (w.supported0 OR NOT w.should_ignore0) AS in_metadata_query
    FROM with_clusters w
    LEFT JOIN metadata_sql q
      ON q.app_id = w.app_id AND (q.app_attempt_id IS NOT DISTINCT FROM w.app_attempt_id) AND q.sql_id = w.sql_id
),
stage_time AS (
    SELECT m.app_id, m.app_attempt_id, m.sql_id, m.node_id, SUM(s.task_time_ms) AS task_time_ms
    FROM (SELECT app_id, app_attempt_id, sql_id, node_id, UNNEST(stage_ids) AS stage_id FROM marked) m
    JOIN stage_summary s
      ON s.app_id = m.app_id AND (s.app_attempt_id IS NOT DISTINCT FROM m.app_attempt_id) AND s.stage_id = m.stage_id
    GROUP BY m.app_id, m.app_attempt_id, m.sql_id, m.node_id
)
SELECT
    k.app_id,
    k.app_attempt_id,
    k.sql_id,
    k.node_id,
    k.parent_node_id,
    k.cluster_node_id,
    k.node_name,
    k.exec_name AS operator,
    k.expression_name AS operator_detail,
    k.op_type AS operator_type,
    k.expressions,
    k.stage_ids,
    COALESCE(t.task_time_ms, 0) AS stages_task_time_ms,
    k.supported0 AND NOT k.in_metadata_query AS supported,
    CASE
        WHEN k.supported0 AND NOT k.in_metadata_query AND cardinality(k.partial_types) > 0 THEN 'partially'
        WHEN k.supported0 AND NOT k.in_metadata_query THEN 'supported'
        WHEN k.in_metadata_query THEN 'not supported'
        WHEN k.g_details LIKE '%disabled by default%' THEN 'configured off'
        ELSE 'not supported'
    END AS gpu_support,
    CASE
        WHEN k.supported0 AND NOT k.in_metadata_query AND cardinality(k.partial_types) > 0
            THEN 'the plugin supports these types only partially: ' || array_to_string(k.partial_types, ', ')
        WHEN k.supported0 AND NOT k.in_metadata_query THEN NULL
        WHEN k.in_metadata_query THEN 'Exec is part of Delta Lake metadata query'
        WHEN k.is_cluster THEN 'Unsupported'
        ELSE k.g_details
    END AS details,
    k.unsupported_expressions,
    k.should_remove,
    k.should_ignore0 OR k.in_metadata_query AS should_ignore,
    CASE
        WHEN k.supported0 AND NOT k.in_metadata_query THEN 'NONE'
        WHEN k.should_remove THEN 'IgnoreNoPerf'
        WHEN k.should_ignore0 OR k.in_metadata_query THEN 'IgnorePerf'
        ELSE 'Triage'
    END AS action,
    k.description
FROM marked k
LEFT JOIN stage_time t
  ON t.app_id = k.app_id AND (t.app_attempt_id IS NOT DISTINCT FROM k.app_attempt_id)
 AND t.sql_id = k.sql_id AND t.node_id = k.node_id
