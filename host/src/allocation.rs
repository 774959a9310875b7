//! Resource allocation, as upstream's allocation manager: what each admitted pod's resizable
//! containers (app containers and sidecars) were granted, kept apart from the spec. A pod is
//! admitted with its spec's resources. An in-place resize changes the spec at once and the
//! allocation only once the node holds it beside the other pods' allocations; until then it
//! is pending, `Infeasible` when the node could never hold it, `Deferred` when the other pods
//! leave no room. Deferred resizes are tried again, in upstream's order, whenever a pod
//! leaves, another resize is asked for, or housekeeping runs. The pod worker runs the pod as
//! allocated, so a pending resize is never actuated.

pub mod checkpoint;
#[cfg(test)]
mod tests;

use crate::admission::{cpu_and_memory_request, Rejection};
use crate::resources::{pod_qos, spec_resources, QosClass};
pub use crate::resources::{PendingReason, PendingResize};
use checkpoint::Granted;
use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tracing::warn;

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
    granted: Granted,
    /// By pod UID: the pending condition and since when its reason holds.
    pending: HashMap<String, (PendingResize, Instant)>,
    /// Pods whose resize is tried again (asked for, or deferred).
    queue: Vec<String>,
    /// Where the allocations are saved ([`checkpoint`]); none: kept in memory only.
    checkpoint: Option<PathBuf>,
    /// Allocations read from the checkpoint at start that no admission has claimed yet.
    restored: Granted,
    /// `granted` changed since it was last saved.
    unsaved: bool,
}

impl Allocations {
    /// Allocations saved at `path`, starting from what an earlier run saved there. An
    /// unreadable checkpoint is logged and ignored: pods are then admitted with their spec's.
    pub fn with_checkpoint(path: PathBuf) -> Self {
        let restored = checkpoint::load(&path).unwrap_or_else(|error| {
            warn!(%error, "the allocation checkpoint cannot be used; pods are admitted with their spec's resources");
            Granted::new()
        });
        Self {
            checkpoint: Some(path),
            restored,
            ..Default::default()
        }
    }

    /// `pod` as admission judges it: with what it was granted before a restart, if that was
    /// saved (upstream's `AddPod` reads the checkpoint first), else as its spec asks: then it
    /// is `pod` itself, shared.
    pub fn admitted_form(&self, pod: &Arc<Pod>) -> Arc<Pod> {
        shared(
            pod,
            with_resources_borrowed(pod, self.restored.get(crate::podutil::uid(pod))),
        )
    }

    /// Records that `pod` was admitted, with what it was granted before a restart if that
    /// was saved, else with its spec's resources; a spec that asks for more is queued.
    pub fn admit(&mut self, pod: &Pod) {
        let uid = crate::podutil::uid(pod).to_string();
        let allocation = self
            .restored
            .remove(&uid)
            .unwrap_or_else(|| allocation_of(pod));
        self.granted.insert(uid.clone(), allocation);
        self.unsaved = true;
        self.pending.remove(&uid);
        self.queue.retain(|queued| *queued != uid);
        if self.differs(pod) {
            self.queue.push(uid);
        }
    }

    /// Forgets the pods `keep` refuses (their workers have finished).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        let before = self.granted.len();
        self.granted.retain(|uid, _| keep(uid));
        self.unsaved |= self.granted.len() != before;
        self.pending.retain(|uid, _| keep(uid));
        self.queue.retain(|uid| keep(uid));
    }

    /// Drops what the checkpoint held for pods no source wants any more: call it once the
    /// sources have all been read.
    pub fn forget_restored(&mut self) {
        self.restored.clear();
    }

    /// Writes the allocations to the checkpoint if they changed; a failure is logged and
    /// tried again at the next save.
    pub fn save(&mut self) {
        let Some(path) = self.checkpoint.clone().filter(|_| self.unsaved) else {
            return;
        };
        match checkpoint::save(&path, &self.granted) {
            Ok(()) => self.unsaved = false,
            Err(error) => {
                warn!(%error, file = %path.display(), "the allocation checkpoint could not be written")
            }
        }
    }

    /// True when `pod`'s spec asks for resources other than those allocated to it.
    pub fn differs(&self, pod: &Pod) -> bool {
        let Some(granted) = self.granted.get(crate::podutil::uid(pod)) else {
            return false;
        };
        crate::podutil::sidecars_and_app_containers(pod).any(|c| {
            granted
                .get(&c.name)
                .is_some_and(|g| *g != spec_resources(c))
        })
    }

    /// `pod` with its resizable containers' resources replaced by what is allocated to them:
    /// what the worker runs and the status reports as `allocatedResources`.
    /// Borrowed when the pod already runs with its allocation, as almost every pod does.
    pub fn allocated<'a>(&self, pod: &'a Pod) -> Cow<'a, Pod> {
        with_resources_borrowed(pod, self.granted.get(crate::podutil::uid(pod)))
    }

    /// [`Self::allocated`] for a shared pod: `pod` itself when it runs with its allocation.
    pub fn allocated_shared(&self, pod: &Arc<Pod>) -> Arc<Pod> {
        shared(pod, self.allocated(pod))
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
                .map(|other| self.allocated(other).into_owned())
                .collect();
            match refusal(&pod, &others, allocatable, &fit) {
                None => {
                    self.granted.insert(uid.clone(), allocation_of(&pod));
                    self.unsaved = true;
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
        // Saved before any worker actuates a grant.
        self.save();
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

/// `pod` itself when `form` borrows it, else the new form.
fn shared(pod: &Arc<Pod>, form: Cow<'_, Pod>) -> Arc<Pod> {
    match form {
        Cow::Borrowed(_) => Arc::clone(pod),
        Cow::Owned(changed) => Arc::new(changed),
    }
}

/// `pod` with its containers' resources replaced by `granted`'s, where it names them;
/// borrowed, not copied, when the pod already runs with `granted`.
fn with_resources_borrowed<'a>(
    pod: &'a Pod,
    granted: Option<&BTreeMap<String, ResourceRequirements>>,
) -> Cow<'a, Pod> {
    let (Some(granted), Some(spec)) = (granted, pod.spec.as_ref()) else {
        return Cow::Borrowed(pod);
    };
    let init = spec.init_containers.iter().flatten();
    let same = spec.containers.iter().chain(init).all(|container| {
        granted
            .get(&container.name)
            .is_none_or(|resources| *resources == spec_resources(container))
    });
    if same {
        return Cow::Borrowed(pod);
    }
    let mut pod = pod.clone();
    let Some(spec) = pod.spec.as_mut() else {
        return Cow::Owned(pod);
    };
    let init = spec.init_containers.iter_mut().flatten();
    for container in spec.containers.iter_mut().chain(init) {
        if let Some(resources) = granted.get(&container.name) {
            if *resources != spec_resources(container) {
                container.resources = Some(resources.clone());
            }
        }
    }
    Cow::Owned(pod)
}

/// What `pod`'s spec asks for, container by container (upstream's `allocationFromPod`).
fn allocation_of(pod: &Pod) -> BTreeMap<String, ResourceRequirements> {
    crate::podutil::sidecars_and_app_containers(pod)
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
