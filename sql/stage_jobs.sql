-- The jobs each stage belongs to, with the SQL execution of the job (NULL for RDD jobs).
-- A stage shared by several jobs (e.g. a re-used shuffle) appears once per job.
SELECT
    j.app_id,
    j.app_attempt_id,
    UNNEST(j.stage_ids) AS stage_id,
    j.job_id,
    j.sql_id
FROM jobs j
