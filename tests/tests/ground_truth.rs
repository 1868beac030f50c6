//! Every log of `real-spark-4.3.0/` must reproduce Spark's own numbers (its live REST API,
//! recorded in the manifest) exactly: jobs, stage attempts and tasks by status, SQL executions,
//! and the 13 task-metric sums.

mod common;

use std::collections::HashMap;

#[test]
fn real_spark_logs_match_spark_ground_truth() {
    let (rows, inputs) = common::real_spark_logs();
    let ing = aether_ingest::ingest(&inputs, &Default::default());
    assert!(ing.source_errors.is_empty(), "{:?}", ing.source_errors);
    for l in &ing.logs {
        // only the in-progress log may have a problem (its last line may be cut off)
        if !l.source.ends_with(".inprogress") {
            assert!(l.ok(), "{}: {:?}", l.source, l.errors);
        }
    }
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();

    let by_app = |sql: &str| -> HashMap<String, Vec<String>> {
        common::rows(&ctx, sql)
            .into_iter()
            .map(|mut r| (r.remove(0), r))
            .collect()
    };
    let jobs = by_app(
        "SELECT app_id, count(*) FILTER (WHERE status<>'running'), count(*) FILTER (WHERE status='succeeded'), count(*) FILTER (WHERE status='failed'), count(*) FILTER (WHERE status='running') FROM jobs GROUP BY app_id",
    );
    let stages = by_app(
        "SELECT app_id, count(*) FILTER (WHERE status<>'pending'), count(*) FILTER (WHERE status='complete'), count(*) FILTER (WHERE status='failed'), count(*) FILTER (WHERE status='skipped'), count(*) FILTER (WHERE status='pending') FROM stages GROUP BY app_id",
    );
    let tasks = by_app(
        "SELECT app_id, count(*), count(*) FILTER (WHERE status='success'), count(*) FILTER (WHERE status='failed'), count(*) FILTER (WHERE status='killed'),
           sum(executor_run_time_ms), sum(executor_cpu_time_ns), sum(input_bytes_read), sum(input_records_read),
           sum(output_bytes_written), sum(output_records_written),
           sum(coalesce(shuffle_remote_bytes_read,0) + coalesce(shuffle_local_bytes_read,0)), sum(shuffle_records_read),
           sum(shuffle_bytes_written), sum(shuffle_records_written), sum(memory_bytes_spilled), sum(disk_bytes_spilled), sum(jvm_gc_time_ms)
         FROM tasks GROUP BY app_id",
    );
    let sqls = by_app(
        "SELECT app_id, count(*), count(*) FILTER (WHERE error IS NOT NULL) FROM sql_executions GROUP BY app_id",
    );

    let zero = || vec!["0".to_string(); 20];
    let mut mismatches = Vec::new();
    for r in &rows {
        let app = &r["app_id"];
        let j = jobs.get(app).cloned().unwrap_or_else(zero);
        let s = stages.get(app).cloned().unwrap_or_else(zero);
        let t = tasks.get(app).cloned().unwrap_or_else(zero);
        let q = sqls.get(app).cloned().unwrap_or_else(zero);
        // Spark's snapshot of the killed app was taken before its last job started (see the
        // generator's note): that job is still running in the log and its stage never ran.
        // Every other log has no running job and no pending stage.
        let (running, pending) = if r["file"].ends_with(".inprogress") {
            ("1", "1")
        } else {
            ("0", "0")
        };
        if j[3] != running || s[4] != pending {
            mismatches.push(format!(
                "{}: running jobs {} (want {running}), pending stages {} (want {pending})",
                r["file"], j[3], s[4]
            ));
        }
        let checks: Vec<(&str, &String)> = vec![
            ("gt_jobs", &j[0]),
            ("gt_jobs_succeeded", &j[1]),
            ("gt_jobs_failed", &j[2]),
            ("gt_stage_attempts", &s[0]),
            ("gt_stages_complete", &s[1]),
            ("gt_stages_failed", &s[2]),
            ("gt_stages_skipped", &s[3]),
            ("gt_tasks_total", &t[0]),
            ("gt_tasks_completed", &t[1]),
            ("gt_tasks_failed", &t[2]),
            ("gt_tasks_killed", &t[3]),
            ("gt_sum_executorRunTime", &t[4]),
            ("gt_sum_executorCpuTime", &t[5]),
            ("gt_sum_inputBytes", &t[6]),
            ("gt_sum_inputRecords", &t[7]),
            ("gt_sum_outputBytes", &t[8]),
            ("gt_sum_outputRecords", &t[9]),
            ("gt_sum_shuffleReadBytes", &t[10]),
            ("gt_sum_shuffleReadRecords", &t[11]),
            ("gt_sum_shuffleWriteBytes", &t[12]),
            ("gt_sum_shuffleWriteRecords", &t[13]),
            ("gt_sum_memoryBytesSpilled", &t[14]),
            ("gt_sum_diskBytesSpilled", &t[15]),
            ("gt_sum_jvmGcTime", &t[16]),
            ("gt_sql_executions", &q[0]),
            ("gt_sql_failed", &q[1]),
        ];
        for (col, got) in checks {
            let want = r[col].trim();
            let got = if got == "NULL" { "0" } else { got.as_str() };
            if want != got {
                mismatches.push(format!(
                    "{} ({}): {col} want {want} got {got}",
                    r["file"], r["app_name"]
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// The logs with Spark's REST answers on disk: (app name, app id, log path, ground-truth folder
/// of the app, whether its task totals are final): the 38 Spark 4.3 logs and the Spark 3.5
/// fixtures of `datasets/fixtures/spark-3.5/`.
fn logs_with_rest_answers() -> Vec<(String, String, String, std::path::PathBuf, bool)> {
    let (rows, inputs) = common::real_spark_logs();
    let gt = common::shared().join("datasets/real-spark-4.3.0-groundtruth");
    let mut out: Vec<_> = rows
        .iter()
        .zip(inputs)
        .map(|(r, path)| {
            // the killed app's snapshot was taken before its last job (see above), into the
            // folder `<app>_before_kill`
            let fin = !r["file"].ends_with(".inprogress");
            let dir = if fin {
                r["app_name"].clone()
            } else {
                format!("{}_before_kill", r["app_name"])
            };
            (
                r["app_name"].clone(),
                r["app_id"].clone(),
                path,
                gt.join(dir),
                fin,
            )
        })
        .collect();
    let f35 = common::repo().join("datasets/fixtures/spark-3.5");
    for line in std::fs::read_to_string(f35.join("apps.jsonl"))
        .unwrap()
        .lines()
    {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let (name, id) = (
            r["app_name"].as_str().unwrap(),
            r["app_id"].as_str().unwrap(),
        );
        let path = f35.join(format!("{id}.zstd")).display().to_string();
        out.push((
            name.into(),
            id.into(),
            path,
            f35.join("groundtruth").join(name),
            true,
        ));
    }
    out
}

/// One executor of Spark's answer: id, host, totalCores, maxMemory, and its task totals
/// (`totalTasks`, `totalDuration`, `totalGCTime`) where they are compared.
struct SparkExecutor {
    id: String,
    host: String,
    cores: i64,
    max_memory: i64,
    totals: Option<(i64, i64, i64)>,
}

/// Compares the executors table of `logs` with Spark's answers (app id -> executors): the same
/// ids per app, then every field. Task totals are Spark's: a `Resubmitted` task end (a finished
/// map task re-run after its executor was lost, with no TaskStart of its own) adds its duration
/// but is no extra task and no GC time. Returns the number of values compared.
fn compare_executors(logs: &[String], want: &HashMap<String, Vec<SparkExecutor>>) -> usize {
    let ing = aether_ingest::ingest(logs, &Default::default());
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    let ours: HashMap<(String, String), Vec<String>> = common::rows(
        &ctx,
        "SELECT e.app_id, e.executor_id, e.host, coalesce(e.cores, 0), e.max_memory_bytes,
                count(t.task_id) FILTER (WHERE t.end_reason IS DISTINCT FROM 'Resubmitted'),
                coalesce(sum(t.duration_ms), 0),
                coalesce(sum(t.jvm_gc_time_ms) FILTER (WHERE t.end_reason IS DISTINCT FROM 'Resubmitted'), 0)
         FROM executors e
         LEFT JOIN tasks t ON t.app_id = e.app_id AND t.executor_id = e.executor_id
         GROUP BY e.app_id, e.executor_id, e.host, e.cores, e.max_memory_bytes",
    )
    .into_iter()
    .map(|mut r| {
        let app = r.remove(0);
        let id = r.remove(0);
        ((app, id), r)
    })
    .collect();
    let (mut compared, mut mismatches) = (0, Vec::new());
    for (app, execs) in want {
        let mut want_ids: Vec<&str> = execs.iter().map(|e| e.id.as_str()).collect();
        let mut got_ids: Vec<&str> = ours
            .keys()
            .filter(|(a, _)| a == app)
            .map(|(_, id)| id.as_str())
            .collect();
        want_ids.sort();
        got_ids.sort();
        if want_ids != got_ids {
            mismatches.push(format!("{app}: executors {got_ids:?}, Spark {want_ids:?}"));
            continue;
        }
        for e in execs {
            let got = &ours[&(app.clone(), e.id.clone())];
            let mut checks = vec![
                ("host", got[0].clone(), e.host.clone()),
                ("totalCores", got[1].clone(), e.cores.to_string()),
                ("maxMemory", got[2].clone(), e.max_memory.to_string()),
            ];
            if let Some((tasks, duration, gc)) = e.totals {
                checks.push(("totalTasks", got[3].clone(), tasks.to_string()));
                checks.push(("totalDuration", got[4].clone(), duration.to_string()));
                checks.push(("totalGCTime", got[5].clone(), gc.to_string()));
            }
            for (what, got, want) in checks {
                compared += 1;
                if got != want {
                    mismatches.push(format!(
                        "{app} executor {}: {what} {got}, Spark {want}",
                        e.id
                    ));
                }
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    compared
}

/// The executor lists of the History Server's replays of Spark's own test logs (the answers its
/// HistoryServerSuite checks, `datasets/fixtures/history-server/executors.csv`): the driver is
/// listed whenever its block manager registered (with 0 cores outside local mode), with its
/// block manager's memory; task totals per executor, the local-mode driver's included.
#[test]
fn executors_match_history_server_replays() {
    let rows =
        common::csv_rows(&common::repo().join("datasets/fixtures/history-server/executors.csv"));
    let events = common::shared().join("datasets/spark-tests/core/src/test/resources/spark-events");
    let mut want: HashMap<String, Vec<SparkExecutor>> = HashMap::new();
    for r in &rows {
        let n = |k: &str| r[k].parse::<i64>().unwrap();
        let tasks = n("totalTasks");
        want.entry(r["app_id"].clone())
            .or_default()
            .push(SparkExecutor {
                id: r["id"].clone(),
                host: r["host"].clone(),
                cores: n("totalCores"),
                max_memory: n("maxMemory"),
                // an executor without tasks: one of these answers gives its driver a duration
                // (101795 ms) that no task of the log holds
                totals: (tasks > 0).then(|| (tasks, n("totalDuration"), n("totalGCTime"))),
            });
    }
    let logs: Vec<String> = want
        .keys()
        .map(|a| events.join(a).display().to_string())
        .collect();
    let drivers_without_cores = rows
        .iter()
        .filter(|r| r["id"] == "driver" && r["totalCores"] == "0")
        .count();
    assert_eq!((want.len(), drivers_without_cores), (4, 4));
    let compared = compare_executors(&logs, &want);
    assert_eq!(compared, 14 * 3 + 9 * 3, "values compared");
}

/// The executor lists of Spark's live REST answers (`executors.json` in each app's ground-truth
/// folder) for the 38 Spark 4.3 logs and the Spark 3.5 fixtures: the same ids, the driver
/// included also where no ExecutorAdded announces it (the `local-cluster` apps, 0 cores), hosts,
/// cores, block-manager memory; task totals for every executor but the driver. (A live store
/// writes an executor at most every `spark.ui.liveUpdate.period` while tasks end, so the busy
/// local-mode driver's live totals lag its log; the History Server's replays above, which are
/// made from the log, equal aether's for a local-mode driver.)
#[test]
fn executors_match_spark_live_rest() {
    let logs = logs_with_rest_answers();
    let mut want: HashMap<String, Vec<SparkExecutor>> = HashMap::new();
    for (_, app, _, gt_dir, tasks_final) in &logs {
        let gt: Vec<serde_json::Value> =
            serde_json::from_slice(&std::fs::read(gt_dir.join("executors.json")).unwrap()).unwrap();
        for e in gt {
            let id = e["id"].as_str().unwrap().to_string();
            let n = |k: &str| e[k].as_i64().unwrap();
            let totals = (*tasks_final && id != "driver")
                .then(|| (n("totalTasks"), n("totalDuration"), n("totalGCTime")));
            want.entry(app.clone()).or_default().push(SparkExecutor {
                host: e["hostPort"]
                    .as_str()
                    .unwrap()
                    .rsplit_once(':')
                    .unwrap()
                    .0
                    .to_string(),
                cores: n("totalCores"),
                max_memory: n("maxMemory"),
                totals,
                id,
            });
        }
    }
    let drivers_without_cores = want
        .values()
        .flatten()
        .filter(|e| e.id == "driver" && e.cores == 0)
        .count();
    // the three local-cluster apps (two on Spark 4.3, one on 3.5)
    assert_eq!(drivers_without_cores, 3);
    let inputs: Vec<String> = logs.iter().map(|l| l.2.clone()).collect();
    let compared = compare_executors(&inputs, &want);
    assert!(compared > 120, "only {compared} values compared");
}
