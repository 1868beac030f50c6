-- The profiler's job_information: each job, its stages, its SQL execution, start and end.
SELECT
    j.app_id,
    j.job_id AS "jobID",
    '[' || array_to_string(j.stage_ids, ',') || ']' AS "stageIds",
    j.sql_id AS "sqlID",
    j.submit_ms AS "startTime",
    j.end_ms AS "endTime"
FROM jobs j
