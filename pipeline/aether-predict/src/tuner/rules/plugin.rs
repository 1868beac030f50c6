//! The RAPIDS Accelerator loaded (its SQL plugin appended to the run's plugins) and SQL on the
//! GPU turned on.

use super::{Rule, with_class};
use crate::tuner::{PLUGIN, Tuner};

pub(crate) struct Plugin;

impl Rule for Plugin {
    fn name(&self) -> &'static str {
        "plugin"
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        t.set("spark.rapids.sql.enabled", "true", "runs SQL on the GPU");
        if let Some(v) = with_class(t.get("spark.plugins").as_deref(), PLUGIN) {
            t.set(
                "spark.plugins",
                v,
                "loads the RAPIDS Accelerator (added to the run's plugins)",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    #[test]
    fn the_sql_plugin_is_added_to_the_runs_plugins() {
        let w = Worker::default();
        let a = apply(&Plugin, Mode::Qualification, &run_with(4, 1, &[]), &w);
        assert_eq!(a.value("spark.plugins"), Some(PLUGIN));
        assert_eq!(a.value("spark.rapids.sql.enabled"), Some("true"));
        let inp = run_with(4, 1, &[("spark.plugins", "com.example.Metrics")]);
        let a = apply(&Plugin, Mode::Profiling, &inp, &w);
        assert_eq!(
            a.value("spark.plugins"),
            Some("com.example.Metrics,com.nvidia.spark.SQLPlugin")
        );
    }
}
