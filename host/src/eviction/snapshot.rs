//! The ranking snapshot the `eviction-policy` plugin sees: the node, the signal under
//! pressure, and every running pod as a candidate with its QoS, priority, criticality,
//! requests and usage (read through [`crate::stats::pod`]).

use super::pressure::{priority, SYSTEM_CRITICAL_PRIORITY};
use super::EvictionManager;
use crate::podutil::is_static;
use crate::resources::{self, QosClass};
use crate::stats::{self, pod::PodPaths};
use k8s_openapi::api::core::v1::Pod;
use std::collections::HashMap;
use std::sync::Arc;
use tracing::warn;
use wasmlet_plugin_host::EvictionSnapshot;
use wasmlet_plugin_host::PodMeta;
use wasmlet_policy_default::{NodeInfo, PodInfo, SignalObservation};

/// Sum of the pod's container requests of `resource`, in bytes.
fn pod_request_bytes(pod: &Pod, resource: &str) -> u64 {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .filter_map(|c| {
            c.resources
                .as_ref()?
                .requests
                .as_ref()?
                .get(resource)
                .cloned()
        })
        .filter_map(|q| resources::bytes(&q).ok())
        .map(|b| b.max(0) as u64)
        .fold(0, u64::saturating_add)
}

/// Sum of the pod's container CPU requests, in millicores.
fn pod_request_cpu_millis(pod: &Pod) -> u64 {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get("cpu").cloned())
        .filter_map(|q| resources::cpu_millis(&q).ok())
        .map(|m| m.max(0) as u64)
        .fold(0, u64::saturating_add)
}

impl EvictionManager {
    /// The running pods as the plugin sees them, with the thresholds met (`pressure`; none
    /// for a pressure-watch call), and the pods themselves in the same order.
    pub(super) async fn snapshot(
        &self,
        pressure: Vec<SignalObservation>,
    ) -> (EvictionSnapshot, Vec<Arc<Pod>>) {
        let runtime_usage =
            match stats::pod::collect(&self.gc.cri, &self.config.node_name, &self.cpu).await {
                Ok(usage) => usage,
                Err(error) => {
                    warn!(%error, "cannot read container stats; disk and CPU usage count as 0");
                    HashMap::new()
                }
            };
        let pods: Vec<Arc<Pod>> = self
            .store
            .list()
            .into_iter()
            .filter(|p| !crate::podutil::is_terminal(p) && p.metadata.deletion_timestamp.is_none())
            .collect();
        let mut infos = Vec::new();
        let mut meta = Vec::new();
        for pod in &pods {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let qos = crate::resources::pod_qos(pod);
            let parent = qos.cgroup_parent(&uid);
            let usage = stats::pod::measure(
                PodPaths {
                    cgroup_parent: &parent,
                    log_dir: &crate::podutil::log_directory(&self.config.pod_logs_dir, pod),
                    empty_dirs: &self
                        .config
                        .root_dir
                        .join("pods")
                        .join(&uid)
                        .join("volumes/kubernetes.io~empty-dir"),
                },
                runtime_usage.get(&uid).copied().unwrap_or_default(),
            );
            infos.push(PodInfo {
                priority: priority(pod),
                qos: match qos {
                    QosClass::Guaranteed => wasmlet_policy_default::QosClass::Guaranteed,
                    QosClass::Burstable => wasmlet_policy_default::QosClass::Burstable,
                    QosClass::BestEffort => wasmlet_policy_default::QosClass::BestEffort,
                },
                is_static: is_static(pod) && !self.pressure.evict_static_pods(),
                is_critical: priority(pod) >= SYSTEM_CRITICAL_PRIORITY,
                has_stats: usage.memory_working_set.is_some(),
                memory_request_bytes: pod_request_bytes(pod, "memory"),
                memory_usage_bytes: usage.memory_working_set.unwrap_or(0),
                disk_request_bytes: pod_request_bytes(pod, "ephemeral-storage"),
                disk_usage_bytes: usage.disk_bytes,
                inodes_used: usage.inodes,
                cpu_request_millis: pod_request_cpu_millis(pod),
                cpu_usage_millis: usage.cpu_millis,
                process_count: usage.processes,
                container_count: pod.spec.as_ref().map_or(0, |s| s.containers.len() as u32),
                start_time_unix_ms: pod
                    .status
                    .as_ref()
                    .and_then(|s| s.start_time.as_ref())
                    .map_or(0, |t| t.0.as_millisecond().max(0) as u64),
                ..Default::default()
            });
            meta.push(PodMeta {
                namespace: pod.metadata.namespace.clone().unwrap_or_default(),
                name: pod.metadata.name.clone().unwrap_or_default(),
                uid,
                labels: pod.metadata.labels.clone().unwrap_or_default(),
                annotations: pod.metadata.annotations.clone().unwrap_or_default(),
            });
        }
        let memory = stats::node::memory().unwrap_or_default();
        let snapshot = EvictionSnapshot {
            node: NodeInfo {
                memory_capacity_bytes: memory.capacity,
                memory_allocatable_bytes: memory.capacity,
                cpu_capacity_millis: crate::machine::machine_cpu_millis().max(0) as u64,
                cpu_allocatable_millis: crate::machine::machine_cpu_millis().max(0) as u64,
                pod_count: pods.len() as u32,
                ..Default::default()
            },
            pressure,
            pods: infos,
            meta: Arc::new(meta),
        };
        (snapshot, pods)
    }
}
