-- Wall-clock time of each stage: completion minus submission, summed over its attempts (a stage
-- never submitted, or never completed, counts 0) — the stage duration the qualification tool uses.
SELECT
    app_id,
    app_attempt_id,
    stage_id,
    SUM(COALESCE(complete_ms - submit_ms, 0)) AS wall_ms
FROM stages
GROUP BY app_id, app_attempt_id, stage_id
