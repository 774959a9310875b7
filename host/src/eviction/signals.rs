//! The eviction signals and what they mean: one measurement of every signal a cycle needs
//! (read through [`crate::stats`]), the thresholds met with min-reclaim, and the resource, units
//! and pod usage each signal is reported in.

use super::pressure::Observation;
use super::EvictionManager;
use crate::config::eviction::Threshold;
use crate::stats::{self, fs::FsStats};
use std::collections::HashMap;
use std::path::Path;
use tracing::warn;
use wasmlet_policy_default::{PodInfo, Pressure, Signal};

/// One measurement of every signal: (available, capacity).
pub(super) type Measured = HashMap<Signal, (i64, i64)>;

/// Measures the node's signals; a signal that cannot be measured is left out (and logged).
fn measure(root_dir: &Path, image_fs: Option<FsStats>) -> Measured {
    let mut out = Measured::new();
    match stats::node::memory() {
        Ok(m) => {
            out.insert(Signal::MemoryAvailable, (m.available(), m.capacity as i64));
        }
        Err(error) => warn!(%error, "cannot measure memory.available"),
    }
    match stats::fs::of(root_dir) {
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
    match stats::node::pids() {
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

impl EvictionManager {
    /// Measures every signal and publishes the observations for `/node`; the imagefs is
    /// measured only when a threshold names it.
    pub(super) async fn observe(&self) -> Measured {
        let image_fs = if self.config.thresholds.iter().any(|t| {
            matches!(
                t.signal,
                Signal::ImagefsAvailable | Signal::ImagefsInodesFree
            )
        }) {
            match stats::fs::image_fs(&self.gc.cri).await {
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
        self.pressure.set_observations(observations);
        measured
    }

    /// Indices of the thresholds met now, counting min-reclaim for those met last cycle.
    pub(super) fn thresholds_met(&self, measured: &Measured, previously: &[usize]) -> Vec<usize> {
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

/// What `pod` uses and requests of the resource `signal` measures.
pub(super) fn pod_usage(signal: Signal, pod: &PodInfo) -> (u64, u64) {
    match signal.pressure() {
        Pressure::Memory => (pod.memory_usage_bytes, pod.memory_request_bytes),
        Pressure::Disk => (pod.disk_usage_bytes, pod.disk_request_bytes),
        Pressure::Inodes => (pod.inodes_used, 0),
        Pressure::Pid => (pod.process_count, 0),
    }
}

/// The evicted pod's status message, upstream's wording: the signal, the threshold, what is
/// available and what the pod used and requested.
pub(super) fn eviction_message(
    threshold: &Threshold,
    threshold_value: i64,
    available: i64,
    (used, requested): (u64, u64),
) -> String {
    let signal = threshold.signal;
    format!(
        "The node was low on resource: {}. Threshold quantity: {}, available: {}. Pod was using {}, request is {}.",
        resource_name(signal),
        quantity(signal, threshold_value),
        quantity(signal, available),
        quantity(signal, used as i64),
        quantity(signal, requested as i64),
    )
}
