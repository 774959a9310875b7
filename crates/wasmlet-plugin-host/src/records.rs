//! The host's side of the records that cross the plugin boundary for probes, hooks and
//! admission: plain types the rest of wasmlet builds and reads, converted to and from the
//! generated WIT types inside this crate only (`bindings::convert`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Strings of one pod that plugins ask for only when they need them (`pod-meta`).
#[derive(Debug, Clone, Default)]
pub struct PodMeta {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
}

/// What a scoped `exec` returns to the plugin (CRI `ExecSync`'s answer, capped by the host).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// The command's exit code; non-zero is still an answer, not an error.
    pub exit_code: i32,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
}

/// Runs a command in one of the scoped pod's containers (CRI ExecSync, in the host): the
/// plugin crate has no CRI client, so the host lends it this.
pub type ExecFn =
    Arc<dyn Fn(&str, &[String], Duration) -> Result<ExecOutput, String> + Send + Sync>;

/// What a probe or hook plugin may reach: the one pod it serves, until its deadline.
#[derive(Clone)]
pub struct PodScope {
    /// The address `http-get` and `tcp-connect` go to.
    pub pod_ip: String,
    /// The ports the pod declares (its containers' ports and the ports its own probes and
    /// lifecycle handlers name): `http-get` and `tcp-connect` reach these and no other.
    pub ports: Vec<u16>,
    /// The containers `exec` may run in.
    pub containers: Vec<String>,
    /// When the call must be over: the probe's timeout or the hook's grace.
    pub deadline: Instant,
    /// The scoped exec, when the caller has a runtime to run it on.
    pub exec: Option<ExecFn>,
}

/// A port a plugin asked for that the scoped pod does not declare.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("port {port} is not declared by this pod (declared: {declared:?}); a plugin reaches only the ports of its containers, probes and handlers")]
pub struct UndeclaredPort {
    /// The port asked for.
    pub port: u16,
    /// The ports the pod declares.
    pub declared: Vec<u16>,
}

impl PodScope {
    /// `Err` with the reason unless `port` is one the pod declares.
    pub fn check_port(&self, port: u16) -> Result<(), UndeclaredPort> {
        if self.ports.contains(&port) {
            Ok(())
        } else {
            Err(UndeclaredPort {
                port,
                declared: self.ports.clone(),
            })
        }
    }
}

/// Which probe of the container a plugin check stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    /// `livenessProbe`.
    Liveness,
    /// `readinessProbe`.
    Readiness,
    /// `startupProbe`.
    Startup,
}

/// One probe run of one container, as `probe-handler.check` receives it.
#[derive(Debug, Clone)]
pub struct ProbeRequest {
    /// The plugin's arguments from the pod annotation that selects it.
    pub args: String,
    /// The probe's timeout in milliseconds; the call ends at the earlier of it and the
    /// plugin's own `deadlineMs`.
    pub timeout_ms: u32,
    /// The IP the scoped calls connect to.
    pub pod_ip: String,
    /// The container ports the pod declares.
    pub ports: Vec<u16>,
    /// The names of the pod's containers.
    pub containers: Vec<String>,
    /// The probed container.
    pub container: String,
    /// Which probe this is.
    pub kind: ProbeKind,
}

/// What a probe plugin concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// Healthy.
    Success,
    /// Unhealthy (also every fault of the plugin: a probe plugin has no built-in twin).
    Failure,
    /// The plugin could not tell; counted like a failure, logged apart.
    Unknown,
}

/// A probe's result and why, shown in the probe event and the container's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    /// The verdict.
    pub outcome: ProbeOutcome,
    /// Why.
    pub message: String,
}

/// One container of a pod under admission.
#[derive(Debug, Clone, Default)]
pub struct AdmissionContainer {
    /// The container's name.
    pub name: String,
    /// An init container (sidecars included).
    pub is_init: bool,
    /// `resources.requests.cpu` is set.
    pub has_cpu_request: bool,
    /// `resources.requests.memory` is set.
    pub has_memory_request: bool,
    /// `resources.limits.cpu` is set.
    pub has_cpu_limit: bool,
    /// `resources.limits.memory` is set.
    pub has_memory_limit: bool,
}

/// The pod `lifecycle-hooks.admit` decides on.
#[derive(Debug, Clone, Default)]
pub struct AdmissionPod {
    /// `spec.priority`; 0 when unset.
    pub priority: i32,
    /// The pod's QoS class as the host computed it.
    pub qos: wasmlet_policy_default::QosClass,
    /// From the static manifest directory (or a mirror pod).
    pub is_static: bool,
    /// Upstream `IsCriticalPod`.
    pub is_critical: bool,
    /// Init containers first, then app containers.
    pub containers: Vec<AdmissionContainer>,
}
