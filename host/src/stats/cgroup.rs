//! Readers of one cgroup's counters, cgroup v1 and v2 alike: the working set (usage minus
//! inactive_file, as cadvisor computes it) and the number of processes.

use crate::cgroups::CGROUP_ROOT;
use std::collections::HashMap;
use std::path::Path;

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

/// Working set of the cgroup `parent` (e.g. `/kubepods/besteffort/pod<uid>`); `None` when
/// it does not exist (yet).
pub fn working_set(parent: &str) -> Option<u64> {
    let relative = parent.trim_start_matches('/');
    let root = Path::new(CGROUP_ROOT);
    let (dir, usage_file, inactive_key) = if is_v1() {
        (
            root.join("memory").join(relative),
            "memory.usage_in_bytes",
            "total_inactive_file",
        )
    } else {
        (root.join(relative), "memory.current", "inactive_file")
    };
    let usage = std::fs::read_to_string(dir.join(usage_file)).ok()?;
    let stat = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
    let usage: u64 = usage.trim().parse().ok()?;
    let inactive = parse_memory_stat(&stat)
        .get(inactive_key)
        .copied()
        .unwrap_or(0);
    Some(usage.saturating_sub(inactive))
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
    }
}
