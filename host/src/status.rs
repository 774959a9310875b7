//! Pod status: computed from the spec and what the runtime holds, as upstream's
//! `generateAPIPodStatus` and `getPhase` do (`pkg/kubelet/kubelet_pods.go`), and kept in a
//! local store that `/pods` serves.

use crate::resources::pod_qos;
use crate::resources::AppliedResources;
use crate::runtime_status::{self, PodRuntimeStatus};
use crate::timestamps;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::HashMap;

/// Why a container is not running although the pod wants it (CrashLoopBackOff, ErrImagePull…).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The upstream reason (`CrashLoopBackOff`), which tools match on.
    pub reason: String,
    /// The detail a person reads: the back-off, the pull error, the config error.
    pub message: String,
}

/// Everything the status is computed from.
pub struct StatusInput<'a> {
    /// The pod as its source defines it (resources as allocated): its containers.
    pub pod: &'a Pod,
    /// What the runtime holds for the pod now.
    pub runtime: &'a PodRuntimeStatus,
    /// Container name -> why it waits, as decided by the last sync.
    pub waiting: &'a HashMap<String, Waiting>,
    /// Container name -> what its probes say of its running container; a running container
    /// without an entry has no probes: it is started and ready.
    pub probes: &'a HashMap<String, crate::prober::ProbeView>,
    /// The node's IP, the pod's IP when it uses the host network.
    pub host_ip: &'a str,
    /// Prefix of container IDs (`containerd`).
    pub runtime_name: &'a str,
    /// `status.startTime`: when the pod's first sandbox was created (or first synced), so it
    /// survives a wasmlet restart.
    pub start_time: Option<Time>,
    /// The status last written, so condition transition times and a stopped sandbox's IPs
    /// carry over.
    pub previous: Option<&'a PodStatus>,
    /// Whether the pod will run no more containers (its worker finished it).
    pub terminal: bool,
    /// What each container runs with (given at creation or by an in-place resize; a running
    /// container without an entry runs with its spec's), and why the last resize failed.
    pub applied: &'a AppliedResources,
    /// The pod's resize that waits (`Deferred`, `Infeasible`), if one does.
    pub resize_pending: Option<&'a crate::resources::PendingResize>,
}

fn terminated_state(
    c: &crate::cri::api::ContainerStatus,
    runtime_name: &str,
) -> ContainerStateTerminated {
    ContainerStateTerminated {
        exit_code: c.exit_code,
        reason: Some(c.reason.clone()).filter(|r| !r.is_empty()),
        message: Some(c.message.clone()).filter(|m| !m.is_empty()),
        started_at: timestamps::api_time_of(c.started_at),
        finished_at: timestamps::api_time_of(c.finished_at),
        container_id: Some(format!("{runtime_name}://{}", c.id)),
        signal: None,
    }
}

fn container_status(
    input: &StatusInput<'_>,
    container: &Container,
    default_waiting: &str,
) -> ContainerStatus {
    let mut history = input.runtime.containers_named(&container.name);
    let latest = history.next();
    let previous = history.next();
    let terminated_of = |c: Option<&crate::cri::api::ContainerStatus>| {
        c.filter(|c| runtime_status::is_exited(c))
            .map(|c| ContainerState {
                terminated: Some(terminated_state(c, input.runtime_name)),
                ..Default::default()
            })
    };
    let waiting = |reason: &str, message: Option<String>| ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.into()),
            message,
        }),
        ..Default::default()
    };
    let (state, last_state) = match (input.waiting.get(&container.name), latest) {
        (Some(w), latest) => (
            waiting(&w.reason, Some(w.message.clone())),
            terminated_of(latest).or_else(|| terminated_of(previous)),
        ),
        (None, None) => (waiting(default_waiting, None), None),
        (None, Some(c)) if runtime_status::is_running(c) => (
            ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: timestamps::api_time_of(c.started_at),
                }),
                ..Default::default()
            },
            terminated_of(previous),
        ),
        (None, Some(c)) if runtime_status::is_exited(c) => (
            terminated_of(Some(c)).unwrap_or_default(),
            terminated_of(previous),
        ),
        (None, Some(_)) => (waiting("ContainerCreating", None), terminated_of(previous)),
    };
    let running = state.running.is_some();
    let probed = input.probes.get(&container.name);
    // What the spec asks for: allocated, and what runs until a resize says otherwise.
    let spec = crate::resources::spec_resources(container);
    ContainerStatus {
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        image_id: latest.map(|c| c.image_ref.clone()).unwrap_or_default(),
        container_id: latest.map(|c| format!("{}://{}", input.runtime_name, c.id)),
        restart_count: latest.map_or(0, |c| runtime_status::attempt(c) as i32),
        ready: running && probed.is_none_or(|p| p.ready),
        started: Some(running && probed.is_none_or(|p| p.started)),
        state: Some(state),
        last_state: Some(last_state.unwrap_or_default()),
        resources: latest
            .filter(|_| running)
            .map(|c| input.applied.get(&c.id).unwrap_or(&spec).clone()),
        allocated_resources: spec.requests,
        ..Default::default()
    }
}

/// Upstream's `getPhase` over app container statuses, with init containers first.
fn phase(
    spec_restart_policy: &str,
    init: &[ContainerStatus],
    sidecars: &[bool],
    app: &[ContainerStatus],
    terminal: bool,
) -> &'static str {
    let restarted = |s: &ContainerStatus| {
        s.state.as_ref().is_some_and(|st| st.waiting.is_some())
            && s.last_state
                .as_ref()
                .is_some_and(|l| l.terminated.is_some())
    };
    let mut pending_init = 0;
    let mut failed_init = 0;
    for (s, sidecar) in init
        .iter()
        .zip(sidecars.iter().chain(std::iter::repeat(&false)))
    {
        if *sidecar {
            // A sidecar never fails the pod; until it runs, the pod initializes.
            if !is_running(s) {
                pending_init += 1;
            }
            continue;
        }
        let state = s.state.clone().unwrap_or_default();
        match state.terminated {
            Some(t) if t.exit_code == 0 => {}
            Some(_) => failed_init += 1,
            None if restarted(s) => failed_init += 1,
            None => pending_init += 1,
        }
    }
    let any_app_started = app.iter().any(|s| {
        s.state
            .as_ref()
            .is_some_and(|st| st.running.is_some() || st.terminated.is_some())
            || restarted(s)
    });
    if failed_init > 0 && spec_restart_policy == "Never" {
        return "Failed";
    }
    if (pending_init > 0 || failed_init > 0) && !any_app_started {
        return "Pending";
    }
    let (mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0);
    for s in app {
        let state = s.state.clone().unwrap_or_default();
        if state.running.is_some() {
            running += 1;
        } else if let Some(t) = state.terminated {
            stopped += 1;
            if t.exit_code == 0 {
                succeeded += 1;
            }
        } else if restarted(s) {
            stopped += 1;
        } else {
            waiting += 1;
        }
    }
    match () {
        _ if waiting > 0 => "Pending",
        _ if running > 0 => "Running",
        _ if stopped > 0 => {
            if terminal {
                return if stopped == succeeded {
                    "Succeeded"
                } else {
                    "Failed"
                };
            }
            match spec_restart_policy {
                "Always" => "Running",
                _ if stopped == succeeded => "Succeeded",
                "Never" => "Failed",
                _ => "Running",
            }
        }
        _ => "Pending",
    }
}

fn condition(
    type_: &str,
    ok: bool,
    reason: Option<&str>,
    message: Option<String>,
    previous: Option<&PodStatus>,
) -> PodCondition {
    let status = if ok { "True" } else { "False" };
    let earlier = previous
        .and_then(|p| p.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_ && c.status == status))
        .and_then(|c| c.last_transition_time.clone());
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        reason: if ok { None } else { reason.map(Into::into) },
        message: if ok { None } else { message },
        last_transition_time: Some(earlier.unwrap_or_else(timestamps::now)),
        ..Default::default()
    }
}

/// Why the pod's readiness gates keep it unready, one message per gate whose condition
/// (written by another controller into the API status) is missing or not `True`, as upstream.
fn readiness_gates_unmet(pod: &Pod) -> Vec<String> {
    crate::podutil::readiness_gates(pod)
        .filter_map(|(kind, condition)| match condition {
            None => Some(format!(
                "corresponding condition of pod readiness gate {kind:?} does not exist."
            )),
            Some(c) if c.status != "True" => Some(format!(
                "the status of pod readiness gate {kind:?} is not \"True\", but {}.",
                c.status
            )),
            Some(_) => None,
        })
        .collect()
}

/// The container runs now.
fn is_running(s: &ContainerStatus) -> bool {
    s.state.as_ref().is_some_and(|st| st.running.is_some())
}

/// The container's current state is a clean exit.
fn succeeded(s: &ContainerStatus) -> bool {
    s.state
        .as_ref()
        .and_then(|st| st.terminated.as_ref())
        .is_some_and(|t| t.exit_code == 0)
}

fn names_where(
    statuses: &[ContainerStatus],
    pred: impl Fn(&ContainerStatus) -> bool,
) -> Vec<String> {
    statuses
        .iter()
        .filter(|s| pred(s))
        .map(|s| s.name.clone())
        .collect()
}

/// Computes the pod's status.
pub fn generate(input: &StatusInput<'_>) -> PodStatus {
    let spec = input.pod.spec.clone().unwrap_or_default();
    let restart_policy = spec.restart_policy.as_deref().unwrap_or("Always");
    let sidecars: Vec<bool> = spec
        .init_containers
        .iter()
        .flatten()
        .map(crate::podutil::is_sidecar)
        .collect();
    let init: Vec<_> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| {
            let mut status = container_status(input, c, "PodInitializing");
            // An init container that completed counts as ready, as upstream reports it; a
            // sidecar is ready by its readiness probe while it runs.
            if !crate::podutil::is_sidecar(c) {
                status.ready |= succeeded(&status);
            }
            status
        })
        .collect();
    // Regular init containers complete by exiting 0, sidecars by running.
    let complete = |(s, sidecar): (&ContainerStatus, &bool)| {
        if *sidecar {
            is_running(s)
        } else {
            succeeded(s)
        }
    };
    let init_done = init.iter().zip(&sidecars).all(complete);
    let app_default = if init_done {
        "ContainerCreating"
    } else {
        "PodInitializing"
    };
    let app: Vec<_> = spec
        .containers
        .iter()
        .map(|c| container_status(input, c, app_default))
        .collect();
    let phase = phase(restart_policy, &init, &sidecars, &app, input.terminal);
    let ephemeral: Vec<_> = spec
        .ephemeral_containers
        .iter()
        .flatten()
        .filter_map(crate::podutil::ephemeral_as_container)
        .map(|c| container_status(input, &c, "ContainerCreating"))
        .collect();

    let sandbox = input.runtime.current_sandbox().filter(|s| s.ready);
    let host_network = spec.host_network.unwrap_or(false);
    let mut pod_ips: Vec<String> = match (host_network, sandbox) {
        (true, Some(_)) => vec![input.host_ip.to_string()],
        (false, Some(s)) => s.ips.clone(),
        _ => Vec::new(),
    };
    if pod_ips.is_empty() {
        // A stopped sandbox keeps reporting the IP it had, as upstream does.
        pod_ips = input
            .previous
            .and_then(|p| p.pod_ips.as_ref())
            .map(|ips| ips.iter().map(|p| p.ip.clone()).collect())
            .unwrap_or_default();
    }

    let unready: Vec<String> = init
        .iter()
        .zip(&sidecars)
        .filter(|(s, sidecar)| **sidecar && !s.ready)
        .map(|(s, _)| s.name.clone())
        .chain(names_where(&app, |s| !s.ready))
        .collect();
    let containers_ready = unready.is_empty();
    let unready_message = Some(format!(
        "containers with unready status: [{}]",
        unready.join(" ")
    ));
    let not_ready_reason = if phase == "Succeeded" {
        "PodCompleted"
    } else {
        "ContainersNotReady"
    };
    let incomplete: Vec<String> = init
        .iter()
        .zip(&sidecars)
        .filter(|pair| !complete(*pair))
        .map(|(s, _)| s.name.clone())
        .collect();
    let any_app_started = app
        .iter()
        .any(|s| s.restart_count > 0 || s.state.as_ref().is_some_and(|st| st.waiting.is_none()));
    let initialized = incomplete.is_empty() || any_app_started;
    let previous = input.previous;
    let mut conditions = vec![
        condition(
            "PodReadyToStartContainers",
            sandbox.is_some(),
            None,
            None,
            previous,
        ),
        condition(
            "Initialized",
            initialized,
            Some(if phase == "Succeeded" {
                "PodCompleted"
            } else {
                "ContainersNotInitialized"
            }),
            Some(format!(
                "containers with incomplete status: [{}]",
                incomplete.join(" ")
            )),
            previous,
        ),
        match (containers_ready, readiness_gates_unmet(input.pod)) {
            (true, unmet) if !unmet.is_empty() => condition(
                "Ready",
                false,
                Some("ReadinessGatesNotReady"),
                Some(unmet.join(", ")),
                previous,
            ),
            _ => condition(
                "Ready",
                containers_ready,
                Some(not_ready_reason),
                unready_message.clone(),
                previous,
            ),
        },
        condition(
            "ContainersReady",
            containers_ready,
            Some(not_ready_reason),
            unready_message,
            previous,
        ),
        condition("PodScheduled", true, None, None, previous),
    ];
    let all_containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers);
    conditions.extend(resize::pending(input, previous));
    conditions.extend(resize::in_progress(input, all_containers, previous));
    PodStatus {
        phase: Some(phase.into()),
        conditions: Some(conditions),
        host_ip: Some(input.host_ip.to_string()),
        host_ips: Some(vec![HostIP {
            ip: input.host_ip.to_string(),
        }]),
        pod_ip: pod_ips.first().cloned(),
        pod_ips: Some(pod_ips.into_iter().map(|ip| PodIP { ip }).collect()),
        start_time: input.start_time.clone(),
        qos_class: Some(pod_qos(input.pod).as_str().into()),
        init_container_statuses: (!init.is_empty()).then_some(init),
        container_statuses: Some(app),
        ephemeral_container_statuses: (!ephemeral.is_empty()).then_some(ephemeral),
        ..Default::default()
    }
}

/// A status the pod gets without ever running: rejected at admission.
pub fn rejected(reason: &str, message: String, host_ip: &str) -> PodStatus {
    PodStatus {
        phase: Some("Failed".into()),
        reason: Some(reason.into()),
        message: Some(message),
        host_ip: Some(host_ip.into()),
        start_time: Some(timestamps::now()),
        ..Default::default()
    }
}

/// Marks a status Failed by the node itself (an eviction, an active deadline): the phase,
/// `reason` and `message`, and the pod no longer ready.
pub fn mark_failed(status: &mut PodStatus, reason: &str, message: String) {
    status.phase = Some("Failed".into());
    status.reason = Some(reason.into());
    status.message = Some(message);
    for condition in status.conditions.iter_mut().flatten() {
        if condition.type_ == "Ready" || condition.type_ == "ContainersReady" {
            condition.status = "False".into();
        }
    }
}

/// Marks a status as evicted, as upstream's eviction manager does: phase Failed, reason
/// Evicted, the message, and a DisruptionTarget condition (TerminationByKubelet).
pub fn mark_evicted(status: &mut PodStatus, message: String) {
    mark_failed(status, "Evicted", message.clone());
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    conditions.retain(|c| c.type_ != "DisruptionTarget");
    conditions.push(k8s_openapi::api::core::v1::PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some("TerminationByKubelet".into()),
        message: Some(message),
        last_transition_time: Some(timestamps::now()),
        ..Default::default()
    });
}

mod manager;
mod resize;
mod store;

pub use manager::{StatusManager, StatusSink};
pub use store::{StatusStore, STALE_ANNOTATION};

#[cfg(test)]
mod tests;
