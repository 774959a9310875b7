//! Container lifecycle hooks, as upstream's `pkg/kubelet/lifecycle/handlers.go` and
//! `killContainer`: `postStart` runs right after a container starts and a failure kills it;
//! `preStop` runs before the container is stopped, its time taken from the termination grace
//! period. Handlers: `exec` (CRI ExecSync), `httpGet` (any HTTP answer succeeds; only a
//! transport error fails, as upstream), `sleep`. Every `lifecycle-hooks` plugin runs its
//! `post-start` / `pre-stop` after the spec's handler, scoped to the pod.

use crate::cri::{CriClient, CriError};
use crate::events::{EventRecorder, EventType, ObjectRef};
use crate::podutil::{self, MINIMUM_GRACE};
use crate::prober::{exec, http, wasm};
use k8s_openapi::api::core::v1::{Container, LifecycleHandler, Pod};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{info, warn};
use wasmlet_plugin_host::PodMeta;
use wasmlet_plugin_host::{PluginRegistry, World};

/// Upstream puts no bound on a postStart hook; wasmlet bounds it so a hung hook cannot hold
/// a pod worker forever (the container is killed as for a failed hook).
pub const POST_START_LIMIT: Duration = Duration::from_secs(120);

/// Why a hook failed: upstream's event reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookKind {
    /// `postStart`: a failure kills the container, and its status says `PostStartHookError`.
    PostStart,
    /// `preStop`: a failure is reported, and the container is stopped all the same.
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

/// Why a hook failed. The text is upstream's, shown as the container's `PostStartHookError`
/// message or logged with `FailedPreStopHook`, so it names the container, pod and handler.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// An `exec` handler with an empty command: the spec is wrong, not the container.
    #[error("container {container:?}: lifecycle exec handler has no command")]
    NoCommand {
        /// The container whose handler it is.
        container: String,
    },
    /// The `exec` handler's command ran and exited non-zero.
    #[error(
        "Exec lifecycle hook ({command:?}) for Container {container:?} in Pod {pod:?} failed - error: command {:?} exited with {exit_code}: {output}",
        .command.join(" ")
    )]
    ExecExited {
        /// The handler's command.
        command: Vec<String>,
        /// The container it ran in.
        container: String,
        /// The pod's full name.
        pod: String,
        /// The command's exit code.
        exit_code: i32,
        /// The start of its stdout and stderr, so the cause is visible in the status.
        output: String,
    },
    /// The `exec` handler's command could not be run (or outlived the hook's time).
    #[error(
        "Exec lifecycle hook ({command:?}) for Container {container:?} in Pod {pod:?} failed - error: {source}"
    )]
    Exec {
        /// The handler's command.
        command: Vec<String>,
        /// The container it was to run in.
        container: String,
        /// The pod's full name.
        pod: String,
        /// What the runtime said.
        source: CriError,
    },
    /// The `httpGet` handler names a port or scheme that cannot be used.
    #[error(transparent)]
    InvalidHttpGet(#[from] crate::prober::spec::ProbeSpecError),
    /// The `httpGet` request failed at the transport (any HTTP answer counts as success).
    #[error(
        "HTTP lifecycle hook ({url}) for Container {container:?} in Pod {pod:?} failed - error: {error}"
    )]
    Http {
        /// The URL asked for.
        url: String,
        /// The container the handler belongs to.
        container: String,
        /// The pod's full name.
        pod: String,
        /// What the HTTP client said.
        #[source]
        error: crate::prober::http::GetError,
    },
    /// The blocking task that made the `httpGet` request panicked or was cancelled.
    #[error("HTTP lifecycle hook ({url}): {source}")]
    HttpTask {
        /// The URL asked for.
        url: String,
        /// Why the task ended.
        source: tokio::task::JoinError,
    },
    /// A handler with none of `exec`, `httpGet` or `sleep`.
    #[error(
        "container {container:?}: invalid lifecycle handler (exec, httpGet or sleep expected)"
    )]
    InvalidHandler {
        /// The container whose handler it is.
        container: String,
    },
    /// A `lifecycle-hooks` plugin refused or failed; the text names the plugin.
    #[error(transparent)]
    Plugin(#[from] wasmlet_plugin_host::PluginError),
    /// The blocking task that ran the hook plugins panicked or was cancelled.
    #[error("hook plugin task: {0}")]
    PluginTask(#[source] tokio::task::JoinError),
    /// The preStop hooks used up the whole grace period.
    #[error("PreStopHook did not finish within the grace period of {}s", .grace.as_secs())]
    PreStopTimeout {
        /// The grace period they had.
        grace: Duration,
    },
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
    /// `Killing` and `FailedPreStopHook` go here.
    pub events: Arc<dyn EventRecorder>,
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
        podutil::declared_ports(&self.pod)
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
        podutil::full_name(&self.pod)
    }

    /// Runs the postStart hooks of `container` (started as `id`): the spec's handler, then
    /// every hooks plugin. The error is the message upstream shows (`PostStartHookError`).
    pub async fn post_start(&self, container: &Container, id: &str) -> Result<(), HookError> {
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
            Err(_) => Err(HookError::PreStopTimeout { grace }),
        };
        match result {
            Ok(()) if handler.is_some() => {
                info!(container = %name, elapsed_ms = started.elapsed().as_millis() as u64, "preStop hook finished")
            }
            Ok(()) => {}
            Err(message) => {
                warn!(
                    container = %name,
                    reason = HookKind::PreStop.failure_reason(),
                    %message,
                    "preStop hook failed"
                );
                // Upstream keeps the handler's output out of the event (it may hold secrets)
                // and records none when the grace period ran out first.
                if !matches!(message, HookError::PreStopTimeout { .. }) {
                    self.events.record(
                        &ObjectRef::container(&self.pod, name),
                        EventType::Warning,
                        HookKind::PreStop.failure_reason(),
                        "PreStopHook failed".into(),
                    );
                }
            }
        }
        started.elapsed()
    }

    /// Upstream's `killContainer`: a `Killing` event ("Stopping container <name>"), the
    /// preStop hooks, with their time taken from `grace`, then `StopContainer` with what is
    /// left (at least 2 s).
    pub async fn kill(&self, name: &str, id: &str, grace: Duration) -> Result<(), CriError> {
        self.kill_because(name, id, grace, format!("Stopping container {name}"))
            .await
    }

    /// [`PodHooks::kill`] with the `Killing` event's `message` naming why (a failed probe, a
    /// changed spec, a failed postStart hook).
    pub async fn kill_because(
        &self,
        name: &str,
        id: &str,
        grace: Duration,
        message: String,
    ) -> Result<(), CriError> {
        self.kill_in_turn(name, id, grace, message, std::future::ready(()))
            .await
    }

    /// [`PodHooks::kill_because`] for a container that must outlive others: after its preStop
    /// hooks it waits for `turn` (the containers it outlives exiting), within the grace left,
    /// and is stopped with what is left then (at least 2 s), as upstream's `killContainer`.
    pub async fn kill_in_turn(
        &self,
        name: &str,
        id: &str,
        grace: Duration,
        message: String,
        turn: impl Future<Output = ()>,
    ) -> Result<(), CriError> {
        self.events.record(
            &ObjectRef::container(&self.pod, name),
            EventType::Normal,
            "Killing",
            message,
        );
        let spent = self.pre_stop(name, id, grace).await;
        // Whole seconds, as upstream (`gracePeriod - int64(time.Since(start).Seconds())`):
        // CRI takes seconds, and a hook of a few milliseconds must not cost a second.
        let after_hooks = podutil::whole_seconds_left(grace, spent);
        let waited = podutil::wait_for_turn(turn, after_hooks).await;
        let left = podutil::whole_seconds_left(after_hooks, waited).max(MINIMUM_GRACE);
        info!(container = %name, grace_s = left.as_secs(), prestop_ms = spent.as_millis() as u64, waited_ms = waited.as_millis() as u64, "stopping container");
        self.cri.stop_container(id, left).await
    }

    async fn run(
        &self,
        handler: &LifecycleHandler,
        container: &Container,
        id: &str,
        deadline: Instant,
    ) -> Result<(), HookError> {
        let left = deadline.saturating_duration_since(Instant::now());
        let pod = self.pod_name();
        if let Some(action) = &handler.exec {
            let command = action.command.clone().unwrap_or_default();
            if command.is_empty() {
                return Err(HookError::NoCommand {
                    container: container.name.clone(),
                });
            }
            return match self.cri.exec_sync(id, command.clone(), left).await {
                Ok(r) if r.exit_code == 0 => Ok(()),
                Ok(r) => Err(HookError::ExecExited {
                    output: exec::output(&r.stdout, &r.stderr),
                    exit_code: r.exit_code,
                    command,
                    container: container.name.clone(),
                    pod,
                }),
                Err(source) => Err(HookError::Exec {
                    command,
                    container: container.name.clone(),
                    pod,
                    source,
                }),
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
                Ok(Err(error)) => Err(HookError::Http {
                    url,
                    container: container.name.clone(),
                    pod,
                    error,
                }),
                Err(source) => Err(HookError::HttpTask { url, source }),
            };
        }
        if let Some(sleep) = &handler.sleep {
            let wait = Duration::from_secs(sleep.seconds.max(0) as u64).min(left);
            tokio::time::sleep(wait).await;
            return Ok(());
        }
        Err(HookError::InvalidHandler {
            container: container.name.clone(),
        })
    }

    async fn run_plugins(
        &self,
        kind: HookKind,
        container: &str,
        id: &str,
        deadline: Instant,
    ) -> Result<(), HookError> {
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
        .map_err(HookError::PluginTask)?
        .map_err(HookError::Plugin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// These texts are what `PostStartHookError` shows and what upstream prints.
    #[test]
    fn errors_read_as_before() {
        let command = vec!["sh".to_string(), "-c".to_string(), "exit 3".to_string()];
        let exited = HookError::ExecExited {
            command: command.clone(),
            container: "web".into(),
            pod: "web-node_default(uid)".into(),
            exit_code: 3,
            output: "boom".into(),
        };
        assert_eq!(
            exited.to_string(),
            r#"Exec lifecycle hook (["sh", "-c", "exit 3"]) for Container "web" in Pod "web-node_default(uid)" failed - error: command "sh -c exit 3" exited with 3: boom"#
        );
        let exec = HookError::Exec {
            command,
            container: "web".into(),
            pod: "p".into(),
            source: CriError::Timeout {
                rpc: "ExecSync",
                after: Duration::from_secs(1),
            },
        };
        assert_eq!(
            exec.to_string(),
            r#"Exec lifecycle hook (["sh", "-c", "exit 3"]) for Container "web" in Pod "p" failed - error: CRI ExecSync timed out after 1s"#
        );
        let http = HookError::Http {
            url: "http://10.0.0.1:80/".into(),
            container: "web".into(),
            pod: "p".into(),
            error: crate::prober::http::GetError::TooManyRedirects {
                url: "http://10.0.0.1:80/loop".into(),
            },
        };
        assert_eq!(
            http.to_string(),
            r#"HTTP lifecycle hook (http://10.0.0.1:80/) for Container "web" in Pod "p" failed - error: Get "http://10.0.0.1:80/loop": stopped after 10 redirects"#
        );
        assert_eq!(
            HookError::NoCommand {
                container: "web".into()
            }
            .to_string(),
            r#"container "web": lifecycle exec handler has no command"#
        );
        assert_eq!(
            HookError::InvalidHandler {
                container: "web".into()
            }
            .to_string(),
            r#"container "web": invalid lifecycle handler (exec, httpGet or sleep expected)"#
        );
        assert_eq!(
            HookError::PreStopTimeout {
                grace: Duration::from_millis(30_500)
            }
            .to_string(),
            "PreStopHook did not finish within the grace period of 30s"
        );
        assert_eq!(
            HookError::Plugin(wasmlet_plugin_host::PluginError::Refused {
                plugin: "x".into(),
                reason: "no".into()
            })
            .to_string(),
            "plugin x: no"
        );
    }
}
