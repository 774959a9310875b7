//! The eviction signals, measured as upstream's kubelet measures them through cadvisor:
//! memory.available is capacity minus the root cgroup's working set (usage minus
//! inactive_file), which is not /proc/meminfo's MemAvailable; pid.available is pid_max minus
//! the processes running; the filesystem signals come from statvfs.

use std::collections::HashMap;
use std::io;
use std::path::Path;

const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Memory of the node or of one pod, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    pub capacity: u64,
    /// Usage minus inactive_file: what cannot be reclaimed without pressure.
    pub working_set: u64,
}

impl MemoryStats {
    /// `memory.available`.
    pub fn available(&self) -> i64 {
        self.capacity as i64 - self.working_set as i64
    }
}

/// `Key: value kB` lines of /proc/meminfo, in bytes.
pub fn parse_meminfo(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (key, rest) = line.split_once(':')?;
            let mut words = rest.split_whitespace();
            let value: u64 = words.next()?.parse().ok()?;
            let scale = if words.next() == Some("kB") { 1024 } else { 1 };
            Some((key.trim().to_string(), value * scale))
        })
        .collect()
}

/// `key value` lines of a cgroup's memory.stat.
pub fn parse_memory_stat(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(' ')?;
            Some((key.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// cgroup v1 root: `memory.usage_in_bytes` minus `total_inactive_file`.
pub fn node_memory_v1(
    meminfo: &str,
    usage_in_bytes: &str,
    memory_stat: &str,
) -> io::Result<MemoryStats> {
    let meminfo = parse_meminfo(meminfo);
    let capacity = *meminfo
        .get("MemTotal")
        .ok_or_else(|| io::Error::other("/proc/meminfo has no MemTotal"))?;
    let usage: u64 = usage_in_bytes
        .trim()
        .parse()
        .map_err(|_| io::Error::other("memory.usage_in_bytes is not a number"))?;
    let inactive = parse_memory_stat(memory_stat)
        .get("total_inactive_file")
        .copied()
        .unwrap_or(0);
    Ok(MemoryStats {
        capacity,
        working_set: usage.saturating_sub(inactive),
    })
}

/// cgroup v2 root, which has no memory.current: usage is MemTotal minus MemFree (as runc's
/// libcontainer computes it for the root), inactive_file from the root memory.stat when it
/// has one, else from /proc/meminfo.
pub fn node_memory_v2(meminfo: &str, root_memory_stat: Option<&str>) -> io::Result<MemoryStats> {
    let info = parse_meminfo(meminfo);
    let field = |key: &str| {
        info.get(key)
            .copied()
            .ok_or_else(|| io::Error::other(format!("/proc/meminfo has no {key}")))
    };
    let capacity = field("MemTotal")?;
    let usage = capacity.saturating_sub(field("MemFree")?);
    let inactive = match root_memory_stat.map(parse_memory_stat) {
        Some(stat) if stat.contains_key("inactive_file") => stat["inactive_file"],
        _ => field("Inactive(file)")?,
    };
    Ok(MemoryStats {
        capacity,
        working_set: usage.saturating_sub(inactive),
    })
}

fn is_cgroup_v1() -> bool {
    Path::new(CGROUP_ROOT)
        .join("memory/memory.usage_in_bytes")
        .exists()
}

/// The node's memory, measured as upstream measures it.
pub fn node_memory() -> io::Result<MemoryStats> {
    let meminfo = std::fs::read_to_string("/proc/meminfo")?;
    let root = Path::new(CGROUP_ROOT);
    if is_cgroup_v1() {
        node_memory_v1(
            &meminfo,
            &std::fs::read_to_string(root.join("memory/memory.usage_in_bytes"))?,
            &std::fs::read_to_string(root.join("memory/memory.stat"))?,
        )
    } else {
        let stat = std::fs::read_to_string(root.join("memory.stat")).ok();
        node_memory_v2(&meminfo, stat.as_deref())
    }
}

/// Working set of the cgroup `parent` (e.g. `/kubepods/besteffort/pod<uid>`); `None` when
/// it does not exist (yet).
pub fn cgroup_working_set(parent: &str) -> Option<u64> {
    let relative = parent.trim_start_matches('/');
    let root = Path::new(CGROUP_ROOT);
    let (usage, stat, inactive_key) = if is_cgroup_v1() {
        let dir = root.join("memory").join(relative);
        (
            std::fs::read_to_string(dir.join("memory.usage_in_bytes")).ok()?,
            std::fs::read_to_string(dir.join("memory.stat")).ok()?,
            "total_inactive_file",
        )
    } else {
        let dir = root.join(relative);
        (
            std::fs::read_to_string(dir.join("memory.current")).ok()?,
            std::fs::read_to_string(dir.join("memory.stat")).ok()?,
            "inactive_file",
        )
    };
    let usage: u64 = usage.trim().parse().ok()?;
    let inactive = parse_memory_stat(&stat)
        .get(inactive_key)
        .copied()
        .unwrap_or(0);
    Some(usage.saturating_sub(inactive))
}

/// Processes in the cgroup `parent` (v1 pids hierarchy or v2 `pids.current`).
pub fn cgroup_processes(parent: &str) -> Option<u64> {
    let relative = parent.trim_start_matches('/');
    let root = Path::new(CGROUP_ROOT);
    let file = if root.join("pids").is_dir() {
        root.join("pids").join(relative).join("pids.current")
    } else {
        root.join(relative).join("pids.current")
    };
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// `pid.available`'s inputs: the PID limit (the smaller of pid_max and threads-max) and the
/// processes running now.
pub fn pids() -> io::Result<(u64, u64)> {
    let read = |file: &str| -> io::Result<u64> {
        std::fs::read_to_string(file)?
            .trim()
            .parse()
            .map_err(|_| io::Error::other(format!("{file} is not a number")))
    };
    let max = read("/proc/sys/kernel/pid_max")?.min(read("/proc/sys/kernel/threads-max")?);
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: info is a writable sysinfo struct.
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((max, u64::from(info.procs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "MemTotal:       16384000 kB\nMemFree:         4096000 kB\nMemAvailable:   10000000 kB\nInactive(file):  2048000 kB\n";

    #[test]
    fn v1_working_set_is_usage_minus_total_inactive_file() {
        let stats = node_memory_v1(
            MEMINFO,
            "8589934592\n",
            "cache 100\ninactive_file 5\ntotal_inactive_file 1073741824\n",
        )
        .expect("valid fixture");
        assert_eq!(stats.capacity, 16_384_000 * 1024);
        assert_eq!(stats.working_set, 8_589_934_592 - 1_073_741_824);
        assert_eq!(
            stats.available(),
            16_384_000 * 1024 - (8_589_934_592 - 1_073_741_824)
        );
    }

    #[test]
    fn v2_root_uses_meminfo_usage_and_root_inactive_file() {
        let with_stat = node_memory_v2(MEMINFO, Some("anon 1\ninactive_file 1048576\n"))
            .expect("valid fixture");
        let usage = (16_384_000 - 4_096_000) * 1024;
        assert_eq!(with_stat.working_set, usage - 1_048_576);
        // Without a root memory.stat, /proc/meminfo's Inactive(file) stands in.
        let without = node_memory_v2(MEMINFO, None).expect("valid fixture");
        assert_eq!(without.working_set, usage - 2_048_000 * 1024);
        // Not MemAvailable: upstream's formula differs from the kernel's estimate.
        assert_ne!(without.available(), 10_000_000 * 1024);
    }

    #[test]
    fn broken_inputs_are_errors_not_zeros() {
        assert!(node_memory_v1("", "1", "").is_err());
        assert!(node_memory_v1(MEMINFO, "lots", "").is_err());
        assert!(node_memory_v2("MemTotal: 1 kB\n", None).is_err());
    }

    #[test]
    fn the_live_node_is_measurable() {
        let stats = node_memory().expect("node memory");
        assert!(stats.capacity > 0 && stats.working_set <= stats.capacity);
        let (max, running) = pids().expect("pids");
        assert!(max > running && running > 0);
    }
}
