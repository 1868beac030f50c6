-- Per application: the time in stages that hold an operator the GPU would not run, as the
-- qualification tool reports it ("Unsupported Operators Stage Duration" and "… Percent"):
--   unsupported_stage_duration_ms = sum of the wall time (stage_wall) of the distinct stages with
--     an unsupported operator whose action is Triage or IgnorePerf (plan glue, IgnoreNoPerf, and
--     operators with no stage do not count);
--   sql_stage_durations_sum_ms = per SQL, the wall time of the stages its operators ran in
--     (removed operators left out; when some operator has no stage, neither itself nor its
--     neighbours, the SQL's other job stages too; when none has a stage, all its job stages),
--     summed over SQLs (a stage shared by two SQLs counts twice);
--   unsupported_stage_duration_pct = the first over the second, in percent (100 when the second
--     is 0).
WITH sqls AS (
    SELECT DISTINCT app_id, app_attempt_id, sql_id FROM operators
),
kept AS (
    SELECT
        app_id, app_attempt_id, sql_id, node_id, stage_ids,
        cardinality(stage_ids) AS n,
        LAG(cardinality(stage_ids)) OVER (PARTITION BY app_id, app_attempt_id, sql_id ORDER BY node_id) AS prev_n,
        LEAD(cardinality(stage_ids)) OVER (PARTITION BY app_id, app_attempt_id, sql_id ORDER BY node_id) AS next_n
    FROM operators
    WHERE cluster_node_id IS NULL AND NOT should_remove
),
keys AS (
    SELECT DISTINCT app_id, app_attempt_id, sql_id, stage_id
    FROM (SELECT app_id, app_attempt_id, sql_id, UNNEST(stage_ids) AS stage_id FROM kept) k
),
no_stage AS (
    SELECT DISTINCT app_id, app_attempt_id, sql_id
    FROM kept
    WHERE n = 0 AND COALESCE(prev_n, 0) = 0 AND COALESCE(next_n, 0) = 0
),
job_stages AS (
    SELECT DISTINCT app_id, app_attempt_id, sql_id, stage_id FROM stage_jobs WHERE sql_id IS NOT NULL
),
has_keys AS (
    SELECT DISTINCT app_id, app_attempt_id, sql_id FROM keys
),
sql_stage_set AS (
    SELECT app_id, app_attempt_id, sql_id, stage_id FROM keys
    UNION ALL
    -- the SQL's other job stages: when it has no keyed stage at all, or an operator with no stage
    SELECT j.app_id, j.app_attempt_id, j.sql_id, j.stage_id
    FROM job_stages j
    JOIN sqls s ON s.app_id = j.app_id AND (s.app_attempt_id IS NOT DISTINCT FROM j.app_attempt_id) AND s.sql_id = j.sql_id
    LEFT JOIN has_keys h ON h.app_id = j.app_id AND (h.app_attempt_id IS NOT DISTINCT FROM j.app_attempt_id) AND h.sql_id = j.sql_id
    LEFT JOIN no_stage z ON z.app_id = j.app_id AND (z.app_attempt_id IS NOT DISTINCT FROM j.app_attempt_id) AND z.sql_id = j.sql_id
    LEFT JOIN keys k ON k.app_id = j.app_id AND (k.app_attempt_id IS NOT DISTINCT FROM j.app_attempt_id)
     AND k.sql_id = j.sql_id AND k.stage_id = j.stage_id
    WHERE k.stage_id IS NULL AND (h.sql_id IS NULL OR z.sql_id IS NOT NULL)
),
sql_stage_sum AS (
    SELECT x.app_id, x.app_attempt_id, SUM(COALESCE(w.wall_ms, 0)) AS sql_stage_durations_sum_ms
    FROM sql_stage_set x
    LEFT JOIN stage_wall w ON w.app_id = x.app_id AND (w.app_attempt_id IS NOT DISTINCT FROM x.app_attempt_id)
     AND w.stage_id = x.stage_id
    GROUP BY x.app_id, x.app_attempt_id
),
counted AS (
    SELECT * FROM unsupported_operators
    WHERE action IN ('Triage', 'IgnorePerf') AND stage_id <> -1 AND unsupported_type <> 'Expr'
),
unsupported_time AS (
    SELECT app_id, app_attempt_id, SUM(d) AS unsupported_stage_duration_ms
    FROM (SELECT app_id, app_attempt_id, stage_id, MAX(stage_duration_ms) AS d FROM counted
          GROUP BY app_id, app_attempt_id, stage_id) t
    GROUP BY app_id, app_attempt_id
),
op_counts AS (
    SELECT app_id, app_attempt_id,
           array_agg(unsupported_operator || ' (' || n || ')' ORDER BY n DESC, unsupported_operator) AS unsupported_operators,
           SUM(n) AS unsupported_operators_count
    FROM (SELECT app_id, app_attempt_id, unsupported_operator, COUNT(DISTINCT sql_id * 1000000 + node_id) AS n
          FROM unsupported_operators
          WHERE action IN ('Triage', 'IgnorePerf') AND unsupported_type <> 'Expr'
          GROUP BY app_id, app_attempt_id, unsupported_operator) c
    GROUP BY app_id, app_attempt_id
),
app_end AS (
    SELECT app_id, app_attempt_id, start_ms, end_ms FROM app_duration
)
SELECT
    a.app_id,
    a.app_attempt_id,
    a.end_ms - a.start_ms AS app_duration_ms,
    COALESCE(s.sql_stage_durations_sum_ms, 0) AS sql_stage_durations_sum_ms,
    COALESCE(u.unsupported_stage_duration_ms, 0) AS unsupported_stage_duration_ms,
    CASE WHEN COALESCE(s.sql_stage_durations_sum_ms, 0) = 0 THEN 100.0
         ELSE COALESCE(u.unsupported_stage_duration_ms, 0) * 100.0 / s.sql_stage_durations_sum_ms
    END AS unsupported_stage_duration_pct,
    COALESCE(c.unsupported_operators_count, 0) AS unsupported_operators_count,
    c.unsupported_operators
FROM app_end a
LEFT JOIN sql_stage_sum s ON s.app_id = a.app_id AND (s.app_attempt_id IS NOT DISTINCT FROM a.app_attempt_id)
LEFT JOIN unsupported_time u ON u.app_id = a.app_id AND (u.app_attempt_id IS NOT DISTINCT FROM a.app_attempt_id)
LEFT JOIN op_counts c ON c.app_id = a.app_id AND (c.app_attempt_id IS NOT DISTINCT FROM a.app_attempt_id)
