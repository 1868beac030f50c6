//! `format_bytes(n)`: a byte count in human units (`35.7 MB`), as the analyze report prints
//! sizes — one function for the report's Rust code and the views' advice text.

use datafusion::arrow::array::{Array, Float64Array, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, DocSection, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature,
    Volatility,
};
use std::sync::{Arc, LazyLock};

/// The `format_bytes` UDF.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FormatBytes {
    signature: Signature,
}

impl FormatBytes {
    /// A new instance.
    pub fn new() -> Self {
        Self {
            signature: Signature::uniform(1, vec![DataType::Float64], Volatility::Immutable),
        }
    }
}

impl Default for FormatBytes {
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
        "A byte count in decimal units with one decimal (B, KB, MB, GB, TB, PB; 1 KB = 1000 B), \
         as aether's reports print sizes. Counts under 1000 print as whole bytes. NULL for NULL, \
         NaN and infinities.",
        "format_bytes(n)",
    )
    .with_sql_example("SELECT format_bytes(35651232); -- 35.7 MB")
    .with_argument("n", "A number of bytes (any numeric type).")
    .build()
});

impl ScalarUDFImpl for FormatBytes {
    fn name(&self) -> &str {
        "format_bytes"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arr = args.args[0].to_array(args.number_rows)?;
        let arr = cast(&arr, &DataType::Float64)?;
        let a = arr
            .as_any()
            .downcast_ref::<Float64Array>()
            .expect("cast to Float64 gives a Float64Array");
        let out: StringArray = (0..a.len())
            .map(|i| (!a.is_null(i)).then(|| human_bytes(a.value(i))).flatten())
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}

/// `bytes` in decimal units (`35.7 MB`; whole bytes under 1000), `None` when not finite.
pub fn human_bytes(bytes: f64) -> Option<String> {
    if !bytes.is_finite() {
        return None;
    }
    const UNITS: [&str; 6] = ["B", "KB", "MB", "GB", "TB", "PB"];
    let mut x = bytes.abs();
    let mut i = 0;
    while x >= 1000.0 && i + 1 < UNITS.len() {
        x /= 1000.0;
        i += 1;
    }
    // 999.96 KB rounds to "1000.0 KB": print it in the next unit instead
    if i > 0 && i + 1 < UNITS.len() && format!("{x:.1}") == "1000.0" {
        x /= 1000.0;
        i += 1;
    }
    let sign = if bytes < 0.0 { "-" } else { "" };
    Some(if i == 0 {
        format!("{sign}{} B", x as i64)
    } else {
        format!("{sign}{x:.1} {}", UNITS[i])
    })
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn units() {
        assert_eq!(human_bytes(0.0).unwrap(), "0 B");
        assert_eq!(human_bytes(999.0).unwrap(), "999 B");
        assert_eq!(human_bytes(1000.0).unwrap(), "1.0 KB");
        assert_eq!(human_bytes(35_651_232.0).unwrap(), "35.7 MB");
        assert_eq!(human_bytes(999_960.0).unwrap(), "1.0 MB");
        assert_eq!(human_bytes(1.5e12).unwrap(), "1.5 TB");
        assert_eq!(human_bytes(3e18).unwrap(), "3000.0 PB");
        assert_eq!(human_bytes(-2048.0).unwrap(), "-2.0 KB");
        assert_eq!(human_bytes(f64::NAN), None);
    }
}
