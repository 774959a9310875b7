//! The pod cgroup's own limits from the pod's spec (upstream's `ResourceConfigForPod`), and
//! where they are applied: before the pod's sandbox runs, and around an in-place resize,
//! grown before the containers get their new resources and shrunk after, so that the pod
//! never holds less than its containers.

use crate::cgroups::{self, PodLimits};
use crate::resources::{
    bytes, cpu_millis, milli_cpu_to_quota, milli_cpu_to_shares, pod_qos, QosClass, QuantityError,
    MIN_SHARES,
};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::BTreeMap;

/// The pod cgroup's limits: CPU shares from the pod's CPU request, for a Guaranteed pod the
/// CPU quota and memory limit of its limits, for a Burstable pod each of those only when every
/// container declares it (or the pod-level resources do), for a BestEffort pod the fewest
/// shares and nothing else.
pub fn pod_cgroup_limits(pod: &Pod) -> PodLimits {
    let qos = pod_qos(pod);
    let Some(spec) = pod.spec.as_ref().filter(|_| qos != QosClass::BestEffort) else {
        return PodLimits {
            cpu_shares: MIN_SHARES,
            cpu_quota_us: None,
            memory_bytes: None,
        };
    };
    let (cpu_request, _) = crate::admission::cpu_and_memory_request(pod);
    let cpu_shares = milli_cpu_to_shares(clamp(cpu_request));
    let cpu_quota_us = pod_limit(spec, "cpu", cpu_millis)
        .map(milli_cpu_to_quota)
        .filter(|quota| *quota > 0);
    let memory_bytes = pod_limit(spec, "memory", bytes);
    PodLimits {
        cpu_shares,
        cpu_quota_us,
        memory_bytes,
    }
}

fn clamp(value: i128) -> i64 {
    i64::try_from(value.max(0)).unwrap_or(i64::MAX)
}

type Read = fn(&Quantity) -> Result<i64, QuantityError>;

/// The amount of `resource` in `list` (a container's or the pod's limits, the overhead); 0
/// when it has none (or an unreadable one, which the API server would have refused).
fn amount(list: Option<&BTreeMap<String, Quantity>>, resource: &str, read: Read) -> i64 {
    list.and_then(|l| l.get(resource))
        .and_then(|q| read(q).ok())
        .unwrap_or(0)
        .max(0)
}

/// One container's limit of `resource`; 0 when it sets none.
fn limit_of(container: &Container, resource: &str, read: Read) -> i64 {
    let limits = container.resources.as_ref().and_then(|r| r.limits.as_ref());
    amount(limits, resource, read)
}

/// The pod's limit of `resource` as upstream's `PodLimits`: the app containers' sum with
/// the sidecars', or the largest init container beside the sidecars started before it if
/// larger; the pod-level limit instead where set; plus the overhead. `None` when some
/// container sets no limit of it (upstream's `ContainerFn` check, which sees an init
/// container's limits together with the sidecars before it) and the pod level sets none.
fn pod_limit(spec: &PodSpec, resource: &str, read: Read) -> Option<i64> {
    let mut declared = true;
    let mut total = 0i64;
    for container in &spec.containers {
        let own = limit_of(container, resource, read);
        declared &= own > 0;
        total = total.saturating_add(own);
    }
    let (mut sidecars, mut init) = (0i64, 0i64);
    for container in spec.init_containers.iter().flatten() {
        let own = limit_of(container, resource, read);
        let running = if crate::podutil::is_sidecar(container) {
            total = total.saturating_add(own);
            sidecars = sidecars.saturating_add(own);
            sidecars
        } else {
            own.saturating_add(sidecars)
        };
        declared &= running > 0;
        init = init.max(running);
    }
    total = total.max(init);
    let pod_level = amount(
        spec.resources.as_ref().and_then(|r| r.limits.as_ref()),
        resource,
        read,
    );
    if pod_level > 0 {
        declared = true;
        total = pod_level;
    }
    let overhead = amount(spec.overhead.as_ref(), resource, read);
    (declared && total > 0).then(|| total.saturating_add(overhead))
}

/// Creates the pod cgroup with the pod's limits, as upstream's pod container manager does
/// before the pod's sandbox runs.
pub fn set_pod_cgroup(pod: &Pod) -> std::io::Result<()> {
    let parent = pod_cgroup_parent(pod);
    let limits = pod_cgroup_limits(pod);
    metrics().cgroup_operation("create", || cgroups::set_pod_limits(&parent, &limits))
}

/// The Burstable pods' CPU requests summed, in millicores: what upstream's QoS container
/// manager gives `kubepods/burstable`.
pub fn burstable_cpu_millis<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> i64 {
    pods.into_iter()
        .filter(|pod| pod_qos(pod) == QosClass::Burstable)
        .map(|pod| clamp(crate::admission::cpu_and_memory_request(pod).0))
        .fold(0, i64::saturating_add)
}

/// Gives the QoS-level cgroups their shares for `burstable_cpu_millis`, the active pods'
/// [`burstable_cpu_millis`] (upstream's `UpdateQOSCgroups`).
pub fn set_qos_cgroups(burstable_cpu_millis: i64) -> std::io::Result<()> {
    metrics().cgroup_operation("update", || cgroups::set_qos_shares(burstable_cpu_millis))
}

/// The pod's cgroup (`/kubepods/<qos>/pod<uid>`).
pub fn pod_cgroup_parent(pod: &Pod) -> String {
    pod_qos(pod).cgroup_parent(crate::podutil::uid(pod))
}

fn metrics() -> &'static crate::metrics::kubelet::KubeletMetrics {
    crate::metrics::kubelet::kubelet()
}

/// Why a pod cgroup's resize was refused or failed; its text is the resize condition's
/// message.
#[derive(Debug, thiserror::Error)]
pub enum PodCgroupResizeError {
    /// Upstream's `validateMemoryResizeAction`, pod part: a limit below what the pod uses,
    /// or no reading of its usage.
    #[error("cannot decrease memory limits: {0}")]
    MemoryBelowUsage(String),
    /// The cgroup files could not be written.
    #[error("resizing the pod cgroup: {0}")]
    Write(#[from] std::io::Error),
}

/// A pod cgroup through an in-place resize: [`PodCgroupResize::begin`] before the
/// containers are resized, [`PodCgroupResize::finish`] after.
pub struct PodCgroupResize {
    parent: String,
    target: PodLimits,
}

impl PodCgroupResize {
    /// Grows the pod cgroup to hold both its current limits and those the spec now asks for.
    /// Refuses a pod memory limit below what the pod uses, with upstream's message, before any
    /// container is touched.
    pub fn begin(pod: &Pod) -> Result<Self, PodCgroupResizeError> {
        let parent = pod_cgroup_parent(pod);
        let target = pod_cgroup_limits(pod);
        let resize = Self { parent, target };
        let Some(current) = cgroups::pod_limits(&resize.parent) else {
            return Ok(resize);
        };
        let shrinking = |limit: &i64| current.memory_bytes.is_none_or(|now| *limit < now);
        if let Some(limit) = target.memory_bytes.filter(shrinking) {
            // Upstream's validateMemoryResizeAction, pod part.
            let problem = match crate::stats::cgroup::memory(&resize.parent).map(|m| m.usage) {
                None => Some("missing pod memory usage".to_string()),
                Some(used) if used >= limit.max(0) as u64 => Some(format!(
                    "attempting to set pod memory limit ({limit}) below current usage ({used})"
                )),
                Some(_) => None,
            };
            if let Some(problem) = problem {
                return Err(PodCgroupResizeError::MemoryBelowUsage(problem));
            }
        }
        let grown = target.at_least(&current);
        metrics().cgroup_operation("update", || cgroups::set_pod_limits(&resize.parent, &grown))?;
        Ok(resize)
    }

    /// Gives the pod cgroup exactly the limits the spec asks for.
    pub fn finish(self) -> Result<(), PodCgroupResizeError> {
        metrics().cgroup_operation("update", || {
            cgroups::set_pod_limits(&self.parent, &self.target)
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
