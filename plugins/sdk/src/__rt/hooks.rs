use core::marker::PhantomData;

use super::state;
use crate::bindings::hooks::wasmlet::plugin::{pod_access, types as wit};
use crate::bindings::hooks::Guest;
use crate::{types, LifecycleHooks, PodAccess};

/// Implements the generated `Guest` for [`LifecycleHooks`].
pub struct HooksGuest<T>(PhantomData<T>);

impl<T: LifecycleHooks + Default + 'static> Guest for HooksGuest<T> {
    fn configure(config: String) -> Result<(), String> {
        state::reset(|p: &mut T| p.configure(&config))
    }

    fn self_check() -> Result<(), String> {
        state::with(|p: &mut T| p.self_check())
    }

    fn admit(pod: wit::AdmissionPod) -> Result<(), String> {
        let pod = types::AdmissionPod {
            index: pod.index,
            priority: pod.priority,
            qos: match pod.qos {
                wit::QosClass::Guaranteed => types::QosClass::Guaranteed,
                wit::QosClass::Burstable => types::QosClass::Burstable,
                wit::QosClass::BestEffort => types::QosClass::BestEffort,
            },
            is_static: pod.is_static,
            is_critical: pod.is_critical,
            containers: pod
                .containers
                .into_iter()
                .map(|c| types::AdmissionContainer {
                    name: c.name,
                    is_init: c.is_init,
                    has_cpu_request: c.has_cpu_request,
                    has_memory_request: c.has_memory_request,
                    has_cpu_limit: c.has_cpu_limit,
                    has_memory_limit: c.has_memory_limit,
                })
                .collect(),
        };
        state::with(|p: &mut T| p.admit(&pod))
    }

    fn post_start(container: String) -> Result<(), String> {
        state::with(|p: &mut T| p.post_start(&container, &HookHost))
    }

    fn pre_stop(container: String, grace_ms: u32) -> Result<(), String> {
        state::with(|p: &mut T| p.pre_stop(&container, grace_ms, &HookHost))
    }
}

/// [`PodAccess`] through the `pod-access` import.
struct HookHost;

impl PodAccess for HookHost {
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
        pod_access::http_get(port, path, &headers, timeout_ms).map(|r| types::HttpResponse {
            status: r.status,
            headers: r.headers,
            body: r.body,
        })
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
        pod_access::exec(container, &command, timeout_ms).map(|o| types::ExecOutput {
            exit_code: o.exit_code,
            stdout: o.stdout,
            stderr: o.stderr,
        })
    }

    fn sleep(&self, ms: u32) -> Result<(), String> {
        pod_access::sleep(ms);
        Ok(())
    }
}
