//! Pod admission, as upstream's admit handlers (`kubelet.go` `admitHandlers`,
//! `lifecycle/predicate.go`): a chain asked in order before a pod's worker starts; the first
//! rejection marks the pod `Failed` with the handler's reason and it never runs. The order is
//! upstream's: the eviction manager, the general predicates against the Node (`predicates`:
//! resources, node affinity, node name, host ports, taints), then what wasmlet adds: volumes
//! it cannot serve, and the `lifecycle-hooks` plugins (`plugins`).

mod plugins;
mod predicates;
pub(crate) use predicates::cpu_and_memory_request;
mod sysctls;
#[cfg(test)]
mod tests;

pub use predicates::NodeLister;

use crate::eviction::NodePressure;
use k8s_openapi::api::core::v1::Pod;
use std::sync::Arc;
use wasmlet_plugin_host::PluginRegistry;

/// Why a pod was refused: upstream's `PodAdmitResult` reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The status reason (`OutOfcpu`, `NodeAffinity`, `Evicted`, ...). A `String` because
    /// upstream builds some of them (`OutOf` + an extended resource's name).
    pub reason: String,
    /// The status message.
    pub message: String,
}

impl Rejection {
    fn new(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            message: message.into(),
        }
    }
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
    /// The node's chain in upstream's order: eviction, sysctls, predicates, volumes, plugins. `node`
    /// is where the predicates read the Node: the registered Node in cluster mode, the one
    /// `node_status::node` builds standalone (`watch::Receiver<Option<Node>>` implements it).
    pub fn new(
        pressure: Arc<NodePressure>,
        node: impl NodeLister + 'static,
        plugins: Arc<PluginRegistry>,
        allowed_unsafe_sysctls: &[String],
    ) -> Self {
        Self::with_handlers(vec![
            Box::new(EvictionAdmitHandler(pressure)),
            Box::new(sysctls::SysctlAdmitHandler::new(allowed_unsafe_sysctls)),
            Box::new(predicates::PredicateAdmitHandler::new(node)),
            Box::new(VolumeAdmitHandler),
            Box::new(plugins::PluginAdmitHandler(plugins)),
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
        self.0
            .admit(attrs.pod)
            .map_err(|rejection| Rejection::new("Evicted", rejection.to_string()))
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
            Some(message) => Err(Rejection::new("UnsupportedVolume", message)),
            None => Ok(()),
        }
    }
}

/// A pod from a file or HTTP source rather than the API server (upstream's `IsStaticPod`:
/// the `kubernetes.io/config.source` annotation is set and is not `api`).
fn is_static_pod(pod: &Pod) -> bool {
    annotation(pod, "kubernetes.io/config.source").is_some_and(|source| source != "api")
}

/// Upstream's `SystemCriticalPriority` (`2 * HighestUserDefinablePriority`).
const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// Upstream's `IsCriticalPod`: static and mirror pods, and system-critical priorities.
fn is_critical_pod(pod: &Pod) -> bool {
    is_static_pod(pod)
        || annotation(pod, "kubernetes.io/config.mirror").is_some()
        || pod
            .spec
            .as_ref()
            .and_then(|s| s.priority)
            .is_some_and(|p| p >= SYSTEM_CRITICAL_PRIORITY)
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}
