-- The profiler's application_information (spark-rapids-tools' profiling table of the same
-- name): one row per app with its runtime (SPARK_RAPIDS when the RAPIDS plugin is on), the
-- duration as Spark's UI writes it, and the executors' core-seconds. A log without
-- ApplicationEnd ends, as the profiler estimates it, with its last job or SQL execution.
WITH ends AS (
    SELECT a.app_id, a.start_ms,
           COALESCE(a.end_ms,
                    NULLIF(GREATEST(COALESCE((SELECT MAX(j.end_ms) FROM jobs j WHERE j.app_id = a.app_id), 0),
                                    COALESCE((SELECT MAX(q.end_ms) FROM sql_executions q WHERE q.app_id = a.app_id), 0)),
                           0)) AS end_ms
    FROM applications a
),
app AS (
    SELECT a.*, e.end_ms AS est_end_ms, e.end_ms - e.start_ms AS est_duration_ms
    FROM applications a JOIN ends e ON e.app_id = a.app_id
),
props AS (
    SELECT app_id,
           MAX(CASE WHEN key = 'spark.plugins' THEN value END) AS plugins,
           MAX(CASE WHEN key = 'spark.rapids.sql.enabled' THEN value END) AS rapids_enabled
    FROM properties WHERE category = 'spark'
    GROUP BY app_id
),
workers AS (
    SELECT e.app_id, e.executor_id, e.cores, e.added_ms, e.removed_ms
    FROM executors e
    WHERE e.cores IS NOT NULL
      AND (e.executor_id <> 'driver'
           OR NOT EXISTS (SELECT 1 FROM executors x WHERE x.app_id = e.app_id
                          AND x.executor_id <> 'driver' AND x.cores IS NOT NULL))
),
core_ms AS (
    SELECT w.app_id,
           SUM(CAST(w.cores AS DOUBLE) * (COALESCE(w.removed_ms, a.est_end_ms) - w.added_ms)) AS ms
    FROM workers w JOIN app a ON a.app_id = w.app_id
    GROUP BY w.app_id
)
SELECT
    a.app_id,
    a.app_name AS "appName",
    a.app_id AS "appId",
    COALESCE(a.attempt_id, '1') AS "attemptId",
    a.user AS "sparkUser",
    a.start_ms AS "startTime",
    a.est_end_ms AS "endTime",
    COALESCE(CAST(a.exit_code AS VARCHAR), '') AS "exitCode",
    a.est_duration_ms AS "duration",
    CASE
        WHEN a.est_duration_ms IS NULL THEN ''
        WHEN a.est_duration_ms < 100 THEN CAST(a.est_duration_ms AS VARCHAR) || ' ms'
        WHEN a.est_duration_ms < 1000 THEN CAST(round(a.est_duration_ms / 1000.0, 1) AS VARCHAR) || ' s'
        WHEN a.est_duration_ms < 60000 THEN CAST(CAST(round(a.est_duration_ms / 1000.0) AS BIGINT) AS VARCHAR) || ' s'
        WHEN a.est_duration_ms < 600000 THEN CAST(round(a.est_duration_ms / 60000.0, 1) AS VARCHAR) || ' min'
        WHEN a.est_duration_ms < 3600000 THEN CAST(CAST(round(a.est_duration_ms / 60000.0) AS BIGINT) AS VARCHAR) || ' min'
        ELSE CAST(round(a.est_duration_ms / 3600000.0, 1) AS VARCHAR) || ' h'
    END AS "durationStr",
    CASE WHEN p.plugins LIKE '%com.nvidia.spark.SQLPlugin%'
              AND COALESCE(lower(trim(p.rapids_enabled)), 'true') <> 'false'
         THEN 'SPARK_RAPIDS' ELSE 'SPARK' END AS "sparkRuntime",
    a.spark_version AS "sparkVersion",
    COALESCE(p.plugins LIKE '%com.nvidia.spark.SQLPlugin%'
             AND COALESCE(lower(trim(p.rapids_enabled)), 'true') <> 'false', false) AS "pluginEnabled",
    CAST(ceil(c.ms / 1000.0) AS BIGINT) AS "totalCoreSeconds"
FROM app a
LEFT JOIN props p ON p.app_id = a.app_id
LEFT JOIN core_ms c ON c.app_id = a.app_id
