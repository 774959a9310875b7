//! Host-side bindings of the four worlds, generated from wit/ by wasmtime's `bindgen!`. The
//! shared interfaces (`types`, `host`, `pod-meta`) are generated once, in `eviction`, and
//! `pod-access` once, in `probe`; the other worlds reuse them, so the host implements each
//! import once. Private to the crate: callers see the plain types of `records` instead.

#![allow(missing_docs, clippy::all)]

pub mod eviction {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "eviction-policy",
        exports: { default: async },
    });
}

/// `pressure-eviction-policy` (0.1.2): `eviction-policy` plus the optional `pressure-watch`
/// export, probed for when an eviction plugin loads.
pub mod pressure {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "pressure-eviction-policy",
        exports: { default: async },
        with: {
            "wasmlet:plugin/types": crate::bindings::eviction::wasmlet::plugin::types,
            "wasmlet:plugin/host": crate::bindings::eviction::wasmlet::plugin::host,
            "wasmlet:plugin/pod-meta": crate::bindings::eviction::wasmlet::plugin::pod_meta,
        },
    });
}

pub mod gc {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "gc-strategy",
        exports: { default: async },
        with: {
            "wasmlet:plugin/types": crate::bindings::eviction::wasmlet::plugin::types,
            "wasmlet:plugin/host": crate::bindings::eviction::wasmlet::plugin::host,
            "wasmlet:plugin/pod-meta": crate::bindings::eviction::wasmlet::plugin::pod_meta,
        },
    });
}

pub mod probe {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "probe-handler",
        exports: { default: async },
        with: {
            "wasmlet:plugin/types": crate::bindings::eviction::wasmlet::plugin::types,
            "wasmlet:plugin/host": crate::bindings::eviction::wasmlet::plugin::host,
        },
    });
}

pub mod hooks {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "lifecycle-hooks",
        exports: { default: async },
        with: {
            "wasmlet:plugin/types": crate::bindings::eviction::wasmlet::plugin::types,
            "wasmlet:plugin/host": crate::bindings::eviction::wasmlet::plugin::host,
            "wasmlet:plugin/pod-meta": crate::bindings::eviction::wasmlet::plugin::pod_meta,
            "wasmlet:plugin/pod-access": crate::bindings::probe::wasmlet::plugin::pod_access,
        },
    });
}

pub use eviction::wasmlet::plugin::types;

/// The built-in policy's and the host's plain types to the WIT records and back (field for
/// field).
pub mod convert {
    use super::types;
    use crate::records;
    use wasmlet_policy_default as policy;

    pub fn qos(q: policy::QosClass) -> types::QosClass {
        match q {
            policy::QosClass::Guaranteed => types::QosClass::Guaranteed,
            policy::QosClass::Burstable => types::QosClass::Burstable,
            policy::QosClass::BestEffort => types::QosClass::BestEffort,
        }
    }

    pub fn admission_pod(p: &records::AdmissionPod) -> types::AdmissionPod {
        types::AdmissionPod {
            // The pod is always index 0 of `pod-meta` in an admission call.
            index: 0,
            priority: p.priority,
            qos: qos(p.qos),
            is_static: p.is_static,
            is_critical: p.is_critical,
            containers: p
                .containers
                .iter()
                .map(|c| types::AdmissionContainer {
                    name: c.name.clone(),
                    is_init: c.is_init,
                    has_cpu_request: c.has_cpu_request,
                    has_memory_request: c.has_memory_request,
                    has_cpu_limit: c.has_cpu_limit,
                    has_memory_limit: c.has_memory_limit,
                })
                .collect(),
        }
    }

    pub fn probe_request(r: &records::ProbeRequest) -> types::ProbeRequest {
        types::ProbeRequest {
            args: r.args.clone(),
            timeout_ms: r.timeout_ms,
            pod_ip: r.pod_ip.clone(),
            ports: r.ports.clone(),
            containers: r.containers.clone(),
            container: r.container.clone(),
            kind: match r.kind {
                records::ProbeKind::Liveness => types::ProbeKind::Liveness,
                records::ProbeKind::Readiness => types::ProbeKind::Readiness,
                records::ProbeKind::Startup => types::ProbeKind::Startup,
            },
        }
    }

    pub fn probe_result(r: types::ProbeResult) -> records::ProbeResult {
        records::ProbeResult {
            outcome: match r.outcome {
                types::ProbeOutcome::Success => records::ProbeOutcome::Success,
                types::ProbeOutcome::Failure => records::ProbeOutcome::Failure,
                types::ProbeOutcome::Unknown => records::ProbeOutcome::Unknown,
            },
            message: crate::cap::reason(r.message),
        }
    }

    pub fn exec_output(o: records::ExecOutput) -> types::ExecOutput {
        types::ExecOutput {
            exit_code: o.exit_code,
            stdout: o.stdout,
            stderr: o.stderr,
        }
    }

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

    fn psi_line(l: &policy::PsiLine) -> types::PsiLine {
        types::PsiLine {
            avg10: l.avg10,
            avg60: l.avg60,
            avg300: l.avg300,
            total_us: l.total_us,
        }
    }

    fn psi_resource(r: &policy::PsiResource) -> types::PsiResource {
        types::PsiResource {
            some: psi_line(&r.some),
            full: psi_line(&r.full),
        }
    }

    pub fn node_psi(p: &policy::NodePsi) -> types::NodePsi {
        types::NodePsi {
            cpu: psi_resource(&p.cpu),
            memory: psi_resource(&p.memory),
            io: psi_resource(&p.io),
            read_unix_ms: p.read_unix_ms,
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
