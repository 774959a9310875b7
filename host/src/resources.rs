//! Resource quantities and the QoS class a pod's requests and limits give it, as the API
//! computes them (`apimachinery/pkg/api/resource`, `pkg/apis/core/v1/helper/qos`). A leaf:
//! everything that reads requests and limits (runtime configs, eviction, admission, the
//! downward API) depends on it, and it depends on nothing of wasmlet's.

mod applied;
mod pending;
pub(crate) mod qos;
mod quantity;

pub use applied::AppliedResources;
pub use pending::{PendingReason, PendingResize};
pub use qos::{pod_qos, qos_class, QosClass};
pub use quantity::{bytes, cpu_millis, parse_milli, QuantityError};

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::BTreeMap;

/// The smallest cpu.shares, for a container or cgroup without a CPU request.
pub const MIN_SHARES: i64 = 2;
/// The largest cpu.shares, as upstream's `MilliCPUToShares` caps it.
pub const MAX_SHARES: i64 = 262_144;

/// CPU shares for `millis` of CPU, as upstream's `MilliCPUToShares`: 1024 a core, within
/// [`MIN_SHARES`] and [`MAX_SHARES`].
pub fn milli_cpu_to_shares(millis: i64) -> i64 {
    (millis.saturating_mul(1024) / 1000).clamp(MIN_SHARES, MAX_SHARES)
}

/// The CFS period a quota is counted in (upstream's default `cpuCFSQuotaPeriod`, 100 ms).
pub const CPU_PERIOD_US: i64 = 100_000;

/// The CFS quota for `millis` of CPU in a [`CPU_PERIOD_US`] period, as upstream's
/// `MilliCPUToQuota`: 0 (no quota) for no limit, else at least 1 ms.
pub fn milli_cpu_to_quota(millis: i64) -> i64 {
    if millis <= 0 {
        return 0;
    }
    (millis.saturating_mul(CPU_PERIOD_US) / 1000).max(MIN_QUOTA_US)
}

/// The smallest CFS quota upstream gives (`MinQuotaPeriod`, 1 ms).
const MIN_QUOTA_US: i64 = 1000;

/// A container's requests and limits, with a missing request defaulted to its limit as the
/// API server defaults it.
pub fn requests_and_limits(
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

/// A container's requests and limits, empty ones left out, as the status reports them and an
/// in-place resize compares them.
pub fn spec_resources(container: &k8s_openapi::api::core::v1::Container) -> ResourceRequirements {
    let mut resources = container.resources.clone().unwrap_or_default();
    resources.requests = resources.requests.filter(|r| !r.is_empty());
    resources.limits = resources.limits.filter(|l| !l.is_empty());
    resources
}
