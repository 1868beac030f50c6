-- QualX building block: per SQL, its task metrics aggregated over S(q) — the stages its final
-- plan's metrics were updated in — with the supported share of task time and the Databricks IO
-- cache figures (docs/reference/qualx-features.md §3.2, §4.2-4.7).
-- S(q) with each stage's support: all of q's nodes that ran in it are supported
WITH sq_stage AS (
    SELECT r.app_id, r.att, r.sql_id, r.stage_id, bool_and(m.sup) AS supp
    FROM qualx_node_stages r
    JOIN qualx_plan_nodes m USING (app_id, att, sql_id, node_id)
    JOIN qualx_stage_agg g ON g.app_id = r.app_id AND g.att = r.att AND g.stage_id = r.stage_id
    GROUP BY r.app_id, r.att, r.sql_id, r.stage_id
),
agg AS (
    SELECT
        x.app_id, x.att, x.sql_id,
        SUM(g.n) AS n, SUM(g.dsum) AS dsum, MAX(g.dmax) AS dmax, MIN(g.dmin) AS dmin,
        SUM(g.cpu_ms) AS cpu_ms, SUM(g.deser_cpu_ms) AS deser_cpu_ms,
        SUM(g.sw_write_ms) AS sw_write_ms, SUM(g.deser_ms) AS deser_ms, SUM(g.run_ms) AS run_ms,
        SUM(g.gc_ms) AS gc_ms, SUM(g.ser_ms) AS ser_ms, SUM(g.fetch_wait_ms) AS fetch_wait_ms,
        SUM(g.disk_spill) AS disk_spill, SUM(g.mem_spill) AS mem_spill,
        SUM(g.in_bytes) AS in_bytes, SUM(g.in_records) AS in_records,
        SUM(g.out_bytes) AS out_bytes, SUM(g.out_records) AS out_records,
        SUM(g.sr_local_blocks) AS sr_local_blocks, SUM(g.sr_local_bytes) AS sr_local_bytes,
        SUM(g.sr_remote_blocks) AS sr_remote_blocks, SUM(g.sr_remote_bytes) AS sr_remote_bytes,
        SUM(g.sr_remote_disk) AS sr_remote_disk, SUM(g.sr_total_bytes) AS sr_total_bytes,
        SUM(g.sw_bytes) AS sw_bytes, SUM(g.sw_records) AS sw_records,
        MAX(g.peak_mem) AS peak_mem, MAX(g.result_size) AS result_size,
        CAST(SUM(CASE WHEN x.supp THEN g.dsum ELSE 0 END) AS DOUBLE)
            / CAST(SUM(g.dsum) AS DOUBLE) AS fraction_supported,
        SUM(CASE WHEN x.supp THEN g.dsum ELSE 0 END) AS supported_task_ms
    FROM sq_stage x
    JOIN qualx_stage_agg g ON g.app_id = x.app_id AND g.att = x.att AND g.stage_id = x.stage_id
    GROUP BY x.app_id, x.att, x.sql_id
),
-- Databricks IO cache hits and misses of supported nodes
cache AS (
    SELECT
        r.app_id, r.att, r.sql_id,
        SUM(CASE WHEN r.metric = 'cache hits size' THEN r.total END) AS hits,
        SUM(CASE WHEN r.metric = 'cache misses size' THEN r.total END) AS misses
    FROM qualx_node_metrics r
    JOIN qualx_plan_nodes m USING (app_id, att, sql_id, node_id)
    WHERE r.total IS NOT NULL AND m.sup AND r.metric IN ('cache hits size', 'cache misses size')
    GROUP BY r.app_id, r.att, r.sql_id
)
SELECT
    g.*,
    CAST(GREATEST(g.in_bytes, COALESCE(c.hits, 0) + COALESCE(c.misses, 0)) AS DOUBLE) AS ib,
    CASE WHEN COALESCE(c.hits, 0) + COALESCE(c.misses, 0) > 0
         THEN CAST(COALESCE(c.hits, 0) AS DOUBLE) / (COALESCE(c.hits, 0) + COALESCE(c.misses, 0))
         ELSE 0.0 END AS cache_hit_ratio,
    CAST(g.n AS DOUBLE) AS nd
FROM agg g
LEFT JOIN cache c USING (app_id, att, sql_id)
