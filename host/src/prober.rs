//! The prober, as upstream's `pkg/kubelet/prober`: one task per (container, probe kind) that
//! runs the probe every `periodSeconds`, counts results against `successThreshold` and
//! `failureThreshold`, and publishes a result the pod worker acts on (readiness drives
//! `ready`, `ContainersReady` and `Ready`; a liveness or startup failure kills the container,
//! which then restarts per its restart policy and back-off).
//!
//! [`spec`] resolves the probes of a container, [`worker`] runs them, [`results`] holds what
//! they publish. Handlers: `exec` (CRI ExecSync), `httpGet`, `tcpSocket`, `grpc`
//! (grpc.health.v1), and probe plugins that a pod selects by annotation
//! ([`PROBE_ANNOTATION_PREFIX`]).

pub mod exec;
pub mod grpc;
pub mod http;
pub mod metrics;
pub mod results;
pub mod spec;
pub mod tcp;
pub mod wasm;
pub mod worker;

use crate::events::{EventRecorder, LogOnly};
use results::ProbeResult;
use std::sync::Arc;
use std::time::Instant;
use wasmlet_plugin_host::PluginRegistry;

pub use results::Outcome;
pub use spec::{container_probes, Handler, ProbeConfig, PROBE_ANNOTATION_PREFIX};
pub use worker::{run_once, ContainerProbes, Notify, ProbeTarget};

/// Which probe of a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProbeKind {
    /// A failure kills the container.
    Liveness,
    /// Drives `ready` and the pod's `Ready` condition.
    Readiness,
    /// Gates the other two until it succeeds; a failure kills the container.
    Startup,
}

impl ProbeKind {
    /// The `probe_type` label of upstream's prober metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Liveness => "Liveness",
            ProbeKind::Readiness => "Readiness",
            ProbeKind::Startup => "Startup",
        }
    }

    /// The lower-case name used in the probe-plugin annotations.
    pub fn annotation_name(self) -> &'static str {
        match self {
            ProbeKind::Liveness => "liveness",
            ProbeKind::Readiness => "readiness",
            ProbeKind::Startup => "startup",
        }
    }

    /// Every kind, startup first: the order probes are resolved and reported in.
    pub const ALL: [ProbeKind; 3] = [
        ProbeKind::Startup,
        ProbeKind::Liveness,
        ProbeKind::Readiness,
    ];

    /// The result a probe holds before its first run (upstream: readiness Failure, liveness
    /// Success, startup Unknown).
    fn initial(self) -> ProbeResult {
        match self {
            ProbeKind::Liveness => ProbeResult::Success,
            ProbeKind::Readiness => ProbeResult::Failure,
            ProbeKind::Startup => ProbeResult::Unknown,
        }
    }
}

/// What the status shows of a container's probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeView {
    /// `containerStatuses[].started`: no startup probe, or it succeeded.
    pub started: bool,
    /// `containerStatuses[].ready`: started, and no readiness probe or it succeeds.
    pub ready: bool,
}

/// The node's prober: what every probe task shares.
pub struct Prober {
    /// Served at `/metrics/probes`.
    pub metrics: Arc<metrics::ProbeMetrics>,
    /// Probe, hook and admission plugins.
    pub plugins: Arc<PluginRegistry>,
    /// Where `Unhealthy` and `ProbeWarning` events go.
    pub events: Arc<dyn EventRecorder>,
    /// When this wasmlet started: probes of containers found running within the first
    /// period are spread over it, as upstream does after a kubelet restart.
    started: Instant,
}

impl Prober {
    /// A prober with empty metrics, asking `plugins` for plugin probes; its events only go
    /// to the log until [`Prober::with_events`].
    pub fn new(plugins: Arc<PluginRegistry>) -> Self {
        Self {
            metrics: Arc::new(metrics::ProbeMetrics::new()),
            plugins,
            events: Arc::new(LogOnly),
            started: Instant::now(),
        }
    }

    /// The prober with its events going to `events`.
    pub fn with_events(self, events: Arc<dyn EventRecorder>) -> Self {
        Self { events, ..self }
    }
}
