//! The platform a prediction is for: QualX's `platform_<name>` one-hot feature, the built-in
//! model, whether the platform has Databricks Photon, whether EMR's prices apply. (Where runs
//! go is another concept: `aether_core::RunOn`.)

use std::fmt;
use std::str::FromStr;

/// A platform QualX knows (`--platform` of qualify, `model train`, `model evaluate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelPlatform {
    Emr,
    Onprem,
    Dataproc,
    DatabricksAws,
    DatabricksAzure,
}

impl ModelPlatform {
    /// Every platform QualX has a one-hot feature for, in the feature order.
    pub const ALL: [ModelPlatform; 5] = [
        ModelPlatform::Emr,
        ModelPlatform::Onprem,
        ModelPlatform::Dataproc,
        ModelPlatform::DatabricksAws,
        ModelPlatform::DatabricksAzure,
    ];

    /// The name QualX, flags and the history use (`databricks-aws`).
    pub fn as_str(self) -> &'static str {
        match self {
            ModelPlatform::Emr => "emr",
            ModelPlatform::Onprem => "onprem",
            ModelPlatform::Dataproc => "dataproc",
            ModelPlatform::DatabricksAws => "databricks-aws",
            ModelPlatform::DatabricksAzure => "databricks-azure",
        }
    }

    /// Whether apps using Databricks Photon can run here as they ran.
    pub fn has_photon(self) -> bool {
        matches!(
            self,
            ModelPlatform::DatabricksAws | ModelPlatform::DatabricksAzure
        )
    }

    /// Whether EMR's instance catalog and prices cost its clusters.
    pub fn priced_as_emr(self) -> bool {
        self == ModelPlatform::Emr
    }
}

impl From<aether_core::Platform> for ModelPlatform {
    fn from(p: aether_core::Platform) -> Self {
        match p {
            aether_core::Platform::Emr => ModelPlatform::Emr,
            aether_core::Platform::Onprem => ModelPlatform::Onprem,
        }
    }
}

impl fmt::Display for ModelPlatform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ModelPlatform {
    type Err = String;

    /// Any case, `_` for `-`: `EMR`, `databricks_aws`.
    fn from_str(s: &str) -> Result<Self, String> {
        let want = s.trim().to_ascii_lowercase().replace('_', "-");
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == want)
            .ok_or_else(|| {
                let known: Vec<_> = Self::ALL.iter().map(|p| p.as_str()).collect();
                format!("unknown platform {s:?}; known: {}", known.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_ones_list_the_known() {
        for p in ModelPlatform::ALL {
            assert_eq!(p.as_str().parse::<ModelPlatform>().unwrap(), p);
        }
        assert_eq!(
            "Databricks_AWS".parse::<ModelPlatform>().unwrap(),
            ModelPlatform::DatabricksAws
        );
        let e = "gcp".parse::<ModelPlatform>().unwrap_err();
        assert_eq!(
            e,
            "unknown platform \"gcp\"; known: emr, onprem, dataproc, databricks-aws, databricks-azure"
        );
        assert!(ModelPlatform::DatabricksAzure.has_photon() && !ModelPlatform::Emr.has_photon());
        assert_eq!(
            ModelPlatform::from(aether_core::Platform::Onprem),
            ModelPlatform::Onprem
        );
    }
}
