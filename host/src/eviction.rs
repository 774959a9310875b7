//! Node-pressure eviction, as upstream's eviction manager (`eviction_manager.go`
//! `synchronize`), with the ranking asked of the `eviction-policy` plugin: measure the
//! signals, hold the pressure conditions for the transition period, reclaim disk through GC
//! first, then evict at most one pod per cycle. Every decision is kept for `/evictions`.

pub mod pod_stats;
pub mod signals;

use crate::config::eviction::{Threshold, ThresholdValue};
use crate::cri::pod_config;
use crate::gc::GarbageCollector;
use crate::metrics::{decided_by_label, EvictionLabels, Metrics, PluginLabels};
use crate::resources::{self, QosClass};
use crate::status::{self, StatusStore};
use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;
use tracing::{info, warn};
use wasmlet_plugin_host::{DecidedBy, EvictionSnapshot, PluginRegistry, PodMeta};
use wasmlet_policy_default::{NodeInfo, PodInfo, Pressure, Signal, SignalObservation};

/// Upstream's `SystemCriticalPriority`: pods at or above it are never evicted.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;
/// Upstream's pod grace for hard evictions (`immediateEvictionGracePeriodSeconds`).
const HARD_EVICTION_GRACE: Duration = Duration::from_secs(1);
/// How long a cycle waits for an evicted pod to be cleaned up (`podCleanupTimeout`).
const POD_CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Decisions kept for `/evictions`.
const DECISION_LOG_LEN: usize = 100;

/// The node conditions eviction sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Condition {
    MemoryPressure,
    DiskPressure,
    #[serde(rename = "PIDPressure")]
    PidPressure,
}

impl Condition {
    pub fn as_str(self) -> &'static str {
        match self {
            Condition::MemoryPressure => "MemoryPressure",
            Condition::DiskPressure => "DiskPressure",
            Condition::PidPressure => "PIDPressure",
        }
    }

    fn of(signal: Signal) -> Condition {
        match signal.pressure() {
            Pressure::Memory => Condition::MemoryPressure,
            Pressure::Pid => Condition::PidPressure,
            Pressure::Disk | Pressure::Inodes => Condition::DiskPressure,
        }
    }

    /// The taint the control plane puts on a node with this condition.
    fn taint_key(self) -> &'static str {
        match self {
            Condition::MemoryPressure => "node.kubernetes.io/memory-pressure",
            Condition::DiskPressure => "node.kubernetes.io/disk-pressure",
            Condition::PidPressure => "node.kubernetes.io/pid-pressure",
        }
    }
}

/// One condition as `/node` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionState {
    pub active: bool,
    /// When `active` last changed.
    pub last_transition: SystemTime,
    /// When a threshold of this condition was last met.
    pub last_observed: Option<SystemTime>,
}

/// The pressure conditions and the latest observations, shared with admission and `/node`.
#[derive(Debug, Default)]
pub struct NodePressure {
    conditions: Mutex<BTreeMap<Condition, ConditionState>>,
    observations: Mutex<Vec<Observation>>,
    evict_static_pods: bool,
}

/// One signal's latest measurement.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    pub signal: &'static str,
    pub available: i64,
    pub capacity: i64,
}

impl NodePressure {
    pub fn new(evict_static_pods: bool) -> Self {
        let now = SystemTime::now();
        let conditions = [
            Condition::MemoryPressure,
            Condition::DiskPressure,
            Condition::PidPressure,
        ]
        .into_iter()
        .map(|c| {
            (
                c,
                ConditionState {
                    active: false,
                    last_transition: now,
                    last_observed: None,
                },
            )
        })
        .collect();
        NodePressure {
            conditions: Mutex::new(conditions),
            observations: Mutex::new(Vec::new()),
            evict_static_pods,
        }
    }

    /// Every condition and its state.
    pub fn conditions(&self) -> BTreeMap<Condition, ConditionState> {
        self.conditions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The latest measurement of every signal.
    pub fn observations(&self) -> Vec<Observation> {
        self.observations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn active(&self) -> Vec<Condition> {
        self.conditions()
            .into_iter()
            .filter(|(_, s)| s.active)
            .map(|(c, _)| c)
            .collect()
    }

    /// Whether upstream would treat `pod` as critical: static pods (unless the node evicts
    /// them) and system-critical priorities.
    pub fn is_critical(&self, pod: &Pod) -> bool {
        (is_static(pod) && !self.evict_static_pods) || priority(pod) >= SYSTEM_CRITICAL_PRIORITY
    }

    /// Upstream's eviction `Admit`: under MemoryPressure, BestEffort pods are refused unless
    /// they tolerate the memory-pressure taint; under any other pressure every non-critical
    /// pod is. The error is the rejection message.
    pub fn admit(&self, pod: &Pod) -> Result<(), String> {
        let active = self.active();
        if active.is_empty() || self.is_critical(pod) {
            return Ok(());
        }
        let refuse = if active == [Condition::MemoryPressure] {
            pod_config::pod_qos(pod) == QosClass::BestEffort
                && !tolerates(pod, Condition::MemoryPressure)
        } else {
            true
        };
        if !refuse {
            return Ok(());
        }
        let names: Vec<&str> = active.iter().map(|c| c.as_str()).collect();
        Err(format!(
            "Pod was rejected: The node had condition: [{}].",
            names.join(", ")
        ))
    }
}

fn tolerates(pod: &Pod, condition: Condition) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_ref())
        .is_some_and(|tolerations| {
            tolerations.iter().any(|t| {
                let key_matches = match t.key.as_deref() {
                    None | Some("") => t.operator.as_deref() == Some("Exists"),
                    Some(key) => key == condition.taint_key(),
                };
                let effect_matches =
                    matches!(t.effect.as_deref(), None | Some("") | Some("NoSchedule"));
                key_matches && effect_matches
            })
        })
}

fn is_static(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubernetes.io/config.source"))
        .is_some_and(|source| source != "api")
}

fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// A request to kill a pod for eviction, routed by the SyncLoop to the pod's worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvictRequest {
    pub uid: String,
    /// The status message, naming the signal and the usage.
    pub message: String,
    pub grace: Duration,
}

/// A ranked candidate in the decision log.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub pod: String,
    pub namespace: String,
    pub qos_class: &'static str,
    pub priority: i32,
    pub memory_usage_bytes: u64,
    pub memory_request_bytes: u64,
}

/// What a shadow plugin chose for the same snapshot.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowChoice {
    pub decided_by: DecidedBy,
    /// The pod the shadow would have evicted (`None`: none, or it faulted).
    pub would_evict: Option<String>,
    pub ranking: Vec<String>,
    pub agrees: bool,
    pub error: Option<String>,
}

/// One eviction cycle that ranked pods: who decided, what was ranked, what happened.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRecord {
    pub time: String,
    /// Cycle number of the eviction manager, to see that no cycle was missed or doubled.
    pub cycle: u64,
    pub signal: &'static str,
    pub threshold: i64,
    pub available: i64,
    pub decided_by: DecidedBy,
    /// Candidates in the order the plugin ranked them (evictable pods only).
    pub ranking: Vec<String>,
    pub candidates: Vec<Candidate>,
    pub evicted: Option<String>,
    pub message: Option<String>,
    pub shadow: Option<ShadowChoice>,
}

/// The most recent eviction decisions, for `/evictions` ("why was my pod evicted").
#[derive(Debug, Default)]
pub struct DecisionLog(Mutex<VecDeque<DecisionRecord>>);

impl DecisionLog {
    /// The decisions kept, oldest first.
    pub fn list(&self) -> Vec<DecisionRecord> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    fn push(&self, decision: DecisionRecord) {
        let mut log = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if log.len() == DECISION_LOG_LEN {
            log.pop_front();
        }
        log.push_back(decision);
    }
}

/// The eviction manager's settings.
#[derive(Debug, Clone)]
pub struct EvictionConfig {
    pub thresholds: Vec<Threshold>,
    pub pressure_transition_period: Duration,
    /// Cap on soft-eviction grace (0: the pod's own).
    pub max_pod_grace_period: Duration,
    pub monitoring_period: Duration,
    /// nodefs: the kubelet's root dir.
    pub root_dir: PathBuf,
    /// Pod log directories count towards a pod's disk usage.
    pub pod_logs_dir: PathBuf,
    /// Only this node's containers are measured.
    pub node_name: String,
}

/// The eviction manager: one `synchronize` per monitoring period.
pub struct EvictionManager {
    pub config: EvictionConfig,
    pub pressure: Arc<NodePressure>,
    pub plugins: Arc<PluginRegistry>,
    pub metrics: Arc<Metrics>,
    pub store: Arc<StatusStore>,
    pub gc: Arc<GarbageCollector>,
    pub evictions: mpsc::Sender<EvictRequest>,
    pub log: Arc<DecisionLog>,
    /// Per-cycle memory; starts empty.
    pub(crate) state: Mutex<CycleState>,
    /// Previous CPU samples, for rates the runtime does not report.
    pub(crate) cpu: pod_stats::CpuSampler,
}

#[derive(Default)]
pub(crate) struct CycleState {
    cycle: u64,
    /// Thresholds met in the last cycle, by index: kept until min-reclaim is regained.
    met: Vec<usize>,
    /// When each threshold was first seen met (soft grace periods count from here).
    first_observed: HashMap<usize, Instant>,
    /// When each condition was last seen.
    last_observed: HashMap<Condition, Instant>,
}

/// One measurement of every signal: (available, capacity).
type Measured = HashMap<Signal, (i64, i64)>;

fn measure(root_dir: &std::path::Path, image_fs: Option<crate::fs_stats::FsStats>) -> Measured {
    let mut out = Measured::new();
    match signals::node_memory() {
        Ok(m) => {
            out.insert(Signal::MemoryAvailable, (m.available(), m.capacity as i64));
        }
        Err(error) => warn!(%error, "cannot measure memory.available"),
    }
    match crate::fs_stats::of(root_dir) {
        Ok(fs) => {
            out.insert(
                Signal::NodefsAvailable,
                (fs.available_bytes as i64, fs.capacity_bytes as i64),
            );
            out.insert(
                Signal::NodefsInodesFree,
                (fs.inodes_free as i64, fs.inodes as i64),
            );
        }
        Err(error) => warn!(dir = %root_dir.display(), %error, "cannot measure nodefs"),
    }
    if let Some(fs) = image_fs {
        out.insert(
            Signal::ImagefsAvailable,
            (fs.available_bytes as i64, fs.capacity_bytes as i64),
        );
        out.insert(
            Signal::ImagefsInodesFree,
            (fs.inodes_free as i64, fs.inodes as i64),
        );
    }
    match signals::pids() {
        Ok((max, running)) => {
            out.insert(
                Signal::PidAvailable,
                (max as i64 - running as i64, max as i64),
            );
        }
        Err(error) => warn!(%error, "cannot measure pid.available"),
    }
    out
}

/// Human-readable quantity for messages (`Ki` for bytes, plain for counts).
fn quantity(signal: Signal, value: i64) -> String {
    match signal.pressure() {
        Pressure::Memory | Pressure::Disk => format!("{}Ki", value / 1024),
        Pressure::Pid | Pressure::Inodes => value.to_string(),
    }
}

fn resource_name(signal: Signal) -> &'static str {
    match signal.pressure() {
        Pressure::Memory => "memory",
        Pressure::Disk => "ephemeral-storage",
        Pressure::Inodes => "inodes",
        Pressure::Pid => "pids",
    }
}

/// Sum of the pod's container requests of `resource`, in bytes.
fn pod_request_bytes(pod: &Pod, resource: &str) -> u64 {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .filter_map(|c| {
            c.resources
                .as_ref()?
                .requests
                .as_ref()?
                .get(resource)
                .cloned()
        })
        .filter_map(|q| resources::bytes(&q).ok())
        .map(|b| b.max(0) as u64)
        .sum()
}

impl EvictionManager {
    fn record(&self, decision: DecisionRecord) {
        self.log.push(decision);
    }

    /// Runs `synchronize` every monitoring period until the process ends.
    pub async fn run(self: Arc<Self>) {
        let mut timer = tokio::time::interval(self.config.monitoring_period);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            timer.tick().await;
            self.synchronize().await;
        }
    }

    async fn observe(&self) -> Measured {
        let image_fs = if self.config.thresholds.iter().any(|t| {
            matches!(
                t.signal,
                Signal::ImagefsAvailable | Signal::ImagefsInodesFree
            )
        }) {
            match crate::gc::images::image_fs(&self.gc.cri).await {
                Ok(fs) => Some(fs),
                Err(error) => {
                    warn!(%error, "cannot measure imagefs");
                    None
                }
            }
        } else {
            None
        };
        let measured = measure(&self.config.root_dir, image_fs);
        let mut observations: Vec<Observation> = measured
            .iter()
            .map(|(s, (available, capacity))| Observation {
                signal: s.as_str(),
                available: *available,
                capacity: *capacity,
            })
            .collect();
        observations.sort_by_key(|o| o.signal);
        *self
            .pressure
            .observations
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = observations;
        measured
    }

    /// Indices of the thresholds met now, counting min-reclaim for those met last cycle.
    fn thresholds_met(&self, measured: &Measured, previously: &[usize]) -> Vec<usize> {
        (0..self.config.thresholds.len())
            .filter(|&i| {
                let t = &self.config.thresholds[i];
                let Some(&(available, capacity)) = measured.get(&t.signal) else {
                    return false;
                };
                let mut threshold = t.value.resolve(capacity);
                if previously.contains(&i) {
                    threshold += t.min_reclaim.map_or(0, |r| r.resolve(capacity));
                }
                available < threshold
            })
            .collect()
    }

    /// One cycle of upstream's `synchronize`.
    pub async fn synchronize(&self) {
        let measured = self.observe().await;
        let now = Instant::now();
        let (cycle, met, active) = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            state.cycle += 1;
            let met = self.thresholds_met(&measured, &state.met);
            state.first_observed.retain(|i, _| met.contains(i));
            for &i in &met {
                state.first_observed.entry(i).or_insert(now);
                let condition = Condition::of(self.config.thresholds[i].signal);
                state.last_observed.insert(condition, now);
            }
            state.met = met.clone();
            // Thresholds whose grace period has passed: these act.
            let active: Vec<usize> = met
                .iter()
                .copied()
                .filter(|i| {
                    let t = &self.config.thresholds[*i];
                    t.is_hard() || now.duration_since(state.first_observed[i]) >= t.grace_period
                })
                .collect();
            self.update_conditions(&state.last_observed, now);
            (state.cycle, met, active)
        };
        if met.is_empty() || active.is_empty() {
            return;
        }
        // Memory first, as upstream sorts thresholds.
        let mut active = active;
        active.sort_by_key(|&i| self.config.thresholds[i].signal.pressure() != Pressure::Memory);
        let index = active[0];
        let threshold = self.config.thresholds[index].clone();

        if matches!(
            threshold.signal.pressure(),
            Pressure::Disk | Pressure::Inodes
        ) && self.reclaim_disk(&threshold).await
        {
            return;
        }
        let Some(&(available, capacity)) = measured.get(&threshold.signal) else {
            return;
        };
        self.evict_one(cycle, &threshold, available, capacity).await;
    }

    fn update_conditions(&self, last_observed: &HashMap<Condition, Instant>, now: Instant) {
        let wall = SystemTime::now();
        let mut conditions = self
            .pressure
            .conditions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for (condition, state) in conditions.iter_mut() {
            let seen = last_observed.get(condition);
            if let Some(at) = seen {
                state.last_observed = Some(wall - now.duration_since(*at));
            }
            let active = seen.is_some_and(|at| {
                now.duration_since(*at) < self.config.pressure_transition_period || *at == now
            });
            if active != state.active {
                info!(
                    condition = condition.as_str(),
                    active, "node condition changed"
                );
                state.active = active;
                state.last_transition = wall;
            }
        }
    }

    /// Container and image GC first for disk signals; true when that resolved the threshold.
    async fn reclaim_disk(&self, threshold: &Threshold) -> bool {
        info!(
            signal = threshold.signal.as_str(),
            "disk pressure: reclaiming node-level resources first"
        );
        self.gc.collect_containers().await;
        if matches!(
            threshold.signal,
            Signal::ImagefsAvailable | Signal::ImagefsInodesFree | Signal::NodefsAvailable
        ) {
            if let Err(error) = self
                .gc
                .images
                .collect(&self.gc.cri, &self.plugins, &self.metrics, Some(u64::MAX))
                .await
            {
                warn!(%error, "image GC under disk pressure failed");
            }
        }
        let measured = self.observe().await;
        let Some(&(available, capacity)) = measured.get(&threshold.signal) else {
            return false;
        };
        let needed = threshold.value.resolve(capacity)
            + threshold
                .min_reclaim
                .map_or(0, |r: ThresholdValue| r.resolve(capacity));
        let resolved = available >= needed;
        if resolved {
            info!(
                signal = threshold.signal.as_str(),
                available, "disk pressure relieved by GC; no pod evicted"
            );
        }
        resolved
    }

    /// The running pods as the plugin sees them.
    async fn snapshot(
        &self,
        threshold: &Threshold,
        available: i64,
        capacity: i64,
    ) -> (EvictionSnapshot, Vec<Pod>) {
        let runtime_usage =
            match pod_stats::collect(&self.gc.cri, &self.config.node_name, &self.cpu).await {
                Ok(usage) => usage,
                Err(error) => {
                    warn!(%error, "cannot read container stats; disk and CPU usage count as 0");
                    HashMap::new()
                }
            };
        let pods: Vec<Pod> = self
            .store
            .list()
            .into_iter()
            .filter(|p| {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                !matches!(phase, Some("Succeeded") | Some("Failed"))
                    && p.metadata.deletion_timestamp.is_none()
            })
            .collect();
        let mut infos = Vec::new();
        let mut meta = Vec::new();
        for pod in &pods {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let qos = pod_config::pod_qos(pod);
            let parent = qos.cgroup_parent(&uid);
            let usage = signals::cgroup_working_set(&parent);
            let runtime = runtime_usage.get(&uid).copied().unwrap_or_default();
            let (log_bytes, log_inodes) =
                pod_stats::dir_usage(&pod_config::log_directory(&self.config.pod_logs_dir, pod));
            let (volume_bytes, volume_inodes) = pod_stats::dir_usage(
                &self
                    .config
                    .root_dir
                    .join("pods")
                    .join(&uid)
                    .join("volumes/kubernetes.io~empty-dir"),
            );
            infos.push(PodInfo {
                priority: priority(pod),
                qos: match qos {
                    QosClass::Guaranteed => wasmlet_policy_default::QosClass::Guaranteed,
                    QosClass::Burstable => wasmlet_policy_default::QosClass::Burstable,
                    QosClass::BestEffort => wasmlet_policy_default::QosClass::BestEffort,
                },
                is_static: is_static(pod) && !self.pressure.evict_static_pods,
                is_critical: priority(pod) >= SYSTEM_CRITICAL_PRIORITY,
                has_stats: usage.is_some(),
                memory_request_bytes: pod_request_bytes(pod, "memory"),
                memory_usage_bytes: usage.unwrap_or(0),
                disk_request_bytes: pod_request_bytes(pod, "ephemeral-storage"),
                disk_usage_bytes: runtime.disk_bytes + log_bytes + volume_bytes,
                inodes_used: runtime.inodes + log_inodes + volume_inodes,
                cpu_request_millis: pod
                    .spec
                    .iter()
                    .flat_map(|s| s.containers.iter())
                    .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get("cpu").cloned())
                    .filter_map(|q| resources::cpu_millis(&q).ok())
                    .map(|m| m.max(0) as u64)
                    .sum(),
                cpu_usage_millis: runtime.cpu_millis,
                process_count: signals::cgroup_processes(&parent).unwrap_or(0),
                container_count: pod.spec.as_ref().map_or(0, |s| s.containers.len() as u32),
                start_time_unix_ms: pod
                    .status
                    .as_ref()
                    .and_then(|s| s.start_time.as_ref())
                    .map_or(0, |t| t.0.as_millisecond().max(0) as u64),
                ..Default::default()
            });
            meta.push(PodMeta {
                namespace: pod.metadata.namespace.clone().unwrap_or_default(),
                name: pod.metadata.name.clone().unwrap_or_default(),
                uid,
                labels: pod.metadata.labels.clone().unwrap_or_default(),
                annotations: pod.metadata.annotations.clone().unwrap_or_default(),
            });
        }
        let memory = signals::node_memory().unwrap_or_default();
        let snapshot = EvictionSnapshot {
            node: NodeInfo {
                memory_capacity_bytes: memory.capacity,
                memory_allocatable_bytes: memory.capacity,
                cpu_capacity_millis: resources::machine_cpu_millis().max(0) as u64,
                cpu_allocatable_millis: resources::machine_cpu_millis().max(0) as u64,
                pod_count: pods.len() as u32,
                ..Default::default()
            },
            pressure: vec![SignalObservation::new(
                threshold.signal,
                available,
                capacity,
                threshold.value.resolve(capacity),
            )],
            pods: infos,
            meta: Arc::new(meta),
        };
        (snapshot, pods)
    }

    async fn evict_one(&self, cycle: u64, threshold: &Threshold, available: i64, capacity: i64) {
        let (snapshot, pods) = self.snapshot(threshold, available, capacity).await;
        let snapshot = Arc::new(snapshot);
        let (decision, shadow) = {
            let (plugins, snapshot) = (self.plugins.clone(), snapshot.clone());
            match tokio::task::spawn_blocking(move || {
                (plugins.rank(&snapshot), plugins.rank_shadow(&snapshot))
            })
            .await
            {
                Ok(answer) => answer,
                Err(error) => {
                    warn!(%error, "eviction ranking task failed");
                    return;
                }
            }
        };
        if let DecidedBy::BuiltIn { reason } = &decision.decided_by {
            info!(%reason, "eviction ranked by the built-in default");
        }
        let name = |i: u32| snapshot.meta[i as usize].name.clone();
        let ranking: Vec<String> = decision.order.iter().map(|&i| name(i)).collect();
        let chosen = decision.order.first().copied();
        let plugin = decided_by_label(&decision.decided_by);
        let shadow = shadow.map(|answer| match answer {
            Ok(shadow) => {
                let would = shadow.order.first().copied();
                let agrees = would == chosen;
                let label = decided_by_label(&shadow.decided_by);
                if !agrees {
                    self.metrics
                        .shadow_disagreements
                        .get_or_create(&PluginLabels { plugin: label.clone() })
                        .inc();
                }
                info!(shadow = %label, would_evict = ?would.map(name), evicting = ?chosen.map(name), agrees, "shadow eviction plugin ranked");
                ShadowChoice {
                    decided_by: shadow.decided_by,
                    would_evict: would.map(name),
                    ranking: shadow.order.iter().map(|&i| name(i)).collect(),
                    agrees,
                    error: None,
                }
            }
            Err(error) => ShadowChoice {
                decided_by: DecidedBy::BuiltIn {
                    reason: error.to_string(),
                },
                would_evict: None,
                ranking: Vec::new(),
                agrees: false,
                error: Some(error.to_string()),
            },
        });
        let threshold_value = threshold.value.resolve(capacity);
        let candidates = decision
            .order
            .iter()
            .map(|&i| {
                let info = &snapshot.pods[i as usize];
                Candidate {
                    pod: name(i),
                    namespace: snapshot.meta[i as usize].namespace.clone(),
                    qos_class: match info.qos {
                        wasmlet_policy_default::QosClass::Guaranteed => "Guaranteed",
                        wasmlet_policy_default::QosClass::Burstable => "Burstable",
                        wasmlet_policy_default::QosClass::BestEffort => "BestEffort",
                    },
                    priority: info.priority,
                    memory_usage_bytes: info.memory_usage_bytes,
                    memory_request_bytes: info.memory_request_bytes,
                }
            })
            .collect();
        let mut record = DecisionRecord {
            time: status::api_time(SystemTime::now()).0.to_string(),
            cycle,
            signal: threshold.signal.as_str(),
            threshold: threshold_value,
            available,
            decided_by: decision.decided_by.clone(),
            ranking,
            candidates,
            evicted: None,
            message: None,
            shadow,
        };
        let Some(index) = chosen else {
            warn!(
                signal = threshold.signal.as_str(),
                "eviction threshold met but no pod can be evicted"
            );
            self.record(record);
            return;
        };
        let pod = &pods[index as usize];
        let info = &snapshot.pods[index as usize];
        let (used, requested) = match threshold.signal.pressure() {
            Pressure::Memory => (info.memory_usage_bytes, info.memory_request_bytes),
            Pressure::Disk => (info.disk_usage_bytes, info.disk_request_bytes),
            Pressure::Inodes => (info.inodes_used, 0),
            Pressure::Pid => (info.process_count, 0),
        };
        let message = format!(
            "The node was low on resource: {}. Threshold quantity: {}, available: {}. Pod was using {}, request is {}.",
            resource_name(threshold.signal),
            quantity(threshold.signal, threshold_value),
            quantity(threshold.signal, available),
            quantity(threshold.signal, used as i64),
            quantity(threshold.signal, requested as i64),
        );
        let pod_grace = Duration::from_secs(
            pod.spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
                .unwrap_or(30)
                .max(0) as u64,
        );
        let grace = if threshold.is_hard() {
            HARD_EVICTION_GRACE
        } else if self.config.max_pod_grace_period.is_zero() {
            pod_grace
        } else {
            pod_grace.min(self.config.max_pod_grace_period)
        };
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let pod_name = snapshot.meta[index as usize].name.clone();
        warn!(pod = %pod_name, signal = threshold.signal.as_str(), %plugin, grace_s = grace.as_secs(), %message, "evicting pod");
        record.evicted = Some(pod_name);
        record.message = Some(message.clone());
        self.record(record);
        self.metrics
            .evictions
            .get_or_create(&EvictionLabels {
                eviction_signal: threshold.signal.as_str().into(),
                plugin,
            })
            .inc();
        if self
            .evictions
            .send(EvictRequest {
                uid: uid.clone(),
                message,
                grace,
            })
            .await
            .is_err()
        {
            return;
        }
        // Wait for the pod to be cleaned up before the next cycle (`podCleanupTimeout`).
        let deadline = Instant::now() + POD_CLEANUP_TIMEOUT + grace;
        while Instant::now() < deadline {
            let evicted = self.store.get(&uid).is_none_or(|p| {
                p.status
                    .as_ref()
                    .is_some_and(|s| s.reason.as_deref() == Some("Evicted"))
            });
            if evicted {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        warn!(%uid, "evicted pod not cleaned up within the timeout");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> Pod {
        serde_yaml::from_str(yaml).expect("fixture pod")
    }

    fn pressure(conditions: &[Condition], evict_static: bool) -> NodePressure {
        let p = NodePressure::new(evict_static);
        for c in conditions {
            if let Some(state) = p.conditions.lock().expect("lock").get_mut(c) {
                state.active = true;
            }
        }
        p
    }

    const BEST_EFFORT: &str = "metadata: {name: be, annotations: {kubernetes.io/config.source: file}}\nspec:\n  containers: [{name: c, image: i}]\n";
    const BURSTABLE: &str = "metadata: {name: bu, annotations: {kubernetes.io/config.source: file}}\nspec:\n  containers: [{name: c, image: i, resources: {requests: {memory: 64Mi}}}]\n";

    #[test]
    fn memory_pressure_refuses_only_best_effort() {
        let p = pressure(&[Condition::MemoryPressure], true);
        assert_eq!(
            p.admit(&pod(BEST_EFFORT)).unwrap_err(),
            "Pod was rejected: The node had condition: [MemoryPressure]."
        );
        assert!(p.admit(&pod(BURSTABLE)).is_ok());
        let tolerant = pod(&format!(
            "{BEST_EFFORT}  tolerations: [{{key: node.kubernetes.io/memory-pressure, operator: Exists, effect: NoSchedule}}]\n"
        ));
        assert!(p.admit(&tolerant).is_ok());
    }

    #[test]
    fn disk_pressure_refuses_every_non_critical_pod() {
        let p = pressure(&[Condition::DiskPressure], true);
        assert_eq!(
            p.admit(&pod(BURSTABLE)).unwrap_err(),
            "Pod was rejected: The node had condition: [DiskPressure]."
        );
        // Static pods are critical unless the node evicts them.
        let upstream = pressure(&[Condition::DiskPressure], false);
        assert!(upstream.admit(&pod(BURSTABLE)).is_ok());
        let critical = pod(&format!("{BURSTABLE}  priority: 2000001000\n"));
        assert!(p.admit(&critical).is_ok());
    }

    #[test]
    fn no_pressure_admits_everything() {
        assert!(pressure(&[], true).admit(&pod(BEST_EFFORT)).is_ok());
    }
}
