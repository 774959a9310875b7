//! One task per pod, as upstream's pod workers (`pod_workers.go`): the per-pod state machine
//! (syncing, finished, terminating, terminated). Each sync hands the pod to the runtime side
//! (`kuberuntime`), publishes the status through the status manager, and keeps the probes of
//! running containers; on removal it terminates the pod gracefully and cleans up after it.

use crate::config::BackOffConfig;
use crate::kuberuntime::{PodSyncState, RuntimeManager, SyncError, SYNC_ERROR_RETRY};
use crate::pleg::ExitHint;
use crate::podutil;
use crate::prober::{ContainerProbes, ProbeConfig, Prober};
use crate::resources::PendingResize;
use crate::runtime_status::PodRuntimeStatus;
use crate::status::{StatusManager, Waiting};
use crate::timestamps;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{debug, warn, Instrument};

/// What every pod worker shares.
pub struct NodeRuntime {
    /// The runtime side: CRI, node facts, hook plugins.
    pub runtime: RuntimeManager,
    /// The only writer of pod status.
    pub status: Arc<StatusManager>,
    /// Prefix of container IDs in status (`containerd`).
    pub runtime_name: String,
    /// CrashLoopBackOff periods.
    pub container_backoff: BackOffConfig,
    /// ImagePullBackOff periods.
    pub image_backoff: BackOffConfig,
    /// Probe tasks' shared parts: metrics and the plugin registry (probe, hook and admission
    /// plugins).
    pub prober: Arc<Prober>,
}

impl NodeRuntime {
    /// The node's IP: hostIP of every pod.
    pub fn node_ip(&self) -> &str {
        &self.runtime.node.node_ip
    }
}

/// A message to a pod worker.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerMessage {
    /// Something changed (a PLEG event, a timer): compare runtime and spec again.
    Sync,
    /// The PLEG found this container or sandbox running: a sync, unless the worker started
    /// it itself and its last status already shows it and the whole pod running.
    Started {
        /// The runtime ID of the container or sandbox.
        container_id: String,
    },
    /// A readiness result changed: publish the status again on the last runtime view, as
    /// nothing the runtime holds changed.
    Republish,
    /// containerd reported a container's exit before CRI recorded it: show it in the status
    /// now; the confirmed event that follows drives the sync.
    Exited {
        /// The runtime ID of the container that exited.
        container_id: String,
        /// What containerd said of the exit.
        exit: ExitHint,
    },
    /// The pod was removed or deleted: stop it gracefully (with `grace` when the deletion
    /// names one, else the pod's own period), publish its final status, and remove its
    /// containers and sandboxes.
    Terminate {
        /// `deletionGracePeriodSeconds` of a graceful delete.
        grace: Option<Duration>,
    },
    /// The source changed the pod under the same UID (labels, annotations, images,
    /// `activeDeadlineSeconds`), or its allocation changed: the worker syncs towards the new
    /// one, as upstream's `UpdatePod`.
    Update {
        /// The pod with the resources allocated to it ([`crate::allocation`]).
        pod: Arc<Pod>,
        /// Its resize that waits for the node, if one does.
        resize_pending: Option<PendingResize>,
    },
    /// Node pressure: kill the pod with `grace`, free its volumes, and show it as Failed with
    /// reason Evicted and `message`. It does not run again.
    Evict {
        /// The status message naming the signal.
        message: String,
        /// The grace period of its containers.
        grace: Duration,
    },
}

/// The SyncLoop's side of a worker.
pub struct WorkerHandle {
    /// The pod's UID.
    pub uid: String,
    /// `<name>_<namespace>`: static pods with the same name run one at a time.
    pub full_name: String,
    messages: mpsc::UnboundedSender<WorkerMessage>,
    /// Becomes true once the worker has finished terminating.
    pub done: watch::Receiver<bool>,
    /// Whether termination was requested.
    pub terminating: bool,
}

impl WorkerHandle {
    /// Queues `message` (a worker that is gone drops it).
    pub fn send(&self, message: WorkerMessage) {
        let _ = self.messages.send(message);
    }

    /// Asks the worker to terminate the pod, with `grace` instead of the pod's own period.
    pub fn terminate(&mut self, grace: Option<Duration>) {
        self.terminating = true;
        self.send(WorkerMessage::Terminate { grace });
    }

    /// Whether the worker has terminated the pod and stopped.
    pub fn finished(&self) -> bool {
        *self.done.borrow()
    }
}

/// Where a pod worker stands (upstream: SyncPod, TerminatingPod, TerminatedPod).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WorkerState {
    /// Bringing the runtime towards the spec.
    Syncing,
    /// The pod reached a terminal phase (or was evicted): nothing runs again until it is
    /// removed from its source.
    Finished,
    /// Stopping the pod's containers and removing what the runtime held.
    Terminating,
    /// Everything is gone; the task ends.
    Terminated,
}

/// Starts a worker for `pod`; it waits for `predecessor` (a terminating pod with the same
/// full name) to finish first. `known_empty`: the runtime holds nothing for the pod yet.
pub fn spawn(
    node: Arc<NodeRuntime>,
    pod: Arc<Pod>,
    predecessor: Option<watch::Receiver<bool>>,
    known_empty: bool,
) -> WorkerHandle {
    let (messages, inbox) = mpsc::unbounded_channel();
    let (done_tx, done) = watch::channel(false);
    let uid = podutil::uid(&pod).to_string();
    let full_name = podutil::full_name(&pod);
    let span = tracing::info_span!("pod", pod = %full_name, uid = %uid);
    let probe_configs = probes::probe_configs(&pod);
    let worker = PodWorker {
        myself: messages.downgrade(),
        probe_configs,
        probes: HashMap::new(),
        sync_state: PodSyncState::new(node.container_backoff, node.image_backoff, known_empty),
        node,
        pod,
        uid: uid.clone(),
        state: WorkerState::Syncing,
        resize_pending: None,
        start_time: None,
        last_published: None,
        first_seen: std::time::Instant::now(),
        synced: false,
        start_recorded: false,
    };
    tokio::spawn(worker.run(inbox, predecessor, done_tx).instrument(span));
    WorkerHandle {
        uid,
        full_name,
        messages,
        done,
        terminating: false,
    }
}

struct PodWorker {
    /// The worker's own inbox, for its probe tasks (weak: the SyncLoop's handle owns it).
    myself: mpsc::WeakUnboundedSender<WorkerMessage>,
    /// The probes of each app container that declares any (spec and plugin annotations).
    probe_configs: HashMap<String, Vec<ProbeConfig>>,
    /// The probe tasks of each running app container.
    probes: HashMap<String, ContainerProbes>,
    node: Arc<NodeRuntime>,
    /// The pod with the resources allocated to it (the source's own when they are its spec's).
    pod: Arc<Pod>,
    /// Its resize that waits for the node, if one does.
    resize_pending: Option<PendingResize>,
    uid: String,
    state: WorkerState,
    /// The runtime side's memory of the pod (back-offs, volumes).
    sync_state: PodSyncState,
    start_time: Option<Time>,
    /// The runtime view and waiting reasons of the last status published.
    last_published: Option<(PodRuntimeStatus, HashMap<String, Waiting>)>,
    /// When the SyncLoop handed the pod over (upstream's first-seen time, for the metrics).
    first_seen: std::time::Instant,
    /// Whether a sync ran yet (the first is `create` in the metrics, later ones `sync`).
    synced: bool,
    /// Whether the pod's first run was counted in the start metrics.
    start_recorded: bool,
}

impl PodWorker {
    /// The worker's life; a sync, eviction or termination future is boxed, not held idle.
    async fn run(
        mut self,
        mut inbox: mpsc::UnboundedReceiver<WorkerMessage>,
        predecessor: Option<watch::Receiver<bool>>,
        done: watch::Sender<bool>,
    ) {
        if let Some(mut predecessor) = predecessor {
            debug!("waiting for the previous pod of this name to terminate");
            tokio::select! {
                _ = async { let _ = predecessor.wait_for(|finished| *finished).await; } => {}
                Some(WorkerMessage::Terminate { grace }) = inbox.recv() => {
                    Box::pin(self.terminate(grace, &mut inbox)).await;
                    let _ = done.send(true);
                    return;
                }
            }
        }
        let metrics = crate::metrics::kubelet::kubelet();
        metrics
            .pod_worker_start_duration
            .observe(self.first_seen.elapsed().as_secs_f64());
        let mut next_sync = Instant::now();
        // The first sync runs at once: a timer at `now` would fire at the timer wheel's next
        // millisecond tick, which a new pod's start would wait for.
        let mut first_sync = true;
        while self.state != WorkerState::Terminated {
            let message = if std::mem::take(&mut first_sync) {
                Some(WorkerMessage::Sync)
            } else {
                tokio::select! {
                    message = inbox.recv() => message,
                    _ = tokio::time::sleep_until(next_sync) => Some(WorkerMessage::Sync),
                }
            };
            let Some(first) = message else { return };
            let mut terminate: Option<Option<Duration>> = None;
            let mut sync = false;
            let mut republish = false;
            let mut exits = Vec::new();
            let mut evict = None;
            let mut update = None;
            for message in
                std::iter::once(first).chain(std::iter::from_fn(|| inbox.try_recv().ok()))
            {
                match message {
                    // Several deletes in one batch: the shortest period wins, as later.
                    WorkerMessage::Terminate { grace } => {
                        let earlier = terminate.flatten();
                        terminate = Some(match (earlier, grace) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => b.or(a),
                        });
                    }
                    WorkerMessage::Sync => sync = true,
                    WorkerMessage::Started { container_id } => {
                        sync |= !self.shows_running(&container_id)
                    }
                    WorkerMessage::Republish => republish = true,
                    WorkerMessage::Exited { container_id, exit } => {
                        exits.push((container_id, exit))
                    }
                    WorkerMessage::Evict { message, grace } => evict = Some((message, grace)),
                    WorkerMessage::Update {
                        pod,
                        resize_pending,
                    } => update = Some((pod, resize_pending)),
                }
            }
            if let Some((pod, resize_pending)) = update {
                self.update(pod, resize_pending);
                sync = true;
            }
            if let Some(grace) = terminate {
                let span = self.sync_span("kill");
                let began = std::time::Instant::now();
                // Teardown retries until it succeeds: its result is always ok.
                Box::pin(self.terminate(grace, &mut inbox))
                    .instrument(span.clone())
                    .await;
                crate::metrics::kubelet::kubelet().pod_worker_operation("kill", began);
                span.record("result", "ok");
                let _ = done.send(true);
                continue;
            }
            if self.state == WorkerState::Finished {
                next_sync = Instant::now() + self.node.runtime.sync_frequency;
                continue;
            }
            if let Some((message, grace)) = evict {
                let span = self.sync_span("kill");
                Box::pin(self.evict(message, grace))
                    .instrument(span.clone())
                    .await;
                span.record("result", "ok");
                continue;
            }
            if !exits.is_empty() {
                self.publish_exits(&exits);
            }
            if !sync {
                if republish {
                    self.republish();
                }
                continue;
            }
            let operation = if self.synced { "sync" } else { "create" };
            let span = self.sync_span(operation);
            let began = std::time::Instant::now();
            let outcome = Box::pin(self.sync()).instrument(span.clone()).await;
            crate::metrics::kubelet::kubelet().pod_worker_operation(operation, began);
            self.synced = true;
            span.record("result", if outcome.is_ok() { "ok" } else { "error" });
            let wait = match outcome {
                Ok(wait) => wait,
                Err(error) => {
                    span.in_scope(|| warn!(%error, "pod sync failed; retrying"));
                    SYNC_ERROR_RETRY
                }
            };
            next_sync = Instant::now() + wait;
        }
    }

    /// The span of one sync (upstream's sync types: `create` for the first, `sync`, `kill`),
    /// with its `result` recorded at the end; inside the pod's span, whose `pod` and `uid`
    /// the log lines show. Exported as a trace of its own (the pod's span lasts the pod's
    /// life) with those two as attributes. At `debug`: nothing at the default verbosity
    /// without trace export.
    fn sync_span(&self, sync_type: &'static str) -> tracing::Span {
        let span = tracing::debug_span!("sync", sync_type, result = tracing::field::Empty);
        crate::logging::export_as_root(&span, || {
            [
                ("pod", podutil::full_name(&self.pod)),
                ("uid", self.uid.clone()),
            ]
        });
        span
    }

    /// One sync: the runtime side brings the pod towards its spec, then the status is
    /// published and the probes follow the running containers. Returns when to sync again.
    async fn sync(&mut self) -> Result<Duration, SyncError> {
        let deadline_left = self.active_deadline_left();
        if deadline_left == Some(Duration::ZERO) {
            self.exceed_deadline().await;
            return Ok(self.node.runtime.sync_frequency);
        }
        let terminal = self.node.status.is_terminal(&self.uid);
        let unhealthy = self.unhealthy();
        // The probes of a condemned container go now, before the kill (a probe's exec must not
        // race the stop); its replacement gets new ones.
        for name in unhealthy.keys() {
            if let Some(probes) = self.probes.remove(name) {
                probes.quiesce().await;
            }
        }
        let not_started = self.not_started();
        let result = self
            .node
            .runtime
            .sync_pod(
                &self.pod,
                &mut self.sync_state,
                terminal,
                (&unhealthy, &not_started),
            )
            .await?;
        if self.start_time.is_none() {
            // A pod adopted after a restart keeps the start time of its first sandbox.
            let first_sandbox = result
                .runtime
                .sandboxes
                .iter()
                .map(|s| s.created_at)
                .filter(|t| *t > 0)
                .min();
            let started = first_sandbox
                .and_then(timestamps::time_of)
                .unwrap_or_else(SystemTime::now);
            self.start_time = Some(timestamps::api_time(started));
        }
        if result.finish {
            self.finish(result.runtime).await?;
            return Ok(self.node.runtime.sync_frequency);
        }
        let pod_ip = self.node.runtime.pod_ip(&self.pod, &result.runtime);
        self.update_probes(&result.runtime, &pod_ip);
        self.publish(&result.runtime, &result.waiting, false);
        if self.node.status.is_terminal(&self.uid) {
            self.finish(result.runtime).await?;
        }
        // Once started, the pod is synced again when its active deadline passes.
        let deadline_left = self.active_deadline_left().unwrap_or(Duration::MAX);
        Ok(result.requeue.min(deadline_left))
    }

    /// Takes the source's new version of the pod: the next sync brings the runtime, the
    /// volumes and the status towards it. Probes of running containers keep their tasks; new
    /// containers get the new probe configs.
    fn update(&mut self, pod: Arc<Pod>, resize_pending: Option<PendingResize>) {
        debug!("pod updated by its source");
        self.pod = pod;
        self.resize_pending = resize_pending;
        self.probe_configs = probes::probe_configs(&self.pod);
    }
}

mod ending;
mod probes;
mod publish;
mod teardown;
mod terminate;

pub use teardown::remove_orphan;
