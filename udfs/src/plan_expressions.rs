//! `plan_expressions(node_name, description)`: the expression names the RAPIDS qualification
//! tool finds in a plan node's description.

use crate::{get, gpu_operator, string_arrays, strings_signature};
use datafusion::arrow::array::{ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, DocSection, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature,
};
use std::sync::{Arc, LazyLock};

/// The `plan_expressions` UDF.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PlanExpressions {
    signature: Signature,
}

impl PlanExpressions {
    /// A new instance.
    pub fn new() -> Self {
        Self {
            signature: strings_signature(2, 2),
        }
    }
}

impl Default for PlanExpressions {
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
        "The expression names NVIDIA's spark-rapids-tools qualification tool (26.08.4) parses \
         from a SQL plan node's description to check them against the RAPIDS plugin, in order \
         and without repeats: function names (`partial_`/`merge_` prefixes removed, `cast` and \
         similar left out) of Project, Expand, Generate, aggregate functions, sort keys, window \
         functions and join keys, and for conditions (Filter, join conditions) also the \
         operators (`And`, `EqualTo`, `GreaterThan`, …). Empty for other nodes (scans, \
         exchanges, writes…); NULL when node_name is NULL.",
        "plan_expressions(node_name, description)",
    )
    .with_sql_example(
        "SELECT plan_expressions('Filter', 'Filter (isnotnull(a#1) AND (a#1 > 5))'); -- [isnotnull, And, GreaterThan]",
    )
    .with_argument("node_name", "The plan node's name (`nodeName`).")
    .with_argument("description", "The plan node's description (`simpleString`).")
    .build()
});

impl ScalarUDFImpl for PlanExpressions {
    fn name(&self) -> &str {
        "plan_expressions"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new_list_field(
            DataType::Utf8,
            true,
        ))))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let a = string_arrays(&args.args, args.number_rows)?;
        let mut out = ListBuilder::new(StringBuilder::new());
        for i in 0..args.number_rows {
            match get(&a[0], i) {
                None => out.append(false),
                Some(name) => {
                    let info = gpu_operator::classify(name, get(&a[1], i).unwrap_or(""), false);
                    for e in &info.expressions {
                        out.values().append_value(e);
                    }
                    out.append(true);
                }
            }
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, ListArray, StringArray};
    use datafusion::common::config::ConfigOptions;

    #[test]
    fn invoke() {
        let names = StringArray::from(vec![Some("Filter"), None, Some("Exchange")]);
        let descs = StringArray::from(vec![
            Some("Filter (isnotnull(a#1) AND (a#1 > 5))"),
            Some("x"),
            None,
        ]);
        let udf = PlanExpressions::new();
        let return_type = udf.return_type(&[]).unwrap();
        let args = ScalarFunctionArgs {
            args: vec![
                ColumnarValue::Array(Arc::new(names)),
                ColumnarValue::Array(Arc::new(descs)),
            ],
            arg_fields: vec![
                Arc::new(Field::new("a", DataType::Utf8, true)),
                Arc::new(Field::new("b", DataType::Utf8, true)),
            ],
            number_rows: 3,
            return_field: Arc::new(Field::new("r", return_type.clone(), true)),
            config_options: Arc::new(ConfigOptions::default()),
        };
        let ColumnarValue::Array(out) = udf.invoke_with_args(args).unwrap() else {
            panic!("an array")
        };
        assert_eq!(out.data_type(), &return_type);
        let out = out.as_any().downcast_ref::<ListArray>().unwrap();
        let first = out.value(0);
        let first = first.as_any().downcast_ref::<StringArray>().unwrap();
        let got: Vec<&str> = first.iter().map(|s| s.unwrap()).collect();
        assert_eq!(got, ["isnotnull", "And", "GreaterThan"]);
        assert!(out.is_null(1));
        assert!(!out.is_null(2));
        assert_eq!(out.value(2).len(), 0);
    }
}
