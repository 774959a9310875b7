//! What the node keeps from pods: `systemReserved`, `kubeReserved` and `reservedSystemCPUs`,
//! taken off capacity for allocatable (with the hard eviction thresholds), and
//! `enforceNodeAllocatable`, which limits the `kubepods` cgroup to capacity minus the
//! reservations, as upstream's node allocatable (`pkg/kubelet/cm/node_container_manager_linux.go`).

use super::KubeletConfiguration;
use crate::resources::{bytes, cpu_millis};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::BTreeMap;

/// The resources a reservation may name.
const RESOURCES: [&str; 4] = ["cpu", "memory", "ephemeral-storage", "pid"];
/// What `enforceNodeAllocatable` may list.
const ENFORCEABLE: [&str; 4] = ["pods", "system-reserved", "kube-reserved", "none"];

/// The sum of the reservations, in the units allocatable is computed in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reserved {
    /// Millicores (the CPUs of `reservedSystemCPUs` when set).
    pub cpu_millis: i64,
    /// Bytes of memory.
    pub memory_bytes: i64,
    /// Bytes of the node filesystem.
    pub ephemeral_storage_bytes: i64,
    /// Process IDs.
    pub pids: i64,
}

/// The reservations of `kubelet`, or the field that is wrong and why.
pub fn reserved(kubelet: &KubeletConfiguration) -> Result<Reserved, (String, String)> {
    let mut total = Reserved::default();
    for (field, list) in [
        ("systemReserved", &kubelet.system_reserved),
        ("kubeReserved", &kubelet.kube_reserved),
    ] {
        add(&mut total, field, list)?;
    }
    if !kubelet.reserved_system_cpus.trim().is_empty() {
        let count = cpu_count(&kubelet.reserved_system_cpus)
            .map_err(|why| ("reservedSystemCPUs".to_string(), why.to_string()))?;
        total.cpu_millis = count.saturating_mul(1000);
    }
    Ok(total)
}

/// Whether the `kubepods` cgroup is limited to capacity minus the reservations.
pub fn enforces_pods(kubelet: &KubeletConfiguration) -> bool {
    kubelet.enforce_node_allocatable.iter().any(|v| v == "pods")
}

/// Checks `enforceNodeAllocatable`: known values, `none` alone, and no enforcement that needs
/// a cgroup of its own for the system or the node agent (`systemReservedCgroup`,
/// `kubeReservedCgroup`), which wasmlet does not manage.
pub fn validate(kubelet: &KubeletConfiguration) -> Result<(), (String, String)> {
    reserved(kubelet)?;
    let list = &kubelet.enforce_node_allocatable;
    let field = "enforceNodeAllocatable".to_string();
    for value in list {
        if !ENFORCEABLE.contains(&value.as_str()) {
            return Err((
                field,
                format!("unknown value {value:?}; one of {}", ENFORCEABLE.join(", ")),
            ));
        }
        if value == "system-reserved" || value == "kube-reserved" {
            return Err((
                field,
                format!("{value:?} needs a cgroup of its own ({value}Cgroup), which wasmlet does not manage; use [pods]"),
            ));
        }
    }
    if list.len() > 1 && list.iter().any(|v| v == "none") {
        return Err((field, "\"none\" cannot be listed with other values".into()));
    }
    Ok(())
}

fn add(
    total: &mut Reserved,
    field: &str,
    list: &BTreeMap<String, String>,
) -> Result<(), (String, String)> {
    for (name, value) in list {
        let path = format!("{field}.{name}");
        let quantity = Quantity(value.clone());
        let amount = match name.as_str() {
            "cpu" => cpu_millis(&quantity),
            "memory" | "ephemeral-storage" => bytes(&quantity),
            "pid" => value
                .parse::<i64>()
                .map_err(|_| crate::resources::QuantityError::NoNumber {
                    text: value.clone(),
                }),
            _ => {
                return Err((
                    path,
                    format!("unknown resource; one of {}", RESOURCES.join(", ")),
                ))
            }
        }
        .map_err(|error| (path.clone(), error.to_string()))?;
        if amount < 0 {
            return Err((path, "must not be negative".into()));
        }
        let slot = match name.as_str() {
            "cpu" => &mut total.cpu_millis,
            "memory" => &mut total.memory_bytes,
            "ephemeral-storage" => &mut total.ephemeral_storage_bytes,
            _ => &mut total.pids,
        };
        *slot = slot.saturating_add(amount);
    }
    Ok(())
}

/// A part of a cpuset list (`reservedSystemCPUs`) that is not a CPU number or range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{part:?} is not a CPU number or range (such as 0-1,4)")]
struct CpuListError {
    /// The part between commas.
    part: String,
    /// Why a bound is not a number; `None` for a range that ends before it starts.
    #[source]
    source: Option<std::num::ParseIntError>,
}

/// How many CPUs a Linux cpuset list (`0-1,4`) names.
fn cpu_count(list: &str) -> Result<i64, CpuListError> {
    let mut count = 0i64;
    for part in list.split(',').map(str::trim) {
        let bad = |source| CpuListError {
            part: part.to_string(),
            source,
        };
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let first: i64 = first.parse().map_err(|e| bad(Some(e)))?;
        let last: i64 = last.parse().map_err(|e| bad(Some(e)))?;
        if first < 0 || last < first {
            return Err(bad(None));
        }
        count = count.saturating_add(last - first + 1);
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(system: &[(&str, &str)], kube: &[(&str, &str)], cpus: &str) -> KubeletConfiguration {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        KubeletConfiguration {
            system_reserved: map(system),
            kube_reserved: map(kube),
            reserved_system_cpus: cpus.into(),
            ..Default::default()
        }
    }

    #[test]
    fn reservations_add_up_and_reserved_cpus_replace_the_cpu_of_both() {
        let both = config(
            &[("cpu", "500m"), ("memory", "1Gi")],
            &[("cpu", "250m"), ("memory", "512Mi"), ("pid", "100")],
            "",
        );
        assert_eq!(
            reserved(&both),
            Ok(Reserved {
                cpu_millis: 750,
                memory_bytes: 1536 * 1024 * 1024,
                ephemeral_storage_bytes: 0,
                pids: 100,
            })
        );
        let cpus = config(&[("cpu", "500m")], &[], "0-1,3");
        assert_eq!(reserved(&cpus).map(|r| r.cpu_millis), Ok(3000));
    }

    #[test]
    fn bad_reservations_name_their_field() {
        let cases = [
            (config(&[("gpu", "1")], &[], ""), "systemReserved.gpu"),
            (
                config(&[], &[("memory", "lots")], ""),
                "kubeReserved.memory",
            ),
            (config(&[("cpu", "-1")], &[], ""), "systemReserved.cpu"),
            (config(&[], &[], "2-1"), "reservedSystemCPUs"),
        ];
        for (config, field) in cases {
            assert_eq!(reserved(&config).err().map(|e| e.0), Some(field.into()));
        }
        let mut enforce = KubeletConfiguration {
            enforce_node_allocatable: vec!["pods".into(), "none".into()],
            ..Default::default()
        };
        assert!(validate(&enforce).is_err());
        enforce.enforce_node_allocatable = vec!["system-reserved".into()];
        let refused = validate(&enforce).err().map(|e| e.1).unwrap_or_default();
        assert!(refused.contains("does not manage"), "{refused}");
        enforce.enforce_node_allocatable = vec!["pods".into()];
        assert_eq!(validate(&enforce), Ok(()));
        assert!(enforces_pods(&enforce));
    }
}
