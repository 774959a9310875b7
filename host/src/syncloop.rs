//! The SyncLoop: selects over source snapshots, PLEG events, a liveness tick and
//! housekeeping; admits new pods, hands each to its worker, terminates removed ones, and
//! cleans up pods the runtime holds that no source wants.

use crate::eviction::{EvictRequest, NodePressure};
use crate::health::Health;
use crate::pleg::PlegEvent;
use crate::pod_worker::{self, NodeRuntime, WorkerHandle, WorkerMessage};
use crate::source::{SourceSnapshot, StaticPod};
use crate::status;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::{info, warn};

/// Inputs of the loop.
pub struct SyncLoopInputs {
    pub source: watch::Receiver<Arc<SourceSnapshot>>,
    pub pleg_events: mpsc::Receiver<PlegEvent>,
    /// Pod UIDs the runtime holds for this node, after each relist.
    pub runtime_pods: watch::Receiver<HashSet<String>>,
    /// Pods the eviction manager evicts.
    pub evictions: mpsc::Receiver<EvictRequest>,
}

/// The loop's state: one worker per admitted pod.
pub struct SyncLoop {
    node: Arc<NodeRuntime>,
    health: Arc<Health>,
    max_pods: usize,
    housekeeping_period: Duration,
    workers: HashMap<String, WorkerHandle>,
    /// Pods refused at admission: shown as Failed, never run.
    rejected: HashSet<String>,
    orphan_cleanups: HashMap<String, JoinHandle<()>>,
    source_ready: bool,
    /// Pressure conditions, for admission.
    pressure: Arc<NodePressure>,
}

impl SyncLoop {
    pub fn new(
        node: Arc<NodeRuntime>,
        health: Arc<Health>,
        max_pods: usize,
        housekeeping_period: Duration,
        pressure: Arc<NodePressure>,
    ) -> Self {
        Self {
            pressure,
            node,
            health,
            max_pods,
            housekeeping_period,
            workers: HashMap::new(),
            rejected: HashSet::new(),
            orphan_cleanups: HashMap::new(),
            source_ready: false,
        }
    }

    /// Runs until the source goes away.
    pub async fn run(mut self, mut inputs: SyncLoopInputs) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut housekeeping = tokio::time::interval(self.housekeeping_period);
        housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        self.health.syncloop_alive();
        loop {
            tokio::select! {
                changed = inputs.source.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let snapshot = inputs.source.borrow_and_update().clone();
                    self.apply(&snapshot);
                }
                Some(event) = inputs.pleg_events.recv() => {
                    if let Some(worker) = self.workers.get(&event.pod_uid) {
                        worker.send(match event.exit {
                            Some(exit) => WorkerMessage::Exited { container_id: event.container_id, exit },
                            None => WorkerMessage::Sync,
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
                    self.housekeeping(&runtime_pods);
                }
            }
        }
    }

    fn active_pods(&self) -> usize {
        self.workers
            .values()
            .filter(|w| !w.terminating)
            .filter(|w| {
                let phase = self
                    .node
                    .store
                    .get(&w.uid)
                    .and_then(|p| p.status)
                    .and_then(|s| s.phase);
                !matches!(phase.as_deref(), Some("Succeeded") | Some("Failed"))
            })
            .count()
    }

    /// Brings the workers in line with a source snapshot: removals first, then additions.
    pub fn apply(&mut self, snapshot: &SourceSnapshot) {
        self.source_ready |= snapshot.ready;
        let desired: HashMap<&str, &StaticPod> =
            snapshot.pods.iter().map(|p| (p.uid(), p)).collect();
        for (uid, worker) in self.workers.iter_mut() {
            if !worker.terminating && !desired.contains_key(uid.as_str()) {
                info!(pod = %worker.full_name, %uid, "pod removed from its source; terminating");
                worker.terminate();
            }
        }
        let store = &self.node.store;
        self.rejected.retain(|uid| {
            let keep = desired.contains_key(uid.as_str());
            if !keep {
                store.remove(uid);
            }
            keep
        });
        for static_pod in &snapshot.pods {
            let uid = static_pod.uid();
            if self.workers.contains_key(uid) || self.rejected.contains(uid) {
                continue;
            }
            self.admit(static_pod);
        }
    }

    /// Shows `pod` as Failed with `reason` and never runs it.
    fn reject(
        &mut self,
        pod: k8s_openapi::api::core::v1::Pod,
        uid: String,
        reason: &str,
        message: String,
    ) {
        warn!(pod = %pod_worker::full_name(&pod), %uid, %reason, %message, "pod rejected at admission");
        let mut rejected = pod;
        rejected.status = Some(status::rejected(reason, message, &self.node.node.node_ip));
        self.node.store.set(rejected);
        self.rejected.insert(uid);
    }

    fn admit(&mut self, static_pod: &StaticPod) {
        let uid = static_pod.uid().to_string();
        let pod = static_pod.pod.clone();
        let active = self.active_pods();
        if active >= self.max_pods {
            let message = format!(
                "Node didn't have enough resource: pods, requested: 1, used: {active}, capacity: {}",
                self.max_pods
            );
            return self.reject(pod, uid, "OutOfpods", message);
        }
        if let Err(message) = self.pressure.admit(&pod) {
            return self.reject(pod, uid, "Evicted", message);
        }
        // Volumes this node cannot serve without an API server fail admission, as upstream's
        // kubelet fails a pod whose volumes it cannot mount.
        let unsupported = pod
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .find_map(|v| {
                crate::volumes::unsupported(v)
                    .map(|reason| format!("volume {:?}: {reason}", v.name))
            });
        if let Some(message) = unsupported {
            return self.reject(pod, uid, "UnsupportedVolume", message);
        }
        if let Some(message) = self.plugin_admission(&pod) {
            return self.reject(pod, uid, "PluginAdmission", message);
        }
        let full_name = pod_worker::full_name(&pod);
        let predecessor = self
            .workers
            .values()
            .find(|w| w.full_name == full_name && w.terminating)
            .map(|w| w.done.clone());
        info!(pod = %full_name, %uid, file = %static_pod.file.display(), "pod added");
        let mut pending = pod.clone();
        pending.status = Some(status::generate(&status::StatusInput {
            pod: &pod,
            runtime: &Default::default(),
            waiting: &Default::default(),
            probes: &Default::default(),
            host_ip: &self.node.node.node_ip,
            runtime_name: &self.node.runtime_name,
            start_time: None,
            previous: None,
            terminal: false,
        }));
        self.node.store.set(pending);
        self.workers
            .insert(uid, pod_worker::spawn(self.node.clone(), pod, predecessor));
    }

    /// Asks the `lifecycle-hooks` plugins whether `pod` may run, after the built-in handlers
    /// admitted it; `Some(message)` rejects it. Runs inline (bounded by each plugin's
    /// deadline) so that admission stays one ordered decision per pod, as upstream's.
    fn plugin_admission(&self, pod: &k8s_openapi::api::core::v1::Pod) -> Option<String> {
        use wasmlet_plugin_host::{AdmissionContainer, AdmissionPod, PodMeta, World};
        use wasmlet_policy_default::QosClass;
        let plugins = &self.node.prober.plugins;
        if !plugins.has(World::LifecycleHooks) {
            return None;
        }
        let spec = pod.spec.clone().unwrap_or_default();
        let has = |c: &k8s_openapi::api::core::v1::Container, limits: bool, name: &str| {
            c.resources
                .as_ref()
                .and_then(|r| {
                    if limits {
                        r.limits.as_ref()
                    } else {
                        r.requests.as_ref()
                    }
                })
                .is_some_and(|m| m.contains_key(name))
        };
        let container =
            |c: &k8s_openapi::api::core::v1::Container, is_init: bool| AdmissionContainer {
                name: c.name.clone(),
                is_init,
                has_cpu_request: has(c, false, "cpu"),
                has_memory_request: has(c, false, "memory"),
                has_cpu_limit: has(c, true, "cpu"),
                has_memory_limit: has(c, true, "memory"),
            };
        let containers = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| container(c, true))
            .chain(spec.containers.iter().map(|c| container(c, false)))
            .collect();
        let admission = AdmissionPod {
            priority: spec.priority.unwrap_or(0),
            qos: match crate::cri::pod_config::pod_qos(pod) {
                crate::resources::QosClass::Guaranteed => QosClass::Guaranteed,
                crate::resources::QosClass::Burstable => QosClass::Burstable,
                crate::resources::QosClass::BestEffort => QosClass::BestEffort,
            },
            // Every pod here comes from the static manifest directory, and upstream counts
            // static pods as critical.
            is_static: true,
            is_critical: true,
            containers,
        };
        let m = &pod.metadata;
        let meta = PodMeta {
            namespace: m.namespace.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            uid: m.uid.clone().unwrap_or_default(),
            labels: m.labels.clone().unwrap_or_default(),
            annotations: m.annotations.clone().unwrap_or_default(),
        };
        let decision = tokio::task::block_in_place(|| plugins.admit(&admission, meta));
        match decision {
            Ok(_) => None,
            Err((message, by)) => {
                info!(pod = %pod_worker::full_name(pod), decided_by = ?by, %message, "admission plugin rejected the pod");
                Some(message)
            }
        }
    }

    /// Forgets finished workers and terminates pods the runtime holds that nobody wants,
    /// once the source has been read (so a restart never kills pods it is about to adopt).
    fn housekeeping(&mut self, runtime_pods: &HashSet<String>) {
        self.workers.retain(|_, w| !w.finished());
        self.orphan_cleanups.retain(|_, task| !task.is_finished());
        if !self.source_ready {
            return;
        }
        for uid in runtime_pods {
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
}
