//! Checks a Kubernetes object against a CustomResourceDefinition's OpenAPI v3 schema, the
//! structural part the API server enforces: types, required fields, unknown fields (pruned or
//! refused), enums, patterns, lengths, item and property counts, bounds, `anyOf`,
//! `x-kubernetes-int-or-string` and `x-kubernetes-preserve-unknown-fields`. CEL rules
//! (`x-kubernetes-validations`) are not evaluated, except the common "not empty" one
//! (`self != ''`); the rest are counted so a caller can say so.

use serde_json::Value;

/// What a check found: every violation with its path, and how many CEL rules were not run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checked {
    pub errors: Vec<String>,
    pub cel_skipped: usize,
}

/// The schema of `version` (e.g. `v1`) in a CRD document.
pub fn crd_schema<'a>(crd: &'a Value, version: &str) -> Option<&'a Value> {
    crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == version)
        .map(|v| &v["schema"]["openAPIV3Schema"])
}

/// Check `obj` against the CRD `crd` at the version its `apiVersion` names, and its kind.
pub fn check_object(obj: &Value, crd: &Value) -> Checked {
    let mut out = Checked::default();
    let group = crd["spec"]["group"].as_str().unwrap_or("");
    let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or("");
    let api = obj["apiVersion"].as_str().unwrap_or("");
    let Some(version) = api.strip_prefix(&format!("{group}/")) else {
        out.errors
            .push(format!("apiVersion: {api:?} is not of the group {group:?}"));
        return out;
    };
    if obj["kind"] != kind {
        out.errors
            .push(format!("kind: {} is not {kind:?}", obj["kind"]));
    }
    let Some(schema) = crd_schema(crd, version) else {
        out.errors
            .push(format!("apiVersion: the CRD has no version {version:?}"));
        return out;
    };
    if obj["metadata"]["name"].as_str().is_none_or(str::is_empty) {
        out.errors.push("metadata.name: required".into());
    }
    check(obj, schema, "", &mut out);
    out
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Check `v` against `schema` at `path`, adding what is wrong to `out`.
pub fn check(v: &Value, schema: &Value, path: &str, out: &mut Checked) {
    let at = if path.is_empty() { "(root)" } else { path };
    let err = |out: &mut Checked, m: String| out.errors.push(format!("{at}: {m}"));
    if let Some(any) = schema["anyOf"].as_array() {
        let ok = any.iter().any(|s| {
            let mut c = Checked::default();
            check(v, s, path, &mut c);
            c.errors.is_empty()
        });
        if !ok {
            err(out, "matches none of its anyOf schemas".into());
        }
    }
    let int_or_string = schema["x-kubernetes-int-or-string"] == true;
    if let Some(t) = schema["type"].as_str() {
        let actual = type_name(v);
        let fits = actual == t
            || (t == "number" && actual == "integer")
            || (int_or_string && (actual == "integer" || actual == "string"));
        if !fits {
            err(out, format!("is {actual}, the schema wants {t}"));
            return;
        }
    } else if int_or_string && !matches!(type_name(v), "integer" | "string") {
        err(
            out,
            format!(
                "is {}, the schema wants an integer or a string",
                type_name(v)
            ),
        );
        return;
    }
    if let Some(e) = schema["enum"].as_array()
        && !e.contains(v)
    {
        err(
            out,
            format!(
                "{v} is not one of {}",
                e.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    if let Some(rules) = schema["x-kubernetes-validations"].as_array() {
        for r in rules {
            match r["rule"].as_str() {
                Some("self != ''") => {
                    if v == "" {
                        err(
                            out,
                            r["message"]
                                .as_str()
                                .unwrap_or("may not be empty")
                                .to_string(),
                        );
                    }
                }
                _ => out.cel_skipped += 1,
            }
        }
    }
    match v {
        Value::String(s) => {
            let n = s.chars().count() as u64;
            if let Some(m) = schema["maxLength"].as_u64()
                && n > m
            {
                err(out, format!("longer than {m} characters"));
            }
            if let Some(m) = schema["minLength"].as_u64()
                && n < m
            {
                err(out, format!("shorter than {m} characters"));
            }
            if let Some(p) = schema["pattern"].as_str() {
                match regex::Regex::new(p) {
                    Ok(re) if !re.is_match(s) => {
                        err(out, format!("{s:?} does not match the pattern {p}"))
                    }
                    Ok(_) => {}
                    Err(e) => err(
                        out,
                        format!("the schema's pattern {p} does not compile: {e}"),
                    ),
                }
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if let Some(m) = schema["maximum"].as_f64()
                && x > m
            {
                err(out, format!("{x} is above {m}"));
            }
            if let Some(m) = schema["minimum"].as_f64()
                && x < m
            {
                err(out, format!("{x} is below {m}"));
            }
        }
        Value::Array(items) => {
            if let Some(m) = schema["maxItems"].as_u64()
                && items.len() as u64 > m
            {
                err(out, format!("more than {m} items"));
            }
            if let Some(m) = schema["minItems"].as_u64()
                && (items.len() as u64) < m
            {
                err(out, format!("fewer than {m} items"));
            }
            if schema["items"].is_object() {
                for (i, item) in items.iter().enumerate() {
                    check(item, &schema["items"], &format!("{path}[{i}]"), out);
                }
            }
        }
        Value::Object(map) => {
            if let Some(req) = schema["required"].as_array() {
                for r in req.iter().filter_map(|r| r.as_str()) {
                    if !map.contains_key(r) {
                        out.errors.push(format!("{}: required", join(path, r)));
                    }
                }
            }
            if let Some(m) = schema["maxProperties"].as_u64()
                && map.len() as u64 > m
            {
                err(out, format!("more than {m} properties"));
            }
            let props = schema["properties"].as_object();
            let preserve = schema["x-kubernetes-preserve-unknown-fields"] == true;
            for (k, x) in map {
                match props.and_then(|p| p.get(k)) {
                    Some(s) => check(x, s, &join(path, k), out),
                    None => match &schema["additionalProperties"] {
                        Value::Object(_) => {
                            check(x, &schema["additionalProperties"], &join(path, k), out)
                        }
                        Value::Bool(true) => {}
                        // an unknown field: the API server prunes it, so it is a mistake here
                        _ if !preserve && props.is_some() => {
                            out.errors.push(format!("{}: unknown field", join(path, k)))
                        }
                        _ => {}
                    },
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_rule_catches_its_violation() {
        let s = json!({"type": "object", "required": ["a"], "properties": {
            "a": {"type": "string", "pattern": "^[0-9]+s$", "x-kubernetes-validations": [{"rule": "self != ''", "message": "a may not be empty"}, {"rule": "self.size() < 9"}]},
            "b": {"type": "array", "maxItems": 1, "items": {"type": "string", "enum": ["x", "y"]}},
            "c": {"type": "integer", "minimum": 1},
            "d": {"x-kubernetes-int-or-string": true},
            "e": {"type": "object", "additionalProperties": {"type": "string"}}
        }});
        let run = |v: Value| {
            let mut c = Checked::default();
            check(&v, &s, "", &mut c);
            c
        };
        let ok = run(json!({"a": "30s", "b": ["x"], "c": 2, "d": "10%", "e": {"k": "v"}}));
        assert_eq!(ok.errors, Vec::<String>::new());
        assert_eq!(ok.cel_skipped, 1);
        let bad = run(json!({"b": ["x", "z"], "c": 0, "d": true, "e": {"k": 1}, "f": 1}));
        for want in [
            "a: required",
            "b: more than 1 items",
            "b[1]: \"z\" is not one of",
            "c: 0 is below 1",
            "d: is boolean",
            "e.k: is integer",
            "f: unknown field",
        ] {
            assert!(
                bad.errors
                    .iter()
                    .any(|e| e.starts_with(want) || e.contains(want)),
                "{want}: {:?}",
                bad.errors
            );
        }
        assert!(run(json!({"a": "soon"})).errors[0].contains("does not match the pattern"));
        assert!(
            run(json!({"a": ""}))
                .errors
                .iter()
                .any(|e| e.contains("a may not be empty"))
        );
    }
}
