//! `cluster create --config_file FILE`: a YAML description of the test cluster that overrides
//! what aether derives from qualify's shape and the settings.
//!
//! ```yaml
//! emrRelease: emr-7.9.0
//! applications: [Hadoop, Spark]
//! idleTimeoutSeconds: 1800
//! tags: {team: data-platform}
//! # the account's network and roles (AWS's names; the settings' values otherwise)
//! ec2SubnetIds: [subnet-0a1b2c3d]           # several: EMR picks one (instance fleets)
//! emrManagedMasterSecurityGroup: sg-0a1b2c3d
//! emrManagedSlaveSecurityGroup: sg-0e1f2a3b
//! serviceAccessSecurityGroup: sg-0c4d5e6f    # private subnets
//! additionalSecurityGroups: [sg-01234567]    # on every node
//! ec2KeyName: data-platform
//! serviceRole: EMR_DefaultRole_V2
//! jobFlowRole: EMR_EC2_DefaultRole           # the nodes' instance profile
//! securityConfiguration: at-rest-encryption
//! instanceGroups:
//!   - name: Primary            # role MASTER, CORE or TASK; else told by the name
//!     instanceType: m5d.xlarge
//!     instanceCount: 1
//!   - name: Core GPU
//!     instanceType: g5.2xlarge
//!     instanceCount: 2
//!     ebsConfiguration: {volumeType: gp3, sizeInGb: 200, volumesPerInstance: 1}
//!   - name: Task GPU
//!     instanceType: g5.2xlarge
//!     instanceCount: 4
//!     market: SPOT
//!     onSpotUnavailable: SWITCH_TO_ON_DEMAND   # instance fleets with a spot timeout
//! ```
//!
//! Every field is checked: an unknown one, a bad value or a missing primary or core group is
//! refused with the file, the field and what was expected.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The whole file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterFile {
    pub emr_release: Option<String>,
    pub applications: Option<Vec<String>>,
    pub idle_timeout_seconds: Option<i64>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    pub instance_groups: Option<Vec<GroupSpec>>,
    pub ec2_subnet_ids: Option<Vec<String>>,
    pub emr_managed_master_security_group: Option<String>,
    pub emr_managed_slave_security_group: Option<String>,
    pub service_access_security_group: Option<String>,
    pub additional_security_groups: Option<Vec<String>>,
    pub ec2_key_name: Option<String>,
    pub service_role: Option<String>,
    /// The nodes' instance profile (`instanceProfile` too).
    #[serde(alias = "instanceProfile")]
    pub job_flow_role: Option<String>,
    pub security_configuration: Option<String>,
}

/// One instance group (or fleet, when spot capacity may fall back to on-demand).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GroupSpec {
    pub name: String,
    /// MASTER, CORE or TASK (default: from the name: primary/master, core, task).
    pub role: Option<String>,
    pub instance_type: String,
    pub instance_count: i64,
    /// ON_DEMAND (default) or SPOT.
    pub market: Option<String>,
    /// A spot bid in USD per hour (default: the on-demand price).
    pub bid_price: Option<String>,
    /// SWITCH_TO_ON_DEMAND or TERMINATE_CLUSTER: what EMR does when spot capacity is not found
    /// in time (the cluster is then made of instance fleets).
    pub on_spot_unavailable: Option<String>,
    pub ebs_configuration: Option<Ebs>,
}

/// EBS volumes of each node of a group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Ebs {
    pub volume_type: String,
    pub size_in_gb: i64,
    pub volumes_per_instance: Option<i64>,
    pub iops: Option<i64>,
}

impl GroupSpec {
    /// The group's role, given or told by its name.
    pub fn role(&self) -> Option<&'static str> {
        let given = self.role.as_deref().map(str::to_ascii_uppercase);
        let name = self.name.to_ascii_lowercase();
        match given.as_deref() {
            Some("MASTER") | Some("PRIMARY") => Some("MASTER"),
            Some("CORE") => Some("CORE"),
            Some("TASK") => Some("TASK"),
            Some(_) => None,
            None if name.contains("primary") || name.contains("master") => Some("MASTER"),
            None if name.contains("core") => Some("CORE"),
            None if name.contains("task") => Some("TASK"),
            None => None,
        }
    }

    pub fn is_spot(&self) -> bool {
        self.market.as_deref() == Some("SPOT")
    }
}

impl ClusterFile {
    /// Read and check a file; errors name the file and the field.
    pub fn load(path: &Path) -> Result<ClusterFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        ClusterFile::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<ClusterFile, String> {
        let f: ClusterFile = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        f.check()?;
        Ok(f)
    }

    /// Whether the cluster is made of instance fleets (spot with an on-demand fallback).
    pub fn uses_fleets(&self) -> bool {
        self.instance_groups
            .iter()
            .flatten()
            .any(|g| g.on_spot_unavailable.is_some())
    }

    fn check(&self) -> Result<(), String> {
        if let Some(r) = &self.emr_release {
            let ok = r.strip_prefix("emr-7.").is_some_and(|v| {
                let p: Vec<&str> = v.split('.').collect();
                p.len() == 2
                    && p.iter()
                        .all(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()))
            });
            if !ok {
                return Err(format!(
                    "emrRelease: {r:?}: expected an EMR 7 release such as emr-7.9.0 (the RAPIDS \
                     classifications aether sets are EMR 7's)"
                ));
            }
        }
        if let Some(apps) = &self.applications
            && !apps.iter().any(|a| a.eq_ignore_ascii_case("spark"))
        {
            return Err(format!("applications: {apps:?}: Spark must be one of them"));
        }
        if let Some(t) = self.idle_timeout_seconds
            && !(60..=7 * 24 * 3600).contains(&t)
        {
            return Err(format!(
                "idleTimeoutSeconds: {t}: expected 60 to 604800 (EMR's range)"
            ));
        }
        for (field, ids, prefix) in [
            ("ec2SubnetIds", self.ec2_subnet_ids.clone(), "subnet-"),
            (
                "emrManagedMasterSecurityGroup",
                self.emr_managed_master_security_group
                    .clone()
                    .map(|v| vec![v]),
                "sg-",
            ),
            (
                "emrManagedSlaveSecurityGroup",
                self.emr_managed_slave_security_group
                    .clone()
                    .map(|v| vec![v]),
                "sg-",
            ),
            (
                "serviceAccessSecurityGroup",
                self.service_access_security_group.clone().map(|v| vec![v]),
                "sg-",
            ),
            (
                "additionalSecurityGroups",
                self.additional_security_groups.clone(),
                "sg-",
            ),
        ] {
            for id in ids.iter().flatten() {
                if !aether_core::config::is_aws_id(id, prefix) {
                    return Err(format!(
                        "{field}: {id:?}: expected an id such as {prefix}0a1b2c3d4e5f67890"
                    ));
                }
            }
            if ids.as_ref().is_some_and(|v| v.is_empty()) {
                return Err(format!(
                    "{field}: an empty list (leave it out for the settings' value)"
                ));
            }
        }
        for (field, v) in [
            ("ec2KeyName", &self.ec2_key_name),
            ("serviceRole", &self.service_role),
            ("jobFlowRole", &self.job_flow_role),
            ("securityConfiguration", &self.security_configuration),
        ] {
            if let Some(v) = v
                && (v.trim().is_empty() || v.len() > 256 || v.chars().any(char::is_whitespace))
            {
                return Err(format!("{field}: {v:?}: expected a name without spaces"));
            }
        }
        let Some(groups) = &self.instance_groups else {
            return Ok(());
        };
        let mut roles = BTreeMap::new();
        for (i, g) in groups.iter().enumerate() {
            let at = format!("instanceGroups[{i}] ({:?})", g.name);
            let role = g.role().ok_or_else(|| {
                format!("{at}.role: expected MASTER, CORE or TASK (or a name saying primary, core or task)")
            })?;
            *roles.entry(role).or_insert(0) += 1;
            if !is_instance_type(&g.instance_type) {
                return Err(format!(
                    "{at}.instanceType: {:?}: expected an EC2 instance type such as g5.2xlarge",
                    g.instance_type
                ));
            }
            if g.instance_count < 1 || (role == "MASTER" && ![1, 3].contains(&g.instance_count)) {
                return Err(format!(
                    "{at}.instanceCount: {}: expected at least 1 (1 or 3 for the primary group)",
                    g.instance_count
                ));
            }
            match g.market.as_deref() {
                None | Some("ON_DEMAND") | Some("SPOT") => {}
                Some(m) => return Err(format!("{at}.market: {m:?}: expected ON_DEMAND or SPOT")),
            }
            if let Some(b) = &g.bid_price
                && b.parse::<f64>().map_or(true, |p| p <= 0.0)
            {
                return Err(format!(
                    "{at}.bidPrice: {b:?}: expected USD per hour, such as \"0.75\""
                ));
            }
            match g.on_spot_unavailable.as_deref() {
                None | Some("SWITCH_TO_ON_DEMAND") | Some("TERMINATE_CLUSTER") => {}
                Some(a) => {
                    return Err(format!(
                        "{at}.onSpotUnavailable: {a:?}: expected SWITCH_TO_ON_DEMAND or TERMINATE_CLUSTER"
                    ));
                }
            }
            if g.on_spot_unavailable.is_some() && !g.is_spot() {
                return Err(format!("{at}.onSpotUnavailable: only for market: SPOT"));
            }
            if let Some(e) = &g.ebs_configuration {
                if !["gp2", "gp3", "io1", "io2", "st1", "sc1", "standard"]
                    .contains(&e.volume_type.as_str())
                {
                    return Err(format!(
                        "{at}.ebsConfiguration.volumeType: {:?}: expected gp2, gp3, io1, io2, st1, sc1 or standard",
                        e.volume_type
                    ));
                }
                if !(1..=16384).contains(&e.size_in_gb) {
                    return Err(format!(
                        "{at}.ebsConfiguration.sizeInGb: {}: expected 1 to 16384",
                        e.size_in_gb
                    ));
                }
            }
        }
        for role in ["MASTER", "CORE"] {
            match roles.get(role) {
                Some(1) => {}
                Some(n) => {
                    return Err(format!(
                        "instanceGroups: {n} {role} groups: expected exactly one"
                    ));
                }
                None => {
                    return Err(format!(
                        "instanceGroups: no {} group: expected one",
                        if role == "MASTER" {
                            "primary (MASTER)"
                        } else {
                            "CORE"
                        }
                    ));
                }
            }
        }
        Ok(())
    }
}

fn is_instance_type(v: &str) -> bool {
    let Some((family, size)) = v.split_once('.') else {
        return false;
    };
    family.len() >= 2
        && family.as_bytes()[0].is_ascii_lowercase()
        && family
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !size.is_empty()
        && size
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "emrRelease: emr-7.9.0\napplications: [Hadoop, Spark]\nidleTimeoutSeconds: 1800\n\
        instanceGroups:\n\
        \x20 - {name: Primary, instanceType: m5d.xlarge, instanceCount: 1}\n\
        \x20 - {name: Core GPU, instanceType: g5.2xlarge, instanceCount: 2, ebsConfiguration: {volumeType: gp3, sizeInGb: 200}}\n\
        \x20 - {name: Task GPU, instanceType: g5.2xlarge, instanceCount: 4, market: SPOT, onSpotUnavailable: SWITCH_TO_ON_DEMAND}\n";

    #[test]
    fn a_good_file() {
        let f = ClusterFile::parse(GOOD).unwrap();
        let g = f.instance_groups.as_ref().unwrap();
        assert_eq!(
            g.iter().map(|g| g.role().unwrap()).collect::<Vec<_>>(),
            ["MASTER", "CORE", "TASK"]
        );
        assert!(f.uses_fleets());
        assert_eq!(g[1].ebs_configuration.as_ref().unwrap().size_in_gb, 200);
        let net = ClusterFile::parse(
            "ec2SubnetIds: [subnet-0a1b2c3d, subnet-0123456789abcdef0]\n\
             emrManagedMasterSecurityGroup: sg-0a1b2c3d\ninstanceProfile: MyNodes\n",
        )
        .unwrap();
        assert_eq!(net.ec2_subnet_ids.unwrap().len(), 2);
        assert_eq!(net.job_flow_role.as_deref(), Some("MyNodes"));
    }

    #[test]
    fn bad_files_name_the_field() {
        for (edit, field) in [
            (("emr-7.9.0", "emr-6.15.0"), "emrRelease"),
            (("[Hadoop, Spark]", "[Hadoop]"), "applications"),
            (("1800", "10"), "idleTimeoutSeconds"),
            (
                ("instanceCount: 2", "instanceCount: 0"),
                "instanceGroups[1] (\"Core GPU\").instanceCount",
            ),
            (
                ("g5.2xlarge, instanceCount: 2", "G5, instanceCount: 2"),
                "instanceGroups[1] (\"Core GPU\").instanceType",
            ),
            (
                ("market: SPOT", "market: CHEAP"),
                "instanceGroups[2] (\"Task GPU\").market",
            ),
            (("SWITCH_TO_ON_DEMAND", "WAIT"), "onSpotUnavailable"),
            (
                ("volumeType: gp3", "volumeType: ssd"),
                "ebsConfiguration.volumeType",
            ),
            (
                ("name: Core GPU", "name: Workers"),
                "instanceGroups[1] (\"Workers\").role",
            ),
            (("name: Core GPU", "name: Task B"), "no CORE group"),
            (
                ("instanceType: m5d.xlarge", "instanceTyp: m5d.xlarge"),
                "instanceTyp",
            ),
            (("emrRelease", "emrRelese"), "emrRelese"),
            (
                ("applications", "ec2SubnetIds: [subnet-xyz]\napplications"),
                "ec2SubnetIds: \"subnet-xyz\"",
            ),
            (
                (
                    "applications",
                    "serviceAccessSecurityGroup: subnet-0a1b2c3d\napplications",
                ),
                "serviceAccessSecurityGroup",
            ),
            (
                ("applications", "serviceRole: my role\napplications"),
                "serviceRole",
            ),
        ] {
            let text = GOOD.replacen(edit.0, edit.1, 1);
            let e = ClusterFile::parse(&text).unwrap_err();
            assert!(e.contains(field), "{edit:?}: {e}");
        }
        assert!(ClusterFile::parse("- not a mapping").is_err());
        let e = ClusterFile::load(Path::new("/no/such/cluster.yaml")).unwrap_err();
        assert!(e.contains("/no/such/cluster.yaml"), "{e}");
    }
}
