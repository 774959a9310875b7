//! Containers, as upstream's `kuberuntime_container.go`: `startContainer` (image, config,
//! create, start, postStart) and `killContainer` (preStop, then stop with the grace left),
//! and the teardown of a whole pod.

use super::image::ImageWait;
use super::sync::SyncOutcome;
use super::termination_order::{self, Exits, Role};
use super::{ignore_not_found, pod_config, RuntimeManager, SYNC_ERROR_RETRY};
use crate::backoff::BackOff;
use crate::cri::{api, CriClient, CriError};
use crate::events::{EventType, ObjectRef};
use crate::fieldpath::PodFacts;
use crate::lifecycle::{HookKind, PodHooks};
use crate::podutil::{self, MINIMUM_GRACE};
use crate::runtime_status::{self, PodRuntimeStatus};
use crate::volumes;
use k8s_openapi::api::core::v1::{Container, Pod};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use tracing::{debug, info, warn};

/// What starting one container needs from the sync that decided it.
pub(super) struct StartContext<'a> {
    pub pod: &'a Pod,
    pub sandbox_id: &'a str,
    pub sandbox_config: &'a api::PodSandboxConfig,
    pub facts: &'a PodFacts,
    pub volume_paths: &'a HashMap<String, PathBuf>,
    pub hooks: &'a PodHooks,
}

/// Why a container's config could not be made: the container waits in
/// `CreateContainerConfigError` with this message (and a `Failed` event), as upstream.
#[derive(Debug, thiserror::Error)]
enum ContainerConfigError {
    /// An environment variable's source cannot be read.
    #[error(transparent)]
    Env(#[from] super::env::EnvError),
    /// A `subPathExpr` names a variable without a value.
    #[error(transparent)]
    SubPathExpr(#[from] super::sub_path_expr::SubPathExprError),
    /// A volume mount cannot be made.
    #[error(transparent)]
    Volumes(#[from] volumes::VolumeError),
    /// The pod's `/etc/hosts` cannot be written.
    #[error("cannot write the pod's /etc/hosts: {0}")]
    EtcHosts(#[source] std::io::Error),
    /// The termination message file cannot be created.
    #[error("cannot create the termination message file: {0}")]
    TerminationMessage(#[source] std::io::Error),
    /// The CRI config cannot be built from the spec.
    #[error(transparent)]
    Config(#[from] pod_config::ConfigError),
}

/// Upstream's `container_type` label: `init_container` or `container`.
fn container_type(pod: &Pod, container: &Container) -> &'static str {
    let is_init = pod
        .spec
        .iter()
        .flat_map(|spec| spec.init_containers.iter().flatten())
        .any(|init| init.name == container.name);
    if is_init {
        "init_container"
    } else {
        "container"
    }
}

impl RuntimeManager {
    /// Pulls (per policy), creates and starts attempt `restart_count` of `container`, then
    /// runs its postStart hooks; anything that keeps it from running becomes a waiting
    /// reason in `outcome`.
    pub(super) async fn start_container(
        &self,
        ctx: &StartContext<'_>,
        container: &Container,
        restart_count: u32,
        image_backoff: &mut BackOff,
        outcome: &mut SyncOutcome,
    ) {
        let object = ObjectRef::container(ctx.pod, &container.name);
        let event = |kind, reason: &str, message: String| {
            self.events.record(&object, kind, reason, message)
        };
        match self
            .ensure_image(ctx.pod, container, ctx.sandbox_config, image_backoff)
            .await
        {
            Ok(pulling) => outcome.pulling += pulling,
            Err(ImageWait {
                reason,
                message,
                retry,
            }) => {
                event(EventType::Warning, "Failed", format!("Error: {reason}"));
                outcome.wait(&container.name, reason, message, retry);
                return;
            }
        }
        let metrics = crate::metrics::kubelet::kubelet();
        let container_type = container_type(ctx.pod, container);
        metrics
            .started_containers
            .get_or_create(&crate::metrics::kubelet::label(
                "container_type",
                container_type,
            ))
            .inc();
        let failed_start = |error: &crate::cri::CriError| {
            let labels = vec![
                ("code", error.code_name().to_string()),
                ("container_type", container_type.to_string()),
            ];
            metrics
                .started_containers_errors
                .get_or_create(&labels)
                .inc();
        };
        // Older dead attempts stay until container GC removes them (`gc::containers`).
        let envs = super::env::resolve(ctx.pod, container, ctx.facts, &*self.objects)
            .await
            .map_err(ContainerConfigError::from);
        let config = envs.and_then(|envs| {
            let pod_dir = volumes::pod_dir(&self.node.root_dir, crate::podutil::uid(ctx.pod));
            let expanded = super::sub_path_expr::expand(container, &envs)?;
            let mut mounts = volumes::mounts(ctx.pod, &expanded, ctx.volume_paths, &pod_dir)?;
            let hosts = super::etc_hosts::mount(
                ctx.pod,
                container,
                &pod_dir,
                &ctx.facts.pod_ips,
                &self.node.dns.cluster_domain,
                std::path::Path::new("/etc/hosts"),
            )
            .map_err(ContainerConfigError::EtcHosts)?;
            mounts.extend(hosts);
            let message = super::termination_message::mount(&pod_dir, container, restart_count)
                .map_err(ContainerConfigError::TerminationMessage)?;
            mounts.extend(message);
            pod_config::container_config(
                ctx.pod,
                container,
                restart_count,
                envs,
                &self.node,
                mounts,
            )
            .map_err(ContainerConfigError::from)
        });
        let config = match config {
            Ok(mut config) => {
                share_target_pid(ctx.pod, &container.name, &ctx.hooks.containers, &mut config);
                config
            }
            Err(error) => {
                let message = error.to_string();
                event(EventType::Warning, "Failed", format!("Error: {message}"));
                outcome.wait(
                    &container.name,
                    "CreateContainerConfigError",
                    message,
                    SYNC_ERROR_RETRY,
                );
                return;
            }
        };
        let id = match self
            .cri
            .create_container(ctx.sandbox_id, config, ctx.sandbox_config.clone())
            .await
        {
            Ok(id) => {
                event(
                    EventType::Normal,
                    "Created",
                    format!("Created container: {}", container.name),
                );
                outcome.touched.push(id.clone());
                let resources = crate::resources::spec_resources(container);
                outcome.applied.push((id.clone(), resources));
                id
            }
            Err(error) => {
                failed_start(&error);
                event(EventType::Warning, "Failed", format!("Error: {error}"));
                outcome.wait(
                    &container.name,
                    "CreateContainerError",
                    error.to_string(),
                    SYNC_ERROR_RETRY,
                );
                return;
            }
        };
        match self.cri.start_container(&id).await {
            Ok(()) => {
                info!(container = %container.name, id = %id, restart_count, "container started");
                event(
                    EventType::Normal,
                    "Started",
                    format!("Started container {}", container.name),
                );
                self.post_start(ctx, container, &id, outcome).await;
            }
            // The runtime records the failed start (exit 128, StartError); the next sync
            // restarts it under back-off like any other failure.
            Err(error) => {
                failed_start(&error);
                warn!(container = %container.name, %error, "container failed to start");
                event(EventType::Warning, "Failed", format!("Error: {error}"));
            }
        }
    }

    /// Runs the postStart hooks (the spec's, then the hook plugins'); a failure kills the
    /// container, which then restarts per its policy, as upstream.
    async fn post_start(
        &self,
        ctx: &StartContext<'_>,
        container: &Container,
        id: &str,
        outcome: &mut SyncOutcome,
    ) {
        let declared = container
            .lifecycle
            .as_ref()
            .is_some_and(|l| l.post_start.is_some());
        if !declared && !self.plugins.has(wasmlet_plugin_host::World::LifecycleHooks) {
            return;
        }
        let Err(message) = ctx.hooks.post_start(container, id).await else {
            return;
        };
        warn!(container = %container.name, reason = HookKind::PostStart.failure_reason(), %message, "postStart hook failed; killing the container");
        // Upstream keeps the handler's output out of the event: it may hold secrets.
        let reason = HookKind::PostStart.failure_reason();
        self.events.record(
            &ObjectRef::container(ctx.pod, &container.name),
            EventType::Warning,
            reason,
            "PostStartHook failed".into(),
        );
        let grace = crate::podutil::grace_period(ctx.pod);
        if let Err(error) = ctx
            .hooks
            .kill_because(&container.name, id, grace, reason.into())
            .await
        {
            warn!(container = %container.name, %error, "killing the container after its failed postStart hook failed");
        }
        outcome.wait(
            &container.name,
            "PostStartHookError",
            message.to_string(),
            Duration::from_millis(100),
        );
    }

    /// Starts a container of `pod` that was created but never started (a sync cut short).
    pub(super) async fn start_created(
        &self,
        pod: &Pod,
        name: &str,
        id: &str,
        outcome: &mut SyncOutcome,
    ) {
        outcome.touched.push(id.to_string());
        let object = ObjectRef::container(pod, name);
        match self.cri.start_container(id).await {
            Ok(()) => self.events.record(
                &object,
                EventType::Normal,
                "Started",
                format!("Started container {name}"),
            ),
            Err(error) => {
                warn!(container = %name, %error, "starting a created container failed");
                self.events.record(
                    &object,
                    EventType::Warning,
                    "Failed",
                    format!("Error: {error}"),
                );
            }
        }
    }
}

/// An ephemeral container with a `targetContainerName` joins that container's process
/// namespace (`kubectl debug --target`), as upstream's `NamespaceMode_TARGET`; `running` maps
/// container names to the IDs of those running.
fn share_target_pid(
    pod: &Pod,
    name: &str,
    running: &HashMap<String, String>,
    config: &mut api::ContainerConfig,
) {
    let target = pod
        .spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.as_ref())
        .and_then(|list| list.iter().find(|c| c.name == name))
        .and_then(|c| c.target_container_name.as_deref());
    let Some(target_id) = target.and_then(|t| running.get(t)) else {
        return;
    };
    let options = config
        .linux
        .get_or_insert_with(Default::default)
        .security_context
        .get_or_insert_with(Default::default)
        .namespace_options
        .get_or_insert_with(Default::default);
    options.pid = api::NamespaceMode::Target as i32;
    options.target_id = target_id.clone();
}

/// Stops every live container, each with its own grace period, in upstream's termination
/// order: all are asked at once (with `hooks`, each container's preStop hooks run first and
/// their time is taken from its grace), and each sidecar is sent its stop signal once the
/// regular containers and the sidecars declared after it have exited, or its grace runs out.
pub async fn stop_all(
    cri: &CriClient,
    runtime: &PodRuntimeStatus,
    grace: impl Fn(&api::ContainerStatus) -> Duration,
    hooks: Option<&PodHooks>,
) -> Result<(), CriError> {
    let live: Vec<&api::ContainerStatus> = runtime.live_containers().collect();
    let roles: Vec<Role> = live.iter().map(|c| Role::of(c)).collect();
    let waits = termination_order::prerequisites(&roles);
    let exits = Exits::new(live.len());
    let stops = live
        .iter()
        .zip(&waits)
        .enumerate()
        .map(|(index, (c, waits_for))| {
            let cri = cri.clone();
            let id = c.id.clone();
            let name = runtime_status::container_name(c).to_string();
            let grace = grace(c);
            let turn = exits.turn(waits_for);
            let exits = &exits;
            async move {
                let stopped = match hooks {
                    Some(hooks) => {
                        let message = format!("Stopping container {name}");
                        hooks.kill_in_turn(&name, &id, grace, message, turn).await
                    }
                    None => {
                        let waited = podutil::wait_for_turn(turn, grace).await;
                        let left = podutil::whole_seconds_left(grace, waited)
                            .max(MINIMUM_GRACE.min(grace));
                        debug!(container = %name, grace_s = left.as_secs(), "stopping container");
                        cri.stop_container(&id, left).await
                    }
                }
                .or_else(ignore_not_found);
                exits.exited(index);
                stopped
            }
        });
    futures::future::join_all(stops).await.into_iter().collect()
}

/// Stops the pod's containers gracefully, then removes its containers and sandboxes.
pub async fn kill_and_remove(
    cri: &CriClient,
    runtime: &PodRuntimeStatus,
    grace: impl Fn(&api::ContainerStatus) -> Duration,
    hooks: Option<&PodHooks>,
) -> Result<(), CriError> {
    stop_all(cri, runtime, grace, hooks).await?;
    for sandbox in &runtime.sandboxes {
        cri.stop_pod_sandbox(&sandbox.id)
            .await
            .or_else(ignore_not_found)?;
    }
    for container in &runtime.containers {
        cri.remove_container(&container.id)
            .await
            .or_else(ignore_not_found)?;
    }
    for sandbox in &runtime.sandboxes {
        cri.remove_pod_sandbox(&sandbox.id)
            .await
            .or_else(ignore_not_found)?;
    }
    Ok(())
}
