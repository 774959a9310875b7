//! Container lifecycle hooks, as upstream's `pkg/kubelet/lifecycle/handlers.go` and
//! `killContainer`: `postStart` runs right after a container starts and a failure kills it;
//! `preStop` runs before the container is stopped, its time taken from the termination grace
//! period. Handlers: `exec` (CRI ExecSync), `httpGet` (any HTTP answer succeeds; only a
//! transport error fails, as upstream), `sleep`. Every `lifecycle-hooks` plugin runs its
//! `post-start` / `pre-stop` after the spec's handler, scoped to the pod.

use crate::cri::{CriClient, CriError};
use crate::prober::{exec, http, wasm};
use k8s_openapi::api::core::v1::{Container, LifecycleHandler, Pod};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{info, warn};
use wasmlet_plugin_host::{PluginRegistry, PodMeta, World};

/// Upstream's floor on the grace period given to a container (`minimumGracePeriodInSeconds`).
pub const MINIMUM_GRACE: Duration = Duration::from_secs(2);

/// Upstream puts no bound on a postStart hook; wasmlet bounds it so a hung hook cannot hold
/// a pod worker forever (the container is killed as for a failed hook).
pub const POST_START_LIMIT: Duration = Duration::from_secs(120);

/// Why a hook failed: upstream's event reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookKind {
    PostStart,
    PreStop,
}

impl HookKind {
    /// The event reason of a failure (`FailedPostStartHook` / `FailedPreStopHook`).
    pub fn failure_reason(self) -> &'static str {
        match self {
            HookKind::PostStart => "FailedPostStartHook",
            HookKind::PreStop => "FailedPreStopHook",
        }
    }
}

/// What the hooks of one pod may reach.
#[derive(Clone)]
pub struct PodHooks {
    /// For exec handlers and `StopContainer`.
    pub cri: CriClient,
    /// The `lifecycle-hooks` plugins, run after the spec's handler.
    pub plugins: Arc<PluginRegistry>,
    /// The spec the handlers come from.
    pub pod: Pod,
    /// The pod IP (the node IP under hostNetwork): the default host of httpGet handlers.
    pub pod_ip: String,
    /// Container name -> running container ID, for plugins' scoped exec.
    pub containers: Arc<HashMap<String, String>>,
}

impl PodHooks {
    fn container_spec(&self, name: &str) -> Option<&Container> {
        self.pod.spec.as_ref().and_then(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
                .find(|c| c.name == name)
        })
    }

    fn ports(&self) -> Vec<u16> {
        declared_ports(&self.pod)
    }

    fn meta(&self) -> PodMeta {
        let m = &self.pod.metadata;
        PodMeta {
            namespace: m.namespace.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            uid: m.uid.clone().unwrap_or_default(),
            labels: m.labels.clone().unwrap_or_default(),
            annotations: m.annotations.clone().unwrap_or_default(),
        }
    }

    fn pod_name(&self) -> String {
        crate::pod_worker::full_name(&self.pod)
    }

    /// Runs the postStart hooks of `container` (started as `id`): the spec's handler, then
    /// every hooks plugin. The error is the message upstream shows (`PostStartHookError`).
    pub async fn post_start(&self, container: &Container, id: &str) -> Result<(), String> {
        let deadline = Instant::now() + POST_START_LIMIT;
        if let Some(handler) = container
            .lifecycle
            .as_ref()
            .and_then(|l| l.post_start.as_ref())
        {
            self.run(handler, container, id, deadline).await?;
        }
        self.run_plugins(HookKind::PostStart, &container.name, id, deadline)
            .await
    }

    /// Runs the preStop hooks of container `name` (`id`) within `grace`; returns how long
    /// they took. A failure is logged with its reason; termination goes on regardless.
    pub async fn pre_stop(&self, name: &str, id: &str, grace: Duration) -> Duration {
        let started = Instant::now();
        let deadline = started + grace;
        let spec = self.container_spec(name).cloned();
        let handler = spec
            .as_ref()
            .and_then(|c| c.lifecycle.as_ref())
            .and_then(|l| l.pre_stop.clone());
        let hooks = async {
            if let (Some(handler), Some(container)) = (&handler, &spec) {
                self.run(handler, container, id, deadline).await?;
            }
            self.run_plugins(HookKind::PreStop, name, id, deadline)
                .await
        };
        let result = match tokio::time::timeout(grace, hooks).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "PreStopHook did not finish within the grace period of {}s",
                grace.as_secs()
            )),
        };
        match result {
            Ok(()) if handler.is_some() => {
                info!(container = %name, elapsed_ms = started.elapsed().as_millis() as u64, "preStop hook finished")
            }
            Ok(()) => {}
            Err(message) => warn!(
                container = %name,
                reason = HookKind::PreStop.failure_reason(),
                %message,
                "preStop hook failed"
            ),
        }
        started.elapsed()
    }

    /// Upstream's `killContainer`: the preStop hooks, with their time taken from `grace`,
    /// then `StopContainer` with what is left (at least 2 s).
    pub async fn kill(&self, name: &str, id: &str, grace: Duration) -> Result<(), CriError> {
        let spent = self.pre_stop(name, id, grace).await;
        // Whole seconds, as upstream (`gracePeriod - int64(time.Since(start).Seconds())`):
        // CRI takes seconds, and a hook of a few milliseconds must not cost a second.
        let left =
            Duration::from_secs(grace.as_secs().saturating_sub(spent.as_secs())).max(MINIMUM_GRACE);
        info!(container = %name, grace_s = left.as_secs(), prestop_ms = spent.as_millis() as u64, "stopping container");
        self.cri.stop_container(id, left).await
    }

    async fn run(
        &self,
        handler: &LifecycleHandler,
        container: &Container,
        id: &str,
        deadline: Instant,
    ) -> Result<(), String> {
        let left = deadline.saturating_duration_since(Instant::now());
        let pod = self.pod_name();
        if let Some(action) = &handler.exec {
            let command = action.command.clone().unwrap_or_default();
            if command.is_empty() {
                return Err(format!(
                    "container {:?}: lifecycle exec handler has no command",
                    container.name
                ));
            }
            return match self.cri.exec_sync(id, command.clone(), left).await {
                Ok(r) if r.exit_code == 0 => Ok(()),
                Ok(r) => Err(format!(
                    "Exec lifecycle hook ({command:?}) for Container {:?} in Pod {pod:?} failed - error: command {:?} exited with {}: {}",
                    container.name,
                    command.join(" "),
                    r.exit_code,
                    exec::output(&r.stdout, &r.stderr)
                )),
                Err(error) => Err(format!(
                    "Exec lifecycle hook ({command:?}) for Container {:?} in Pod {pod:?} failed - error: {error}",
                    container.name
                )),
            };
        }
        if let Some(get) = &handler.http_get {
            let action = http::HttpGet::from_spec(get, container, "lifecycle.httpGet")?;
            let pod_ip = self.pod_ip.clone();
            let url = action.url(&pod_ip);
            let timeout = left.max(Duration::from_millis(1));
            let answer =
                tokio::task::spawn_blocking(move || http::get(&action, &pod_ip, timeout)).await;
            return match answer {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(error)) => Err(format!(
                    "HTTP lifecycle hook ({url}) for Container {:?} in Pod {pod:?} failed - error: {error}",
                    container.name
                )),
                Err(error) => Err(format!("HTTP lifecycle hook ({url}): {error}")),
            };
        }
        if let Some(sleep) = &handler.sleep {
            let wait = Duration::from_secs(sleep.seconds.max(0) as u64).min(left);
            tokio::time::sleep(wait).await;
            return Ok(());
        }
        Err(format!(
            "container {:?}: invalid lifecycle handler (exec, httpGet or sleep expected)",
            container.name
        ))
    }

    async fn run_plugins(
        &self,
        kind: HookKind,
        container: &str,
        id: &str,
        deadline: Instant,
    ) -> Result<(), String> {
        if !self.plugins.has(World::LifecycleHooks) {
            return Ok(());
        }
        let mut containers = (*self.containers).clone();
        containers.insert(container.to_string(), id.to_string());
        let scope = wasm::scope(
            &self.cri,
            &self.pod_ip,
            &self.ports(),
            &Arc::new(containers),
            deadline,
        );
        let registry = self.plugins.clone();
        let meta = self.meta();
        let name = container.to_string();
        tokio::task::spawn_blocking(move || match kind {
            HookKind::PostStart => registry.post_start(&name, meta, scope),
            HookKind::PreStop => registry.pre_stop(&name, meta, scope),
        })
        .await
        .map_err(|error| format!("hook plugin task: {error}"))?
        .map_err(|error| error.to_string())
    }
}

/// The container ports `pod` declares (app and init containers), sorted and deduplicated:
/// what a scoped plugin's `tcp-connect` and `http-get` may reach.
pub fn declared_ports(pod: &Pod) -> Vec<u16> {
    let mut ports: Vec<u16> = pod
        .spec
        .iter()
        .flat_map(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
        })
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| u16::try_from(p.container_port).ok())
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}
