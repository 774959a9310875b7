//! Node-level memory and pids, measured as upstream's kubelet measures them through cadvisor:
//! memory.available is capacity minus the root cgroup's working set (usage minus
//! inactive_file), which is not /proc/meminfo's MemAvailable; pid.available is the PID limit
//! minus the processes running.

use super::cgroup::{is_v1, parse_memory_stat, MemoryCounters};
use super::{read, read_number, StatsError};
use crate::cgroups::CGROUP_ROOT;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const MEMINFO: &str = "/proc/meminfo";

/// Memory of the node or of one pod, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// `MemTotal`.
    pub capacity: u64,
    /// All memory in use, page cache included.
    pub usage: u64,
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

/// A field of parsed /proc/meminfo.
fn meminfo_field(info: &HashMap<String, u64>, field: &'static str) -> Result<u64, StatsError> {
    info.get(field)
        .copied()
        .ok_or_else(|| StatsError::MissingField {
            path: PathBuf::from(MEMINFO),
            field,
        })
}

fn v1_root() -> PathBuf {
    Path::new(CGROUP_ROOT).join("memory")
}

/// cgroup v1 root: `memory.usage_in_bytes` minus `total_inactive_file`.
pub fn memory_v1(
    meminfo: &str,
    usage_in_bytes: &str,
    memory_stat: &str,
) -> Result<MemoryStats, StatsError> {
    let capacity = meminfo_field(&parse_meminfo(meminfo), "MemTotal")?;
    let usage: u64 = usage_in_bytes
        .trim()
        .parse()
        .map_err(|_| StatsError::NotANumber {
            path: v1_root().join("memory.usage_in_bytes"),
        })?;
    let inactive = parse_memory_stat(memory_stat)
        .get("total_inactive_file")
        .copied()
        .unwrap_or(0);
    Ok(MemoryStats {
        capacity,
        usage,
        working_set: usage.saturating_sub(inactive),
    })
}

/// cgroup v2 root, which has no memory.current: usage is MemTotal minus MemFree (as runc's
/// libcontainer computes it for the root), inactive_file from the root memory.stat when it
/// has one, else from /proc/meminfo.
pub fn memory_v2(meminfo: &str, root_memory_stat: Option<&str>) -> Result<MemoryStats, StatsError> {
    let info = parse_meminfo(meminfo);
    let capacity = meminfo_field(&info, "MemTotal")?;
    let usage = capacity.saturating_sub(meminfo_field(&info, "MemFree")?);
    let inactive = match root_memory_stat.map(parse_memory_stat) {
        Some(stat) if stat.contains_key("inactive_file") => stat["inactive_file"],
        _ => meminfo_field(&info, "Inactive(file)")?,
    };
    Ok(MemoryStats {
        capacity,
        usage,
        working_set: usage.saturating_sub(inactive),
    })
}

/// The node's memory, measured as upstream measures it.
pub fn memory() -> Result<MemoryStats, StatsError> {
    let meminfo = read(Path::new(MEMINFO))?;
    if is_v1() {
        let root = v1_root();
        memory_v1(
            &meminfo,
            &read(&root.join("memory.usage_in_bytes"))?,
            &read(&root.join("memory.stat"))?,
        )
    } else {
        let stat = std::fs::read_to_string(Path::new(CGROUP_ROOT).join("memory.stat")).ok();
        memory_v2(&meminfo, stat.as_deref())
    }
}

/// The node's RSS and page faults: the root cgroup's memory.stat, or on a cgroup v2 root
/// without one, /proc/vmstat's fault counters.
pub fn memory_counters() -> MemoryCounters {
    let v1 = is_v1();
    let stat_file = if v1 {
        v1_root().join("memory.stat")
    } else {
        Path::new(CGROUP_ROOT).join("memory.stat")
    };
    if let Ok(stat) = std::fs::read_to_string(stat_file) {
        return MemoryCounters::of(&parse_memory_stat(&stat), v1);
    }
    let vmstat = std::fs::read_to_string("/proc/vmstat").unwrap_or_default();
    let vmstat = parse_memory_stat(&vmstat);
    MemoryCounters {
        rss: None,
        page_faults: vmstat.get("pgfault").copied(),
        major_page_faults: vmstat.get("pgmajfault").copied(),
        cache: None,
    }
}

/// The node's swap: (`SwapTotal`, `SwapFree`) of /proc/meminfo, in bytes.
pub fn swap() -> Result<(u64, u64), StatsError> {
    let info = parse_meminfo(&read(Path::new(MEMINFO))?);
    Ok((
        meminfo_field(&info, "SwapTotal")?,
        meminfo_field(&info, "SwapFree")?,
    ))
}

/// When the machine booted (`btime` of /proc/stat): the start of the node's counters, the
/// Summary API's node `startTime`.
pub fn boot_time() -> Result<std::time::SystemTime, StatsError> {
    let path = Path::new("/proc/stat");
    let seconds = read(path)?
        .lines()
        .find_map(|line| line.strip_prefix("btime ")?.trim().parse::<u64>().ok())
        .ok_or_else(|| StatsError::MissingField {
            path: path.to_path_buf(),
            field: "btime",
        })?;
    Ok(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds))
}

/// `pid.available`'s inputs: the PID limit (the smaller of pid_max and threads-max) and the
/// processes running now.
pub fn pids() -> Result<(u64, u64), StatsError> {
    let max = read_number(Path::new("/proc/sys/kernel/pid_max"))?
        .min(read_number(Path::new("/proc/sys/kernel/threads-max"))?);
    // sysinfo(2) fails only on a bad buffer address, which rustix never passes.
    let info = rustix::system::sysinfo();
    Ok((max, u64::from(info.procs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "MemTotal:       16384000 kB\nMemFree:         4096000 kB\nMemAvailable:   10000000 kB\nInactive(file):  2048000 kB\n";

    #[test]
    fn v1_working_set_is_usage_minus_total_inactive_file() {
        let stats = memory_v1(
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
        let with_stat =
            memory_v2(MEMINFO, Some("anon 1\ninactive_file 1048576\n")).expect("valid fixture");
        let usage = (16_384_000 - 4_096_000) * 1024;
        assert_eq!(with_stat.working_set, usage - 1_048_576);
        // Without a root memory.stat, /proc/meminfo's Inactive(file) stands in.
        let without = memory_v2(MEMINFO, None).expect("valid fixture");
        assert_eq!(without.working_set, usage - 2_048_000 * 1024);
        // Not MemAvailable: upstream's formula differs from the kernel's estimate.
        assert_ne!(without.available(), 10_000_000 * 1024);
    }

    #[test]
    fn broken_inputs_are_errors_not_zeros() {
        assert!(memory_v1("", "1", "").is_err());
        let error = memory_v1(MEMINFO, "lots", "").expect_err("not a number");
        assert_eq!(
            error.to_string(),
            "/sys/fs/cgroup/memory/memory.usage_in_bytes is not a number"
        );
        let error = memory_v2("MemTotal: 1 kB\n", None).expect_err("no MemFree");
        assert_eq!(error.to_string(), "/proc/meminfo has no MemFree");
    }

    #[test]
    fn the_live_node_is_measurable() {
        let stats = memory().expect("node memory");
        assert!(stats.capacity > 0 && stats.working_set <= stats.capacity);
        assert!(stats.working_set <= stats.usage);
        assert!(memory_counters().page_faults.is_some());
        let (total, free) = swap().expect("swap");
        assert!(free <= total);
        let booted = boot_time().expect("btime");
        assert!(booted < std::time::SystemTime::now());
        let (max, running) = pids().expect("pids");
        assert!(max > running && running > 0);
    }
}
