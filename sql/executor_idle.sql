-- Idle capacity per executor (in local mode, the driver): the time it was allocated (added until
-- removed, else the app's end)
-- with no task running on it, from the union of its tasks' [launch, finish] intervals; its gaps
-- (before the first task, between busy spans, after the last), and what it would have kept idle
-- had it been released after 60 idle seconds (each gap counted up to 60 s: scale-to-zero).
WITH t AS (
    SELECT app_id, executor_id, launch_ms AS s, finish_ms AS e
    FROM tasks
    WHERE executor_id IS NOT NULL
      AND launch_ms IS NOT NULL AND finish_ms IS NOT NULL AND finish_ms >= launch_ms
),
o AS (
    SELECT t.*, MAX(e) OVER (PARTITION BY app_id, executor_id ORDER BY s, e
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM t
),
g AS (
    SELECT o.*, SUM(CASE WHEN prev_end IS NULL OR s > prev_end THEN 1 ELSE 0 END)
                OVER (PARTITION BY app_id, executor_id ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS grp
    FROM o
),
busy AS (
    SELECT app_id, executor_id, grp, MIN(s) AS s, MAX(e) AS e FROM g GROUP BY app_id, executor_id, grp
),
others AS (
    SELECT app_id, COUNT(*) FILTER (WHERE executor_id <> 'driver') AS n FROM executors GROUP BY app_id
),
-- the executors; in local mode (no executor but the driver) the driver, which runs the tasks
life AS (
    SELECT x.app_id, x.executor_id, x.cores, x.added_ms AS start_ms,
           COALESCE(x.removed_ms, a.end_ms) AS end_ms
    FROM executors x JOIN applications a ON a.app_id = x.app_id
    JOIN others o ON o.app_id = x.app_id
    WHERE x.added_ms IS NOT NULL AND (x.executor_id <> 'driver' OR o.n = 0)
),
clip AS (
    SELECT l.app_id, l.executor_id, GREATEST(b.s, l.start_ms) AS s, LEAST(b.e, l.end_ms) AS e
    FROM busy b JOIN life l ON l.app_id = b.app_id AND l.executor_id = b.executor_id
    WHERE b.e > l.start_ms AND b.s < l.end_ms
),
gaps AS (
    -- the gap before each busy span (from the executor's start or the previous span's end) ...
    SELECT c.app_id, c.executor_id,
           c.s - COALESCE(LAG(c.e) OVER (PARTITION BY c.app_id, c.executor_id ORDER BY c.s), l.start_ms) AS gap_ms
    FROM clip c JOIN life l ON l.app_id = c.app_id AND l.executor_id = c.executor_id
    UNION ALL
    -- ... and after the last one (or the whole life of an executor that ran nothing)
    SELECT l.app_id, l.executor_id, l.end_ms - COALESCE(MAX(c.e), l.start_ms) AS gap_ms
    FROM life l LEFT JOIN clip c ON c.app_id = l.app_id AND c.executor_id = l.executor_id
    GROUP BY l.app_id, l.executor_id, l.start_ms, l.end_ms
)
SELECT l.app_id, l.executor_id, l.cores,
       l.end_ms - l.start_ms AS allocated_ms,
       COALESCE(SUM(gp.gap_ms), 0) AS idle_ms,
       COUNT(gp.gap_ms) FILTER (WHERE gp.gap_ms > 0) AS idle_gaps,
       COALESCE(SUM(LEAST(gp.gap_ms, 60000)), 0) AS idle_ms_scale_to_zero_60s
FROM life l LEFT JOIN gaps gp ON gp.app_id = l.app_id AND gp.executor_id = l.executor_id
GROUP BY l.app_id, l.executor_id, l.cores, l.start_ms, l.end_ms
