//! Host-side bindings of the four worlds, generated from wit/ by wasmtime's `bindgen!`. The
//! shared interfaces (`types`, `host`, `pod-meta`) are generated once, in `eviction`, and
//! reused by the other worlds so the host implements each import once.

#![allow(missing_docs, clippy::all)]

pub mod eviction {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "eviction-policy",
    });
}

pub mod gc {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "gc-strategy",
        with: {
            "wasmlet:plugin/types": crate::plugin::bindings::eviction::wasmlet::plugin::types,
            "wasmlet:plugin/host": crate::plugin::bindings::eviction::wasmlet::plugin::host,
            "wasmlet:plugin/pod-meta": crate::plugin::bindings::eviction::wasmlet::plugin::pod_meta,
        },
    });
}

pub mod probe {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "probe-handler",
        with: {
            "wasmlet:plugin/types": crate::plugin::bindings::eviction::wasmlet::plugin::types,
            "wasmlet:plugin/host": crate::plugin::bindings::eviction::wasmlet::plugin::host,
        },
    });
}

pub mod hooks {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "lifecycle-hooks",
        with: {
            "wasmlet:plugin/types": crate::plugin::bindings::eviction::wasmlet::plugin::types,
            "wasmlet:plugin/host": crate::plugin::bindings::eviction::wasmlet::plugin::host,
            "wasmlet:plugin/pod-meta": crate::plugin::bindings::eviction::wasmlet::plugin::pod_meta,
        },
    });
}

pub use eviction::wasmlet::plugin::types;

/// The built-in policy's plain types to the WIT records (field for field).
pub mod convert {
    use super::types;
    use wasmlet_policy_default as policy;

    pub fn node(n: &policy::NodeInfo) -> types::NodeInfo {
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

    pub fn signal(s: policy::Signal) -> types::Signal {
        use policy::Signal as S;
        match s {
            S::MemoryAvailable => types::Signal::MemoryAvailable,
            S::AllocatableMemoryAvailable => types::Signal::AllocatableMemoryAvailable,
            S::NodefsAvailable => types::Signal::NodefsAvailable,
            S::NodefsInodesFree => types::Signal::NodefsInodesFree,
            S::ImagefsAvailable => types::Signal::ImagefsAvailable,
            S::ImagefsInodesFree => types::Signal::ImagefsInodesFree,
            S::ContainerfsAvailable => types::Signal::ContainerfsAvailable,
            S::ContainerfsInodesFree => types::Signal::ContainerfsInodesFree,
            S::PidAvailable => types::Signal::PidAvailable,
        }
    }

    pub fn observation(o: &policy::SignalObservation) -> types::SignalObservation {
        types::SignalObservation {
            signal: signal(o.signal),
            available: o.available,
            capacity: o.capacity,
            threshold: o.threshold,
        }
    }

    pub fn image(i: &policy::ImageInfo) -> types::ImageInfo {
        types::ImageInfo {
            size_bytes: i.size_bytes,
            first_seen_unix_ms: i.first_seen_unix_ms,
            last_used_unix_ms: i.last_used_unix_ms,
            in_use: i.in_use,
            pinned: i.pinned,
        }
    }

    pub fn disk(d: &policy::DiskInfo) -> types::DiskInfo {
        types::DiskInfo {
            capacity_bytes: d.capacity_bytes,
            available_bytes: d.available_bytes,
            bytes_to_free: d.bytes_to_free,
            min_age_ms: d.min_age_ms,
            max_age_ms: d.max_age_ms,
        }
    }

    pub fn dead(c: &policy::DeadContainer) -> types::DeadContainer {
        types::DeadContainer {
            pod_deleted: c.pod_deleted,
            finished_unix_ms: c.finished_unix_ms,
            per_container_rank: c.per_container_rank,
            unit: c.unit,
            pod: c.pod,
        }
    }
}
