//! Profile: what GPU runs tell — the profiling AutoTuner's recommended Spark properties (the
//! reference profiler's rules for EMR) per app, with its health and causes of slowness, stored
//! as a config of the job so that `submit --config_id` can run them.

use crate::error::{Context, Result};
use crate::props::config_properties;
use crate::workspace::Workspace;
use aether_core::History;
use aether_predict::profile::{Tuning, Worker};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One profiled app.
pub struct Profiled {
    pub app_id: String,
    pub attempt_id: String,
    pub app_name: String,
    pub event_log: String,
    pub tuning: Tuning,
    /// The stored config (GPU runs only).
    pub config_id: Option<i64>,
    /// The run's Spark properties.
    pub source: BTreeMap<String, String>,
    /// Tasks that failed on a GPU out-of-memory error.
    pub gpu_oom_tasks: i64,
    /// What the OOMs call for, over the recommendation (beyond the reference).
    pub remedies: BTreeMap<String, String>,
}

/// Rows of a view, keyed by app id.
pub type ByApp = BTreeMap<String, Vec<serde_json::Map<String, Value>>>;

/// What a profile found.
pub struct Profile {
    /// Every app read, GPU runs and others.
    pub apps: Vec<Profiled>,
    /// The causes of slowness of each GPU run, ranked.
    pub slowness: ByApp,
    /// A health line per GPU run.
    pub health: BTreeMap<String, String>,
    /// Inputs that could not be read at all (each told as an error).
    pub unreadable: usize,
    /// The worker the recommendations are sized for (`--target_cluster_info`, else g6.4xlarge).
    pub worker: Worker,
    ctx: aether_engine::SessionContext,
}

/// Profile the GPU runs of `logs` (and of the step `step` = (cluster, step id), when given):
/// each GPU run's recommendation is stored as a config of its job (`job`, else the job of the
/// recorded run with that event log, else a job of its own). Logs that cannot be read are told
/// and counted; the others go on. An error when no app could be profiled.
pub fn profile(
    ws: &Workspace,
    logs: &[String],
    step: Option<(&str, &str)>,
    job: Option<i64>,
    target: Option<&str>,
    select: &aether_ingest::Selection,
) -> Result<Profile> {
    // the target first: a bad one is told before any log is read
    let w = match target {
        Some(spec) => {
            let cat =
                aether_predict::cluster::Catalog::load(&aether_predict::prices::Terms::list())?;
            let w = aether_predict::target::resolve(spec, &cat)?;
            ws.note(&format!(
                "sized for {} ({} cores, {} GiB, {} x {}{})",
                if w.instance.is_empty() {
                    spec
                } else {
                    &w.instance
                },
                w.cores,
                w.memory_mib / 1024,
                w.gpus,
                w.gpu.name.to_uppercase(),
                if w.gpu.reference {
                    ""
                } else {
                    "; the reference profiler does not know this GPU"
                }
            ));
            w
        }
        None => Worker::default(),
    };
    let mut logs = logs.to_vec();
    if let Some((cluster, step)) = step {
        logs.push(crate::source::read_step(ws, cluster, step)?.event_log);
    }
    let opts = aether_ingest::IngestOptions {
        select: select.clone(),
        ..Default::default()
    };
    let ing = aether_ingest::ingest(&logs, &opts);
    // a log that cannot be read is told, naming it; the others go on
    for e in &ing.source_errors {
        ws.warn(&format!("{}: {}", e.path, e.error));
    }
    for s in &ing.not_selected {
        ws.note(&format!("SKIPPED: {}: {}", s.log, s.reason));
    }
    for l in ing.logs.iter().filter(|l| !l.ok()) {
        if let Some(e) = l.errors.first() {
            ws.warn(&format!(
                "{}: {} bad lines, e.g. {e:?}",
                l.source,
                l.errors.len()
            ));
        }
    }
    // one partition per plan: the views are computed side by side instead (each plan's own
    // parallelism costs more planning and repartitioning than it saves), and their rows come
    // out in the same order every run
    let ctx = aether_engine::session_with_partitions(1);
    aether_engine::register_ingested(&ctx, &ing)?;
    let rt = ws.runtime();
    rt.block_on(aether_predict::profile::prepare_tables(&ctx))?;
    let inputs = rt.block_on(aether_predict::tuner::inputs(
        &ctx,
        aether_predict::tuner::Mode::Profiling,
    ))?;
    let apps = rt.block_on(aether_engine::analyze::json_rows(
        &ctx,
        "SELECT app_id, COALESCE(attempt_id, '') AS attempt_id, app_name, event_log FROM applications ORDER BY app_id",
    ))?;
    // health and the causes of slowness of every app, each read once
    let by_app = |rows: Vec<serde_json::Map<String, Value>>| {
        let mut m: BTreeMap<String, Vec<serde_json::Map<String, Value>>> = BTreeMap::new();
        for mut r in rows {
            let id = r
                .remove("app_id")
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            m.entry(id).or_default().push(r);
        }
        m
    };
    let health_rows: BTreeMap<String, serde_json::Map<String, Value>> = by_app(rt.block_on(
        aether_engine::analyze::json_rows(
            &ctx,
            "SELECT *, format_bytes(memory_spilled_bytes) AS mem, format_bytes(disk_spilled_bytes) AS disk
             FROM profile_health",
        ),
    )?)
    .into_iter()
    .filter_map(|(k, mut v)| Some((k, v.pop()?)))
    .collect();
    let mut slowness = by_app(rt.block_on(aether_engine::analyze::json_rows(
        &ctx,
        "SELECT app_id, rank, cause, time_ms, task_time_pct, detail, remedy FROM profile_slowness
         ORDER BY app_id, rank",
    ))?);
    let mut history = ws.history()?;
    let mut out = Vec::new();
    for r in &apps {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let app_id = s("app_id");
        let Some(inp) = inputs.get(&app_id) else {
            continue;
        };
        // a run aether made: its config fills what its log lacks (a local or emulated run
        // leaves the GPU settings out), as the tune loop reads it
        let run_config = history
            .run_by_event_log(&s("event_log"))
            .ok()
            .flatten()
            .and_then(|(_, _, c)| c)
            .and_then(|c| history.config(c).ok().flatten());
        let mut inp = inp.clone();
        if let Some(c) = run_config {
            for (k, v) in c.properties {
                inp.props.entry(k).or_insert(v);
            }
        }
        let inp = &inp;
        let tuning = aether_predict::tuner::recommend(inp, &w);
        let gpu_oom_tasks = health_rows
            .get(&app_id)
            .and_then(|r| r.get("gpu_oom_tasks"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let mut p = Profiled {
            attempt_id: s("attempt_id"),
            app_name: s("app_name"),
            event_log: s("event_log"),
            app_id,
            tuning,
            config_id: None,
            source: inp.props.clone(),
            gpu_oom_tasks,
            remedies: BTreeMap::new(),
        };
        if p.tuning.recommended && gpu_oom_tasks > 0 {
            // the run's values with the recommendation over them, then the OOM remedies
            let now = config_properties(p.source.clone(), &p.tuning);
            p.remedies = crate::props::remedies(&now)
                .into_iter()
                .filter(|(k, v)| now.get(k) != Some(v))
                .collect();
        }
        if !p.tuning.recommended {
            ws.note(&format!(
                "{}: {} is not a GPU run (no com.nvidia.spark.SQLPlugin in spark.plugins, or \
                 spark.rapids.sql.enabled=false): nothing to recommend; `aether qualify --event_log` \
                 tells what a GPU run of it would gain",
                p.event_log, p.app_id
            ));
        } else {
            match record(&mut history, &p, job) {
                Ok(id) => p.config_id = Some(id),
                Err(e) => ws.warn(&format!("{}: not recorded: {e:#}", p.app_id)),
            }
        }
        out.push(p);
    }
    if out.is_empty() {
        crate::error::bail!("no application could be profiled");
    }
    // (only GPU runs are told their health and causes; the slowness view has only GPU runs)
    slowness.retain(|id, _| out.iter().any(|p| &p.app_id == id && p.tuning.recommended));
    let mut health: BTreeMap<String, String> = BTreeMap::new();
    for p in out.iter().filter(|p| p.tuning.recommended) {
        if let Some(r) = health_rows.get(&p.app_id) {
            let g = |k: &str| {
                r.get(k)
                    .map(|v| v.as_str().map(String::from).unwrap_or(v.to_string()))
                    .unwrap_or_default()
            };
            let removed = g("removed_reasons");
            health.insert(
                p.app_id.clone(),
                format!(
                    "health: {} failed tasks ({} on GPU out-of-memory, {} container OOM), {} failed stages, {} failed jobs, {} executors removed{}, {} skewed shuffle stages, spilled {} from memory and {} to disk",
                    g("failed_tasks"),
                    g("gpu_oom_tasks"),
                    g("container_oom_tasks"),
                    g("failed_stages"),
                    g("failed_jobs"),
                    g("removed_executors"),
                    if removed.is_empty() { String::new() } else { format!(" ({removed})") },
                    g("skewed_stages"),
                    g("mem"),
                    g("disk")
                ),
            );
        }
    }
    Ok(Profile {
        apps: out,
        slowness,
        health,
        unreadable: ing.source_errors.len(),
        worker: w,
        ctx,
    })
}

/// Store the recommendation as a config (source `profile`) of the job the run belongs to.
fn record(h: &mut History, p: &Profiled, job: Option<i64>) -> Result<i64> {
    let run = h.run_by_event_log(&p.event_log)?;
    let job_id = match (job, run) {
        (Some(j), _) => j,
        (None, Some((_, j, _))) => j,
        (None, None) => h.job_id(&p.app_id, &p.attempt_id, &p.event_log, &p.app_name)?,
    };
    let base = match run.and_then(|(_, _, c)| c) {
        Some(c) => h.config(c)?.map(|c| c.properties).unwrap_or_default(),
        None => BTreeMap::new(),
    };
    let mut props = config_properties(base, &p.tuning);
    props.extend(p.remedies.clone());
    Ok(h.add_config(job_id, "profile", &props)?)
}

/// Write per app `<app>/recommended.conf`, `<app>/profile.log` and the reference's tables as
/// CSV, plus `profile.json` and `tuning_summary.log`, into `dir`.
pub fn write_outputs(ws: &Workspace, dir: &std::path::Path, p: &Profile) -> Result<()> {
    let (out, rt, ctx) = (&p.apps, ws.runtime(), &p.ctx);
    write_reports(dir, out, &p.worker)?;
    let tables = aether_predict::profile::REFERENCE_TABLES
        .iter()
        .chain(aether_predict::profile::BEYOND_TABLES);
    // each view read once (it is computed already), then cut into its apps' rows
    for (file, view) in tables {
        let (schema, batches) =
            rt.block_on(aether_engine::query(ctx, &format!("SELECT * FROM {view}")))?;
        let exclude: &[&str] = if *view == "profile_cpu_fallbacks" {
            &["app_id", "stage_ids"]
        } else {
            &["app_id"]
        };
        let keep: Vec<usize> = (0..schema.fields().len())
            .filter(|&i| !exclude.contains(&schema.field(i).name().as_str()))
            .collect();
        let shown = std::sync::Arc::new(schema.project(&keep).context(*view)?);
        for p in out {
            let rows = batches
                .iter()
                .map(|b| {
                    aether_engine::rows_where(b, "app_id", &p.app_id)?
                        .project(&keep)
                        .context(*view)
                })
                .collect::<Result<Vec<_>>>()?;
            let text = aether_engine::render(&shown, &rows, aether_engine::OutputFormat::Csv)?;
            let d = dir.join(p.app_id.replace(['/', '\\'], "_"));
            std::fs::write(d.join(format!("{file}.csv")), text)?;
        }
    }
    Ok(())
}

/// The recommendations as CSV (`--format csv`): app_id,config_id,key,value,change,source.
pub fn csv(out: &[Profiled]) -> Result<String> {
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut text = String::from("app_id,config_id,key,value,change,source\n");
    for p in out {
        for r in &p.tuning.properties {
            text.push_str(&format!(
                "{},{},{},{},{},{}\n",
                q(&p.app_id),
                p.config_id.map(|c| c.to_string()).unwrap_or_default(),
                q(&r.key),
                q(&r.value),
                serde_json::to_value(r.change)?.as_str().unwrap_or(""),
                q(r.source.as_deref().unwrap_or(""))
            ));
        }
    }
    Ok(text)
}

/// The apps as JSON (`profile.json`, `--format json`).
pub fn json_of(out: &[Profiled]) -> Value {
    Value::Array(
        out.iter()
            .map(|p| {
                json!({
                    "app_id": p.app_id,
                    "attempt_id": p.attempt_id,
                    "app_name": p.app_name,
                    "event_log": p.event_log,
                    "gpu_run": p.tuning.recommended,
                    "config_id": p.config_id,
                    "properties": p.tuning.properties,
                    "comments": p.tuning.comments,
                    "gpu_oom_tasks": p.gpu_oom_tasks,
                    "remedies": p.remedies,
                })
            })
            .collect(),
    )
}

/// What a terminal shows of a profile, per app: its health, why it was slow (each cause with
/// its remedy), the reference's section D (the recommended properties and the comments) and
/// the GPU OOM remedies. Fitted to `width` columns (prose wrapped; `--conf` lines, to be
/// copied, kept whole), or as the lines come with `None`.
pub fn text(p: &Profile, width: Option<usize>) -> String {
    use aether_core::table::{ellipsize_middle, wrap};
    use std::fmt::Write as _;
    let mut s = String::new();
    for a in &p.apps {
        if let Some(line) = p.health.get(&a.app_id) {
            let _ = writeln!(s, "App ID: {}: {line}", a.app_id);
        }
        if let Some(rows) = p.slowness.get(&a.app_id).filter(|r| !r.is_empty()) {
            let _ = writeln!(
                s,
                "App ID: {}: why it was slow (task time each cause touched)",
                a.app_id
            );
            for r in rows {
                let g = |k: &str| {
                    r.get(k)
                        .map(|v| v.as_str().map(String::from).unwrap_or(v.to_string()))
                        .unwrap_or_default()
                };
                let _ = writeln!(
                    s,
                    "  {}. {} {} ms ({}% of task time): {}\n     -> {}",
                    g("rank"),
                    g("cause"),
                    g("time_ms"),
                    g("task_time_pct"),
                    g("detail"),
                    g("remedy")
                );
            }
            s.push('\n');
        }
        let config = a.config_id.map(|c| format!("  Aether Config ID: {c}"));
        let config = config.unwrap_or_default();
        // narrow: the log's path cut in its middle (its file name stays), on a line of its
        // own when the line leaves it less than 24 characters
        let room = |w: usize| w.saturating_sub(11 + a.app_id.chars().count() + config.len());
        let _ = match width.map(|w| (w, room(w))) {
            None => writeln!(s, "App ID: {} ({}){config}", a.app_id, a.event_log),
            Some((_, room)) if room >= 24 => {
                let log = ellipsize_middle(&a.event_log, room);
                writeln!(s, "App ID: {} ({log}){config}", a.app_id)
            }
            Some((w, _)) => {
                let log = ellipsize_middle(&a.event_log, w.saturating_sub(4).max(24));
                writeln!(s, "App ID: {}{config}\n  ({log})", a.app_id)
            }
        };
        let _ = writeln!(
            s,
            "{}",
            aether_predict::profile::render_section_d(&a.tuning).trim_end()
        );
        if !a.remedies.is_empty() {
            let _ = writeln!(
                s,
                "\nGPU OOM remedies ({} tasks failed on GPU out-of-memory; beyond the reference, in the config):",
                a.gpu_oom_tasks
            );
            for (k, v) in &a.remedies {
                let _ = writeln!(s, "--conf {k}={v}");
            }
        }
        s.push('\n');
    }
    let Some(w) = width else { return s };
    let mut fitted = String::new();
    for l in s.lines() {
        if l.starts_with("--conf ") {
            fitted.push_str(l);
        } else {
            fitted.push_str(&wrap(l, w));
        }
        fitted.push('\n');
    }
    fitted
}

fn write_reports(dir: &std::path::Path, out: &[Profiled], w: &Worker) -> Result<()> {
    use crate::error::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    let mut summary = String::from("### Recommended configurations ###\n");
    for p in out {
        let d = dir.join(p.app_id.replace(['/', '\\'], "_"));
        std::fs::create_dir_all(&d).with_context(|| format!("{}", d.display()))?;
        std::fs::write(
            d.join("recommended.conf"),
            aether_predict::profile::render_conf(&p.app_id, w, &p.tuning),
        )?;
        std::fs::write(
            d.join("profile.log"),
            aether_predict::profile::render_section_d(&p.tuning),
        )?;
        summary.push_str(&aether_predict::profile::render_summary(
            &p.app_id, &p.tuning,
        ));
    }
    std::fs::write(dir.join("tuning_summary.log"), summary.trim_end())?;
    std::fs::write(
        dir.join("profile.json"),
        serde_json::to_string_pretty(&json_of(out))?,
    )?;
    Ok(())
}
