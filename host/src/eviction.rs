//! Node-pressure eviction, as upstream's eviction manager (`eviction_manager.go`
//! `synchronize`), with the ranking asked of the `eviction-policy` plugin: measure the
//! signals ([`signals`]), hold the pressure conditions for the transition period
//! ([`pressure`]), reclaim disk through GC first, then rank a snapshot of the running pods
//! ([`snapshot`]) and evict at most one pod per cycle (`evict.rs`). Every decision is kept
//! for `/evictions` ([`decision_log`]).

pub mod decision_log;
mod evict;
pub mod pressure;
mod psi_watch;
pub mod signals;
pub mod snapshot;

use crate::config::eviction::{Threshold, ThresholdValue};
use crate::events::{EventRecorder, EventType, ObjectRef};
use crate::gc::GarbageCollector;
use crate::metrics::Metrics;
use crate::stats;
use crate::status::StatusStore;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tracing::{info, warn, Instrument};
use wasmlet_plugin_host::PluginRegistry;
use wasmlet_policy_default::{Pressure, Signal};

use pressure::Condition;

pub use decision_log::DecisionLog;
pub use pressure::NodePressure;

/// Why an eviction cycle stopped before it could evict; the next cycle measures again.
#[derive(Debug, thiserror::Error)]
pub enum EvictionError {
    /// The blocking task that asks the plugins to rank panicked or was cancelled.
    #[error("eviction ranking task failed: {0}")]
    RankingTask(#[source] tokio::task::JoinError),
}

/// A request to kill a pod for eviction, routed by the SyncLoop to the pod's worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvictRequest {
    /// The pod to evict.
    pub uid: String,
    /// The status message, naming the signal and the usage.
    pub message: String,
    /// The grace period the containers get.
    pub grace: Duration,
}

/// The eviction manager's settings.
#[derive(Debug, Clone)]
pub struct EvictionConfig {
    /// Hard and soft thresholds (`evictionHard`, `evictionSoft` and their grace periods).
    pub thresholds: Vec<Threshold>,
    /// How long a condition holds after its thresholds stop being met.
    pub pressure_transition_period: Duration,
    /// Cap on soft-eviction grace (0: the pod's own).
    pub max_pod_grace_period: Duration,
    /// How often `synchronize` runs.
    pub monitoring_period: Duration,
    /// nodefs: the kubelet's root dir.
    pub root_dir: PathBuf,
    /// Pod log directories count towards a pod's disk usage.
    pub pod_logs_dir: PathBuf,
    /// Only this node's containers are measured.
    pub node_name: String,
    /// At most one eviction asked for on pressure stall information per window.
    pub psi_eviction_window: Duration,
    /// Where the node's PSI is read (`nodePressurePath`, `/proc/pressure` by default).
    pub node_pressure_path: PathBuf,
}

/// The eviction manager: one `synchronize` per monitoring period.
pub struct EvictionManager {
    /// Thresholds, periods and paths.
    pub config: EvictionConfig,
    /// The conditions it sets, shared with admission and `/node`.
    pub pressure: Arc<NodePressure>,
    /// Asked to rank the candidates.
    pub plugins: Arc<PluginRegistry>,
    /// Evictions and shadow disagreements are counted here.
    pub metrics: Arc<Metrics>,
    /// The pods the node runs.
    pub store: Arc<StatusStore>,
    /// Node-level reclaim before any pod is evicted for disk.
    pub gc: Arc<GarbageCollector>,
    /// To the SyncLoop, which kills the pod through its worker.
    pub evictions: mpsc::Sender<EvictRequest>,
    /// Served at `/evictions`.
    pub log: Arc<DecisionLog>,
    /// `EvictionThresholdMet` on the node and `Evicted` on each evicted pod go here.
    pub events: Arc<dyn EventRecorder>,
    /// Per-cycle memory; starts empty.
    pub(crate) state: Mutex<CycleState>,
    /// Previous CPU samples, for rates the runtime does not report.
    pub(crate) cpu: stats::pod::CpuSampler,
}

/// What the manager remembers from one cycle to the next.
#[derive(Default)]
pub(crate) struct CycleState {
    cycle: u64,
    /// Thresholds met in the last cycle, by index: kept until min-reclaim is regained.
    met: Vec<usize>,
    /// When each threshold was first seen met (soft grace periods count from here).
    first_observed: HashMap<usize, Instant>,
    /// When each condition was last seen.
    last_observed: HashMap<Condition, Instant>,
    /// When a plugin's pressure decision last evicted a pod (`psi_eviction_window`).
    last_psi_eviction: Option<Instant>,
}

impl EvictionManager {
    /// Runs `synchronize` every monitoring period until the process ends.
    pub async fn run(self: Arc<Self>) {
        let mut timer = tokio::time::interval(self.config.monitoring_period);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            timer.tick().await;
            self.synchronize().await;
        }
    }

    /// One cycle of upstream's `synchronize`, in a span with its `cycle` number and, once a
    /// threshold acts, its `signal`.
    pub async fn synchronize(&self) {
        let cycle = {
            let mut state = self.state.lock();
            state.cycle += 1;
            state.cycle
        };
        let span = tracing::info_span!("eviction", cycle, signal = tracing::field::Empty);
        async {
            if let Err(error) = self.cycle(cycle).await {
                warn!(%error, "eviction cycle failed");
            }
        }
        .instrument(span)
        .await
    }

    async fn cycle(&self, cycle: u64) -> Result<(), EvictionError> {
        let measured = self.observe().await;
        let now = Instant::now();
        let (met, active) = {
            let mut state = self.state.lock();
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
            self.pressure.update(
                &state.last_observed,
                now,
                self.config.pressure_transition_period,
            );
            (met, active)
        };
        if met.is_empty() || active.is_empty() {
            // No threshold acts: a plugin that watches pressure may still ask to evict.
            return self.watch_pressure(cycle).await;
        }
        // Memory first, as upstream sorts thresholds.
        let mut active = active;
        active.sort_by_key(|&i| self.config.thresholds[i].signal.pressure() != Pressure::Memory);
        let threshold = self.config.thresholds[active[0]].clone();
        tracing::Span::current().record("signal", threshold.signal.as_str());
        let node = &self.config.node_name;
        // Upstream's node reference carries the node's name as its UID (kubectl looks for it).
        let message = format!(
            "Attempting to reclaim {}",
            starved_resource(threshold.signal)
        );
        self.events.record(
            &ObjectRef::node(node, node),
            EventType::Warning,
            "EvictionThresholdMet",
            message,
        );

        if matches!(
            threshold.signal.pressure(),
            Pressure::Disk | Pressure::Inodes
        ) && self.reclaim_disk(&threshold).await
        {
            return Ok(());
        }
        let Some(&(available, capacity)) = measured.get(&threshold.signal) else {
            return Ok(());
        };
        self.evict_one(cycle, &threshold, available, capacity).await
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
            if let Err(error) = self.gc.image_cycle(Some(u64::MAX)).await {
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
}

/// The resource a signal starves, as upstream's `signalToResource` names it in events.
fn starved_resource(signal: Signal) -> &'static str {
    match signal.pressure() {
        Pressure::Memory => "memory",
        Pressure::Pid => "pids",
        Pressure::Disk => "ephemeral-storage",
        Pressure::Inodes => "inodes",
    }
}
