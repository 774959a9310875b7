//! The machine's capacity as the kernel reports it: what an unset limit reads as, and the
//! base of the Burstable OOM score and of the Node's capacity.

/// The machine's memory in bytes (`MemTotal`), used for the Burstable OOM score.
pub fn machine_memory_bytes() -> i64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<i64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(1 << 30)
}

/// The machine's CPUs in millicores (what an unset CPU limit reads as).
pub fn machine_cpu_millis() -> i64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as i64) * 1000
}
