//! The cgroup manager's part that is not a reading: pod-level cgroup directories. With the
//! cgroupfs driver runc creates and removes container cgroups under the pod's `cgroup_parent`,
//! but the pod directories are the kubelet's to remove. Readings of cgroups live in
//! [`crate::stats::cgroup`].

use std::path::Path;

/// Where the cgroup hierarchies are mounted (v2 unified, or one directory per v1 controller).
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Removes the (empty) pod cgroup `parent` (e.g. `/kubepods/burstable/pod<uid>`) from every
/// hierarchy, cgroup v1 and v2 alike. Best effort: a directory still in use stays.
pub fn remove_pod_cgroup(parent: &str) {
    let relative = parent.trim_start_matches('/');
    let root = Path::new(CGROUP_ROOT);
    let mut candidates = vec![root.join(relative)];
    if let Ok(hierarchies) = std::fs::read_dir(root) {
        candidates.extend(hierarchies.flatten().map(|h| h.path().join(relative)));
    }
    for dir in candidates {
        if dir.is_dir() {
            if let Err(error) = std::fs::remove_dir(&dir) {
                tracing::debug!(dir = %dir.display(), %error, "pod cgroup not removed");
            }
        }
    }
}

/// The cgroup every pod cgroup sits under.
pub const PODS_CGROUP: &str = "kubepods";

/// Limits the `kubepods` cgroup to `cpu_millis` (as CPU shares, or the v2 weight) and
/// `memory_bytes`, creating it where needed: upstream's `enforceNodeAllocatable: [pods]`, so
/// pods together never take what `systemReserved` and `kubeReserved` keep.
pub fn limit_pods_cgroup(cpu_millis: i64, memory_bytes: i64) -> std::io::Result<()> {
    let root = Path::new(CGROUP_ROOT);
    let shares = crate::resources::milli_cpu_to_shares(cpu_millis);
    if root.join("cgroup.controllers").exists() {
        let dir = root.join(PODS_CGROUP);
        std::fs::create_dir_all(&dir)?;
        // Upstream's CPUSharesToCPUWeight.
        let weight = 1 + ((shares - 2) * 9999) / 262_142;
        std::fs::write(dir.join("cpu.weight"), weight.to_string())?;
        std::fs::write(dir.join("memory.max"), memory_bytes.to_string())?;
        return Ok(());
    }
    for (controller, file, value) in [
        ("cpu", "cpu.shares", shares),
        ("memory", "memory.limit_in_bytes", memory_bytes),
    ] {
        let dir = root.join(controller).join(PODS_CGROUP);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(file), value.to_string())?;
    }
    Ok(())
}
