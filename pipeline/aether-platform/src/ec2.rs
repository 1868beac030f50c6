//! The EC2 facts `aether doctor` checks a cluster's network against: subnets, VPCs and their DNS
//! attributes, security groups, key pairs — five read-only calls of EC2's Query API, signed by
//! hand ([`crate::signed`]: not aws-sdk-ec2).

use crate::signed::{Api, Node};
use crate::{PlatformError, Result};

/// EC2's Query API version.
const VERSION: &str = "2016-11-15";

/// A subnet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subnet {
    pub id: String,
    pub vpc_id: String,
    pub availability_zone: String,
    /// Whether instances get a public IP (a public subnet, as EMR tells them apart by route;
    /// this is the usual sign).
    pub map_public_ip: bool,
}

/// A VPC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vpc {
    pub id: String,
    pub is_default: bool,
}

/// A security group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecurityGroup {
    pub id: String,
    pub name: String,
    pub vpc_id: String,
}

/// An EC2 client of the SDK's configuration.
pub struct Ec2 {
    api: Api,
}

impl Ec2 {
    pub fn new(conf: &aws_config::SdkConfig) -> Ec2 {
        Ec2 {
            api: Api::new(conf, "ec2", "AWS_ENDPOINT_URL_EC2", false),
        }
    }

    /// A call whose "not found" error code means `None`.
    async fn lookup(
        &self,
        action: &str,
        params: &[(String, String)],
        not_found: &str,
    ) -> Result<Option<Node>> {
        match self.api.query(VERSION, action, params).await {
            Ok(x) => Ok(Some(x)),
            Err(Ok(a)) if a.code == not_found => Ok(None),
            Err(Ok(a)) => Err(PlatformError::Other(format!(
                "EC2 {action}: {}: {}",
                a.code, a.message
            ))),
            Err(Err(e)) => Err(PlatformError::Other(format!("EC2 {action}: {e}"))),
        }
    }

    /// DescribeSubnets of one subnet; `None` when it does not exist.
    pub async fn subnet(&self, id: &str) -> Result<Option<Subnet>> {
        let x = self
            .lookup(
                "DescribeSubnets",
                &[("SubnetId.1".into(), id.into())],
                "InvalidSubnetID.NotFound",
            )
            .await?;
        Ok(x.and_then(|x| {
            x.items("subnetSet").next().map(|i| Subnet {
                id: i.text_of("subnetId").unwrap_or(id).to_string(),
                vpc_id: i.text_of("vpcId").unwrap_or("").to_string(),
                availability_zone: i.text_of("availabilityZone").unwrap_or("").to_string(),
                map_public_ip: i.text_of("mapPublicIpOnLaunch") == Some("true"),
            })
        }))
    }

    /// DescribeVpcs: the region's default VPC, if any.
    pub async fn default_vpc(&self) -> Result<Option<Vpc>> {
        let x = self
            .lookup(
                "DescribeVpcs",
                &[
                    ("Filter.1.Name".into(), "is-default".into()),
                    ("Filter.1.Value.1".into(), "true".into()),
                ],
                "",
            )
            .await?;
        Ok(x.and_then(|x| {
            x.items("vpcSet").next().map(|i| Vpc {
                id: i.text_of("vpcId").unwrap_or("").to_string(),
                is_default: i.text_of("isDefault") == Some("true"),
            })
        }))
    }

    /// DescribeVpcAttribute: whether `attribute` (`enableDnsHostnames`, `enableDnsSupport`)
    /// is on.
    pub async fn vpc_attribute(&self, vpc_id: &str, attribute: &str) -> Result<bool> {
        let x = self
            .lookup(
                "DescribeVpcAttribute",
                &[
                    ("VpcId".into(), vpc_id.into()),
                    ("Attribute".into(), attribute.into()),
                ],
                "",
            )
            .await?;
        Ok(x.and_then(|x| {
            x.find(attribute)
                .and_then(|a| a.text_of("value").map(String::from))
        })
        .as_deref()
            == Some("true"))
    }

    /// DescribeSecurityGroups of one group; `None` when it does not exist.
    pub async fn security_group(&self, id: &str) -> Result<Option<SecurityGroup>> {
        let x = self
            .lookup(
                "DescribeSecurityGroups",
                &[("GroupId.1".into(), id.into())],
                "InvalidGroup.NotFound",
            )
            .await?;
        Ok(x.and_then(|x| {
            x.items("securityGroupInfo").next().map(|i| SecurityGroup {
                id: i.text_of("groupId").unwrap_or(id).to_string(),
                name: i.text_of("groupName").unwrap_or("").to_string(),
                vpc_id: i.text_of("vpcId").unwrap_or("").to_string(),
            })
        }))
    }

    /// DescribeKeyPairs of one key pair: whether it exists.
    pub async fn key_pair_exists(&self, name: &str) -> Result<bool> {
        Ok(self
            .lookup(
                "DescribeKeyPairs",
                &[("KeyName.1".into(), name.into())],
                "InvalidKeyPair.NotFound",
            )
            .await?
            .is_some_and(|x| x.items("keySet").next().is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signed::parse;

    #[test]
    fn ec2_answers_as_trees() {
        let x = parse(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<DescribeSubnetsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>7a62c49f</requestId>
    <subnetSet>
        <item>
            <subnetId>subnet-0a1b2c3d</subnetId>
            <vpcId>vpc-1a2b3c4d</vpcId>
            <availabilityZone>us-east-1a</availabilityZone>
            <mapPublicIpOnLaunch>false</mapPublicIpOnLaunch>
            <tagSet><item><key>Name</key><value>a &amp; b</value></item></tagSet>
        </item>
    </subnetSet>
</DescribeSubnetsResponse>"#,
        )
        .unwrap();
        assert_eq!(x.name, "DescribeSubnetsResponse");
        let items: Vec<&Node> = x.items("subnetSet").collect();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].text_of("vpcId"), Some("vpc-1a2b3c4d"));
        assert_eq!(
            items[0].find("tagSet").unwrap().children[0].text_of("value"),
            Some("a & b")
        );
        let e = parse(
            "<Response><Errors><Error><Code>InvalidSubnetID.NotFound</Code>\
             <Message>The subnet ID 'subnet-1' does not exist</Message></Error></Errors>\
             <RequestID>r</RequestID></Response>",
        )
        .unwrap();
        assert_eq!(
            e.find("Error").unwrap().text_of("Code"),
            Some("InvalidSubnetID.NotFound")
        );
        assert!(parse("<a><b></a>").is_err());
        assert!(parse("not xml at all").is_err());
    }
}
