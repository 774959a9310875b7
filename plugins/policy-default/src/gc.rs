//! Upstream garbage-collection planning: image GC
//! (`pkg/kubelet/images/image_gc_manager.go`) and container GC
//! (`pkg/kubelet/kuberuntime/kuberuntime_gc.go`).

use core::cmp::Reverse;
use std::collections::BTreeMap;

use crate::{DeadContainer, DiskInfo, ImageInfo};

/// Plans an image GC cycle: the images to delete, in order.
///
/// Candidates are the images neither in use nor pinned, first seen at least
/// `disk.min_age_ms` before `now_ms`, in least-recently-used order (last
/// used, then first seen; upstream `byLastUsedAndDetected`). First every
/// candidate unused for longer than `disk.max_age_ms` (when set; upstream
/// `freeOldImages`), then further candidates until their sizes add up to
/// `disk.bytes_to_free` (upstream `freeSpace`). When the candidates cannot
/// free that much, all of them are planned and the host reports
/// `FreeDiskSpaceFailed`.
pub fn plan_images(disk: &DiskInfo, images: &[ImageInfo], now_ms: u64) -> Vec<u32> {
    let mut candidates: Vec<u32> = (0..images.len() as u32)
        .filter(|&i| is_candidate(disk, &images[i as usize], now_ms))
        .collect();
    candidates.sort_by_key(|&i| {
        let image = &images[i as usize];
        (image.last_used_unix_ms, image.first_seen_unix_ms)
    });
    take_until_freed(disk, images, candidates, now_ms)
}

/// Whether an image may be collected at all: not in use, not pinned, and first seen at
/// least `disk.min_age_ms` before `now_ms`.
pub fn is_candidate(disk: &DiskInfo, image: &ImageInfo, now_ms: u64) -> bool {
    !image.in_use
        && !image.pinned
        && now_ms.saturating_sub(image.first_seen_unix_ms) >= disk.min_age_ms
}

/// From `candidates` in the order to delete them: every one unused for longer than
/// `disk.max_age_ms` (when set), then further ones until `disk.bytes_to_free` is reached.
pub fn take_until_freed(
    disk: &DiskInfo,
    images: &[ImageInfo],
    mut candidates: Vec<u32>,
    now_ms: u64,
) -> Vec<u32> {
    let mut plan = Vec::new();
    let mut freed: u64 = 0;
    if disk.max_age_ms > 0 {
        candidates.retain(|&i| {
            let image = &images[i as usize];
            let old = now_ms.saturating_sub(image.last_used_unix_ms) > disk.max_age_ms;
            if old {
                plan.push(i);
                freed = freed.saturating_add(image.size_bytes);
            }
            !old
        });
    }
    for i in candidates {
        if freed >= disk.bytes_to_free {
            break;
        }
        plan.push(i);
        freed = freed.saturating_add(images[i as usize].size_bytes);
    }
    plan
}

/// The container GC limits (upstream `kubecontainer.GCPolicy`; the age limit
/// is applied by the host, which passes only containers old enough).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerGcPolicy {
    /// `--maximum-dead-containers-per-container` (default 1); negative = no limit.
    pub max_per_pod_container: i32,
    /// `--maximum-dead-containers` (default -1); negative = no limit.
    pub max_containers: i32,
}

impl Default for ContainerGcPolicy {
    fn default() -> Self {
        ContainerGcPolicy {
            max_per_pod_container: 1,
            max_containers: -1,
        }
    }
}

/// Plans a container GC cycle: the dead containers to remove, in order.
///
/// As upstream `evictContainers`: every container of a deleted pod; then, per
/// evict unit, all but the newest `max_per_pod_container`; then, if more than
/// `max_containers` remain, an equal share per unit (at least one) and
/// finally the oldest containers node-wide. "Newest" within a unit follows
/// `per_container_rank`, and node-wide `finished_unix_ms`.
pub fn plan_containers(dead: &[DeadContainer], policy: &ContainerGcPolicy) -> Vec<u32> {
    let mut plan = Vec::new();
    // unit -> its containers, newest first.
    let mut units: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (i, c) in dead.iter().enumerate() {
        if c.pod_deleted {
            plan.push(i as u32);
        } else {
            units.entry(c.unit).or_default().push(i as u32);
        }
    }
    for members in units.values_mut() {
        members.sort_by_key(|&i| {
            let c = &dead[i as usize];
            (c.per_container_rank, Reverse(c.finished_unix_ms))
        });
    }

    if policy.max_per_pod_container >= 0 {
        keep_newest(&mut units, policy.max_per_pod_container as usize, &mut plan);
    }
    if policy.max_containers >= 0 {
        let max = policy.max_containers as usize;
        let remaining: usize = units.values().map(Vec::len).sum();
        if remaining > max {
            let per_unit = (max / units.len().max(1)).max(1);
            keep_newest(&mut units, per_unit, &mut plan);
            let mut flat: Vec<u32> = units.values().flatten().copied().collect();
            if flat.len() > max {
                // Oldest first; ties by index for determinism.
                flat.sort_by_key(|&i| (dead[i as usize].finished_unix_ms, i));
                let excess = flat.len() - max;
                plan.extend_from_slice(&flat[..excess]);
            }
        }
    }
    plan
}

/// Moves all but the first `keep` members of each unit into `plan`, oldest
/// first (upstream `removeOldestN`).
fn keep_newest(units: &mut BTreeMap<u32, Vec<u32>>, keep: usize, plan: &mut Vec<u32>) {
    for members in units.values_mut() {
        if members.len() > keep {
            plan.extend(members.drain(keep..).rev());
        }
    }
}

#[cfg(test)]
mod tests;
