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

/// Identity and software of the machine, for the Node's `nodeInfo` (upstream reads the same
/// files through cAdvisor).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MachineInfo {
    /// `/etc/machine-id` (or the D-Bus copy).
    pub machine_id: String,
    /// The firmware's product UUID, when readable.
    pub system_uuid: String,
    /// This boot's ID: a change tells the control plane the node rebooted.
    pub boot_id: String,
    /// `uname -r`.
    pub kernel_version: String,
    /// `PRETTY_NAME` of `/etc/os-release`.
    pub os_image: String,
}

/// The first line of `path`, trimmed; `None` when unreadable or empty (the one-line files
/// of `/proc` and `/sys`).
pub fn first_line(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().next()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}

/// Reads the machine's identity; a file that cannot be read leaves its field empty.
pub fn machine_info() -> MachineInfo {
    let os_image = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| "Linux".to_string());
    MachineInfo {
        machine_id: first_line("/etc/machine-id")
            .or_else(|| first_line("/var/lib/dbus/machine-id"))
            .unwrap_or_default(),
        system_uuid: first_line("/sys/class/dmi/id/product_uuid").unwrap_or_default(),
        boot_id: first_line("/proc/sys/kernel/random/boot_id").unwrap_or_default(),
        kernel_version: first_line("/proc/sys/kernel/osrelease").unwrap_or_default(),
        os_image,
    }
}

/// The kernel's huge page pools: (page size in KiB, pages allocated), one per size.
pub fn hugepage_pools() -> Vec<(i64, i64)> {
    let Ok(entries) = std::fs::read_dir("/sys/kernel/mm/hugepages") else {
        return Vec::new();
    };
    let mut pools: Vec<(i64, i64)> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let kb: i64 = name
                .strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse()
                .ok()?;
            let pages: i64 = first_line(&format!("{}/nr_hugepages", entry.path().display()))?
                .parse()
                .ok()?;
            Some((kb, pages))
        })
        .collect();
    pools.sort();
    pools
}

/// Pre-allocated huge pages per page size (`hugepages-2Mi` → bytes), as the Node's capacity
/// lists them; sizes with none allocated are listed with 0, as upstream does.
pub fn hugepages() -> Vec<(String, i64)> {
    let mut sizes: Vec<(String, i64)> = hugepage_pools()
        .into_iter()
        .map(|(kb, pages)| {
            let unit = if kb % (1024 * 1024) == 0 {
                format!("{}Gi", kb / (1024 * 1024))
            } else if kb % 1024 == 0 {
                format!("{}Mi", kb / 1024)
            } else {
                format!("{kb}Ki")
            };
            (
                format!("hugepages-{unit}"),
                pages.saturating_mul(kb).saturating_mul(1024),
            )
        })
        .collect();
    sizes.sort();
    sizes
}
