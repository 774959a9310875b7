//! The Summary API's types (`k8s.io/kubelet/pkg/apis/stats/v1alpha1`), with upstream's JSON
//! names: metrics-server, `kubectl get --raw .../proxy/stats/summary` and monitoring agents
//! decode these exact fields. Optional numbers are `Option`s and left out when unknown, as
//! upstream's `*uint64` with `omitempty`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Serialize};

/// The top of `/stats/summary`: the node and its pods.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The node's own stats.
    pub node: NodeStats,
    /// One entry per pod with a running sandbox.
    pub pods: Vec<PodStats>,
}

/// Node-level stats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStats {
    /// The node's name.
    pub node_name: String,
    /// Cgroups of system daemons and of all pods (`pods`), named by upstream's constants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system_containers: Vec<ContainerStats>,
    /// When the node's counters started (boot).
    pub start_time: Time,
    /// The node's CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    /// The node's memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    /// The node's interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkStats>,
    /// The filesystem of the kubelet's root directory (nodefs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs: Option<FsStats>,
    /// The runtime's image and container filesystems.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeStats>,
    /// The PID limit and the processes running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rlimit: Option<RlimitStats>,
    /// The node's swap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapStats>,
    /// The node's I/O pressure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<IoStats>,
}

/// The PID limit and the processes running, for `pid.available`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RlimitStats {
    /// When this was read.
    pub time: Time,
    /// The most processes (threads) the node can run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maxpid: Option<i64>,
    /// Processes (threads) running now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curproc: Option<i64>,
}

/// The container runtime's filesystems.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeStats {
    /// Where images are stored; `usedBytes` is what images take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_fs: Option<FsStats>,
    /// Where writable layers are stored; the image filesystem when the runtime has one only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_fs: Option<FsStats>,
}

/// Processes of a pod.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessStats {
    /// Processes in the pod's cgroup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_count: Option<u64>,
}

/// Pod-level stats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStats {
    /// Which pod.
    pub pod_ref: PodReference,
    /// When the pod's sandbox was created.
    pub start_time: Time,
    /// Its running containers.
    #[serde(default)]
    pub containers: Vec<ContainerStats>,
    /// The pod cgroup's CPU (all containers and the sandbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    /// The pod cgroup's memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    /// The pod's network namespace (none for hostNetwork pods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkStats>,
    /// The pod's volumes.
    #[serde(rename = "volume", default, skip_serializing_if = "Vec::is_empty")]
    pub volume_stats: Vec<VolumeStats>,
    /// Writable layers, logs and disk-backed emptyDirs together.
    #[serde(
        rename = "ephemeral-storage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub ephemeral_storage: Option<FsStats>,
    /// Processes of the pod.
    #[serde(
        rename = "process_stats",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub process_stats: Option<ProcessStats>,
    /// The pod's swap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapStats>,
}

/// Container-level stats (also the node's system containers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStats {
    /// The container's name in the pod spec (or the system container's: `pods`).
    pub name: String,
    /// When the container was created.
    pub start_time: Time,
    /// Its CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    /// Its memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    /// Its writable layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rootfs: Option<FsStats>,
    /// Its log files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<FsStats>,
    /// Its swap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapStats>,
}

/// Identifies a pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodReference {
    /// The pod's name.
    pub name: String,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's UID.
    pub uid: String,
}

/// Cumulative counters of one interface.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterfaceStats {
    /// The interface.
    pub name: String,
    /// Bytes received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_bytes: Option<u64>,
    /// Receive errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_errors: Option<u64>,
    /// Bytes sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_bytes: Option<u64>,
    /// Transmit errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_errors: Option<u64>,
}

/// A network namespace's interfaces: the default one (`eth0`) inline, then all of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkStats {
    /// When this was read.
    pub time: Time,
    /// The default interface (empty name when there is none), inline as upstream.
    #[serde(flatten)]
    pub default_interface: InterfaceStats,
    /// Every interface.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<InterfaceStats>,
}

/// CPU usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuStats {
    /// When this was read.
    pub time: Time,
    /// The average rate since the previous sample, in billionths of a core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_nano_cores: Option<u64>,
    /// CPU time since the cgroup or container was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_core_nano_seconds: Option<u64>,
    /// CPU pressure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi: Option<PsiStats>,
}

/// Pressure stall information of one resource, upstream's `PSIStats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiStats {
    /// Time all non-idle tasks stalled at once.
    pub full: PsiData,
    /// Time at least one task stalled.
    pub some: PsiData,
}

/// One PSI line, upstream's `PSIData`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiData {
    /// Stalled time since boot (or the cgroup's creation), in microseconds as the kernel
    /// counts it: what the kubelet serves, whatever upstream's doc comment says.
    pub total: u64,
    /// Percent of the last 10 s stalled.
    pub avg10: f64,
    /// Percent of the last 60 s stalled.
    pub avg60: f64,
    /// Percent of the last 300 s stalled.
    pub avg300: f64,
}

/// I/O, upstream's `IOStats`: only its pressure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IoStats {
    /// When this was read.
    pub time: Time,
    /// I/O pressure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi: Option<PsiStats>,
}

/// Memory usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStats {
    /// When this was read.
    pub time: Time,
    /// Limit minus working set; left out without a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    /// All memory in use, page cache included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_bytes: Option<u64>,
    /// Usage minus inactive file cache: what eviction and `kubectl top` count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_set_bytes: Option<u64>,
    /// Anonymous and swap cache memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Minor page faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_faults: Option<u64>,
    /// Major page faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major_page_faults: Option<u64>,
    /// Memory pressure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi: Option<PsiStats>,
}

/// Swap usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SwapStats {
    /// When this was read.
    pub time: Time,
    /// Swap left; left out without a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_available_bytes: Option<u64>,
    /// Swap in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_usage_bytes: Option<u64>,
}

/// One volume's usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeStats {
    /// Its filesystem and usage, inline as upstream.
    #[serde(flatten)]
    pub fs: FsStats,
    /// The volume's name in the pod spec.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// A filesystem and what a pod, container or the runtime uses of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FsStats {
    /// When this was read.
    pub time: Time,
    /// Space available to unprivileged users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    /// The filesystem's size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    /// What the measured object uses (not the whole filesystem's usage, except for `fs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<u64>,
    /// Free inodes of the filesystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes_free: Option<u64>,
    /// The filesystem's inodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes: Option<u64>,
    /// Inodes the measured object uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes_used: Option<u64>,
}

impl FsStats {
    /// The filesystem `fs` with `used_bytes`/`inodes_used` of whatever is measured on it.
    pub fn on(
        time: &Time,
        fs: Option<&super::super::fs::FsStats>,
        used_bytes: u64,
        inodes_used: u64,
    ) -> Self {
        FsStats {
            time: time.clone(),
            available_bytes: fs.map(|f| f.available_bytes),
            capacity_bytes: fs.map(|f| f.capacity_bytes),
            used_bytes: Some(used_bytes),
            inodes_free: fs.map(|f| f.inodes_free),
            inodes: fs.map(|f| f.inodes),
            inodes_used: Some(inodes_used),
        }
    }
}
