//! Layer 1 of an output's comparison, the schema: column names, types and nullability, and
//! the columns both sides have (the ones the other layers compare).

use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};

use crate::{Builder, Verdict};

pub(crate) const UTC_MICROS: &str = "Timestamp(Microsecond, Some(\"UTC\"))";

fn timestamps(a: &DataType, b: &DataType) -> bool {
    matches!(a, DataType::Timestamp(_, _)) && matches!(b, DataType::Timestamp(_, _))
}

/// Names, types, nullability; the columns both sides have with the same type (timestamps of
/// any unit and zone count as one type: instants).
pub(crate) fn compare_schema(cs: &SchemaRef, gs: &SchemaRef, b: &mut Builder) -> Vec<Field> {
    let mut common = Vec::new();
    for f in cs.fields() {
        match gs.field_with_name(f.name()) {
            Err(_) => b.add(
                "schema",
                "column",
                Some(f.name()),
                f.data_type(),
                "(missing)",
                None,
                Verdict::Fail,
                format!("column {} is only in the CPU output", f.name()),
            ),
            Ok(g) if g.data_type() != f.data_type() && timestamps(f.data_type(), g.data_type()) => {
                b.add(
                    "schema",
                    "type",
                    Some(f.name()),
                    f.data_type(),
                    g.data_type(),
                    None,
                    Verdict::Pass,
                    format!(
                        "column {} is stored as {} on the CPU, {} on the GPU: compared as UTC instants",
                        f.name(),
                        f.data_type(),
                        g.data_type()
                    ),
                );
                common.push(f.as_ref().clone());
            }
            Ok(g) if g.data_type() != f.data_type() => b.add(
                "schema",
                "type",
                Some(f.name()),
                f.data_type(),
                g.data_type(),
                None,
                Verdict::Fail,
                format!(
                    "column {} is {} on the CPU, {} on the GPU",
                    f.name(),
                    f.data_type(),
                    g.data_type()
                ),
            ),
            Ok(g) => {
                if g.is_nullable() != f.is_nullable() {
                    b.add(
                        "schema",
                        "nullability",
                        Some(f.name()),
                        f.is_nullable(),
                        g.is_nullable(),
                        None,
                        Verdict::Pass,
                        format!(
                            "column {} is nullable on one side only (Spark marks columns it read \
                             nullable): the nulls themselves are counted below",
                            f.name()
                        ),
                    );
                }
                common.push(f.as_ref().clone());
            }
        }
    }
    for g in gs.fields() {
        if cs.field_with_name(g.name()).is_err() {
            b.add(
                "schema",
                "column",
                Some(g.name()),
                "(missing)",
                g.data_type(),
                None,
                Verdict::Fail,
                format!("column {} is only in the GPU output", g.name()),
            );
        }
    }
    let same_order = cs.fields().len() == gs.fields().len()
        && cs
            .fields()
            .iter()
            .zip(gs.fields())
            .all(|(a, b)| a.name() == b.name());
    b.add(
        "schema",
        "columns",
        None,
        cs.fields().len(),
        gs.fields().len(),
        None,
        if common.len() == cs.fields().len() && common.len() == gs.fields().len() {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        format!(
            "{} columns on the CPU, {} on the GPU, {} compared{}",
            cs.fields().len(),
            gs.fields().len(),
            common.len(),
            if same_order || common.len() != cs.fields().len() {
                ""
            } else {
                " (in another order)"
            }
        ),
    );
    common
}
