//! The process's heap policy. glibc gives each thread that allocates its own arena (up to
//! eight per core), and memory freed in one arena serves only that arena: a node agent whose
//! runtime threads take turns running pod workers ends up holding freed memory in each. One
//! arena keeps the heap close to what is live (110 pods with probes: 14.9 MiB anonymous
//! instead of 18.6). The price is a shared lock: the pod start path does not show it, a plugin
//! compile (rare: a cold cache or a new version) takes about a fifth longer. What is freed
//! inside the heap goes back to the kernel after ten seconds at most.

/// How often a node returns the heap it freed to the kernel (see [`spawn_periodic_release`]).
pub const RELEASE_PERIOD: std::time::Duration = std::time::Duration::from_secs(10);

/// Returns freed heap to the kernel every [`RELEASE_PERIOD`]. glibc hands back only the free
/// memory at the top of the heap on its own; what pods, probes and syncs free in between stays
/// mapped (2.2 of 10.1 MiB anonymous after 110 probed pods started). Allocators with decay
/// do this in the background (jemalloc after 10 s by default); this is the same for glibc on
/// the same clock. A release takes about a millisecond with 110 pods.
pub fn spawn_periodic_release() {
    tokio::spawn(async {
        let mut tick = tokio::time::interval(RELEASE_PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let started = std::time::Instant::now();
            if tokio::task::spawn_blocking(wasmlet_plugin_host::release_freed_heap)
                .await
                .is_ok()
            {
                tracing::trace!(elapsed = ?started.elapsed(), "freed heap released");
            }
        }
    });
}

/// Limits the heap to one arena. Call it first in `main`, before any thread starts.
#[allow(unsafe_code)]
pub fn use_one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` takes no pointer and only sets a tunable of glibc's allocator; called
    // before other threads exist, nothing allocates concurrently.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(test)]
mod tests {
    fn anonymous_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("RssAnon:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_heap_below_a_live_allocation_goes_back_to_the_kernel() {
        // 32 MiB in blocks glibc serves from the heap (below its mmap threshold), written so
        // they are resident; every 256th stays, the rest are freed: free() alone cannot return
        // memory below a live block.
        let blocks: Vec<Box<[u8]>> = (0..2048).map(|_| vec![1u8; 16 << 10].into()).collect();
        let kept: Vec<Box<[u8]>> = blocks.into_iter().step_by(256).collect();
        let before = anonymous_kib();
        wasmlet_plugin_host::release_freed_heap();
        let after = anonymous_kib();
        assert!(kept.iter().all(|block| block[0] == 1));
        assert!(
            before.saturating_sub(after) >= 16 << 10,
            "anonymous memory {before} KiB before the release, {after} KiB after"
        );
    }
}
