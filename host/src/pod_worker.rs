//! One task per pod, as upstream's pod workers: it syncs the pod towards its spec (sandbox,
//! init containers in order, app containers, restarts with CrashLoopBackOff), publishes its
//! status, and on removal terminates it gracefully and removes what the runtime held.

use crate::backoff::BackOff;
use crate::cgroups;
use crate::config::BackOffConfig;
use crate::cri::env::PodFacts;
use crate::cri::pod_config::{self, NodeContext};
use crate::cri::{api, CriClient, CriError};
use crate::lifecycle::{PodHooks, MINIMUM_GRACE};
use crate::pleg::ExitHint;
use crate::prober::{self, ContainerProbes, ProbeConfig, ProbeTarget, Prober};
use crate::resources::QosClass;
use crate::runtime_status::{self, PodRuntimeStatus};
use crate::status::{self, StatusInput, StatusStore, Waiting};
use crate::volumes;
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{debug, info, warn, Instrument};

/// Retry period after a failed sync (upstream waits 10s; short periods keep pods moving here).
const SYNC_ERROR_RETRY: Duration = Duration::from_secs(2);

/// What every pod worker shares.
pub struct NodeRuntime {
    pub cri: CriClient,
    pub node: NodeContext,
    pub store: Arc<StatusStore>,
    /// Prefix of container IDs in status (`containerd`).
    pub runtime_name: String,
    pub sync_frequency: Duration,
    pub container_backoff: BackOffConfig,
    pub image_backoff: BackOffConfig,
    /// Probe tasks' shared parts: metrics and the plugin registry (probe, hook and admission
    /// plugins).
    pub prober: Arc<Prober>,
}

/// A message to a pod worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerMessage {
    /// Something changed (a PLEG event, a timer): compare runtime and spec again.
    Sync,
    /// containerd reported a container's exit before CRI recorded it: show it in the status
    /// now; the confirmed event that follows drives the sync.
    Exited {
        container_id: String,
        exit: ExitHint,
    },
    /// The pod was removed: stop it gracefully and remove its containers and sandboxes.
    Terminate,
    /// Node pressure: kill the pod with `grace`, free its volumes, and show it as Failed with
    /// reason Evicted and `message`. It does not run again.
    Evict { message: String, grace: Duration },
}

/// The SyncLoop's side of a worker.
pub struct WorkerHandle {
    pub uid: String,
    /// `<name>_<namespace>`: static pods with the same name run one at a time.
    pub full_name: String,
    messages: mpsc::UnboundedSender<WorkerMessage>,
    /// Becomes true once the worker has finished terminating.
    pub done: watch::Receiver<bool>,
    pub terminating: bool,
}

impl WorkerHandle {
    pub fn send(&self, message: WorkerMessage) {
        let _ = self.messages.send(message);
    }

    pub fn terminate(&mut self) {
        self.terminating = true;
        self.send(WorkerMessage::Terminate);
    }

    pub fn finished(&self) -> bool {
        *self.done.borrow()
    }
}

/// Why a sync could not complete; the worker retries it.
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error(transparent)]
    Runtime(#[from] CriError),
    #[error("cannot build the runtime config: {0}")]
    Config(String),
}

/// `<name>_<namespace>`, as upstream names pods in logs.
pub fn full_name(pod: &Pod) -> String {
    format!(
        "{}_{}",
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.namespace.as_deref().unwrap_or("")
    )
}

/// Starts a worker for `pod`; it waits for `predecessor` (a terminating pod with the same
/// full name) to finish first.
pub fn spawn(
    node: Arc<NodeRuntime>,
    pod: Pod,
    predecessor: Option<watch::Receiver<bool>>,
) -> WorkerHandle {
    let (messages, inbox) = mpsc::unbounded_channel();
    let (done_tx, done) = watch::channel(false);
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let full_name = full_name(&pod);
    let span = tracing::info_span!("pod", pod = %full_name, uid = %uid);
    let probe_configs = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .map(|c| (c.name.clone(), prober::container_probes(&pod, c)))
        .filter(|(_, probes)| !probes.is_empty())
        .collect();
    let worker = PodWorker {
        myself: messages.downgrade(),
        probe_configs,
        probes: HashMap::new(),
        container_backoff: BackOff::new(node.container_backoff),
        image_backoff: BackOff::new(node.image_backoff),
        node,
        pod,
        uid: uid.clone(),
        start_time: None,
        finished: false,
        last_published: None,
        volume_paths: None,
    };
    tokio::spawn(worker.run(inbox, predecessor, done_tx).instrument(span));
    WorkerHandle {
        uid,
        full_name,
        messages,
        done,
        terminating: false,
    }
}

struct PodWorker {
    /// The worker's own inbox, for its probe tasks (weak: the SyncLoop's handle owns it).
    myself: mpsc::WeakUnboundedSender<WorkerMessage>,
    /// The probes of each app container that declares any (spec and plugin annotations).
    probe_configs: HashMap<String, Vec<ProbeConfig>>,
    /// The probe tasks of each running app container.
    probes: HashMap<String, ContainerProbes>,
    node: Arc<NodeRuntime>,
    pod: Pod,
    uid: String,
    container_backoff: BackOff,
    image_backoff: BackOff,
    start_time: Option<Time>,
    /// The pod reached a terminal phase; nothing runs again until it is removed.
    finished: bool,
    /// The runtime view and waiting reasons of the last status published.
    last_published: Option<(PodRuntimeStatus, HashMap<String, Waiting>)>,
    /// Host paths of the pod's volumes, once set up.
    volume_paths: Option<HashMap<String, std::path::PathBuf>>,
}

/// What one sync decided besides the runtime changes it made.
struct SyncOutcome {
    waiting: HashMap<String, Waiting>,
    requeue: Duration,
    /// Containers this sync created or started: their status is re-read before publishing.
    touched: Vec<String>,
}

impl SyncOutcome {
    fn wait(&mut self, container: &str, reason: &str, message: String, retry: Duration) {
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

impl PodWorker {
    async fn run(
        mut self,
        mut inbox: mpsc::UnboundedReceiver<WorkerMessage>,
        predecessor: Option<watch::Receiver<bool>>,
        done: watch::Sender<bool>,
    ) {
        if let Some(mut predecessor) = predecessor {
            debug!("waiting for the previous pod of this name to terminate");
            tokio::select! {
                _ = async { let _ = predecessor.wait_for(|finished| *finished).await; } => {}
                Some(WorkerMessage::Terminate) = inbox.recv() => {
                    self.terminate().await;
                    let _ = done.send(true);
                    return;
                }
            }
        }
        let mut next_sync = Instant::now();
        loop {
            let message = tokio::select! {
                message = inbox.recv() => message,
                _ = tokio::time::sleep_until(next_sync) => Some(WorkerMessage::Sync),
            };
            let Some(first) = message else { return };
            let mut terminate = false;
            let mut sync = false;
            let mut exits = Vec::new();
            let mut evict = None;
            for message in
                std::iter::once(first).chain(std::iter::from_fn(|| inbox.try_recv().ok()))
            {
                match message {
                    WorkerMessage::Terminate => terminate = true,
                    WorkerMessage::Sync => sync = true,
                    WorkerMessage::Exited { container_id, exit } => {
                        exits.push((container_id, exit))
                    }
                    WorkerMessage::Evict { message, grace } => evict = Some((message, grace)),
                }
            }
            if terminate {
                self.terminate().await;
                let _ = done.send(true);
                return;
            }
            if let Some((message, grace)) = evict {
                if !self.finished {
                    self.evict(message, grace).await;
                }
                continue;
            }
            if !exits.is_empty() && !self.finished {
                self.publish_exits(&exits);
            }
            if !sync {
                continue;
            }
            if self.finished {
                next_sync = Instant::now() + self.node.sync_frequency;
                continue;
            }
            let wait = match self.sync().await {
                Ok(wait) => wait,
                Err(error) => {
                    warn!(%error, "pod sync failed; retrying");
                    SYNC_ERROR_RETRY
                }
            };
            next_sync = Instant::now() + wait;
        }
    }

    fn spec_containers(&self) -> (Vec<Container>, Vec<Container>) {
        let spec = self.pod.spec.clone().unwrap_or_default();
        (spec.init_containers.unwrap_or_default(), spec.containers)
    }

    fn restart_policy(&self) -> String {
        self.pod
            .spec
            .as_ref()
            .and_then(|s| s.restart_policy.clone())
            .unwrap_or_else(|| "Always".into())
    }

    async fn fetch(&self) -> Result<PodRuntimeStatus, CriError> {
        PodRuntimeStatus::fetch(&self.node.cri, &self.uid, &self.node.node.node_name).await
    }

    /// One pass of upstream's `computePodActions` + `SyncPod`: returns when to sync again.
    async fn sync(&mut self) -> Result<Duration, SyncError> {
        let mut runtime = self.fetch().await?;
        if self.start_time.is_none() {
            // A pod adopted after a restart keeps the start time of its first sandbox.
            let first_sandbox = runtime
                .sandboxes
                .iter()
                .map(|s| s.created_at)
                .filter(|t| *t > 0)
                .min();
            let started = first_sandbox
                .and_then(runtime_status::time_of)
                .unwrap_or_else(SystemTime::now);
            self.start_time = Some(status::api_time(started));
        }
        // Volumes first, as upstream's WaitForAttachAndMount: no container starts without them.
        // A static pod's spec never changes under its UID, so once set up they stay set up.
        let prepared = match &self.volume_paths {
            Some(_) => Ok(None),
            None => volumes::prepare(&self.pod, &self.node.node.root_dir).map(Some),
        };
        match prepared {
            Ok(Some(paths)) => self.volume_paths = Some(paths),
            Ok(None) => {}
            Err(error) => {
                warn!(%error, "volume setup failed; retrying");
                let (init, app) = self.spec_containers();
                let waiting = init
                    .iter()
                    .chain(&app)
                    .filter(|c| runtime.latest(&c.name).is_none())
                    .map(|c| {
                        (
                            c.name.clone(),
                            Waiting {
                                reason: "ContainerCreating".into(),
                                message: error.to_string(),
                            },
                        )
                    })
                    .collect();
                self.publish(&runtime, &waiting, false);
                return Ok(SYNC_ERROR_RETRY);
            }
        }
        let mut outcome = SyncOutcome {
            waiting: HashMap::new(),
            requeue: self.node.sync_frequency,
            touched: Vec::new(),
        };
        if !runtime.current_sandbox().is_some_and(|s| s.ready) {
            if self.published_phase_is_terminal() {
                return self
                    .finish(runtime)
                    .await
                    .map(|()| self.node.sync_frequency);
            }
            let id = self.create_sandbox(&runtime).await?;
            if runtime.containers.is_empty() {
                // A new pod: the new sandbox is all that changed.
                runtime.add_sandbox(&self.node.cri, &id).await?;
            } else {
                runtime = self.fetch().await?;
            }
        }
        let Some(sandbox) = runtime.current_sandbox().cloned() else {
            return Ok(SYNC_ERROR_RETRY);
        };
        let facts = PodFacts {
            pod_ip: sandbox
                .ips
                .first()
                .cloned()
                .unwrap_or_else(|| self.node.node.node_ip.clone()),
            pod_ips: sandbox.ips.clone(),
            host_ip: self.node.node.node_ip.clone(),
            node_cpu_millis: crate::resources::machine_cpu_millis(),
            node_memory_bytes: self.node.node.machine_memory_bytes,
        };
        let restart_policy = self.restart_policy();
        let (init_containers, containers) = self.spec_containers();
        let mut initialized = true;
        for container in &init_containers {
            let latest = runtime.latest(&container.name).cloned();
            match latest {
                Some(c) if runtime_status::is_exited(&c) && c.exit_code == 0 => continue,
                Some(c) if runtime_status::is_exited(&c) => {
                    if restart_policy != "Never" {
                        self.restart(container, &c, &runtime, &sandbox.id, &facts, &mut outcome)
                            .await?;
                    }
                }
                Some(c) if c.state == api::ContainerState::ContainerCreated as i32 => {
                    self.start_created(&c, &mut outcome).await;
                }
                Some(_) => {}
                None => {
                    self.start(container, 0, &runtime, &sandbox.id, &facts, &mut outcome)
                        .await?
                }
            }
            initialized = false;
            break;
        }
        if initialized {
            for container in &containers {
                let latest = runtime.latest(&container.name).cloned();
                match latest {
                    None => {
                        self.start(container, 0, &runtime, &sandbox.id, &facts, &mut outcome)
                            .await?
                    }
                    Some(c) if c.state == api::ContainerState::ContainerCreated as i32 => {
                        self.start_created(&c, &mut outcome).await;
                    }
                    Some(c) if runtime_status::is_exited(&c) => {
                        let restart = match restart_policy.as_str() {
                            "Always" => true,
                            "OnFailure" => c.exit_code != 0,
                            _ => false,
                        };
                        if restart {
                            self.restart(
                                container,
                                &c,
                                &runtime,
                                &sandbox.id,
                                &facts,
                                &mut outcome,
                            )
                            .await?;
                        }
                    }
                    Some(c) if runtime_status::is_running(&c) => {
                        self.kill_if_unhealthy(&c, &runtime, &facts.pod_ip, &mut outcome)
                            .await;
                    }
                    Some(_) => {}
                }
            }
        }
        runtime
            .refresh_containers(&self.node.cri, &outcome.touched)
            .await?;
        self.update_probes(&runtime, &facts.pod_ip);
        self.publish(&runtime, &outcome.waiting, false);
        if self.published_phase_is_terminal() {
            self.finish(runtime).await?;
        }
        Ok(outcome.requeue)
    }

    fn published_phase_is_terminal(&self) -> bool {
        self.node
            .store
            .get(&self.uid)
            .and_then(|p| p.status)
            .and_then(|s| s.phase)
            .is_some_and(|phase| phase == "Succeeded" || phase == "Failed")
    }

    async fn create_sandbox(&mut self, runtime: &PodRuntimeStatus) -> Result<String, SyncError> {
        // Containers that lost their sandbox cannot keep running in a new one.
        self.stop_containers(runtime).await?;
        for old in &runtime.sandboxes {
            self.node
                .cri
                .stop_pod_sandbox(&old.id)
                .await
                .or_else(ignore_not_found)?;
        }
        let attempt = runtime.current_sandbox().map_or(0, |s| s.attempt + 1);
        let config = pod_config::sandbox_config(&self.pod, &self.node.node, attempt)
            .map_err(SyncError::Config)?;
        if let Err(error) = std::fs::create_dir_all(&config.log_directory) {
            warn!(dir = %config.log_directory, %error, "cannot create the pod log directory");
        }
        let started = std::time::Instant::now();
        let id = self.node.cri.run_pod_sandbox(config).await?;
        info!(sandbox = %id, attempt, elapsed_ms = started.elapsed().as_millis() as u64, "pod sandbox running");
        Ok(id)
    }

    /// What the hooks of this pod may reach, as of `runtime`.
    fn hooks(&self, runtime: &PodRuntimeStatus, pod_ip: &str) -> PodHooks {
        PodHooks {
            cri: self.node.cri.clone(),
            plugins: self.node.prober.plugins.clone(),
            pod: self.pod.clone(),
            pod_ip: pod_ip.to_string(),
            containers: Arc::new(running_containers(runtime)),
        }
    }

    /// The pod IP hooks and probes use: the sandbox's, or the node's under hostNetwork.
    fn pod_ip(&self, runtime: &PodRuntimeStatus) -> String {
        let host_network = self
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.host_network)
            .unwrap_or(false);
        match runtime.current_sandbox().and_then(|s| s.ips.first()) {
            Some(ip) if !host_network => ip.clone(),
            _ => self.node.node.node_ip.clone(),
        }
    }

    /// Kills a running container whose liveness or startup probe failed, as upstream's
    /// `computePodActions` does; it then restarts per its restart policy and back-off.
    async fn kill_if_unhealthy(
        &mut self,
        container: &api::ContainerStatus,
        runtime: &PodRuntimeStatus,
        pod_ip: &str,
        outcome: &mut SyncOutcome,
    ) {
        let name = runtime_status::container_name(container).to_string();
        let Some(reason) = self
            .probes
            .get(&name)
            .filter(|p| p.container_id == container.id)
            .and_then(|p| p.kill_reason())
        else {
            return;
        };
        let (kind, message, probe_grace) = reason;
        info!(container = %name, probe = kind.as_str(), %message, "container failed its {} probe, will be restarted", kind.annotation_name());
        self.probes.remove(&name);
        let grace = probe_grace.unwrap_or_else(|| self.grace_period());
        let hooks = self.hooks(runtime, pod_ip);
        if let Err(error) = hooks.kill(&name, &container.id, grace).await {
            if !error.is_not_found() {
                warn!(container = %name, %error, "killing the unhealthy container failed");
            }
        }
        outcome.touched.push(container.id.clone());
        outcome.requeue = outcome.requeue.min(Duration::from_millis(100));
    }

    /// Starts probe tasks for app containers that run now and stops those of containers
    /// that stopped or were replaced.
    fn update_probes(&mut self, runtime: &PodRuntimeStatus, pod_ip: &str) {
        if self.probe_configs.is_empty() {
            return;
        }
        self.probes.retain(|name, probes| {
            runtime
                .latest(name)
                .is_some_and(|c| c.id == probes.container_id && runtime_status::is_running(c))
        });
        let pod_containers = Arc::new(running_containers(runtime));
        let ports = crate::lifecycle::declared_ports(&self.pod);
        for (name, configs) in &self.probe_configs {
            if self.probes.contains_key(name) {
                continue;
            }
            let Some(running) = runtime
                .latest(name)
                .filter(|c| runtime_status::is_running(c))
            else {
                continue;
            };
            let target = ProbeTarget {
                cri: self.node.cri.clone(),
                plugins: self.node.prober.plugins.clone(),
                metrics: self.node.prober.metrics.clone(),
                namespace: self.pod.metadata.namespace.clone().unwrap_or_default(),
                pod_name: self.pod.metadata.name.clone().unwrap_or_default(),
                pod_uid: self.uid.clone(),
                container: name.clone(),
                container_id: running.id.clone(),
                pod_ip: pod_ip.to_string(),
                pod_ports: ports.clone(),
                pod_containers: pod_containers.clone(),
            };
            let weak = self.myself.clone();
            let notify: prober::Notify = Arc::new(move || {
                if let Some(inbox) = weak.upgrade() {
                    let _ = inbox.send(WorkerMessage::Sync);
                }
            });
            let started_at =
                runtime_status::time_of(running.started_at).unwrap_or_else(SystemTime::now);
            debug!(container = %name, id = %running.id, probes = configs.len(), "starting probes");
            self.probes.insert(
                name.clone(),
                ContainerProbes::start(
                    &self.node.prober,
                    target,
                    configs.clone(),
                    started_at,
                    notify,
                ),
            );
        }
    }

    /// Restarts `container` after its previous attempt `last` exited, unless CrashLoopBackOff
    /// holds it back.
    async fn restart(
        &mut self,
        container: &Container,
        last: &api::ContainerStatus,
        runtime: &PodRuntimeStatus,
        sandbox_id: &str,
        facts: &PodFacts,
        outcome: &mut SyncOutcome,
    ) -> Result<(), SyncError> {
        let now = SystemTime::now();
        let key = container.name.as_str();
        let attempt = runtime_status::attempt(last);
        if let Some(started) = runtime_status::time_of(last.started_at) {
            self.container_backoff.seed(key, attempt, started);
        }
        let failed_at = runtime_status::time_of(last.finished_at).unwrap_or(now);
        if let Some(left) = self.container_backoff.remaining(key, failed_at, now) {
            let backoff = self.container_backoff.current(key).unwrap_or_default();
            let message = format!(
                "back-off {} restarting failed container={} pod={}({})",
                crate::config::duration::format(backoff),
                container.name,
                full_name(&self.pod),
                self.uid
            );
            outcome.wait(&container.name, "CrashLoopBackOff", message, left);
            return Ok(());
        }
        self.container_backoff.next(key, failed_at, now);
        info!(container = %container.name, restart = attempt + 1, exit_code = last.exit_code, "restarting container");
        self.start(container, attempt + 1, runtime, sandbox_id, facts, outcome)
            .await
    }

    /// Starts a container that was created but never started (a sync cut short).
    async fn start_created(&mut self, created: &api::ContainerStatus, outcome: &mut SyncOutcome) {
        outcome.touched.push(created.id.clone());
        if let Err(error) = self.node.cri.start_container(&created.id).await {
            warn!(container = %runtime_status::container_name(created), %error, "starting a created container failed");
        }
    }

    /// Pulls (per policy), creates and starts attempt `restart_count` of `container`.
    async fn start(
        &mut self,
        container: &Container,
        restart_count: u32,
        runtime: &PodRuntimeStatus,
        sandbox_id: &str,
        facts: &PodFacts,
        outcome: &mut SyncOutcome,
    ) -> Result<(), SyncError> {
        if let Err((reason, message, retry)) = self.ensure_image(container).await {
            outcome.wait(&container.name, reason, message, retry);
            return Ok(());
        }
        // Older dead attempts stay until container GC removes them (`gc::containers`).
        let sandbox_attempt = runtime.current_sandbox().map_or(0, |s| s.attempt);
        let sandbox_config =
            pod_config::sandbox_config(&self.pod, &self.node.node, sandbox_attempt)
                .map_err(SyncError::Config)?;
        let config = match pod_config::container_config(
            &self.pod,
            container,
            restart_count,
            facts,
            &self.node.node,
        ) {
            Ok(config) => config,
            Err(message) => {
                outcome.wait(
                    &container.name,
                    "CreateContainerConfigError",
                    message,
                    SYNC_ERROR_RETRY,
                );
                return Ok(());
            }
        };
        let mut config = config;
        match volumes::mounts(
            container,
            self.volume_paths.as_ref().unwrap_or(&HashMap::new()),
        ) {
            Ok(mounts) => config.mounts = mounts,
            Err(error) => {
                outcome.wait(
                    &container.name,
                    "CreateContainerConfigError",
                    error.to_string(),
                    SYNC_ERROR_RETRY,
                );
                return Ok(());
            }
        }
        let id = match self
            .node
            .cri
            .create_container(sandbox_id, config, sandbox_config)
            .await
        {
            Ok(id) => {
                outcome.touched.push(id.clone());
                id
            }
            Err(error) => {
                outcome.wait(
                    &container.name,
                    "CreateContainerError",
                    error.to_string(),
                    SYNC_ERROR_RETRY,
                );
                return Ok(());
            }
        };
        match self.node.cri.start_container(&id).await {
            Ok(()) => {
                info!(container = %container.name, id = %id, restart_count, "container started");
                let declared = container
                    .lifecycle
                    .as_ref()
                    .is_some_and(|l| l.post_start.is_some());
                if declared
                    || self
                        .node
                        .prober
                        .plugins
                        .has(wasmlet_plugin_host::World::LifecycleHooks)
                {
                    let hooks = self.hooks(runtime, &facts.pod_ip);
                    if let Err(message) = hooks.post_start(container, &id).await {
                        // Upstream kills the container; it restarts per its policy.
                        warn!(container = %container.name, reason = crate::lifecycle::HookKind::PostStart.failure_reason(), %message, "postStart hook failed; killing the container");
                        if let Err(error) =
                            hooks.kill(&container.name, &id, self.grace_period()).await
                        {
                            warn!(container = %container.name, %error, "killing the container after its failed postStart hook failed");
                        }
                        outcome.wait(
                            &container.name,
                            "PostStartHookError",
                            message,
                            Duration::from_millis(100),
                        );
                    }
                }
            }
            // The runtime records the failed start (exit 128, StartError); the next sync
            // restarts it under back-off like any other failure.
            Err(error) => warn!(container = %container.name, %error, "container failed to start"),
        }
        Ok(())
    }

    /// Makes the image available per `imagePullPolicy`, or says why the container waits.
    async fn ensure_image(
        &mut self,
        container: &Container,
    ) -> Result<(), (&'static str, String, Duration)> {
        let image = container.image.clone().unwrap_or_default();
        let policy = container
            .image_pull_policy
            .as_deref()
            .unwrap_or("IfNotPresent");
        let present = match self.node.cri.image_status(&image).await {
            Ok(found) => found.is_some(),
            Err(error) => return Err(("ImageInspectError", error.to_string(), SYNC_ERROR_RETRY)),
        };
        match (policy, present) {
            ("Never", true) | ("IfNotPresent", true) => return Ok(()),
            ("Never", false) => {
                let message =
                    format!("Container image \"{image}\" is not present with pull policy of Never");
                return Err(("ErrImageNeverPull", message, self.node.sync_frequency));
            }
            _ => {}
        }
        let now = SystemTime::now();
        if let Some(left) = self.image_backoff.remaining_since_update(&image, now) {
            return Err((
                "ImagePullBackOff",
                format!("Back-off pulling image \"{image}\""),
                left,
            ));
        }
        let sandbox_config = pod_config::sandbox_config(&self.pod, &self.node.node, 0)
            .map_err(|e| ("ErrImagePull", e, SYNC_ERROR_RETRY))?;
        match self.node.cri.pull_image(&image, sandbox_config).await {
            Ok(image_ref) => {
                info!(%image, %image_ref, "image pulled");
                Ok(())
            }
            Err(error) => {
                self.image_backoff.next(&image, now, now);
                warn!(%image, %error, "image pull failed");
                // Sync again soon: the container then shows ImagePullBackOff until the
                // back-off allows the next pull, as upstream.
                Err(("ErrImagePull", error.to_string(), SYNC_ERROR_RETRY))
            }
        }
    }

    /// Shows exits reported by containerd's events in the status at once, on top of the last
    /// runtime view; the sync that follows the confirmed event replaces it with CRI's record.
    fn publish_exits(&mut self, exits: &[(String, ExitHint)]) {
        let Some((mut runtime, waiting)) = self.last_published.clone() else {
            return;
        };
        let mut changed = false;
        for (id, exit) in exits {
            let Some(container) = runtime.containers.iter_mut().find(|c| &c.id == id) else {
                continue;
            };
            // A SIGKILL (137) may be the OOM killer's, whose event can come after the exit:
            // CRI's record says which, so such exits wait for it.
            if !runtime_status::is_running(container) || (exit.exit_code == 137 && !exit.oom_killed)
            {
                continue;
            }
            container.state = api::ContainerState::ContainerExited as i32;
            container.exit_code = exit.exit_code;
            container.finished_at = exit.finished_at;
            container.reason = match (exit.oom_killed, exit.exit_code) {
                (true, _) => "OOMKilled",
                (false, 0) => "Completed",
                (false, _) => "Error",
            }
            .into();
            changed = true;
        }
        if changed {
            debug!(
                exits = exits.len(),
                "status updated from containerd's exit events"
            );
            self.publish(&runtime, &waiting, false);
        }
    }

    fn publish(
        &mut self,
        runtime: &PodRuntimeStatus,
        waiting: &HashMap<String, Waiting>,
        terminal: bool,
    ) {
        self.last_published = Some((runtime.clone(), waiting.clone()));
        let previous = self.node.store.get(&self.uid).and_then(|p| p.status);
        let probes: HashMap<String, prober::ProbeView> = self
            .probes
            .iter()
            .filter(|(name, p)| runtime.latest(name).is_some_and(|c| c.id == p.container_id))
            .map(|(name, p)| (name.clone(), p.view()))
            .collect();
        let status = status::generate(&StatusInput {
            probes: &probes,
            pod: &self.pod,
            runtime,
            waiting,
            host_ip: &self.node.node.node_ip,
            runtime_name: &self.node.runtime_name,
            start_time: self.start_time.clone(),
            previous: previous.as_ref(),
            terminal,
        });
        let mut pod = self.pod.clone();
        pod.status = Some(status);
        self.node.store.set(pod);
    }

    /// The pod is done (Succeeded or Failed): stop its sandbox, keep the exited containers
    /// for their logs and status, as upstream.
    async fn finish(&mut self, runtime: PodRuntimeStatus) -> Result<(), SyncError> {
        self.stop_containers(&runtime).await?;
        self.stop_ready_sandboxes(&runtime).await?;
        let runtime = self.fetch().await?;
        self.publish(&runtime, &HashMap::new(), true);
        self.finished = true;
        info!("pod finished");
        Ok(())
    }

    /// Stops the pod's sandboxes that are still ready (a finished or evicted pod keeps its
    /// exited containers, but not its network and pause process).
    async fn stop_ready_sandboxes(&self, runtime: &PodRuntimeStatus) -> Result<(), CriError> {
        for sandbox in runtime.sandboxes.iter().filter(|s| s.ready) {
            self.node
                .cri
                .stop_pod_sandbox(&sandbox.id)
                .await
                .or_else(ignore_not_found)?;
        }
        Ok(())
    }

    /// Kills the pod for node pressure (upstream `evictPod`): every container with `grace`,
    /// the sandbox stopped, volumes freed (an emptyDir on tmpfs is memory the node needs back),
    /// then the status says Failed / Evicted with a DisruptionTarget condition.
    async fn evict(&mut self, message: String, grace: Duration) {
        let grace = grace.max(MINIMUM_GRACE);
        info!(grace_s = grace.as_secs(), %message, "evicting pod");
        let mut retry = Duration::from_millis(200);
        let runtime = loop {
            let result = async {
                let runtime = self.fetch().await?;
                let hooks = self.hooks(&runtime, &self.pod_ip(&runtime));
                stop_all(&self.node.cri, &runtime, |_| grace, Some(&hooks)).await?;
                self.stop_ready_sandboxes(&runtime).await?;
                self.fetch().await
            }
            .await;
            match result {
                Ok(runtime) => break runtime,
                Err(error) => {
                    warn!(%error, "evicting pod failed; retrying");
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(Duration::from_secs(5));
                }
            }
        };
        volumes::cleanup(&self.node.node.root_dir, &self.uid);
        self.volume_paths = None;
        self.publish(&runtime, &HashMap::new(), true);
        if let Some(mut pod) = self.node.store.get(&self.uid) {
            if let Some(status) = pod.status.as_mut() {
                status::mark_evicted(status, message);
            }
            self.node.store.set(pod);
        }
        self.finished = true;
        info!("pod evicted");
    }

    fn grace_period(&self) -> Duration {
        let seconds = self
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(30);
        Duration::from_secs(seconds.max(0) as u64).max(MINIMUM_GRACE)
    }

    async fn stop_containers(&self, runtime: &PodRuntimeStatus) -> Result<(), CriError> {
        let grace = self.grace_period();
        stop_all(&self.node.cri, runtime, |_| grace, None).await
    }

    /// Graceful termination and removal of everything the runtime holds for the pod.
    async fn terminate(&mut self) {
        let grace = self.grace_period();
        self.pod.metadata.deletion_timestamp = Some(status::api_time(SystemTime::now()));
        self.pod.metadata.deletion_grace_period_seconds = Some(grace.as_secs() as i64);
        if let Some(mut stored) = self.node.store.get(&self.uid) {
            stored.metadata.deletion_timestamp = self.pod.metadata.deletion_timestamp.clone();
            stored.metadata.deletion_grace_period_seconds =
                self.pod.metadata.deletion_grace_period_seconds;
            self.node.store.set(stored);
        }
        // No probe acts on a pod being deleted (upstream sets liveness and startup to success).
        self.probes.clear();
        info!(grace_s = grace.as_secs(), "terminating pod");
        let mut retry = Duration::from_millis(200);
        loop {
            match self.kill_and_remove().await {
                Ok(()) => break,
                Err(error) => {
                    warn!(%error, "terminating pod failed; retrying");
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(Duration::from_secs(5));
                }
            }
        }
        volumes::cleanup(&self.node.node.root_dir, &self.uid);
        cgroups::remove_pod_cgroup(&pod_config::pod_qos(&self.pod).cgroup_parent(&self.uid));
        let log_dir = pod_config::log_directory(&self.node.node.pod_logs_dir, &self.pod);
        if let Err(error) = std::fs::remove_dir_all(&log_dir) {
            if error.kind() != std::io::ErrorKind::NotFound {
                warn!(dir = %log_dir.display(), %error, "cannot remove the pod log directory");
            }
        }
        self.node.store.remove(&self.uid);
        self.node.prober.metrics.forget_pod(&self.uid);
        info!("pod terminated and removed");
    }

    async fn kill_and_remove(&self) -> Result<(), CriError> {
        let runtime = self.fetch().await?;
        let grace = self.grace_period();
        let hooks = self.hooks(&runtime, &self.pod_ip(&runtime));
        kill_and_remove(&self.node.cri, &runtime, |_| grace, Some(&hooks)).await
    }
}

/// Name -> ID of the pod's running containers.
fn running_containers(runtime: &PodRuntimeStatus) -> HashMap<String, String> {
    runtime
        .containers
        .iter()
        .filter(|c| runtime_status::is_running(c))
        .map(|c| (runtime_status::container_name(c).to_string(), c.id.clone()))
        .collect()
}

/// Stops every live container in parallel, each with its own grace period; with `hooks`,
/// each container's preStop hooks run first and their time is taken from its grace.
async fn stop_all(
    cri: &CriClient,
    runtime: &PodRuntimeStatus,
    grace: impl Fn(&api::ContainerStatus) -> Duration,
    hooks: Option<&PodHooks>,
) -> Result<(), CriError> {
    let stops = runtime.live_containers().map(|c| {
        let cri = cri.clone();
        let id = c.id.clone();
        let name = runtime_status::container_name(c).to_string();
        let grace = grace(c);
        async move {
            match hooks {
                Some(hooks) => hooks.kill(&name, &id, grace).await,
                None => {
                    debug!(container = %name, grace_s = grace.as_secs(), "stopping container");
                    cri.stop_container(&id, grace).await
                }
            }
            .or_else(ignore_not_found)
        }
    });
    futures::future::join_all(stops).await.into_iter().collect()
}

/// Stops the pod's containers gracefully, then removes its containers and sandboxes.
async fn kill_and_remove(
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

/// Terminates a pod the runtime still runs for this node but no source wants any more
/// (its manifest went away while wasmlet was down, or its termination was cut short).
/// Each container gets the grace period recorded on it when it was created.
pub async fn remove_orphan(node: Arc<NodeRuntime>, uid: String) {
    let grace_of = |c: &api::ContainerStatus| {
        let seconds = c
            .annotations
            .get(crate::cri::labels::POD_TERMINATION_GRACE_PERIOD)
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(30);
        Duration::from_secs(seconds).max(MINIMUM_GRACE)
    };
    info!(pod_uid = %uid, "terminating orphaned pod");
    let mut retry = Duration::from_millis(200);
    loop {
        let result = match PodRuntimeStatus::fetch(&node.cri, &uid, &node.node.node_name).await {
            Ok(runtime) => kill_and_remove(&node.cri, &runtime, grace_of, None).await,
            Err(error) => Err(error),
        };
        match result {
            Ok(()) => break,
            Err(error) => {
                warn!(pod_uid = %uid, %error, "removing orphaned pod failed; retrying");
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(Duration::from_secs(5));
            }
        }
    }
    volumes::cleanup(&node.node.root_dir, &uid);
    for qos in [
        QosClass::Guaranteed,
        QosClass::Burstable,
        QosClass::BestEffort,
    ] {
        cgroups::remove_pod_cgroup(&qos.cgroup_parent(&uid));
    }
    if let Ok(entries) = std::fs::read_dir(&node.node.pod_logs_dir) {
        let suffix = format!("_{uid}");
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().ends_with(&suffix) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    info!(pod_uid = %uid, "orphaned pod removed");
}

fn ignore_not_found(error: CriError) -> Result<(), CriError> {
    if error.is_not_found() {
        Ok(())
    } else {
        Err(error)
    }
}
