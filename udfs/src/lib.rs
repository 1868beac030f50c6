//! aether-udfs: DataFusion scalar UDFs for reading Spark event logs in SQL.
//!
//! Owns: functions where SQL alone is clumsy — parsing Spark sizes (`parse_size`), printing them (`format_bytes`), normalising
//! plan operator names (`normalize_operator`), pulling the expressions out of a plan node's
//! description (`plan_expressions`), and the RAPIDS plugin's GPU-support lookup
//! (`gpu_operator`). One function per file, each with its
//! `documentation()`, unit tests at the bottom and a sqllogictest file in `tests/slt/`.
//!
//! Does not own: the views that use them (`sql/`, registered by `aether-engine`).

use datafusion::arrow::array::{Array, ArrayRef, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::types::logical_string;
use datafusion::error::Result;
use datafusion::logical_expr::{
    Coercion, ColumnarValue, ScalarUDF, Signature, TypeSignature, TypeSignatureClass, Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

pub mod format_bytes;
pub mod gpu_operator;
pub mod gpu_operator_udf;
pub mod normalize_operator;
pub mod parse_size;
pub mod plan_expressions;
pub mod plan_parse;
pub mod rapids_plugin;

/// Every aether UDF.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        Arc::new(ScalarUDF::from(parse_size::ParseSize::new())),
        Arc::new(ScalarUDF::from(format_bytes::FormatBytes::new())),
        Arc::new(ScalarUDF::from(normalize_operator::NormalizeOperator::new())),
        Arc::new(ScalarUDF::from(plan_expressions::PlanExpressions::new())),
        Arc::new(ScalarUDF::from(gpu_operator_udf::GpuOperator::new())),
    ]
}

/// Register every aether UDF in `ctx`.
pub fn register(ctx: &SessionContext) {
    for f in functions() {
        ctx.register_udf(f.as_ref().clone());
    }
}

/// A signature taking `min..=max` string arguments (Utf8, LargeUtf8 or Utf8View).
pub(crate) fn strings_signature(min: usize, max: usize) -> Signature {
    let one = || Coercion::new_exact(TypeSignatureClass::Native(logical_string()));
    let variants = (min..=max)
        .map(|n| TypeSignature::Coercible((0..n).map(|_| one()).collect()))
        .collect();
    Signature::one_of(variants, Volatility::Immutable)
}

/// The arguments as `Utf8` arrays of `rows` rows (scalars expanded).
pub(crate) fn string_arrays(args: &[ColumnarValue], rows: usize) -> Result<Vec<StringArray>> {
    args.iter()
        .map(|a| {
            let arr: ArrayRef = a.to_array(rows)?;
            let arr = if arr.data_type() == &DataType::Utf8 {
                arr
            } else {
                cast(&arr, &DataType::Utf8)?
            };
            Ok(arr
                .as_any()
                .downcast_ref::<StringArray>()
                .expect("cast to Utf8 gives a StringArray")
                .clone())
        })
        .collect()
}

/// The value of row `i` of `a`, or `None` when NULL.
pub(crate) fn get(a: &StringArray, i: usize) -> Option<&str> {
    if a.is_null(i) { None } else { Some(a.value(i)) }
}
