-- The profiler's removed_blockmanagers: every block manager a BlockManagerRemoved event took
-- away (an executor lost or stopped), and when.
SELECT
    app_id,
    executor_id AS "executorId",
    block_manager_removed_ms AS "time"
FROM executors
WHERE block_manager_removed_ms IS NOT NULL
