//! AWS calls signed by hand: the few read-only calls of EC2, IAM and Service Quotas that `aether
//! doctor` makes, sent with SigV4 (aws-sigv4) and the credentials, region and endpoint of the
//! SDK's standard configuration (`AWS_ENDPOINT_URL_<SERVICE>`, `AWS_ENDPOINT_URL`, a profile's
//! `endpoint_url`), so that they run unchanged against an emulator.
//!
//! Why not the SDK's crates: aws-sdk-ec2 alone takes longer to compile than every other AWS crate
//! aether uses together, aws-sdk-iam two minutes of CPU, each for two to five calls
//! (docs/performance.md, "Build time").

use aws_credential_types::provider::ProvideCredentials;

/// An error the service answered: its code (`NoSuchEntity`, `InvalidSubnetID.NotFound`) and
/// message.
#[derive(Debug)]
pub(crate) struct Answer {
    pub code: String,
    pub message: String,
}

/// What a call gives: the answer, the service's error (`Err(Ok(answer))`), or a failure to ask
/// (`Err(Err(why))`).
pub(crate) type Reply<T> = std::result::Result<T, std::result::Result<Answer, String>>;

/// One AWS API, as the SDK's configuration reaches it.
pub(crate) struct Api {
    conf: aws_config::SdkConfig,
    http: reqwest::Client,
    /// The signing name and endpoint prefix: `ec2`, `iam`, `servicequotas`.
    service: &'static str,
    /// The service's own endpoint variable: `AWS_ENDPOINT_URL_EC2`.
    endpoint_env: &'static str,
    /// A global service (IAM): one endpoint per partition, signed for its first region.
    global: bool,
}

impl Api {
    pub fn new(
        conf: &aws_config::SdkConfig,
        service: &'static str,
        endpoint_env: &'static str,
        global: bool,
    ) -> Api {
        Api {
            conf: conf.clone(),
            http: reqwest::Client::new(),
            service,
            endpoint_env,
            global,
        }
    }

    /// (endpoint URL, signing region) for the configuration's `region`.
    fn endpoint(&self, region: &str) -> (String, String) {
        let china = region.starts_with("cn-");
        let suffix = if china {
            "amazonaws.com.cn"
        } else {
            "amazonaws.com"
        };
        let signing_region = match (self.global, china) {
            (true, true) => "cn-north-1".to_string(),
            (true, false) => "us-east-1".to_string(),
            (false, _) => region.to_string(),
        };
        let url = std::env::var(self.endpoint_env)
            .ok()
            .filter(|e| !e.is_empty())
            .or_else(|| self.conf.endpoint_url().map(String::from))
            .unwrap_or_else(|| match (self.global, china) {
                (true, true) => format!("https://{}.cn-north-1.{suffix}", self.service),
                (true, false) => format!("https://{}.{suffix}", self.service),
                (false, _) => format!("https://{}.{region}.{suffix}", self.service),
            });
        (url, signing_region)
    }

    /// POST `body` (of `content_type`, with `headers`) to the service's endpoint, signed: the
    /// HTTP status and the answer's text.
    async fn post(
        &self,
        content_type: &str,
        headers: &[(&str, &str)],
        body: String,
    ) -> std::result::Result<(reqwest::StatusCode, String), String> {
        let region = self
            .conf
            .region()
            .map(|r| r.to_string())
            .ok_or("no AWS region")?;
        let creds = self
            .conf
            .credentials_provider()
            .ok_or("no AWS credentials")?
            .provide_credentials()
            .await
            .map_err(|e| format!("credentials: {e}"))?;
        let (endpoint, signing_region) = self.endpoint(&region);
        let url = format!("{}/", endpoint.trim_end_matches('/'));
        let host = url
            .split("://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .unwrap_or("")
            .to_string();
        let identity = creds.into();
        let signing = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&signing_region)
            .name(self.service)
            .time(std::time::SystemTime::now())
            .settings(aws_sigv4::http_request::SigningSettings::default())
            .build()
            .map_err(|e| format!("signing: {e}"))?
            .into();
        let mut all = vec![("content-type", content_type), ("host", host.as_str())];
        all.extend_from_slice(headers);
        let signable = aws_sigv4::http_request::SignableRequest::new(
            "POST",
            url.as_str(),
            all.iter().copied(),
            aws_sigv4::http_request::SignableBody::Bytes(body.as_bytes()),
        )
        .map_err(|e| format!("signing: {e}"))?;
        let (instructions, _) = aws_sigv4::http_request::sign(signable, &signing)
            .map_err(|e| format!("signing: {e}"))?
            .into_parts();
        let mut req = self
            .http
            .post(&url)
            .header("content-type", content_type)
            .timeout(std::time::Duration::from_secs(30));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        for (k, v) in instructions.headers() {
            req = req.header(k, v);
        }
        let resp = req
            .body(body)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| format!("{url}: {e}"))?;
        Ok((status, text))
    }

    /// A call of the Query protocol (EC2, IAM): a form POST of `Action`, `Version` and
    /// `params`, answered in XML; an error answer's `<Error><Code>` and `<Message>`.
    pub async fn query(
        &self,
        version: &str,
        action: &str,
        params: &[(String, String)],
    ) -> Reply<Node> {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("Action", action);
        form.append_pair("Version", version);
        for (k, v) in params {
            form.append_pair(k, v);
        }
        const FORM: &str = "application/x-www-form-urlencoded; charset=utf-8";
        let (status, text) = self.post(FORM, &[], form.finish()).await.map_err(Err)?;
        let xml = parse(&text).map_err(|e| Err(format!("{e}: {text:.200}")))?;
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

    /// A call of the JSON 1.1 protocol (Service Quotas): `X-Amz-Target: <target>`, a JSON body
    /// and answer; an error answer's `__type` (its last `#` part) and `message`.
    pub async fn json(&self, target: &str, body: &serde_json::Value) -> Reply<serde_json::Value> {
        const JSON: &str = "application/x-amz-json-1.1";
        let (status, text) = self
            .post(JSON, &[("x-amz-target", target)], body.to_string())
            .await
            .map_err(Err)?;
        let v: serde_json::Value = if text.trim().is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_str(&text).map_err(|e| Err(format!("not JSON: {e}: {text:.200}")))?
        };
        if !status.is_success() {
            let field = |k: &str| v.get(k).and_then(|x| x.as_str());
            let code = field("__type").unwrap_or(status.as_str());
            return Err(Ok(Answer {
                code: code.rsplit('#').next().unwrap_or(code).to_string(),
                message: field("message")
                    .or_else(|| field("Message"))
                    .unwrap_or("")
                    .to_string(),
            }));
        }
        Ok(v)
    }
}

/// An XML element: its local name, text and children.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Node {
    pub name: String,
    pub text: String,
    pub children: Vec<Node>,
}

impl Node {
    pub fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.name == name)
    }

    pub fn text_of(&self, name: &str) -> Option<&str> {
        self.child(name).map(|c| c.text.as_str())
    }

    /// The first element named `name`, depth first (itself included).
    pub fn find(&self, name: &str) -> Option<&Node> {
        if self.name == name {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(name))
    }

    /// The entries of the list element `set`: EC2's `<item>`s, IAM's `<member>`s.
    pub fn items<'a>(&'a self, set: &str) -> impl Iterator<Item = &'a Node> + 'a {
        self.find(set).into_iter().flat_map(|s| {
            s.children
                .iter()
                .filter(|c| c.name == "item" || c.name == "member")
        })
    }
}

/// An XML document as a tree of [`Node`]s (namespaces dropped, entities resolved).
pub(crate) fn parse(xml: &str) -> std::result::Result<Node, String> {
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

    /// IAM's answers (as IAM and moto write them): a role list, an error.
    #[test]
    fn query_answers_as_trees() {
        let x = parse(
            r#"<GetInstanceProfileResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/">
  <GetInstanceProfileResult><InstanceProfile>
    <InstanceProfileName>EMR_EC2_DefaultRole</InstanceProfileName>
    <Roles>
      <member><RoleName>EMR_EC2_DefaultRole</RoleName><Arn>arn:aws:iam::1:role/EMR_EC2_DefaultRole</Arn>
        <AssumeRolePolicyDocument>%7B%22Statement%22%3A%5B%5D%7D</AssumeRolePolicyDocument></member>
      <member><RoleName>second</RoleName></member>
    </Roles>
  </InstanceProfile></GetInstanceProfileResult>
</GetInstanceProfileResponse>"#,
        )
        .unwrap();
        let roles: Vec<_> = x
            .items("Roles")
            .map(|m| m.text_of("RoleName").unwrap_or(""))
            .collect();
        assert_eq!(roles, ["EMR_EC2_DefaultRole", "second"]);
        let first = x.items("Roles").next().unwrap();
        assert_eq!(
            first.text_of("AssumeRolePolicyDocument"),
            Some("%7B%22Statement%22%3A%5B%5D%7D")
        );
        let e = parse(
            "<ErrorResponse><Error><Type>Sender</Type><Code>NoSuchEntity</Code>\
             <Message>The role with name x cannot be found.</Message></Error></ErrorResponse>",
        )
        .unwrap();
        let err = e.find("Error").unwrap();
        assert_eq!(err.text_of("Code"), Some("NoSuchEntity"));
    }

    /// A global service is signed for its partition's first region; a regional one for the
    /// configuration's; the service's own endpoint variable wins over the rest.
    #[test]
    fn endpoints_and_signing_regions() {
        let conf = aws_config::SdkConfig::builder().build();
        let iam = Api::new(&conf, "iam", "AETHER_TEST_NO_SUCH_VAR", true);
        assert_eq!(
            iam.endpoint("eu-west-1"),
            ("https://iam.amazonaws.com".into(), "us-east-1".into())
        );
        assert_eq!(
            iam.endpoint("cn-northwest-1"),
            (
                "https://iam.cn-north-1.amazonaws.com.cn".into(),
                "cn-north-1".into()
            )
        );
        let sq = Api::new(&conf, "servicequotas", "AETHER_TEST_NO_SUCH_VAR", false);
        assert_eq!(
            sq.endpoint("eu-west-1"),
            (
                "https://servicequotas.eu-west-1.amazonaws.com".into(),
                "eu-west-1".into()
            )
        );
        let conf = aws_config::SdkConfig::builder()
            .endpoint_url("http://127.0.0.1:5000")
            .build();
        let iam = Api::new(&conf, "iam", "AETHER_TEST_NO_SUCH_VAR", true);
        assert_eq!(iam.endpoint("us-west-2").0, "http://127.0.0.1:5000");
    }
}
