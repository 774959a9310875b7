//! The node's fixed facts for its status: capacity from the machine, what allocatable keeps
//! back (the reservations and the hard eviction thresholds), identity and software. When
//! `enforceNodeAllocatable` lists `pods`, the `kubepods` cgroup is limited here, once, before
//! any pod starts. Which pressure stall information the node reports is logged here too.

use crate::config::eviction::Threshold;
use crate::config::NodeConfig;
use crate::node_status::NodeFacts;
use tracing::{info, warn};
use wasmlet_policy_default::Signal;

/// The facts of the node `config` describes; `runtime_version` as `<name>://<version>`.
pub(super) fn node_facts(
    config: &NodeConfig,
    thresholds: &[Threshold],
    runtime_version: String,
) -> NodeFacts {
    let kubelet = &config.kubelet;
    info!("this node reports {}", crate::stats::psi::availability());
    let memory_capacity = crate::machine::machine_memory_bytes();
    let nodefs_capacity =
        crate::stats::fs::of(&config.root_dir).map_or(0, |fs| fs.capacity_bytes as i64);
    let hard = |signal: Signal, capacity: i64| {
        thresholds
            .iter()
            .find(|t| t.signal == signal && t.is_hard())
            .map_or(0, |t| t.value.resolve(capacity))
    };
    // Validated when the config was loaded, as the thresholds.
    let reserved = crate::config::reserved::reserved(kubelet).unwrap_or_default();
    let cpu_capacity = crate::machine::machine_cpu_millis();
    let cgroup_version = if crate::stats::cgroup::is_v1() { 1 } else { 2 };
    crate::metrics::kubelet::kubelet()
        .cgroup_version
        .set(cgroup_version);
    if crate::config::reserved::enforces_pods(kubelet) {
        let cpu = cpu_capacity.saturating_sub(reserved.cpu_millis).max(0);
        let memory = memory_capacity.saturating_sub(reserved.memory_bytes).max(0);
        if let Err(error) = crate::cgroups::limit_pods_cgroup(cpu, memory) {
            warn!(%error, cpu_millis = cpu, memory_bytes = memory, "enforceNodeAllocatable: the kubepods cgroup could not be limited; pods are not held to allocatable");
        }
    }
    NodeFacts {
        name: config.node_name.clone(),
        ip: config.node_ip.to_string(),
        hostname: crate::config::machine_hostname(),
        max_pods: kubelet.max_pods,
        memory_capacity_bytes: memory_capacity,
        cpu_capacity_millis: cpu_capacity,
        nodefs_capacity_bytes: nodefs_capacity,
        reserved,
        hugepages: crate::machine::hugepages(),
        memory_hard_threshold_bytes: hard(Signal::MemoryAvailable, memory_capacity),
        nodefs_hard_threshold_bytes: hard(Signal::NodefsAvailable, nodefs_capacity),
        runtime_version,
        kubelet_port: i32::from(kubelet.port),
        extra_labels: config.node_labels.clone(),
        register_taints: kubelet.register_with_taints.clone(),
        machine: crate::machine::machine_info(),
    }
}
