//! Taints (`corev1.FindMatchingUntoleratedTaint` with the kubelet's filter): the kubelet
//! refuses a pod only for a `NoExecute` taint it does not tolerate, since that taint would
//! evict it at once; `NoSchedule` and `PreferNoSchedule` are the scheduler's business.

use k8s_openapi::api::core::v1::{Node, PodSpec, Taint, Toleration};

/// The first `NoExecute` taint of `node` that no toleration of the pod tolerates.
pub(super) fn untolerated_no_execute<'a>(spec: &PodSpec, node: &'a Node) -> Option<&'a Taint> {
    let tolerations = spec.tolerations.as_deref().unwrap_or_default();
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .filter(|taint| taint.effect == "NoExecute")
        .find(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

/// Upstream's `Toleration.ToleratesTaint`: an empty effect matches every effect, an empty
/// key every key; `Exists` matches any value, `Equal` (or no operator) the same value. The
/// `Lt`/`Gt` operators belong to an alpha feature that is off by default: they match nothing.
fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    fn set(field: &Option<String>) -> Option<&str> {
        field.as_deref().filter(|s| !s.is_empty())
    }
    if set(&toleration.effect).is_some_and(|effect| effect != taint.effect) {
        return false;
    }
    if set(&toleration.key).is_some_and(|key| key != taint.key) {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        "Exists" => true,
        _ => false,
    }
}
