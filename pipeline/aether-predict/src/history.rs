//! Recording qualifications in the job history (`aether_core::History`).

use std::sync::Mutex;

use crate::error::{PredictError, Result};
use aether_core::History;

use crate::qualify::AppQualification;

/// What the history records of one qualified app (owned; see [`Entry::record`]).
struct Entry {
    run: aether_core::history::CpuRun,
    rec: aether_core::history::Qualification,
    log: String,
    properties: std::collections::BTreeMap<String, String>,
    definition: Option<serde_json::Value>,
}

impl Entry {
    fn of(q: &AppQualification, platform: crate::platform::ModelPlatform, model: &str) -> Entry {
        let run = aether_core::history::CpuRun {
            start_ms: q.start_ms,
            app_duration_ms: q.app_duration_ms,
            sql_stage_durations_sum_ms: q.sql_stage_durations_sum_ms,
            unsupported_stage_duration_ms: q.unsupported_stage_duration_ms,
            metrics: serde_json::json!({
                "sql_duration_ms": q.speedup.sql_duration_ms,
                "sqls_predicted": q.sqls.len(),
            }),
        };
        let rec = aether_core::history::Qualification {
            platform: platform.to_string(),
            model: model.to_string(),
            speedup: q.speedup.speedup,
            app_duration_pred_ms: q.speedup.app_duration_pred_ms,
            category: q.category.clone(),
            not_recommended_reason: q.not_recommended_reason.clone(),
            unsupported_pct: q.unsupported_stage_duration_pct,
            reasons: serde_json::json!(q.reasons),
            cpu_cluster: q
                .cluster
                .as_ref()
                .map(|c| serde_json::json!(c.source))
                .unwrap_or_default(),
            gpu_cluster: q
                .cluster
                .as_ref()
                .map(|c| {
                    serde_json::json!({"summary": c.summary, "shape": c.recommended,
                        "price_source": c.price_source})
                })
                .unwrap_or_default(),
            spark_conf: q.spark_conf.clone(),
            cpu_cost_usd: q.cluster.as_ref().and_then(|c| c.cpu_cost_usd),
            gpu_cost_usd: q.cluster.as_ref().and_then(|c| c.gpu_cost_usd),
            savings_usd: q.cluster.as_ref().and_then(|c| c.savings_usd),
            range: q
                .range
                .as_ref()
                .map(|r| {
                    serde_json::json!({
                        "qualx_speedup": q.qualx_speedup,
                        "low": r.low,
                        "high": r.high,
                        "coverage": r.coverage,
                        "source": r.source,
                    })
                })
                .unwrap_or_default(),
        };
        // a local log is known by its absolute path, however it was named on the command line
        let log = std::fs::canonicalize(&q.event_log)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| q.event_log.clone());
        let properties = q
            .tuning
            .iter()
            .map(|t| (t.key.clone(), t.value.clone()))
            .collect();
        let definition = q
            .java_command
            .as_deref()
            .and_then(|c| aether_platform::JobDefinition::parse(c).ok())
            .and_then(|d| serde_json::to_value(d).ok());
        Entry {
            run,
            rec,
            log,
            properties,
            definition,
        }
    }

    fn record<'a>(&'a self, q: &'a AppQualification) -> aether_core::history::Record<'a> {
        aether_core::history::Record {
            app: (
                &q.app_id,
                q.attempt_id.as_deref().unwrap_or(""),
                &self.log,
                &q.app_name,
            ),
            run: &self.run,
            qualification: &self.rec,
            properties: &self.properties,
            definition: self.definition.as_ref(),
        }
    }
}

fn locked(history: &Mutex<History>) -> Result<std::sync::MutexGuard<'_, History>> {
    history
        .lock()
        .map_err(|_| PredictError::Invalid("the history lock is poisoned".into()))
}

/// Record qualified apps, each with the AutoTuner's properties as a config and, when its log
/// holds its spark-submit command line, the job's definition, all in one transaction; each
/// app's ids are set on it (`job_id`, `shape_id`, `config_id`). When the transaction fails,
/// each app is recorded on its own, so that one bad app fails alone: the errors, by app.
pub fn record_all(
    history: &Mutex<History>,
    qs: &mut [&mut AppQualification],
    platform: crate::platform::ModelPlatform,
    model: &str,
) -> Vec<(usize, PredictError)> {
    let set = |q: &mut &mut AppQualification, r: aether_core::history::Recorded| {
        q.job_id = Some(r.job_id);
        q.shape_id = Some(r.qualification_id);
        q.config_id = Some(r.config_id);
    };
    let entries: Vec<Entry> = qs.iter().map(|q| Entry::of(q, platform, model)).collect();
    let all = {
        let records: Vec<_> = entries
            .iter()
            .zip(qs.iter())
            .map(|(e, q)| e.record(q))
            .collect();
        locked(history).and_then(|mut h| Ok(h.record_all(&records)?))
    };
    let mut errors = Vec::new();
    match all {
        Ok(done) => {
            for (q, r) in qs.iter_mut().zip(done) {
                set(q, r);
            }
        }
        Err(_) => {
            for (i, (q, e)) in qs.iter_mut().zip(&entries).enumerate() {
                let one = locked(history).and_then(|mut h| Ok(h.record_all(&[e.record(q)])?));
                match one {
                    Ok(mut r) => set(q, r.remove(0)),
                    Err(err) => errors.push((i, err)),
                }
            }
        }
    }
    errors
}
