//! Network counters of a network namespace, from `/proc/<pid>/net/dev`, as cadvisor reads
//! them for the node (the kubelet's own namespace) and for a pod (its sandbox's). cadvisor
//! leaves out loopback, the host ends of veth pairs and docker's bridges; the Summary API
//! calls `eth0` the default interface.

use super::{read, StatsError};
use std::path::{Path, PathBuf};

/// The interface the Summary API reports at the top of `network` (`DefaultNetworkInterfaceName`).
pub const DEFAULT_INTERFACE: &str = "eth0";

/// Interfaces cadvisor does not report (`ignoredDevicePrefixes`).
const IGNORED_PREFIXES: [&str; 4] = ["lo", "veth", "docker", "nerdctl"];

/// Cumulative counters of one interface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InterfaceCounters {
    /// The interface name (`eth0`).
    pub name: String,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Packets received.
    pub rx_packets: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Packets dropped on receipt.
    pub rx_dropped: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Transmit errors.
    pub tx_errors: u64,
    /// Packets dropped on transmission.
    pub tx_dropped: u64,
}

/// The interfaces of a `net/dev` text, the ignored ones left out.
pub fn parse_net_dev(text: &str) -> Vec<InterfaceCounters> {
    text.lines()
        .filter_map(|line| {
            let (name, counters) = line.split_once(':')?;
            let name = name.trim();
            if IGNORED_PREFIXES.iter().any(|p| name.starts_with(p)) {
                return None;
            }
            let fields: Vec<u64> = counters
                .split_whitespace()
                .map(|f| f.parse().ok())
                .collect::<Option<_>>()?;
            // receive: bytes packets errs drop fifo frame compressed multicast; then transmit.
            Some(InterfaceCounters {
                name: name.to_string(),
                rx_bytes: *fields.first()?,
                rx_packets: *fields.get(1)?,
                rx_errors: *fields.get(2)?,
                rx_dropped: *fields.get(3)?,
                tx_bytes: *fields.get(8)?,
                tx_packets: *fields.get(9)?,
                tx_errors: *fields.get(10)?,
                tx_dropped: *fields.get(11)?,
            })
        })
        .collect()
}

/// The interfaces of the network namespace wasmlet runs in (the node's).
pub fn host() -> Result<Vec<InterfaceCounters>, StatsError> {
    Ok(parse_net_dev(&read(Path::new("/proc/self/net/dev"))?))
}

/// The interfaces of the network namespace of process `pid`; `None` when it shares the node's
/// namespace (a hostNetwork pod: upstream reports no pod network then) or is gone.
pub fn of_process(pid: u32) -> Option<Vec<InterfaceCounters>> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let namespace = std::fs::read_link(proc_dir.join("ns/net")).ok()?;
    if std::fs::read_link("/proc/self/ns/net").ok()? == namespace {
        return None;
    }
    read(&proc_dir.join("net/dev"))
        .ok()
        .map(|text| parse_net_dev(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NET_DEV: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 770628247 1894989    0    0    0     0          0         0 770628247 1894989    0    0    0     0       0          0
  eth0: 547378315   33475    3    0    0     0          0         0  2637578   27155    4    0    0     0       0          0
wasmlet0:   54392     741    0    0    0     0          0       470    37881     369    0    1    0     0       0          0
veth5fb779f0:     752      10    0    0    0     0          0         0     1376      16    0    0    0     0       0          0
";

    #[test]
    fn net_dev_lines_become_counters_without_loopback_and_veths() {
        let interfaces = parse_net_dev(NET_DEV);
        let names: Vec<&str> = interfaces.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["eth0", "wasmlet0"]);
        assert_eq!(
            interfaces[0],
            InterfaceCounters {
                name: "eth0".into(),
                rx_bytes: 547_378_315,
                rx_packets: 33_475,
                rx_errors: 3,
                rx_dropped: 0,
                tx_bytes: 2_637_578,
                tx_packets: 27_155,
                tx_errors: 4,
                tx_dropped: 0,
            }
        );
    }

    #[test]
    fn the_own_namespace_is_not_a_pods() {
        assert!(host().is_ok());
        assert_eq!(of_process(std::process::id()), None);
    }
}
