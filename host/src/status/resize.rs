//! The resize conditions (KEP-1287). `PodResizeInProgress` is present while a running
//! container does not run with the resources its spec asks for, with reason `Error` and the
//! runtime's (or the memory check's) message when the last attempt failed. `PodResizePending`
//! says the node has not allocated what the spec asks: `Infeasible` when it never can,
//! `Deferred` while the other pods leave no room ([`crate::allocation`]); the pod keeps what
//! it has. Both are gone once every container runs with its spec's, which is what `kubectl`
//! and the e2e suite wait for.

use super::StatusInput;
use crate::resources::spec_resources;
use crate::timestamps;
use k8s_openapi::api::core::v1::{Container, PodCondition, PodStatus};

/// The conditions' types.
pub(super) const IN_PROGRESS: &str = "PodResizeInProgress";
pub(super) const PENDING: &str = "PodResizePending";

/// `PodResizePending` when the spec's resize is not allocated: `Deferred` or `Infeasible`.
pub(super) fn pending(
    input: &StatusInput<'_>,
    previous: Option<&PodStatus>,
) -> Option<PodCondition> {
    let pending = input.resize_pending.filter(|_| !input.terminal)?;
    Some(true_condition(
        PENDING,
        Some(pending.reason.as_str()),
        Some(&pending.message),
        previous,
    ))
}

/// A condition of `type_` with status `True`, keeping its transition time from `previous`
/// while its reason stays the same.
fn true_condition(
    type_: &str,
    reason: Option<&str>,
    message: Option<&str>,
    previous: Option<&PodStatus>,
) -> PodCondition {
    let earlier = previous
        .and_then(|p| p.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
        .filter(|c| c.reason.as_deref() == reason)
        .and_then(|c| c.last_transition_time.clone());
    PodCondition {
        type_: type_.into(),
        status: "True".into(),
        reason: reason.map(str::to_string),
        message: message.map(str::to_string),
        last_transition_time: Some(earlier.unwrap_or_else(timestamps::now)),
        last_probe_time: Some(timestamps::now()),
        ..Default::default()
    }
}

/// The condition for the pod of `input`, if a resize is under way: a running container runs
/// with other resources than those allocated; `containers` are its init and app containers
/// as the spec lists them.
pub(super) fn in_progress<'a>(
    input: &StatusInput<'_>,
    containers: impl IntoIterator<Item = &'a Container>,
    previous: Option<&PodStatus>,
) -> Option<PodCondition> {
    if input.terminal {
        return None;
    }
    let behind = containers.into_iter().any(|container| {
        input
            .runtime
            .latest(&container.name)
            .filter(|c| crate::runtime_status::is_running(c))
            .and_then(|c| input.applied.get(&c.id))
            .is_some_and(|given| *given != spec_resources(container))
    });
    if !behind {
        return None;
    }
    let error = input.applied.resize_error();
    Some(true_condition(
        IN_PROGRESS,
        error.map(|_| "Error"),
        error,
        previous,
    ))
}
