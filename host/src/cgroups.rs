//! The cgroup manager's part that is not a reading: pod-level cgroup directories and their
//! limits ([`set_pod_limits`]), the QoS-level cgroups' shares ([`set_qos_shares`]). With the cgroupfs driver runc creates and removes container
//! cgroups under the pod's `cgroup_parent`, but the pod directories are the kubelet's to
//! limit and remove. Readings of cgroups live in [`crate::stats::cgroup`].

mod pod_limits;
mod qos;

pub use pod_limits::{pod_limits, set_pod_limits, PodLimits};
pub use qos::set_qos_shares;

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
    limit_pods_cgroup_at(Path::new(CGROUP_ROOT), cpu_millis, memory_bytes)
}

/// [`limit_pods_cgroup`] under the hierarchies mounted at `root`: cgroup v2 when `root` has
/// `cgroup.controllers`, else one directory per v1 controller.
fn limit_pods_cgroup_at(root: &Path, cpu_millis: i64, memory_bytes: i64) -> std::io::Result<()> {
    use pod_limits::{dir, write};
    let shares = crate::resources::milli_cpu_to_shares(cpu_millis);
    let cpu = dir(root, "cpu", PODS_CGROUP);
    let memory = dir(root, "memory", PODS_CGROUP);
    std::fs::create_dir_all(&cpu)?;
    std::fs::create_dir_all(&memory)?;
    pod_limits::write_shares(root, &cpu, shares)?;
    let limit_file = if pod_limits::is_unified(root) {
        "memory.max"
    } else {
        "memory.limit_in_bytes"
    };
    write(&memory, limit_file, &memory_bytes.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_default()
    }

    #[test]
    fn the_pods_cgroup_gets_allocatable_on_v2_and_v1() {
        let gib = 1i64 << 30;
        let v2 = tempfile::tempdir().expect("temp dir");
        std::fs::write(v2.path().join("cgroup.controllers"), "cpu memory\n").expect("write");
        limit_pods_cgroup_at(v2.path(), 3500, 6 * gib).expect("v2 limit");
        let pods = v2.path().join(PODS_CGROUP);
        // 3500m is 3584 shares, upstream's CPUSharesToCPUWeight gives 137.
        assert_eq!(read(&pods.join("cpu.weight")), "137");
        assert_eq!(read(&pods.join("memory.max")), (6 * gib).to_string());

        let v1 = tempfile::tempdir().expect("temp dir");
        limit_pods_cgroup_at(v1.path(), 3500, 6 * gib).expect("v1 limit");
        assert_eq!(
            read(&v1.path().join("cpu").join(PODS_CGROUP).join("cpu.shares")),
            "3584"
        );
        assert_eq!(
            read(
                &v1.path()
                    .join("memory")
                    .join(PODS_CGROUP)
                    .join("memory.limit_in_bytes")
            ),
            (6 * gib).to_string()
        );
        assert!(!v1.path().join(PODS_CGROUP).exists(), "no v2 file on v1");
    }
}
