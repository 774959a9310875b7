//! The node conditions eviction sets (MemoryPressure, DiskPressure, PIDPressure), held for the
//! transition period after a threshold was last met, the latest observations shown at `/node`,
//! and the admission check the SyncLoop asks while a condition holds (upstream's eviction
//! `Admit`).

use crate::podutil;
use crate::resources::QosClass;
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant, SystemTime};
use tracing::info;
use wasmlet_policy_default::{Pressure, Signal};

/// Upstream's `SystemCriticalPriority`: pods at or above it are never evicted.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// The node conditions eviction sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Condition {
    /// A memory signal met its threshold.
    MemoryPressure,
    /// A nodefs or imagefs signal (bytes or inodes) met its threshold.
    DiskPressure,
    /// `pid.available` met its threshold.
    #[serde(rename = "PIDPressure")]
    PidPressure,
}

impl Condition {
    /// The condition's type as the Node object names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Condition::MemoryPressure => "MemoryPressure",
            Condition::DiskPressure => "DiskPressure",
            Condition::PidPressure => "PIDPressure",
        }
    }

    /// The condition a threshold on `signal` sets.
    pub(super) fn of(signal: Signal) -> Condition {
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
    /// Whether the condition holds now.
    pub active: bool,
    /// When `active` last changed.
    pub last_transition: SystemTime,
    /// When a threshold of this condition was last met.
    pub last_observed: Option<SystemTime>,
}

/// One signal's latest measurement, as `/node` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    /// The signal's name (`memory.available`, ...).
    pub signal: &'static str,
    /// What is available now.
    pub available: i64,
    /// The capacity percentages are taken of.
    pub capacity: i64,
}

/// The pressure conditions and the latest observations, shared with admission and `/node`.
#[derive(Debug, Default)]
pub struct NodePressure {
    conditions: Mutex<BTreeMap<Condition, ConditionState>>,
    observations: Mutex<Vec<Observation>>,
    evict_static_pods: bool,
}

impl NodePressure {
    /// No condition active; `evict_static_pods` makes static pods evictable (wasmlet's
    /// `evictStaticPods`).
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
        self.conditions.lock().clone()
    }

    /// The latest measurement of every signal.
    pub fn observations(&self) -> Vec<Observation> {
        self.observations.lock().clone()
    }

    /// Replaces the latest measurements.
    pub(super) fn set_observations(&self, observations: Vec<Observation>) {
        *self.observations.lock() = observations;
    }

    /// Whether static pods are evictable on this node.
    pub(super) fn evict_static_pods(&self) -> bool {
        self.evict_static_pods
    }

    fn active(&self) -> Vec<Condition> {
        self.conditions()
            .into_iter()
            .filter(|(_, s)| s.active)
            .map(|(c, _)| c)
            .collect()
    }

    /// Sets each condition from when it was last seen: it holds while seen this cycle or
    /// within the `transition_period`.
    pub(super) fn update(
        &self,
        last_observed: &HashMap<Condition, Instant>,
        now: Instant,
        transition_period: Duration,
    ) {
        let wall = SystemTime::now();
        let mut conditions = self.conditions.lock();
        for (condition, state) in conditions.iter_mut() {
            let seen = last_observed.get(condition);
            if let Some(at) = seen {
                state.last_observed = Some(wall - now.duration_since(*at));
            }
            let active =
                seen.is_some_and(|at| now.duration_since(*at) < transition_period || *at == now);
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

    /// Whether upstream would treat `pod` as critical: static pods (unless the node evicts
    /// them) and system-critical priorities.
    pub fn is_critical(&self, pod: &Pod) -> bool {
        (podutil::is_static(pod) && !self.evict_static_pods)
            || priority(pod) >= SYSTEM_CRITICAL_PRIORITY
    }

    /// Upstream's eviction `Admit`: under MemoryPressure, BestEffort pods are refused unless
    /// they tolerate the memory-pressure taint; under any other pressure every non-critical
    /// pod is. The error displays as the rejection message the pod's status shows, as the
    /// SyncLoop stores it.
    pub fn admit(&self, pod: &Pod) -> Result<(), PressureRejection> {
        let active = self.active();
        if active.is_empty() || self.is_critical(pod) {
            return Ok(());
        }
        let refuse = if active == [Condition::MemoryPressure] {
            crate::resources::pod_qos(pod) == QosClass::BestEffort
                && !tolerates(pod, Condition::MemoryPressure)
        } else {
            true
        };
        if !refuse {
            return Ok(());
        }
        Err(PressureRejection(active))
    }
}

/// A pod refused for the node's pressure: the conditions in force, displayed as upstream's
/// rejection message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Pod was rejected: The node had condition: [{}].",
    .0.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
)]
pub struct PressureRejection(pub Vec<Condition>);

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

/// The pod's priority (0 when unset).
pub(super) fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> Pod {
        wasmlet_plugin_host::yaml::from_str(yaml).expect("fixture pod")
    }

    fn pressure(conditions: &[Condition], evict_static: bool) -> NodePressure {
        let p = NodePressure::new(evict_static);
        for c in conditions {
            if let Some(state) = p.conditions.lock().get_mut(c) {
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
            p.admit(&pod(BEST_EFFORT)).unwrap_err().to_string(),
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
            p.admit(&pod(BURSTABLE)).unwrap_err().to_string(),
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
