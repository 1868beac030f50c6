-- The profiler's executor_information: per resource profile, the executors (the driver in
-- local mode, where it is the only one), their cores and memory, and the profile's requests.
WITH workers AS (
    SELECT e.* FROM executors e
    WHERE e.cores IS NOT NULL
      AND (e.executor_id <> 'driver'
           OR NOT EXISTS (SELECT 1 FROM executors x WHERE x.app_id = e.app_id
                          AND x.executor_id <> 'driver' AND x.cores IS NOT NULL))
),
by_profile AS (
    SELECT app_id, COALESCE(resource_profile_id, 0) AS rp, COUNT(*) AS n, MAX(cores) AS cores,
           MAX(max_memory_bytes) AS max_mem, MAX(max_onheap_memory_bytes) AS max_on,
           MAX(max_offheap_memory_bytes) AS max_off
    FROM workers GROUP BY app_id, COALESCE(resource_profile_id, 0)
)
SELECT
    b.app_id,
    b.rp AS "resourceProfileId",
    b.n AS "numExecutors",
    b.cores AS "executorCores",
    b.max_mem AS "maxMem",
    b.max_on AS "maxOnHeapMem",
    b.max_off AS "maxOffHeapMem",
    r.executor_memory_mib AS "executorMemory",
    CASE WHEN r.resource_profile_id IS NOT NULL THEN COALESCE(r.executor_gpus, 0) END AS "numGpusPerExecutor",
    r.executor_offheap_mib AS "executorOffHeap",
    r.task_cpus AS "taskCpu",
    CASE WHEN r.resource_profile_id IS NOT NULL THEN COALESCE(r.task_gpus, 0.0) END AS "taskGpu"
FROM by_profile b
LEFT JOIN resource_profiles r ON r.app_id = b.app_id AND r.resource_profile_id = b.rp
