//! The prober, as upstream's `pkg/kubelet/prober`: one task per (container, probe kind) that
//! runs the probe every `periodSeconds`, counts results against `successThreshold` and
//! `failureThreshold`, and publishes a result the pod worker acts on (readiness drives
//! `ready`, `ContainersReady` and `Ready`; a liveness or startup failure kills the container,
//! which then restarts per its restart policy and back-off).
//!
//! Handlers: `exec` (CRI ExecSync), `httpGet`, `tcpSocket`, `grpc` (grpc.health.v1), and
//! probe plugins that a pod selects by annotation ([`PROBE_ANNOTATION_PREFIX`]).

pub mod exec;
pub mod grpc;
pub mod http;
pub mod metrics;
pub mod tcp;
pub mod wasm;

use crate::cri::CriClient;
use k8s_openapi::api::core::v1::{Container, Pod, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio::task::JoinHandle;
use tracing::{debug, info, Instrument};
use wasmlet_plugin_host::PluginRegistry;

/// Annotations that hand a container's probe to a probe plugin:
/// `probe.wasmlet.dev/<container>.<liveness|readiness|startup>: <plugin name>` and, optionally,
/// `probe.wasmlet.dev/<container>.<kind>.args: <free-form args, JSON by convention>`.
pub const PROBE_ANNOTATION_PREFIX: &str = "probe.wasmlet.dev/";

/// Upstream's `maxProbeRetries`: a probe that errors (could not run) is retried this often
/// within one period; a clean failure is not.
const MAX_PROBE_RETRIES: u32 = 3;

/// Which probe of a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProbeKind {
    Liveness,
    Readiness,
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

/// What one probe run found (upstream's `probe.Result` with its error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// Success with a note (an HTTP redirect to another host), as upstream's `Warning`.
    Warning(String),
    Failure(String),
    /// A plugin could not tell: counted as a failure, labelled `unknown` in the metrics.
    Unknown(String),
    /// The probe could not run at all (a port name that does not exist, the runtime did not
    /// answer): retried, then thrown away, as upstream's prober errors.
    Error(String),
}

/// The result a probe publishes once its threshold is met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeResult {
    Unknown,
    Success,
    Failure,
}

/// How a probe runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handler {
    Exec {
        command: Vec<String>,
    },
    Http(http::HttpGet),
    Tcp {
        host: Option<String>,
        port: u16,
    },
    Grpc {
        port: u16,
        service: String,
    },
    Plugin {
        plugin: String,
        args: String,
    },
    /// The spec cannot be probed (no handler, an unknown port name): every run errors with
    /// this message, naming the container and field.
    Invalid(String),
}

/// One probe of one container, resolved from the spec with upstream's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeConfig {
    pub kind: ProbeKind,
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
pub fn resolve_port(port: &IntOrString, container: &Container, field: &str) -> Result<u16, String> {
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
                .ok_or_else(|| {
                    format!(
                        "container {:?}: {field}: port {name:?} is not a named port of the container",
                        container.name
                    )
                })?,
        },
    };
    u16::try_from(number)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            format!(
                "container {:?}: {field}: port {number} is out of range",
                container.name
            )
        })
}

impl ProbeConfig {
    /// The probe `kind` of `container` as its spec declares it.
    pub fn from_spec(kind: ProbeKind, probe: &Probe, container: &Container) -> Self {
        let field = format!("{}Probe", kind.annotation_name());
        let handler = Self::handler(probe, container, &field);
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

    fn handler(probe: &Probe, container: &Container, field: &str) -> Handler {
        let result = if let Some(exec) = &probe.exec {
            match exec.command.clone().filter(|c| !c.is_empty()) {
                Some(command) => Ok(Handler::Exec { command }),
                None => Err(format!(
                    "container {:?}: {field}.exec.command is empty",
                    container.name
                )),
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
                    format!(
                        "container {:?}: {field}.grpc.port {} is out of range",
                        container.name, grpc.port
                    )
                })
        } else {
            Err(format!(
                "container {:?}: {field} has no handler (exec, httpGet, tcpSocket or grpc)",
                container.name
            ))
        };
        result.unwrap_or_else(Handler::Invalid)
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
                Handler::Invalid(format!("annotation {key} names no plugin"))
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

/// What the probes of one running container may reach.
#[derive(Clone)]
pub struct ProbeTarget {
    /// For `exec` probes and plugins' scoped exec.
    pub cri: CriClient,
    /// For probe plugins.
    pub plugins: Arc<PluginRegistry>,
    /// Where every run is counted.
    pub metrics: Arc<metrics::ProbeMetrics>,
    /// The pod's namespace, name and UID and the container's name: the metrics' labels.
    pub namespace: String,
    pub pod_name: String,
    pub pod_uid: String,
    pub container: String,
    /// The one container instance these probes watch; a restart gets new probe tasks.
    pub container_id: String,
    /// The pod IP (the node IP under hostNetwork): the default host of httpGet, tcpSocket
    /// and grpc probes.
    pub pod_ip: String,
    /// Every port the pod's containers declare (the scope of a probe plugin).
    pub pod_ports: Vec<u16>,
    /// Container name -> running container ID, for a probe plugin's scoped exec.
    pub pod_containers: Arc<HashMap<String, String>>,
}

/// The published result of each probe of a container, and why it last changed.
#[derive(Debug, Clone)]
pub struct Published {
    pub result: ProbeResult,
    /// Why (the handler's message), for the log line that reports a change or a kill.
    pub message: String,
}

#[derive(Default)]
struct Shared {
    results: Mutex<HashMap<ProbeKind, Published>>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProbeKind, Published>> {
        self.results.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The container has started: it has no startup probe, or that probe succeeded.
    fn started(&self) -> bool {
        self.lock()
            .get(&ProbeKind::Startup)
            .is_none_or(|p| p.result == ProbeResult::Success)
    }

    /// Records a result; true when it changed.
    fn publish(&self, kind: ProbeKind, result: ProbeResult, message: String) -> bool {
        let mut results = self.lock();
        let changed = results.get(&kind).is_none_or(|p| p.result != result);
        results.insert(kind, Published { result, message });
        changed
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

/// Called when a probe publishes a new result: the pod worker syncs.
pub type Notify = Arc<dyn Fn() + Send + Sync>;

/// The node's prober: what every probe task shares.
pub struct Prober {
    /// Served at `/metrics/probes`.
    pub metrics: Arc<metrics::ProbeMetrics>,
    /// Probe, hook and admission plugins.
    pub plugins: Arc<PluginRegistry>,
    /// When this wasmlet started: probes of containers found running within the first
    /// period are spread over it, as upstream does after a kubelet restart.
    started: Instant,
}

impl Prober {
    /// A prober with empty metrics, asking `plugins` for plugin probes.
    pub fn new(plugins: Arc<PluginRegistry>) -> Self {
        Self {
            metrics: Arc::new(metrics::ProbeMetrics::new()),
            plugins,
            started: Instant::now(),
        }
    }
}

/// The probe tasks of one running container (one container ID). Dropping it stops them.
pub struct ContainerProbes {
    /// The container instance probed: the worker replaces the probes when it changes.
    pub container_id: String,
    configs: Vec<ProbeConfig>,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl ContainerProbes {
    /// Starts a task per probe for the container `target` names, which started at
    /// `started_at`.
    pub fn start(
        prober: &Prober,
        target: ProbeTarget,
        configs: Vec<ProbeConfig>,
        started_at: SystemTime,
        notify: Notify,
    ) -> Self {
        let shared = Arc::new(Shared::default());
        for config in &configs {
            shared.publish(config.kind, config.kind.initial(), String::new());
        }
        let target = Arc::new(target);
        let since_start = prober.started.elapsed();
        let tasks = configs
            .iter()
            .map(|config| {
                // Upstream: right after a (re)start, spread the first probes over a period.
                let first_delay = if since_start < config.period {
                    jitter(&target.container_id, config.kind, config.period)
                } else {
                    Duration::ZERO
                };
                let span = tracing::debug_span!("probe", container = %target.container, probe = config.kind.as_str());
                tokio::spawn(
                    run_worker(
                        target.clone(),
                        config.clone(),
                        shared.clone(),
                        notify.clone(),
                        started_at,
                        first_delay,
                    )
                    .instrument(span),
                )
            })
            .collect();
        Self {
            container_id: target.container_id.clone(),
            configs,
            shared,
            tasks,
        }
    }

    /// `started` and `ready` for the status.
    pub fn view(&self) -> ProbeView {
        let results = self.shared.lock();
        let ok = |kind| {
            results
                .get(&kind)
                .is_none_or(|p: &Published| p.result == ProbeResult::Success)
        };
        let started = ok(ProbeKind::Startup);
        ProbeView {
            started,
            ready: started && ok(ProbeKind::Readiness),
        }
    }

    /// A published liveness or startup failure: the container must be killed and restarted.
    /// Returns the probe, its message and the grace period the probe sets, if any.
    pub fn kill_reason(&self) -> Option<(ProbeKind, String, Option<Duration>)> {
        let results = self.shared.lock();
        [ProbeKind::Startup, ProbeKind::Liveness]
            .into_iter()
            .find_map(|kind| {
                results
                    .get(&kind)
                    .filter(|p| p.result == ProbeResult::Failure)
                    .map(|p| {
                        let grace = self
                            .configs
                            .iter()
                            .find(|c| c.kind == kind)
                            .and_then(|c| c.termination_grace);
                        (kind, p.message.clone(), grace)
                    })
            })
    }
}

impl Drop for ContainerProbes {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A stable fraction of `period` per container and probe (no RNG needed: it only spreads load).
fn jitter(container_id: &str, kind: ProbeKind, period: Duration) -> Duration {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (container_id, kind).hash(&mut hasher);
    let fraction = (hasher.finish() % 1000) as f64 / 1000.0;
    period.mul_f64(fraction)
}

/// Runs the handler once.
pub async fn run_once(target: &ProbeTarget, config: &ProbeConfig) -> Outcome {
    match &config.handler {
        Handler::Exec { command } => {
            exec::probe(&target.cri, &target.container_id, command, config.timeout).await
        }
        Handler::Http(get) => http::probe(get, &target.pod_ip, config.timeout).await,
        Handler::Tcp { host, port } => {
            tcp::probe(
                host.as_deref().unwrap_or(&target.pod_ip),
                *port,
                config.timeout,
            )
            .await
        }
        Handler::Grpc { port, service } => {
            grpc::probe(&target.pod_ip, *port, service, config.timeout).await
        }
        Handler::Plugin { plugin, args } => wasm::probe(target, config, plugin, args).await,
        Handler::Invalid(message) => Outcome::Error(message.clone()),
    }
}

/// Counts consecutive results against the thresholds (upstream `worker.doProbe`).
#[derive(Debug, Default)]
pub struct Thresholds {
    last: Option<ProbeResult>,
    run: u32,
}

impl Thresholds {
    /// The result to publish after this run, if its threshold is met.
    pub fn observe(&mut self, config: &ProbeConfig, result: ProbeResult) -> Option<ProbeResult> {
        if self.last == Some(result) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(result);
            self.run = 1;
        }
        let needed = match result {
            ProbeResult::Failure => config.failure_threshold,
            ProbeResult::Success => config.success_threshold,
            ProbeResult::Unknown => 1,
        };
        (self.run >= needed).then_some(result)
    }
}

async fn run_worker(
    target: Arc<ProbeTarget>,
    config: ProbeConfig,
    shared: Arc<Shared>,
    notify: Notify,
    started_at: SystemTime,
    first_delay: Duration,
) {
    tokio::time::sleep(first_delay).await;
    let mut ticker = tokio::time::interval(config.period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut thresholds = Thresholds::default();
    loop {
        ticker.tick().await;
        let started = shared.started();
        // Startup gates the others; the startup probe stops once the container started.
        if config.kind == ProbeKind::Startup && started {
            return;
        }
        if config.kind != ProbeKind::Startup && !started {
            continue;
        }
        let running_for = SystemTime::now()
            .duration_since(started_at)
            .unwrap_or_default();
        if running_for < config.initial_delay {
            continue;
        }
        let begun = Instant::now();
        let mut outcome = run_once(&target, &config).await;
        for _ in 1..MAX_PROBE_RETRIES {
            if !matches!(outcome, Outcome::Error(_)) {
                break;
            }
            outcome = run_once(&target, &config).await;
        }
        let elapsed = begun.elapsed();
        let (result, label, message) = match outcome {
            Outcome::Success => (ProbeResult::Success, "successful", String::new()),
            Outcome::Warning(message) => {
                debug!(%message, "probe succeeded with a warning");
                (ProbeResult::Success, "successful", message)
            }
            Outcome::Failure(message) => (ProbeResult::Failure, "failed", message),
            Outcome::Unknown(message) => (ProbeResult::Failure, "unknown", message),
            Outcome::Error(message) => {
                // Upstream throws a prober error away: it moves no threshold.
                debug!(%message, "probe errored");
                target
                    .metrics
                    .observe(&target, config.kind, "unknown", elapsed);
                continue;
            }
        };
        target.metrics.observe(&target, config.kind, label, elapsed);
        if result == ProbeResult::Failure {
            debug!(%message, "probe failed");
        }
        let Some(publish) = thresholds.observe(&config, result) else {
            continue;
        };
        if shared.publish(config.kind, publish, message.clone()) {
            info!(result = ?publish, %message, "probe result changed");
            notify();
        }
        // After a liveness or startup failure the probe holds until a new container runs.
        if publish == ProbeResult::Failure && config.kind != ProbeKind::Readiness {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
