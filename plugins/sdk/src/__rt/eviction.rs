use core::marker::PhantomData;

use super::state;
use crate::bindings::eviction::{wasmlet::plugin::types as wit, Guest};
use crate::{types, EvictionPolicy};

/// Implements the generated `Guest` for an [`EvictionPolicy`].
pub struct EvictionGuest<T>(PhantomData<T>);

impl<T: EvictionPolicy + Default + 'static> Guest for EvictionGuest<T> {
    fn configure(config: String) -> Result<(), String> {
        state::reset(|p: &mut T| p.configure(&config))
    }

    fn self_check() -> Result<(), String> {
        state::with(|p: &mut T| p.self_check())
    }

    fn rank(
        node: wit::NodeInfo,
        pressure: Vec<wit::SignalObservation>,
        pods: Vec<wit::PodInfo>,
    ) -> Result<Vec<u32>, String> {
        let node = node_info(node);
        let pressure: Vec<_> = pressure.into_iter().map(observation).collect();
        let pods: Vec<_> = pods.into_iter().map(pod_info).collect();
        state::with(|p: &mut T| p.rank(&node, &pressure, &pods))
    }
}

fn qos(q: wit::QosClass) -> types::QosClass {
    match q {
        wit::QosClass::Guaranteed => types::QosClass::Guaranteed,
        wit::QosClass::Burstable => types::QosClass::Burstable,
        wit::QosClass::BestEffort => types::QosClass::BestEffort,
    }
}

fn node_info(n: wit::NodeInfo) -> types::NodeInfo {
    types::NodeInfo {
        memory_capacity_bytes: n.memory_capacity_bytes,
        memory_allocatable_bytes: n.memory_allocatable_bytes,
        cpu_capacity_millis: n.cpu_capacity_millis,
        cpu_allocatable_millis: n.cpu_allocatable_millis,
        pods_capacity: n.pods_capacity,
        pod_count: n.pod_count,
        pid_capacity: n.pid_capacity,
        nodefs_capacity_bytes: n.nodefs_capacity_bytes,
        imagefs_capacity_bytes: n.imagefs_capacity_bytes,
    }
}

fn observation(o: wit::SignalObservation) -> types::SignalObservation {
    let signal = match o.signal {
        wit::Signal::MemoryAvailable => types::Signal::MemoryAvailable,
        wit::Signal::AllocatableMemoryAvailable => types::Signal::AllocatableMemoryAvailable,
        wit::Signal::NodefsAvailable => types::Signal::NodefsAvailable,
        wit::Signal::NodefsInodesFree => types::Signal::NodefsInodesFree,
        wit::Signal::ImagefsAvailable => types::Signal::ImagefsAvailable,
        wit::Signal::ImagefsInodesFree => types::Signal::ImagefsInodesFree,
        wit::Signal::ContainerfsAvailable => types::Signal::ContainerfsAvailable,
        wit::Signal::ContainerfsInodesFree => types::Signal::ContainerfsInodesFree,
        wit::Signal::PidAvailable => types::Signal::PidAvailable,
    };
    types::SignalObservation {
        signal,
        available: o.available,
        capacity: o.capacity,
        threshold: o.threshold,
    }
}

fn pod_info(p: wit::PodInfo) -> types::PodInfo {
    types::PodInfo {
        priority: p.priority,
        qos: qos(p.qos),
        is_static: p.is_static,
        is_critical: p.is_critical,
        has_stats: p.has_stats,
        memory_request_bytes: p.memory_request_bytes,
        memory_usage_bytes: p.memory_usage_bytes,
        cpu_request_millis: p.cpu_request_millis,
        cpu_usage_millis: p.cpu_usage_millis,
        disk_request_bytes: p.disk_request_bytes,
        disk_usage_bytes: p.disk_usage_bytes,
        inodes_used: p.inodes_used,
        process_count: p.process_count,
        container_count: p.container_count,
        restart_count: p.restart_count,
        start_time_unix_ms: p.start_time_unix_ms,
    }
}
