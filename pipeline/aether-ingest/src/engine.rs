//! What ran an app's SQL, told from its Spark properties: Spark itself, the RAPIDS Accelerator
//! (a GPU run), Databricks Photon, or Apache Gluten (with its native backend, Velox or
//! ClickHouse). Qualification judges CPU Spark plans: a log of another engine is named as such,
//! not scored as plain Spark.

/// The engine of an app's SQL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    Spark,
    /// The RAPIDS plugin on and enabled.
    Rapids,
    /// `spark.databricks.clusterUsageTags.runtimeEngine=PHOTON`.
    Photon,
    /// Gluten's plugin (`org.apache.gluten.GlutenPlugin`, or the older
    /// `io.glutenproject.GlutenPlugin`), with `spark.gluten.sql.columnar.backend.lib`.
    Gluten {
        backend: Option<String>,
    },
}

impl Engine {
    /// The engine of an app whose Spark properties `prop` reads (the last value of a key).
    pub fn of<'a>(prop: impl Fn(&str) -> Option<&'a str>) -> Engine {
        let plugins = prop("spark.plugins").unwrap_or_default();
        if plugins.contains("com.nvidia.spark.SQLPlugin")
            && !prop("spark.rapids.sql.enabled")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
        {
            return Engine::Rapids;
        }
        if prop("spark.databricks.clusterUsageTags.runtimeEngine")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("PHOTON"))
        {
            return Engine::Photon;
        }
        if plugins.contains("org.apache.gluten.GlutenPlugin")
            || plugins.contains("io.glutenproject.GlutenPlugin")
        {
            let backend = prop("spark.gluten.sql.columnar.backend.lib")
                .map(|b| b.trim().to_ascii_lowercase())
                .filter(|b| !b.is_empty());
            return Engine::Gluten { backend };
        }
        Engine::Spark
    }

    /// [`Engine::of`] a list of properties in file order (a later value of a key wins).
    pub fn of_list(props: &[(String, String)]) -> Engine {
        Engine::of(|k| {
            props
                .iter()
                .rev()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        })
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Engine::Spark => f.write_str("Spark"),
            Engine::Rapids => f.write_str("RAPIDS (GPU)"),
            Engine::Photon => f.write_str("Databricks Photon"),
            Engine::Gluten { backend: Some(b) } => {
                let b = match b.as_str() {
                    "velox" => "Velox",
                    "ch" | "clickhouse" => "ClickHouse",
                    other => other,
                };
                write!(f, "Gluten ({b})")
            }
            Engine::Gluten { backend: None } => f.write_str("Gluten"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(pairs: &[(&str, &str)]) -> Engine {
        let props: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Engine::of_list(&props)
    }

    #[test]
    fn engines_from_properties() {
        assert_eq!(of(&[("spark.master", "yarn")]), Engine::Spark);
        let rapids = ("spark.plugins", "com.nvidia.spark.SQLPlugin");
        assert_eq!(of(&[rapids]), Engine::Rapids);
        // the plugin loaded but its SQL off: a CPU run
        assert_eq!(
            of(&[rapids, ("spark.rapids.sql.enabled", "false")]),
            Engine::Spark
        );
        let photon = ("spark.databricks.clusterUsageTags.runtimeEngine", "PHOTON");
        assert_eq!(of(&[photon]), Engine::Photon);
        assert_eq!(
            of(&[(
                "spark.databricks.clusterUsageTags.runtimeEngine",
                "STANDARD"
            )]),
            Engine::Spark
        );
        let gluten = ("spark.plugins", "org.apache.gluten.GlutenPlugin");
        let velox = ("spark.gluten.sql.columnar.backend.lib", "velox");
        assert_eq!(of(&[gluten, velox]).to_string(), "Gluten (Velox)");
        assert_eq!(
            of(&[("spark.plugins", "io.glutenproject.GlutenPlugin")]).to_string(),
            "Gluten"
        );
        // a later value of a key wins
        assert_eq!(of(&[rapids, ("spark.plugins", "")]), Engine::Spark);
    }
}
