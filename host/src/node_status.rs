//! The Node object wasmlet would register: capacity, allocatable, the pressure conditions and
//! Ready. Upstream serves no node status over HTTP; wasmlet shows it at `/node` (and will
//! patch it to an API server once it has one).

use crate::eviction::NodePressure;
use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus, NodeSystemInfo};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::BTreeMap;
use std::time::SystemTime;

/// What does not change while the node runs.
#[derive(Debug, Clone)]
pub struct NodeFacts {
    /// The node's name, as pods' `spec.nodeName` names it.
    pub name: String,
    /// The node's InternalIP address.
    pub ip: String,
    /// Capacity and allocatable `pods`: how many pods admission lets in.
    pub max_pods: i64,
    /// The machine's memory, for capacity and allocatable `memory`.
    pub memory_capacity_bytes: i64,
    /// The machine's CPUs in millicores, for capacity and allocatable `cpu`.
    pub cpu_capacity_millis: i64,
    /// Size of the filesystem holding the root dir, for `ephemeral-storage`.
    pub nodefs_capacity_bytes: i64,
    /// Hard eviction thresholds taken off capacity for allocatable (upstream's formula with
    /// no reserved resources).
    pub memory_hard_threshold_bytes: i64,
    /// The `nodefs.available` hard threshold in bytes, taken off `ephemeral-storage`.
    pub nodefs_hard_threshold_bytes: i64,
    /// The CRI runtime's name (`containerd`), for `nodeInfo.containerRuntimeVersion`.
    pub runtime_version: String,
}

fn quantity(value: i64) -> Quantity {
    Quantity(value.max(0).to_string())
}

fn condition(
    type_: &str,
    active: bool,
    changed: SystemTime,
    reason_message: (&str, &str),
) -> NodeCondition {
    let now = crate::timestamps::api_time(SystemTime::now());
    NodeCondition {
        type_: type_.into(),
        status: if active { "True" } else { "False" }.into(),
        reason: Some(reason_message.0.into()),
        message: Some(reason_message.1.into()),
        last_heartbeat_time: Some(now),
        last_transition_time: Some(crate::timestamps::api_time(changed)),
    }
}

/// The node as it is now.
pub fn node(facts: &NodeFacts, pressure: &NodePressure) -> Node {
    let capacity: BTreeMap<String, Quantity> = [
        (
            "cpu".to_string(),
            Quantity(format!("{}m", facts.cpu_capacity_millis)),
        ),
        ("memory".to_string(), quantity(facts.memory_capacity_bytes)),
        ("pods".to_string(), quantity(facts.max_pods)),
        (
            "ephemeral-storage".to_string(),
            quantity(facts.nodefs_capacity_bytes),
        ),
    ]
    .into();
    let mut allocatable = capacity.clone();
    allocatable.insert(
        "memory".into(),
        quantity(facts.memory_capacity_bytes - facts.memory_hard_threshold_bytes),
    );
    allocatable.insert(
        "ephemeral-storage".into(),
        quantity(facts.nodefs_capacity_bytes - facts.nodefs_hard_threshold_bytes),
    );
    let mut conditions: Vec<NodeCondition> = pressure
        .conditions()
        .into_iter()
        .map(|(c, state)| {
            let reason = match (c.as_str(), state.active) {
                ("MemoryPressure", true) => (
                    "KubeletHasInsufficientMemory",
                    "kubelet has insufficient memory available",
                ),
                ("MemoryPressure", false) => (
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                ("DiskPressure", true) => ("KubeletHasDiskPressure", "kubelet has disk pressure"),
                ("DiskPressure", false) => {
                    ("KubeletHasNoDiskPressure", "kubelet has no disk pressure")
                }
                (_, true) => (
                    "KubeletHasInsufficientPID",
                    "kubelet has insufficient PID available",
                ),
                (_, false) => (
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                ),
            };
            condition(c.as_str(), state.active, state.last_transition, reason)
        })
        .collect();
    conditions.push(condition(
        "Ready",
        true,
        SystemTime::now(),
        ("KubeletReady", "wasmlet is posting ready status"),
    ));
    Node {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(facts.name.clone()),
            labels: Some(
                [
                    ("kubernetes.io/hostname".to_string(), facts.name.clone()),
                    ("kubernetes.io/os".to_string(), "linux".to_string()),
                ]
                .into(),
            ),
            ..Default::default()
        },
        spec: None,
        status: Some(NodeStatus {
            capacity: Some(capacity),
            allocatable: Some(allocatable),
            conditions: Some(conditions),
            addresses: Some(vec![k8s_openapi::api::core::v1::NodeAddress {
                type_: "InternalIP".into(),
                address: facts.ip.clone(),
            }]),
            node_info: Some(NodeSystemInfo {
                kubelet_version: format!("wasmlet-{}", env!("CARGO_PKG_VERSION")),
                container_runtime_version: facts.runtime_version.clone(),
                operating_system: "linux".into(),
                architecture: std::env::consts::ARCH.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }
}
