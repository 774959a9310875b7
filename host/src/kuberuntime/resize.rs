//! In-place resize (KEP-1287, GA in 1.35): a running container whose spec resources changed
//! under the same pod gets them through CRI `UpdateContainerResources`, without a restart,
//! unless its `resizePolicy` says `RestartContainer` for a resource that changed. Resources are
//! left out of the container hash ([`super::actions::container_hash`]), so a resize is never
//! mistaken for a changed definition.
//!
//! The pod handed to the worker carries the resources allocated to it
//! ([`crate::allocation`]): a resize the node has not granted yet never reaches this module.
//! What each running container was given (at creation or by the last resize) is kept by
//! container ID in [`crate::resources::AppliedResources`]; the status reports it as
//! `resources`, and the allocated requests as `allocatedResources`. A container this process
//! did not create or resize (the node agent restarted) has nothing recorded and gets its
//! allocated values again, which is a no-op when nothing changed.

use super::sync::SyncOutcome;
use super::{RuntimeManager, SYNC_ERROR_RETRY};
use crate::events::{EventType, ObjectRef};
use crate::resources::spec_resources;
use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::BTreeMap;
use tracing::{info, warn};

/// The resources that take part in an in-place resize.
const RESIZABLE: [&str; 2] = ["cpu", "memory"];

impl RuntimeManager {
    /// Gives the running container `id` of `pod` the resources of its spec `container` in
    /// place; a failure (the runtime refused, for example a memory limit below what the
    /// container uses) is an event and is tried again on a later sync.
    pub(super) async fn resize_container(
        &self,
        pod: &Pod,
        container: &Container,
        id: &str,
        applied: Option<&ResourceRequirements>,
        outcome: &mut SyncOutcome,
    ) {
        let qos = crate::resources::pod_qos(pod);
        let values =
            super::linux_resources::linux_resources(container, qos, self.node.machine_memory_bytes);
        outcome.resizes += 1;
        let result = match values {
            Ok(values) => {
                let cgroup = format!("{}/{id}", qos.cgroup_parent(crate::podutil::uid(pod)));
                match memory_decrease_error(
                    &container.name,
                    values.memory_limit_in_bytes,
                    applied,
                    || crate::stats::cgroup::memory(&cgroup).map(|m| m.usage),
                ) {
                    Some(error) => Err(error),
                    None => self
                        .cri
                        .update_container_resources(id, values.to_cri())
                        .await
                        .map_err(|e| e.to_string()),
                }
            }
            Err(error) => Err(error.to_string()),
        };
        match result {
            Ok(()) => {
                info!(container = %container.name, id, "container resized in place");
                outcome
                    .applied
                    .push((id.to_string(), spec_resources(container)));
                outcome.touched.push(id.to_string());
            }
            Err(message) => {
                warn!(container = %container.name, id, %message, "resizing the container failed; retrying");
                self.events.record(
                    &ObjectRef::container(pod, &container.name),
                    EventType::Warning,
                    "ResizeError",
                    format!("Resize of container {} failed: {message}", container.name),
                );
                outcome.resize_errors.push(message);
                outcome.requeue = outcome.requeue.min(SYNC_ERROR_RETRY);
            }
        }
    }
}

/// Upstream's `validatePodResizeMemoryLimits` for one container: a memory limit that is
/// added or lowered must stay above what the container uses now (`usage`, read only then),
/// or the kernel would have to reclaim or kill to meet it. `Some` with the reason when not.
fn memory_decrease_error(
    container: &str,
    desired_limit: i64,
    applied: Option<&ResourceRequirements>,
    usage: impl FnOnce() -> Option<u64>,
) -> Option<String> {
    if desired_limit <= 0 {
        return None;
    }
    let current_limit = applied
        .and_then(|a| entry(&a.limits, "memory"))
        .and_then(|q| crate::resources::bytes(q).ok())
        .unwrap_or(0);
    if current_limit != 0 && desired_limit >= current_limit {
        return None;
    }
    let reason = match usage() {
        None => format!("missing container {container:?} memory usage"),
        Some(used) if used >= desired_limit as u64 => format!(
            "attempting to set container {container:?} memory limit ({desired_limit}) below current usage ({used})"
        ),
        Some(_) => return None,
    };
    Some(format!("cannot decrease memory limits: {reason}"))
}

/// What a running container's resources call for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resize {
    /// They are what it was given.
    None,
    /// New cgroup values, in place.
    Update,
    /// A restart: a resource whose `resizePolicy` is `RestartContainer` changed.
    Restart,
}

/// How `container` (its spec now) must be resized given what it was `applied`; nothing known
/// is an update to the spec's values.
pub fn decide(container: &Container, applied: Option<&ResourceRequirements>) -> Resize {
    let Some(applied) = applied else {
        return Resize::Update;
    };
    let wanted = spec_resources(container);
    if wanted == *applied {
        return Resize::None;
    }
    let changed = |name: &str| {
        entry(&wanted.requests, name) != entry(&applied.requests, name)
            || entry(&wanted.limits, name) != entry(&applied.limits, name)
    };
    let restart = RESIZABLE.into_iter().filter(|n| changed(n)).any(|name| {
        container
            .resize_policy
            .iter()
            .flatten()
            .any(|p| p.resource_name == *name && p.restart_policy == "RestartContainer")
    });
    if restart {
        Resize::Restart
    } else {
        Resize::Update
    }
}

/// The quantity of `name` in a requests or limits list.
fn entry<'a>(list: &'a Option<BTreeMap<String, Quantity>>, name: &str) -> Option<&'a Quantity> {
    list.as_ref().and_then(|m| m.get(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::AppliedResources;
    use k8s_openapi::api::core::v1::ContainerResizePolicy;

    fn container(cpu: &str, memory: &str, memory_policy: &str) -> Container {
        let list: BTreeMap<String, Quantity> = [
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(memory.into())),
        ]
        .into();
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: Some(list.clone()),
                limits: Some(list),
                ..Default::default()
            }),
            resize_policy: Some(vec![ContainerResizePolicy {
                resource_name: "memory".into(),
                restart_policy: memory_policy.into(),
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn a_resize_updates_in_place_unless_the_policy_of_a_changed_resource_restarts() {
        let before = spec_resources(&container("100m", "100Mi", "RestartContainer"));
        assert_eq!(
            decide(
                &container("100m", "100Mi", "RestartContainer"),
                Some(&before)
            ),
            Resize::None
        );
        assert_eq!(
            decide(
                &container("200m", "100Mi", "RestartContainer"),
                Some(&before)
            ),
            Resize::Update,
            "cpu has no policy: NotRequired"
        );
        assert_eq!(
            decide(
                &container("100m", "200Mi", "RestartContainer"),
                Some(&before)
            ),
            Resize::Restart
        );
        assert_eq!(
            decide(&container("100m", "200Mi", "NotRequired"), Some(&before)),
            Resize::Update
        );
        assert_eq!(
            decide(&container("100m", "100Mi", "NotRequired"), None),
            Resize::Update,
            "a container this process did not start gets its spec's values"
        );
    }

    #[test]
    fn a_memory_limit_lowered_below_usage_is_refused_before_the_runtime_is_asked() {
        let before = spec_resources(&container("100m", "100Mi", "NotRequired"));
        let mib = 1 << 20;
        let unused = || panic!("usage is read only for a lower or added limit");
        assert_eq!(
            memory_decrease_error("c", 200 * mib, Some(&before), unused),
            None
        );
        assert_eq!(memory_decrease_error("c", 0, Some(&before), unused), None);
        assert_eq!(
            memory_decrease_error("c", 50 * mib, Some(&before), || Some(10 * mib as u64)),
            None
        );
        let refused = memory_decrease_error("c", 10 * 1024, Some(&before), || Some(mib as u64));
        assert_eq!(
            refused.as_deref(),
            Some("cannot decrease memory limits: attempting to set container \"c\" memory limit (10240) below current usage (1048576)")
        );
        // A limit added where there was none counts as a decrease; no reading is an error.
        let missing = memory_decrease_error("c", 10 * mib, None, || None);
        assert!(missing.is_some_and(|m| m.contains("missing container \"c\" memory usage")));
    }

    #[test]
    fn applied_resources_follow_the_containers() {
        let mut applied = AppliedResources::default();
        let c = container("100m", "100Mi", "NotRequired");
        applied.record("id-1".into(), spec_resources(&c));
        applied.record("id-2".into(), spec_resources(&c));
        applied.retain(|id| id == "id-2");
        assert_eq!(applied.get("id-1"), None);
        assert_eq!(applied.get("id-2"), Some(&spec_resources(&c)));
    }
}
