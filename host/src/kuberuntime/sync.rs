//! `SyncPod`: reads what the runtime holds, decides with [`compute_pod_actions`], and carries
//! the actions out (sandbox, kills, starts), building the sandbox config once per sync.

use super::container::StartContext;
use super::pod_cgroup::PodCgroupResize;
use super::{
    compute_pod_actions, seed_backoff, ActionInput, KillAction, KillReason, PodActions,
    RuntimeManager, SyncError, Unhealthy, SYNC_ERROR_RETRY,
};
use crate::backoff::BackOff;
use crate::config::BackOffConfig;
use crate::events::{EventType, ObjectRef};
use crate::fieldpath::PodFacts;
use crate::resources::AppliedResources;
use crate::runtime_status::PodRuntimeStatus;
use crate::status::Waiting;
use crate::volumes;
use k8s_openapi::api::core::v1::{Container, Pod};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};
use tracing::{info, warn};

/// The runtime side's memory of one pod between syncs.
pub struct PodSyncState {
    container_backoff: BackOff,
    image_backoff: BackOff,
    /// The pod's volumes: their host paths once set up, the back-off of a failing setup.
    volumes: volumes::PodVolumes,
    /// The runtime is known to hold nothing for the pod yet (a pod first seen after a relist
    /// that did not list it): the first sync starts without reading the runtime.
    known_empty: bool,
    /// Time spent pulling the pod's images, which the pod start SLI leaves out.
    image_pulling: Duration,
    /// What each running container was given, for in-place resizes and the status.
    applied: AppliedResources,
}

impl PodSyncState {
    /// Fresh state for a pod; `known_empty` when the runtime holds nothing for it.
    pub fn new(
        container_backoff: BackOffConfig,
        image_backoff: BackOffConfig,
        known_empty: bool,
    ) -> Self {
        Self {
            container_backoff: BackOff::new(container_backoff),
            image_backoff: BackOff::new(image_backoff),
            volumes: volumes::PodVolumes::default(),
            known_empty,
            image_pulling: Duration::ZERO,
            applied: AppliedResources::default(),
        }
    }

    /// What each running container was given (by container ID), as far as this process knows.
    pub fn applied_resources(&self) -> &AppliedResources {
        &self.applied
    }

    /// Time the pod's syncs spent pulling images so far.
    pub fn image_pulling(&self) -> Duration {
        self.image_pulling
    }

    /// Forgets the volumes (they were torn down: an evicted pod frees them).
    pub fn forget_volumes(&mut self) {
        self.volumes.forget();
    }
}

/// What one sync left: the runtime as it now is, and why containers wait.
pub struct SyncResult {
    /// What the runtime holds after the sync's changes.
    pub runtime: PodRuntimeStatus,
    /// Container name -> why it is not running although the pod wants it.
    pub waiting: HashMap<String, Waiting>,
    /// When to sync again at the latest.
    pub requeue: Duration,
    /// The pod has no ready sandbox and a terminal phase: the worker finishes it.
    pub finish: bool,
}

/// Waiting reasons and the requeue, collected while the actions run.
pub(super) struct SyncOutcome {
    pub waiting: HashMap<String, Waiting>,
    pub requeue: Duration,
    /// Containers this sync created or started: their status is re-read before publishing.
    pub touched: Vec<String>,
    /// Time this sync spent pulling images.
    pub pulling: Duration,
    /// Containers created or resized, with the resources they now run with.
    pub applied: Vec<(String, k8s_openapi::api::core::v1::ResourceRequirements)>,
    /// In-place resizes this sync attempted, and why those that failed did.
    pub resizes: usize,
    pub resize_errors: Vec<String>,
}

impl SyncOutcome {
    pub fn wait(&mut self, container: &str, reason: &str, message: String, retry: Duration) {
        self.waiting.insert(
            container.into(),
            Waiting {
                reason: reason.into(),
                message,
            },
        );
        self.requeue = self.requeue.min(retry);
    }
}

fn spec_container<'a>(pod: &'a Pod, name: &str) -> Option<Cow<'a, Container>> {
    let spec = pod.spec.as_ref()?;
    let declared = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .find(|c| c.name == name);
    if let Some(container) = declared {
        return Some(Cow::Borrowed(container));
    }
    spec.ephemeral_containers
        .iter()
        .flatten()
        .find(|c| c.name == name)
        .and_then(crate::podutil::ephemeral_as_container)
        .map(Cow::Owned)
}

impl RuntimeManager {
    /// Creates attempt `attempt` of the pod's sandbox (killing an old one first), with the
    /// events upstream records; returns its ID and config.
    async fn new_sandbox(
        &self,
        pod: &Pod,
        runtime: &PodRuntimeStatus,
        attempt: u32,
    ) -> Result<(String, crate::cri::api::PodSandboxConfig), SyncError> {
        let config = super::pod_config::sandbox_config(pod, &self.node, attempt)
            .map_err(SyncError::Config)?;
        let grace = crate::podutil::grace_period(pod);
        let object = ObjectRef::pod(pod);
        if let Err(error) = super::pod_cgroup::set_pod_cgroup(pod) {
            warn!(%error, "cannot give the pod cgroup its limits");
        }
        if !runtime.sandboxes.is_empty() {
            let message = "Pod sandbox changed, it will be killed and re-created.";
            self.events
                .record(&object, EventType::Normal, "SandboxChanged", message.into());
        }
        let id = self
            .create_sandbox(runtime, config.clone(), grace)
            .await
            .inspect_err(|error| {
                let message = format!("Failed to create pod sandbox: {error}");
                self.events.record(
                    &object,
                    EventType::Warning,
                    "FailedCreatePodSandBox",
                    message,
                )
            })?;
        Ok((id, config))
    }

    /// One pass of upstream's `SyncPod`. `terminal`: the published phase is terminal;
    /// `unhealthy`: running containers a probe condemned.
    pub async fn sync_pod(
        &self,
        pod: &Pod,
        state: &mut PodSyncState,
        terminal: bool,
        (unhealthy, not_started): (&HashMap<String, Unhealthy>, &HashSet<String>),
    ) -> Result<SyncResult, SyncError> {
        let uid = crate::podutil::uid(pod);
        let mut runtime = if std::mem::take(&mut state.known_empty) {
            PodRuntimeStatus::default()
        } else {
            self.fetch(uid).await?
        };
        seed_backoff(&mut state.container_backoff, &runtime);
        let decide = |runtime: &PodRuntimeStatus, backoff: &BackOff| {
            compute_pod_actions(&ActionInput {
                pod,
                runtime,
                terminal,
                backoff,
                unhealthy,
                not_started,
                applied: &state.applied,
                now: SystemTime::now(),
            })
        };
        let mut actions = decide(&runtime, &state.container_backoff);
        if actions.finish {
            return Ok(SyncResult {
                runtime,
                waiting: HashMap::new(),
                requeue: self.sync_frequency,
                finish: true,
            });
        }
        // Volumes before any container, as upstream's WaitForAttachAndMount. Every sync
        // rewrites the object-backed ones, so configMap changes and refreshed tokens reach
        // running containers. A sandbox needs no volume, so a new one is created meanwhile:
        // a new pod's TokenRequest and configMap reads cost it no start time.
        let host = volumes::VolumeHost {
            root_dir: &self.node.root_dir,
            memory_backed: true,
        };
        let attempt = actions.create_sandbox;
        let (volumes, created) =
            futures::join!(state.volumes.sync(pod, &host, &*self.objects), async {
                match attempt {
                    Some(attempt) => self.new_sandbox(pod, &runtime, attempt).await.map(Some),
                    None => Ok(None),
                }
            });
        let mut sandbox_config = None;
        if let Some((id, config)) = created? {
            sandbox_config = Some(config);
            if runtime.containers.is_empty() {
                // A new pod: the new sandbox is all that changed.
                runtime.add_sandbox(&self.cri, &id).await?;
            } else {
                runtime = self.fetch(uid).await?;
            }
            actions = decide(&runtime, &state.container_backoff);
        }
        if let Err(wait) = volumes {
            warn!(error = %wait.error, retry_ms = wait.retry.as_millis() as u64, "volume setup failed; retrying");
            self.events.record(
                &ObjectRef::pod(pod),
                EventType::Warning,
                "FailedMount",
                wait.error.to_string(),
            );
            let waiting = volume_waiting(pod, &runtime, &wait.error.to_string());
            return Ok(SyncResult {
                runtime,
                waiting,
                requeue: wait.retry,
                finish: false,
            });
        }
        let Some(sandbox) = runtime
            .current_sandbox()
            .filter(|s| s.ready && actions.create_sandbox.is_none())
            .cloned()
        else {
            return Ok(SyncResult {
                runtime,
                waiting: HashMap::new(),
                requeue: SYNC_ERROR_RETRY,
                finish: false,
            });
        };
        let sandbox_config = match sandbox_config {
            Some(config) => config,
            None => super::pod_config::sandbox_config(pod, &self.node, sandbox.attempt)
                .map_err(SyncError::Config)?,
        };
        let mut outcome = SyncOutcome {
            waiting: HashMap::new(),
            requeue: self.sync_frequency,
            touched: Vec::new(),
            pulling: Duration::ZERO,
            applied: Vec::new(),
            resizes: 0,
            resize_errors: Vec::new(),
        };
        let hooks = self.hooks(pod, &runtime);
        let facts = PodFacts {
            pod_ip: sandbox
                .ips
                .first()
                .cloned()
                .unwrap_or_else(|| self.node.node_ip.clone()),
            pod_ips: sandbox.ips.clone(),
            host_ip: self.node.node_ip.clone(),
            node_cpu_millis: crate::machine::machine_cpu_millis(),
            node_memory_bytes: self.node.machine_memory_bytes,
        };
        let no_volumes = HashMap::new();
        let ctx = StartContext {
            pod,
            sandbox_id: &sandbox.id,
            sandbox_config: &sandbox_config,
            facts: &facts,
            volume_paths: state.volumes.paths().unwrap_or(&no_volumes),
            hooks: &hooks,
        };
        // The pod cgroup holds both the old and the new limits while its containers change.
        let resize_restart = |kill: &KillAction| matches!(kill.reason, KillReason::ResizeRestart);
        let pod_cgroup = if actions.resize.is_empty() && !actions.kill.iter().any(resize_restart) {
            None
        } else {
            PodCgroupResize::begin(pod)
                .inspect_err(|error| {
                    warn!(%error, "in-place resize of the pod cgroup refused");
                    outcome.resizes += 1;
                    outcome.resize_errors.push(error.to_string());
                    actions.resize.clear();
                    actions.kill.retain(|kill| !resize_restart(kill));
                })
                .ok()
        };
        let backoffs = (&mut state.container_backoff, &mut state.image_backoff);
        self.execute(&ctx, actions, backoffs, &state.applied, &mut outcome)
            .await;
        // Shrunk to the new limits once every container has its own; after a failed container
        // resize the pod keeps the larger limits until the retry.
        if let Some(resize) = pod_cgroup.filter(|_| outcome.resize_errors.is_empty()) {
            if let Err(error) = resize.finish() {
                warn!(%error, "in-place resize of the pod cgroup failed; retrying");
                outcome.resize_errors.push(error.to_string());
                outcome.requeue = outcome.requeue.min(SYNC_ERROR_RETRY);
            }
        }
        state.image_pulling += outcome.pulling;
        runtime
            .refresh_containers(&self.cri, &outcome.touched)
            .await?;
        for (id, resources) in outcome.applied.drain(..) {
            state.applied.record(id, resources);
        }
        if outcome.resizes > 0 {
            state.applied.set_resize_errors(&outcome.resize_errors);
        }
        state
            .applied
            .retain(|id| runtime.live_containers().any(|c| c.id == id));
        Ok(SyncResult {
            runtime,
            waiting: outcome.waiting,
            requeue: outcome.requeue,
            finish: false,
        })
    }

    /// Carries out the container actions of one sync: kills, starts of created containers,
    /// (re)starts, and the waiting reasons of those back-off holds.
    async fn execute(
        &self,
        ctx: &StartContext<'_>,
        actions: PodActions,
        (container_backoff, image_backoff): (&mut BackOff, &mut BackOff),
        applied: &AppliedResources,
        outcome: &mut SyncOutcome,
    ) {
        for kill in &actions.kill {
            let (grace, message) = match &kill.reason {
                KillReason::Unhealthy(probe) => {
                    info!(container = %kill.name, probe = probe.probe.as_str(), message = %probe.message, "container failed its {} probe, will be restarted", probe.probe.annotation_name());
                    let grace = probe
                        .grace
                        .unwrap_or_else(|| crate::podutil::grace_period(ctx.pod));
                    let kind = probe.probe.annotation_name();
                    let message = format!(
                        "Container {} failed {kind} probe, will be restarted",
                        kill.name
                    );
                    (grace, message)
                }
                KillReason::ResizeRestart => {
                    info!(container = %kill.name, "container resources changed and its resize policy restarts it");
                    let message = format!(
                        "Container {} resize requires restart, will be restarted",
                        kill.name
                    );
                    (crate::podutil::grace_period(ctx.pod), message)
                }
                KillReason::SpecChanged => {
                    info!(container = %kill.name, "container spec changed, will be restarted");
                    let message = format!(
                        "Container {} definition changed, will be restarted",
                        kill.name
                    );
                    (crate::podutil::grace_period(ctx.pod), message)
                }
            };
            if let Err(error) = ctx
                .hooks
                .kill_because(&kill.name, &kill.id, grace, message)
                .await
            {
                if !error.is_not_found() {
                    warn!(container = %kill.name, %error, "killing the container failed");
                }
            }
            outcome.touched.push(kill.id.clone());
            outcome.requeue = outcome.requeue.min(Duration::from_millis(100));
        }
        for created in &actions.start_created {
            self.start_created(ctx.pod, &created.name, &created.id, outcome)
                .await;
        }
        for start in &actions.start {
            let Some(container) = spec_container(ctx.pod, &start.name) else {
                continue;
            };
            if let Some(failed_at) = start.failed_at {
                container_backoff.next(&start.name, failed_at, SystemTime::now());
                info!(container = %start.name, restart = start.attempt, "restarting container");
            }
            self.start_container(ctx, &container, start.attempt, image_backoff, outcome)
                .await;
        }
        for resize in &actions.resize {
            if let Some(container) = spec_container(ctx.pod, &resize.name) {
                let given = applied.get(&resize.id);
                self.resize_container(ctx.pod, &container, &resize.id, given, outcome)
                    .await;
            }
        }
        for hold in &actions.back_off {
            let full_name = crate::podutil::full_name(ctx.pod);
            let uid = crate::podutil::uid(ctx.pod);
            self.events.record(
                &ObjectRef::container(ctx.pod, &hold.name),
                EventType::Warning,
                "BackOff",
                format!(
                    "Back-off restarting failed container {} in pod {full_name}({uid})",
                    hold.name
                ),
            );
            let message = format!(
                "back-off {} restarting failed container={} pod={full_name}({uid})",
                crate::config::duration::format(hold.backoff),
                hold.name,
            );
            outcome.wait(&hold.name, "CrashLoopBackOff", message, hold.left);
        }
    }
}

/// While volumes cannot be set up, every container not yet created waits in
/// `ContainerCreating` with the reason.
fn volume_waiting(
    pod: &Pod,
    runtime: &PodRuntimeStatus,
    message: &str,
) -> HashMap<String, Waiting> {
    pod.spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten().chain(&s.containers))
        .filter(|c| runtime.latest(&c.name).is_none())
        .map(|c| {
            (
                c.name.clone(),
                Waiting {
                    reason: "ContainerCreating".into(),
                    message: message.to_string(),
                },
            )
        })
        .collect()
}
