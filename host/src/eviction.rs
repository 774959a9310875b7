//! Node-pressure eviction, as upstream's eviction manager (`eviction_manager.go`
//! `synchronize`), with the ranking asked of the `eviction-policy` plugin: measure the
//! signals ([`signals`]), hold the pressure conditions for the transition period
//! ([`pressure`]), reclaim disk through GC first, then rank a snapshot of the running pods
//! ([`snapshot`]) and evict at most one pod per cycle. Every decision is kept for `/evictions`
//! ([`decision_log`]).

pub mod decision_log;
pub mod pressure;
pub mod signals;
pub mod snapshot;

use crate::config::eviction::{Threshold, ThresholdValue};
use crate::gc::GarbageCollector;
use crate::metrics::{decided_by_label, EvictionLabels, Metrics};
use crate::stats;
use crate::status::StatusStore;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tracing::{info, warn, Instrument};
use wasmlet_plugin_host::{DecidedBy, PluginRegistry};
use wasmlet_policy_default::{Pressure, Signal};

use decision_log::DecisionRecord;
use pressure::Condition;

pub use decision_log::DecisionLog;
pub use pressure::NodePressure;

/// Upstream's pod grace for hard evictions (`immediateEvictionGracePeriodSeconds`).
const HARD_EVICTION_GRACE: Duration = Duration::from_secs(1);
/// How long a cycle waits for an evicted pod to be cleaned up (`podCleanupTimeout`).
const POD_CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);

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
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
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
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
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
            return Ok(());
        }
        // Memory first, as upstream sorts thresholds.
        let mut active = active;
        active.sort_by_key(|&i| self.config.thresholds[i].signal.pressure() != Pressure::Memory);
        let threshold = self.config.thresholds[active[0]].clone();
        tracing::Span::current().record("signal", threshold.signal.as_str());

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

    /// Ranks the running pods, logs the decision, and evicts the first, waiting for it to be
    /// cleaned up.
    async fn evict_one(
        &self,
        cycle: u64,
        threshold: &Threshold,
        available: i64,
        capacity: i64,
    ) -> Result<(), EvictionError> {
        let (snapshot, pods) = self.snapshot(threshold, available, capacity).await;
        let snapshot = Arc::new(snapshot);
        let (decision, shadow) = {
            let (plugins, snapshot) = (self.plugins.clone(), snapshot.clone());
            tokio::task::spawn_blocking(move || {
                (plugins.rank(&snapshot), plugins.rank_shadow(&snapshot))
            })
            .await
            .map_err(EvictionError::RankingTask)?
        };
        if let DecidedBy::BuiltIn { reason } = &decision.decided_by {
            info!(%reason, "eviction ranked by the built-in default");
        }
        let name = |i: u32| snapshot.meta[i as usize].name.clone();
        let ranking: Vec<String> = decision.order.iter().map(|&i| name(i)).collect();
        let chosen = decision.order.first().copied();
        let plugin = decided_by_label(&decision.decided_by);
        let shadow = shadow.map(|answer| self.shadow_choice(answer, &snapshot, chosen));
        let threshold_value = threshold.value.resolve(capacity);
        let mut record = DecisionRecord {
            time: crate::timestamps::now().0.to_string(),
            cycle,
            signal: threshold.signal.as_str(),
            threshold: threshold_value,
            available,
            decided_by: decision.decided_by.clone(),
            ranking,
            candidates: decision_log::candidates(&snapshot, &decision.order),
            evicted: None,
            message: None,
            shadow,
        };
        let Some(index) = chosen else {
            warn!(
                signal = threshold.signal.as_str(),
                "eviction threshold met but no pod can be evicted"
            );
            self.log.push(record);
            return Ok(());
        };
        let pod = &pods[index as usize];
        let message = signals::eviction_message(
            threshold,
            threshold_value,
            available,
            signals::pod_usage(threshold.signal, &snapshot.pods[index as usize]),
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
        let pod_name = name(index);
        warn!(pod = %pod_name, signal = threshold.signal.as_str(), %plugin, grace_s = grace.as_secs(), %message, "evicting pod");
        record.evicted = Some(pod_name);
        record.message = Some(message.clone());
        self.log.push(record);
        self.metrics
            .evictions
            .get_or_create(&EvictionLabels {
                eviction_signal: threshold.signal.as_str().into(),
                plugin,
            })
            .inc();
        let request = EvictRequest {
            uid: uid.clone(),
            message,
            grace,
        };
        if self.evictions.send(request).await.is_err() {
            // The SyncLoop is gone: the node is shutting down.
            return Ok(());
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
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        warn!(%uid, "evicted pod not cleaned up within the timeout");
        Ok(())
    }
}
