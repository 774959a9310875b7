//! Field paths a pod may name (`fieldRef`, `resourceFieldRef`) and their values, as upstream's
//! `pkg/fieldpath` and `podFieldSelectorRuntimeValue`. A leaf shared by manifest validation,
//! the container environment and downward API volumes.

use crate::resources::{parse_milli, requests_and_limits};
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Facts about the pod a `fieldRef` can name that are only known once the sandbox runs, and
/// the node's allocatable amounts an unset limit reads as.
#[derive(Debug, Clone, Default)]
pub struct PodFacts {
    /// `status.podIP`: the sandbox's primary IP.
    pub pod_ip: String,
    /// `status.podIPs`: every IP of the sandbox, primary first.
    pub pod_ips: Vec<String>,
    /// `status.hostIP`: the node's IP.
    pub host_ip: String,
    /// What an unset limit reads as in `resourceFieldRef`.
    pub node_cpu_millis: i64,
    /// What an unset memory limit reads as in `resourceFieldRef`.
    pub node_memory_bytes: i64,
}

/// Whether wasmlet can resolve `path`; the error says why not.
pub fn supported(path: &str) -> Result<(), String> {
    match path {
        "metadata.name"
        | "metadata.namespace"
        | "metadata.uid"
        | "spec.nodeName"
        | "spec.serviceAccountName"
        | "status.hostIP"
        | "status.hostIPs"
        | "status.podIP"
        | "status.podIPs" => Ok(()),
        _ if subscript(path, "metadata.labels").is_some()
            || subscript(path, "metadata.annotations").is_some() =>
        {
            Ok(())
        }
        _ => Err(format!("unsupported fieldRef path {path:?}")),
    }
}

fn subscript<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    path.strip_prefix(prefix)?
        .strip_prefix("['")?
        .strip_suffix("']")
}

/// The value of `path` (one [`supported`] names) for `pod`; empty when unset.
pub fn value(pod: &Pod, facts: &PodFacts, path: &str) -> String {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    match path {
        "metadata.name" => meta.name.clone().unwrap_or_default(),
        "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
        "metadata.uid" => meta.uid.clone().unwrap_or_default(),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
        "spec.serviceAccountName" => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        "status.hostIP" | "status.hostIPs" => facts.host_ip.clone(),
        "status.podIP" => facts.pod_ip.clone(),
        "status.podIPs" => facts.pod_ips.join(","),
        _ => {
            if let Some(key) = subscript(path, "metadata.labels") {
                meta.labels
                    .as_ref()
                    .and_then(|m| m.get(key))
                    .cloned()
                    .unwrap_or_default()
            } else if let Some(key) = subscript(path, "metadata.annotations") {
                meta.annotations
                    .as_ref()
                    .and_then(|m| m.get(key))
                    .cloned()
                    .unwrap_or_default()
            } else {
                String::new()
            }
        }
    }
}

/// The value a `resourceFieldRef` names (`limits.memory`, `requests.cpu`, ...), divided by
/// `divisor` and rounded up, as upstream's `ExtractContainerResourceValue`. An unset limit
/// reads as the node's allocatable amount.
pub fn resource_value(
    container: &Container,
    resource: &str,
    divisor: Option<&Quantity>,
    node_cpu_millis: i64,
    node_memory_bytes: i64,
) -> Result<String, String> {
    let (requests, limits) = requests_and_limits(container.resources.as_ref());
    let (map, name) = match resource.split_once('.') {
        Some(("limits", name)) => (&limits, name),
        Some(("requests", name)) => (&requests, name),
        _ => return Err(format!("unsupported resource {resource:?}")),
    };
    if !["cpu", "memory", "ephemeral-storage"].contains(&name) {
        return Err(format!("unsupported resource {resource:?}"));
    }
    // In thousandths of the unit, so millicores and bytes share one path.
    let value = match map.get(name) {
        Some(q) => parse_milli(&q.0)?,
        None if resource.starts_with("limits.") && name == "cpu" => i128::from(node_cpu_millis),
        None if resource.starts_with("limits.") && name == "memory" => {
            i128::from(node_memory_bytes) * 1000
        }
        None => 0,
    };
    let divisor = match divisor {
        Some(q) => parse_milli(&q.0)?,
        None => 1000,
    };
    if divisor <= 0 {
        return Err(format!("divisor of {resource:?} must be positive"));
    }
    Ok(((value + divisor - 1) / divisor).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_paths() {
        assert!(supported("metadata.labels['x']").is_ok());
        assert!(supported("metadata.annotations['a.b/c']").is_ok());
        assert!(supported("status.podIPs").is_ok());
        assert!(supported("status.phase").is_err());
        assert!(supported("metadata.labels").is_err());
    }
}
