//! The cgroup values a container gets from its requests and limits, as upstream's
//! `kuberuntime_container_linux.go`: CPU shares and quota, the memory limit and the OOM score.

use crate::resources::{
    bytes, cpu_millis, milli_cpu_to_quota, milli_cpu_to_shares, requests_and_limits, QosClass,
    QuantityError, CPU_PERIOD_US,
};
use k8s_openapi::api::core::v1::Container;

/// The numbers CRI's `LinuxContainerResources` takes, derived from one container's spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinuxResources {
    pub cpu_period: i64,
    pub cpu_quota: i64,
    pub cpu_shares: i64,
    pub memory_limit_in_bytes: i64,
    pub oom_score_adj: i64,
}

/// Requests and limits to cgroup values: shares from the cpu request, quota from the cpu limit,
/// the memory limit as is, and the QoS-derived OOM score adjustment. Fails only on a request
/// or limit that is not a valid quantity.
pub fn linux_resources(
    container: &Container,
    qos: QosClass,
    node_memory_bytes: i64,
) -> Result<LinuxResources, QuantityError> {
    let (requests, limits) = requests_and_limits(container.resources.as_ref());
    let cpu_request = requests.get("cpu").map(cpu_millis).transpose()?;
    let cpu_limit = limits.get("cpu").map(cpu_millis).transpose()?;
    let memory_request = requests.get("memory").map(bytes).transpose()?.unwrap_or(0);
    let memory_limit = limits.get("memory").map(bytes).transpose()?.unwrap_or(0);
    let cpu_shares = milli_cpu_to_shares(cpu_request.unwrap_or(0));
    let cpu_quota = milli_cpu_to_quota(cpu_limit.unwrap_or(0));
    let oom_score_adj = match qos {
        QosClass::Guaranteed => -997,
        QosClass::BestEffort => 1000,
        QosClass::Burstable => {
            let adj = 1000 - memory_request.saturating_mul(1000) / node_memory_bytes.max(1);
            adj.clamp(2, 999)
        }
    };
    Ok(LinuxResources {
        cpu_period: if cpu_quota > 0 { CPU_PERIOD_US } else { 0 },
        cpu_quota,
        cpu_shares,
        memory_limit_in_bytes: memory_limit,
        oom_score_adj,
    })
}

impl LinuxResources {
    /// The values as CRI's `LinuxContainerResources`, for a create or an in-place resize.
    pub fn to_cri(self) -> crate::cri::api::LinuxContainerResources {
        crate::cri::api::LinuxContainerResources {
            cpu_period: self.cpu_period,
            cpu_quota: self.cpu_quota,
            cpu_shares: self.cpu_shares,
            memory_limit_in_bytes: self.memory_limit_in_bytes,
            oom_score_adj: self.oom_score_adj,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::qos::tests::container;

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

    #[test]
    fn the_largest_amounts_saturate_instead_of_wrapping() {
        let max = "9223372036854775807m";
        let c = container(
            &[("cpu", max), ("memory", "9223372036854775807")],
            &[("cpu", max)],
        );
        let r = linux_resources(&c, QosClass::Burstable, 1 << 30).unwrap();
        assert_eq!(r.cpu_shares, crate::resources::MAX_SHARES);
        assert!(r.cpu_quota >= 1000, "{}", r.cpu_quota);
        assert_eq!(r.oom_score_adj, 2);
    }
}
