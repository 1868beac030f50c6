//! `aether profile`: what GPU runs tell — the profiling AutoTuner's recommended Spark properties
//! (the reference profiler's rules for EMR), stored as a config of the job so that
//! `submit --config_id` can run them.

use aether_core::{ConfigFile, History};
use aether_predict::profile::{Change, Tuning, Worker};
use anyhow::{Result, anyhow};
use clap::Args;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::ExitCode;

#[derive(Args)]
pub struct ProfileArgs {
    /// GPU event logs: files, directories, globs, .txt lists of paths, s3:// URLs.
    #[arg(long = "event_log", alias = "event-log", num_args = 1.., required_unless_present = "platform_job_id", action = clap::ArgAction::Append)]
    event_log: Vec<String>,
    /// A GPU run on EMR: the step (s-…) whose event log to profile (or an EMR on EKS job run,
    /// with --cluster_id its virtual cluster).
    #[arg(
        long = "platform_job_id",
        alias = "platform-job-id",
        requires = "cluster_id"
    )]
    platform_job_id: Option<String>,
    /// The EMR cluster (j-…) of --platform_job_id, or the EMR on EKS virtual cluster of its job run.
    #[arg(
        long = "cluster_id",
        alias = "cluster-id",
        requires = "platform_job_id"
    )]
    cluster_id: Option<String>,
    /// The job the runs belong to (default: the job of the recorded run with that event log,
    /// else a job of its own).
    #[arg(long = "aether_job_id", alias = "aether-job-id")]
    aether_job_id: Option<i64>,
    /// Write per app `<app>/recommended.conf` and `<app>/profile.log`, plus `profile.json` and
    /// `tuning_summary.log`, here.
    #[arg(long)]
    output: Option<std::path::PathBuf>,
    /// How to print the recommendations.
    #[arg(long, value_enum, default_value_t = OutFormat::Table)]
    format: OutFormat,
    /// The settings file (default: $AETHER_HOME/config.toml, else ~/.aether/config.toml).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum OutFormat {
    /// Section D of the reference's profile.log, per app.
    Table,
    /// app_id,key,value,change,source
    Csv,
    Json,
}

/// One profiled app.
struct Profiled {
    app_id: String,
    attempt_id: String,
    app_name: String,
    event_log: String,
    tuning: Tuning,
    config_id: Option<i64>,
    /// The run's Spark properties.
    source: BTreeMap<String, String>,
    /// Tasks that failed on a GPU out-of-memory error.
    gpu_oom_tasks: i64,
    /// What the OOMs call for, over the recommendation (beyond the reference).
    remedies: BTreeMap<String, String>,
}

/// The properties a profile config runs with: the profiled run's own config (when aether ran
/// it) with the recommendations over it; removed properties are dropped, unresolved ones
/// (`[FILL_IN_VALUE]`) kept for the user to fill in (runs never pass them to Spark).
pub(crate) fn config_properties(
    base: BTreeMap<String, String>,
    t: &Tuning,
) -> BTreeMap<String, String> {
    let mut props = base;
    for p in &t.properties {
        match p.change {
            Change::Removed => {
                props.remove(&p.key);
            }
            _ => {
                props.insert(p.key.clone(), p.value.clone());
            }
        }
    }
    props
}

pub fn cmd_profile(a: ProfileArgs) -> Result<ExitCode> {
    let cfg = ConfigFile::load(&ConfigFile::default_path(a.config.as_deref()))
        .map_err(|e| anyhow!("{e}"))?;
    let mut logs = a.event_log.clone();
    if let (Some(step), Some(cluster)) = (&a.platform_job_id, &a.cluster_id) {
        let s = crate::optimize::step_source(&cfg, cluster, step)
            .map_err(|e| anyhow!("--platform_job_id {step} --cluster_id {cluster}: {e:#}"))?;
        eprintln!(
            "step {step} on {cluster}: {} event log {}",
            s.step.state.as_str(),
            s.event_log
        );
        logs.push(s.event_log);
    }
    let ing = aether_ingest::ingest(&logs, &Default::default());
    // a log that cannot be read is told, naming it; the others go on
    for e in &ing.source_errors {
        eprintln!("error: {}: {}", e.path, e.error);
    }
    for l in ing.logs.iter().filter(|l| !l.ok()) {
        if let Some(e) = l.errors.first() {
            eprintln!(
                "warning: {}: {} bad lines, e.g. {e:?}",
                l.source,
                l.errors.len()
            );
        }
    }
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(aether_predict::profile::prepare_tables(&ctx))?;
    let inputs = rt.block_on(aether_predict::profile::inputs(&ctx))?;
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
    let w = Worker::default();
    let mut history = History::open(&cfg.history_db())?;
    let mut out = Vec::new();
    for r in &apps {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let app_id = s("app_id");
        let Some(inp) = inputs.get(&app_id) else {
            continue;
        };
        let tuning = aether_predict::profile::recommend(inp, &w);
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
            p.remedies = crate::tune::remedies(&now)
                .into_iter()
                .filter(|(k, v)| now.get(k) != Some(v))
                .collect();
        }
        if !p.tuning.recommended {
            eprintln!(
                "{}: {} is not a GPU run (no com.nvidia.spark.SQLPlugin in spark.plugins, or \
                 spark.rapids.sql.enabled=false): nothing to recommend; `aether qualify --event_log` \
                 tells what a GPU run of it would gain",
                p.event_log, p.app_id
            );
        } else {
            match record(&mut history, &p, a.aether_job_id) {
                Ok(id) => p.config_id = Some(id),
                Err(e) => eprintln!("warning: {}: not recorded: {e:#}", p.app_id),
            }
        }
        out.push(p);
    }
    if out.is_empty() {
        eprintln!("error: no application could be profiled");
        return Ok(ExitCode::from(2));
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
    print(&out, &slowness, &health, a.format)?;
    if let Some(dir) = &a.output {
        write_outputs(dir, &out, &w)?;
        for p in &out {
            let d = dir.join(p.app_id.replace(['/', '\\'], "_"));
            let tables = aether_predict::profile::REFERENCE_TABLES
                .iter()
                .chain(aether_predict::profile::BEYOND_TABLES);
            for (file, view) in tables {
                let exclude = if *view == "profile_cpu_fallbacks" {
                    "app_id, stage_ids"
                } else {
                    "app_id"
                };
                let sql = format!(
                    "SELECT * EXCLUDE ({exclude}) FROM {view} WHERE app_id = '{}'",
                    p.app_id.replace('\'', "''")
                );
                let df = rt.block_on(ctx.sql(&sql))?;
                let schema = std::sync::Arc::new(df.schema().as_arrow().clone());
                let batches = rt.block_on(df.collect())?;
                let text =
                    aether_engine::render(&schema, &batches, aether_engine::OutputFormat::Csv)?;
                std::fs::write(d.join(format!("{file}.csv")), text)?;
            }
        }
    }
    let any_gpu = out.iter().any(|p| p.tuning.recommended);
    Ok(if any_gpu && ing.source_errors.is_empty() {
        ExitCode::SUCCESS
    } else if any_gpu {
        ExitCode::from(1)
    } else {
        ExitCode::from(2)
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

fn print(
    out: &[Profiled],
    slowness: &BTreeMap<String, Vec<serde_json::Map<String, Value>>>,
    health: &BTreeMap<String, String>,
    f: OutFormat,
) -> Result<()> {
    match f {
        OutFormat::Table => {
            for p in out {
                if let Some(line) = health.get(&p.app_id) {
                    println!("App ID: {}: {line}", p.app_id);
                }
                if let Some(rows) = slowness.get(&p.app_id).filter(|r| !r.is_empty()) {
                    println!(
                        "App ID: {}: why it was slow (task time each cause touched)",
                        p.app_id
                    );
                    for r in rows {
                        let g = |k: &str| {
                            r.get(k)
                                .map(|v| v.as_str().map(String::from).unwrap_or(v.to_string()))
                                .unwrap_or_default()
                        };
                        println!(
                            "  {}. {} {} ms ({}% of task time): {}\n     -> {}",
                            g("rank"),
                            g("cause"),
                            g("time_ms"),
                            g("task_time_pct"),
                            g("detail"),
                            g("remedy")
                        );
                    }
                    println!();
                }
                println!(
                    "App ID: {} ({}){}",
                    p.app_id,
                    p.event_log,
                    p.config_id
                        .map(|c| format!("  Aether Config ID: {c}"))
                        .unwrap_or_default()
                );
                println!(
                    "{}",
                    aether_predict::profile::render_section_d(&p.tuning).trim_end()
                );
                if !p.remedies.is_empty() {
                    println!(
                        "\nGPU OOM remedies ({} tasks failed on GPU out-of-memory; beyond the reference, in the config):",
                        p.gpu_oom_tasks
                    );
                    for (k, v) in &p.remedies {
                        println!("--conf {k}={v}");
                    }
                }
                println!();
            }
        }
        OutFormat::Csv => {
            println!("app_id,config_id,key,value,change,source");
            let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
            for p in out {
                for r in &p.tuning.properties {
                    println!(
                        "{},{},{},{},{},{}",
                        q(&p.app_id),
                        p.config_id.map(|c| c.to_string()).unwrap_or_default(),
                        q(&r.key),
                        q(&r.value),
                        serde_json::to_value(r.change)?.as_str().unwrap_or(""),
                        q(r.source.as_deref().unwrap_or(""))
                    );
                }
            }
        }
        OutFormat::Json => {
            let mut v = json_of(out);
            for a in v.as_array_mut().into_iter().flatten() {
                let id = a["app_id"].as_str().unwrap_or("").to_string();
                a["slowness"] =
                    serde_json::to_value(slowness.get(&id).cloned().unwrap_or_default())?;
            }
            println!("{}", serde_json::to_string_pretty(&v)?)
        }
    }
    Ok(())
}

fn json_of(out: &[Profiled]) -> Value {
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

fn write_outputs(dir: &std::path::Path, out: &[Profiled], w: &Worker) -> Result<()> {
    use anyhow::Context;
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
