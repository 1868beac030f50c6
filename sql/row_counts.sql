-- Rows read and written per application (sql_id NULL) and per SQL execution, from task
-- input/output metrics and from SQL metrics: `number of output rows` of scan nodes (read) and of
-- write commands (written; Spark's numOutputRows). Final plans only. The validate phase compares
-- these between a CPU and a GPU run.
WITH node_rows AS (
    SELECT
        n.app_id,
        n.app_attempt_id,
        n.sql_id,
        SUM(m.value) FILTER (WHERE n.node_name LIKE 'Scan %' OR n.node_name LIKE 'BatchScan%'
                             OR n.node_name LIKE 'FileScan%' OR n.node_name LIKE 'GpuScan %'
                             OR n.node_name LIKE 'GpuBatchScan%') AS rows_read_sql,
        SUM(m.value) FILTER (WHERE n.node_name LIKE 'Execute %' OR n.node_name LIKE '%Write%'
                             OR n.node_name LIKE 'AppendData%' OR n.node_name LIKE 'OverwriteBy%'
                             OR n.node_name LIKE '%TableAsSelect%'
                             OR n.node_name LIKE 'GpuInsertInto%') AS rows_written_sql
    FROM sql_plan_nodes n
    JOIN sql_metrics m
      ON m.app_id = n.app_id AND (m.app_attempt_id IS NOT DISTINCT FROM n.app_attempt_id)
     AND m.sql_id = n.sql_id AND m.plan_version = n.plan_version AND m.node_id = n.node_id
    WHERE n.is_final AND m.name = 'number of output rows'
    GROUP BY n.app_id, n.app_attempt_id, n.sql_id
)
SELECT
    s.app_id,
    s.app_attempt_id,
    s.sql_id,
    s.rows_read AS rows_read_task,
    s.rows_written AS rows_written_task,
    COALESCE(r.rows_read_sql, 0) AS rows_read_sql,
    COALESCE(r.rows_written_sql, 0) AS rows_written_sql
FROM sql_summary s
LEFT JOIN node_rows r
  ON r.app_id = s.app_id AND (r.app_attempt_id IS NOT DISTINCT FROM s.app_attempt_id) AND r.sql_id = s.sql_id
UNION ALL
SELECT
    a.app_id,
    a.app_attempt_id,
    CAST(NULL AS BIGINT) AS sql_id,
    a.rows_read AS rows_read_task,
    a.rows_written AS rows_written_task,
    COALESCE(r.rows_read_sql, 0) AS rows_read_sql,
    COALESCE(r.rows_written_sql, 0) AS rows_written_sql
FROM app_summary a
LEFT JOIN (
    SELECT app_id, app_attempt_id, SUM(rows_read_sql) AS rows_read_sql,
           SUM(rows_written_sql) AS rows_written_sql
    FROM node_rows GROUP BY app_id, app_attempt_id
) r
  ON r.app_id = a.app_id AND (r.app_attempt_id IS NOT DISTINCT FROM a.app_attempt_id)
