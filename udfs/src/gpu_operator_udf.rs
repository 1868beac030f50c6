//! `gpu_operator(node_name, description [, delta_enabled])`: how the RAPIDS qualification tool
//! classifies a plan node for the GPU (see [`crate::gpu_operator`]), as a struct.

use crate::gpu_operator::{self, OperatorInfo};
use crate::{get, string_arrays};
use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, BooleanBuilder, ListBuilder, StringBuilder, StructArray,
    StructBuilder,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::types::{logical_boolean, logical_string};
use datafusion::error::Result;
use datafusion::logical_expr::{
    Coercion, ColumnarValue, DocSection, Documentation, ScalarFunctionArgs, ScalarUDFImpl,
    Signature, TypeSignature, TypeSignatureClass, Volatility,
};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

/// The `gpu_operator` UDF.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct GpuOperator {
    signature: Signature,
}

impl GpuOperator {
    /// A new instance.
    pub fn new() -> Self {
        let string = || Coercion::new_exact(TypeSignatureClass::Native(logical_string()));
        let boolean = Coercion::new_exact(TypeSignatureClass::Native(logical_boolean()));
        Self {
            signature: Signature::one_of(
                vec![
                    TypeSignature::Coercible(vec![string(), string()]),
                    TypeSignature::Coercible(vec![string(), string(), boolean]),
                ],
                Volatility::Immutable,
            ),
        }
    }
}

impl Default for GpuOperator {
    fn default() -> Self {
        Self::new()
    }
}

static DOC: LazyLock<Documentation> =
    LazyLock::new(|| {
        Documentation::builder(
        DocSection {
            include: true,
            label: "aether functions",
            description: None,
        },
        "How NVIDIA's spark-rapids-tools qualification tool (26.08.4) classifies a SQL plan node \
         for the RAPIDS Accelerator, from the node alone: a struct of `exec_name` (the reported \
         \"Exec Name\"), `expression_name`, `op_type` (Exec, ReadExec, ReadRDD, ReadRDDDeltaLog, \
         ReadDeltaLog, WriteExec, UDF, DataSet), `supported`, `should_remove`, `should_ignore`, \
         `details` (why unsupported; NULL when supported), `expressions` (parsed expression \
         names) and `unsupported_expressions` (list of {name, details}). The tool's Action is \
         NONE when supported, else IgnoreNoPerf when should_remove, IgnorePerf when \
         should_ignore, else Triage. Plan-level rules are not applied: a WholeStageCodegen \
         cluster is reported unsupported (it is supported when any child is), nodes under a \
         ReusedExchange are not marked removed, and Delta Lake metadata queries are not marked. \
         `delta_enabled` (default false) says the app runs Delta Lake, which makes scans of the \
         Delta log ReadDeltaLog/ReadRDDDeltaLog. Scan support uses the EMR A10G operator scores. \
         NULL when node_name is NULL; a NULL description counts as empty.",
        "gpu_operator(node_name, description [, delta_enabled])",
    )
    .with_sql_example(
        "SELECT gpu_operator(node_name, description)['supported'] FROM sql_plan_nodes",
    )
    .with_argument("node_name", "The plan node's name (`nodeName`).")
    .with_argument("description", "The plan node's description (`simpleString`).")
    .with_argument("delta_enabled", "Whether the app runs Delta Lake (default false).")
    .build()
    });

/// The nodes classified so far in this process, by `delta, name, description` ([`memo_key`]):
/// a node is a pure function of them, a session's views call `gpu_operator` on the same nodes
/// several times (a CTE read by several joins is planned once per read), and more than half of
/// a log's plan nodes repeat ones of its other SQLs. Up to [`MEMO_MAX_BYTES`] (keys and
/// results); past that, nodes are classified without being kept.
static MEMO: LazyLock<Mutex<Memo>> = LazyLock::new(Default::default);

/// The most bytes [`MEMO`] keeps, about (a node takes ~300: its description, ~90 bytes on
/// average, and its result): some 25,000 distinct nodes.
const MEMO_MAX_BYTES: usize = 8 << 20;

#[derive(Default)]
struct Memo {
    nodes: HashMap<Box<str>, Arc<OperatorInfo>>,
    bytes: usize,
}

/// `key` set to the memo key of a node: the Delta flag, the name's length, the name, then the
/// description (the length keeps apart names and descriptions that would run together).
fn memo_key(key: &mut String, name: &str, desc: &str, delta: bool) {
    use std::fmt::Write;
    key.clear();
    let _ = write!(key, "{}{}:", u8::from(delta), name.len());
    key.push_str(name);
    key.push_str(desc);
}

/// [`gpu_operator::classify`], remembered in [`MEMO`]; `key` is scratch space.
fn classify_memo(key: &mut String, name: &str, desc: &str, delta: bool) -> Arc<OperatorInfo> {
    memo_key(key, name, desc, delta);
    if let Some(info) = MEMO
        .lock()
        .ok()
        .and_then(|m| m.nodes.get(key.as_str()).cloned())
    {
        return info;
    }
    let info = Arc::new(gpu_operator::classify(name, desc, delta));
    let bytes = key.len() + held_bytes(&info);
    if let Ok(mut m) = MEMO.lock()
        && m.bytes + bytes <= MEMO_MAX_BYTES
        && m.nodes.insert(key.as_str().into(), info.clone()).is_none()
    {
        m.bytes += bytes;
    }
    info
}

/// About the bytes a result holds: its strings, and each string's and its own bookkeeping.
fn held_bytes(info: &OperatorInfo) -> usize {
    let strings = [&info.exec_name, &info.expression_name]
        .into_iter()
        .chain(info.details.as_ref())
        .chain(&info.expressions)
        .chain(
            info.unsupported_expressions
                .iter()
                .flat_map(|(a, b)| [a, b]),
        )
        .chain(&info.partial_types);
    strings.map(|s| s.len() + 24).sum::<usize>() + std::mem::size_of::<OperatorInfo>() + 64
}

/// The fields of an unsupported expression.
fn unsupported_expr_fields() -> Fields {
    Fields::from(vec![
        Field::new("name", DataType::Utf8, true),
        Field::new("details", DataType::Utf8, true),
    ])
}

/// The fields of the result.
fn result_fields() -> Fields {
    let list = |t: DataType| DataType::List(Arc::new(Field::new_list_field(t, true)));
    Fields::from(vec![
        Field::new("exec_name", DataType::Utf8, true),
        Field::new("expression_name", DataType::Utf8, true),
        Field::new("op_type", DataType::Utf8, true),
        Field::new("supported", DataType::Boolean, true),
        Field::new("should_remove", DataType::Boolean, true),
        Field::new("should_ignore", DataType::Boolean, true),
        Field::new("details", DataType::Utf8, true),
        Field::new("expressions", list(DataType::Utf8), true),
        Field::new(
            "unsupported_expressions",
            list(DataType::Struct(unsupported_expr_fields())),
            true,
        ),
        Field::new("partial_types", list(DataType::Utf8), true),
    ])
}

/// Column builders for the result.
struct Builders {
    exec_name: StringBuilder,
    expression_name: StringBuilder,
    op_type: StringBuilder,
    supported: BooleanBuilder,
    should_remove: BooleanBuilder,
    should_ignore: BooleanBuilder,
    details: StringBuilder,
    expressions: ListBuilder<StringBuilder>,
    unsupported: ListBuilder<StructBuilder>,
    partial_types: ListBuilder<StringBuilder>,
}

impl Builders {
    fn new() -> Self {
        Self {
            exec_name: StringBuilder::new(),
            expression_name: StringBuilder::new(),
            op_type: StringBuilder::new(),
            supported: BooleanBuilder::new(),
            should_remove: BooleanBuilder::new(),
            should_ignore: BooleanBuilder::new(),
            details: StringBuilder::new(),
            expressions: ListBuilder::new(StringBuilder::new()),
            unsupported: ListBuilder::new(StructBuilder::from_fields(unsupported_expr_fields(), 0)),
            partial_types: ListBuilder::new(StringBuilder::new()),
        }
    }

    fn append(&mut self, info: Option<&OperatorInfo>) {
        let Some(info) = info else {
            self.exec_name.append_null();
            self.expression_name.append_null();
            self.op_type.append_null();
            self.supported.append_null();
            self.should_remove.append_null();
            self.should_ignore.append_null();
            self.details.append_null();
            self.expressions.append(false);
            self.unsupported.append(false);
            self.partial_types.append(false);
            return;
        };
        self.exec_name.append_value(&info.exec_name);
        self.expression_name.append_value(&info.expression_name);
        self.op_type.append_value(info.op_type);
        self.supported.append_value(info.supported);
        self.should_remove.append_value(info.should_remove);
        self.should_ignore.append_value(info.should_ignore);
        self.details.append_option(info.details.as_deref());
        for e in &info.expressions {
            self.expressions.values().append_value(e);
        }
        self.expressions.append(true);
        for (name, details) in &info.unsupported_expressions {
            let s = self.unsupported.values();
            s.field_builder::<StringBuilder>(0)
                .expect("a string builder")
                .append_value(name);
            s.field_builder::<StringBuilder>(1)
                .expect("a string builder")
                .append_value(details);
            s.append(true);
        }
        self.unsupported.append(true);
        for t in &info.partial_types {
            self.partial_types.values().append_value(t);
        }
        self.partial_types.append(true);
    }

    fn finish(mut self, valid: Vec<bool>) -> Result<StructArray> {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.exec_name.finish()),
            Arc::new(self.expression_name.finish()),
            Arc::new(self.op_type.finish()),
            Arc::new(self.supported.finish()),
            Arc::new(self.should_remove.finish()),
            Arc::new(self.should_ignore.finish()),
            Arc::new(self.details.finish()),
            Arc::new(self.expressions.finish()),
            Arc::new(self.unsupported.finish()),
            Arc::new(self.partial_types.finish()),
        ];
        Ok(StructArray::try_new(
            result_fields(),
            columns,
            Some(NullBuffer::from(valid)),
        )?)
    }
}

impl ScalarUDFImpl for GpuOperator {
    fn name(&self) -> &str {
        "gpu_operator"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Struct(result_fields()))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let a = string_arrays(&args.args[..2.min(args.args.len())], rows)?;
        let delta: Option<BooleanArray> = match args.args.get(2) {
            Some(d) => {
                let arr = d.to_array(rows)?;
                let arr = if arr.data_type() == &DataType::Boolean {
                    arr
                } else {
                    cast(&arr, &DataType::Boolean)?
                };
                Some(
                    arr.as_any()
                        .downcast_ref::<BooleanArray>()
                        .expect("cast to Boolean gives a BooleanArray")
                        .clone(),
                )
            }
            None => None,
        };
        let mut b = Builders::new();
        let mut valid = Vec::with_capacity(rows);
        let mut key = String::new();
        for i in 0..rows {
            let info = get(&a[0], i).map(|name| {
                let desc = a.get(1).and_then(|d| get(d, i)).unwrap_or("");
                let delta = delta.as_ref().is_some_and(|d| d.is_valid(i) && d.value(i));
                classify_memo(&mut key, name, desc, delta)
            });
            valid.push(info.is_some());
            b.append(info.as_deref());
        }
        Ok(ColumnarValue::Array(Arc::new(b.finish(valid)?)))
    }
    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ListArray, StringArray};
    use datafusion::common::ScalarValue;
    use datafusion::common::config::ConfigOptions;

    fn call(args: Vec<ColumnarValue>, rows: usize) -> StructArray {
        let udf = GpuOperator::new();
        let return_type = udf.return_type(&[]).unwrap();
        let arg_fields = args
            .iter()
            .map(|a| Arc::new(Field::new("a", a.data_type(), true)))
            .collect();
        let out = udf
            .invoke_with_args(ScalarFunctionArgs {
                args,
                arg_fields,
                number_rows: rows,
                return_field: Arc::new(Field::new("r", return_type.clone(), true)),
                config_options: Arc::new(ConfigOptions::default()),
            })
            .unwrap();
        let ColumnarValue::Array(out) = out else {
            panic!("an array")
        };
        assert_eq!(out.data_type(), &return_type);
        out.as_any().downcast_ref::<StructArray>().unwrap().clone()
    }

    fn strings(s: &StructArray, name: &str) -> StringArray {
        s.column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .clone()
    }

    fn bools(s: &StructArray, name: &str) -> BooleanArray {
        s.column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap()
            .clone()
    }

    #[test]
    fn struct_rows() {
        let names = StringArray::from(vec![
            Some("Project"),
            None,
            Some("Scan ExistingRDD Delta Table State #9 - abfss://x/_delta_log"),
        ]);
        let descs = StringArray::from(vec![
            Some("Project [to_json(a#1) AS j#2, upper(b#3) AS u#4]"),
            Some("x"),
            Some("Scan ExistingRDD Delta Table State #9 - abfss://x/_delta_log[txn#395]"),
        ]);
        let s = call(
            vec![
                ColumnarValue::Array(Arc::new(names)),
                ColumnarValue::Array(Arc::new(descs)),
                ColumnarValue::Scalar(ScalarValue::Boolean(Some(true))),
            ],
            3,
        );
        assert_eq!(s.len(), 3);
        assert!(s.is_valid(0) && s.is_null(1) && s.is_valid(2));
        let exec = strings(&s, "exec_name");
        assert_eq!(exec.value(0), "Project");
        assert!(exec.is_null(1));
        assert_eq!(exec.value(2), "Scan ExistingRDD");
        assert_eq!(strings(&s, "op_type").value(2), "ReadRDDDeltaLog");
        let supported = bools(&s, "supported");
        assert!(!supported.value(0));
        assert!(supported.is_null(1));
        assert!(bools(&s, "should_ignore").value(2));
        let details = strings(&s, "details");
        assert_eq!(details.value(0), "Contains unsupported expr");
        assert_eq!(
            details.value(2),
            "Delta Lake metadata scans are not supported"
        );
        let exprs = s
            .column_by_name("expressions")
            .unwrap()
            .as_any()
            .downcast_ref::<ListArray>()
            .unwrap()
            .clone();
        assert_eq!(exprs.value(0).len(), 2);
        assert!(exprs.is_null(1));
        let unsupported = s
            .column_by_name("unsupported_expressions")
            .unwrap()
            .as_any()
            .downcast_ref::<ListArray>()
            .unwrap()
            .clone();
        let first = unsupported.value(0);
        let first = first.as_any().downcast_ref::<StructArray>().unwrap();
        assert_eq!(strings(first, "name").value(0), "to_json");
        assert!(
            strings(first, "details")
                .value(0)
                .starts_with("This is disabled by default because it is currently in beta")
        );
    }

    #[test]
    fn two_arguments_and_null_delta() {
        let s = call(
            vec![
                ColumnarValue::Scalar(ScalarValue::Utf8(Some("Exchange".into()))),
                ColumnarValue::Scalar(ScalarValue::Utf8(None)),
            ],
            2,
        );
        assert!(bools(&s, "supported").value(1));
        assert!(strings(&s, "details").is_null(0));
        let s = call(
            vec![
                ColumnarValue::Scalar(ScalarValue::Utf8(Some("Scan parquet".into()))),
                ColumnarValue::Scalar(ScalarValue::Utf8(Some(
                    "FileScan parquet [a#1] Format: Parquet, Location: x/_delta_log, ReadSchema: struct<a:int>".into(),
                ))),
                ColumnarValue::Scalar(ScalarValue::Boolean(None)),
            ],
            1,
        );
        assert!(bools(&s, "supported").value(0));
        assert_eq!(strings(&s, "op_type").value(0), "ReadExec");
    }

    /// A remembered node is what classifying it gives, the first time and after; names and
    /// descriptions that run together, and the Delta flag, keep nodes apart.
    #[test]
    fn remembered_nodes_are_classified_nodes() {
        let scan = "FileScan parquet [a#1] Format: Parquet, Location: x/_delta_log, ReadSchema: struct<a:int>";
        let nodes = [
            ("Scan parquet", scan, false),
            ("Scan parquet", scan, true),
            ("Scan parquet ", &scan[1..], false),
            ("Project", "Project [to_json(a#1) AS j#2]", false),
            ("Projec", "tProject [to_json(a#1) AS j#2]", false),
            ("Exchange", "", false),
        ];
        let mut key = String::new();
        let mut keys = std::collections::HashSet::new();
        for round in 0..2 {
            for (name, desc, delta) in nodes {
                let got = classify_memo(&mut key, name, desc, delta);
                assert_eq!(
                    *got,
                    gpu_operator::classify(name, desc, delta),
                    "{name} {delta}"
                );
                if round == 0 {
                    assert!(keys.insert(key.clone()), "{key}");
                }
            }
        }
        // the Delta flag changes the verdict on a Delta log scan: the memo kept both
        let key_of = |name, desc, delta| {
            let mut k = String::new();
            memo_key(&mut k, name, desc, delta);
            k
        };
        let m = MEMO.lock().unwrap();
        let (a, b) = (
            &m.nodes[key_of("Scan parquet", scan, false).as_str()],
            &m.nodes[key_of("Scan parquet", scan, true).as_str()],
        );
        assert_ne!(a.op_type, b.op_type);
        assert!(m.bytes > 0 && m.bytes <= MEMO_MAX_BYTES);
    }
}
