//! The SyncLoop: selects over the merged pod updates, PLEG events, evictions, a liveness tick
//! and housekeeping; admits new pods through the admission chain, hands each to its worker,
//! terminates removed ones, and cleans up pods the runtime holds that no source wants.

use crate::admission::{AdmitAttributes, PodAdmitChain};
use crate::allocation::{self, checkpoint, Allocatable, Allocations, Outcome};
use crate::events::{EventType, ObjectRef};
use crate::eviction::EvictRequest;
use crate::health::Health;
use crate::kuberuntime::pod_cgroup;
use crate::metrics::kubelet as kubelet_metrics;
use crate::pleg::{PlegEvent, PlegEventKind};
use crate::pod_worker::{self, NodeRuntime, WorkerHandle, WorkerMessage};
use crate::podutil;
use crate::source::merge::{PodUpdates, SourcePod};
use crate::status;
use k8s_openapi::api::core::v1::Pod;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::{info, warn};

/// How often the QoS-level cgroups are written again when nothing changed (upstream's
/// `periodicQOSCgroupUpdateInterval`).
const QOS_CGROUP_REFRESH: Duration = Duration::from_secs(60);

/// The grace period of a graceful delete: `deletionGracePeriodSeconds` once
/// `deletionTimestamp` is set (the pod's own period if the deletion names none).
fn deletion_grace(pod: &Pod) -> Option<Duration> {
    pod.metadata.deletion_timestamp.as_ref()?;
    Some(pod.metadata.deletion_grace_period_seconds.map_or_else(
        || podutil::grace_period(pod),
        |s| Duration::from_secs(s.max(0) as u64),
    ))
}

/// Inputs of the loop.
pub struct SyncLoopInputs {
    /// Additions, updates and removals of the merged pod sources.
    pub updates: mpsc::UnboundedReceiver<PodUpdates>,
    /// What changed in the runtime.
    pub pleg_events: mpsc::Receiver<PlegEvent>,
    /// Pod UIDs the runtime holds for this node, after each relist (`None` before the first).
    pub runtime_pods: watch::Receiver<Option<HashSet<String>>>,
    /// Pods the eviction manager evicts.
    pub evictions: mpsc::Receiver<EvictRequest>,
}

/// The loop's state: one worker per admitted pod.
pub struct SyncLoop {
    node: Arc<NodeRuntime>,
    health: Arc<Health>,
    admission: PodAdmitChain,
    housekeeping_period: Duration,
    /// What the sources want, by UID.
    desired: HashMap<String, SourcePod>,
    workers: HashMap<String, WorkerHandle>,
    /// Pods refused at admission: shown as Failed, never run.
    rejected: HashSet<String>,
    orphan_cleanups: HashMap<String, JoinHandle<()>>,
    /// What each admitted pod was granted, and its resizes that wait.
    allocations: Allocations,
    /// The Burstable CPU requests the QoS-level cgroups were last given, and when.
    qos_written: Option<(i64, std::time::Instant)>,
    source_ready: bool,
}

impl SyncLoop {
    /// A loop over `node`'s workers, admitting through `admission`.
    pub fn new(
        node: Arc<NodeRuntime>,
        health: Arc<Health>,
        admission: PodAdmitChain,
        housekeeping_period: Duration,
    ) -> Self {
        let checkpoint = node.runtime.node.root_dir.join(checkpoint::FILE_NAME);
        let allocations = Allocations::with_checkpoint(checkpoint);
        Self {
            node,
            health,
            admission,
            housekeeping_period,
            desired: HashMap::new(),
            workers: HashMap::new(),
            rejected: HashSet::new(),
            orphan_cleanups: HashMap::new(),
            allocations,
            qos_written: None,
            source_ready: false,
        }
    }

    /// Runs until the sources go away.
    pub async fn run(mut self, mut inputs: SyncLoopInputs) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut housekeeping = tokio::time::interval(self.housekeeping_period);
        housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        self.health.syncloop_alive();
        loop {
            tokio::select! {
                updates = inputs.updates.recv() => {
                    let Some(updates) = updates else { return };
                    let runtime_pods = inputs.runtime_pods.borrow().clone();
                    self.apply(updates, runtime_pods.as_ref());
                }
                Some(event) = inputs.pleg_events.recv() => {
                    if let Some(worker) = self.workers.get(&event.pod_uid) {
                        worker.send(match (event.exit, event.kind) {
                            (Some(exit), _) => WorkerMessage::Exited { container_id: event.container_id, exit },
                            (None, PlegEventKind::ContainerStarted) => WorkerMessage::Started { container_id: event.container_id },
                            (None, _) => WorkerMessage::Sync,
                        });
                    }
                }
                Some(eviction) = inputs.evictions.recv() => {
                    if let Some(worker) = self.workers.get(&eviction.uid) {
                        worker.send(WorkerMessage::Evict { message: eviction.message, grace: eviction.grace });
                    }
                }
                _ = tick.tick() => self.health.syncloop_alive(),
                _ = housekeeping.tick() => {
                    let runtime_pods = inputs.runtime_pods.borrow().clone();
                    self.housekeeping(runtime_pods.as_ref());
                }
            }
        }
    }

    /// `kubelet_desired_pods` and `kubelet_active_pods`, by whether the pod is static.
    fn record_pod_counts(&self) {
        let metrics = kubelet_metrics::kubelet();
        let count = |pods: &mut dyn Iterator<Item = &Pod>| {
            pods.fold([0i64; 2], |mut counts, pod| {
                counts[usize::from(podutil::is_static(pod))] += 1;
                counts
            })
        };
        let desired = count(&mut self.desired.values().map(|p| &*p.pod));
        let mut active = [0i64; 2];
        self.visit_active_pods(|pod| active[usize::from(podutil::is_static(pod))] += 1);
        for (is_static, index) in [(false, 0), (true, 1)] {
            let label = kubelet_metrics::static_label(is_static);
            metrics
                .desired_pods
                .get_or_create(&label)
                .set(desired[index]);
            metrics.active_pods.get_or_create(&label).set(active[index]);
        }
    }

    /// The pods admitted that are neither terminating nor terminal.
    fn active_pods(&self) -> Vec<Pod> {
        let mut active = Vec::new();
        self.visit_active_pods(|pod| active.push(pod.clone()));
        active
    }

    /// Calls `f` with each active pod (see [`Self::active_pods`]) as the status store holds
    /// it, without copying it.
    fn visit_active_pods(&self, mut f: impl FnMut(&Pod)) {
        let running = self.workers.values().filter(|w| !w.terminating);
        self.node
            .status
            .visit(running.map(|w| w.uid.as_str()), |pod| {
                if !podutil::is_terminal(pod) {
                    f(pod);
                }
            });
    }

    /// Applies one batch of source changes: removals first, then additions.
    pub fn apply(&mut self, updates: PodUpdates, runtime_pods: Option<&HashSet<String>>) {
        self.source_ready |= updates.ready;
        for uid in &updates.removed {
            self.desired.remove(uid);
            if self.rejected.remove(uid) {
                self.node.status.remove(uid);
            }
            match self.workers.get_mut(uid) {
                Some(worker) if !worker.terminating => {
                    info!(pod = %worker.full_name, %uid, "pod removed from its source; terminating");
                    worker.terminate(None);
                }
                // Removed while it stops (a forced delete): the stop under way gets the
                // minimum grace period, as upstream's for a deletion of grace 0.
                Some(worker) => worker.terminate(Some(Duration::ZERO)),
                None => {}
            }
        }
        for pod in updates.updated {
            let uid = pod.uid().to_string();
            if let Some(grace) = deletion_grace(&pod.pod) {
                // A graceful delete (upstream treats it as an update): stop the pod with the
                // deletion's grace period; the API object goes once the pod is gone.
                // A second delete with a shorter period reaches a worker already stopping the
                // pod, which shortens its stop; a longer or equal one changes nothing there.
                if let Some(worker) = self.workers.get_mut(&uid) {
                    if !worker.terminating {
                        info!(pod = %worker.full_name, %uid, grace_s = grace.as_secs(), "pod deleted in the API server; terminating");
                    }
                    worker.terminate(Some(grace));
                }
            } else if self.workers.get(&uid).is_some_and(|w| !w.terminating) {
                // Under one UID only the spec's mutable parts (images, activeDeadlineSeconds,
                // tolerations, ephemeral containers, resources) and the metadata change: the
                // worker acts on the new pod as allocated, as upstream's UpdatePod; a resize
                // waits for the retry below.
                info!(pod = %podutil::full_name(&pod.pod), %uid, "pod updated");
                self.allocations.pod_updated(&pod.pod);
                self.send_update(&uid, &pod.pod);
            }
            self.desired.insert(uid, pod);
        }
        self.retry_resizes();
        let changed = !updates.added.is_empty() || !updates.removed.is_empty();
        for pod in updates.added {
            let uid = pod.uid().to_string();
            self.desired.insert(uid.clone(), pod);
            self.admit_desired(&uid, runtime_pods);
        }
        // The QoS tiers follow pods as they come and go (upstream updates them as it makes a
        // pod's cgroup), not only on housekeeping.
        if changed {
            self.update_qos_cgroups();
        }
        self.record_pod_counts();
    }

    /// Admits the desired pod `uid` unless it already has a worker or was refused. A pod
    /// deleted before it started gets a worker that terminates it at once, so its API
    /// object is removed as for any other pod.
    fn admit_desired(&mut self, uid: &str, runtime_pods: Option<&HashSet<String>>) {
        if self.workers.contains_key(uid) || self.rejected.contains(uid) {
            return;
        }
        let Some(source_pod) = self.desired.get(uid).cloned() else {
            return;
        };
        let other_pods = self.active_pods();
        let admitted = self.allocations.admitted_form(&source_pod.pod);
        let attrs = AdmitAttributes {
            pod: &admitted,
            other_pods: &other_pods,
        };
        if let Err(rejection) = self.admission.admit(&attrs) {
            let pod = &source_pod.pod;
            warn!(pod = %podutil::full_name(pod), %uid, reason = rejection.reason, message = %rejection.message, "pod rejected at admission");
            let status =
                status::rejected(&rejection.reason, rejection.message, self.node.node_ip());
            self.node.status.set_status(pod, status);
            self.rejected.insert(uid.to_string());
            return;
        }
        self.allocations.admit(&source_pod.pod);
        let pod = admitted;
        let full_name = podutil::full_name(&pod);
        let predecessor = self
            .workers
            .values()
            .find(|w| w.full_name == full_name && w.terminating)
            .map(|w| w.done.clone());
        info!(pod = %full_name, %uid, file = %source_pod.origin, "pod added");
        let pending = status::generate(&status::StatusInput {
            pod: &pod,
            runtime: &Default::default(),
            waiting: &Default::default(),
            probes: &Default::default(),
            host_ip: self.node.node_ip(),
            runtime_name: &self.node.runtime_name,
            start_time: None,
            previous: None,
            terminal: false,
            applied: &Default::default(),
            resize_pending: None,
        });
        self.node.status.set_status(&pod, pending);
        // After a relist that did not list it (and with no cleanup of it under way), the
        // runtime holds nothing for this pod: its first sync need not read the runtime.
        let known_empty = runtime_pods.is_some_and(|pods| !pods.contains(uid))
            && !self.orphan_cleanups.contains_key(uid);
        let grace = deletion_grace(&pod);
        let mut worker = pod_worker::spawn(self.node.clone(), pod, predecessor, known_empty);
        if grace.is_some() {
            worker.terminate(grace);
        }
        self.workers.insert(uid.to_string(), worker);
    }

    /// Forgets finished workers, starts again the pods a source still wants whose previous
    /// worker has finished (a UID removed and added back while it terminated), and terminates
    /// pods the runtime holds that nobody wants, once the sources have been read (so a
    /// restart never kills pods it is about to adopt).
    fn housekeeping(&mut self, runtime_pods: Option<&HashSet<String>>) {
        self.workers.retain(|_, w| !w.finished());
        self.allocations
            .retain(|uid| self.workers.contains_key(uid));
        if self.source_ready {
            self.allocations.forget_restored();
        }
        self.allocations.save();
        self.orphan_cleanups.retain(|_, task| !task.is_finished());
        // A pod being deleted in the API server that has terminated is not started again.
        let restart: Vec<String> = self
            .desired
            .iter()
            .filter(|(uid, pod)| {
                !self.workers.contains_key(*uid)
                    && !self.rejected.contains(*uid)
                    && deletion_grace(&pod.pod).is_none()
            })
            .map(|(uid, _)| uid.clone())
            .collect();
        let metrics = kubelet_metrics::kubelet();
        for uid in restart {
            info!(%uid, "pod wanted again after its termination; starting it");
            if let Some(pod) = self.desired.get(&uid) {
                metrics
                    .restarted_pods
                    .get_or_create(&kubelet_metrics::static_label(podutil::is_static(&pod.pod)))
                    .inc();
            }
            self.admit_desired(&uid, None);
        }
        self.record_pod_counts();
        self.retry_resizes();
        self.update_qos_cgroups();
        if !self.source_ready {
            return;
        }
        for uid in runtime_pods.into_iter().flatten() {
            if self.workers.contains_key(uid)
                || self.orphan_cleanups.contains_key(uid)
                || uid.is_empty()
            {
                continue;
            }
            let task = tokio::spawn(pod_worker::remove_orphan(self.node.clone(), uid.clone()));
            self.orphan_cleanups.insert(uid.clone(), task);
        }
    }

    /// Hands the worker of `uid` its pod as the source now has it, with the resources
    /// allocated to it and its resize that waits, if any.
    fn send_update(&self, uid: &str, pod: &Arc<Pod>) {
        if let Some(worker) = self.workers.get(uid) {
            worker.send(WorkerMessage::Update {
                pod: self.allocations.allocated_shared(pod),
                resize_pending: self.allocations.pending(uid).cloned(),
            });
        }
    }

    /// Tries the resizes that wait again (upstream's `RetryPendingResizes`), against the
    /// active pods as allocated and the admission chain; a pod whose resize is granted or
    /// whose wait changed gets its event and the update.
    fn retry_resizes(&mut self) {
        if !self.allocations.has_queued() {
            return;
        }
        let active = self.active_pods();
        let node = &self.node.runtime.node;
        let allocatable = Allocatable {
            cpu_millis: node.allocatable_cpu_millis,
            memory_bytes: node.allocatable_memory_bytes,
        };
        let (workers, desired, admission) = (&self.workers, &self.desired, &self.admission);
        let changes = self.allocations.retry(
            |uid| {
                let running = workers.get(uid).is_some_and(|w| !w.terminating);
                desired
                    .get(uid)
                    .filter(|_| running)
                    .map(|p| Pod::clone(&p.pod))
            },
            &active,
            allocatable,
            |pod, other_pods| admission.admit(&AdmitAttributes { pod, other_pods }),
        );
        for (uid, outcome) in changes {
            let Some(pod) = self.desired.get(&uid).map(|p| p.pod.clone()) else {
                continue;
            };
            let event = match &outcome {
                Outcome::Granted => Some((
                    EventType::Normal,
                    "ResizeStarted",
                    allocation::resize_message(&pod, "Pod resize started", ""),
                )),
                Outcome::Pending(pending) => Some((
                    EventType::Warning,
                    match pending.reason {
                        allocation::PendingReason::Deferred => "ResizeDeferred",
                        allocation::PendingReason::Infeasible => "ResizeInfeasible",
                    },
                    allocation::resize_message(
                        &pod,
                        &format!("Pod resize {}", pending.reason.as_str()),
                        &pending.message,
                    ),
                )),
                Outcome::Cleared => None,
            };
            if let Some((kind, reason, message)) = event {
                info!(pod = %podutil::full_name(&pod), %uid, reason, %message, "in-place resize");
                self.node
                    .runtime
                    .events
                    .record(&ObjectRef::pod(&pod), kind, reason, message);
            }
            self.send_update(&uid, &pod);
        }
    }

    /// Upstream's `UpdateQOSCgroups`: `kubepods/burstable` gets the shares of the active
    /// Burstable pods' CPU requests as allocated, `besteffort` the fewest; written when the
    /// sum changes and re-asserted every minute, as upstream's periodic update.
    fn update_qos_cgroups(&mut self) {
        let mut millis = 0i64;
        self.visit_active_pods(|pod| {
            let allocated = self.allocations.allocated(pod);
            millis = millis.saturating_add(pod_cgroup::burstable_cpu_millis([&*allocated]));
        });
        let fresh = self
            .qos_written
            .is_some_and(|(written, at)| written == millis && at.elapsed() < QOS_CGROUP_REFRESH);
        if fresh {
            return;
        }
        if let Err(error) = pod_cgroup::set_qos_cgroups(millis) {
            warn!(%error, burstable_cpu_millis = millis, "the QoS-level cgroups could not be updated");
        }
        self.qos_written = Some((millis, std::time::Instant::now()));
    }
}
