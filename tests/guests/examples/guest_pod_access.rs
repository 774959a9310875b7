//! A probe plugin that reaches what the probe's args name, for the pod-access scope tests:
//! `{"http": PORT}`, `{"tcp": PORT}` or `{"exec": "CONTAINER"}`. It answers success when
//! the host let the call through and failure with the host's refusal otherwise, so a test
//! reads the scope's decision from the probe result.

use serde::Deserialize;
use wasmlet_plugin_sdk::{config, export, PodAccess, ProbeHandler, ProbeRequest, ProbeResult};

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Args {
    http: Option<u16>,
    tcp: Option<u16>,
    exec: Option<String>,
}

#[derive(Default)]
pub struct Reach;

impl ProbeHandler for Reach {
    fn check(&self, request: &ProbeRequest, pod: &dyn PodAccess) -> ProbeResult {
        let args: Args = match config::parse_as("probe args", &request.args) {
            Ok(args) => args,
            Err(e) => return ProbeResult::failure(e),
        };
        let reached = if let Some(port) = args.http {
            pod.http_get(port, "/", &[], 1000)
                .map(|r| format!("http {}", r.status))
        } else if let Some(port) = args.tcp {
            pod.tcp_connect(port, 1000).map(|()| "tcp".to_string())
        } else if let Some(container) = &args.exec {
            pod.exec(container, &["true"], 1000)
                .map(|o| format!("exec exit {}", o.exit_code))
        } else {
            Err("the args name nothing to reach".to_string())
        };
        match reached {
            Ok(what) => ProbeResult::success(what),
            Err(refused) => ProbeResult::failure(refused),
        }
    }
}

export!(Reach as probe);
