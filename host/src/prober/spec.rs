//! Probe specs resolved into [`ProbeConfig`]s: upstream's defaults, named ports looked up in
//! the container's ports, and a handler replaced by a probe plugin where the pod's annotations
//! name one. A spec that cannot be resolved becomes [`Handler::Invalid`] with a message naming
//! the container and field.

use super::{http, ProbeKind};
use k8s_openapi::api::core::v1::{Container, Pod, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::time::Duration;

/// Annotations that hand a container's probe to a probe plugin:
/// `probe.wasmlet.dev/<container>.<liveness|readiness|startup>: <plugin name>` and, optionally,
/// `probe.wasmlet.dev/<container>.<kind>.args: <free-form args, JSON by convention>`.
pub const PROBE_ANNOTATION_PREFIX: &str = "probe.wasmlet.dev/";

/// Why a probe (or lifecycle `httpGet`) spec cannot be run; the message names the container
/// and the field to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeSpecError {
    /// A port name that none of the container's ports has.
    #[error(
        "container {container:?}: {field}: port {name:?} is not a named port of the container"
    )]
    UnknownPortName {
        /// The container's name.
        container: String,
        /// The field, as a path from the container spec.
        field: String,
        /// The name given.
        name: String,
    },
    /// A port number outside 1..=65535.
    #[error("container {container:?}: {field}: port {port} is out of range")]
    PortOutOfRange {
        /// The container's name.
        container: String,
        /// The field, as a path from the container spec.
        field: String,
        /// The number given.
        port: i32,
    },
    /// A grpc probe's port outside 1..=65535.
    #[error("container {container:?}: {field}.grpc.port {port} is out of range")]
    GrpcPortOutOfRange {
        /// The container's name.
        container: String,
        /// The field, as a path from the container spec.
        field: String,
        /// The number given.
        port: i32,
    },
    /// An `exec` probe with no command.
    #[error("container {container:?}: {field}.exec.command is empty")]
    EmptyCommand {
        /// The container's name.
        container: String,
        /// The probe's field.
        field: String,
    },
    /// An `httpGet` scheme other than HTTP or HTTPS.
    #[error("container {container:?}: {field}.scheme {scheme:?} is neither HTTP nor HTTPS")]
    UnknownScheme {
        /// The container's name.
        container: String,
        /// The field, as a path from the container spec.
        field: String,
        /// The scheme given.
        scheme: String,
    },
    /// A probe with none of the four handlers.
    #[error("container {container:?}: {field} has no handler (exec, httpGet, tcpSocket or grpc)")]
    NoHandler {
        /// The container's name.
        container: String,
        /// The probe's field.
        field: String,
    },
    /// A probe-plugin annotation with an empty value.
    #[error("annotation {key} names no plugin")]
    NoPlugin {
        /// The annotation's key.
        key: String,
    },
}

/// How a probe runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handler {
    /// CRI `ExecSync` of `command` in the container.
    Exec {
        /// The command and its arguments.
        command: Vec<String>,
    },
    /// An HTTP GET; 2xx and 3xx succeed.
    Http(http::HttpGet),
    /// A TCP connect to `host` (default: the pod IP) and `port`.
    Tcp {
        /// `None`: the pod IP.
        host: Option<String>,
        /// The resolved port.
        port: u16,
    },
    /// A grpc.health.v1 `Check` of `service` on `port`.
    Grpc {
        /// The port (grpc probes take no port names).
        port: u16,
        /// The service to check (empty: the server as a whole).
        service: String,
    },
    /// A probe plugin, called with the annotation's `args`.
    Plugin {
        /// The plugin's configured name.
        plugin: String,
        /// The `.args` annotation (`{}` when absent).
        args: String,
    },
    /// The spec cannot be probed (no handler, an unknown port name): every run errors with
    /// this message, naming the container and field.
    Invalid(String),
}

/// One probe of one container, resolved from the spec with upstream's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeConfig {
    /// Which probe this is.
    pub kind: ProbeKind,
    /// How it runs.
    pub handler: Handler,
    /// `initialDelaySeconds`, counted from the container's `startedAt`.
    pub initial_delay: Duration,
    /// `periodSeconds` (default 10 s, at least 1 s).
    pub period: Duration,
    /// `timeoutSeconds` (default 1 s): bounds each run, and a probe plugin's whole call.
    pub timeout: Duration,
    /// Consecutive successes before a success is published (default 1).
    pub success_threshold: u32,
    /// Consecutive failures before a failure is published (default 3).
    pub failure_threshold: u32,
    /// The probe's own `terminationGracePeriodSeconds` for a liveness or startup kill.
    pub termination_grace: Option<Duration>,
}

fn seconds(value: Option<i32>, default: i32, minimum: i32) -> Duration {
    Duration::from_secs(value.unwrap_or(default).max(minimum) as u64)
}

/// A port given as a number or as the name of one of the container's ports.
pub fn resolve_port(
    port: &IntOrString,
    container: &Container,
    field: &str,
) -> Result<u16, ProbeSpecError> {
    let number = match port {
        IntOrString::Int(n) => *n,
        IntOrString::String(name) => match name.parse::<i32>() {
            Ok(n) => n,
            Err(_) => container
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(name.as_str()))
                .map(|p| p.container_port)
                .ok_or_else(|| ProbeSpecError::UnknownPortName {
                    container: container.name.clone(),
                    field: field.to_string(),
                    name: name.clone(),
                })?,
        },
    };
    u16::try_from(number)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| ProbeSpecError::PortOutOfRange {
            container: container.name.clone(),
            field: field.to_string(),
            port: number,
        })
}

impl ProbeConfig {
    /// The probe `kind` of `container` as its spec declares it.
    pub fn from_spec(kind: ProbeKind, probe: &Probe, container: &Container) -> Self {
        let field = format!("{}Probe", kind.annotation_name());
        let handler = Self::handler(probe, container, &field)
            .unwrap_or_else(|error| Handler::Invalid(error.to_string()));
        ProbeConfig {
            kind,
            handler,
            initial_delay: seconds(probe.initial_delay_seconds, 0, 0),
            period: seconds(probe.period_seconds, 10, 1),
            timeout: seconds(probe.timeout_seconds, 1, 1),
            success_threshold: probe.success_threshold.unwrap_or(1).max(1) as u32,
            failure_threshold: probe.failure_threshold.unwrap_or(3).max(1) as u32,
            termination_grace: probe
                .termination_grace_period_seconds
                .map(|s| Duration::from_secs(s.max(0) as u64)),
        }
    }

    fn handler(
        probe: &Probe,
        container: &Container,
        field: &str,
    ) -> Result<Handler, ProbeSpecError> {
        let error_fields = || (container.name.clone(), field.to_string());
        if let Some(exec) = &probe.exec {
            match exec.command.clone().filter(|c| !c.is_empty()) {
                Some(command) => Ok(Handler::Exec { command }),
                None => {
                    let (container, field) = error_fields();
                    Err(ProbeSpecError::EmptyCommand { container, field })
                }
            }
        } else if let Some(get) = &probe.http_get {
            http::HttpGet::from_spec(get, container, &format!("{field}.httpGet")).map(Handler::Http)
        } else if let Some(tcp) = &probe.tcp_socket {
            resolve_port(&tcp.port, container, &format!("{field}.tcpSocket.port")).map(|port| {
                Handler::Tcp {
                    host: tcp.host.clone().filter(|h| !h.is_empty()),
                    port,
                }
            })
        } else if let Some(grpc) = &probe.grpc {
            u16::try_from(grpc.port)
                .ok()
                .filter(|p| *p > 0)
                .map(|port| Handler::Grpc {
                    port,
                    service: grpc.service.clone().unwrap_or_default(),
                })
                .ok_or_else(|| {
                    let (container, field) = error_fields();
                    ProbeSpecError::GrpcPortOutOfRange {
                        container,
                        field,
                        port: grpc.port,
                    }
                })
        } else {
            let (container, field) = error_fields();
            Err(ProbeSpecError::NoHandler { container, field })
        }
    }
}

/// The probes of `container`: those its spec declares, with the handler replaced by a probe
/// plugin where the pod's annotations name one (a plugin probe the spec does not declare gets
/// upstream's defaults: period 10 s, timeout 1 s, thresholds 1 and 3).
pub fn container_probes(pod: &Pod, container: &Container) -> Vec<ProbeConfig> {
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let mut probes = Vec::new();
    for kind in ProbeKind::ALL {
        let declared = match kind {
            ProbeKind::Liveness => container.liveness_probe.as_ref(),
            ProbeKind::Readiness => container.readiness_probe.as_ref(),
            ProbeKind::Startup => container.startup_probe.as_ref(),
        };
        let key = format!(
            "{PROBE_ANNOTATION_PREFIX}{}.{}",
            container.name,
            kind.annotation_name()
        );
        let plugin = annotations.get(&key).map(|p| p.trim().to_string());
        let mut config = match (declared, &plugin) {
            (Some(probe), _) => ProbeConfig::from_spec(kind, probe, container),
            (None, Some(_)) => ProbeConfig::from_spec(kind, &Probe::default(), container),
            (None, None) => continue,
        };
        if let Some(plugin) = plugin {
            config.handler = if plugin.is_empty() {
                Handler::Invalid(ProbeSpecError::NoPlugin { key }.to_string())
            } else {
                Handler::Plugin {
                    plugin,
                    args: annotations
                        .get(&format!("{key}.args"))
                        .cloned()
                        .unwrap_or_else(|| "{}".into()),
                }
            };
        }
        probes.push(config);
    }
    probes
}

#[cfg(test)]
mod tests;
