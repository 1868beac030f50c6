//! `normalize_operator(node_name, description)`: the exec name the RAPIDS qualification tool
//! reports for a plan node (`Scan parquet`, `SortMergeJoin`, `WholeStageCodegen`, …).

use crate::{get, gpu_operator, string_arrays, strings_signature};
use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, DocSection, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature,
};
use std::sync::{Arc, LazyLock};

/// The `normalize_operator` UDF.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct NormalizeOperator {
    signature: Signature,
}

impl NormalizeOperator {
    /// A new instance.
    pub fn new() -> Self {
        Self {
            signature: strings_signature(2, 2),
        }
    }
}

impl Default for NormalizeOperator {
    fn default() -> Self {
        Self::new()
    }
}

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DocSection {
            include: true,
            label: "aether functions",
            description: None,
        },
        "The exec name NVIDIA's spark-rapids-tools qualification tool (26.08.4) reports for a \
         SQL plan node (its \"Exec Name\"): scans and writes carry their format in lower case \
         (`Scan parquet`, `BatchScan orc`, `Execute InsertIntoHadoopFsRelationCommand json`, \
         `Scan ExistingRDD`), `SortMergeJoin(skew=true)` reads `SortMergeJoin`, a WholeStageCodegen \
         cluster `WholeStageCodegen`, anything else its trimmed name without a trailing `$`. NULL \
         when node_name is NULL; a NULL description counts as empty.",
        "normalize_operator(node_name, description)",
    )
    .with_sql_example(
        "SELECT normalize_operator('Scan parquet ', 'FileScan parquet [a#1] Format: Parquet, ReadSchema: struct<a:int>'); -- Scan parquet",
    )
    .with_argument("node_name", "The plan node's name (`nodeName`).")
    .with_argument("description", "The plan node's description (`simpleString`).")
    .build()
});

impl ScalarUDFImpl for NormalizeOperator {
    fn name(&self) -> &str {
        "normalize_operator"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let a = string_arrays(&args.args, args.number_rows)?;
        let out: StringArray = (0..args.number_rows)
            .map(|i| {
                let name = get(&a[0], i)?;
                Some(gpu_operator::normalize(name, get(&a[1], i).unwrap_or("")))
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Array;
    use datafusion::arrow::datatypes::Field;
    use datafusion::common::ScalarValue;
    use datafusion::common::config::ConfigOptions;

    #[test]
    fn invoke() {
        let names = StringArray::from(vec![
            Some("Scan parquet "),
            Some("WholeStageCodegen (3)"),
            None,
            Some("SortMergeJoin(skew=true)"),
        ]);
        let udf = NormalizeOperator::new();
        let args = ScalarFunctionArgs {
            args: vec![
                ColumnarValue::Array(Arc::new(names)),
                ColumnarValue::Scalar(ScalarValue::Utf8(Some(
                    "FileScan parquet [a#1] Format: Parquet, ReadSchema: struct<a:int>".into(),
                ))),
            ],
            arg_fields: vec![
                Arc::new(Field::new("a", DataType::Utf8, true)),
                Arc::new(Field::new("b", DataType::Utf8, true)),
            ],
            number_rows: 4,
            return_field: Arc::new(Field::new("r", DataType::Utf8, true)),
            config_options: Arc::new(ConfigOptions::default()),
        };
        let ColumnarValue::Array(out) = udf.invoke_with_args(args).unwrap() else {
            panic!("an array")
        };
        let out = out.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(out.value(0), "Scan parquet");
        assert_eq!(out.value(1), "WholeStageCodegen");
        assert!(out.is_null(2));
        assert_eq!(out.value(3), "SortMergeJoin");
    }
}
