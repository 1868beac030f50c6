//! `aether doctor`: before the first real `cluster create`, what an emulator never checks —
//! credentials and region, EMR's service role and instance profile, the artifacts and logs
//! buckets writable, the release label offered (and EMR 7, where aether's RAPIDS cluster
//! configuration applies), the network the nodes go to (the subnets, or the default VPC many
//! production accounts lack; the VPC's DNS; the security groups, key pair and security
//! configuration when set), the GPU instance types offered for it in the region and the EC2 vCPU
//! quota they count against (often 0 in a new account). Each check is OK, WARN, FAIL (or SKIP
//! when an earlier failure makes it moot) with what to fix.
//!
//! It checks the cluster `cluster create` would make, resolved as it resolves it: the
//! workspace's EMR settings ([`Workspace::emr_settings`]: release, roles, buckets, primary
//! node) in `platform.emr.region` (else the AWS environment's region), with a shape's nodes
//! (`shape_id`), else the GPU families of `platform.emr.gpu_instance_types` that qualify picks
//! shapes from. The AWS facts come from
//! `aether_platform::preflight`.

use crate::error::{Result, invalid};
use crate::workspace::Workspace;
use aether_core::RunOn;
use aether_platform::preflight::{self, Aws, Probe};
use serde::Serialize;
use std::collections::BTreeMap;

/// A check's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Ok,
    Warn,
    Fail,
    /// Not checked: an earlier failure makes it moot.
    Skip,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        }
    }
}

/// One check: what was checked, its outcome, what was found and what to do about it.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub check: &'static str,
    pub status: Status,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn check(check: &'static str, status: Status, detail: impl Into<String>) -> Check {
    Check {
        check,
        status,
        detail: detail.into(),
        fix: None,
    }
}

impl Check {
    fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
}

/// Every check, in order.
#[derive(Clone, Debug, Serialize)]
pub struct Doctor {
    pub region: Option<String>,
    pub account: Option<String>,
    pub checks: Vec<Check>,
}

impl Doctor {
    /// How many checks failed (the command's exit is 1 when any did).
    pub fn failed(&self) -> usize {
        self.count(Status::Fail)
    }

    fn count(&self, s: Status) -> usize {
        self.checks.iter().filter(|c| c.status == s).count()
    }

    /// The checks as text (a line each, `fix:` lines under what fails), or as JSON.
    pub fn render(&self, json: bool) -> Result<String> {
        if json {
            return Ok(serde_json::to_string_pretty(self)?);
        }
        let mut out = format!(
            "aether doctor: EMR in {}{}\n",
            self.region.as_deref().unwrap_or("(no region)"),
            self.account
                .as_deref()
                .map(|a| format!(", account {a}"))
                .unwrap_or_default()
        );
        // details folded to 120 columns under their first line; a fix stays one line, to copy
        for c in &self.checks {
            let lines = fold(&c.detail, 120 - 24);
            out += &format!("{:<5} {:<17} {}\n", c.status.as_str(), c.check, lines[0]);
            for l in &lines[1..] {
                out += &format!("{:<24}{l}\n", "");
            }
            if let Some(f) = &c.fix {
                out += &format!("{:<24}fix: {f}\n", "");
            }
        }
        out += &format!(
            "{} FAIL, {} WARN, {} OK",
            self.failed(),
            self.count(Status::Warn),
            self.count(Status::Ok)
        );
        if self.failed() > 0 {
            out += ": fix what FAILs before `aether cluster create`";
        }
        Ok(out)
    }
}

/// `text`'s lines folded at spaces to `width` columns (a longer word stays whole); at least one.
fn fold(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![];
    for para in text.trim_end().lines() {
        let mut line = String::new();
        for w in para.split_whitespace() {
            if !line.is_empty() && line.chars().count() + 1 + w.chars().count() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(w);
        }
        lines.push(line);
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// The nodes and release of the cluster checked, and where they come from (named in fixes).
struct Planned {
    release: String,
    /// Instance types with their node counts (the primary's, and a shape's GPU nodes).
    groups: Vec<(String, i64)>,
    /// GPU families (or types) a shape may be made of, when no shape is given.
    families: Vec<String>,
    /// Where the GPU nodes come from, in words.
    from: String,
}

fn planned(ws: &Workspace, shape_id: Option<i64>) -> Result<Planned> {
    let s = ws.emr_settings();
    let mut p = Planned {
        release: s.release_label.clone(),
        groups: vec![(s.primary_instance_type.clone(), 1)],
        families: vec![],
        from: "platform.emr.gpu_instance_types".into(),
    };
    if let Some(id) = shape_id {
        let (job, gpu) = ws
            .history()?
            .shape(id)?
            .ok_or_else(|| invalid!("unknown cluster shape id {id} (see `aether report list`)"))?;
        let shape = &gpu["shape"];
        let instance = shape["instance"]
            .as_str()
            .ok_or_else(|| invalid!("shape {id} (job {job}) names no GPU instance type"))?;
        p.groups
            .push((instance.to_string(), shape["nodes"].as_i64().unwrap_or(1)));
        p.from = format!("shape {id}");
    } else {
        p.families = ws.gpu_families();
    }
    Ok(p)
}

/// Run the checks of the cluster `cluster create` would make, of shape `shape_id` if given
/// (see the module's doc). An error only when the shape is unknown; everything AWS answers is a
/// check.
pub fn doctor(ws: &Workspace, shape_id: Option<i64>) -> Result<Doctor> {
    let plan = planned(ws, shape_id)?;
    let mut checks = vec![platform_check(ws), prices_check(ws)];
    let region_setting = ws.emr_region();
    let from_setting = region_setting.is_some();
    let aws = ws.runtime().block_on(Aws::from_env(region_setting));
    let mut d = Doctor {
        region: aws.region(),
        account: None,
        checks: vec![],
    };
    let names = [
        "service role",
        "instance profile",
        "artifacts bucket",
        "logs bucket",
        "network",
        "release label",
        "instance types",
        "GPU vCPU quota",
    ];
    let Some(region) = d.region.clone() else {
        checks.push(
            check("credentials", Status::Fail, "no AWS region: nothing says where EMR is")
                .fix("aether config set platform.emr.region us-east-1 (or AWS_REGION, or a profile's region)"),
        );
        checks.extend(names.map(|n| check(n, Status::Skip, "no region")));
        d.checks = checks;
        return Ok(d);
    };
    let region_from = if from_setting {
        "platform.emr.region"
    } else {
        "the AWS environment"
    };
    match ws.runtime().block_on(aws.caller()) {
        Ok(c) => {
            checks.push(check(
                "credentials",
                Status::Ok,
                format!("{} in {region} (region from {region_from})", c.arn),
            ));
            d.account = Some(c.account);
        }
        Err(e) => {
            checks.push(check("credentials", Status::Fail, format!("{e}")).fix(
                "give aether AWS credentials: `aws configure`, `aws sso login` with AWS_PROFILE, \
                 or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
            ));
            checks.extend(names.map(|n| check(n, Status::Skip, "no credentials")));
            d.checks = checks;
            return Ok(d);
        }
    }
    let s = ws.emr_settings();
    let rt = ws.runtime();
    checks.push(service_role_check(
        rt.block_on(aws.role(&s.service_role)),
        &s.service_role,
        &region,
    ));
    checks.push(instance_profile_check(
        rt.block_on(aws.instance_profile(&s.job_flow_role)),
        &s.job_flow_role,
        &region,
    ));
    for (name, key, url) in [
        (
            "artifacts bucket",
            "platform.emr.cluster.artifacts_path",
            &s.artifacts_path,
        ),
        ("logs bucket", "platform.emr.cluster.log_path", &s.log_uri),
    ] {
        checks.push(bucket_check(&aws, ws, name, key, url.as_deref(), &region));
    }
    checks.extend(network_checks(&aws, rt, &s, &region));
    let release = release_check(&plan, rt.block_on(aws.release_labels()), &region);
    let offered = release.status != Status::Fail;
    checks.push(release);
    if !offered {
        for n in ["instance types", "GPU vCPU quota"] {
            checks.push(check(
                n,
                Status::Skip,
                "no release label offered to check them for",
            ));
        }
        d.checks = checks;
        return Ok(d);
    }
    match rt.block_on(aws.instance_types(&plan.release)) {
        Ok(types) => {
            let types: BTreeMap<String, i32> = types.into_iter().collect();
            checks.push(instance_types_check(&plan, &types, &region));
            let needs = quota_needs(&plan, &types);
            checks.extend(quota_checks(&aws, rt, &plan, needs, &region));
        }
        Err(e) => {
            checks.push(
                check("instance types", Status::Warn, format!("not checked: {e}"))
                    .fix(list_types_cmd(&plan.release, &region)),
            );
            checks.push(check(
                "GPU vCPU quota",
                Status::Skip,
                "the instance types are not known",
            ));
        }
    }
    d.checks = checks;
    Ok(d)
}

/// Whether the prices every cost is at can be read (offline: the settings and the file).
fn prices_check(ws: &Workspace) -> Check {
    let terms = ws.price_terms();
    match aether_predict::prices::PriceBook::load(&terms) {
        Ok(b) => check("prices", Status::Ok, format!("costs at {}", b.label)),
        Err(e) => check("prices", Status::Fail, e.to_string())
            .fix("mend the file, or `aether config unset prices.file` for AWS list prices"),
    }
}

fn platform_check(ws: &Workspace) -> Check {
    let source = ws.platform_source();
    match ws.platform() {
        Ok(RunOn::Emr) => check(
            "platform",
            Status::Ok,
            format!("runs go to EMR ({})", source.describe(Some(RunOn::Emr))),
        ),
        Ok(p) => check(
            "platform",
            Status::Warn,
            format!(
                "runs go to {p} ({}), not EMR: these checks are of EMR, for `--platform emr`",
                source.describe(Some(p))
            ),
        ),
        Err(_) => check(
            "platform",
            Status::Warn,
            "no runs go anywhere (core.selected_platform onprem, no core.run_on): these checks \
             are of EMR, for `aether config set core.run_on emr` or `--platform emr`",
        ),
    }
}

const CREATE_DEFAULT_ROLES: &str = "aws emr create-default-roles";

/// How to make a missing role (or profile) `name` of setting `key`: AWS's default roles when it
/// is the default name, else the setting to point at an existing one.
fn make_role(name: &str, default: &str, key: &str, region: &str) -> String {
    if name == default {
        format!(
            "{CREATE_DEFAULT_ROLES} --region {region} (makes {default} and the EMR_EC2_DefaultRole instance profile)"
        )
    } else {
        format!(
            "create {name} in IAM, or name an existing one: aether config set {key} NAME \
             (`{CREATE_DEFAULT_ROLES} --region {region}` makes {default})"
        )
    }
}

fn service_role_check(
    r: aether_platform::Result<Option<preflight::Role>>,
    name: &str,
    region: &str,
) -> Check {
    const EMR: &str = "elasticmapreduce.amazonaws.com";
    let c = |s, d: String| check("service role", s, d);
    match r {
        Ok(Some(r)) if r.trusts(EMR) => c(Status::Ok, r.arn),
        Ok(Some(r)) => c(
            Status::Fail,
            format!("{}: its trust policy does not let {EMR} assume it", r.arn),
        )
        .fix(format!(
            "let {EMR} assume {name} (its trust policy), or delete it and run \
             `{CREATE_DEFAULT_ROLES} --region {region}`"
        )),
        Ok(None) => c(
            Status::Fail,
            format!(
                "IAM role {name} (EMR's service role, which cluster create names) does not exist"
            ),
        )
        .fix(make_role(
            name,
            aether_platform::emr::DEFAULT_SERVICE_ROLE,
            "platform.emr.cluster.service_role",
            region,
        )),
        Err(e) => c(Status::Warn, format!("{name} not checked: {e}")).fix(
            "allow iam:GetRole and iam:GetInstanceProfile (docs/aws-setup.md), or check the role \
             in the IAM console",
        ),
    }
}

fn instance_profile_check(
    r: aether_platform::Result<Option<Vec<preflight::Role>>>,
    name: &str,
    region: &str,
) -> Check {
    const EC2: &str = "ec2.amazonaws.com";
    let c = |s, d: String| check("instance profile", s, d);
    match r {
        Ok(Some(roles)) => match roles.iter().find(|r| r.trusts(EC2)) {
            Some(r) => c(Status::Ok, format!("{name} (role {})", r.arn)),
            None if roles.is_empty() => c(
                Status::Fail,
                format!("instance profile {name} holds no role: the nodes get no credentials"),
            )
            .fix(format!(
                "aws iam add-role-to-instance-profile --instance-profile-name {name} --role-name {name}"
            )),
            None => c(
                Status::Fail,
                format!(
                    "the role of instance profile {name} ({}) does not let {EC2} assume it",
                    roles[0].name
                ),
            )
            .fix(format!("let {EC2} assume {} (its trust policy)", roles[0].name)),
        },
        Ok(None) => c(
            Status::Fail,
            format!("{name} (the EMR nodes' instance profile cluster create names) does not exist"),
        )
        .fix(make_role(
            name,
            aether_platform::emr::DEFAULT_INSTANCE_PROFILE,
            "platform.emr.cluster.instance_profile",
            region,
        )),
        Err(e) => c(Status::Warn, format!("{name} not checked: {e}")).fix(
            "allow iam:GetInstanceProfile (docs/aws-setup.md), or check it in the IAM console",
        ),
    }
}

fn bucket_check(
    aws: &Aws,
    ws: &Workspace,
    name: &'static str,
    key: &str,
    url: Option<&str>,
    region: &str,
) -> Check {
    let Some(url) = url else {
        let what = if name == "logs bucket" {
            "the clusters' step logs go there (submit finds a run's event log by them)"
        } else {
            "cluster create puts the GPU bootstrap action there"
        };
        return check(name, Status::Fail, format!("{key} is not set: {what}"))
            .fix(format!("aether config set {key} s3://BUCKET/PREFIX"));
    };
    let bucket = url
        .trim_start_matches("s3://")
        .trim_start_matches("s3a://")
        .split('/')
        .next()
        .unwrap_or("");
    match ws.runtime().block_on(aws.probe_write(url)) {
        Probe::Written => check(
            name,
            Status::Ok,
            format!("{url} writable (a probe object put and deleted)"),
        ),
        Probe::NoSuchBucket => check(
            name,
            Status::Fail,
            format!("bucket {bucket} of {key} ({url}) does not exist"),
        )
        .fix(format!(
            "aws s3 mb s3://{bucket} --region {region}, or aether config set {key} \
             s3://EXISTING-BUCKET/PREFIX"
        )),
        Probe::Denied(e) => check(
            name,
            Status::Fail,
            format!("{url} ({key}) is not writable by these credentials: {e}"),
        )
        .fix(format!(
            "allow s3:PutObject, s3:GetObject, s3:DeleteObject on arn:aws:s3:::{bucket}/* and \
             s3:ListBucket on arn:aws:s3:::{bucket} (docs/aws-setup.md)"
        )),
        Probe::Left(probe, e) => check(
            name,
            Status::Warn,
            format!("{url} writable, but the probe {probe} could not be deleted: {e}"),
        )
        .fix(format!("aws s3 rm {probe}")),
        Probe::Failed(e) => check(
            name,
            Status::Fail,
            format!("{url} ({key}): a probe write failed: {e}"),
        ),
    }
}

/// The network the nodes go to: the subnets (or the region's default VPC, AWS's default, which
/// many production accounts lack), their VPC's DNS (EMR needs hostnames and resolution on),
/// the security groups (existing, in that VPC, EMR's pairs complete), the key pair and the
/// security configuration when set.
fn network_checks(
    aws: &Aws,
    rt: &tokio::runtime::Runtime,
    s: &aether_platform::emr::EmrSettings,
    region: &str,
) -> Vec<Check> {
    const SUBNETS: &str = "platform.emr.cluster.subnet_ids";
    let ec2 = aws.ec2();
    let n = &s.network;
    let mut out = vec![];
    let c = |st, d: String| check("network", st, d);
    let not_checked = |e: &dyn std::fmt::Display| {
        c(Status::Warn, format!("not checked: {e}")).fix(
            "allow ec2:DescribeSubnets, ec2:DescribeVpcs, ec2:DescribeVpcAttribute, \
             ec2:DescribeSecurityGroups, ec2:DescribeKeyPairs (docs/aws-setup.md)",
        )
    };
    // the VPC the nodes go to
    let mut vpc = None;
    let mut private = false;
    if n.subnet_ids.is_empty() {
        out.push(match rt.block_on(ec2.default_vpc()) {
            Ok(Some(v)) => {
                vpc = Some(v.id.clone());
                c(
                    Status::Ok,
                    format!(
                        "no subnet set: the nodes go to the default VPC {} of {region} (AWS's default)",
                        v.id
                    ),
                )
            }
            Ok(None) => c(
                Status::Fail,
                format!(
                    "no subnet set ({SUBNETS}) and {region} has no default VPC: EMR would refuse \
                     the cluster"
                ),
            )
            .fix(format!("aether config set {SUBNETS} subnet-…")),
            Err(e) => not_checked(&e),
        });
    } else {
        let mut found = vec![];
        let mut missing = vec![];
        let mut failed = None;
        for id in &n.subnet_ids {
            match rt.block_on(ec2.subnet(id)) {
                Ok(Some(sn)) => found.push(sn),
                Ok(None) => missing.push(id.clone()),
                Err(e) => failed = Some(e),
            }
        }
        let vpcs: std::collections::BTreeSet<&str> =
            found.iter().map(|s| s.vpc_id.as_str()).collect();
        if let Some(e) = failed {
            out.push(not_checked(&e));
        } else if !missing.is_empty() {
            out.push(
                c(
                    Status::Fail,
                    format!(
                        "subnet {} of {SUBNETS} does not exist in {region}",
                        missing.join(", ")
                    ),
                )
                .fix(format!(
                    "aether config set {SUBNETS} with subnets `aws ec2 describe-subnets --region {region}` lists"
                )),
            );
        } else if vpcs.len() > 1 {
            out.push(
                c(
                    Status::Fail,
                    format!(
                        "the subnets of {SUBNETS} are in {} VPCs ({}): a cluster's nodes share one",
                        vpcs.len(),
                        vpcs.iter().copied().collect::<Vec<_>>().join(", ")
                    ),
                )
                .fix(format!(
                    "aether config set {SUBNETS} with subnets of one VPC"
                )),
            );
        } else {
            vpc = vpcs.first().map(|v| v.to_string());
            private = found.iter().any(|s| !s.map_public_ip);
            let zones: Vec<String> = found
                .iter()
                .map(|s| format!("{} ({})", s.id, s.availability_zone))
                .collect();
            out.push(c(
                Status::Ok,
                format!(
                    "subnets {} in {}{}",
                    zones.join(", "),
                    vpc.as_deref().unwrap_or("?"),
                    if private {
                        "; private: the nodes need a route to S3 (a gateway endpoint or NAT)"
                    } else {
                        ""
                    }
                ),
            ));
        }
    }
    // its DNS: EMR resolves the nodes by their private DNS names
    if let Some(v) = &vpc {
        let mut off = vec![];
        let mut err = None;
        for attr in ["enableDnsSupport", "enableDnsHostnames"] {
            match rt.block_on(ec2.vpc_attribute(v, attr)) {
                Ok(true) => {}
                Ok(false) => off.push(attr),
                Err(e) => err = Some(e),
            }
        }
        if let Some(e) = err {
            out.push(not_checked(&e));
        } else if !off.is_empty() {
            let last = out.len() - 1;
            out[last] = c(
                Status::Fail,
                format!(
                    "VPC {v}: {} off: EMR needs DNS resolution and DNS hostnames on",
                    off.join(" and ")
                ),
            )
            .fix(format!(
                "aws ec2 modify-vpc-attribute --vpc-id {v} --{} '{{\"Value\":true}}' --region {region} \
                 (once per attribute)",
                if off.contains(&"enableDnsHostnames") {
                    "enable-dns-hostnames"
                } else {
                    "enable-dns-support"
                }
            ));
        }
    }
    // security groups
    let named: Vec<(&str, &String)> = [
        ("primary_security_group", n.primary_security_group.as_ref()),
        ("core_security_group", n.core_security_group.as_ref()),
        (
            "service_access_security_group",
            n.service_access_security_group.as_ref(),
        ),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .chain(
        n.additional_security_groups
            .iter()
            .map(|g| ("additional_security_groups", g)),
    )
    .collect();
    if !named.is_empty() {
        let c = |st, d: String| check("security groups", st, d);
        let mut problems = vec![];
        let mut err = None;
        for (key, id) in &named {
            match rt.block_on(ec2.security_group(id)) {
                Ok(Some(g)) if vpc.as_deref().is_some_and(|v| v != g.vpc_id) => {
                    problems.push(format!(
                        "{id} ({key}) is in {}, not the nodes' VPC {}",
                        g.vpc_id,
                        vpc.as_deref().unwrap_or("")
                    ))
                }
                Ok(Some(_)) => {}
                Ok(None) => problems.push(format!("{id} ({key}) does not exist in {region}")),
                Err(e) => err = Some(e),
            }
        }
        if n.primary_security_group.is_some() != n.core_security_group.is_some() {
            problems.push(
                "EMR takes the primary and core managed security groups together: set both or neither"
                    .into(),
            );
        }
        if private
            && n.primary_security_group.is_some()
            && n.service_access_security_group.is_none()
        {
            problems.push(
                "a private subnet with custom managed security groups needs a service access \
                 security group (service_access_security_group)"
                    .into(),
            );
        }
        out.push(if !problems.is_empty() {
            c(Status::Fail, problems.join("; "))
                .fix("aether config set platform.emr.cluster.<key> sg-… (groups of the nodes' VPC)")
        } else if let Some(e) = err {
            c(Status::Warn, format!("not checked: {e}"))
                .fix("allow ec2:DescribeSecurityGroups (docs/aws-setup.md)")
        } else {
            c(
                Status::Ok,
                format!(
                    "{} in {}",
                    named
                        .iter()
                        .map(|(k, id)| format!("{id} ({k})"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    vpc.as_deref().unwrap_or("their VPC")
                ),
            )
        });
    }
    if let Some(k) = &n.key_name {
        let c = |st, d: String| check("key pair", st, d);
        out.push(match rt.block_on(ec2.key_pair_exists(k)) {
            Ok(true) => c(Status::Ok, format!("{k} in {region}")),
            Ok(false) => c(
                Status::Fail,
                format!("key pair {k} (platform.emr.cluster.key_name) does not exist in {region}"),
            )
            .fix(format!(
                "aws ec2 create-key-pair --key-name {k} --region {region}, or aether config unset \
                 platform.emr.cluster.key_name"
            )),
            Err(e) => c(Status::Warn, format!("{k} not checked: {e}"))
                .fix("allow ec2:DescribeKeyPairs (docs/aws-setup.md)"),
        });
    }
    if let Some(name) = &s.security_configuration {
        let c = |st, d: String| check("security config", st, d);
        out.push(match rt.block_on(aws.security_configuration(name)) {
            Ok(true) => c(Status::Ok, format!("{name} in {region}")),
            Ok(false) => c(
                Status::Fail,
                format!(
                    "EMR security configuration {name} (platform.emr.cluster.security_configuration) \
                     does not exist in {region}"
                ),
            )
            .fix(format!(
                "aws emr list-security-configurations --region {region}, then aether config set \
                 platform.emr.cluster.security_configuration NAME"
            )),
            Err(e) => c(Status::Warn, format!("{name} not checked: {e}"))
                .fix("allow elasticmapreduce:DescribeSecurityConfiguration (docs/aws-setup.md)"),
        });
    }
    out
}

/// `emr-7.9.0` → (7, 9, 0); `None` for a label of another form.
fn version(label: &str) -> Option<Vec<u32>> {
    label
        .strip_prefix("emr-")?
        .split('.')
        .map(|p| p.parse().ok())
        .collect()
}

const SET_RELEASE: &str = "aether config set platform.emr.release_label";

fn release_check(
    plan: &Planned,
    labels: aether_platform::Result<Vec<String>>,
    region: &str,
) -> Check {
    let r = &plan.release;
    let c = |s, d: String| check("release label", s, d);
    // aether's GPU cluster (the RAPIDS classifications, the cgroup bootstrap) is EMR 7's;
    // RAPIDS on EMR began with 6.2, with another configuration
    if version(r).is_none_or(|v| v.first() != Some(&7)) {
        return c(
            Status::Fail,
            format!(
                "{r} is not an EMR 7 release: aether's RAPIDS cluster configuration is EMR 7's \
                 (RAPIDS on EMR began with 6.2, configured otherwise)"
            ),
        )
        .fix(format!("{SET_RELEASE} emr-7.9.0"));
    }
    let labels = match labels {
        Ok(l) => l,
        Err(e) => {
            return c(
                Status::Warn,
                format!("{r}: not checked against the region's: {e}"),
            )
            .fix(format!(
                "allow elasticmapreduce:ListReleaseLabels (docs/aws-setup.md), or check: \
                     aws emr list-release-labels --region {region}"
            ));
        }
    };
    let newest = labels
        .iter()
        .filter(|l| version(l).is_some_and(|v| v.first() == Some(&7)))
        .max_by_key(|l| version(l))
        .cloned();
    if labels.iter().any(|l| l == r) {
        let newest = newest
            .filter(|n| n != r)
            .map(|n| format!("; the newest is {n}"))
            .unwrap_or_default();
        c(
            Status::Ok,
            format!("{r} (EMR 7, RAPIDS-capable) offered in {region}{newest}"),
        )
    } else {
        c(
            Status::Fail,
            format!("{r} is not an EMR release offered in {region}"),
        )
        .fix(format!(
            "{SET_RELEASE} {}",
            newest.as_deref().unwrap_or("emr-7.9.0")
        ))
    }
}

fn list_types_cmd(release: &str, region: &str) -> String {
    format!("aws emr list-supported-instance-types --release-label {release} --region {region}")
}

/// Whether `family` (`g5`, or a type `g5.2xlarge`) is offered: the type, or a type of the family.
fn offered_family(types: &BTreeMap<String, i32>, family: &str) -> bool {
    if family.contains('.') {
        return types.contains_key(family);
    }
    let prefix = format!("{family}.");
    types.keys().any(|t| t.starts_with(&prefix))
}

fn instance_types_check(plan: &Planned, types: &BTreeMap<String, i32>, region: &str) -> Check {
    let r = &plan.release;
    let missing: Vec<&str> = plan
        .groups
        .iter()
        .map(|(t, _)| t.as_str())
        .filter(|t| !types.contains_key(*t))
        .collect();
    let (fams_ok, fams_missing): (Vec<&String>, Vec<&String>) =
        plan.families.iter().partition(|f| offered_family(types, f));
    let c = |s, d: String| check("instance types", s, d);
    if !missing.is_empty() {
        return c(
            Status::Fail,
            format!(
                "{} not offered by EMR {r} in {region} (from {})",
                missing.join(", "),
                plan.from
            ),
        )
        .fix(format!("use types `{}` lists", list_types_cmd(r, region)));
    }
    let nodes = plan
        .groups
        .iter()
        .map(|(t, n)| format!("{n} x {t}"))
        .collect::<Vec<_>>()
        .join(", ");
    if plan.families.is_empty() {
        return c(
            Status::Ok,
            format!("{nodes} offered by EMR {r} in {region} ({})", plan.from),
        );
    }
    let ok: Vec<&str> = fams_ok.iter().map(|f| f.as_str()).collect();
    let fix = format!(
        "aether config set platform.emr.gpu_instance_types {}",
        ok.join(",")
    );
    if ok.is_empty() {
        c(
            Status::Fail,
            format!(
                "none of the GPU families of {} ({}) is offered by EMR {r} in {region}",
                plan.from,
                plan.families.join(", ")
            ),
        )
        .fix(format!(
            "pick families `{}` lists",
            list_types_cmd(r, region)
        ))
    } else if !fams_missing.is_empty() {
        let missing: Vec<&str> = fams_missing.iter().map(|f| f.as_str()).collect();
        c(
            Status::Warn,
            format!(
                "{} of {} not offered by EMR {r} in {region}: shapes on them could not start",
                missing.join(", "),
                plan.from
            ),
        )
        .fix(fix)
    } else {
        c(
            Status::Ok,
            format!(
                "GPU families {} ({}) and the primary {nodes} offered by EMR {r} in {region}",
                ok.join(", "),
                plan.from
            ),
        )
    }
}

/// The vCPUs each GPU quota must allow: a shape's nodes all together; for families, one node of
/// the smallest offered type of the quota's families. Per quota code: (vCPUs, what needs them).
fn quota_needs(
    plan: &Planned,
    types: &BTreeMap<String, i32>,
) -> BTreeMap<&'static str, (i64, String)> {
    let mut needs: BTreeMap<&'static str, (i64, Vec<String>)> = BTreeMap::new();
    for (t, n) in &plan.groups {
        if let (Some(code), Some(v)) = (preflight::gpu_quota_code(t), types.get(t)) {
            let e = needs.entry(code).or_default();
            let n = (*n).max(1);
            e.0 += n * i64::from(*v);
            e.1.push(format!("{n} x {t}"));
        }
    }
    let mut families: BTreeMap<&'static str, Vec<&str>> = BTreeMap::new();
    for f in &plan.families {
        let prefix = format!("{f}.");
        let smallest = types
            .iter()
            .filter(|(t, _)| *t == f || t.starts_with(&prefix))
            .filter(|(t, _)| preflight::gpu_quota_code(t).is_some())
            .min_by_key(|(_, v)| **v);
        if let Some((t, v)) = smallest {
            let code = preflight::gpu_quota_code(t).unwrap_or_default();
            families.entry(code).or_default().push(f);
            let e = needs.entry(code).or_insert((i64::MAX, vec![]));
            if i64::from(*v) < e.0 {
                *e = (i64::from(*v), vec![format!("one {t}")]);
            }
        }
    }
    needs
        .into_iter()
        .map(|(code, (v, what))| {
            let mut what = what.join(" + ");
            if let Some(f) = families.get(code) {
                what += &format!(", the smallest of {}", f.join(", "));
            }
            (code, (v, what))
        })
        .collect()
}

fn quota_checks(
    aws: &Aws,
    rt: &tokio::runtime::Runtime,
    plan: &Planned,
    needs: BTreeMap<&'static str, (i64, String)>,
    region: &str,
) -> Vec<Check> {
    if needs.is_empty() {
        return vec![check(
            "GPU vCPU quota",
            Status::Skip,
            format!("no offered GPU instance type in {}", plan.from),
        )];
    }
    let mut out = vec![];
    let mut short = vec![];
    // G before P
    for (code, (need, what)) in needs.into_iter().rev() {
        let (name, quota) = match code {
            preflight::QUOTA_P => ("vCPU quota P", "P on-demand"),
            _ => ("vCPU quota G/VT", "G and VT on-demand"),
        };
        let c = |s, d: String| check(name, s, d);
        out.push(match rt.block_on(aws.ec2_quota(code)) {
            Ok(q) => {
                let kind = if q.applied { "" } else { " (the AWS default)" };
                let d = format!(
                    "{quota} vCPUs: {}{kind} in {region} ({code}); {need} needed for {what}",
                    q.vcpus
                );
                if q.vcpus >= need as f64 {
                    c(Status::Ok, d)
                } else {
                    short.push(out.len());
                    c(Status::Fail, d).fix(format!(
                        "aws service-quotas request-service-quota-increase --service-code ec2 \
                         --quota-code {code} --desired-value {need} --region {region}"
                    ))
                }
            }
            Err(e) => c(
                Status::Warn,
                format!(
                    "{quota} vCPUs ({code}) not readable, so not checked ({need} needed for \
                     {what}): {e}"
                ),
            )
            .fix(format!(
                "check it: aws service-quotas get-service-quota --service-code ec2 --quota-code \
                 {code} --region {region} (a new account's is often 0; reading it needs \
                 servicequotas:GetServiceQuota)"
            )),
        });
    }
    // families: a quota short for some of them is a warning while another one's are usable
    if !plan.families.is_empty() && out.iter().any(|c| c.status == Status::Ok) {
        for i in short {
            out[i].status = Status::Warn;
            out[i].detail += ": shapes of these families cannot start until it is raised";
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(groups: &[(&str, i64)], families: &[&str]) -> Planned {
        Planned {
            release: "emr-7.9.0".into(),
            groups: groups.iter().map(|(t, n)| (t.to_string(), *n)).collect(),
            families: families.iter().map(|f| f.to_string()).collect(),
            from: "test".into(),
        }
    }

    fn types() -> BTreeMap<String, i32> {
        [
            ("m5d.xlarge", 4),
            ("g4dn.xlarge", 4),
            ("g4dn.2xlarge", 8),
            ("g5.xlarge", 4),
            ("p3.2xlarge", 8),
        ]
        .iter()
        .map(|(t, v)| (t.to_string(), *v))
        .collect()
    }

    #[test]
    fn details_fold_to_120_columns_and_fixes_stay_whole() {
        let long = "word ".repeat(50);
        let d = Doctor {
            region: Some("us-east-1".into()),
            account: None,
            checks: vec![
                check(
                    "credentials",
                    Status::Fail,
                    format!("{long}\n  second line"),
                )
                .fix("aws configure ".repeat(12)),
            ],
        };
        let text = d.render(false).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[1].starts_with("FAIL  credentials       word word"),
            "{text}"
        );
        assert!(lines[1..4].iter().all(|l| l.len() <= 120), "{text}");
        assert_eq!(lines[4], format!("{:24}second line", ""));
        assert!(lines[5].trim_start().starts_with("fix: aws configure") && lines[5].len() > 120);
        assert_eq!(
            lines[6],
            "1 FAIL, 0 WARN, 0 OK: fix what FAILs before `aether cluster create`"
        );
        let j: serde_json::Value = serde_json::from_str(&d.render(true).unwrap()).unwrap();
        assert_eq!(j["checks"][0]["status"], "FAIL");
        assert_eq!(fold("", 10), vec![String::new()]);
    }

    #[test]
    fn a_shape_needs_all_its_nodes_vcpus_and_families_one_node() {
        let needs = quota_needs(
            &plan(&[("m5d.xlarge", 1), ("g4dn.2xlarge", 3)], &[]),
            &types(),
        );
        assert_eq!(needs.len(), 1);
        assert_eq!(needs[preflight::QUOTA_G_VT].0, 24);
        let needs = quota_needs(&plan(&[("m5d.xlarge", 1)], &["g4dn", "g5", "p3"]), &types());
        assert_eq!(needs[preflight::QUOTA_G_VT].0, 4);
        assert_eq!(needs[preflight::QUOTA_P].0, 8);
    }

    #[test]
    fn families_not_offered_warn_and_types_not_offered_fail() {
        let c = instance_types_check(&plan(&[("m5d.xlarge", 1)], &["g4dn", "g6"]), &types(), "r");
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.detail.contains("g6"), "{c:?}");
        assert!(c.fix.unwrap().ends_with("gpu_instance_types g4dn"));
        let c = instance_types_check(&plan(&[("g6.xlarge", 2)], &[]), &types(), "r");
        assert_eq!(c.status, Status::Fail, "{c:?}");
        let c = instance_types_check(&plan(&[("m5d.xlarge", 1)], &["g6"]), &types(), "r");
        assert_eq!(c.status, Status::Fail, "{c:?}");
    }

    #[test]
    fn a_release_must_be_emr_7_and_offered() {
        let labels = || {
            Ok(vec![
                "emr-7.10.0".into(),
                "emr-7.9.0".into(),
                "emr-6.15.0".into(),
            ])
        };
        let c = release_check(&plan(&[], &[]), labels(), "r");
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.detail.contains("newest is emr-7.10.0"), "{c:?}");
        let mut p = plan(&[], &[]);
        p.release = "emr-7.99.0".into();
        let c = release_check(&p, labels(), "r");
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert!(c.fix.unwrap().ends_with("release_label emr-7.10.0"));
        p.release = "emr-6.15.0".into();
        assert_eq!(release_check(&p, labels(), "r").status, Status::Fail);
    }
}
