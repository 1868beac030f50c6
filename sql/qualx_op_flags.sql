-- QualX building block: per SQL, a 0/1 flag per operator name the model knows (sqlOp_*): the
-- supported nodes with an updated metric, and every member of a whole-stage-codegen cluster
-- (docs/reference/qualx-features.md §4.9).
WITH op_names AS (
    SELECT app_id, att, sql_id, node_name
    FROM qualx_plan_nodes
    WHERE sup AND node_name NOT LIKE 'WholeStageCodegen%'
    UNION
    SELECT app_id, COALESCE(app_attempt_id, ''), sql_id, node_name
    FROM sql_plan_nodes
    WHERE is_final AND cluster_node_id IS NOT NULL
),
ops AS (
    SELECT
        app_id, att, sql_id,
        CASE
            WHEN starts_with(node_name, 'Scan DeltaCDFRelation') THEN 'Scan DeltaCDFRelation'
            WHEN starts_with(node_name, 'Scan ExistingRDD Delta Table Checkpoint')
                THEN 'Scan ExistingRDD Delta Table Checkpoint'
            WHEN starts_with(node_name, 'Scan ExistingRDD Delta Table State')
                THEN 'Scan ExistingRDD Delta Table State'
            WHEN starts_with(node_name, 'Scan jdbc') THEN 'Scan jdbc'
            WHEN starts_with(node_name, 'Scan parquet') THEN 'Scan parquet'
            WHEN starts_with(node_name, 'GpuScan parquet') THEN 'GpuScan parquet'
            ELSE node_name
        END AS op
    FROM op_names
)
SELECT
o.app_id, o.att, o.sql_id,
COALESCE(MAX(CASE WHEN o.op = 'AQEShuffleRead' THEN 1 END), 0) AS "sqlOp_AQEShuffleRead",
COALESCE(MAX(CASE WHEN o.op = 'BatchEvalPython' THEN 1 END), 0) AS "sqlOp_BatchEvalPython",
COALESCE(MAX(CASE WHEN o.op = 'BroadcastExchange' THEN 1 END), 0) AS "sqlOp_BroadcastExchange",
COALESCE(MAX(CASE WHEN o.op = 'BroadcastHashJoin' THEN 1 END), 0) AS "sqlOp_BroadcastHashJoin",
COALESCE(MAX(CASE WHEN o.op = 'BroadcastNestedLoopJoin' THEN 1 END), 0) AS "sqlOp_BroadcastNestedLoopJoin",
COALESCE(MAX(CASE WHEN o.op = 'CartesianProduct' THEN 1 END), 0) AS "sqlOp_CartesianProduct",
COALESCE(MAX(CASE WHEN o.op = 'ColumnarToRow' THEN 1 END), 0) AS "sqlOp_ColumnarToRow",
COALESCE(MAX(CASE WHEN o.op = 'CommandResult' THEN 1 END), 0) AS "sqlOp_CommandResult",
COALESCE(MAX(CASE WHEN o.op = 'CustomShuffleReader' THEN 1 END), 0) AS "sqlOp_CustomShuffleReader",
COALESCE(MAX(CASE WHEN o.op = 'DeserializeToObject' THEN 1 END), 0) AS "sqlOp_DeserializeToObject",
COALESCE(MAX(CASE WHEN o.op = 'Exchange' THEN 1 END), 0) AS "sqlOp_Exchange",
COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand csv' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand csv",
COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand json' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand json",
COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand orc' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand orc",
COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand parquet' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand parquet",
COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand text' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand text",
COALESCE(MAX(CASE WHEN o.op = 'Execute InsertIntoHadoopFsRelationCommand unknown' THEN 1 END), 0) AS "sqlOp_Execute InsertIntoHadoopFsRelationCommand unknown",
COALESCE(MAX(CASE WHEN o.op = 'Expand' THEN 1 END), 0) AS "sqlOp_Expand",
COALESCE(MAX(CASE WHEN o.op = 'Filter' THEN 1 END), 0) AS "sqlOp_Filter",
COALESCE(MAX(CASE WHEN o.op = 'Generate' THEN 1 END), 0) AS "sqlOp_Generate",
COALESCE(MAX(CASE WHEN o.op = 'GenerateBloomFilter' THEN 1 END), 0) AS "sqlOp_GenerateBloomFilter",
COALESCE(MAX(CASE WHEN o.op = 'GlobalLimit' THEN 1 END), 0) AS "sqlOp_GlobalLimit",
COALESCE(MAX(CASE WHEN o.op = 'HashAggregate' THEN 1 END), 0) AS "sqlOp_HashAggregate",
COALESCE(MAX(CASE WHEN o.op = 'HashAggregatePrefixGroupingSets' THEN 1 END), 0) AS "sqlOp_HashAggregatePrefixGroupingSets",
COALESCE(MAX(CASE WHEN o.op = 'LocalLimit' THEN 1 END), 0) AS "sqlOp_LocalLimit",
COALESCE(MAX(CASE WHEN o.op = 'LocalTableScan' THEN 1 END), 0) AS "sqlOp_LocalTableScan",
COALESCE(MAX(CASE WHEN o.op = 'MapElements' THEN 1 END), 0) AS "sqlOp_MapElements",
COALESCE(MAX(CASE WHEN o.op = 'ObjectHashAggregate' THEN 1 END), 0) AS "sqlOp_ObjectHashAggregate",
COALESCE(MAX(CASE WHEN o.op = 'OutputAdapter' THEN 1 END), 0) AS "sqlOp_OutputAdapter",
COALESCE(MAX(CASE WHEN o.op = 'PartialWindow' THEN 1 END), 0) AS "sqlOp_PartialWindow",
COALESCE(MAX(CASE WHEN o.op = 'Project' THEN 1 END), 0) AS "sqlOp_Project",
COALESCE(MAX(CASE WHEN o.op = 'ReusedSort' THEN 1 END), 0) AS "sqlOp_ReusedSort",
COALESCE(MAX(CASE WHEN o.op = 'RunningWindowFunction' THEN 1 END), 0) AS "sqlOp_RunningWindowFunction",
COALESCE(MAX(CASE WHEN o.op = 'Scan csv' THEN 1 END), 0) AS "sqlOp_Scan csv",
COALESCE(MAX(CASE WHEN o.op = 'Scan ExistingRDD' THEN 1 END), 0) AS "sqlOp_Scan ExistingRDD",
COALESCE(MAX(CASE WHEN o.op = 'Scan ExistingRDD Delta Table Checkpoint' THEN 1 END), 0) AS "sqlOp_Scan ExistingRDD Delta Table Checkpoint",
COALESCE(MAX(CASE WHEN o.op = 'Scan ExistingRDD Delta Table State' THEN 1 END), 0) AS "sqlOp_Scan ExistingRDD Delta Table State",
COALESCE(MAX(CASE WHEN o.op = 'Scan jdbc' THEN 1 END), 0) AS "sqlOp_Scan jdbc",
COALESCE(MAX(CASE WHEN o.op = 'Scan json' THEN 1 END), 0) AS "sqlOp_Scan json",
COALESCE(MAX(CASE WHEN o.op = 'Scan OneRowRelation' THEN 1 END), 0) AS "sqlOp_Scan OneRowRelation",
COALESCE(MAX(CASE WHEN o.op = 'Scan orc' THEN 1 END), 0) AS "sqlOp_Scan orc",
COALESCE(MAX(CASE WHEN o.op = 'Scan parquet' THEN 1 END), 0) AS "sqlOp_Scan parquet",
COALESCE(MAX(CASE WHEN o.op = 'Scan text' THEN 1 END), 0) AS "sqlOp_Scan text",
COALESCE(MAX(CASE WHEN o.op = 'Scan unknown' THEN 1 END), 0) AS "sqlOp_Scan unknown",
COALESCE(MAX(CASE WHEN o.op = 'SerializeFromObject' THEN 1 END), 0) AS "sqlOp_SerializeFromObject",
COALESCE(MAX(CASE WHEN o.op = 'Sort' THEN 1 END), 0) AS "sqlOp_Sort",
COALESCE(MAX(CASE WHEN o.op = 'SortAggregate' THEN 1 END), 0) AS "sqlOp_SortAggregate",
COALESCE(MAX(CASE WHEN o.op = 'SortMergeJoin' THEN 1 END), 0) AS "sqlOp_SortMergeJoin",
COALESCE(MAX(CASE WHEN o.op = 'Subquery' THEN 1 END), 0) AS "sqlOp_Subquery",
COALESCE(MAX(CASE WHEN o.op = 'SubqueryBroadcast' THEN 1 END), 0) AS "sqlOp_SubqueryBroadcast",
COALESCE(MAX(CASE WHEN o.op = 'SubqueryOutputBroadcast' THEN 1 END), 0) AS "sqlOp_SubqueryOutputBroadcast",
COALESCE(MAX(CASE WHEN o.op = 'TakeOrderedAndProject' THEN 1 END), 0) AS "sqlOp_TakeOrderedAndProject",
COALESCE(MAX(CASE WHEN o.op = 'Window' THEN 1 END), 0) AS "sqlOp_Window",
COALESCE(MAX(CASE WHEN o.op = 'WindowGroupLimit' THEN 1 END), 0) AS "sqlOp_WindowGroupLimit",
COALESCE(MAX(CASE WHEN o.op = 'WindowSort' THEN 1 END), 0) AS "sqlOp_WindowSort"
FROM ops o
GROUP BY o.app_id, o.att, o.sql_id
