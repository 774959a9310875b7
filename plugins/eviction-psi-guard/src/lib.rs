//! Evicts before the node thrashes (world `pressure-eviction-policy`): when node memory
//! `full avg10` (every non-idle task stalled on memory at once) stays at or over
//! `memoryFullAvg10Percent` for `forSeconds` (or, when `memorySomeAvg10Percent` is set,
//! memory `some avg10`, at least one task stalled, stays at or over that), it asks the host to
//! evict the lowest-priority
//! pod using the most memory above its request: the shape of systemd-oomd's
//! `ManagedOOMMemoryPressureLimit` and `ManagedOOMMemoryPressureDurationSec`, with
//! Kubernetes semantics (the host evicts gracefully, at most one pod per `psiEvictionWindow`,
//! never a critical, static or `Guaranteed` pod within its requests).
//!
//! Under a threshold it ranks as upstream ([`wasmlet_plugin_sdk::defaults::eviction`]).
//!
//! Config (JSON): `{"memoryFullAvg10Percent": 60, "forSeconds": 30}` (systemd-oomd's
//! defaults), and optionally `"memorySomeAvg10Percent"`: on a node whose other tasks keep the
//! CPUs busy, `full` stays low while one pod stalls, and `some` shows it.

use serde::Deserialize;
use wasmlet_plugin_sdk::defaults::eviction;
use wasmlet_plugin_sdk::{
    config, export, EvictNow, EvictionPolicy, NodeInfo, NodePsi, PodInfo, PressureWatch,
    SignalObservation,
};

/// The plugin's config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Config {
    /// The share of time (percent, 0-100) every non-idle task may stall on memory.
    pub memory_full_avg10_percent: f64,
    /// How long the share must hold before a pod is evicted.
    pub for_seconds: u64,
    /// The share of time (percent, 0-100) at least one task may stall on memory; no limit
    /// when absent.
    pub memory_some_avg10_percent: Option<f64>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            memory_full_avg10_percent: 60.0,
            for_seconds: 30,
            memory_some_avg10_percent: None,
        }
    }
}

/// The policy, with when pressure was first seen over the limit.
#[derive(Debug, Default)]
pub struct PsiGuard {
    config: Config,
    /// `read-unix-ms` of the first reading over the limit in the current run of them.
    over_since_ms: Option<u64>,
}

/// Memory above the request; zero for a pod within it.
fn excess(pod: &PodInfo) -> u64 {
    pod.memory_usage_bytes
        .saturating_sub(pod.memory_request_bytes)
}

/// Evictable pods using memory above their request: lowest priority first, then the most
/// above their request.
pub fn candidates(pods: &[PodInfo]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..pods.len() as u32)
        .filter(|&i| {
            let pod = &pods[i as usize];
            pod.is_evictable() && pod.has_stats && excess(pod) > 0
        })
        .collect();
    order.sort_by_key(|&i| {
        let pod = &pods[i as usize];
        (pod.priority, std::cmp::Reverse(excess(pod)))
    });
    order
}

impl EvictionPolicy for PsiGuard {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        let config: Config = config::parse(text)?;
        let limits = [
            (
                "memoryFullAvg10Percent",
                Some(config.memory_full_avg10_percent),
            ),
            ("memorySomeAvg10Percent", config.memory_some_avg10_percent),
        ];
        for (field, limit) in limits {
            if let Some(limit) = limit.filter(|l| !(*l > 0.0 && *l <= 100.0)) {
                return Err(format!("{field} must be in (0, 100], got {limit}"));
            }
        }
        self.config = config;
        Ok(())
    }

    /// Pressure held for `forSeconds` asks to evict the pod most over its request.
    fn self_check(&self) -> Result<(), String> {
        let mut probe = PsiGuard {
            config: self.config.clone(),
            over_since_ms: None,
        };
        let high = (self.config.memory_full_avg10_percent * 100.0).ceil() as u32;
        let pod = |usage| PodInfo {
            has_stats: true,
            memory_usage_bytes: usage,
            ..PodInfo::default()
        };
        let pods = [pod(10), pod(500)];
        let at = |ms| {
            let mut psi = NodePsi {
                read_unix_ms: ms,
                ..NodePsi::default()
            };
            psi.memory.full.avg10 = high;
            psi
        };
        let node = NodeInfo::default();
        let first = probe.watch(&node, &at(1_000), &pods)?;
        let later = probe.watch(&node, &at(1_000 + self.config.for_seconds * 1000), &pods)?;
        // With `forSeconds: 0` the first reading over the limit asks at once.
        let asks_at_once = self.config.for_seconds == 0;
        match (first, later) {
            (first, Some(evict)) if first.is_some() == asks_at_once && evict.pods == [1, 0] => {
                Ok(())
            }
            (first, later) => Err(format!(
                "expected an eviction of [1, 0] after forSeconds (and not before), got {first:?} then {later:?}"
            )),
        }
    }

    fn rank(
        &self,
        _node: &NodeInfo,
        pressure: &[SignalObservation],
        pods: &[PodInfo],
    ) -> Result<Vec<u32>, String> {
        Ok(eviction::rank(pressure, pods))
    }
}

impl PsiGuard {
    /// The first of `full` and (when configured) `some` at or over its limit: its name, the
    /// reading and the limit.
    fn over_limit(&self, psi: &NodePsi) -> Option<(&'static str, f64, f64)> {
        let full = f64::from(psi.memory.full.avg10) / 100.0;
        let some = f64::from(psi.memory.some.avg10) / 100.0;
        [
            ("full", full, Some(self.config.memory_full_avg10_percent)),
            ("some", some, self.config.memory_some_avg10_percent),
        ]
        .into_iter()
        .find_map(|(kind, share, limit)| {
            limit
                .filter(|limit| share >= *limit)
                .map(|limit| (kind, share, limit))
        })
    }
}

impl PressureWatch for PsiGuard {
    fn watch(
        &mut self,
        _node: &NodeInfo,
        psi: &NodePsi,
        pods: &[PodInfo],
    ) -> Result<Option<EvictNow>, String> {
        let Some((kind, share, limit)) = self.over_limit(psi) else {
            self.over_since_ms = None;
            return Ok(None);
        };
        let since = *self.over_since_ms.get_or_insert(psi.read_unix_ms);
        let held_ms = psi.read_unix_ms.saturating_sub(since);
        if held_ms < self.config.for_seconds * 1000 {
            return Ok(None);
        }
        let order = candidates(pods);
        if order.is_empty() {
            return Ok(None);
        }
        // Counting starts again: the next request comes after another `forSeconds`.
        self.over_since_ms = Some(psi.read_unix_ms);
        Ok(Some(EvictNow {
            pods: order,
            reason: format!(
                "memory {kind} avg10 {share:.2}% at or over {limit}% for {} s",
                held_ms / 1000
            ),
        }))
    }
}

export!(PsiGuard as pressure_eviction);

#[cfg(test)]
mod tests;
