//! Layer 1, from the two runs' event logs alone: rows read and written per app and per SQL
//! execution (the tasks' input and output metrics), and per write command its path, format, save
//! mode, partition columns and its "number of output rows / written files / written output"
//! metrics (the command's plan node: `Execute [Gpu]InsertIntoHadoopFsRelationCommand`,
//! `…TableAsSelect…`, read by [`aether_platform::sandbox::parse_write`], the same reader that
//! moves a test run's outputs into its sandbox). Rows written must be equal; rows read only
//! warn (scan pruning can differ); bytes are shown, never gated (GPU scans count them
//! differently). Writes are matched by path, else by the longest common path suffix (a sandbox
//! prefix differs), else in order.

use std::collections::HashMap;

use aether_platform::sandbox::{WriteTarget, parse_write};

use crate::{Builder, Error, Result, Verdict, pct, text_rows as rows};

/// What one run's event log says it read and wrote.
#[derive(Clone, Debug, Default)]
pub struct LogFacts {
    pub app_id: String,
    pub rows_read: i64,
    pub rows_written: i64,
    pub bytes_read: i64,
    pub bytes_written: i64,
    /// Per SQL execution that read or wrote rows: id, description, rows read, rows written.
    pub sqls: Vec<(i64, String, i64, i64)>,
    pub writes: Vec<Write>,
}

/// One write command of a run.
#[derive(Clone, Debug)]
pub struct Write {
    pub sql_id: i64,
    pub target: WriteTarget,
    pub rows: Option<i64>,
    pub files: Option<i64>,
    pub bytes: Option<i64>,
}

impl Write {
    /// The table written, else the path.
    pub fn name(&self) -> String {
        self.target
            .table
            .clone()
            .or_else(|| self.target.path.clone())
            .unwrap_or_else(|| self.target.command.clone())
    }
}

fn int(v: &Option<String>) -> i64 {
    v.as_deref().and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// One run's event log (one application) in a session, with the views the checks read.
pub(crate) async fn load(log: &str) -> Result<aether_engine::SessionContext> {
    // the ingest runs its own I/O runtime: off this one's threads
    let input = log.to_string();
    let ing =
        tokio::task::spawn_blocking(move || aether_ingest::ingest(&[input], &Default::default()))
            .await
            .map_err(|e| Error::Query(e.to_string()))?;
    if let Some(e) = ing.source_errors.first() {
        return Err(Error::Input(format!("{}: {}", e.path, e.error)));
    }
    if !ing.any_app() {
        let why = ing
            .logs
            .first()
            .and_then(|l| l.errors.first().map(|e| format!("{e:?}")))
            .unwrap_or_else(|| "no Spark application in it".into());
        return Err(Error::Input(format!(
            "{log}: not a readable event log: {why}"
        )));
    }
    let ctx = aether_engine::session();
    let e = |e: aether_engine::EngineError| Error::Query(e.to_string());
    aether_engine::register_ingested(&ctx, &ing).map_err(e)?;
    aether_engine::views::register_views_materialized(
        &ctx,
        &Default::default(),
        &["stage_jobs", "profile_sql_plan_metrics_for_application"],
    )
    .await
    .map_err(e)?;
    Ok(ctx)
}

/// Read one run's event log (one application).
pub async fn facts(log: &str) -> Result<LogFacts> {
    let ctx = load(log).await?;
    let mut f = LogFacts::default();
    let app = rows(
        &ctx,
        "SELECT a.app_id, SUM(t.input_records_read), SUM(t.output_records_written),
                SUM(t.input_bytes_read), SUM(t.output_bytes_written)
         FROM applications a LEFT JOIN tasks t ON t.app_id = a.app_id AND t.status = 'success'
         GROUP BY a.app_id ORDER BY a.app_id",
    )
    .await?;
    if app.len() > 1 {
        return Err(Error::Input(format!(
            "{log}: {} applications; give one run's event log",
            app.len()
        )));
    }
    let a = &app[0];
    f.app_id = a[0].clone().unwrap_or_default();
    (f.rows_read, f.rows_written, f.bytes_read, f.bytes_written) =
        (int(&a[1]), int(&a[2]), int(&a[3]), int(&a[4]));
    for r in rows(
        &ctx,
        "SELECT j.sql_id, MAX(e.description), SUM(t.input_records_read), SUM(t.output_records_written)
         FROM tasks t
         JOIN (SELECT DISTINCT app_id, stage_id, sql_id FROM stage_jobs WHERE sql_id IS NOT NULL) j
           ON j.app_id = t.app_id AND j.stage_id = t.stage_id
         LEFT JOIN sql_executions e ON e.app_id = j.app_id AND e.sql_id = j.sql_id
         WHERE t.status = 'success'
         GROUP BY j.sql_id ORDER BY j.sql_id",
    )
    .await?
    {
        let (read, written) = (int(&r[2]), int(&r[3]));
        if read > 0 || written > 0 {
            f.sqls.push((int(&r[0]), r[1].clone().unwrap_or_default(), read, written));
        }
    }
    let mut metrics: HashMap<(i64, i64), HashMap<String, i64>> = HashMap::new();
    for r in rows(
        &ctx,
        "SELECT \"sqlID\", \"nodeID\", name, total FROM profile_sql_plan_metrics_for_application
         WHERE name IN ('number of output rows', 'number of written files', 'written output')",
    )
    .await?
    {
        metrics
            .entry((int(&r[0]), int(&r[1])))
            .or_default()
            .insert(r[2].clone().unwrap_or_default(), int(&r[3]));
    }
    for (sql_id, node_id, target) in writes(&ctx).await? {
        let m = metrics.get(&(sql_id, node_id));
        let get = |k: &str| m.and_then(|m| m.get(k).copied());
        f.writes.push(Write {
            sql_id,
            target,
            rows: get("number of output rows"),
            files: get("number of written files"),
            bytes: get("written output"),
        });
    }
    Ok(f)
}

/// The write commands in an ingested run's plans, as (SQL id, node id, target) in SQL order;
/// tables resolved ([`aether_platform::sandbox::resolve_tables`]: a `saveAsTable` is one write,
/// a managed table's location is in the warehouse directory the run had).
pub async fn writes(
    ctx: &datafusion::prelude::SessionContext,
) -> Result<Vec<(i64, i64, WriteTarget)>> {
    let warehouse = rows(
        ctx,
        "SELECT value FROM properties WHERE key = 'spark.sql.warehouse.dir' LIMIT 1",
    )
    .await?
    .into_iter()
    .next()
    .and_then(|r| r[0].clone());
    let (mut ids, mut roots, mut targets) = (Vec::new(), Vec::new(), Vec::new());
    for r in rows(
        ctx,
        "SELECT n.sql_id, n.node_id, n.node_name, n.description, COALESCE(e.root_sql_id, n.sql_id)
         FROM sql_plan_nodes n
         LEFT JOIN sql_executions e ON e.app_id = n.app_id AND e.sql_id = n.sql_id
         WHERE n.is_final AND n.node_name LIKE 'Execute %' ORDER BY n.sql_id, n.node_id",
    )
    .await?
    {
        let (name, desc) = (
            r[2].clone().unwrap_or_default(),
            r[3].clone().unwrap_or_default(),
        );
        if let Some(t) = parse_write(&name, &desc) {
            ids.push((int(&r[0]), int(&r[1])));
            roots.push(int(&r[4]));
            targets.push(t);
        }
    }
    let keep = aether_platform::sandbox::resolve_tables(&mut targets, &roots, warehouse.as_deref());
    Ok(ids
        .into_iter()
        .zip(targets)
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(((s, n), t), _)| (s, n, t))
        .collect())
}

/// How many trailing path components two paths share.
fn common_suffix(a: &str, b: &str) -> usize {
    a.trim_end_matches('/')
        .rsplit('/')
        .zip(b.trim_end_matches('/').rsplit('/'))
        .take_while(|(x, y)| x == y)
        .count()
}

/// The GPU write each CPU write is matched with (by index).
pub(crate) fn match_writes(cpu: &[Write], gpu: &[Write]) -> Vec<Option<usize>> {
    let mut used = vec![false; gpu.len()];
    let mut out = vec![None; cpu.len()];
    // exact path or table, then the longest shared suffix, then the order
    for (i, c) in cpu.iter().enumerate() {
        if let Some(j) = (0..gpu.len()).find(|&j| !used[j] && gpu[j].name() == c.name()) {
            used[j] = true;
            out[i] = Some(j);
        }
    }
    for (i, c) in cpu.iter().enumerate() {
        if out[i].is_some() {
            continue;
        }
        let best = (0..gpu.len())
            .filter(|&j| !used[j])
            .map(|j| (common_suffix(&c.name(), &gpu[j].name()), j))
            .filter(|(n, _)| *n > 0)
            .max_by_key(|(n, j)| (*n, std::cmp::Reverse(*j)));
        if let Some((_, j)) = best {
            used[j] = true;
            out[i] = Some(j);
        }
    }
    for slot in out.iter_mut() {
        if slot.is_none()
            && let Some(j) = (0..gpu.len()).find(|&j| !used[j])
        {
            used[j] = true;
            *slot = Some(j);
        }
    }
    out
}

fn opt(v: Option<i64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "?".into())
}

/// Compare the two runs' facts into `b`.
pub(crate) fn compare(c: &LogFacts, g: &LogFacts, b: &mut Builder) {
    let layer = "event log";
    let cmp = |b: &mut Builder, check: &str, x: i64, y: i64, bad: Verdict, what: &str| {
        b.gate(
            layer,
            check,
            None,
            x,
            y,
            pct(x as f64, y as f64),
            x == y,
            bad,
            || format!("{what}: {x} in the CPU run, {y} in the GPU run"),
        );
    };
    cmp(
        b,
        "rows written",
        c.rows_written,
        g.rows_written,
        Verdict::Fail,
        "rows written",
    );
    cmp(
        b,
        "rows read",
        c.rows_read,
        g.rows_read,
        Verdict::Warn,
        "rows read (scan pruning can differ)",
    );
    b.add(
        layer,
        "bytes read",
        None,
        c.bytes_read,
        g.bytes_read,
        pct(c.bytes_read as f64, g.bytes_read as f64),
        Verdict::Pass,
        "shown, not gated: GPU scans count bytes differently",
    );
    b.add(
        layer,
        "bytes written",
        None,
        c.bytes_written,
        g.bytes_written,
        pct(c.bytes_written as f64, g.bytes_written as f64),
        Verdict::Pass,
        "shown, not gated",
    );
    // per SQL execution, in order
    for (i, (id, desc, read, written)) in c.sqls.iter().enumerate() {
        match g.sqls.get(i) {
            Some((gid, _, gread, gwritten)) => {
                let name = if id == gid {
                    format!("SQL {id}")
                } else {
                    format!("SQL {id} / {gid}")
                };
                cmp(
                    b,
                    &format!("rows written by {name}"),
                    *written,
                    *gwritten,
                    Verdict::Fail,
                    &format!("rows written by {name} ({desc})"),
                );
                cmp(
                    b,
                    &format!("rows read by {name}"),
                    *read,
                    *gread,
                    Verdict::Warn,
                    &format!("rows read by {name} ({desc})"),
                );
            }
            None => b.add(
                layer,
                &format!("SQL {id}"),
                None,
                format!("{read} read, {written} written"),
                "(none)",
                None,
                Verdict::Fail,
                format!("SQL {id} ({desc}) read or wrote rows in the CPU run only"),
            ),
        }
    }
    for (id, desc, read, written) in g.sqls.iter().skip(c.sqls.len()) {
        b.add(
            layer,
            &format!("SQL {id}"),
            None,
            "(none)",
            format!("{read} read, {written} written"),
            None,
            Verdict::Fail,
            format!("SQL {id} ({desc}) read or wrote rows in the GPU run only"),
        );
    }
    // per write command
    let m = match_writes(&c.writes, &g.writes);
    let mut matched = vec![false; g.writes.len()];
    for (i, w) in c.writes.iter().enumerate() {
        let Some(j) = m[i] else {
            b.add(
                layer,
                "write",
                Some(&w.name()),
                format!("{} rows", opt(w.rows)),
                "(none)",
                None,
                Verdict::Fail,
                format!(
                    "the CPU run wrote {} ({}); the GPU run did not",
                    w.name(),
                    w.target.command
                ),
            );
            continue;
        };
        matched[j] = true;
        let gw = &g.writes[j];
        let name = w.name();
        let rows_v = if w.rows == gw.rows {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        b.add(
            layer,
            "rows written to",
            Some(&name),
            opt(w.rows),
            opt(gw.rows),
            match (w.rows, gw.rows) {
                (Some(x), Some(y)) => pct(x as f64, y as f64),
                _ => None,
            },
            rows_v,
            if rows_v == Verdict::Pass {
                format!(
                    "GPU wrote {}; files {} / {}, bytes {} / {} (not gated)",
                    gw.name(),
                    opt(w.files),
                    opt(gw.files),
                    opt(w.bytes),
                    opt(gw.bytes)
                )
            } else {
                format!(
                    "{} rows written to {name} by the CPU run, {} to {} by the GPU run",
                    opt(w.rows),
                    opt(gw.rows),
                    gw.name()
                )
            },
        );
        let same_shape = w.target.format == gw.target.format
            && w.target.partition_columns == gw.target.partition_columns;
        let show = |t: &WriteTarget| {
            format!(
                "{} {}{}",
                t.format.as_deref().unwrap_or("?"),
                t.mode.as_deref().unwrap_or("?"),
                if t.partition_columns.is_empty() {
                    String::new()
                } else {
                    format!(" by {}", t.partition_columns.join(","))
                }
            )
        };
        let v = if !same_shape {
            Verdict::Fail
        } else if w.target.mode != gw.target.mode {
            Verdict::Warn
        } else {
            Verdict::Pass
        };
        b.add(
            layer,
            "write format, mode, partitions",
            Some(&name),
            show(&w.target),
            show(&gw.target),
            None,
            v,
            if v == Verdict::Pass {
                String::new()
            } else {
                format!(
                    "{name} written as {} by the CPU run, {} by the GPU run",
                    show(&w.target),
                    show(&gw.target)
                )
            },
        );
    }
    for (j, gw) in g.writes.iter().enumerate() {
        if !matched[j] {
            b.add(
                layer,
                "write",
                Some(&gw.name()),
                "(none)",
                format!("{} rows", opt(gw.rows)),
                None,
                Verdict::Fail,
                format!(
                    "the GPU run wrote {} ({}); the CPU run did not",
                    gw.name(),
                    gw.target.command
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(path: &str) -> Write {
        Write {
            sql_id: 0,
            target: WriteTarget {
                path: Some(path.into()),
                table: None,
                command: "InsertIntoHadoopFsRelationCommand".into(),
                format: None,
                mode: None,
                partition_columns: Vec::new(),
            },
            rows: None,
            files: None,
            bytes: None,
        }
    }

    #[test]
    fn writes_match_by_path_then_sandbox_suffix_then_order() {
        let cpu = [
            w("s3://prod/out/agg"),
            w("s3://prod/out/detail"),
            w("/tmp/x"),
        ];
        let gpu = [
            w("s3://art/runs/7/prod/out/detail"),
            w("/tmp/x"),
            w("s3://art/runs/7/prod/out/agg"),
        ];
        assert_eq!(match_writes(&cpu, &gpu), vec![Some(2), Some(0), Some(1)]);
        assert_eq!(match_writes(&cpu[..1], &[w("/other")]), vec![Some(0)]);
    }
}
