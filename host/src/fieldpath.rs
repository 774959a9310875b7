//! Field paths a pod may name (`fieldRef`, `resourceFieldRef`) and their values, as upstream's
//! `pkg/fieldpath` and `podFieldSelectorRuntimeValue`. A leaf shared by manifest validation,
//! the container environment and downward API volumes.

use crate::resources::{parse_milli, requests_and_limits, QuantityError};
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

/// Why a field path or resource reference cannot be resolved; manifest validation shows it
/// under the offending field, and the pod is refused before it runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldPathError {
    /// A `fieldRef` path wasmlet does not serve (e.g. `status.phase`).
    #[error("unsupported fieldRef path {path:?}")]
    UnsupportedPath {
        /// The path as written.
        path: String,
    },
    /// A `resourceFieldRef` resource other than `limits.`/`requests.` of cpu, memory or
    /// ephemeral-storage.
    #[error("unsupported resource {resource:?}")]
    UnsupportedResource {
        /// The resource as written.
        resource: String,
    },
    /// A negative `divisor`, which would flip the sign (zero means unset, as upstream).
    #[error("divisor of {resource:?} must be positive")]
    NonPositiveDivisor {
        /// The resource the divisor belongs to.
        resource: String,
    },
    /// The container's request or limit, or the divisor, is not a valid quantity.
    #[error(transparent)]
    Quantity(#[from] QuantityError),
}

/// Whether wasmlet can resolve `path`; the error says why not.
pub fn supported(path: &str) -> Result<(), FieldPathError> {
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
        _ => Err(FieldPathError::UnsupportedPath { path: path.into() }),
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
) -> Result<String, FieldPathError> {
    let (requests, limits) = requests_and_limits(container.resources.as_ref());
    let unsupported = || FieldPathError::UnsupportedResource {
        resource: resource.into(),
    };
    let (map, name) = match resource.split_once('.') {
        Some(("limits", name)) => (&limits, name),
        Some(("requests", name)) => (&requests, name),
        _ => return Err(unsupported()),
    };
    if !["cpu", "memory", "ephemeral-storage"].contains(&name) {
        return Err(unsupported());
    }
    // In thousandths of the unit, so millicores and bytes share one path.
    let value = match map.get(name) {
        Some(q) => parse_milli(&q.0)?,
        None if resource.starts_with("limits.") && name == "cpu" => i128::from(node_cpu_millis),
        None if resource.starts_with("limits.") && name == "memory" => {
            i128::from(node_memory_bytes).saturating_mul(1000)
        }
        None => 0,
    };
    // The API server defaults an unset divisor to "0", which upstream reads as 1.
    let divisor = match divisor.map(|q| parse_milli(&q.0)).transpose()? {
        None | Some(0) => 1000,
        Some(divisor) => divisor,
    };
    if divisor < 0 {
        return Err(FieldPathError::NonPositiveDivisor {
            resource: resource.into(),
        });
    }
    // Rounded up without `value + divisor - 1`, which overflows near i128::MAX.
    let rounded_up = value / divisor + i128::from(value % divisor > 0);
    Ok(rounded_up.to_string())
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

    #[test]
    fn errors_read_as_before() {
        assert_eq!(
            supported("status.phase").unwrap_err().to_string(),
            r#"unsupported fieldRef path "status.phase""#
        );
        let container = Container::default();
        let text = |resource: &str, divisor: Option<&str>| {
            let divisor = divisor.map(|d| Quantity(d.into()));
            resource_value(&container, resource, divisor.as_ref(), 1000, 1)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            text("limits.gpu", None),
            r#"unsupported resource "limits.gpu""#
        );
        assert_eq!(text("cpu", None), r#"unsupported resource "cpu""#);
        assert_eq!(
            text("limits.cpu", Some("-1")),
            r#"divisor of "limits.cpu" must be positive"#
        );
        assert_eq!(
            text("limits.cpu", Some("1x")),
            r#"quantity "1x" has unknown suffix "x""#
        );
    }

    #[test]
    fn the_largest_quantities_divide_without_overflow() {
        // 10^38 - 1 thousandths, divided by itself: `value + divisor - 1` would overflow.
        let largest = Quantity(format!("{}m", "9".repeat(38)));
        let container = Container {
            resources: Some(k8s_openapi::api::core::v1::ResourceRequirements {
                limits: Some([("memory".to_string(), largest.clone())].into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let value = resource_value(&container, "limits.memory", Some(&largest), 1000, 1);
        assert_eq!(value, Ok("1".to_string()));
        let seven = Quantity("7m".into());
        let value = resource_value(&container, "limits.memory", Some(&seven), 1000, 1);
        let max = 10i128.pow(38) - 1;
        assert_eq!(value, Ok((max / 7 + 1).to_string()));
        let value = resource_value(
            &Container::default(),
            "limits.memory",
            Some(&seven),
            1000,
            i64::MAX,
        );
        assert!(value.is_ok(), "{value:?}");
    }
}
