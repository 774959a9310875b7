//! A probe that GETs a JSON health document and compares one field
//! (world `probe-handler`).
//!
//! Args (the pod annotation's value), all optional but `port` when the pod
//! declares more than one port:
//! `{"port": 8080, "path": "/health", "field": "status", "expected": "ok"}`
//!
//! `field` is a dot-separated path (`checks.db.status`); `expected` is any
//! JSON value. Success when the response is 2xx, its body is JSON and the
//! field equals `expected`; failure otherwise; unknown when the body is not
//! JSON. Plugin config (optional) sets the defaults for all pods:
//! `{"path": "/health", "field": "status", "expected": "ok"}`.

use serde::Deserialize;
use serde_json::Value;
use wasmlet_plugin_sdk::{config, export, PodAccess, ProbeHandler, ProbeRequest, ProbeResult};

/// The defaults a pod's args override.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Defaults {
    path: String,
    field: String,
    expected: Value,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            path: "/health".into(),
            field: "status".into(),
            expected: Value::from("ok"),
        }
    }
}

/// One pod's args.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Args {
    port: Option<u16>,
    path: Option<String>,
    field: Option<String>,
    expected: Option<Value>,
}

/// The JSON health probe.
#[derive(Debug, Default)]
pub struct JsonHealth {
    defaults: Defaults,
}

impl ProbeHandler for JsonHealth {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        self.defaults = config::parse(text)?;
        Ok(())
    }

    fn check(&self, request: &ProbeRequest, pod: &dyn PodAccess) -> ProbeResult {
        let args: Args = match config::parse_as("probe args", &request.args) {
            Ok(args) => args,
            Err(e) => return ProbeResult::failure(e),
        };
        let port = match (args.port, request.ports.as_slice()) {
            (Some(port), _) => port,
            (None, [only]) => *only,
            (None, ports) => {
                return ProbeResult::failure(format!(
                    "args need a \"port\": the pod declares {ports:?}"
                ))
            }
        };
        let path = args.path.as_deref().unwrap_or(&self.defaults.path);
        let field = args.field.as_deref().unwrap_or(&self.defaults.field);
        let expected = args.expected.as_ref().unwrap_or(&self.defaults.expected);

        let headers = [("Accept", "application/json")];
        let response = match pod.http_get(port, path, &headers, request.timeout_ms) {
            Ok(r) => r,
            Err(e) => return ProbeResult::failure(format!("GET :{port}{path}: {e}")),
        };
        if !(200..300).contains(&response.status) {
            return ProbeResult::failure(format!("GET :{port}{path}: HTTP {}", response.status));
        }
        let body: Value = match serde_json::from_slice(&response.body) {
            Ok(v) => v,
            Err(e) => {
                return ProbeResult::unknown(format!("GET :{port}{path}: body is not JSON: {e}"))
            }
        };
        match lookup(&body, field) {
            Some(v) if v == expected => ProbeResult::success(format!("{field} is {v}")),
            Some(v) => ProbeResult::failure(format!("{field} is {v}, expected {expected}")),
            None => ProbeResult::failure(format!("{field} is missing from the health document")),
        }
    }
}

/// Follows a dot-separated path through objects (and array indices).
fn lookup<'a>(mut value: &'a Value, path: &str) -> Option<&'a Value> {
    for key in path.split('.').filter(|k| !k.is_empty()) {
        value = match value {
            Value::Object(map) => map.get(key)?,
            Value::Array(items) => items.get(key.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(value)
}

export!(JsonHealth as probe);

#[cfg(test)]
mod tests;
