use core::marker::PhantomData;

use super::state;
use crate::bindings::probe::wasmlet::plugin::{pod_access, types as wit};
use crate::bindings::probe::Guest;
use crate::{types, PodAccess, ProbeHandler};

/// Implements the generated `Guest` for a [`ProbeHandler`].
pub struct ProbeGuest<T>(PhantomData<T>);

impl<T: ProbeHandler + Default + 'static> Guest for ProbeGuest<T> {
    fn configure(config: String) -> Result<(), String> {
        state::reset(|p: &mut T| p.configure(&config))
    }

    fn self_check() -> Result<(), String> {
        state::with(|p: &mut T| p.self_check())
    }

    fn check(request: wit::ProbeRequest) -> wit::ProbeResult {
        let request = types::ProbeRequest {
            args: request.args,
            timeout_ms: request.timeout_ms,
            pod_ip: request.pod_ip,
            ports: request.ports,
            containers: request.containers,
            container: request.container,
            kind: match request.kind {
                wit::ProbeKind::Liveness => types::ProbeKind::Liveness,
                wit::ProbeKind::Readiness => types::ProbeKind::Readiness,
                wit::ProbeKind::Startup => types::ProbeKind::Startup,
            },
        };
        let result = state::with(|p: &mut T| p.check(&request, &ProbeHost));
        wit::ProbeResult {
            outcome: match result.outcome {
                types::ProbeOutcome::Success => wit::ProbeOutcome::Success,
                types::ProbeOutcome::Failure => wit::ProbeOutcome::Failure,
                types::ProbeOutcome::Unknown => wit::ProbeOutcome::Unknown,
            },
            message: result.message,
        }
    }
}

/// [`PodAccess`] through the `pod-access` import.
struct ProbeHost;

impl PodAccess for ProbeHost {
    fn http_get(
        &self,
        port: u16,
        path: &str,
        headers: &[(&str, &str)],
        timeout_ms: u32,
    ) -> Result<types::HttpResponse, String> {
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        pod_access::http_get(port, path, &headers, timeout_ms).map(http_response)
    }

    fn tcp_connect(&self, port: u16, timeout_ms: u32) -> Result<(), String> {
        pod_access::tcp_connect(port, timeout_ms)
    }

    fn exec(
        &self,
        container: &str,
        command: &[&str],
        timeout_ms: u32,
    ) -> Result<types::ExecOutput, String> {
        let command: Vec<String> = command.iter().map(|s| s.to_string()).collect();
        pod_access::exec(container, &command, timeout_ms).map(exec_output)
    }

    fn sleep(&self, _ms: u32) -> Result<(), String> {
        Err("sleep is not available to probes: return and let the next period run".into())
    }
}

fn http_response(r: wit::HttpResponse) -> types::HttpResponse {
    types::HttpResponse {
        status: r.status,
        headers: r.headers,
        body: r.body,
    }
}

fn exec_output(o: wit::ExecOutput) -> types::ExecOutput {
    types::ExecOutput {
        exit_code: o.exit_code,
        stdout: o.stdout,
        stderr: o.stderr,
    }
}
