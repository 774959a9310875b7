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
///
/// Sorts one precomputed `u128` per pod rather than calling [`compare`]
/// O(n log n) times: the key orders exactly as `compare` does, with the pod's
/// index in its low bits (so ties keep the input order, as a stable sort
/// would). A sort of plain integers is what keeps ranking cheap in
/// WebAssembly, where moving wide structs is slow.
pub fn order_for(pressure: Pressure, pods: &[PodInfo]) -> Vec<u32> {
    if pods.len() > INDEX_MASK as usize {
        let mut order: Vec<u32> = (0..pods.len() as u32).collect();
        order.sort_by(|&a, &b| compare(pressure, &pods[a as usize], &pods[b as usize]));
        return order;
    }
    let mut keys: Vec<u128> = pods
        .iter()
        .enumerate()
        .map(|(i, p)| sort_key(pressure, p) << INDEX_BITS | i as u128)
        .collect();
    keys.sort_unstable();
    keys.into_iter().map(|k| (k & INDEX_MASK) as u32).collect()
}

/// Bits of a sort key that hold the pod's index.
const INDEX_BITS: u32 = 21;
const INDEX_MASK: u128 = (1 << INDEX_BITS) - 1;

/// `compare`'s keys in 107 bits, most significant first, smaller evicted first.
fn sort_key(pressure: Pressure, p: &PodInfo) -> u128 {
    // Signed priority mapped onto u32 in the same order.
    let priority = u128::from(p.priority as u32 ^ 0x8000_0000);
    let stats = u128::from(p.has_stats);
    // Usage above request, descending: (2^64 - 1) - (usage - request), 65 bits.
    let above_desc = |(usage, request): (u64, u64)| {
        (u128::from(u64::MAX) + u128::from(request)) - u128::from(usage)
    };
    let measured = |(usage, request): (u64, u64)| -> (u128, u128) {
        if p.has_stats {
            (u128::from(usage <= request), above_desc((usage, request)))
        } else {
            // Without stats the usage keys compare equal, as `compare` treats them.
            (0, 0)
        }
    };
    let (exceeds, above) = match pressure {
        Pressure::Pid => {
            let processes_desc = u128::from(u64::MAX - p.process_count);
            return priority << 65 | stats << 64 | processes_desc;
        }
        Pressure::Memory => measured(memory(p)),
        Pressure::Disk => measured(disk(p)),
        Pressure::Inodes => measured(inodes(p)),
    };
    stats << 99 | exceeds << 98 | priority << 65 | above
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
