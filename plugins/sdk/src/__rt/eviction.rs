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
        pods: Vec<u64>,
    ) -> Result<Vec<u32>, String> {
        let node = node_info(node);
        let pressure: Vec<_> = pressure.into_iter().map(observation).collect();
        let pods = wasmlet_policy_default::packed::pods_from_words(&pods)?;
        state::with(|p: &mut T| p.rank(&node, &pressure, &pods))
    }
}

pub(super) fn node_info(n: wit::NodeInfo) -> types::NodeInfo {
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
