//! A CRI client over a unix socket: every call has a deadline and every error names its RPC,
//! so a log line says which runtime call failed and why.

use super::api;
use super::api::image_service_client::ImageServiceClient;
use super::api::runtime_service_client::RuntimeServiceClient;
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tonic::transport::{Channel, Endpoint, Uri};

/// Cheap to clone: clones share one HTTP/2 connection to the runtime.
#[derive(Clone)]
pub struct CriClient {
    channel: Channel,
    runtime: RuntimeServiceClient<Channel>,
    images: ImageServiceClient<Channel>,
    timeout: Duration,
    /// Bounds the runtime's heavy mutations (RunPodSandbox, CreateContainer, StartContainer)
    /// in flight at once; `None` leaves them unbounded.
    start_limit: Option<Arc<Semaphore>>,
}

const MAX_MESSAGE_BYTES: usize = 64 << 20;

macro_rules! call {
    ($self:ident . $service:ident . $method:ident ($request:expr), $rpc:literal) => {
        call!($self.$service.$method($request), $rpc, $self.timeout)
    };
    ($self:ident . $service:ident . $method:ident ($request:expr), $rpc:literal, $timeout:expr) => {{
        let mut service = $self.$service.clone();
        let timeout = $timeout;
        let began = std::time::Instant::now();
        let answer = tokio::time::timeout(timeout, service.$method($request)).await;
        crate::metrics::kubelet::kubelet().runtime_operation(
            $rpc,
            began.elapsed().as_secs_f64(),
            !matches!(answer, Ok(Ok(_))),
        );
        match answer {
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => Err(CriError::Rpc {
                rpc: $rpc,
                code: status.code(),
                message: status.message().to_string(),
            }),
            Err(_) => Err(CriError::Timeout {
                rpc: $rpc,
                after: timeout,
            }),
        }
    }};
}

/// How long past its grace a graceful StopContainer may take before wasmlet asks for a kill.
pub const STOP_ESCALATION: Duration = Duration::from_secs(10);

/// Label selectors for list calls, as CRI takes them.
pub type Labels = HashMap<String, String>;

/// Which standard streams an exec or attach session carries, as CRI's requests name them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// The client sends input.
    pub stdin: bool,
    /// The client reads standard output.
    pub stdout: bool,
    /// The client reads standard error (never with `tty`: a terminal merges it into stdout).
    pub stderr: bool,
    /// The process gets a terminal.
    pub tty: bool,
}

impl CriClient {
    /// Connects lazily: the first call dials, and a broken connection is redialled on the next.
    pub fn connect(socket: impl Into<PathBuf>, timeout: Duration) -> Result<Self, CriError> {
        let socket: PathBuf = socket.into();
        let endpoint =
            Endpoint::try_from("http://runtime.invalid").map_err(|e| CriError::Endpoint {
                endpoint: socket.display().to_string(),
                message: e.to_string(),
            })?;
        let channel = endpoint
            .connect_timeout(Duration::from_secs(5))
            .connect_with_connector_lazy(tower::service_fn(move |_: Uri| {
                let socket = socket.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(socket).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(stream))
                }
            }));
        Ok(Self {
            channel: channel.clone(),
            runtime: RuntimeServiceClient::new(channel.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            images: ImageServiceClient::new(channel).max_decoding_message_size(MAX_MESSAGE_BYTES),
            timeout,
            start_limit: None,
        })
    }

    /// At most `parallel` sandbox and container starts in flight (0: no bound). containerd
    /// serialises much of that work (CNI, snapshots, runc), and under a burst of starts a few at
    /// a time finish sooner than all at once; waiting for a slot is not part of a call's deadline.
    pub fn with_start_limit(mut self, parallel: usize) -> Self {
        self.start_limit = (parallel > 0).then(|| Arc::new(Semaphore::new(parallel)));
        self
    }

    /// A slot for one start, held until the call answers.
    async fn start_slot(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        match &self.start_limit {
            // The semaphore is never closed.
            Some(limit) => limit.acquire().await.ok(),
            None => None,
        }
    }

    /// Subscribes to containerd's own event stream (containerd 1.6 has no CRI
    /// GetContainerEvents); `filters` use containerd's filter syntax (`topic=="/tasks/exit"`).
    /// containerd sends the response headers only with the first event, so this returns only
    /// then: callers must not wait on it in a loop that has other work.
    pub async fn subscribe_events(
        &self,
        filters: Vec<String>,
    ) -> Result<tonic::Streaming<crate::cri::containerd::services::events::v1::Envelope>, CriError>
    {
        use crate::cri::containerd::services::events::v1 as events;
        let mut client = events::events_client::EventsClient::new(self.channel.clone())
            .max_decoding_message_size(MAX_MESSAGE_BYTES);
        let request = events::SubscribeRequest { filters };
        match client.subscribe(request).await {
            Ok(response) => Ok(response.into_inner()),
            Err(status) => Err(CriError::Rpc {
                rpc: "Events/Subscribe",
                code: status.code(),
                message: status.message().to_string(),
            }),
        }
    }

    /// CRI's own container event stream (`GetContainerEvents`), for runtimes that offer it;
    /// containerd 1.6 answers `Unimplemented`.
    pub async fn get_container_events(
        &self,
    ) -> Result<tonic::Streaming<api::ContainerEventResponse>, CriError> {
        let mut service = self.runtime.clone();
        match service.get_container_events(api::GetEventsRequest {}).await {
            Ok(response) => Ok(response.into_inner()),
            Err(status) => Err(CriError::Rpc {
                rpc: "GetContainerEvents",
                code: status.code(),
                message: status.message().to_string(),
            }),
        }
    }

    /// `Version`: the first call made, to learn the runtime is up and which one it is.
    pub async fn version(&self) -> Result<api::VersionResponse, CriError> {
        let request = api::VersionRequest {
            version: "v1".into(),
        };
        call!(self.runtime.version(request), "Version")
    }

    /// `Status`: the runtime's RuntimeReady and NetworkReady conditions.
    pub async fn status(&self) -> Result<api::StatusResponse, CriError> {
        call!(
            self.runtime.status(api::StatusRequest { verbose: false }),
            "Status"
        )
    }

    /// `Status` with the runtime's verbose info (containerd puts its CRI config there,
    /// including `sandboxImage`).
    pub async fn status_verbose(&self) -> Result<api::StatusResponse, CriError> {
        call!(
            self.runtime.status(api::StatusRequest { verbose: true }),
            "Status"
        )
    }

    /// `RunPodSandbox`: creates the pod's sandbox (namespaces, network) and returns its ID.
    pub async fn run_pod_sandbox(&self, config: api::PodSandboxConfig) -> Result<String, CriError> {
        let request = api::RunPodSandboxRequest {
            config: Some(config),
            runtime_handler: String::new(),
        };
        let _slot = self.start_slot().await;
        // Sandbox creation includes CNI setup; give it the longer of the deadlines.
        let response = call!(
            self.runtime.run_pod_sandbox(request),
            "RunPodSandbox",
            self.timeout.max(Duration::from_secs(240))
        )?;
        Ok(response.pod_sandbox_id)
    }

    /// `StopPodSandbox`: stops the sandbox's processes and releases its network.
    pub async fn stop_pod_sandbox(&self, id: &str) -> Result<(), CriError> {
        let request = api::StopPodSandboxRequest {
            pod_sandbox_id: id.into(),
        };
        call!(self.runtime.stop_pod_sandbox(request), "StopPodSandbox").map(drop)
    }

    /// `RemovePodSandbox`: deletes a stopped sandbox and what is left in it.
    pub async fn remove_pod_sandbox(&self, id: &str) -> Result<(), CriError> {
        let request = api::RemovePodSandboxRequest {
            pod_sandbox_id: id.into(),
        };
        call!(self.runtime.remove_pod_sandbox(request), "RemovePodSandbox").map(drop)
    }

    /// `PodSandboxStatus`: the sandbox's state and IP, for the pod's status.
    pub async fn pod_sandbox_status(&self, id: &str) -> Result<api::PodSandboxStatus, CriError> {
        let request = api::PodSandboxStatusRequest {
            pod_sandbox_id: id.into(),
            verbose: false,
        };
        let response = call!(self.runtime.pod_sandbox_status(request), "PodSandboxStatus")?;
        response.status.ok_or(CriError::Rpc {
            rpc: "PodSandboxStatus",
            code: tonic::Code::Internal,
            message: format!("runtime returned no status for sandbox {id}"),
        })
    }

    /// Sandboxes carrying all of `labels`.
    pub async fn list_pod_sandbox(&self, labels: Labels) -> Result<Vec<api::PodSandbox>, CriError> {
        let request = api::ListPodSandboxRequest {
            filter: Some(api::PodSandboxFilter {
                label_selector: labels,
                ..Default::default()
            }),
        };
        Ok(call!(self.runtime.list_pod_sandbox(request), "ListPodSandbox")?.items)
    }

    /// `CreateContainer`: creates a container in `sandbox_id` and returns its ID.
    pub async fn create_container(
        &self,
        sandbox_id: &str,
        config: api::ContainerConfig,
        sandbox_config: api::PodSandboxConfig,
    ) -> Result<String, CriError> {
        let request = api::CreateContainerRequest {
            pod_sandbox_id: sandbox_id.into(),
            config: Some(config),
            sandbox_config: Some(sandbox_config),
        };
        let _slot = self.start_slot().await;
        Ok(call!(self.runtime.create_container(request), "CreateContainer")?.container_id)
    }

    /// `StartContainer`: runs a created container.
    pub async fn start_container(&self, id: &str) -> Result<(), CriError> {
        let request = api::StartContainerRequest {
            container_id: id.into(),
        };
        let _slot = self.start_slot().await;
        call!(self.runtime.start_container(request), "StartContainer").map(drop)
    }

    /// `UpdateContainerResources`: new cgroup values for a running container (an in-place
    /// resize).
    pub async fn update_container_resources(
        &self,
        id: &str,
        linux: api::LinuxContainerResources,
    ) -> Result<(), CriError> {
        let request = api::UpdateContainerResourcesRequest {
            container_id: id.into(),
            linux: Some(linux),
            ..Default::default()
        };
        call!(
            self.runtime.update_container_resources(request),
            "UpdateContainerResources"
        )
        .map(drop)
    }

    /// Stops with SIGTERM, then SIGKILL after `grace`. If the runtime has not answered
    /// [`STOP_ESCALATION`] past the grace (seen with containerd 1.6 when an exec raced the
    /// stop and wedged the shim's state call), it asks again with no grace: a kill gets through
    /// where the graceful stop waits, and termination does not hang for the whole deadline.
    pub async fn stop_container(&self, id: &str, grace: Duration) -> Result<(), CriError> {
        let request = |timeout: Duration| api::StopContainerRequest {
            container_id: id.into(),
            timeout: timeout.as_secs() as i64,
        };
        let first = call!(
            self.runtime.stop_container(request(grace)),
            "StopContainer",
            (grace + STOP_ESCALATION).min(self.timeout + grace)
        );
        match first {
            Err(CriError::Timeout { .. }) => {
                tracing::warn!(container = %id, grace_s = grace.as_secs(), "container did not stop within its grace period; killing it");
                call!(
                    self.runtime.stop_container(request(Duration::ZERO)),
                    "StopContainer"
                )
                .map(drop)
            }
            other => other.map(drop),
        }
    }

    /// `RemoveContainer`: deletes an exited container so its name can be reused.
    pub async fn remove_container(&self, id: &str) -> Result<(), CriError> {
        let request = api::RemoveContainerRequest {
            container_id: id.into(),
        };
        call!(self.runtime.remove_container(request), "RemoveContainer").map(drop)
    }

    /// Containers carrying all of `labels`.
    pub async fn list_containers(&self, labels: Labels) -> Result<Vec<api::Container>, CriError> {
        let request = api::ListContainersRequest {
            filter: Some(api::ContainerFilter {
                label_selector: labels,
                ..Default::default()
            }),
        };
        Ok(call!(self.runtime.list_containers(request), "ListContainers")?.containers)
    }

    /// `ContainerStatus`: exit code, reason and times, for the container's status.
    pub async fn container_status(&self, id: &str) -> Result<api::ContainerStatus, CriError> {
        let request = api::ContainerStatusRequest {
            container_id: id.into(),
            verbose: false,
        };
        let response = call!(self.runtime.container_status(request), "ContainerStatus")?;
        response.status.ok_or(CriError::Rpc {
            rpc: "ContainerStatus",
            code: tonic::Code::Internal,
            message: format!("runtime returned no status for container {id}"),
        })
    }

    /// Runs `cmd` in container `id` and waits for it (probes and hooks, as upstream's
    /// `RunInContainer`). `timeout` bounds the command (zero: none); the runtime kills it when
    /// the timeout passes and answers `DeadlineExceeded`, which [`CriError::is_timeout`] tells.
    pub async fn exec_sync(
        &self,
        id: &str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> Result<api::ExecSyncResponse, CriError> {
        let request = api::ExecSyncRequest {
            container_id: id.into(),
            cmd,
            // CRI takes whole seconds; round up so a sub-second timeout is not "none".
            timeout: timeout.as_millis().div_ceil(1000) as i64,
        };
        call!(
            self.runtime.exec_sync(request),
            "ExecSync",
            self.timeout + timeout
        )
    }

    /// `Exec`: a one-time URL on the runtime's streaming server that runs `cmd` in container
    /// `id` once a client upgrades to it (upstream's `GetExec`); wasmlet proxies the stream.
    pub async fn exec(
        &self,
        id: &str,
        cmd: Vec<String>,
        streams: StreamOptions,
    ) -> Result<String, CriError> {
        let request = api::ExecRequest {
            container_id: id.into(),
            cmd,
            tty: streams.tty,
            stdin: streams.stdin,
            stdout: streams.stdout,
            stderr: streams.stderr,
        };
        Ok(call!(self.runtime.exec(request), "Exec")?.url)
    }

    /// `Attach`: a one-time streaming URL attached to the main process of container `id`.
    pub async fn attach(&self, id: &str, streams: StreamOptions) -> Result<String, CriError> {
        let request = api::AttachRequest {
            container_id: id.into(),
            stdin: streams.stdin,
            tty: streams.tty,
            stdout: streams.stdout,
            stderr: streams.stderr,
        };
        Ok(call!(self.runtime.attach(request), "Attach")?.url)
    }

    /// `PortForward`: a one-time streaming URL forwarding into the network namespace of
    /// sandbox `sandbox_id`. `ports` is what a WebSocket client asked for in its query; SPDY
    /// clients name their ports per stream and pass none.
    pub async fn port_forward(
        &self,
        sandbox_id: &str,
        ports: Vec<i32>,
    ) -> Result<String, CriError> {
        let request = api::PortForwardRequest {
            pod_sandbox_id: sandbox_id.into(),
            port: ports,
        };
        Ok(call!(self.runtime.port_forward(request), "PortForward")?.url)
    }

    /// Usage stats of the containers carrying all of `labels`.
    pub async fn list_container_stats(
        &self,
        labels: Labels,
    ) -> Result<Vec<api::ContainerStats>, CriError> {
        let request = api::ListContainerStatsRequest {
            filter: Some(api::ContainerStatsFilter {
                label_selector: labels,
                ..Default::default()
            }),
        };
        Ok(call!(
            self.runtime.list_container_stats(request),
            "ListContainerStats"
        )?
        .stats)
    }
}

mod error;
mod images;

pub use error::CriError;
