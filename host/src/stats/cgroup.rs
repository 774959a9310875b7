//! Readers of one cgroup's counters, cgroup v1 and v2 alike: memory (the working set is usage
//! minus inactive_file, as cadvisor computes it), cumulative CPU time, the number of processes
//! and a process to find the cgroup's network namespace by.

pub mod snapshot;

use crate::cgroups::CGROUP_ROOT;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A memory limit above this is no limit (cadvisor's and the kubelet's `maxMemorySize`, 2^62):
/// cgroup v1 spells "unlimited" as the largest page-aligned 63-bit number.
const UNLIMITED: u64 = 1 << 62;

/// `key value` lines of a cgroup's memory.stat.
pub fn parse_memory_stat(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(' ')?;
            Some((key.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// Whether the host mounts the cgroup v1 memory hierarchy (else the v2 unified one).
pub fn is_v1() -> bool {
    Path::new(CGROUP_ROOT)
        .join("memory/memory.usage_in_bytes")
        .exists()
}

/// The cgroup hierarchy a controller's files are in: `/sys/fs/cgroup/<controller>` on v1 (or
/// a co-mounted `cpu,cpuacct`), the unified root on v2.
fn hierarchy(v1_names: &[&str]) -> PathBuf {
    let root = Path::new(CGROUP_ROOT);
    if !is_v1() {
        return root.to_path_buf();
    }
    v1_names
        .iter()
        .map(|name| root.join(name))
        .find(|dir| dir.is_dir())
        .unwrap_or_else(|| root.join(v1_names[0]))
}

/// The directory of cgroup `parent` in the memory hierarchy.
fn memory_dir(parent: &str) -> PathBuf {
    hierarchy(&["memory"]).join(parent.trim_start_matches('/'))
}

/// Counters of memory.stat beyond the working set; `None` where the kernel has no such field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryCounters {
    /// Anonymous and swap cache memory (v1 `total_rss`, v2 `anon`), cadvisor's RSS.
    pub rss: Option<u64>,
    /// Minor page faults since the cgroup was created.
    pub page_faults: Option<u64>,
    /// Major page faults since the cgroup was created.
    pub major_page_faults: Option<u64>,
    /// Page cache (v1 `total_cache`, v2 `file`), cadvisor's `cache`.
    pub cache: Option<u64>,
}

impl MemoryCounters {
    /// The counters of a parsed memory.stat, by the field names of cgroup v1 (the hierarchical
    /// `total_` ones) or v2.
    pub fn of(stat: &HashMap<String, u64>, v1: bool) -> Self {
        let (rss, faults, major, cache) = if v1 {
            (
                "total_rss",
                "total_pgfault",
                "total_pgmajfault",
                "total_cache",
            )
        } else {
            ("anon", "pgfault", "pgmajfault", "file")
        };
        MemoryCounters {
            rss: stat.get(rss).copied(),
            page_faults: stat.get(faults).copied(),
            major_page_faults: stat.get(major).copied(),
            cache: stat.get(cache).copied(),
        }
    }
}

/// One cgroup's memory, as cadvisor reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CgroupMemory {
    /// All memory charged to the cgroup, page cache included.
    pub usage: u64,
    /// Usage minus inactive_file: what cannot be reclaimed without pressure.
    pub working_set: u64,
    /// The limit; `None` when the cgroup has none.
    pub limit: Option<u64>,
    /// RSS and page faults.
    pub counters: MemoryCounters,
}

impl CgroupMemory {
    /// Memory left before the limit (`limit - working set`), as the Summary API's
    /// `availableBytes`; `None` without a limit.
    pub fn available(&self) -> Option<u64> {
        self.limit
            .map(|limit| limit.saturating_sub(self.working_set))
    }
}

/// A cgroup's memory from the texts of its usage file (v1 `memory.usage_in_bytes`, v2
/// `memory.current`), memory.stat and limit file (v1 `memory.limit_in_bytes`, v2
/// `memory.max`); `None` if the usage is not a number.
pub fn parse_memory(
    v1: bool,
    usage: &str,
    stat: &str,
    limit: Option<&str>,
) -> Option<CgroupMemory> {
    let usage: u64 = usage.trim().parse().ok()?;
    let stat = parse_memory_stat(stat);
    let inactive = stat
        .get(if v1 {
            "total_inactive_file"
        } else {
            "inactive_file"
        })
        .copied()
        .unwrap_or(0);
    let limit = limit
        .and_then(|text| text.trim().parse::<u64>().ok())
        .filter(|&limit| limit < UNLIMITED);
    Some(CgroupMemory {
        usage,
        working_set: usage.saturating_sub(inactive),
        limit,
        counters: MemoryCounters::of(&stat, v1),
    })
}

/// Memory of the cgroup `parent` (e.g. `/kubepods/besteffort/pod<uid>`); `None` when it does
/// not exist (yet). The v2 root has no memory.current: read the node through
/// [`super::node`] instead.
pub fn memory(parent: &str) -> Option<CgroupMemory> {
    let v1 = is_v1();
    let dir = memory_dir(parent);
    let (usage_file, limit_file) = if v1 {
        ("memory.usage_in_bytes", "memory.limit_in_bytes")
    } else {
        ("memory.current", "memory.max")
    };
    let usage = std::fs::read_to_string(dir.join(usage_file)).ok()?;
    let stat = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
    let limit = std::fs::read_to_string(dir.join(limit_file)).ok();
    parse_memory(v1, &usage, &stat, limit.as_deref())
}

/// Working set of the cgroup `parent` (e.g. `/kubepods/besteffort/pod<uid>`); `None` when
/// it does not exist (yet).
pub fn working_set(parent: &str) -> Option<u64> {
    memory(parent).map(|m| m.working_set)
}

/// CPU time used by the cgroup `parent` since it was created, in nanoseconds: v1
/// `cpuacct.usage`, v2 `usage_usec` of cpu.stat. `None` when it does not exist (yet).
pub fn cpu_usage_ns(parent: &str) -> Option<u64> {
    let dir =
        hierarchy(&["cpuacct", "cpu,cpuacct", "cpuacct,cpu"]).join(parent.trim_start_matches('/'));
    if is_v1() {
        std::fs::read_to_string(dir.join("cpuacct.usage"))
            .ok()?
            .trim()
            .parse()
            .ok()
    } else {
        let stat = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
        parse_memory_stat(&stat)
            .get("usage_usec")
            .map(|usec| usec.saturating_mul(1000))
    }
}

/// Whether the cgroup `parent` exists (in the memory hierarchy, which every pod cgroup has).
pub fn exists(parent: &str) -> bool {
    memory_dir(parent).is_dir()
}

/// When the cgroup `parent` was created, as cadvisor takes it: the modification time of its
/// directory in the memory hierarchy.
pub fn created(parent: &str) -> Option<std::time::SystemTime> {
    std::fs::metadata(memory_dir(parent)).ok()?.modified().ok()
}

/// A process of the child cgroup `child` of `parent` (a pod's sandbox), through which the
/// pod's network namespace is found; `None` when it has none.
pub fn first_process(parent: &str, child: &str) -> Option<u32> {
    let procs =
        std::fs::read_to_string(memory_dir(parent).join(child).join("cgroup.procs")).ok()?;
    procs.lines().find_map(|line| line.trim().parse().ok())
}

/// Processes in the cgroup `parent` (v1 pids hierarchy or v2 `pids.current`); `None` when it
/// does not exist (yet).
pub fn processes(parent: &str) -> Option<u64> {
    let relative = parent.trim_start_matches('/');
    let root = Path::new(CGROUP_ROOT);
    let file = if root.join("pids").is_dir() {
        root.join("pids").join(relative).join("pids.current")
    } else {
        root.join(relative).join("pids.current")
    };
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_stat_lines_are_keys_and_numbers() {
        let stat = parse_memory_stat("anon 1\ninactive_file 1048576\nbroken x\n");
        assert_eq!(stat.get("inactive_file"), Some(&1_048_576));
        assert_eq!(stat.get("anon"), Some(&1));
        assert!(!stat.contains_key("broken"));
    }

    #[test]
    fn a_missing_cgroup_has_no_readings() {
        assert_eq!(working_set("/wasmlet-test/does-not-exist"), None);
        assert_eq!(processes("/wasmlet-test/does-not-exist"), None);
        assert_eq!(cpu_usage_ns("/wasmlet-test/does-not-exist"), None);
        assert_eq!(first_process("/wasmlet-test", "does-not-exist"), None);
    }

    #[test]
    fn v1_memory_uses_the_hierarchical_fields_and_drops_the_unlimited_limit() {
        let stat = "rss 1\ntotal_rss 4096\ntotal_cache 900\ntotal_pgfault 10\ntotal_pgmajfault 2\ntotal_inactive_file 1000\n";
        let memory = parse_memory(true, "5000\n", stat, Some("9223372036854771712\n"))
            .expect("valid fixture");
        assert_eq!(memory.usage, 5000);
        assert_eq!(memory.working_set, 4000);
        assert_eq!(memory.limit, None);
        assert_eq!(memory.available(), None);
        assert_eq!(
            memory.counters,
            MemoryCounters {
                rss: Some(4096),
                page_faults: Some(10),
                major_page_faults: Some(2),
                cache: Some(900),
            }
        );
        let limited = parse_memory(true, "5000", stat, Some("6000")).expect("valid fixture");
        assert_eq!(limited.available(), Some(2000));
    }

    #[test]
    fn v2_memory_reads_anon_and_max() {
        let stat = "anon 300\ninactive_file 100\npgfault 7\npgmajfault 1\n";
        let memory = parse_memory(false, "1000", stat, Some("max\n")).expect("valid fixture");
        assert_eq!((memory.working_set, memory.limit), (900, None));
        assert_eq!(memory.counters.rss, Some(300));
        let limited = parse_memory(false, "1000", stat, Some("2000")).expect("valid fixture");
        assert_eq!(limited.available(), Some(1100));
        assert_eq!(parse_memory(false, "lots", stat, None), None);
    }

    #[test]
    fn the_root_cgroup_has_used_cpu() {
        // v2's root has cpu.stat only on newer kernels; the node reading covers the rest.
        if is_v1() {
            assert!(cpu_usage_ns("/").is_some_and(|ns| ns > 0));
        }
    }
}
