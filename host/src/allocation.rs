//! Resource allocation, as upstream's allocation manager: what each admitted pod's resizable
//! containers (app containers and sidecars) were granted, kept apart from the spec. A pod is
//! admitted with its spec's resources. An in-place resize changes the spec at once and the
//! allocation only once the node holds it beside the other pods' allocations; until then it
//! is pending, `Infeasible` when the node could never hold it, `Deferred` when the other pods
//! leave no room. Deferred resizes are tried again, in upstream's order, whenever a pod
//! leaves, another resize is asked for, or housekeeping runs. The pod worker runs the pod as
//! allocated, so a pending resize is never actuated.

#[cfg(test)]
mod tests;

use crate::admission::{cpu_and_memory_request, Rejection};
use crate::resources::{pod_qos, spec_resources, QosClass};
pub use crate::resources::{PendingReason, PendingResize};
use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// What the node can allocate to pods, in millicores and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocatable {
    /// CPU, millicores.
    pub cpu_millis: i64,
    /// Memory, bytes.
    pub memory_bytes: i64,
}

/// What a retry decided for one pod, for its worker and its events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The spec's resources are now allocated: the worker actuates them.
    Granted,
    /// The resize waits, for a reason new or changed since the last attempt.
    Pending(PendingResize),
    /// The spec no longer asks for anything new (a resize reverted): the condition goes.
    Cleared,
}

/// The pods' allocations and their pending resizes.
#[derive(Debug, Default)]
pub struct Allocations {
    /// By pod UID: each resizable container's granted resources, by name.
    granted: HashMap<String, BTreeMap<String, ResourceRequirements>>,
    /// By pod UID: the pending condition and since when its reason holds.
    pending: HashMap<String, (PendingResize, Instant)>,
    /// Pods whose resize is tried again (asked for, or deferred).
    queue: Vec<String>,
}

impl Allocations {
    /// Records that `pod` was admitted with its spec's resources.
    pub fn admit(&mut self, pod: &Pod) {
        let uid = crate::podutil::uid(pod).to_string();
        self.granted.insert(uid.clone(), allocation_of(pod));
        self.pending.remove(&uid);
        self.queue.retain(|queued| *queued != uid);
    }

    /// Forgets the pods `keep` refuses (their workers have finished).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.granted.retain(|uid, _| keep(uid));
        self.pending.retain(|uid, _| keep(uid));
        self.queue.retain(|uid| keep(uid));
    }

    /// True when `pod`'s spec asks for resources other than those allocated to it.
    pub fn differs(&self, pod: &Pod) -> bool {
        let Some(granted) = self.granted.get(crate::podutil::uid(pod)) else {
            return false;
        };
        resizable(pod).any(|c| {
            granted
                .get(&c.name)
                .is_some_and(|g| *g != spec_resources(c))
        })
    }

    /// `pod` with its resizable containers' resources replaced by what is allocated to them:
    /// what the worker runs and the status reports as `allocatedResources`.
    pub fn allocated(&self, pod: &Pod) -> Pod {
        let mut pod = pod.clone();
        let Some(granted) = self.granted.get(crate::podutil::uid(&pod)) else {
            return pod;
        };
        let Some(spec) = pod.spec.as_mut() else {
            return pod;
        };
        let init = spec.init_containers.iter_mut().flatten();
        for container in spec.containers.iter_mut().chain(init) {
            if let Some(resources) = granted.get(&container.name) {
                if *resources != spec_resources(container) {
                    container.resources = Some(resources.clone());
                }
            }
        }
        pod
    }

    /// The resize of pod `uid` that waits, if one does.
    pub fn pending(&self, uid: &str) -> Option<&PendingResize> {
        self.pending.get(uid).map(|(pending, _)| pending)
    }

    /// True when resizes wait to be tried again.
    pub fn has_queued(&self) -> bool {
        !self.queue.is_empty()
    }

    /// The source changed `pod`: a resize it asks for is queued, and `Cleared` is returned
    /// when it no longer asks for one that was pending.
    pub fn pod_updated(&mut self, pod: &Pod) -> Option<Outcome> {
        let uid = crate::podutil::uid(pod);
        if self.differs(pod) {
            if !self.queue.iter().any(|queued| queued == uid) {
                self.queue.push(uid.to_string());
            }
            return None;
        }
        self.queue.retain(|queued| queued != uid);
        self.pending.remove(uid).map(|_| Outcome::Cleared)
    }

    /// Tries the queued resizes again in upstream's order (those that do not grow requests,
    /// then higher priority, then Guaranteed, then the longest pending); each one granted
    /// counts for the next. `desired` gives a pod's spec as its source has it (`None`: it is
    /// gone or stopping); `active` are the pods admitted and running, whatever their spec's
    /// resources; `fit` is the admission chain, asked with a pod and the others as allocated.
    /// Returns what changed, by pod UID.
    pub fn retry(
        &mut self,
        desired: impl Fn(&str) -> Option<Pod>,
        active: &[Pod],
        allocatable: Allocatable,
        fit: impl Fn(&Pod, &[Pod]) -> Result<(), Rejection>,
    ) -> Vec<(String, Outcome)> {
        let mut queued: Vec<Pod> = std::mem::take(&mut self.queue)
            .iter()
            .filter_map(|uid| desired(uid))
            .collect();
        queued.sort_by_key(|pod| {
            let since = self.pending.get(crate::podutil::uid(pod)).map(|(_, s)| *s);
            (
                self.grows_requests(pod),
                Reverse(pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)),
                pod_qos(pod) != QosClass::Guaranteed,
                since.is_none(),
                since,
            )
        });
        let mut changes = Vec::new();
        for pod in queued {
            let uid = crate::podutil::uid(&pod).to_string();
            if !self.differs(&pod) {
                if self.pending.remove(&uid).is_some() {
                    changes.push((uid, Outcome::Cleared));
                }
                continue;
            }
            let others: Vec<Pod> = active
                .iter()
                .filter(|other| crate::podutil::uid(other) != uid)
                .map(|other| self.allocated(other))
                .collect();
            match refusal(&pod, &others, allocatable, &fit) {
                None => {
                    self.granted.insert(uid.clone(), allocation_of(&pod));
                    self.pending.remove(&uid);
                    changes.push((uid, Outcome::Granted));
                }
                Some(pending) => {
                    if pending.reason == PendingReason::Deferred {
                        self.queue.push(uid.clone());
                    }
                    let unchanged = self.pending.get(&uid).is_some_and(|(p, _)| *p == pending);
                    if !unchanged {
                        let since = match self.pending.get(&uid) {
                            Some((p, since)) if p.reason == pending.reason => *since,
                            _ => Instant::now(),
                        };
                        self.pending.insert(uid.clone(), (pending.clone(), since));
                        changes.push((uid, Outcome::Pending(pending)));
                    }
                }
            }
        }
        changes
    }

    /// Upstream's `isResizeIncreasingRequests`: the spec asks for more CPU or memory than
    /// the pod holds.
    fn grows_requests(&self, pod: &Pod) -> bool {
        let (cpu, memory) = cpu_and_memory_request(pod);
        let (held_cpu, held_memory) = cpu_and_memory_request(&self.allocated(pod));
        cpu > held_cpu || memory > held_memory
    }
}

/// Upstream's `canResizePod` (after `IsInPlacePodVerticalScalingAllowed`): why `pod`'s spec
/// cannot be allocated now beside `others`, or `None` when it can.
fn refusal(
    pod: &Pod,
    others: &[Pod],
    allocatable: Allocatable,
    fit: impl Fn(&Pod, &[Pod]) -> Result<(), Rejection>,
) -> Option<PendingResize> {
    let infeasible = |message: String| {
        Some(PendingResize {
            reason: PendingReason::Infeasible,
            message,
        })
    };
    if crate::podutil::is_static(pod) {
        return infeasible("In-place resize of static-pods is not supported".into());
    }
    let (cpu, memory) = cpu_and_memory_request(pod);
    let (cpu_capacity, memory_capacity) = (
        i128::from(allocatable.cpu_millis),
        i128::from(allocatable.memory_bytes),
    );
    if memory > memory_capacity {
        return infeasible(format!(
            "Node didn't have enough capacity: memory, requested: {memory}, capacity: {memory_capacity}"
        ));
    }
    if cpu > cpu_capacity {
        return infeasible(format!(
            "Node didn't have enough capacity: cpu, requested: {cpu}, capacity: {cpu_capacity}"
        ));
    }
    fit(pod, others).err().map(|rejection| PendingResize {
        reason: PendingReason::Deferred,
        message: rejection.message,
    })
}

/// The containers whose resources can change in place: app containers and sidecars
/// (upstream's `IsResizableContainer`).
fn resizable(pod: &Pod) -> impl Iterator<Item = &Container> {
    let spec = pod.spec.as_ref();
    let sidecars = spec
        .and_then(|s| s.init_containers.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| crate::podutil::is_sidecar(c));
    spec.into_iter().flat_map(|s| &s.containers).chain(sidecars)
}

/// What `pod`'s spec asks for, container by container (upstream's `allocationFromPod`).
fn allocation_of(pod: &Pod) -> BTreeMap<String, ResourceRequirements> {
    resizable(pod)
        .map(|c| (c.name.clone(), spec_resources(c)))
        .collect()
}

/// One container in a resize event's summary.
#[derive(serde::Serialize)]
struct ContainerSummary<'a> {
    name: &'a str,
    resources: ResourceRequirements,
}

/// A resize event's summary, in upstream's field order (`podResourceSummary`).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ResizeSummary<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    init_containers: Vec<ContainerSummary<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    containers: Vec<ContainerSummary<'a>>,
    generation: i64,
    #[serde(skip_serializing_if = "str::is_empty")]
    error: &'a str,
}

/// An event message as upstream's `podResizeMessage`: `prefix`, then the spec's resources
/// of every container, the generation and `error` as JSON.
pub fn resize_message(pod: &Pod, prefix: &str, error: &str) -> String {
    fn summarise(containers: Option<&Vec<Container>>) -> Vec<ContainerSummary<'_>> {
        containers
            .into_iter()
            .flatten()
            .map(|c| ContainerSummary {
                name: &c.name,
                resources: spec_resources(c),
            })
            .collect()
    }
    let spec = pod.spec.as_ref();
    let summary = ResizeSummary {
        init_containers: summarise(spec.and_then(|s| s.init_containers.as_ref())),
        containers: summarise(spec.map(|s| &s.containers)),
        generation: pod.metadata.generation.unwrap_or(0),
        error,
    };
    match serde_json::to_string(&summary) {
        Ok(json) => format!("{prefix}: {json}"),
        Err(_) => prefix.to_string(),
    }
}
