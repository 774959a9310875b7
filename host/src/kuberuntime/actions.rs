//! What a sync must do to bring a pod's runtime state towards its spec: upstream's
//! `computePodActions` (`kuberuntime_manager.go`), a pure function of the spec, what the
//! runtime holds and the pod's restart back-off, so that every decision is tested without a
//! runtime (`actions/tests.rs`, in the style of upstream's `TestComputePodActions`).

use super::resize::Resize;
use crate::backoff::BackOff;
use crate::cri::api;
use crate::cri::labels;
use crate::prober::ProbeKind;
use crate::resources::AppliedResources;
use crate::runtime_status::{self, PodRuntimeStatus};
use crate::timestamps;
use k8s_openapi::api::core::v1::{Container, Pod};
use restarts::{kill_if_unhealthy, replace, restart};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

/// Everything [`compute_pod_actions`] decides from.
pub struct ActionInput<'a> {
    /// The pod as its source gave it.
    pub pod: &'a Pod,
    /// What the runtime holds for it.
    pub runtime: &'a PodRuntimeStatus,
    /// Whether the published phase is terminal (Succeeded/Failed): nothing starts again.
    pub terminal: bool,
    /// CrashLoopBackOff state, keyed by container name (seeded from the runtime first, see
    /// [`seed_backoff`]).
    pub backoff: &'a BackOff,
    /// Running containers whose liveness or startup probe failed, by container name.
    pub unhealthy: &'a HashMap<String, Unhealthy>,
    /// Containers whose startup probe has not succeeded yet: a sidecar among them holds the
    /// containers after it back.
    pub not_started: &'a HashSet<String>,
    /// What each running container was given (by container ID), for in-place resizes.
    pub applied: &'a AppliedResources,
    /// The wall-clock time of the decision.
    pub now: SystemTime,
}

/// A running container a probe condemned.
#[derive(Debug, Clone, PartialEq)]
pub struct Unhealthy {
    /// The container instance the probe ran against; a newer instance is not killed.
    pub container_id: String,
    /// Which probe failed (liveness or startup).
    pub probe: ProbeKind,
    /// Why the probe failed.
    pub message: String,
    /// The probe's own `terminationGracePeriodSeconds`, if set.
    pub grace: Option<Duration>,
}

/// The runtime changes one sync makes, in the order they are made.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodActions {
    /// The pod has no ready sandbox but a terminal phase: stop what is left, keep the exited
    /// containers for status and logs, and run nothing again.
    pub finish: bool,
    /// The pod has no ready sandbox: stop every container and old sandbox, then create the
    /// sandbox with this attempt number. Containers are decided again once it runs.
    pub create_sandbox: Option<u32>,
    /// Running containers to kill first.
    pub kill: Vec<KillAction>,
    /// Containers created but never started (a sync was cut short): start them.
    pub start_created: Vec<CreatedContainer>,
    /// Containers to create and start, in order.
    pub start: Vec<StartAction>,
    /// Containers CrashLoopBackOff holds back.
    pub back_off: Vec<BackOffHold>,
    /// Running containers whose resources change in place.
    pub resize: Vec<CreatedContainer>,
}

/// A container to create and start.
#[derive(Debug, Clone, PartialEq)]
pub struct StartAction {
    /// The container's name in the spec.
    pub name: String,
    /// Whether it is an init container.
    pub init: bool,
    /// The attempt (restart count) to create.
    pub attempt: u32,
    /// For a restart after a failure: when the previous attempt failed, recorded in the
    /// back-off when the restart is made.
    pub failed_at: Option<SystemTime>,
}

/// A created container to start.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedContainer {
    /// The container's name in the spec.
    pub name: String,
    /// Its runtime ID.
    pub id: String,
}

/// A running container to kill, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct KillAction {
    /// The container's name in the spec.
    pub name: String,
    /// Its runtime ID.
    pub id: String,
    /// Why it is killed.
    pub reason: KillReason,
}

/// Why a running container is killed.
#[derive(Debug, Clone, PartialEq)]
pub enum KillReason {
    /// Its liveness or startup probe failed; when its policy restarts it, the next attempt
    /// starts in the same sync unless the back-off of the attempt before holds it.
    Unhealthy(Unhealthy),
    /// Its spec changed (the container hash differs); a new attempt starts in the same sync.
    SpecChanged,
    /// Its resources changed and its `resizePolicy` restarts it for that; a new attempt
    /// starts in the same sync.
    ResizeRestart,
}

/// A container held back by CrashLoopBackOff.
#[derive(Debug, Clone, PartialEq)]
pub struct BackOffHold {
    /// The container's name in the spec.
    pub name: String,
    /// The back-off in force, for upstream's message.
    pub backoff: Duration,
    /// How long until it may restart.
    pub left: Duration,
}

impl PodActions {
    /// Whether the sync changes nothing in the runtime.
    pub fn is_empty(&self) -> bool {
        !self.finish
            && self.create_sandbox.is_none()
            && self.kill.is_empty()
            && self.start_created.is_empty()
            && self.start.is_empty()
            && self.resize.is_empty()
    }
}

/// The hash of a container's spec, kept on the container as upstream's
/// `io.kubernetes.container.hash` annotation: a container whose spec changed under the same
/// pod UID is replaced.
pub fn container_hash(container: &Container) -> String {
    // Resources change in place (`resize`), as upstream's hash leaves them out.
    let without_resources = Container {
        resources: None,
        ..container.clone()
    };
    hash_of(&without_resources)
}

fn hash_of(container: &Container) -> String {
    let json = serde_json::to_vec(container).unwrap_or_default();
    let digest = Sha256::digest(&json);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Restores the CrashLoopBackOff of containers a previous wasmlet restarted, from the attempt
/// and start time the runtime records (a no-op for containers the back-off already knows).
pub fn seed_backoff(backoff: &mut BackOff, runtime: &PodRuntimeStatus) {
    let mut seen = std::collections::HashSet::new();
    for c in &runtime.containers {
        let name = runtime_status::container_name(c);
        // Containers are newest first: only the latest attempt of each name counts.
        if !seen.insert(name) || !runtime_status::is_exited(c) {
            continue;
        }
        if let Some(started) = timestamps::time_of(c.started_at) {
            backoff.seed(name, runtime_status::attempt(c), started);
        }
    }
}

/// Whether the container's spec differs from the one it was created from. A container
/// created before wasmlet recorded hashes has none and counts as unchanged.
fn spec_changed(spec: &Container, status: &api::ContainerStatus) -> bool {
    // A container created before resources left the hash carries the hash of the whole
    // spec: it is unchanged when that one still matches.
    status
        .annotations
        .get(labels::CONTAINER_HASH)
        .is_some_and(|hash| *hash != container_hash(spec) && *hash != hash_of(spec))
}

/// Resizes or restarts the running `container` whose resources differ from what it was
/// given.
fn resize_if_changed(
    input: &ActionInput<'_>,
    actions: &mut PodActions,
    container: &Container,
    running: &api::ContainerStatus,
    init: bool,
) {
    match super::resize::decide(container, input.applied.get(&running.id)) {
        Resize::None => {}
        Resize::Update => actions.resize.push(CreatedContainer {
            name: container.name.clone(),
            id: running.id.clone(),
        }),
        Resize::Restart => replace(actions, container, running, KillReason::ResizeRestart, init),
    }
}

/// Decides one sync, as upstream's `computePodActions`: the sandbox first, then the first
/// init container that has not succeeded, then (once all succeeded) every app container.
///
/// A pure function of the pod, what the runtime holds and the worker's state, so each
/// decision is a table case without a runtime (`actions/tests.rs`). A pod the runtime has
/// never seen gets its first sandbox; its containers are decided on the next sync, once the
/// sandbox runs:
///
/// ```
/// use std::collections::{HashMap, HashSet};
/// use wasmlet::backoff::BackOff;
/// use wasmlet::config::BackOffConfig;
/// use wasmlet::kuberuntime::{compute_pod_actions, ActionInput};
/// use wasmlet::resources::AppliedResources;
/// use wasmlet::runtime_status::PodRuntimeStatus;
///
/// let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "web", "namespace": "default", "uid": "8d1f"},
///     "spec": {"containers": [{"name": "app", "image": "busybox"}]},
/// }))?;
/// let nothing_yet = PodRuntimeStatus { sandboxes: vec![], containers: vec![] };
/// let actions = compute_pod_actions(&ActionInput {
///     pod: &pod,
///     runtime: &nothing_yet,
///     terminal: false,
///     backoff: &BackOff::new(BackOffConfig::UPSTREAM),
///     unhealthy: &HashMap::new(),
///     not_started: &HashSet::new(),
///     applied: &AppliedResources::default(),
///     now: std::time::SystemTime::now(),
/// });
/// assert_eq!(actions.create_sandbox, Some(0));
/// assert!(actions.start.is_empty() && actions.kill.is_empty());
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn compute_pod_actions(input: &ActionInput<'_>) -> PodActions {
    let mut actions = PodActions::default();
    let runtime = input.runtime;
    if !runtime.current_sandbox().is_some_and(|s| s.ready) {
        if input.terminal {
            actions.finish = true;
        } else {
            actions.create_sandbox = Some(runtime.current_sandbox().map_or(0, |s| s.attempt + 1));
        }
        return actions;
    }
    let Some(spec) = input.pod.spec.as_ref() else {
        return actions;
    };
    let restart_policy = crate::podutil::restart_policy(input.pod);
    // Ephemeral containers start once each, whatever the init containers do, and never
    // restart (upstream's EphemeralContainersToStart).
    for ephemeral in spec.ephemeral_containers.iter().flatten() {
        if runtime.latest(&ephemeral.name).is_none() {
            actions.start.push(StartAction {
                name: ephemeral.name.clone(),
                init: false,
                attempt: 0,
                failed_at: None,
            });
        }
    }
    let init_containers = spec.init_containers.as_deref().unwrap_or_default();
    for (index, container) in init_containers.iter().enumerate() {
        if crate::podutil::is_sidecar(container) {
            if sidecar_actions(input, &mut actions, container, past(spec, index)) {
                continue;
            }
            return actions;
        }
        match runtime.latest(&container.name) {
            Some(c) if runtime_status::is_exited(c) && c.exit_code == 0 => continue,
            Some(c) if runtime_status::is_exited(c) => {
                if restart_policy != "Never" {
                    restart(input, &mut actions, container, c, next_attempt(c), true);
                }
            }
            Some(c) if c.state == api::ContainerState::ContainerCreated as i32 => {
                actions.start_created.push(created(container, c));
            }
            Some(_) => {}
            None => actions.start.push(first_start(container, true)),
        }
        return actions;
    }
    for container in &spec.containers {
        match runtime.latest(&container.name) {
            None => actions.start.push(first_start(container, false)),
            Some(c) if c.state == api::ContainerState::ContainerCreated as i32 => {
                actions.start_created.push(created(container, c));
            }
            Some(c) if runtime_status::is_exited(c) => {
                let restart_wanted = match restart_policy {
                    "Always" => true,
                    "OnFailure" => c.exit_code != 0,
                    _ => false,
                };
                if restart_wanted {
                    restart(input, &mut actions, container, c, next_attempt(c), false);
                }
            }
            Some(c) if runtime_status::is_running(c) => {
                if kill_if_unhealthy(input, &mut actions, container, c, false) {
                    continue;
                }
                if spec_changed(container, c) {
                    replace(&mut actions, container, c, KillReason::SpecChanged, false);
                } else {
                    resize_if_changed(input, &mut actions, container, c, false);
                }
            }
            Some(_) => {}
        }
    }
    actions
}

/// Whether the pod ever got past init container `index`: a later init container or an app
/// container was created. A sidecar that exits after that no longer holds the pod back.
fn past(
    spec: &k8s_openapi::api::core::v1::PodSpec,
    index: usize,
) -> impl Fn(&PodRuntimeStatus) -> bool + '_ {
    move |runtime| {
        spec.init_containers
            .iter()
            .flatten()
            .skip(index + 1)
            .chain(&spec.containers)
            .any(|c| runtime.latest(&c.name).is_some())
    }
}

/// The actions for a sidecar (an init container with `restartPolicy: Always`, KEP-753): it is
/// started in its turn and, once running and past its startup probe, lets the next container
/// start; it restarts whenever
/// it exits, whatever the pod's restart policy, and a failed liveness probe kills it. Returns
/// whether the containers after it may be decided in this sync.
fn sidecar_actions(
    input: &ActionInput<'_>,
    actions: &mut PodActions,
    container: &Container,
    past: impl Fn(&PodRuntimeStatus) -> bool,
) -> bool {
    let runtime = input.runtime;
    match runtime.latest(&container.name) {
        None => {
            actions.start.push(first_start(container, true));
            false
        }
        Some(c) if c.state == api::ContainerState::ContainerCreated as i32 => {
            actions.start_created.push(created(container, c));
            false
        }
        Some(c) if runtime_status::is_exited(c) => {
            restart(input, actions, container, c, next_attempt(c), true);
            past(runtime)
        }
        Some(c) if runtime_status::is_running(c) => {
            if !kill_if_unhealthy(input, actions, container, c, true) {
                resize_if_changed(input, actions, container, c, true);
            }
            !input.not_started.contains(&container.name) || past(runtime)
        }
        Some(_) => past(runtime),
    }
}

/// The attempt after `last`.
fn next_attempt(last: &api::ContainerStatus) -> u32 {
    runtime_status::attempt(last) + 1
}

fn first_start(container: &Container, init: bool) -> StartAction {
    StartAction {
        name: container.name.clone(),
        init,
        attempt: 0,
        failed_at: None,
    }
}

fn created(container: &Container, status: &api::ContainerStatus) -> CreatedContainer {
    CreatedContainer {
        name: container.name.clone(),
        id: status.id.clone(),
    }
}

mod restarts;
#[cfg(test)]
mod tests;
