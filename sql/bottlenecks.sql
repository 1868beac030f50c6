-- One row per finding: what an engineer looks at when a Spark job is slow. Thresholds come from
-- the one-row table `analysis_settings` (documented defaults in aether-engine's AnalysisSettings).
-- severity: high at 4x the threshold, medium at 2x, else low (counts: failed tasks of a failed
-- job are high).
WITH s AS (
    SELECT ss.*, a.cores_peak_count
    FROM stage_summary ss
    JOIN app_summary a ON a.app_id = ss.app_id AND (a.app_attempt_id IS NOT DISTINCT FROM ss.app_attempt_id)
),
cfg AS (SELECT * FROM analysis_settings),
stage_findings AS (
    SELECT s.app_id, s.app_attempt_id, s.sql_id, s.stage_id, s.stage_attempt_id,
           CAST(NULL AS VARCHAR) AS executor_id,
           'TaskSkew' AS kind, 'skew_ratio' AS metric, s.skew_ratio AS value,
           c.skew_ratio_min AS threshold,
           'the longest task ran ' || CAST(s.task_duration_max_ms AS BIGINT) || ' ms, the median '
             || CAST(s.task_duration_p50_ms AS BIGINT) || ' ms: a few partitions hold most of the data. '
             || 'Enable AQE skew-join handling (spark.sql.adaptive.enabled and '
             || 'spark.sql.adaptive.skewJoin.enabled), or salt / pre-aggregate the hot keys' AS advice
    FROM s CROSS JOIN cfg c
    WHERE s.skew_ratio >= c.skew_ratio_min AND s.task_duration_max_ms >= c.skew_task_min_ms
    UNION ALL
    SELECT s.app_id, s.app_attempt_id, s.sql_id, s.stage_id, s.stage_attempt_id, NULL,
           'SpillToDisk', 'disk_spill_bytes', CAST(s.disk_spill_bytes AS DOUBLE), c.disk_spill_min_bytes,
           'tasks spilled ' || format_bytes(s.disk_spill_bytes) || ' to disk: give each task more memory '
             || '(spark.executor.memory, fewer spark.executor.cores) or more, smaller partitions '
             || '(spark.sql.shuffle.partitions, spark.sql.files.maxPartitionBytes)'
    FROM s CROSS JOIN cfg c WHERE s.disk_spill_bytes >= c.disk_spill_min_bytes
    UNION ALL
    SELECT s.app_id, s.app_attempt_id, s.sql_id, s.stage_id, s.stage_attempt_id, NULL,
           'MemorySpill', 'memory_spill_bytes', CAST(s.memory_spill_bytes AS DOUBLE), c.memory_spill_min_bytes,
           'tasks spilled ' || format_bytes(s.memory_spill_bytes) || ' of in-memory data: execution memory '
             || 'is short (spark.memory.fraction, spark.executor.memory) or partitions are too large'
    FROM s CROSS JOIN cfg c WHERE s.memory_spill_bytes >= c.memory_spill_min_bytes
    UNION ALL
    SELECT s.app_id, s.app_attempt_id, s.sql_id, s.stage_id, s.stage_attempt_id, NULL,
           'GcPressure', 'gc_ratio', s.gc_ratio, c.gc_ratio_min,
           'JVM garbage collection took ' || CAST(round(s.gc_ratio * 100) AS BIGINT)
             || '% of task run time: raise executor memory, cache less, or use G1GC with a larger heap region'
    FROM s CROSS JOIN cfg c
    WHERE s.gc_ratio >= c.gc_ratio_min AND s.run_time_ms >= c.stage_min_run_time_ms
    UNION ALL
    SELECT s.app_id, s.app_attempt_id, s.sql_id, s.stage_id, s.stage_attempt_id, NULL,
           'ShuffleFetchWait', 'shuffle_fetch_wait_ratio', s.shuffle_fetch_wait_ratio, c.fetch_wait_ratio_min,
           'tasks waited ' || s.shuffle_fetch_wait_ms || ' ms for shuffle blocks: the network or the '
             || 'shuffle service is the bottleneck (spark.reducer.maxSizeInFlight, external shuffle service, fewer remote reads)'
    FROM s CROSS JOIN cfg c
    WHERE s.shuffle_fetch_wait_ratio >= c.fetch_wait_ratio_min AND s.run_time_ms >= c.stage_min_run_time_ms
    UNION ALL
    SELECT s.app_id, s.app_attempt_id, s.sql_id, s.stage_id, s.stage_attempt_id, NULL,
           'SmallTasks', 'task_duration_p50_ms', s.task_duration_p50_ms, c.small_task_max_ms,
           s.tasks_count || ' tasks with a median of ' || CAST(s.task_duration_p50_ms AS BIGINT)
             || ' ms: scheduling overhead dominates; use fewer partitions (spark.sql.shuffle.partitions, '
             || 'AQE coalescing, spark.sql.files.maxPartitionBytes)'
    FROM s CROSS JOIN cfg c
    WHERE s.tasks_count >= c.small_tasks_min_count AND s.task_duration_p50_ms < c.small_task_max_ms
    UNION ALL
    SELECT s.app_id, s.app_attempt_id, s.sql_id, s.stage_id, s.stage_attempt_id, NULL,
           'TooFewTasks', 'tasks_per_core', CAST(s.tasks_count AS DOUBLE) / s.cores_peak_count,
           c.few_tasks_cores_ratio_max,
           'a ' || s.duration_ms || ' ms stage ran only ' || s.tasks_count || ' task(s) on '
             || s.cores_peak_count || ' cores: repartition the input or raise spark.sql.shuffle.partitions'
    FROM s CROSS JOIN cfg c
    WHERE s.duration_ms >= c.few_tasks_stage_min_ms AND s.cores_peak_count > 0
      AND s.tasks_count > 0
      AND CAST(s.tasks_count AS DOUBLE) / s.cores_peak_count < c.few_tasks_cores_ratio_max
    UNION ALL
    SELECT s.app_id, s.app_attempt_id, s.sql_id, s.stage_id, s.stage_attempt_id, NULL,
           'FailedTasks', 'tasks_failed_count', CAST(s.tasks_failed_count AS DOUBLE), c.failed_tasks_min_count,
           s.tasks_failed_count || ' task attempt(s) failed' ||
             CASE WHEN s.status = 'failed' THEN ' and the stage failed: ' || substr(split_part(COALESCE(s.failure_reason, ''), chr(10), 1), 1, 200)
                  ELSE ' (retried)' END || '; see tasks.end_reason'
    FROM (SELECT ss.*, st.failure_reason FROM s ss JOIN stages st
            ON st.app_id = ss.app_id AND (st.app_attempt_id IS NOT DISTINCT FROM ss.app_attempt_id)
           AND st.stage_id = ss.stage_id AND st.attempt_id = ss.stage_attempt_id) s
    CROSS JOIN cfg c WHERE s.tasks_failed_count >= c.failed_tasks_min_count
    UNION ALL
    SELECT s.app_id, s.app_attempt_id, s.sql_id, s.stage_id, s.stage_attempt_id, NULL,
           'KilledTasks', 'tasks_killed_count', CAST(s.tasks_killed_count AS DOUBLE), c.failed_tasks_min_count,
           s.tasks_killed_count || ' task attempt(s) were killed (speculation losers, cancelled jobs or lost executors)'
    FROM s CROSS JOIN cfg c WHERE s.tasks_killed_count >= c.failed_tasks_min_count
    UNION ALL
    SELECT s.app_id, s.app_attempt_id, s.sql_id, s.stage_id, s.stage_attempt_id, NULL,
           'SpeculativeTasks', 'tasks_speculative_count', CAST(s.tasks_speculative_count AS DOUBLE),
           c.failed_tasks_min_count,
           s.tasks_speculative_count || ' speculative task(s) launched: some tasks ran far slower than their peers'
    FROM s CROSS JOIN cfg c WHERE s.tasks_speculative_count >= c.failed_tasks_min_count
),
exec_tasks AS (
    SELECT app_id, app_attempt_id, executor_id, COUNT(*) AS tasks_count,
           AVG(executor_run_time_ms) AS run_time_avg_ms
    FROM tasks WHERE status = 'success'
    GROUP BY app_id, app_attempt_id, executor_id
),
exec_median AS (
    SELECT app_id, app_attempt_id, COUNT(*) AS executors,
           percentile_cont(run_time_avg_ms, 0.5) AS run_time_avg_median_ms
    FROM exec_tasks GROUP BY app_id, app_attempt_id
),
app_findings AS (
    SELECT e.app_id, e.app_attempt_id, CAST(NULL AS BIGINT) AS sql_id, CAST(NULL AS BIGINT) AS stage_id,
           CAST(NULL AS BIGINT) AS stage_attempt_id, e.executor_id,
           'StragglerExecutor' AS kind, 'run_time_avg_ratio' AS metric,
           e.run_time_avg_ms / m.run_time_avg_median_ms AS value, c.straggler_ratio_min AS threshold,
           'executor ' || e.executor_id || ' ran its ' || e.tasks_count || ' tasks at '
             || CAST(round(e.run_time_avg_ms) AS BIGINT) || ' ms on average against a median of '
             || CAST(round(m.run_time_avg_median_ms) AS BIGINT)
             || ' ms across executors: check its host (disk, noisy neighbours) or enable spark.speculation' AS advice
    FROM exec_tasks e
    JOIN exec_median m ON m.app_id = e.app_id AND (m.app_attempt_id IS NOT DISTINCT FROM e.app_attempt_id)
    CROSS JOIN cfg c
    WHERE m.executors >= 2 AND e.tasks_count >= c.straggler_min_tasks AND m.run_time_avg_median_ms > 0
      AND e.run_time_avg_ms / m.run_time_avg_median_ms >= c.straggler_ratio_min
    UNION ALL
    SELECT x.app_id, x.app_attempt_id, NULL, NULL, NULL, x.executor_id,
           'ExecutorLost', 'executors_lost_count', 1.0, 1.0,
           'executor ' || x.executor_id || ' on ' || COALESCE(x.host, '?') || ' was lost: '
             || x.removed_reason || '; its running tasks failed and its shuffle output had to be recomputed. '
             || 'Exit code 137/143 usually means the container ran out of memory: raise '
             || 'spark.executor.memoryOverhead or spark.executor.memory'
    FROM executors x
    WHERE x.removed_reason IS NOT NULL AND x.removed_reason <> ''
      AND lower(x.removed_reason) NOT LIKE '%killed by driver%'
      AND lower(x.removed_reason) NOT LIKE '%decommission%'
      -- YARN releasing an idle executor (dynamic allocation) is not a loss
      AND lower(x.removed_reason) NOT LIKE '%explicit termination request%'
),
job_spans AS (
    SELECT app_id, app_attempt_id, sql_id, submit_ms, end_ms,
           MAX(end_ms) OVER (PARTITION BY app_id, app_attempt_id, sql_id ORDER BY submit_ms, job_id
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end_ms
    FROM jobs WHERE sql_id IS NOT NULL AND submit_ms IS NOT NULL AND end_ms IS NOT NULL
),
job_time AS (
    -- wall time covered by at least one job of the SQL (overlapping jobs counted once)
    SELECT app_id, app_attempt_id, sql_id,
           SUM(GREATEST(end_ms - GREATEST(submit_ms, COALESCE(prev_end_ms, submit_ms)), 0)) AS jobs_wall_ms
    FROM job_spans GROUP BY app_id, app_attempt_id, sql_id
),
-- Python operators of the final plans. Spark 4 times the Python code ('time to execute Python
-- code'); Spark 3.5 and older only count the bytes shipped to and from the Python workers, so
-- there the share comes from the task time of the stages the Python operators ran in.
python_nodes AS (
    SELECT app_id, app_attempt_id, sql_id, plan_version, node_id, node_name, stage_ids
    FROM sql_plan_nodes
    WHERE is_final AND node_name IN ('BatchEvalPython', 'ArrowEvalPython', 'FlatMapGroupsInPandas',
                          'FlatMapCoGroupsInPandas', 'MapInPandas', 'MapInArrow', 'PythonMapInArrow',
                          'AggregateInPandas', 'WindowInPandas', 'FlatMapGroupsInArrow',
                          'FlatMapCoGroupsInArrow', 'BatchEvalPythonUDTF', 'ArrowEvalPythonUDTF')
),
python AS (
    SELECT n.app_id, n.app_attempt_id, n.sql_id,
           SUM(m.value) FILTER (WHERE m.name = 'time to execute Python code') AS python_ms,
           SUM(m.value) FILTER (WHERE m.name = 'data sent to Python workers') AS sent_bytes,
           SUM(m.value) FILTER (WHERE m.name = 'data returned from Python workers') AS returned_bytes,
           array_to_string(array_sort(array_agg(DISTINCT n.node_name)), ', ') AS python_ops
    FROM python_nodes n
    LEFT JOIN sql_metrics m
      ON m.app_id = n.app_id AND (m.app_attempt_id IS NOT DISTINCT FROM n.app_attempt_id)
     AND m.sql_id = n.sql_id AND m.plan_version = n.plan_version AND m.node_id = n.node_id
    GROUP BY n.app_id, n.app_attempt_id, n.sql_id
),
python_stage_time AS (
    SELECT p.app_id, p.app_attempt_id, p.sql_id, SUM(ss.task_time_ms) AS stage_task_time_ms
    FROM (SELECT DISTINCT app_id, app_attempt_id, sql_id, UNNEST(stage_ids) AS stage_id
          FROM python_nodes) p
    JOIN stage_summary ss
      ON ss.app_id = p.app_id AND (ss.app_attempt_id IS NOT DISTINCT FROM p.app_attempt_id)
     AND ss.stage_id = p.stage_id
    GROUP BY p.app_id, p.app_attempt_id, p.sql_id
),
python_share AS (
    SELECT p.*, q.task_time_ms,
           CASE WHEN p.python_ms IS NOT NULL THEN 'python_time_ratio'
                ELSE 'python_stage_time_ratio' END AS metric,
           CAST(COALESCE(p.python_ms, t.stage_task_time_ms) AS DOUBLE) / NULLIF(q.task_time_ms, 0) AS share,
           t.stage_task_time_ms,
           a.spark_version
    FROM python p
    JOIN sql_summary q ON q.app_id = p.app_id AND (q.app_attempt_id IS NOT DISTINCT FROM p.app_attempt_id)
     AND q.sql_id = p.sql_id
    JOIN applications a ON a.app_id = p.app_id AND (a.attempt_id IS NOT DISTINCT FROM p.app_attempt_id)
    LEFT JOIN python_stage_time t ON t.app_id = p.app_id
     AND (t.app_attempt_id IS NOT DISTINCT FROM p.app_attempt_id) AND t.sql_id = p.sql_id
),
sql_findings AS (
    SELECT q.app_id, q.app_attempt_id, q.sql_id, CAST(NULL AS BIGINT) AS stage_id,
           CAST(NULL AS BIGINT) AS stage_attempt_id, CAST(NULL AS VARCHAR) AS executor_id,
           'DriverSideTime' AS kind, 'driver_time_ratio' AS metric,
           CAST(q.duration_ms - COALESCE(j.jobs_wall_ms, 0) AS DOUBLE) / q.duration_ms AS value,
           c.driver_time_ratio_min AS threshold,
           (q.duration_ms - COALESCE(j.jobs_wall_ms, 0)) || ' ms of the ' || q.duration_ms
             || ' ms SQL ran with no Spark job: driver-side work (planning, collect() of results, '
             || 'building broadcasts, listing files, Python on the driver)' AS advice
    FROM sql_summary q
    LEFT JOIN job_time j ON j.app_id = q.app_id AND (j.app_attempt_id IS NOT DISTINCT FROM q.app_attempt_id)
     AND j.sql_id = q.sql_id
    CROSS JOIN cfg c
    WHERE q.duration_ms > 0 AND (q.root_sql_id IS NOT DISTINCT FROM q.sql_id)
      AND q.duration_ms - COALESCE(j.jobs_wall_ms, 0) >= c.driver_time_min_ms
      AND CAST(q.duration_ms - COALESCE(j.jobs_wall_ms, 0) AS DOUBLE) / q.duration_ms >= c.driver_time_ratio_min
    UNION ALL
    SELECT p.app_id, p.app_attempt_id, p.sql_id, NULL, NULL, NULL,
           'PythonUdf', p.metric, p.share, c.python_time_ratio_min,
           CASE WHEN p.python_ms IS NOT NULL THEN
               'Python UDFs (' || p.python_ops || ') ran ' || p.python_ms || ' ms of the ' || p.task_time_ms
               || ' ms task time'
           ELSE
               'Python UDFs (' || p.python_ops || ') ran in stages holding ' || p.stage_task_time_ms
               || ' ms of the ' || p.task_time_ms || ' ms task time (Spark ' || COALESCE(p.spark_version, '?')
               || ' does not time the Python code itself: an upper bound'
               || COALESCE('; ' || format_bytes(p.sent_bytes) || ' sent to the Python workers and '
                           || format_bytes(p.returned_bytes) || ' returned', '') || ')'
           END
             || '. Rows are serialised to the Python workers and back, and the RAPIDS plugin '
             || 'keeps these operators on the CPU: use built-in functions'
             || CASE WHEN p.python_ops LIKE '%BatchEvalPython%' THEN ', or pandas UDFs over Arrow'
                     ELSE ' where they exist' END
    FROM python_share p
    CROSS JOIN cfg c
    WHERE p.share >= c.python_time_ratio_min
),
found AS (
    SELECT * FROM stage_findings
    UNION ALL SELECT * FROM app_findings
    UNION ALL SELECT * FROM sql_findings
)
SELECT
    f.app_id,
    f.app_attempt_id,
    f.sql_id,
    f.stage_id,
    f.stage_attempt_id,
    f.executor_id,
    f.kind,
    CASE
        WHEN f.kind IN ('FailedTasks', 'ExecutorLost') THEN 'high'
        WHEN f.kind = 'SmallTasks' THEN
            CASE WHEN f.value * 4 <= f.threshold THEN 'high'
                 WHEN f.value * 2 <= f.threshold THEN 'medium' ELSE 'low' END
        WHEN f.kind = 'TooFewTasks' THEN
            CASE WHEN f.value * 4 <= f.threshold THEN 'high'
                 WHEN f.value * 2 <= f.threshold THEN 'medium' ELSE 'low' END
        WHEN f.value >= 4 * f.threshold THEN 'high'
        WHEN f.value >= 2 * f.threshold THEN 'medium'
        ELSE 'low'
    END AS severity,
    f.metric,
    f.value,
    f.threshold,
    f.advice
FROM found f
