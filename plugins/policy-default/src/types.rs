//! Plain mirrors of the hot-path records of `wit/types.wit`.
//!
//! Field names are the WIT names in snake case; see the WIT doc comments for
//! what the host puts in each.

/// The pod's Kubernetes QoS class (`types.qos-class`). `repr(u8)` with these discriminants is
/// the wire form's QoS byte (`crate::packed`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    zerocopy::TryFromBytes,
    zerocopy::IntoBytes,
    zerocopy::KnownLayout,
    zerocopy::Immutable,
)]
#[repr(u8)]
pub enum QosClass {
    Guaranteed = 0,
    Burstable = 1,
    #[default]
    BestEffort = 2,
}

/// One active pod in an eviction cycle (`types.pod-info`). `repr(C)` in this field order is the
/// wire form of `rank`'s pod list (`crate::packed`): do not reorder the fields.
#[derive(
    Clone,
    Debug,
    Default,
    PartialEq,
    Eq,
    zerocopy::TryFromBytes,
    zerocopy::IntoBytes,
    zerocopy::KnownLayout,
    zerocopy::Immutable,
)]
#[repr(C)]
pub struct PodInfo {
    pub priority: i32,
    pub qos: QosClass,
    pub is_static: bool,
    pub is_critical: bool,
    pub has_stats: bool,
    pub memory_request_bytes: u64,
    pub memory_usage_bytes: u64,
    pub cpu_request_millis: u64,
    pub cpu_usage_millis: u64,
    pub disk_request_bytes: u64,
    pub disk_usage_bytes: u64,
    pub inodes_used: u64,
    pub process_count: u64,
    pub container_count: u32,
    pub restart_count: u32,
    pub start_time_unix_ms: u64,
}

impl PodInfo {
    /// Whether the host may evict this pod at all: upstream never evicts a
    /// critical pod, and static pods count as critical.
    pub fn is_evictable(&self) -> bool {
        !self.is_critical && !self.is_static
    }
}

/// The node as measured at the start of a call (`types.node-info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeInfo {
    pub memory_capacity_bytes: u64,
    pub memory_allocatable_bytes: u64,
    pub cpu_capacity_millis: u64,
    pub cpu_allocatable_millis: u64,
    pub pods_capacity: u32,
    pub pod_count: u32,
    pub pid_capacity: u64,
    pub nodefs_capacity_bytes: u64,
    pub imagefs_capacity_bytes: u64,
}

/// An upstream eviction signal (`types.signal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signal {
    MemoryAvailable,
    AllocatableMemoryAvailable,
    NodefsAvailable,
    NodefsInodesFree,
    ImagefsAvailable,
    ImagefsInodesFree,
    ContainerfsAvailable,
    ContainerfsInodesFree,
    PidAvailable,
}

/// The resource a signal starves, which decides the ranking function
/// (upstream `signalToRankFunc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pressure {
    Memory,
    Pid,
    /// Filesystem bytes (`*.available` of nodefs, imagefs, containerfs).
    Disk,
    /// Filesystem inodes (`*.inodesFree`).
    Inodes,
}

impl Signal {
    /// Every signal, in WIT order.
    pub const ALL: [Signal; 9] = [
        Signal::MemoryAvailable,
        Signal::AllocatableMemoryAvailable,
        Signal::NodefsAvailable,
        Signal::NodefsInodesFree,
        Signal::ImagefsAvailable,
        Signal::ImagefsInodesFree,
        Signal::ContainerfsAvailable,
        Signal::ContainerfsInodesFree,
        Signal::PidAvailable,
    ];

    /// The resource this signal starves.
    pub fn pressure(self) -> Pressure {
        match self {
            Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable => Pressure::Memory,
            Signal::PidAvailable => Pressure::Pid,
            Signal::NodefsAvailable | Signal::ImagefsAvailable | Signal::ContainerfsAvailable => {
                Pressure::Disk
            }
            Signal::NodefsInodesFree
            | Signal::ImagefsInodesFree
            | Signal::ContainerfsInodesFree => Pressure::Inodes,
        }
    }

    /// The upstream spelling, e.g. `memory.available`.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory.available",
            Signal::AllocatableMemoryAvailable => "allocatableMemory.available",
            Signal::NodefsAvailable => "nodefs.available",
            Signal::NodefsInodesFree => "nodefs.inodesFree",
            Signal::ImagefsAvailable => "imagefs.available",
            Signal::ImagefsInodesFree => "imagefs.inodesFree",
            Signal::ContainerfsAvailable => "containerfs.available",
            Signal::ContainerfsInodesFree => "containerfs.inodesFree",
            Signal::PidAvailable => "pid.available",
        }
    }
}

/// One threshold that is met (`types.signal-observation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalObservation {
    pub signal: Signal,
    pub available: i64,
    pub capacity: i64,
    pub threshold: i64,
}

impl SignalObservation {
    pub fn new(signal: Signal, available: i64, capacity: i64, threshold: i64) -> Self {
        SignalObservation {
            signal,
            available,
            capacity,
            threshold,
        }
    }
}

/// One image in an image GC cycle (`types.image-info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageInfo {
    pub size_bytes: u64,
    pub first_seen_unix_ms: u64,
    pub last_used_unix_ms: u64,
    pub in_use: bool,
    pub pinned: bool,
}

/// The image filesystem and image GC policy of one cycle (`types.disk-info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskInfo {
    pub capacity_bytes: u64,
    pub available_bytes: u64,
    pub bytes_to_free: u64,
    pub min_age_ms: u64,
    pub max_age_ms: u64,
}

/// One dead container old enough to collect (`types.dead-container`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeadContainer {
    pub pod_deleted: bool,
    pub finished_unix_ms: u64,
    pub per_container_rank: u32,
    pub unit: u32,
    pub pod: u32,
}

/// One line of pressure stall information (`types.psi-line`): averages in
/// hundredths of a percent (`avg10=12.34` is 1234), the total in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PsiLine {
    pub avg10: u32,
    pub avg60: u32,
    pub avg300: u32,
    pub total_us: u64,
}

/// The `some` and `full` lines of one resource (`types.psi-resource`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PsiResource {
    pub some: PsiLine,
    pub full: PsiLine,
}

/// The node's pressure stall information of one cycle (`types.node-psi`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodePsi {
    pub cpu: PsiResource,
    pub memory: PsiResource,
    pub io: PsiResource,
    pub read_unix_ms: u64,
}

/// A decision to evict before a threshold is met (`types.evict-now`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EvictNow {
    /// Indices into the call's pods, first to evict first.
    pub pods: Vec<u32>,
    /// Why, in the plugin's words.
    pub reason: String,
}
