//! What an AWS account offers aether before its first real EMR cluster (`aether doctor`): who
//! the credentials are (STS GetCallerIdentity), whether the roles EMR needs exist and trust the
//! right service (IAM GetRole, GetInstanceProfile), whether an S3 location takes a write (a
//! probe object put and deleted through object_store, as aether writes artifacts), the releases
//! and instance types EMR offers in the region (ListReleaseLabels, ListSupportedInstanceTypes),
//! the network the nodes go to (subnets, their VPC's DNS, security groups, key pair: [`crate::ec2`]),
//! an EMR security configuration, and the EC2 vCPU quotas of GPU instances (Service Quotas).
//!
//! Facts only, each call on its own (one failing says nothing of the others); what they mean
//! and what to fix is the workflow's (`aether_workflow::doctor`). Credentials, region and
//! endpoints come from the SDK's standard configuration, as for [`crate::emr`], so the checks
//! run unchanged against an emulator. Calls are retried once at most: a doctor answers quickly.

use crate::emr::sdk_error;
use crate::{PlatformError, Result};

/// Service Quotas' code of the EC2 quota "Running On-Demand G and VT instances" (vCPUs).
pub const QUOTA_G_VT: &str = "L-DB2E81BA";
/// Service Quotas' code of the EC2 quota "Running On-Demand P instances" (vCPUs).
pub const QUOTA_P: &str = "L-417A185B";

/// The EC2 on-demand vCPU quota an instance type counts against, when it is a GPU one:
/// G and VT types (`g4dn.xlarge`, `vt1.3xlarge`) or P types (`p4d.24xlarge`).
pub fn gpu_quota_code(instance_type: &str) -> Option<&'static str> {
    let family = instance_type.split('.').next().unwrap_or("");
    let class: String = family
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    match class.as_str() {
        "g" | "gr" | "vt" => Some(QUOTA_G_VT),
        "p" => Some(QUOTA_P),
        _ => None,
    }
}

/// Who the credentials are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub account: String,
    pub arn: String,
}

/// An IAM role as EMR uses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Role {
    pub name: String,
    pub arn: String,
    /// Its trust policy (the document as IAM gives it: URL-encoded JSON).
    pub trust_policy: String,
}

impl Role {
    /// Whether the trust policy lets `service` (`ec2.amazonaws.com`) assume the role. A service
    /// name holds no character URL encoding changes, so the encoded document is searched as is.
    pub fn trusts(&self, service: &str) -> bool {
        self.trust_policy.contains(service)
    }
}

/// An EC2 vCPU quota's value.
#[derive(Clone, Debug, PartialEq)]
pub struct Quota {
    pub name: String,
    pub vcpus: f64,
    /// The account's applied value (false: the AWS default, the account's was not readable).
    pub applied: bool,
}

/// What a write to an S3 location met.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The probe object was put and deleted.
    Written,
    /// The bucket does not exist.
    NoSuchBucket,
    /// The credentials may not write there: the error.
    Denied(String),
    /// Anything else: the error.
    Failed(String),
    /// Written, but the probe object could not be deleted: its URL and the error.
    Left(String, String),
}

/// The AWS clients of the checks, from the SDK's standard configuration.
pub struct Aws {
    conf: aws_config::SdkConfig,
    s3: aether_ingest::S3Options,
    /// IAM and Service Quotas, signed by hand ([`crate::signed`]): one HTTP client each.
    iam: crate::signed::Api,
    quotas: crate::signed::Api,
}

impl Aws {
    /// The clients' configuration, in `region` when given (else the environment's).
    pub async fn from_env(region: Option<String>) -> Aws {
        let conf = crate::aws_loader(region)
            .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(2))
            .load()
            .await;
        let s3 = aether_ingest::S3Options {
            region: conf.region().map(|r| r.to_string()),
            endpoint: None,
        };
        let iam = crate::signed::Api::new(&conf, "iam", "AWS_ENDPOINT_URL_IAM", true);
        let quotas = crate::signed::Api::new(
            &conf,
            "servicequotas",
            "AWS_ENDPOINT_URL_SERVICE_QUOTAS",
            false,
        );
        Aws {
            conf,
            s3,
            iam,
            quotas,
        }
    }

    /// The region the calls go to (none: nothing said where).
    pub fn region(&self) -> Option<String> {
        self.conf.region().map(|r| r.to_string())
    }

    /// STS GetCallerIdentity.
    pub async fn caller(&self) -> Result<Caller> {
        let out = aws_sdk_sts::Client::new(&self.conf)
            .get_caller_identity()
            .send()
            .await
            .map_err(|e| sdk_error("STS", "GetCallerIdentity", e))?;
        Ok(Caller {
            account: out.account().unwrap_or_default().to_string(),
            arn: out.arn().unwrap_or_default().to_string(),
        })
    }

    /// IAM GetRole; `None` when there is no such role.
    pub async fn role(&self, name: &str) -> Result<Option<Role>> {
        let params = [("RoleName".to_string(), name.to_string())];
        let answer = self.iam("GetRole", &params).await?;
        Ok(answer.and_then(|x| x.find("Role").map(role_of)))
    }

    /// IAM GetInstanceProfile: the roles in it; `None` when there is no such profile.
    pub async fn instance_profile(&self, name: &str) -> Result<Option<Vec<Role>>> {
        let params = [("InstanceProfileName".to_string(), name.to_string())];
        let answer = self.iam("GetInstanceProfile", &params).await?;
        Ok(answer.map(|x| x.items("Roles").map(role_of).collect()))
    }

    /// An IAM call (global, signed by hand: [`crate::signed`]); `None` on `NoSuchEntity`.
    async fn iam(
        &self,
        action: &str,
        params: &[(String, String)],
    ) -> Result<Option<crate::signed::Node>> {
        match self.iam.query("2010-05-08", action, params).await {
            Ok(x) => Ok(Some(x)),
            Err(Ok(a)) if a.code == "NoSuchEntity" => Ok(None),
            Err(e) => Err(signed_error("IAM", action, e)),
        }
    }

    /// Put a small object under `url` (`s3://bucket/prefix`) and delete it.
    pub async fn probe_write(&self, url: &str) -> Probe {
        use object_store::ObjectStoreExt;
        let loc = match aether_ingest::source::s3_location(url, &self.s3) {
            Ok(l) => l,
            Err(e) => return Probe::Failed(e),
        };
        let name = format!(
            "aether-doctor-probe-{}-{}",
            std::process::id(),
            crate::now_ms()
        );
        let key = object_store::path::Path::from(
            format!("{}/{name}", loc.prefix).trim_start_matches('/'),
        );
        let body = object_store::PutPayload::from_static(b"aether doctor: a write probe\n");
        match loc.store.put(&key, body).await {
            Ok(_) => match loc.store.delete(&key).await {
                Ok(()) => Probe::Written,
                Err(e) => Probe::Left(format!("s3://{}/{key}", loc.bucket), e.to_string()),
            },
            Err(e) => {
                let text = e.to_string();
                if text.contains("NoSuchBucket") {
                    Probe::NoSuchBucket
                } else if text.contains("AccessDenied")
                    || text.contains("Forbidden")
                    || text.contains("403")
                {
                    Probe::Denied(text)
                } else {
                    Probe::Failed(text)
                }
            }
        }
    }

    /// EMR ListReleaseLabels: every release offered in the region.
    pub async fn release_labels(&self) -> Result<Vec<String>> {
        let mut pages = aws_sdk_emr::Client::new(&self.conf)
            .list_release_labels()
            .into_paginator()
            .send();
        let mut labels = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| sdk_error("EMR", "ListReleaseLabels", e))?;
            labels.extend(page.release_labels().iter().cloned());
        }
        Ok(labels)
    }

    /// EMR ListSupportedInstanceTypes: the instance types `release` runs on in the region, with
    /// their vCPUs.
    pub async fn instance_types(&self, release: &str) -> Result<Vec<(String, i32)>> {
        crate::emr::supported_instance_types(&aws_sdk_emr::Client::new(&self.conf), release).await
    }

    /// The EC2 facts of the network (subnets, VPCs, security groups, key pairs).
    pub fn ec2(&self) -> crate::ec2::Ec2 {
        crate::ec2::Ec2::new(&self.conf)
    }

    /// EMR DescribeSecurityConfiguration: whether the security configuration `name` exists.
    pub async fn security_configuration(&self, name: &str) -> Result<bool> {
        match aws_sdk_emr::Client::new(&self.conf)
            .describe_security_configuration()
            .name(name)
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e) => {
                let text = sdk_error("EMR", "DescribeSecurityConfiguration", e).to_string();
                if text.contains("InvalidRequest") || text.contains("does not exist") {
                    Ok(false)
                } else {
                    Err(PlatformError::Other(text))
                }
            }
        }
    }

    /// An EC2 quota (`quota_code`): the account's applied value, else the AWS default.
    pub async fn ec2_quota(&self, quota_code: &str) -> Result<Quota> {
        let api = &self.quotas;
        let ask = serde_json::json!({ "ServiceCode": "ec2", "QuotaCode": quota_code });
        const TARGET: &str = "ServiceQuotasV20190624";
        let (answer, applied) = match api.json(&format!("{TARGET}.GetServiceQuota"), &ask).await {
            Ok(v) => (v, true),
            Err(first) => {
                let first = signed_error("Service Quotas", "GetServiceQuota", first);
                let default = api
                    .json(&format!("{TARGET}.GetAWSDefaultServiceQuota"), &ask)
                    .await
                    .map_err(|_| first)?;
                (default, false)
            }
        };
        let q = answer
            .get("Quota")
            .filter(|q| q.is_object())
            .ok_or_else(|| {
                PlatformError::Other(format!(
                    "Service Quotas: no quota {quota_code} in the answer"
                ))
            })?;
        Ok(Quota {
            name: q
                .get("QuotaName")
                .and_then(|n| n.as_str())
                .unwrap_or(quota_code)
                .to_string(),
            vcpus: q.get("Value").and_then(|v| v.as_f64()).ok_or_else(|| {
                PlatformError::Other(format!("Service Quotas: quota {quota_code} has no value"))
            })?,
            applied,
        })
    }
}

/// A hand-signed call's failure as the SDK's are said: `<service> <call>: <code>: <message>`.
fn signed_error(
    service: &str,
    call: &str,
    e: std::result::Result<crate::signed::Answer, String>,
) -> PlatformError {
    PlatformError::Other(match e {
        Ok(a) => format!("{service} {call}: {}: {}", a.code, a.message),
        Err(why) => format!("{service} {call}: {why}"),
    })
}

fn role_of(r: &crate::signed::Node) -> Role {
    let text = |k: &str| r.text_of(k).unwrap_or_default().to_string();
    Role {
        name: text("RoleName"),
        arn: text("Arn"),
        trust_policy: text("AssumeRolePolicyDocument"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_types_count_against_their_quota() {
        assert_eq!(gpu_quota_code("g4dn.2xlarge"), Some(QUOTA_G_VT));
        assert_eq!(gpu_quota_code("g6e.xlarge"), Some(QUOTA_G_VT));
        assert_eq!(gpu_quota_code("vt1.3xlarge"), Some(QUOTA_G_VT));
        assert_eq!(gpu_quota_code("p4d.24xlarge"), Some(QUOTA_P));
        assert_eq!(gpu_quota_code("p3"), Some(QUOTA_P));
        assert_eq!(gpu_quota_code("m5d.xlarge"), None);
        assert_eq!(gpu_quota_code("r5.4xlarge"), None);
    }

    #[test]
    fn a_trust_policy_is_searched_encoded_or_not() {
        let r = Role {
            name: "EMR_DefaultRole".into(),
            arn: "arn:aws:iam::123456789012:role/EMR_DefaultRole".into(),
            trust_policy:
                "%7B%22Principal%22%3A%7B%22Service%22%3A%22elasticmapreduce.amazonaws.com%22%7D%7D"
                    .into(),
        };
        assert!(r.trusts("elasticmapreduce.amazonaws.com"));
        assert!(!r.trusts("ec2.amazonaws.com"));
    }
}
