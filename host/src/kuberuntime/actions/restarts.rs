//! The decisions that replace a container: a kill followed by the next attempt, a restart
//! after an exit, and the CrashLoopBackOff that holds a restart back.

use super::{ActionInput, BackOffHold, KillAction, KillReason, PodActions, StartAction};
use crate::cri::api;
use crate::runtime_status;
use crate::timestamps;
use k8s_openapi::api::core::v1::Container;

/// Kills the running `running` of `container` for `reason` and starts its next attempt in
/// the same sync.
pub(super) fn replace(
    actions: &mut PodActions,
    container: &Container,
    running: &api::ContainerStatus,
    reason: KillReason,
    init: bool,
) {
    actions.kill.push(KillAction {
        name: container.name.clone(),
        id: running.id.clone(),
        reason,
    });
    actions.start.push(StartAction {
        name: container.name.clone(),
        init,
        attempt: runtime_status::attempt(running) + 1,
        failed_at: None,
    });
}

/// Kills the running instance `running` of `container` when its liveness or startup probe
/// condemned it; returns whether it did. When the container restarts (a sidecar always, an
/// app container unless the pod's policy is `Never`), its next attempt starts in the same sync,
/// as upstream's `computePodActions` ("will be restarted"), held back only by the
/// CrashLoopBackOff of the attempt that exited before the killed one.
pub(super) fn kill_if_unhealthy(
    input: &ActionInput<'_>,
    actions: &mut PodActions,
    container: &Container,
    running: &api::ContainerStatus,
    sidecar: bool,
) -> bool {
    let Some(unhealthy) = input
        .unhealthy
        .get(&container.name)
        .filter(|u| u.container_id == running.id)
    else {
        return false;
    };
    actions.kill.push(KillAction {
        name: container.name.clone(),
        id: running.id.clone(),
        reason: KillReason::Unhealthy(unhealthy.clone()),
    });
    let policy = input
        .pod
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref());
    if sidecar || policy != Some("Never") {
        restart_after_kill(input, actions, container, running, sidecar);
    }
    true
}

/// The next attempt after the running `killed` one, checked against the CrashLoopBackOff of
/// the newest attempt that already exited (upstream's `doBackOff` reads the exited instances
/// the sync began with; the first kill of a container has none and restarts at once).
fn restart_after_kill(
    input: &ActionInput<'_>,
    actions: &mut PodActions,
    container: &Container,
    killed: &api::ContainerStatus,
    init: bool,
) {
    let attempt = runtime_status::attempt(killed) + 1;
    let Some(previous) = input
        .runtime
        .containers_named(&container.name)
        .find(|c| runtime_status::is_exited(c))
    else {
        actions.start.push(StartAction {
            name: container.name.clone(),
            init,
            attempt,
            failed_at: None,
        });
        return;
    };
    restart(input, actions, container, previous, attempt, init);
}

/// Attempt `attempt` of `container` after its attempt `last` exited, unless CrashLoopBackOff
/// holds it back (upstream's `doBackOff`: counted from `last`'s `finishedAt`).
pub(super) fn restart(
    input: &ActionInput<'_>,
    actions: &mut PodActions,
    container: &Container,
    last: &api::ContainerStatus,
    attempt: u32,
    init: bool,
) {
    let failed_at = timestamps::time_of(last.finished_at).unwrap_or(input.now);
    let name = container.name.as_str();
    if let Some(left) = input.backoff.remaining(name, failed_at, input.now) {
        actions.back_off.push(BackOffHold {
            name: name.to_string(),
            backoff: input.backoff.current(name).unwrap_or_default(),
            left,
        });
        return;
    }
    actions.start.push(StartAction {
        name: name.to_string(),
        init,
        attempt,
        failed_at: Some(failed_at),
    });
}
