//! The probe workers: one task per (container, probe kind) that ticks every `periodSeconds`,
//! waits for `initialDelaySeconds` and the startup probe, runs the handler (retrying errors),
//! counts results against the thresholds and publishes them. Right after a (re)start of
//! wasmlet the first runs are spread over a period (jitter).

use super::results::{Outcome, ProbeResult, Published, Shared};
use super::spec::{Handler, ProbeConfig};
use super::{exec, grpc, http, metrics, tcp, wasm, ProbeKind, ProbeView, Prober};
use crate::cri::CriClient;
use crate::events::{EventRecorder, EventType, ObjectRef};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::task::JoinHandle;
use tracing::{debug, info, Instrument};
use wasmlet_plugin_host::PluginRegistry;

/// Upstream's `maxProbeRetries`: a probe that errors (could not run) is retried this often
/// within one period; a clean failure is not.
const MAX_PROBE_RETRIES: u32 = 3;

/// What [`ContainerProbes::quiesce`] waits past the longest probe timeout: the runtime's own
/// exec timeout fires first, its answer needs a moment to arrive.
const QUIESCE_MARGIN: Duration = Duration::from_secs(1);

/// What the probes of one running container may reach.
#[derive(Clone)]
pub struct ProbeTarget {
    /// For `exec` probes and plugins' scoped exec.
    pub cri: CriClient,
    /// For probe plugins.
    pub plugins: Arc<PluginRegistry>,
    /// Where every run is counted.
    pub metrics: Arc<metrics::ProbeMetrics>,
    /// The pod's namespace: a label of the metrics, as the three fields below.
    pub namespace: String,
    /// The pod's name.
    pub pod_name: String,
    /// The pod's UID.
    pub pod_uid: String,
    /// The container's name.
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

/// When a probe task runs: the container's start (for `initialDelaySeconds`), the delay before
/// its first run, and the signal to stop.
struct Schedule {
    started_at: SystemTime,
    first_delay: Duration,
    stopped: tokio::sync::watch::Receiver<bool>,
}

/// Called with the probe's kind when it publishes a new result: the pod worker syncs after
/// a liveness or startup result, and publishes its status again after a readiness one.
pub type Notify = Arc<dyn Fn(ProbeKind) + Send + Sync>;

/// The probe tasks of one running container (one container ID). Dropping it stops them.
pub struct ContainerProbes {
    /// The container instance probed: the worker replaces the probes when it changes.
    pub container_id: String,
    configs: Vec<ProbeConfig>,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    /// Tells the tasks to finish the run in flight and return (see [`ContainerProbes::quiesce`]).
    stop: tokio::sync::watch::Sender<bool>,
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
        let (stop, stopped) = tokio::sync::watch::channel(false);
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
                        prober.events.clone(),
                        Schedule {
                            started_at,
                            first_delay,
                            stopped: stopped.clone(),
                        },
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
            stop,
        }
    }

    /// Stops the probes and waits until no run is in flight, at most the longest probe
    /// timeout. Call it before stopping the container: containerd 1.6 can wedge a container
    /// whose stop races an `ExecSync` (a probe's command), and then neither the graceful
    /// stop nor the kill answers. Dropping instead aborts the task but not the exec, which
    /// keeps running in the runtime.
    pub async fn quiesce(mut self) {
        let _ = self.stop.send(true);
        let longest = self
            .configs
            .iter()
            .map(|c| c.timeout)
            .max()
            .unwrap_or_default();
        let tasks = std::mem::take(&mut self.tasks);
        let all = futures::future::join_all(tasks);
        if tokio::time::timeout(longest + QUIESCE_MARGIN, all)
            .await
            .is_err()
        {
            debug!(container = %self.container_id, "probes still running past their timeout; left behind");
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

/// The app container `target` probes, as an event's involved object.
fn container_ref(target: &ProbeTarget) -> ObjectRef {
    ObjectRef {
        kind: "Pod".into(),
        namespace: target.namespace.clone(),
        name: target.pod_name.clone(),
        uid: target.pod_uid.clone(),
        field_path: Some(format!("spec.containers{{{}}}", target.container)),
    }
}

async fn run_worker(
    target: Arc<ProbeTarget>,
    config: ProbeConfig,
    shared: Arc<Shared>,
    notify: Notify,
    events: Arc<dyn EventRecorder>,
    schedule: Schedule,
) {
    let Schedule {
        started_at,
        first_delay,
        mut stopped,
    } = schedule;
    let object = container_ref(&target);
    let kind = config.kind.as_str();
    let event = |event_type, reason: &str, message: String| {
        events.record(&object, event_type, reason, message)
    };
    tokio::select! {
        _ = tokio::time::sleep(first_delay) => {}
        _ = stopped.wait_for(|stop| *stop) => return,
    }
    let mut ticker = tokio::time::interval(config.period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut thresholds = Thresholds::default();
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stopped.wait_for(|stop| *stop) => return,
        }
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
                event(
                    EventType::Warning,
                    "ProbeWarning",
                    format!("{kind} probe warning: {message}"),
                );
                (ProbeResult::Success, "successful", message)
            }
            Outcome::Failure(message) => {
                event(
                    EventType::Warning,
                    "Unhealthy",
                    format!("{kind} probe failed: {message}"),
                );
                (ProbeResult::Failure, "failed", message)
            }
            Outcome::Unknown(message) => (ProbeResult::Failure, "unknown", message),
            Outcome::Error(message) => {
                // Upstream throws a prober error away: it moves no threshold.
                debug!(%message, "probe errored");
                event(
                    EventType::Warning,
                    "Unhealthy",
                    format!("{kind} probe errored and resulted in unknown state: {message}"),
                );
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
            notify(config.kind);
        }
        // After a liveness or startup failure the probe holds until a new container runs.
        if publish == ProbeResult::Failure && config.kind != ProbeKind::Readiness {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_publish_after_consecutive_results() {
        let config = ProbeConfig {
            kind: ProbeKind::Liveness,
            handler: Handler::Invalid(String::new()),
            initial_delay: Duration::ZERO,
            period: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            success_threshold: 2,
            failure_threshold: 3,
            termination_grace: None,
        };
        let mut t = Thresholds::default();
        assert_eq!(t.observe(&config, ProbeResult::Failure), None);
        assert_eq!(t.observe(&config, ProbeResult::Failure), None);
        assert_eq!(
            t.observe(&config, ProbeResult::Success),
            None,
            "a success resets"
        );
        assert_eq!(
            t.observe(&config, ProbeResult::Success),
            Some(ProbeResult::Success)
        );
        assert_eq!(t.observe(&config, ProbeResult::Failure), None);
        assert_eq!(t.observe(&config, ProbeResult::Failure), None);
        assert_eq!(
            t.observe(&config, ProbeResult::Failure),
            Some(ProbeResult::Failure)
        );
    }
}
