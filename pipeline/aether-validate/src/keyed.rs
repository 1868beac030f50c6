//! Layer 3 by key: the two outputs joined on the key, keys present on one side only, and per
//! column the mismatches, null differences, largest difference and example rows.

use datafusion::arrow::datatypes::Field;
use datafusion::prelude::SessionContext;

use crate::{
    Builder, Options, Result, Verdict, aliased, ident, is_float, is_nested, is_numeric, one_row,
    text_rows,
};

/// The keyed comparison: rows present on one side only, and per column the mismatches.
pub(crate) async fn keyed(
    ctx: &SessionContext,
    cols: &[Field],
    key: &[String],
    o: &Options,
    b: &mut Builder,
) -> Result<()> {
    let on = key
        .iter()
        .map(|k| format!("c.{0} = g.{0}", ident(k)))
        .collect::<Vec<_>>()
        .join(" AND ");
    let from = format!(
        "(SELECT *, 1 AS __c FROM cpu) c FULL OUTER JOIN (SELECT *, 1 AS __g FROM gpu) g ON {on}"
    );
    let keys_sel = key.iter().map(|k| ident(k)).collect::<Vec<_>>().join(", ");
    let dup = |t: &str| {
        format!(
            "SELECT COUNT(*) FROM (SELECT {keys_sel} FROM {t} GROUP BY {keys_sel} HAVING COUNT(*) > 1) x"
        )
    };
    let dc = one_row(ctx, &dup("cpu")).await?[0]
        .clone()
        .unwrap_or_default();
    let dg = one_row(ctx, &dup("gpu")).await?[0]
        .clone()
        .unwrap_or_default();
    let unique = dc == "0" && dg == "0";
    b.gate(
        "rows",
        "key is unique",
        Some(&key.join(",")),
        format!("{dc} duplicated"),
        format!("{dg} duplicated"),
        None,
        unique,
        Verdict::Warn,
        || {
            format!(
                "key {} repeats ({dc} keys on the CPU, {dg} on the GPU): the keyed counts multiply",
                key.join(",")
            )
        },
    );
    let both = "c.__c IS NOT NULL AND g.__g IS NOT NULL";
    let value_cols: Vec<&Field> = cols
        .iter()
        .filter(|f| !key.contains(f.name()) && !is_nested(f.data_type()))
        .collect();
    let mut exprs = vec![
        "SUM(CASE WHEN g.__g IS NULL THEN 1 ELSE 0 END)".to_string(),
        "SUM(CASE WHEN c.__c IS NULL THEN 1 ELSE 0 END)".to_string(),
    ];
    let mismatch = |f: &Field| -> String {
        let c = format!("c.{}", ident(f.name()));
        let g = format!("g.{}", ident(f.name()));
        if is_float(f.data_type()) {
            let tol = o.tol(f.data_type());
            format!(
                "NOT (({c} IS NULL AND {g} IS NULL) OR (isnan({c}) AND isnan({g})) OR \
                 abs(CAST({c} AS DOUBLE) - CAST({g} AS DOUBLE)) <= {tol:e} * GREATEST(abs(CAST({c} AS DOUBLE)), abs(CAST({g} AS DOUBLE))) + {abs:e})",
                abs = o.abs_tol
            )
        } else {
            format!("{c} IS DISTINCT FROM {g}")
        }
    };
    for f in &value_cols {
        let c = format!("c.{}", ident(f.name()));
        let g = format!("g.{}", ident(f.name()));
        exprs.push(format!(
            "SUM(CASE WHEN {both} AND ({}) THEN 1 ELSE 0 END)",
            mismatch(f)
        ));
        exprs.push(format!(
            "SUM(CASE WHEN {both} AND (({c} IS NULL) <> ({g} IS NULL)) THEN 1 ELSE 0 END)"
        ));
        exprs.push(if is_numeric(f.data_type()) {
            format!("MAX(CASE WHEN {both} THEN abs(CAST({c} AS DOUBLE) - CAST({g} AS DOUBLE)) END)")
        } else {
            "CAST(NULL AS DOUBLE)".into()
        });
    }
    let r = one_row(ctx, &format!("SELECT {} FROM {from}", aliased(&exprs))).await?;
    let n = |v: &Option<String>| {
        v.as_deref()
            .and_then(|x| x.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (only_c, only_g) = (n(&r[0]), n(&r[1]));
    b.gate(
        "rows",
        "keys only on one side",
        Some(&key.join(",")),
        only_c,
        only_g,
        None,
        only_c + only_g == 0,
        Verdict::Fail,
        || format!("{only_c} keys only in the CPU output, {only_g} only in the GPU output"),
    );
    for (i, f) in value_cols.iter().enumerate() {
        let (mm, nd) = (n(&r[2 + 3 * i]), n(&r[3 + 3 * i]));
        let maxd = r[4 + 3 * i].clone();
        if mm == 0 {
            b.add(
                "rows",
                "values by key",
                Some(f.name()),
                0,
                0,
                None,
                Verdict::Pass,
                String::new(),
            );
            continue;
        }
        let c = format!("c.{}", ident(f.name()));
        let g = format!("g.{}", ident(f.name()));
        let kc = key
            .iter()
            .map(|k| format!("CAST(c.{} AS VARCHAR)", ident(k)))
            .collect::<Vec<_>>()
            .join(" || ',' || ");
        let ex_sql = format!(
            "SELECT {kc}, CAST({c} AS VARCHAR), CAST({g} AS VARCHAR) FROM {from} WHERE {both} AND ({}) LIMIT {}",
            mismatch(f),
            o.max_examples
        );
        let ex: Vec<String> = text_rows(ctx, &ex_sql)
            .await?
            .iter()
            .map(|row| {
                let v = |c: usize| row[c].clone().unwrap_or_else(|| "NULL".into());
                format!("{}={}: CPU {} GPU {}", key.join(","), v(0), v(1), v(2))
            })
            .collect();
        b.add(
            "rows",
            "values by key",
            Some(f.name()),
            format!("{mm} rows differ"),
            format!("{nd} null differences"),
            None,
            Verdict::Fail,
            format!(
                "column {} differs on {mm} rows{}{}, e.g. {}",
                f.name(),
                if nd > 0 {
                    format!(" ({nd} null on one side only)")
                } else {
                    String::new()
                },
                maxd.map(|m| format!(", largest difference {m}"))
                    .unwrap_or_default(),
                ex.join(" | ")
            ),
        );
    }
    Ok(())
}
