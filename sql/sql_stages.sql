-- The stage attempts of each SQL execution (through the jobs that carry its execution id), once
-- each even when several of its jobs list the same stage.
SELECT DISTINCT
    sj.app_id,
    sj.app_attempt_id,
    sj.sql_id,
    ss.stage_id,
    ss.stage_attempt_id
FROM stage_jobs sj
JOIN stage_summary ss
  ON ss.app_id = sj.app_id AND (ss.app_attempt_id IS NOT DISTINCT FROM sj.app_attempt_id)
 AND ss.stage_id = sj.stage_id
WHERE sj.sql_id IS NOT NULL
