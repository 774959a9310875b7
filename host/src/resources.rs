//! Resource quantities, QoS classes, and the Linux resources a container gets from its
//! requests and limits, computed as the upstream kubelet does
//! (`pkg/kubelet/kuberuntime/kuberuntime_container_linux.go`, `pkg/apis/core/v1/helper/qos`).

use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::BTreeMap;

/// Parses a Kubernetes quantity (`100m`, `64Mi`, `1.5G`, `1e3`) into thousandths of a unit,
/// so CPU comes out in millicores and memory in thousandths of bytes.
pub fn parse_milli(text: &str) -> Result<i128, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    if number.is_empty() {
        return Err(format!("quantity {text:?} has no number"));
    }
    let (mantissa_scale, exponent): (i128, i32) = match suffix {
        "" => (1, 0),
        "Ki" => (1 << 10, 0),
        "Mi" => (1 << 20, 0),
        "Gi" => (1 << 30, 0),
        "Ti" => (1 << 40, 0),
        "Pi" => (1 << 50, 0),
        "Ei" => (1 << 60, 0),
        "n" => (1, -9),
        "u" => (1, -6),
        "m" => (1, -3),
        "k" => (1, 3),
        "M" => (1, 6),
        "G" => (1, 9),
        "T" => (1, 12),
        "P" => (1, 15),
        "E" => (1, 18),
        s if s.starts_with(['e', 'E']) => (
            1,
            s[1..]
                .parse()
                .map_err(|_| format!("quantity {text:?} has an invalid exponent"))?,
        ),
        s => return Err(format!("quantity {text:?} has unknown suffix {s:?}")),
    };
    let (negative, digits) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number.trim_start_matches('+')),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .chars()
            .chain(fraction.chars())
            .all(|c| c.is_ascii_digit())
    {
        return Err(format!("quantity {text:?} has an invalid number"));
    }
    // value = (whole.fraction) * scale * 10^exponent * 1000, rounded up as Kubernetes rounds.
    let digits: String = format!("{whole}{fraction}");
    let mut value: i128 = digits
        .parse::<i128>()
        .map_err(|_| format!("quantity {text:?} is too large"))?
        .checked_mul(mantissa_scale)
        .ok_or_else(|| format!("quantity {text:?} is too large"))?;
    let mut power = exponent + 3 - fraction.len() as i32;
    while power > 0 {
        value = value
            .checked_mul(10)
            .ok_or_else(|| format!("quantity {text:?} is too large"))?;
        power -= 1;
    }
    while power < 0 {
        let rounded_up = value % 10 != 0;
        value = value / 10 + i128::from(rounded_up);
        power += 1;
    }
    Ok(if negative { -value } else { value })
}

/// CPU in millicores.
pub fn cpu_millis(quantity: &Quantity) -> Result<i64, String> {
    parse_milli(&quantity.0).map(|m| m as i64)
}

/// Memory (or storage) in bytes, rounded up.
pub fn bytes(quantity: &Quantity) -> Result<i64, String> {
    parse_milli(&quantity.0).map(|m| ((m + 999) / 1000) as i64)
}

/// The pod's QoS class, as `v1.PodQOSClass` strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosClass {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl QosClass {
    /// The API spelling used in `status.qosClass`.
    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }

    /// The pod cgroup's parent under the cgroupfs driver (`/kubepods/burstable/pod<uid>`).
    pub fn cgroup_parent(self, uid: &str) -> String {
        match self {
            QosClass::Guaranteed => format!("/kubepods/pod{uid}"),
            QosClass::Burstable => format!("/kubepods/burstable/pod{uid}"),
            QosClass::BestEffort => format!("/kubepods/besteffort/pod{uid}"),
        }
    }
}

fn effective(
    resources: Option<&ResourceRequirements>,
) -> (BTreeMap<String, Quantity>, BTreeMap<String, Quantity>) {
    let limits = resources.and_then(|r| r.limits.clone()).unwrap_or_default();
    let mut requests = resources
        .and_then(|r| r.requests.clone())
        .unwrap_or_default();
    // The API defaults a missing request to the limit.
    for (name, limit) in &limits {
        requests
            .entry(name.clone())
            .or_insert_with(|| limit.clone());
    }
    (requests, limits)
}

/// QoS as `GetPodQOS` computes it, over init and app containers, for cpu and memory only.
pub fn qos_class(spec: &PodSpec) -> QosClass {
    let mut any_set = false;
    let mut guaranteed = true;
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers);
    for container in containers {
        let (requests, limits) = effective(container.resources.as_ref());
        for resource in ["cpu", "memory"] {
            let request = requests
                .get(resource)
                .filter(|q| parse_milli(&q.0).is_ok_and(|v| v != 0));
            let limit = limits
                .get(resource)
                .filter(|q| parse_milli(&q.0).is_ok_and(|v| v != 0));
            any_set |= request.is_some() || limit.is_some();
            match (request, limit) {
                (Some(r), Some(l)) if parse_milli(&r.0) == parse_milli(&l.0) => {}
                _ => guaranteed = false,
            }
        }
    }
    match (any_set, guaranteed) {
        (false, _) => QosClass::BestEffort,
        (true, true) => QosClass::Guaranteed,
        (true, false) => QosClass::Burstable,
    }
}

/// The numbers CRI's `LinuxContainerResources` takes, derived from one container's spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinuxResources {
    pub cpu_period: i64,
    pub cpu_quota: i64,
    pub cpu_shares: i64,
    pub memory_limit_in_bytes: i64,
    pub oom_score_adj: i64,
}

const CPU_PERIOD: i64 = 100_000;
const MIN_SHARES: i64 = 2;
const MIN_QUOTA: i64 = 1000;

/// Requests and limits to cgroup values: shares from the cpu request, quota from the cpu limit,
/// the memory limit as is, and the QoS-derived OOM score adjustment.
pub fn linux_resources(
    container: &Container,
    qos: QosClass,
    node_memory_bytes: i64,
) -> Result<LinuxResources, String> {
    let (requests, limits) = effective(container.resources.as_ref());
    let cpu_request = requests.get("cpu").map(cpu_millis).transpose()?;
    let cpu_limit = limits.get("cpu").map(cpu_millis).transpose()?;
    let memory_request = requests.get("memory").map(bytes).transpose()?.unwrap_or(0);
    let memory_limit = limits.get("memory").map(bytes).transpose()?.unwrap_or(0);
    let cpu_shares = match cpu_request {
        Some(milli) if milli > 0 => (milli * 1024 / 1000).max(MIN_SHARES),
        _ => MIN_SHARES,
    };
    let cpu_quota = match cpu_limit {
        Some(milli) if milli > 0 => (milli * CPU_PERIOD / 1000).max(MIN_QUOTA),
        _ => 0,
    };
    let oom_score_adj = match qos {
        QosClass::Guaranteed => -997,
        QosClass::BestEffort => 1000,
        QosClass::Burstable => {
            let adj = 1000 - 1000 * memory_request / node_memory_bytes.max(1);
            adj.clamp(2, 999)
        }
    };
    Ok(LinuxResources {
        cpu_period: if cpu_quota > 0 { CPU_PERIOD } else { 0 },
        cpu_quota,
        cpu_shares,
        memory_limit_in_bytes: memory_limit,
        oom_score_adj,
    })
}

/// The machine's memory in bytes (`MemTotal`), used for the Burstable OOM score.
pub fn machine_memory_bytes() -> i64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<i64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(1 << 30)
}

/// The value a `resourceFieldRef` names (`limits.memory`, `requests.cpu`, ...), divided by
/// `divisor` and rounded up, as upstream's `ExtractContainerResourceValue`. An unset limit
/// reads as the node's allocatable amount.
pub fn resource_field_value(
    container: &Container,
    resource: &str,
    divisor: Option<&Quantity>,
    node_cpu_millis: i64,
    node_memory_bytes: i64,
) -> Result<String, String> {
    let (requests, limits) = effective(container.resources.as_ref());
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

/// The machine's CPUs in millicores (what an unset CPU limit reads as).
pub fn machine_cpu_millis() -> i64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as i64) * 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quantities_like_kubernetes() {
        assert_eq!(parse_milli("100m"), Ok(100));
        assert_eq!(parse_milli("1"), Ok(1000));
        assert_eq!(parse_milli("1.5"), Ok(1500));
        assert_eq!(parse_milli("64Mi"), Ok(64 * 1024 * 1024 * 1000));
        assert_eq!(parse_milli("1G"), Ok(1_000_000_000_000));
        assert_eq!(parse_milli("1e3"), Ok(1_000_000));
        assert_eq!(parse_milli("1n"), Ok(1), "rounds up");
        assert!(parse_milli("12x").is_err());
        assert!(parse_milli("Mi").is_err());
        assert_eq!(bytes(&Quantity("16Mi".into())), Ok(16 << 20));
    }

    fn container(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        let map = |pairs: &[(&str, &str)]| {
            (!pairs.is_empty()).then(|| {
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                    .collect()
            })
        };
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: map(requests),
                limits: map(limits),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn qos_classes() {
        let spec = |c: Container| PodSpec {
            containers: vec![c],
            ..Default::default()
        };
        assert_eq!(qos_class(&spec(container(&[], &[]))), QosClass::BestEffort);
        let limits_only = container(&[], &[("cpu", "500m"), ("memory", "64Mi")]);
        assert_eq!(qos_class(&spec(limits_only)), QosClass::Guaranteed);
        let partial = container(&[("memory", "32Mi")], &[("memory", "64Mi")]);
        assert_eq!(qos_class(&spec(partial)), QosClass::Burstable);
    }

    #[test]
    fn linux_resources_from_requests_and_limits() {
        let c = container(
            &[("cpu", "250m"), ("memory", "32Mi")],
            &[("cpu", "500m"), ("memory", "64Mi")],
        );
        let r = linux_resources(&c, QosClass::Burstable, 1 << 30).unwrap();
        assert_eq!(r.cpu_shares, 256);
        assert_eq!(r.cpu_quota, 50_000);
        assert_eq!(r.cpu_period, 100_000);
        assert_eq!(r.memory_limit_in_bytes, 64 << 20);
        assert_eq!(r.oom_score_adj, 969);
        let none = linux_resources(&container(&[], &[]), QosClass::BestEffort, 1 << 30).unwrap();
        assert_eq!(
            (none.cpu_shares, none.cpu_quota, none.oom_score_adj),
            (2, 0, 1000)
        );
    }
}
