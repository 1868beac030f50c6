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

/// One executor of Spark's answer: id, host, totalCores, maxMemory, and its task totals where
/// they are compared: `totalTasks`, then `totalDuration` and `totalGCTime`.
struct SparkExecutor {
    id: String,
    host: String,
    cores: i64,
    max_memory: i64,
    tasks: Option<i64>,
    times: Option<(i64, i64)>,
}

/// Compares the executors table of `logs` with Spark's answers (app id -> executors): the same
/// ids per app, then every field. Returns the number of values compared.
fn compare_executors(logs: &[String], want: &HashMap<String, Vec<SparkExecutor>>) -> usize {
    let ing = aether_ingest::ingest(logs, &Default::default());
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    let ours: HashMap<(String, String), Vec<String>> = common::rows(
        &ctx,
        "SELECT app_id, executor_id, host, coalesce(cores, 0), max_memory_bytes, total_tasks,
                total_duration_ms, total_gc_time_ms
         FROM executors",
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
            if let Some(tasks) = e.tasks {
                checks.push(("totalTasks", got[3].clone(), tasks.to_string()));
            }
            if let Some((duration, gc)) = e.times {
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
/// block manager's memory; task totals per executor, the local-mode driver's included. These
/// answers were recorded by several Spark versions: for the driver's `totalDuration` and
/// `totalGCTime` one is Spark 3.3+'s (SPARK-37493: the application's duration, 101795 ms, and
/// its JVM's GC time peak), three are older (its tasks' sums: 8820 ms, or 0 without tasks), so
/// those two are checked against pyspark 3.5.9's own replays instead (below).
#[test]
fn executors_match_history_server_replays() {
    let rows =
        common::csv_rows(&common::repo().join("datasets/fixtures/history-server/executors.csv"));
    let events = common::shared().join("datasets/spark-tests/core/src/test/resources/spark-events");
    let mut want: HashMap<String, Vec<SparkExecutor>> = HashMap::new();
    for r in &rows {
        let n = |k: &str| r[k].parse::<i64>().unwrap();
        want.entry(r["app_id"].clone())
            .or_default()
            .push(SparkExecutor {
                id: r["id"].clone(),
                host: r["host"].clone(),
                cores: n("totalCores"),
                max_memory: n("maxMemory"),
                tasks: Some(n("totalTasks")),
                times: (r["id"] != "driver").then(|| (n("totalDuration"), n("totalGCTime"))),
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
    assert_eq!(compared, 14 * 4 + 10 * 2, "values compared");
}

/// The executor lists of Spark's live REST answers (`executors.json` in each app's ground-truth
/// folder) for the 38 Spark 4.3 logs and the Spark 3.5 fixtures: the same ids, the driver
/// included also where no ExecutorAdded announces it (the `local-cluster` apps, 0 cores), hosts,
/// cores, block-manager memory; task totals. A live application's driver has for
/// `totalDuration` the time since the application started, when asked, and for `totalGCTime`
/// its JVM's GC time from heartbeats, which no log records: those two are compared for every
/// executor but the driver (the History Server's replays above check the driver's).
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
            let tasks = tasks_final.then(|| n("totalTasks"));
            let times =
                (*tasks_final && id != "driver").then(|| (n("totalDuration"), n("totalGCTime")));
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
                tasks,
                times,
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

/// Milliseconds since the epoch of a date as Spark's REST API writes it
/// (`2015-02-03T16:42:59.720GMT`).
fn spark_date_ms(s: &str) -> Option<i64> {
    let s = s.strip_suffix("GMT")?;
    let (date, time) = s.split_once('T')?;
    let d: Vec<i64> = date
        .split('-')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let (hms, ms) = time.split_once('.')?;
    let t: Vec<i64> = hms
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let (&[y, m, day], &[h, min, sec]) = (d.as_slice(), t.as_slice()) else {
        return None;
    };
    // days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil)
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + min) * 60_000 + sec * 1000 + ms.parse::<i64>().ok()?)
}

#[test]
fn spark_dates_read() {
    assert_eq!(
        spark_date_ms("2015-02-03T16:42:59.720GMT"),
        Some(1_422_981_779_720)
    );
    assert_eq!(
        spark_date_ms("2026-11-30T04:00:40.704GMT"),
        Some(1_796_011_240_704)
    );
    assert_eq!(spark_date_ms("2015-02-03 16:42:59"), None);
}

/// The History Server's executor summaries (`/allexecutors`) from pyspark 3.5.9's own replays
/// of the 38 Spark 4.3 logs and of Spark's test logs (`datasets/fixtures/history-server/
/// replayed/`, made by `scripts/history-server-expectations`): every executor of every attempt,
/// the driver included, and every field of a summary that the executors table has. The
/// driver's `totalDuration` is the application's duration and its `totalGCTime` its JVM's GC
/// time peak when the log has its executor metrics (SPARK-37493); while an application runs,
/// the History Server answers the time since it started, when asked (which the expectations
/// record), where aether has NULL.
#[test]
fn executors_match_history_server_replays_of_every_log() {
    let dir = common::repo().join("datasets/fixtures/history-server/replayed");
    let want: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("executors.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let unlisted = std::fs::read_to_string(dir.join("unlisted.jsonl")).unwrap();
    assert_eq!(
        unlisted.trim(),
        "",
        "logs the History Server could not read"
    );
    // the logs, where the expectations say (`../shared/` is the shared datasets)
    let mut logs: Vec<String> = want
        .iter()
        .map(|r| {
            let d = r["log_dir"].as_str().unwrap();
            let d = match d.strip_prefix("../shared/") {
                Some(rest) => common::shared().join(rest),
                None => common::repo().join(d),
            };
            d.join(r["log"].as_str().unwrap()).display().to_string()
        })
        .collect();
    logs.sort();
    logs.dedup();
    let ing = aether_ingest::ingest(&logs, &Default::default());
    assert!(ing.source_errors.is_empty(), "{:?}", ing.source_errors);
    let ctx = aether_engine::session();
    aether_engine::register_ingested(&ctx, &ing).unwrap();
    let key =
        |app: &str, attempt: &str, id: &str| (app.to_string(), attempt.to_string(), id.to_string());
    // a resource profile or GPUs that the log does not name (NULL) are Spark's defaults: the
    // default profile 0, no GPU
    let mut ours: HashMap<(String, String, String), Vec<String>> = common::rows(
        &ctx,
        "SELECT app_id, coalesce(app_attempt_id, ''), executor_id,
                host, is_active, coalesce(cores, 0), max_memory_bytes, max_onheap_memory_bytes,
                max_offheap_memory_bytes, added_ms, removed_ms, removed_reason,
                coalesce(resource_profile_id, 0), coalesce(gpus, 0), total_tasks, active_tasks,
                completed_tasks, failed_tasks, total_duration_ms, total_gc_time_ms,
                total_input_bytes, total_shuffle_read_bytes, total_shuffle_write_bytes
         FROM executors",
    )
    .into_iter()
    .map(|mut r| {
        let rest = r.split_off(3);
        (key(&r[0], &r[1], &r[2]), rest)
    })
    .collect();
    let starts: HashMap<(String, String), i64> = common::rows(
        &ctx,
        "SELECT app_id, coalesce(attempt_id, ''), start_ms FROM applications",
    )
    .into_iter()
    .map(|r| ((r[0].clone(), r[1].clone()), r[2].parse().unwrap()))
    .collect();

    let text = |v: &serde_json::Value| match v {
        serde_json::Value::Null => "NULL".to_string(),
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let date = |v: &serde_json::Value| match v.as_str() {
        Some(s) => spark_date_ms(s)
            .unwrap_or_else(|| panic!("not a Spark date: {s}"))
            .to_string(),
        None => "NULL".to_string(),
    };
    let (mut compared, mut mismatches, mut apps) =
        (0, Vec::new(), std::collections::HashSet::new());
    for r in &want {
        let (app, attempt) = (
            r["app_id"].as_str().unwrap(),
            r["attempt_id"].as_str().unwrap_or(""),
        );
        let e = &r["executor"];
        let id = e["id"].as_str().unwrap();
        apps.insert((app, attempt));
        let Some(got) = ours.remove(&key(app, attempt, id)) else {
            mismatches.push(format!("{app}/{attempt}: no executor {id} in aether"));
            continue;
        };
        let host = e["hostPort"].as_str().map_or("NULL".to_string(), |hp| {
            hp.rsplit_once(':').unwrap().0.to_string()
        });
        let gpus = e["resources"]["gpu"]["addresses"]
            .as_array()
            .map_or(0, |a| a.len());
        let fields: [(&str, String); 20] = [
            ("host", host),
            ("isActive", text(&e["isActive"])),
            ("totalCores", text(&e["totalCores"])),
            ("maxMemory", text(&e["maxMemory"])),
            (
                "totalOnHeapStorageMemory",
                text(&e["memoryMetrics"]["totalOnHeapStorageMemory"]),
            ),
            (
                "totalOffHeapStorageMemory",
                text(&e["memoryMetrics"]["totalOffHeapStorageMemory"]),
            ),
            ("addTime", date(&e["addTime"])),
            ("removeTime", date(&e["removeTime"])),
            ("removeReason", text(&e["removeReason"])),
            ("resourceProfileId", text(&e["resourceProfileId"])),
            ("gpus", gpus.to_string()),
            ("totalTasks", text(&e["totalTasks"])),
            ("activeTasks", text(&e["activeTasks"])),
            ("completedTasks", text(&e["completedTasks"])),
            ("failedTasks", text(&e["failedTasks"])),
            ("totalDuration", text(&e["totalDuration"])),
            ("totalGCTime", text(&e["totalGCTime"])),
            ("totalInputBytes", text(&e["totalInputBytes"])),
            ("totalShuffleRead", text(&e["totalShuffleRead"])),
            ("totalShuffleWrite", text(&e["totalShuffleWrite"])),
        ];
        for ((what, want), got) in fields.into_iter().zip(&got) {
            compared += 1;
            let ok = if what == "totalDuration" && id == "driver" && r["completed"] == false {
                // the time since the start when the History Server was asked
                let start = starts[&(app.to_string(), attempt.to_string())];
                let asked: Vec<i64> = r["asked_ms"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_i64().unwrap())
                    .collect();
                let v: i64 = want.parse().unwrap();
                got == "NULL" && asked[0] - start <= v && v <= asked[1] - start
            } else {
                *got == want
            };
            if !ok {
                mismatches.push(format!(
                    "{app}/{attempt} executor {id}: {what} {got}, Spark {want}"
                ));
            }
        }
    }
    for (app, attempt, id) in ours.keys() {
        if apps.contains(&(app.as_str(), attempt.as_str())) {
            mismatches.push(format!("{app}/{attempt}: executor {id} only in aether"));
        }
    }
    mismatches.sort();
    assert!(
        mismatches.is_empty(),
        "{} mismatches of {compared} values:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    // 56 attempts (38 Spark 4.3 logs, 18 of Spark's tests), 91 executors, 20 fields each
    assert_eq!((apps.len(), want.len(), compared), (56, 91, 91 * 20));
}
