//! The Node object as this node sees itself (upstream's `nodestatus` setters): labels,
//! capacity, allocatable, addresses, nodeInfo, daemon endpoints, the pressure conditions and
//! Ready. Standalone it is served at `/node`; in cluster mode `cluster::node` registers it and
//! patches its status.

use crate::eviction::NodePressure;
use crate::machine::MachineInfo;
use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeSpec, NodeStatus,
    NodeSystemInfo, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;
use std::time::SystemTime;

/// The Kubernetes release whose kubelet wasmlet stands in for: `nodeInfo.kubeletVersion` is
/// `<this>-wasmlet.<wasmlet version>`, a valid semver that version-skew checks accept.
pub const KUBELET_COMPATIBLE_VERSION: &str = "v1.35.4";

/// What does not change while the node runs.
#[derive(Debug, Clone, Default)]
pub struct NodeFacts {
    /// The node's name, as pods' `spec.nodeName` names it.
    pub name: String,
    /// The node's InternalIP address.
    pub ip: String,
    /// The machine's hostname, the `Hostname` address.
    pub hostname: String,
    /// Capacity and allocatable `pods`: how many pods admission lets in.
    pub max_pods: i64,
    /// The machine's memory, for capacity and allocatable `memory`.
    pub memory_capacity_bytes: i64,
    /// The machine's CPUs in millicores, for capacity and allocatable `cpu`.
    pub cpu_capacity_millis: i64,
    /// Size of the filesystem holding the root dir, for `ephemeral-storage`.
    pub nodefs_capacity_bytes: i64,
    /// Pre-allocated huge pages by resource name (`hugepages-2Mi`), in bytes.
    pub hugepages: Vec<(String, i64)>,
    /// `systemReserved` + `kubeReserved` (and `reservedSystemCPUs`), taken off capacity for
    /// allocatable.
    pub reserved: crate::config::reserved::Reserved,
    /// Hard eviction thresholds taken off capacity for allocatable, after the reservations.
    pub memory_hard_threshold_bytes: i64,
    /// The `nodefs.available` hard threshold in bytes, taken off `ephemeral-storage`.
    pub nodefs_hard_threshold_bytes: i64,
    /// `<runtime name>://<runtime version>` from CRI `Version` (`containerd://1.6.24`).
    pub runtime_version: String,
    /// The authenticated kubelet port (`port`), for `daemonEndpoints`.
    pub kubelet_port: i32,
    /// `--node-labels`, added to the default labels.
    pub extra_labels: BTreeMap<String, String>,
    /// `registerWithTaints`: set only when the Node is created.
    pub register_taints: Vec<Taint>,
    /// Machine identity and software.
    pub machine: MachineInfo,
}

/// Whether the node can run pods now, and if not why (the Ready condition's message).
pub type Readiness = Result<(), NotReady>;

/// Why the node is not ready, displayed as the Ready condition's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotReady {
    /// CRI `Version` has not answered, so nothing is known of the runtime.
    #[error("container runtime is not ready: it has not answered yet")]
    RuntimeNotAnswered,
    /// A loop of the node agent is stalled (the `/healthz` check).
    #[error(transparent)]
    Stalled(#[from] crate::health::HealthError),
}

fn quantity(value: i64) -> Quantity {
    Quantity(value.max(0).to_string())
}

/// Bytes in the canonical form of upstream's `BinarySI` quantities: the largest binary suffix
/// that divides the value exactly (`24683584Ki`), else the plain number, so `kubectl describe
/// node` reads as it does for a kubelet.
fn binary_quantity(bytes: i64) -> Quantity {
    let mut value = bytes.max(0);
    let mut suffix = "";
    for next in ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"] {
        if value == 0 || value % 1024 != 0 {
            break;
        }
        value /= 1024;
        suffix = next;
    }
    Quantity(format!("{value}{suffix}"))
}

fn condition(
    type_: &str,
    active: bool,
    changed: SystemTime,
    reason: (&str, &str),
) -> NodeCondition {
    let now = crate::timestamps::api_time(SystemTime::now());
    NodeCondition {
        type_: type_.into(),
        status: if active { "True" } else { "False" }.into(),
        reason: Some(reason.0.into()),
        message: Some(reason.1.into()),
        last_heartbeat_time: Some(now),
        last_transition_time: Some(crate::timestamps::api_time(changed)),
    }
}

/// The machine's architecture as Go (and so Kubernetes) names it.
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The labels the node always carries (upstream's `initialNode` plus `--node-labels`).
pub fn labels(facts: &NodeFacts) -> BTreeMap<String, String> {
    let arch = go_arch();
    let mut labels: BTreeMap<String, String> = [
        ("kubernetes.io/hostname", facts.name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", arch),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", arch),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    labels.extend(facts.extra_labels.clone());
    labels
}

/// Capacity and allocatable, upstream's formula: allocatable is capacity minus the
/// reservations, the hard eviction thresholds and the huge pages, never below zero.
pub fn resources(facts: &NodeFacts) -> (BTreeMap<String, Quantity>, BTreeMap<String, Quantity>) {
    let mut capacity: BTreeMap<String, Quantity> = [
        (
            "cpu".to_string(),
            Quantity(format!("{}m", facts.cpu_capacity_millis.max(0))),
        ),
        (
            "memory".to_string(),
            binary_quantity(facts.memory_capacity_bytes),
        ),
        ("pods".to_string(), quantity(facts.max_pods)),
        (
            "ephemeral-storage".to_string(),
            binary_quantity(facts.nodefs_capacity_bytes),
        ),
    ]
    .into();
    let mut hugepages_total = 0i64;
    for (name, bytes) in &facts.hugepages {
        capacity.insert(name.clone(), binary_quantity(*bytes));
        hugepages_total = hugepages_total.saturating_add(*bytes);
    }
    let mut allocatable = capacity.clone();
    let reserved = &facts.reserved;
    allocatable.insert(
        "cpu".into(),
        Quantity(format!(
            "{}m",
            facts
                .cpu_capacity_millis
                .saturating_sub(reserved.cpu_millis)
                .max(0)
        )),
    );
    allocatable.insert(
        "memory".into(),
        binary_quantity(
            facts
                .memory_capacity_bytes
                .saturating_sub(reserved.memory_bytes)
                .saturating_sub(facts.memory_hard_threshold_bytes)
                .saturating_sub(hugepages_total)
                .max(0),
        ),
    );
    allocatable.insert(
        "ephemeral-storage".into(),
        binary_quantity(
            facts
                .nodefs_capacity_bytes
                .saturating_sub(reserved.ephemeral_storage_bytes)
                .saturating_sub(facts.nodefs_hard_threshold_bytes)
                .max(0),
        ),
    );
    (capacity, allocatable)
}

/// The conditions, with upstream's reasons and messages. `ready_since` is when readiness
/// last changed; the pressure conditions carry their own transition times.
pub fn conditions(
    pressure: &NodePressure,
    ready: &Readiness,
    ready_since: SystemTime,
) -> Vec<NodeCondition> {
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
    conditions.push(match ready {
        Ok(()) => condition(
            "Ready",
            true,
            ready_since,
            ("KubeletReady", "kubelet is posting ready status"),
        ),
        Err(why) => condition(
            "Ready",
            false,
            ready_since,
            ("KubeletNotReady", &why.to_string()),
        ),
    });
    conditions
}

/// The node as it is now.
pub fn node(
    facts: &NodeFacts,
    pressure: &NodePressure,
    ready: &Readiness,
    ready_since: SystemTime,
) -> Node {
    let (capacity, allocatable) = resources(facts);
    let mut addresses = vec![NodeAddress {
        type_: "InternalIP".into(),
        address: facts.ip.clone(),
    }];
    if !facts.hostname.is_empty() {
        addresses.push(NodeAddress {
            type_: "Hostname".into(),
            address: facts.hostname.clone(),
        });
    }
    Node {
        metadata: ObjectMeta {
            name: Some(facts.name.clone()),
            labels: Some(labels(facts)),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: (!facts.register_taints.is_empty()).then(|| facts.register_taints.clone()),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            capacity: Some(capacity),
            allocatable: Some(allocatable),
            conditions: Some(conditions(pressure, ready, ready_since)),
            addresses: Some(addresses),
            daemon_endpoints: Some(NodeDaemonEndpoints {
                kubelet_endpoint: Some(DaemonEndpoint {
                    port: facts.kubelet_port,
                }),
            }),
            node_info: Some(NodeSystemInfo {
                machine_id: facts.machine.machine_id.clone(),
                system_uuid: facts.machine.system_uuid.clone(),
                boot_id: facts.machine.boot_id.clone(),
                kernel_version: facts.machine.kernel_version.clone(),
                os_image: facts.machine.os_image.clone(),
                kubelet_version: format!(
                    "{KUBELET_COMPATIBLE_VERSION}-wasmlet.{}",
                    env!("CARGO_PKG_VERSION")
                ),
                kube_proxy_version: String::new(),
                container_runtime_version: facts.runtime_version.clone(),
                operating_system: "linux".into(),
                architecture: labels(facts)
                    .get("kubernetes.io/arch")
                    .cloned()
                    .unwrap_or_default(),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }
}

/// `kubelet_node_startup_duration_seconds`: from the machine's boot to the node's first
/// Ready, set once.
fn record_startup(ready_at: SystemTime) {
    static RECORDED: std::sync::Once = std::sync::Once::new();
    RECORDED.call_once(|| {
        let Ok(boot) = crate::stats::node::boot_time() else {
            return;
        };
        if let Ok(took) = ready_at.duration_since(boot) {
            crate::metrics::kubelet::kubelet()
                .node_startup_duration
                .set(took.as_secs_f64());
        }
    });
}

/// The node's live view: the facts (known once the runtime answered), the pressure
/// conditions and the health checks, with the time readiness last changed kept across reads.
pub struct NodeView {
    /// Set once the runtime has answered (the Node names its version).
    pub facts: std::sync::OnceLock<NodeFacts>,
    pressure: std::sync::Arc<NodePressure>,
    health: std::sync::Arc<crate::health::Health>,
    ready: parking_lot::Mutex<(bool, SystemTime)>,
}

impl NodeView {
    /// A view over `pressure` and `health`, facts to be set.
    pub fn new(
        pressure: std::sync::Arc<NodePressure>,
        health: std::sync::Arc<crate::health::Health>,
    ) -> Self {
        Self {
            facts: std::sync::OnceLock::new(),
            pressure,
            health,
            ready: parking_lot::Mutex::new((false, SystemTime::now())),
        }
    }

    /// Whether the node is ready: the runtime answered, the PLEG relists and the SyncLoop
    /// turns (upstream's runtime, PLEG and network checks).
    pub fn readiness(&self) -> Readiness {
        if self.facts.get().is_none() {
            return Err(NotReady::RuntimeNotAnswered);
        }
        self.health.check().map_err(NotReady::from)
    }

    /// The Node as it is now; `None` until the runtime has answered.
    pub fn current(&self) -> Option<Node> {
        let facts = self.facts.get()?;
        let readiness = self.readiness();
        let since = {
            let mut ready = self.ready.lock();
            if ready.0 != readiness.is_ok() {
                *ready = (readiness.is_ok(), SystemTime::now());
                if ready.0 {
                    record_startup(ready.1);
                }
            }
            ready.1
        };
        Some(node(facts, &self.pressure, &readiness, since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::reserved::Reserved;

    #[test]
    fn allocatable_is_capacity_less_reservations_thresholds_and_huge_pages() {
        let gib = 1i64 << 30;
        let facts = NodeFacts {
            max_pods: 110,
            memory_capacity_bytes: 8 * gib,
            cpu_capacity_millis: 4000,
            nodefs_capacity_bytes: 100 * gib,
            hugepages: vec![("hugepages-2Mi".into(), gib)],
            reserved: Reserved {
                cpu_millis: 500,
                memory_bytes: gib,
                ephemeral_storage_bytes: 10 * gib,
                pids: 0,
            },
            memory_hard_threshold_bytes: 100 << 20,
            nodefs_hard_threshold_bytes: 10 * gib,
            ..Default::default()
        };
        let (capacity, allocatable) = resources(&facts);
        assert_eq!(capacity["cpu"], Quantity("4000m".into()));
        assert_eq!(allocatable["cpu"], Quantity("3500m".into()));
        assert_eq!(
            allocatable["memory"],
            binary_quantity(6 * gib - (100 << 20))
        );
        assert_eq!(allocatable["ephemeral-storage"], binary_quantity(80 * gib));
        assert_eq!(allocatable["pods"], capacity["pods"]);
        let starved = NodeFacts {
            reserved: Reserved {
                cpu_millis: 9000,
                ..Default::default()
            },
            ..facts
        };
        assert_eq!(resources(&starved).1["cpu"], Quantity("0m".into()));
    }

    #[test]
    fn byte_quantities_take_the_largest_exact_binary_suffix_as_upstream_writes_them() {
        let cases = [
            (24_683_584 * 1024, "24683584Ki"),
            (8 << 30, "8Gi"),
            (1536 << 20, "1536Mi"),
            (1000, "1000"),
            (0, "0"),
            (-5, "0"),
        ];
        for (bytes, text) in cases {
            assert_eq!(
                binary_quantity(bytes),
                Quantity(text.into()),
                "{bytes} bytes"
            );
        }
    }
}
