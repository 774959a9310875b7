//! In-place resize (KEP-1287, GA in 1.35): a running container whose spec resources changed
//! under the same pod gets them through CRI `UpdateContainerResources`, without a restart,
//! unless its `resizePolicy` says `RestartContainer` for a resource that changed. Resources are
//! left out of the container hash ([`super::actions::container_hash`]), so a resize is never
//! mistaken for a changed definition.
//!
//! What each running container was given (at creation or by the last resize) is kept by
//! container ID in [`AppliedResources`]; the status reports it as `resources`, and the spec's
//! requests as `allocatedResources`. A container this process did not create or resize (the
//! node agent restarted) has nothing recorded and gets its spec's values again, which is a
//! no-op when nothing changed.

use super::sync::SyncOutcome;
use super::{RuntimeManager, SYNC_ERROR_RETRY};
use crate::events::{EventType, ObjectRef};
use crate::resources::spec_resources;
use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::{BTreeMap, HashMap};
use tracing::{info, warn};

/// The resources that take part in an in-place resize.
const RESIZABLE: [&str; 2] = ["cpu", "memory"];

/// What a running container was given, by container ID.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppliedResources(HashMap<String, ResourceRequirements>);

impl AppliedResources {
    /// Container ID -> what it was given.
    pub fn by_id(&self) -> &HashMap<String, ResourceRequirements> {
        &self.0
    }

    /// What the container `id` was given, if this process knows.
    pub fn get(&self, id: &str) -> Option<&ResourceRequirements> {
        self.0.get(id)
    }

    /// Records that the container `id` now runs with `resources`.
    pub fn record(&mut self, id: String, resources: ResourceRequirements) {
        self.0.insert(id, resources);
    }

    /// Forgets containers the runtime no longer runs.
    pub fn retain(&mut self, live: impl Fn(&str) -> bool) {
        self.0.retain(|id, _| live(id));
    }
}

impl RuntimeManager {
    /// Gives the running container `id` of `pod` the resources of its spec `container` in
    /// place; a failure (the runtime refused, for example a memory limit below what the
    /// container uses) is an event and is tried again on a later sync.
    pub(super) async fn resize_container(
        &self,
        pod: &Pod,
        container: &Container,
        id: &str,
        outcome: &mut SyncOutcome,
    ) {
        let qos = crate::resources::pod_qos(pod);
        let values =
            super::linux_resources::linux_resources(container, qos, self.node.machine_memory_bytes);
        let result = match values {
            Ok(values) => self
                .cri
                .update_container_resources(id, values.to_cri())
                .await
                .map_err(|e| e.to_string()),
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
                outcome.requeue = outcome.requeue.min(SYNC_ERROR_RETRY);
            }
        }
    }
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
