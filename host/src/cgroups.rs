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
