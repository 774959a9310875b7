//! `/spec/`: the machine as upstream's kubelet serves it from cAdvisor's `MachineInfo` (the
//! JSON field names are cAdvisor's, `info/v1/machine.go`), read from `/proc` and `/sys` here.
//! Filesystems, the disk map and the NUMA topology are left empty: nothing in wasmlet reads
//! them, and tools that read `/spec/` use the CPU, memory and identity fields.

use crate::machine::{first_line, hugepage_pools, machine_info, machine_memory_bytes};
use serde::Serialize;
use std::collections::BTreeSet;

/// Network devices cAdvisor leaves out of the machine's list (its `ignoredDevicePrefixes`).
const IGNORED_DEVICE_PREFIXES: [&str; 4] = ["lo", "veth", "docker", "nerdctl"];

/// The subset of cAdvisor's `MachineInfo` wasmlet fills in.
#[derive(Debug, Serialize, PartialEq)]
pub struct MachineSpec {
    timestamp: String,
    vendor_id: String,
    num_cores: usize,
    num_physical_cores: usize,
    num_sockets: usize,
    cpu_frequency_khz: u64,
    memory_capacity: i64,
    swap_capacity: u64,
    hugepages: Vec<HugePages>,
    machine_id: String,
    system_uuid: String,
    boot_id: String,
    filesystems: Vec<()>,
    network_devices: Vec<NetworkDevice>,
    cloud_provider: &'static str,
    instance_type: &'static str,
    instance_id: &'static str,
}

#[derive(Debug, Serialize, PartialEq)]
struct HugePages {
    /// In KiB, as cAdvisor counts it.
    page_size: u64,
    num_pages: u64,
}

#[derive(Debug, Serialize, PartialEq)]
struct NetworkDevice {
    name: String,
    mac_address: String,
    speed: i64,
    mtu: i64,
}

/// What `/proc/cpuinfo` says about the CPUs.
#[derive(Debug, Default, PartialEq)]
struct CpuInfo {
    vendor_id: String,
    logical: usize,
    physical: usize,
    sockets: usize,
    mhz: f64,
}

fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    let mut sockets = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let mut socket = String::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "processor" => info.logical += 1,
            "vendor_id" if info.vendor_id.is_empty() => info.vendor_id = value.to_string(),
            "cpu MHz" if info.mhz == 0.0 => info.mhz = value.parse().unwrap_or(0.0),
            "physical id" => {
                socket = value.to_string();
                sockets.insert(socket.clone());
            }
            "core id" => {
                cores.insert((socket.clone(), value.to_string()));
            }
            _ => {}
        }
    }
    // Virtual machines often leave out the topology lines: count each CPU as a core then.
    info.sockets = sockets.len().max(1);
    info.physical = if cores.is_empty() {
        info.logical
    } else {
        cores.len()
    };
    info
}

fn swap_bytes(meminfo: &str) -> u64 {
    crate::stats::node::parse_meminfo(meminfo)
        .get("SwapTotal")
        .copied()
        .unwrap_or(0)
}

fn network_devices() -> Vec<NetworkDevice> {
    let Ok(entries) = std::fs::read_dir("/sys/class/net") else {
        return Vec::new();
    };
    let mut devices: Vec<NetworkDevice> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if IGNORED_DEVICE_PREFIXES.iter().any(|p| name.starts_with(p)) {
                return None;
            }
            let attribute = |file: &str| first_line(&format!("/sys/class/net/{name}/{file}"));
            Some(NetworkDevice {
                mac_address: attribute("address").unwrap_or_default(),
                // A virtual device answers EINVAL for its speed: cAdvisor reports 0 then.
                speed: attribute("speed")
                    .and_then(|s| s.parse().ok())
                    .filter(|s: &i64| *s > 0)
                    .unwrap_or(0),
                mtu: attribute("mtu").and_then(|s| s.parse().ok()).unwrap_or(0),
                name,
            })
        })
        .collect();
    devices.sort_by(|a, b| a.name.cmp(&b.name));
    devices
}

/// Reads the machine now.
pub fn machine_spec() -> MachineSpec {
    let cpu = parse_cpuinfo(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default());
    // cAdvisor prefers the highest frequency the CPU can run at over the current one.
    let khz = first_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .and_then(|s| s.parse().ok())
        .unwrap_or((cpu.mhz * 1000.0) as u64);
    let identity = machine_info();
    let logical = std::thread::available_parallelism().map_or(cpu.logical, |n| n.get());
    MachineSpec {
        timestamp: crate::timestamps::api_time(std::time::SystemTime::now())
            .0
            .to_string(),
        vendor_id: cpu.vendor_id,
        num_cores: logical,
        num_physical_cores: cpu.physical.min(logical).max(1),
        num_sockets: cpu.sockets,
        cpu_frequency_khz: khz,
        memory_capacity: machine_memory_bytes(),
        swap_capacity: swap_bytes(&std::fs::read_to_string("/proc/meminfo").unwrap_or_default()),
        hugepages: hugepage_pools()
            .into_iter()
            .map(|(kb, pages)| HugePages {
                page_size: u64::try_from(kb).unwrap_or(0),
                num_pages: u64::try_from(pages).unwrap_or(0),
            })
            .collect(),
        machine_id: identity.machine_id,
        system_uuid: identity.system_uuid,
        boot_id: identity.boot_id,
        filesystems: Vec::new(),
        network_devices: network_devices(),
        cloud_provider: "Unknown",
        instance_type: "Unknown",
        instance_id: "None",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_counts_sockets_cores_and_threads() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu MHz\t\t: 2400.000\n\
                    physical id\t: 0\ncore id\t\t: 0\n\n\
                    processor\t: 1\nvendor_id\t: GenuineIntel\ncpu MHz\t\t: 2400.000\n\
                    physical id\t: 0\ncore id\t\t: 0\n\n\
                    processor\t: 2\nphysical id\t: 1\ncore id\t\t: 0\n";
        let info = parse_cpuinfo(text);
        assert_eq!(info.logical, 3);
        assert_eq!(info.physical, 2, "two threads of one core count once");
        assert_eq!(info.sockets, 2);
        assert_eq!(info.vendor_id, "GenuineIntel");
        assert_eq!(info.mhz, 2400.0);
    }

    #[test]
    fn a_cpuinfo_without_topology_counts_each_cpu_as_a_core() {
        let info = parse_cpuinfo("processor : 0\n\nprocessor : 1\n");
        assert_eq!((info.logical, info.physical, info.sockets), (2, 2, 1));
    }

    #[test]
    fn swap_is_read_in_bytes() {
        assert_eq!(swap_bytes("MemTotal: 10 kB\nSwapTotal:  2 kB\n"), 2048);
        assert_eq!(swap_bytes("garbage"), 0);
    }

    #[test]
    fn this_machine_has_cores_and_memory() {
        let spec = machine_spec();
        assert!(spec.num_cores >= 1);
        assert!(spec.memory_capacity > 0);
        assert!(spec.network_devices.iter().all(|d| d.name != "lo"));
        let json = serde_json::to_value(&spec).unwrap_or_default();
        assert!(json["num_cores"].as_u64().is_some_and(|n| n >= 1), "{json}");
    }
}
