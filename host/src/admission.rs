//! Pod admission, as upstream's admit handlers (`kubelet.go` `admitHandlers`,
//! `lifecycle/predicate.go`): a chain asked in order before a pod's worker starts; the first
//! rejection marks the pod `Failed` with the handler's reason and it never runs. The order is
//! upstream's: the eviction manager, the general predicates (today the pod count), then what
//! wasmlet adds: volumes it cannot serve, and the `lifecycle-hooks` plugins.

use crate::eviction::NodePressure;
use k8s_openapi::api::core::v1::Pod;
use std::sync::Arc;
use tracing::info;
use wasmlet_plugin_host::PluginRegistry;

/// Why a pod was refused: upstream's `PodAdmitResult` reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The status reason (`OutOfpods`, `Evicted`, ...).
    pub reason: &'static str,
    /// The status message.
    pub message: String,
}

/// What a handler decides from: the pod and the pods already admitted and active.
pub struct AdmitAttributes<'a> {
    /// The pod asking to run.
    pub pod: &'a Pod,
    /// The pods admitted before it that are neither terminating nor terminal.
    pub other_pods: &'a [Pod],
}

/// One admission rule.
pub trait AdmitHandler: Send + Sync {
    /// Admits the pod, or says why not.
    fn admit(&self, attrs: &AdmitAttributes<'_>) -> Result<(), Rejection>;
}

/// The handlers, asked in order.
pub struct PodAdmitChain {
    handlers: Vec<Box<dyn AdmitHandler>>,
}

impl PodAdmitChain {
    /// The node's chain in upstream's order: eviction, predicates, volumes, plugins.
    pub fn new(pressure: Arc<NodePressure>, max_pods: usize, plugins: Arc<PluginRegistry>) -> Self {
        Self::with_handlers(vec![
            Box::new(EvictionAdmitHandler(pressure)),
            Box::new(PredicateAdmitHandler { max_pods }),
            Box::new(VolumeAdmitHandler),
            Box::new(PluginAdmitHandler(plugins)),
        ])
    }

    /// A chain of `handlers`, asked in the order given.
    pub fn with_handlers(handlers: Vec<Box<dyn AdmitHandler>>) -> Self {
        Self { handlers }
    }

    /// The first rejection, if any handler refuses the pod.
    pub fn admit(&self, attrs: &AdmitAttributes<'_>) -> Result<(), Rejection> {
        self.handlers.iter().try_for_each(|h| h.admit(attrs))
    }
}

/// Node pressure (upstream's eviction admit handler): under MemoryPressure a BestEffort pod
/// that does not tolerate it is refused; under any other pressure every non-critical pod.
struct EvictionAdmitHandler(Arc<NodePressure>);

impl AdmitHandler for EvictionAdmitHandler {
    fn admit(&self, attrs: &AdmitAttributes<'_>) -> Result<(), Rejection> {
        self.0.admit(attrs.pod).map_err(|message| Rejection {
            reason: "Evicted",
            message,
        })
    }
}

/// Upstream's general predicates; standalone, the node checks the pod count (`maxPods`).
struct PredicateAdmitHandler {
    max_pods: usize,
}

impl AdmitHandler for PredicateAdmitHandler {
    fn admit(&self, attrs: &AdmitAttributes<'_>) -> Result<(), Rejection> {
        let used = attrs.other_pods.len();
        if used < self.max_pods {
            return Ok(());
        }
        Err(Rejection {
            reason: "OutOfpods",
            message: format!(
                "Node didn't have enough resource: pods, requested: 1, used: {used}, capacity: {}",
                self.max_pods
            ),
        })
    }
}

/// Volumes this node cannot serve without an API server fail admission, as upstream's
/// kubelet fails a pod whose volumes it cannot mount.
struct VolumeAdmitHandler;

impl AdmitHandler for VolumeAdmitHandler {
    fn admit(&self, attrs: &AdmitAttributes<'_>) -> Result<(), Rejection> {
        let unsupported = attrs
            .pod
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .find_map(|v| {
                crate::volumes::unsupported(attrs.pod, v)
                    .map(|reason| format!("volume {:?}: {reason}", v.name))
            });
        match unsupported {
            Some(message) => Err(Rejection {
                reason: "UnsupportedVolume",
                message,
            }),
            None => Ok(()),
        }
    }
}

/// Every `lifecycle-hooks` plugin, in config order, after the built-in handlers; the first
/// `err` rejects the pod (a faulty plugin admits). Runs inline, bounded by each plugin's
/// deadline, so that admission stays one ordered decision per pod, as upstream's.
struct PluginAdmitHandler(Arc<PluginRegistry>);

impl AdmitHandler for PluginAdmitHandler {
    fn admit(&self, attrs: &AdmitAttributes<'_>) -> Result<(), Rejection> {
        use wasmlet_policy_default::QosClass;
        let plugins = &self.0;
        if !plugins.has(wasmlet_plugin_host::World::LifecycleHooks) {
            return Ok(());
        }
        let pod = attrs.pod;
        let spec = pod.spec.clone().unwrap_or_default();
        let has = |c: &k8s_openapi::api::core::v1::Container, limits: bool, name: &str| {
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
        let container = |c: &k8s_openapi::api::core::v1::Container, is_init: bool| {
            wasmlet_plugin_host::AdmissionContainer {
                name: c.name.clone(),
                is_init,
                has_cpu_request: has(c, false, "cpu"),
                has_memory_request: has(c, false, "memory"),
                has_cpu_limit: has(c, true, "cpu"),
                has_memory_limit: has(c, true, "memory"),
            }
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
            // Every pod here comes from the static manifest directory, and upstream counts
            // static pods as critical.
            is_static: true,
            is_critical: true,
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
                Err(Rejection {
                    reason: "PluginAdmission",
                    message,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Refuse(&'static str);

    impl AdmitHandler for Refuse {
        fn admit(&self, _: &AdmitAttributes<'_>) -> Result<(), Rejection> {
            Err(Rejection {
                reason: self.0,
                message: self.0.to_lowercase(),
            })
        }
    }

    fn pod_with_volume(volume: k8s_openapi::api::core::v1::Volume) -> Pod {
        Pod {
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                volumes: Some(vec![volume]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_first_rejection_in_order_wins() {
        let chain = PodAdmitChain::with_handlers(vec![
            Box::new(PredicateAdmitHandler { max_pods: 10 }),
            Box::new(Refuse("First")),
            Box::new(Refuse("Second")),
        ]);
        let pod = Pod::default();
        let rejection = chain
            .admit(&AdmitAttributes {
                pod: &pod,
                other_pods: &[],
            })
            .unwrap_err();
        assert_eq!(rejection.reason, "First");
    }

    #[test]
    fn max_pods_counts_the_other_active_pods() {
        let handler = PredicateAdmitHandler { max_pods: 2 };
        let pod = Pod::default();
        let one = [Pod::default()];
        let two = [Pod::default(), Pod::default()];
        let attrs = |other_pods| AdmitAttributes {
            pod: &pod,
            other_pods,
        };
        assert_eq!(handler.admit(&attrs(&one)), Ok(()));
        let rejection = handler.admit(&attrs(&two)).unwrap_err();
        assert_eq!(rejection.reason, "OutOfpods");
        assert_eq!(
            rejection.message,
            "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
        );
    }

    #[test]
    fn volumes_that_need_an_api_server_are_refused() {
        let secret = pod_with_volume(k8s_openapi::api::core::v1::Volume {
            name: "token".into(),
            secret: Some(Default::default()),
            ..Default::default()
        });
        let rejection = VolumeAdmitHandler
            .admit(&AdmitAttributes {
                pod: &secret,
                other_pods: &[],
            })
            .unwrap_err();
        assert_eq!(rejection.reason, "UnsupportedVolume");
        assert!(
            rejection.message.starts_with("volume \"token\""),
            "{}",
            rejection.message
        );
        let empty_dir = pod_with_volume(k8s_openapi::api::core::v1::Volume {
            name: "scratch".into(),
            empty_dir: Some(Default::default()),
            ..Default::default()
        });
        assert_eq!(
            VolumeAdmitHandler.admit(&AdmitAttributes {
                pod: &empty_dir,
                other_pods: &[],
            }),
            Ok(())
        );
    }
}
