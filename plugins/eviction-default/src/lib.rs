//! The upstream kubelet's eviction ranking as a plugin (world
//! `eviction-policy`).
//!
//! Memory pressure: pods whose usage exceeds their request first, then by
//! priority, then by usage above request. PID pressure: priority, then
//! process count. Disk pressure: exceeding the ephemeral-storage request,
//! priority, then usage above request. The first signal of `pressure`
//! decides; critical and static pods are left out. The logic is
//! [`wasmlet_plugin_sdk::defaults::eviction`], which the host also compiles
//! natively as its built-in default, so this plugin and the fallback agree.
//!
//! Config: none (`{}`).

use wasmlet_plugin_sdk::defaults::eviction;
use wasmlet_plugin_sdk::{export, EvictionPolicy, NodeInfo, PodInfo, Signal, SignalObservation};

/// The upstream ranking.
#[derive(Debug, Default)]
pub struct DefaultEviction;

impl EvictionPolicy for DefaultEviction {
    fn configure(&mut self, config: &str) -> Result<(), String> {
        match config.trim() {
            "" | "{}" | "null" => Ok(()),
            other => Err(format!("eviction-default takes no config, got {other}")),
        }
    }

    /// Ranks a three-pod snapshot whose upstream order is known.
    fn self_check(&self) -> Result<(), String> {
        let pod = |priority, request, usage| PodInfo {
            priority,
            has_stats: true,
            memory_request_bytes: request,
            memory_usage_bytes: usage,
            ..PodInfo::default()
        };
        let pods = [pod(0, 100, 50), pod(10, 10, 500), pod(10, 10, 20)];
        let pressure = [SignalObservation::new(Signal::MemoryAvailable, 1, 100, 10)];
        let got = eviction::rank(&pressure, &pods);
        if got == [1, 2, 0] {
            Ok(())
        } else {
            Err(format!("self-check ranked {got:?}, expected [1, 2, 0]"))
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

export!(DefaultEviction as eviction);

#[cfg(test)]
mod tests;
