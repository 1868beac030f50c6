//! `parse_size(text [, default_unit])`: a Spark size string (`8g`, `512m`, `1024`) in bytes.

use crate::{get, string_arrays, strings_signature};
use datafusion::arrow::array::Int64Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, DocSection, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature,
};
use std::sync::{Arc, LazyLock};

/// The `parse_size` UDF.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ParseSize {
    signature: Signature,
}

impl ParseSize {
    /// A new instance.
    pub fn new() -> Self {
        Self {
            signature: strings_signature(1, 2),
        }
    }
}

impl Default for ParseSize {
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
        "Parses a size the way Spark reads `spark.executor.memory` and friends \
         (JavaUtils.byteStringAs): an integer with an optional binary unit b, k/kb, m/mb, g/gb, \
         t/tb, p/pb (case-insensitive, surrounding blanks ignored). A number without a unit is in \
         `default_unit` (bytes when omitted; Spark reads `spark.executor.memory=4096` as MiB, so \
         pass 'm' there). Returns the size in bytes; NULL for NULL, fractions, negative numbers, \
         unknown units and overflow.",
        "parse_size(text [, default_unit])",
    )
    .with_sql_example("SELECT parse_size('8g'); -- 8589934592")
    .with_argument("text", "The size string, e.g. '512m'.")
    .with_argument(
        "default_unit",
        "Unit of a bare number: 'b' (default), 'k', 'm', 'g', …",
    )
    .build()
});

impl ScalarUDFImpl for ParseSize {
    fn name(&self) -> &str {
        "parse_size"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let a = string_arrays(&args.args, args.number_rows)?;
        let out: Int64Array = (0..args.number_rows)
            .map(|i| {
                let unit = match a.get(1) {
                    Some(u) => get(u, i)?,
                    None => "b",
                };
                parse(get(&a[0], i)?, unit)
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}

fn unit_shift(unit: &str) -> Option<u32> {
    Some(match unit {
        "b" => 0,
        "k" | "kb" => 10,
        "m" | "mb" => 20,
        "g" | "gb" => 30,
        "t" | "tb" => 40,
        "p" | "pb" => 50,
        _ => return None,
    })
}

/// The bytes of `text` (bare numbers in `default_unit`), or `None` when it is not a size.
pub fn parse(text: &str, default_unit: &str) -> Option<i64> {
    let t = text.trim().to_ascii_lowercase();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: i64 = t[..digits].parse().ok()?;
    let suffix = t[digits..].trim_start();
    let shift = if suffix.is_empty() {
        unit_shift(&default_unit.trim().to_ascii_lowercase())?
    } else {
        unit_shift(suffix)?
    };
    n.checked_mul(1i64.checked_shl(shift)?)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn spark_sizes() {
        assert_eq!(parse("8g", "b"), Some(8 << 30));
        assert_eq!(parse(" 512M ", "b"), Some(512 << 20));
        assert_eq!(parse("1024", "b"), Some(1024));
        assert_eq!(parse("4096", "m"), Some(4096 << 20));
        assert_eq!(parse("2tb", "b"), Some(2 << 40));
        assert_eq!(parse("100k", "b"), Some(100 << 10));
        assert_eq!(parse("7b", "g"), Some(7));
    }

    #[test]
    fn not_sizes() {
        for bad in ["", "g", "1.5g", "-1g", "12x", "9999999999p", "abc", "1 g b"] {
            assert_eq!(parse(bad, "b"), None, "{bad:?}");
        }
        assert_eq!(parse("12", "lightyears"), None);
    }
}
