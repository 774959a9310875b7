//! Upstream's predicate admit handler (`lifecycle/predicate.go` `predicateAdmitHandler`): the
//! checks the scheduler made, made again by the node against its own Node object, because a
//! pod can reach a node without the scheduler (static pods, `spec.nodeName` set by hand) and
//! the node may have changed since. In upstream's order: the OS label and field, the
//! supplemental-groups policy, then the general filter (`scheduler.AdmissionCheck`): resources
//! (`fit`), node affinity (`affinity`), node name, host ports (`ports`), and last the
//! `NoExecute` taints (`taints`). The first failure is the rejection.

mod affinity;
mod fit;
mod ports;
mod taints;
#[cfg(test)]
mod tests;

pub(crate) use fit::cpu_and_memory_request;

use super::{AdmitAttributes, AdmitHandler, Rejection};
use k8s_openapi::api::core::v1::{Node, Pod, PodSpec};
use tokio::sync::watch;
use tracing::{debug, warn};

/// Where the predicates read the Node from: in cluster mode the Node as the API server holds
/// it, standalone the one `node_status::node` builds. A trait so that tests and other
/// sources can stand in for the watch.
pub trait NodeLister: Send + Sync {
    /// The Node as last known; `None` until one is known (the pod is then admitted, as
    /// upstream's standalone kubelet admits against its initial node).
    fn node(&self) -> Option<Node>;
}

impl NodeLister for watch::Receiver<Option<Node>> {
    fn node(&self) -> Option<Node> {
        self.borrow().clone()
    }
}

/// The label the pod's OS selector is checked against (`v1.LabelOSStable`).
const OS_LABEL: &str = "kubernetes.io/os";

/// Reasons and messages of upstream's `predicate.go` and of the scheduler plugins it calls.
mod reason {
    pub const OS_SELECTOR: &str = "PodOSSelectorNodeLabelDoesNotMatch";
    pub const OS_SELECTOR_MESSAGE: &str =
        "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label";
    pub const OS_FIELD: &str = "PodOSNotSupported";
    pub const OS_FIELD_MESSAGE: &str = "Failed to admit pod as the OS field doesn't match node OS";
    pub const SUPPLEMENTAL_GROUPS: &str = "SupplementalGroupsPolicyNotSupported";
    pub const SUPPLEMENTAL_GROUPS_MESSAGE: &str =
        "SupplementalGroupsPolicy=Strict is not supported in this node";
    pub const UNEXPECTED: &str = "UnexpectedAdmissionError";
    pub const INVALID_NODE: &str = "InvalidNodeInfo";
    pub const NODE_AFFINITY: &str = "NodeAffinity";
    pub const NODE_AFFINITY_MESSAGE: &str = "node(s) didn't match Pod's node affinity/selector";
    pub const NODE_NAME: &str = "NodeName";
    pub const NODE_NAME_MESSAGE: &str = "node(s) didn't match the requested node name";
    pub const NODE_PORTS: &str = "NodePorts";
    pub const NODE_PORTS_MESSAGE: &str =
        "node(s) didn't have free ports for the requested pod ports";
    pub const TAINT_TOLERATION: &str = "TaintToleration";
    pub const TAINT_TOLERATION_MESSAGE: &str = "node(s) had taints that the pod didn't tolerate";
}

/// One failed check of the general filter, as upstream's `PredicateFailureReason`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// A resource the node lacks (`InsufficientResourceError`).
    Insufficient(fit::Insufficient),
    /// Any other check (`PredicateFailureError`): the plugin's name and its reason.
    Predicate {
        name: &'static str,
        description: &'static str,
    },
}

impl Failure {
    fn into_rejection(self) -> Rejection {
        match self {
            // `OutOfcpu`, `OutOfmemory`, `OutOfephemeral-storage`, `OutOfpods`, and `OutOf`
            // + the name for any other resource.
            Failure::Insufficient(i) => Rejection::new(
                format!("OutOf{}", i.resource),
                format!(
                    "Node didn't have enough resource: {}, requested: {}, used: {}, capacity: {}",
                    i.resource, i.requested, i.used, i.capacity
                ),
            ),
            Failure::Predicate { name, description } => {
                Rejection::new(name, format!("Predicate {name} failed: {description}"))
            }
        }
    }
}

/// The predicate handler of the chain.
pub(super) struct PredicateAdmitHandler {
    node: Box<dyn NodeLister>,
}

impl PredicateAdmitHandler {
    pub(super) fn new(node: impl NodeLister + 'static) -> Self {
        Self {
            node: Box::new(node),
        }
    }
}

impl AdmitHandler for PredicateAdmitHandler {
    fn admit(&self, attrs: &AdmitAttributes<'_>) -> Result<(), Rejection> {
        let Some(node) = self.node.node() else {
            debug!(pod = %crate::podutil::full_name(attrs.pod), "no Node known yet; admitting without the predicates");
            return Ok(());
        };
        let result = check(attrs.pod, attrs.other_pods, &node);
        if let Err(rejection) = &result {
            debug!(pod = %crate::podutil::full_name(attrs.pod), reason = %rejection.reason, message = %rejection.message, "predicate failed");
        }
        result
    }
}

/// Upstream's `predicateAdmitHandler.Admit` against `node`, with `others` the active pods.
fn check(pod: &Pod, others: &[Pod], node: &Node) -> Result<(), Rejection> {
    let empty = PodSpec::default();
    let spec = pod.spec.as_ref().unwrap_or(&empty);
    // The checks that preemption cannot help come first, as upstream's. Upstream compares
    // the pod's label with the node's OS label, which it first forces to the kubelet's own
    // OS, so in effect with the OS this binary runs on.
    let os = std::env::consts::OS;
    let labels = pod.metadata.labels.as_ref();
    if labels
        .and_then(|l| l.get(OS_LABEL))
        .is_some_and(|wanted| wanted != os)
    {
        return Err(Rejection::new(
            reason::OS_SELECTOR,
            reason::OS_SELECTOR_MESSAGE,
        ));
    }
    if spec.os.as_ref().is_some_and(|o| o.name != os) {
        return Err(Rejection::new(reason::OS_FIELD, reason::OS_FIELD_MESSAGE));
    }
    if !supplemental_groups_supported(spec, node) {
        return Err(Rejection::new(
            reason::SUPPLEMENTAL_GROUPS,
            reason::SUPPLEMENTAL_GROUPS_MESSAGE,
        ));
    }

    let failures = general_filter(pod, spec, others, node)?;
    let Some(first) = first_failure(pod, failures) else {
        return Ok(());
    };
    Err(first.into_rejection())
}

/// `SupplementalGroupsPolicy: Strict` needs the node to say it supports it
/// (`status.features.supplementalGroupsPolicy`); the feature is beta, so upstream enforces it.
fn supplemental_groups_supported(spec: &PodSpec, node: &Node) -> bool {
    let strict = spec
        .security_context
        .as_ref()
        .and_then(|s| s.supplemental_groups_policy.as_deref())
        == Some("Strict");
    !strict
        || node
            .status
            .as_ref()
            .and_then(|s| s.features.as_ref())
            .and_then(|f| f.supplemental_groups_policy)
            .unwrap_or(false)
}

/// Every failure of upstream's `generalFilter`, in its order: resources (all of them), node
/// affinity, node name, host ports, then untolerated `NoExecute` taints unless the pod is
/// static. An error is a request or an allocatable that cannot be read.
fn general_filter(
    pod: &Pod,
    spec: &PodSpec,
    others: &[Pod],
    node: &Node,
) -> Result<Vec<Failure>, Rejection> {
    let allocatable = fit::Allocatable::of(node).map_err(|bad| {
        Rejection::new(
            reason::INVALID_NODE,
            format!("Kubelet cannot get node info: {bad}"),
        )
    })?;
    let request = fit::pod_request(pod, &allocatable)
        .map_err(|bad| Rejection::new(reason::UNEXPECTED, bad.to_string()))?;
    let used = fit::used_by(others, |other, bad| {
        warn!(pod = %crate::podutil::full_name(other), %bad, "an active pod's request cannot be read; counted as zero");
    });
    let mut failures: Vec<Failure> = fit::fits(&request, others.len(), &used, &allocatable)
        .into_iter()
        .map(Failure::Insufficient)
        .collect();
    let mut predicate = |name, description| failures.push(Failure::Predicate { name, description });
    if !affinity::required_matches(spec, node) {
        predicate(reason::NODE_AFFINITY, reason::NODE_AFFINITY_MESSAGE);
    }
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    if spec
        .node_name
        .as_deref()
        .is_some_and(|wanted| !wanted.is_empty() && wanted != node_name)
    {
        predicate(reason::NODE_NAME, reason::NODE_NAME_MESSAGE);
    }
    if ports::conflict(pod, others) {
        predicate(reason::NODE_PORTS, reason::NODE_PORTS_MESSAGE);
    }
    // The kubelet only cares about NoExecute taints, and never for static pods.
    if !super::is_static_pod(pod) && taints::untolerated_no_execute(spec, node).is_some() {
        predicate(reason::TAINT_TOLERATION, reason::TAINT_TOLERATION_MESSAGE);
    }
    Ok(failures)
}

/// The failure reported. Upstream's critical-pod handler does not reject a critical pod for
/// resources: it reports the first other failure, and with only resource failures preempts
/// non-critical pods to make room. wasmlet does not preempt, so a critical pod that fits in
/// every other way is rejected with its first resource failure, as any other pod.
fn first_failure(pod: &Pod, failures: Vec<Failure>) -> Option<Failure> {
    if super::is_critical_pod(pod) {
        if let Some(other) = failures
            .iter()
            .find(|f| matches!(f, Failure::Predicate { .. }))
        {
            return Some(other.clone());
        }
    }
    failures.into_iter().next()
}
