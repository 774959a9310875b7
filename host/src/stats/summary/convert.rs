//! Readings (cgroup memory, interfaces, volume directories) in the Summary API's terms.

use super::types::{FsStats, InterfaceStats, MemoryStats, NetworkStats, VolumeStats};
use crate::stats::cgroup;
use crate::stats::fs;
use crate::stats::network::{InterfaceCounters, DEFAULT_INTERFACE};
use crate::stats::pod::dir_usage;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::path::Path;

/// A cgroup's memory in the Summary API's terms.
pub(super) fn cgroup_memory_stats(time: &Time, memory: &cgroup::CgroupMemory) -> MemoryStats {
    MemoryStats {
        time: time.clone(),
        available_bytes: memory.available(),
        usage_bytes: Some(memory.usage),
        working_set_bytes: Some(memory.working_set),
        rss_bytes: memory.counters.rss,
        page_faults: memory.counters.page_faults,
        major_page_faults: memory.counters.major_page_faults,
        psi: None,
    }
}

/// A namespace's interfaces, `eth0` (when present) also inline as the default.
pub(super) fn network_stats(time: &Time, interfaces: Vec<InterfaceCounters>) -> NetworkStats {
    let interfaces: Vec<InterfaceStats> = interfaces
        .into_iter()
        .map(|i| InterfaceStats {
            name: i.name,
            rx_bytes: Some(i.rx_bytes),
            rx_errors: Some(i.rx_errors),
            tx_bytes: Some(i.tx_bytes),
            tx_errors: Some(i.tx_errors),
        })
        .collect();
    NetworkStats {
        time: time.clone(),
        default_interface: interfaces
            .iter()
            .find(|i| i.name == DEFAULT_INTERFACE)
            .cloned()
            .unwrap_or_default(),
        interfaces,
    }
}

/// Every volume directory of a pod (`volumes/<plugin>/<name>`): its filesystem and usage.
pub(super) fn volume_stats(time: &Time, volumes_dir: &Path) -> Vec<VolumeStats> {
    let mut volumes = Vec::new();
    let Ok(plugins) = std::fs::read_dir(volumes_dir) else {
        return volumes;
    };
    for plugin in plugins.flatten() {
        let Ok(entries) = std::fs::read_dir(plugin.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let (bytes, inodes) = dir_usage(&path);
            volumes.push(VolumeStats {
                fs: FsStats::on(time, fs::of(&path).ok().as_ref(), bytes, inodes),
                name: entry.file_name().to_string_lossy().into_owned(),
            });
        }
    }
    volumes.sort_by(|a, b| a.name.cmp(&b.name));
    volumes
}
