//! The EC2 facts `aether doctor` checks a cluster's network against: subnets, VPCs and their DNS
//! attributes, security groups, key pairs — five read-only calls of EC2's Query API (a form
//! POST answered in XML), signed with SigV4 (aws-sigv4) with the credentials, region and
//! endpoint of the SDK's standard configuration (`AWS_ENDPOINT_URL_EC2`, `AWS_ENDPOINT_URL`, a
//! profile's `endpoint_url`), so they run unchanged against an emulator.
//!
//! Not aws-sdk-ec2: that crate alone takes longer to compile than every other AWS crate aether
//! uses together, for these five calls (see docs/performance.md on build time).

use crate::{PlatformError, Result};
use aws_credential_types::provider::ProvideCredentials;

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
    conf: aws_config::SdkConfig,
    http: reqwest::Client,
}

/// An error EC2 answered: its code (`InvalidSubnetID.NotFound`) and message.
#[derive(Debug)]
struct Answer {
    code: String,
    message: String,
}

impl Ec2 {
    pub fn new(conf: &aws_config::SdkConfig) -> Ec2 {
        Ec2 {
            conf: conf.clone(),
            http: reqwest::Client::new(),
        }
    }

    fn endpoint(&self, region: &str) -> String {
        std::env::var("AWS_ENDPOINT_URL_EC2")
            .ok()
            .filter(|e| !e.is_empty())
            .or_else(|| self.conf.endpoint_url().map(String::from))
            .unwrap_or_else(|| {
                let suffix = if region.starts_with("cn-") {
                    "amazonaws.com.cn"
                } else {
                    "amazonaws.com"
                };
                format!("https://ec2.{region}.{suffix}")
            })
    }

    /// One call: its XML answer, or EC2's error (`Err(Ok(answer))`), or a failure to ask.
    async fn call(
        &self,
        action: &str,
        params: &[(String, String)],
    ) -> std::result::Result<Node, std::result::Result<Answer, String>> {
        let region = self
            .conf
            .region()
            .map(|r| r.to_string())
            .ok_or_else(|| Err("no AWS region".to_string()))?;
        let creds = self
            .conf
            .credentials_provider()
            .ok_or_else(|| Err("no AWS credentials".to_string()))?
            .provide_credentials()
            .await
            .map_err(|e| Err(format!("credentials: {e}")))?;
        let url = format!("{}/", self.endpoint(&region).trim_end_matches('/'));
        let host = url
            .split("://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .unwrap_or("")
            .to_string();
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("Action", action);
        form.append_pair("Version", VERSION);
        for (k, v) in params {
            form.append_pair(k, v);
        }
        let body = form.finish();
        const FORM: &str = "application/x-www-form-urlencoded; charset=utf-8";
        let identity = creds.into();
        let signing = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&region)
            .name("ec2")
            .time(std::time::SystemTime::now())
            .settings(aws_sigv4::http_request::SigningSettings::default())
            .build()
            .map_err(|e| Err(format!("signing: {e}")))?
            .into();
        let signable = aws_sigv4::http_request::SignableRequest::new(
            "POST",
            url.as_str(),
            [("content-type", FORM), ("host", host.as_str())].into_iter(),
            aws_sigv4::http_request::SignableBody::Bytes(body.as_bytes()),
        )
        .map_err(|e| Err(format!("signing: {e}")))?;
        let (instructions, _) = aws_sigv4::http_request::sign(signable, &signing)
            .map_err(|e| Err(format!("signing: {e}")))?
            .into_parts();
        let mut req = self
            .http
            .post(&url)
            .header("content-type", FORM)
            .timeout(std::time::Duration::from_secs(30));
        for (k, v) in instructions.headers() {
            req = req.header(k, v);
        }
        let resp = req
            .body(body)
            .send()
            .await
            .map_err(|e| Err(format!("{url}: {e}")))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| Err(format!("{url}: {e}")))?;
        let xml = parse(&text).map_err(|e| Err(format!("{url}: {e}: {text:.200}")))?;
        if !status.is_success() {
            let err = xml.find("Error");
            return Err(Ok(Answer {
                code: err
                    .and_then(|e| e.text_of("Code"))
                    .unwrap_or(status.as_str())
                    .to_string(),
                message: err
                    .and_then(|e| e.text_of("Message"))
                    .unwrap_or("")
                    .to_string(),
            }));
        }
        Ok(xml)
    }

    /// A call whose "not found" error code means `None`.
    async fn lookup(
        &self,
        action: &str,
        params: &[(String, String)],
        not_found: &str,
    ) -> Result<Option<Node>> {
        match self.call(action, params).await {
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

/// An XML element: its local name, text and children.
#[derive(Clone, Debug, Default, PartialEq)]
struct Node {
    name: String,
    text: String,
    children: Vec<Node>,
}

impl Node {
    fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.name == name)
    }

    fn text_of(&self, name: &str) -> Option<&str> {
        self.child(name).map(|c| c.text.as_str())
    }

    /// The first element named `name`, depth first (itself included).
    fn find(&self, name: &str) -> Option<&Node> {
        if self.name == name {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(name))
    }

    /// The `<item>`s of the list element `set`.
    fn items<'a>(&'a self, set: &str) -> impl Iterator<Item = &'a Node> + 'a {
        self.find(set)
            .into_iter()
            .flat_map(|s| s.children.iter().filter(|c| c.name == "item"))
    }
}

/// An XML document as a tree of [`Node`]s (namespaces dropped, entities resolved).
fn parse(xml: &str) -> std::result::Result<Node, String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut stack = vec![Node::default()];
    let name_of = |e: &quick_xml::events::BytesStart| {
        String::from_utf8_lossy(e.local_name().as_ref()).into_owned()
    };
    loop {
        match reader.read_event().map_err(|e| format!("not XML: {e}"))? {
            Event::Start(e) => stack.push(Node {
                name: name_of(&e),
                ..Default::default()
            }),
            Event::Empty(e) => {
                let n = Node {
                    name: name_of(&e),
                    ..Default::default()
                };
                if let Some(top) = stack.last_mut() {
                    top.children.push(n);
                }
            }
            Event::End(_) => {
                let mut n = stack.pop().ok_or("an end tag without a start")?;
                // the text around the children (indentation) and around entities, trimmed once
                n.text = n.text.trim().to_string();
                match stack.last_mut() {
                    Some(top) => top.children.push(n),
                    None => return Err("an end tag without a start".into()),
                }
            }
            Event::Text(t) => {
                let t = t.decode().map_err(|e| e.to_string())?;
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&t);
                }
            }
            Event::CData(t) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Event::GeneralRef(r) => {
                let name = r.decode().map_err(|e| e.to_string())?;
                let t = quick_xml::escape::unescape(&format!("&{name};"))
                    .map_err(|e| e.to_string())?
                    .into_owned();
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&t);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    match (stack.pop(), stack.is_empty()) {
        (Some(root), true) => root
            .children
            .into_iter()
            .next()
            .ok_or_else(|| "an empty document".to_string()),
        _ => Err("an element is not closed".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
