//! The last handler: the `lifecycle-hooks` plugins' `admit`.

use super::{AdmitAttributes, AdmitHandler, Rejection};
use k8s_openapi::api::core::v1::Container;
use std::sync::Arc;
use tracing::info;
use wasmlet_plugin_host::PluginRegistry;

/// Every `lifecycle-hooks` plugin, in config order, after the built-in handlers; the first
/// `err` rejects the pod (a faulty plugin admits). Runs inline, bounded by each plugin's
/// deadline, so that admission stays one ordered decision per pod, as upstream's.
pub(super) struct PluginAdmitHandler(pub(super) Arc<PluginRegistry>);

impl AdmitHandler for PluginAdmitHandler {
    fn admit(&self, attrs: &AdmitAttributes<'_>) -> Result<(), Rejection> {
        use wasmlet_policy_default::QosClass;
        let plugins = &self.0;
        if !plugins.has(wasmlet_plugin_host::World::LifecycleHooks) {
            return Ok(());
        }
        let pod = attrs.pod;
        let spec = pod.spec.clone().unwrap_or_default();
        let has = |c: &Container, limits: bool, name: &str| {
            c.resources
                .as_ref()
                .and_then(|r| {
                    if limits {
                        r.limits.as_ref()
                    } else {
                        r.requests.as_ref()
                    }
                })
                .is_some_and(|m| m.contains_key(name))
        };
        let container = |c: &Container, is_init: bool| wasmlet_plugin_host::AdmissionContainer {
            name: c.name.clone(),
            is_init,
            has_cpu_request: has(c, false, "cpu"),
            has_memory_request: has(c, false, "memory"),
            has_cpu_limit: has(c, true, "cpu"),
            has_memory_limit: has(c, true, "memory"),
        };
        let containers = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| container(c, true))
            .chain(spec.containers.iter().map(|c| container(c, false)))
            .collect();
        let admission = wasmlet_plugin_host::AdmissionPod {
            priority: spec.priority.unwrap_or(0),
            qos: match crate::resources::pod_qos(pod) {
                crate::resources::QosClass::Guaranteed => QosClass::Guaranteed,
                crate::resources::QosClass::Burstable => QosClass::Burstable,
                crate::resources::QosClass::BestEffort => QosClass::BestEffort,
            },
            // From the pod's source annotation: with the API-server source not every pod is
            // static any more.
            is_static: super::is_static_pod(pod),
            is_critical: super::is_critical_pod(pod),
            containers,
        };
        let m = &pod.metadata;
        let meta = wasmlet_plugin_host::PodMeta {
            namespace: m.namespace.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            uid: m.uid.clone().unwrap_or_default(),
            labels: m.labels.clone().unwrap_or_default(),
            annotations: m.annotations.clone().unwrap_or_default(),
        };
        let decision = tokio::task::block_in_place(|| plugins.admit(&admission, meta));
        match decision {
            Ok(_) => Ok(()),
            Err((message, by)) => {
                info!(pod = %crate::podutil::full_name(pod), decided_by = ?by, %message, "admission plugin rejected the pod");
                Err(Rejection::new("PluginAdmission", message))
            }
        }
    }
}
