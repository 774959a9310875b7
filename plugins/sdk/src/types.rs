//! Plain Rust mirrors of the WIT records a plugin sees.
//!
//! The hot-path types (pods, node, signals, images, dead containers) are
//! those of [`wasmlet_policy_default`], which the host compiles natively too:
//! a plugin and the host's built-in default work on the very same structs.

pub use wasmlet_policy_default::{
    DeadContainer, DiskInfo, EvictNow, ImageInfo, NodeInfo, NodePsi, PodInfo, Pressure, PsiLine,
    PsiResource, QosClass, Signal, SignalObservation,
};

/// Severity of a [`crate::host::log`] event (`host.log-level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// The answer of a scoped `http-get` (`types.http-response`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// At most 10 KiB: the host cuts the rest.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The first header named `name`, compared case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// 2xx or 3xx, what upstream's HTTP probe counts as success.
    pub fn is_success(&self) -> bool {
        (200..400).contains(&self.status)
    }
}

/// The answer of a scoped `exec` (`types.exec-output`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecOutput {
    pub exit_code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Which probe of the container a check stands for (`probe-types.probe-kind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    Liveness,
    #[default]
    Readiness,
    Startup,
}

/// One probe run (`probe-types.probe-request`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeRequest {
    /// This plugin's arguments from the pod annotation (JSON by convention;
    /// see [`crate::config::parse`]).
    pub args: String,
    /// The deadline of the whole check.
    pub timeout_ms: u32,
    pub pod_ip: String,
    /// Ports the pod declares; only these can be reached.
    pub ports: Vec<u16>,
    pub containers: Vec<String>,
    /// The container the probe belongs to.
    pub container: String,
    pub kind: ProbeKind,
}

impl ProbeRequest {
    /// A readiness probe of container "app" with `args`, 1 s timeout, port
    /// 8080 declared: a starting point for tests.
    pub fn new(args: impl Into<String>) -> Self {
        ProbeRequest {
            args: args.into(),
            timeout_ms: 1000,
            pod_ip: "10.88.0.2".into(),
            ports: vec![8080],
            containers: vec!["app".into()],
            container: "app".into(),
            kind: ProbeKind::Readiness,
        }
    }
}

/// What a probe found (`probe-types.probe-outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeOutcome {
    Success,
    Failure,
    /// The plugin could not tell; counted like a failure, logged apart.
    Unknown,
}

/// A probe's result and why (`probe-types.probe-result`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeResult {
    pub outcome: ProbeOutcome,
    pub message: String,
}

impl ProbeResult {
    pub fn success(message: impl Into<String>) -> Self {
        ProbeResult {
            outcome: ProbeOutcome::Success,
            message: message.into(),
        }
    }

    pub fn failure(message: impl Into<String>) -> Self {
        ProbeResult {
            outcome: ProbeOutcome::Failure,
            message: message.into(),
        }
    }

    pub fn unknown(message: impl Into<String>) -> Self {
        ProbeResult {
            outcome: ProbeOutcome::Unknown,
            message: message.into(),
        }
    }
}

/// One container of a pod under admission (`hook-types.admission-container`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdmissionContainer {
    pub name: String,
    pub is_init: bool,
    pub has_cpu_request: bool,
    pub has_memory_request: bool,
    pub has_cpu_limit: bool,
    pub has_memory_limit: bool,
}

impl AdmissionContainer {
    /// A regular container with neither requests nor limits.
    pub fn new(name: impl Into<String>) -> Self {
        AdmissionContainer {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets both limits (and, as the API server defaults them, requests).
    pub fn limits(mut self, cpu: bool, memory: bool) -> Self {
        self.has_cpu_limit = cpu;
        self.has_memory_limit = memory;
        self.has_cpu_request |= cpu;
        self.has_memory_request |= memory;
        self
    }

    /// Marks it an init container.
    pub fn init(mut self) -> Self {
        self.is_init = true;
        self
    }
}

/// The pod being admitted (`hook-types.admission-pod`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdmissionPod {
    /// Always 0: the index for [`crate::host`]'s pod lookups.
    pub index: u32,
    pub priority: i32,
    pub qos: QosClass,
    pub is_static: bool,
    pub is_critical: bool,
    pub containers: Vec<AdmissionContainer>,
}
