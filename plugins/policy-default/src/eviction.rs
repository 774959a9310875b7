//! Upstream eviction ranking (`pkg/kubelet/eviction/helpers.go`).
//!
//! | Pressure | Order |
//! |---|---|
//! | memory (`rankMemoryPressure`) | no stats first, usage exceeds request first, priority ascending, usage minus request descending |
//! | PID (`rankPIDPressure`) | priority ascending, no stats first, process count descending |
//! | disk (`rankDiskPressureFunc`) | no stats first, usage exceeds request first, priority ascending, usage minus request descending |
//!
//! For inode signals the usage is `inodes_used` and the request 0, as
//! upstream (pods cannot request inodes). Ties keep the input order, so the
//! result is deterministic (upstream's `sort.Sort` is not stable).

use core::cmp::Ordering;

use crate::{PodInfo, Pressure, SignalObservation};

/// Ranks `pods` for eviction under the first signal of `pressure` (memory
/// when `pressure` is empty), most evictable first, leaving out the pods the
/// host never evicts (critical and static ones).
pub fn rank(pressure: &[SignalObservation], pods: &[PodInfo]) -> Vec<u32> {
    let kind = pressure
        .first()
        .map_or(Pressure::Memory, |o| o.signal.pressure());
    rank_for(kind, pods)
}

/// Ranks `pods` for `pressure`, most evictable first, without critical and
/// static pods.
pub fn rank_for(pressure: Pressure, pods: &[PodInfo]) -> Vec<u32> {
    let mut order = order_for(pressure, pods);
    order.retain(|&i| pods[i as usize].is_evictable());
    order
}

/// Orders all of `pods` for `pressure`, critical and static ones included
/// (for logs and comparisons; the host never evicts those).
pub fn order_for(pressure: Pressure, pods: &[PodInfo]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..pods.len() as u32).collect();
    order.sort_by(|&a, &b| compare(pressure, &pods[a as usize], &pods[b as usize]));
    order
}

/// Upstream's multi-key comparison: `Less` means `a` is evicted before `b`.
pub fn compare(pressure: Pressure, a: &PodInfo, b: &PodInfo) -> Ordering {
    match pressure {
        Pressure::Memory => no_stats_first(a, b)
            .then_with(|| exceeds_first(a, b, memory))
            .then_with(|| priority(a, b))
            .then_with(|| above_request_desc(a, b, memory)),
        Pressure::Pid => priority(a, b)
            .then_with(|| no_stats_first(a, b))
            .then_with(|| b.process_count.cmp(&a.process_count)),
        Pressure::Disk => no_stats_first(a, b)
            .then_with(|| exceeds_first(a, b, disk))
            .then_with(|| priority(a, b))
            .then_with(|| above_request_desc(a, b, disk)),
        Pressure::Inodes => no_stats_first(a, b)
            .then_with(|| exceeds_first(a, b, inodes))
            .then_with(|| priority(a, b))
            .then_with(|| above_request_desc(a, b, inodes)),
    }
}

/// (usage, request) of one resource.
type Measure = fn(&PodInfo) -> (u64, u64);

fn memory(p: &PodInfo) -> (u64, u64) {
    (p.memory_usage_bytes, p.memory_request_bytes)
}

fn disk(p: &PodInfo) -> (u64, u64) {
    (p.disk_usage_bytes, p.disk_request_bytes)
}

fn inodes(p: &PodInfo) -> (u64, u64) {
    (p.inodes_used, 0)
}

/// Upstream `cmpBool(!p1Found, !p2Found)`: a pod without stats goes first.
/// Once both have stats (or neither), the stats-based keys compare as
/// upstream, where a missing sample reads as zero usage.
fn no_stats_first(a: &PodInfo, b: &PodInfo) -> Ordering {
    true_first(!a.has_stats, !b.has_stats)
}

fn exceeds_first(a: &PodInfo, b: &PodInfo, measure: Measure) -> Ordering {
    let (ua, ra) = measure(a);
    let (ub, rb) = measure(b);
    if !a.has_stats || !b.has_stats {
        return Ordering::Equal;
    }
    true_first(ua > ra, ub > rb)
}

fn priority(a: &PodInfo, b: &PodInfo) -> Ordering {
    a.priority.cmp(&b.priority)
}

fn above_request_desc(a: &PodInfo, b: &PodInfo, measure: Measure) -> Ordering {
    if !a.has_stats || !b.has_stats {
        return Ordering::Equal;
    }
    let (ua, ra) = measure(a);
    let (ub, rb) = measure(b);
    let da = i128::from(ua) - i128::from(ra);
    let db = i128::from(ub) - i128::from(rb);
    db.cmp(&da)
}

/// Upstream `cmpBool`: true before false.
fn true_first(a: bool, b: bool) -> Ordering {
    b.cmp(&a)
}

#[cfg(test)]
mod tests;
