//! Per-pod usage: memory and processes from the pod cgroup, and beyond that the runtime's
//! container stats (writable layer bytes and inodes, CPU), the pod's log directory and its
//! on-disk emptyDir volumes, as upstream's summary API feeds the disk rankings. CPU becomes a
//! rate from two samples when the runtime reports only the cumulative counter.

use super::{cgroup, StatsError};
use crate::cri::{api, labels, CriClient, Labels};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// One pod's usage as the runtime reports it, summed over its containers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PodUsage {
    /// Writable layers.
    pub disk_bytes: u64,
    /// Inodes of the writable layers.
    pub inodes: u64,
    /// CPU in millicores.
    pub cpu_millis: u64,
}

/// Everything measured of one pod: its cgroup, the runtime's stats and its directories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PodStats {
    /// Working set of the pod cgroup; `None` while the cgroup does not exist.
    pub memory_working_set: Option<u64>,
    /// Writable layers, logs and on-disk emptyDir volumes.
    pub disk_bytes: u64,
    /// Inodes of the same.
    pub inodes: u64,
    /// CPU in millicores.
    pub cpu_millis: u64,
    /// Processes in the pod cgroup (0 while it does not exist).
    pub processes: u64,
}

/// Where one pod's usage is found on the node.
#[derive(Debug, Clone, Copy)]
pub struct PodPaths<'a> {
    /// The pod cgroup (e.g. `/kubepods/besteffort/pod<uid>`).
    pub cgroup_parent: &'a str,
    /// The pod's log directory.
    pub log_dir: &'a Path,
    /// The pod's on-disk emptyDir volumes.
    pub empty_dirs: &'a Path,
}

/// Measures one pod; `runtime` is its entry in [`collect`]'s answer.
pub fn measure(paths: PodPaths<'_>, runtime: PodUsage) -> PodStats {
    let (log_bytes, log_inodes) = dir_usage(paths.log_dir);
    let (volume_bytes, volume_inodes) = dir_usage(paths.empty_dirs);
    PodStats {
        memory_working_set: cgroup::working_set(paths.cgroup_parent),
        disk_bytes: runtime.disk_bytes + log_bytes + volume_bytes,
        inodes: runtime.inodes + log_inodes + volume_inodes,
        cpu_millis: runtime.cpu_millis,
        processes: cgroup::processes(paths.cgroup_parent).unwrap_or(0),
    }
}

/// The previous cumulative CPU sample of each container: (timestamp ns, CPU ns). Kept by the
/// caller across cycles, so that a runtime without a CPU rate still yields one.
#[derive(Debug, Default)]
pub struct CpuSampler(Mutex<HashMap<String, (i64, u64)>>);

impl CpuSampler {
    /// Millicores of `cpu`: the runtime's own rate if it reports one, else the rate since the
    /// previous sample of the same container (0 for a first sample).
    pub fn millis(&self, container: &str, cpu: &api::CpuUsage) -> u64 {
        if let Some(nano_cores) = cpu.usage_nano_cores.as_ref().map(|v| v.value) {
            return nano_cores / 1_000_000;
        }
        let Some(total) = cpu.usage_core_nano_seconds.as_ref().map(|v| v.value) else {
            return 0;
        };
        let mut samples = self.0.lock();
        let previous = samples.insert(container.to_string(), (cpu.timestamp, total));
        match previous {
            Some((at, before)) if cpu.timestamp > at && total >= before => {
                // ns of CPU per ns of wall time = cores; x1000 = millicores.
                ((total - before) as u128 * 1000 / (cpu.timestamp - at) as u128) as u64
            }
            _ => 0,
        }
    }

    /// Forgets containers that no longer report.
    fn retain(&self, live: &[String]) {
        let mut samples = self.0.lock();
        samples.retain(|id, _| live.contains(id));
    }
}

/// Bytes allocated (as `du` counts them) and entries below `dir`, staying on `dir`'s
/// filesystem (a memory-backed emptyDir is not disk).
pub fn dir_usage(dir: &Path) -> (u64, u64) {
    let Ok(root) = std::fs::symlink_metadata(dir) else {
        return (0, 0);
    };
    let device = root.dev();
    let mut stack = vec![dir.to_path_buf()];
    let (mut bytes, mut inodes) = (0u64, 0u64);
    while let Some(path) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.dev() != device {
                continue;
            }
            bytes = bytes.saturating_add(meta.blocks() * 512);
            inodes += 1;
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    (bytes, inodes)
}

/// The runtime's usage of every pod of `node_name` that has containers, by pod UID
/// (CRI `ListContainerStats`).
pub async fn collect(
    cri: &CriClient,
    node_name: &str,
    sampler: &CpuSampler,
) -> Result<HashMap<String, PodUsage>, StatsError> {
    let selector = Labels::from([(labels::NODE.to_string(), node_name.to_string())]);
    let stats = cri.list_container_stats(selector).await?;
    let mut usage: HashMap<String, PodUsage> = HashMap::new();
    let mut live = Vec::new();
    for s in &stats {
        let Some(attributes) = &s.attributes else {
            continue;
        };
        let Some(uid) = attributes.labels.get(labels::POD_UID) else {
            continue;
        };
        live.push(attributes.id.clone());
        let pod = usage.entry(uid.clone()).or_default();
        if let Some(layer) = &s.writable_layer {
            pod.disk_bytes += layer.used_bytes.as_ref().map_or(0, |v| v.value);
            pod.inodes += layer.inodes_used.as_ref().map_or(0, |v| v.value);
        }
        if let Some(cpu) = &s.cpu {
            pod.cpu_millis += sampler.millis(&attributes.id, cpu);
        }
    }
    sampler.retain(&live);
    Ok(usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(timestamp: i64, total: Option<u64>, rate: Option<u64>) -> api::CpuUsage {
        api::CpuUsage {
            timestamp,
            usage_core_nano_seconds: total.map(|value| api::UInt64Value { value }),
            usage_nano_cores: rate.map(|value| api::UInt64Value { value }),
        }
    }

    #[test]
    fn cpu_rate_comes_from_two_samples_unless_the_runtime_has_one() {
        let sampler = CpuSampler::default();
        assert_eq!(sampler.millis("c", &cpu(1_000_000_000, Some(0), None)), 0);
        // 0.5 s of CPU in 1 s of wall time: 500 millicores.
        assert_eq!(
            sampler.millis("c", &cpu(2_000_000_000, Some(500_000_000), None)),
            500
        );
        assert_eq!(sampler.millis("d", &cpu(5, None, Some(250_000_000))), 250);
        // A counter that went backwards (a restarted container) gives no rate.
        assert_eq!(sampler.millis("c", &cpu(3_000_000_000, Some(1), None)), 0);
    }

    #[test]
    fn dir_usage_counts_files_and_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("sub/f"), vec![1u8; 64 * 1024]).expect("write");
        let (bytes, inodes) = dir_usage(dir.path());
        assert_eq!(inodes, 2);
        assert!(bytes >= 64 * 1024, "{bytes}");
        assert_eq!(dir_usage(&dir.path().join("missing")), (0, 0));
    }
}
