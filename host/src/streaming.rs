//! The kubelet's streaming endpoints (`/exec`, `/attach`, `/portForward`, `/run`), as
//! upstream's `pkg/kubelet/server/server.go` serves them on the secure port: the pod and
//! container are resolved here, the runtime (containerd's CRI streaming server) is asked for
//! a one-time URL, and [`proxy`] splices the client's upgraded connection to it. `/run` is
//! not streamed: it runs the command with CRI `ExecSync` and answers its output.
//!
//! The router carries no authentication: it is merged into the secure port's router, which
//! authenticates and authorizes (`nodes/proxy`) every request before it gets here.

pub mod options;
pub mod proxy;

use crate::cri::{api, labels, CriClient, CriError, Labels};
use crate::status::StatusStore;
use axum::extract::{Path, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use k8s_openapi::api::core::v1::Pod;
use options::OptionsError;
use proxy::ActiveStreams;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// What the streaming handlers need: the runtime to ask for streams and the node's pods to
/// resolve names. Cheap to clone.
#[derive(Clone)]
pub struct StreamingState {
    cri: CriClient,
    store: Arc<StatusStore>,
    active: Arc<ActiveStreams>,
}

impl StreamingState {
    /// Streams into the pods `store` knows (the status manager's view, as `/pods` serves
    /// it), through the runtime behind `cri`.
    pub fn new(cri: CriClient, store: Arc<StatusStore>) -> Self {
        Self {
            cri,
            store,
            active: Arc::default(),
        }
    }

    /// Streams being proxied right now: each holds a client and a runtime connection.
    pub fn active_streams(&self) -> usize {
        self.active.get()
    }
}

/// Why a streaming request was refused; each names the pod or container and maps to the
/// status upstream answers.
#[derive(Debug, thiserror::Error)]
pub enum StreamingError {
    /// The query cannot be acted on (400).
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// No pod of that name on this node (404).
    #[error("pod {namespace}/{name} does not exist on this node")]
    PodNotFound {
        /// The namespace asked for.
        namespace: String,
        /// The pod name asked for.
        name: String,
    },
    /// The pod of that name has another UID (404): the caller meant a pod that is gone.
    #[error("pod {pod} with UID {uid} not found (the pod of that name has UID {actual})")]
    UidMismatch {
        /// namespace/name.
        pod: String,
        /// The UID asked for.
        uid: String,
        /// The UID of the pod of that name.
        actual: String,
    },
    /// The pod spec has no container of that name (404).
    #[error("container {container:?} not found in pod {pod}")]
    ContainerNotFound {
        /// namespace/name.
        pod: String,
        /// The container name asked for.
        container: String,
    },
    /// The container exists in the spec but is not running (500, as upstream's `GetExec`
    /// error for a container its runtime does not list as running).
    #[error("container {container:?} in pod {pod} is not running")]
    NotRunning {
        /// namespace/name.
        pod: String,
        /// The container name.
        container: String,
    },
    /// The pod has no ready sandbox to forward ports into (500, as upstream).
    #[error("pod {pod} has no running sandbox")]
    NoSandbox {
        /// namespace/name.
        pod: String,
    },
    /// A streaming endpoint was called without `Connection: Upgrade` (400, upstream's
    /// message).
    #[error("Upgrade request required")]
    UpgradeRequired,
    /// The runtime refused or failed (404 for NotFound, 429 when it is out of streams, 500
    /// otherwise, as upstream's `streaming.WriteError`).
    #[error("{0}")]
    Runtime(#[from] CriError),
    /// `/run`'s command exited non-zero (500, upstream's message).
    #[error("command '{command}' exited with {code}: {stderr}")]
    CommandFailed {
        /// The command, joined with spaces.
        command: String,
        /// Its exit code.
        code: i32,
        /// What it wrote to stderr.
        stderr: String,
    },
}

impl StreamingError {
    fn status(&self) -> StatusCode {
        match self {
            StreamingError::Options(_) | StreamingError::UpgradeRequired => StatusCode::BAD_REQUEST,
            StreamingError::PodNotFound { .. }
            | StreamingError::UidMismatch { .. }
            | StreamingError::ContainerNotFound { .. } => StatusCode::NOT_FOUND,
            StreamingError::Runtime(CriError::Rpc { code, .. }) => match code {
                tonic::Code::NotFound => StatusCode::NOT_FOUND,
                tonic::Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
            StreamingError::NotRunning { .. }
            | StreamingError::NoSandbox { .. }
            | StreamingError::Runtime(_)
            | StreamingError::CommandFailed { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for StreamingError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!(error = %self, "streaming request failed");
        } else {
            tracing::debug!(error = %self, %status, "streaming request refused");
        }
        let mut response = (status, self.to_string()).into_response();
        if status == StatusCode::TOO_MANY_REQUESTS {
            // Upstream waits out the runtime's token TTL (one minute) before a retry.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("60"));
        }
        response
    }
}

/// The pod and container a request names, from upstream's path parameters `podNamespace`,
/// `podID`, `uid` and `containerName`.
struct Target {
    namespace: String,
    pod: String,
    uid: Option<String>,
    container: String,
}

impl Target {
    fn from_path(mut params: HashMap<String, String>) -> Self {
        Target {
            namespace: params.remove("podNamespace").unwrap_or_default(),
            pod: params.remove("podID").unwrap_or_default(),
            uid: params.remove("uid"),
            container: params.remove("containerName").unwrap_or_default(),
        }
    }

    fn pod_name(&self) -> String {
        format!("{}/{}", self.namespace, self.pod)
    }
}

impl StreamingState {
    /// The pod the request names (upstream's `GetPodByName`, then the UID check).
    fn pod(&self, target: &Target) -> Result<Arc<Pod>, StreamingError> {
        let pod = self
            .store
            .get_by_name(&target.namespace, &target.pod)
            .ok_or_else(|| StreamingError::PodNotFound {
                namespace: target.namespace.clone(),
                name: target.pod.clone(),
            })?;
        let actual = crate::podutil::uid(&pod);
        if let Some(uid) = target.uid.as_deref().filter(|uid| *uid != actual) {
            return Err(StreamingError::UidMismatch {
                pod: target.pod_name(),
                uid: uid.to_string(),
                actual: actual.to_string(),
            });
        }
        Ok(pod)
    }

    /// The runtime ID of the running container the request names (upstream's
    /// `findContainer`, which looks among running containers only).
    async fn running_container(
        &self,
        pod: &Pod,
        target: &Target,
    ) -> Result<String, StreamingError> {
        let name = target.container.as_str();
        let in_spec = crate::podutil::container_names(pod).any(|n| n == name);
        if !in_spec {
            return Err(StreamingError::ContainerNotFound {
                pod: target.pod_name(),
                container: name.to_string(),
            });
        }
        let selector = Labels::from([
            (
                labels::POD_UID.to_string(),
                crate::podutil::uid(pod).to_string(),
            ),
            (labels::CONTAINER_NAME.to_string(), name.to_string()),
        ]);
        self.cri
            .list_containers(selector)
            .await?
            .into_iter()
            .filter(|c| c.state == api::ContainerState::ContainerRunning as i32)
            .max_by_key(|c| c.created_at)
            .map(|c| c.id)
            .ok_or_else(|| StreamingError::NotRunning {
                pod: target.pod_name(),
                container: name.to_string(),
            })
    }

    /// The pod's ready sandbox, whose network namespace port-forward dials into.
    async fn ready_sandbox(&self, pod: &Pod, target: &Target) -> Result<String, StreamingError> {
        let selector = Labels::from([(
            labels::POD_UID.to_string(),
            crate::podutil::uid(pod).to_string(),
        )]);
        self.cri
            .list_pod_sandbox(selector)
            .await?
            .into_iter()
            .filter(|s| s.state == api::PodSandboxState::SandboxReady as i32)
            .max_by_key(|s| s.created_at)
            .map(|s| s.id)
            .ok_or_else(|| StreamingError::NoSandbox {
                pod: target.pod_name(),
            })
    }
}

fn require_upgrade(request: &Request) -> Result<(), StreamingError> {
    if proxy::is_upgrade_request(request.headers()) {
        Ok(())
    } else {
        Err(StreamingError::UpgradeRequired)
    }
}

/// `GET|POST /exec/{podNamespace}/{podID}[/{uid}]/{containerName}?command=...&input=1...`
async fn exec(
    State(state): State<StreamingState>,
    Path(params): Path<HashMap<String, String>>,
    request: Request,
) -> Response {
    let target = Target::from_path(params);
    let span =
        tracing::debug_span!("exec", pod = %target.pod_name(), container = %target.container);
    async move {
        let options = options::exec_options(request.uri().query())?;
        let pod = state.pod(&target)?;
        let id = state.running_container(&pod, &target).await?;
        require_upgrade(&request)?;
        let url = state
            .cri
            .exec(&id, options.command, options.streams)
            .await?;
        tracing::debug!(container_id = %id, streams = ?options.streams, "exec stream");
        Ok::<_, StreamingError>(proxy::proxy(request, &url, state.active.clone()).await)
    }
    .instrument(span)
    .await
    .unwrap_or_else(IntoResponse::into_response)
}

/// `GET|POST /attach/{podNamespace}/{podID}[/{uid}]/{containerName}?input=1&output=1...`
async fn attach(
    State(state): State<StreamingState>,
    Path(params): Path<HashMap<String, String>>,
    request: Request,
) -> Response {
    let target = Target::from_path(params);
    let span =
        tracing::debug_span!("attach", pod = %target.pod_name(), container = %target.container);
    async move {
        let streams = options::stream_options(request.uri().query())?;
        let pod = state.pod(&target)?;
        let id = state.running_container(&pod, &target).await?;
        require_upgrade(&request)?;
        let url = state.cri.attach(&id, streams).await?;
        tracing::debug!(container_id = %id, ?streams, "attach stream");
        Ok::<_, StreamingError>(proxy::proxy(request, &url, state.active.clone()).await)
    }
    .instrument(span)
    .await
    .unwrap_or_else(IntoResponse::into_response)
}

/// `GET|POST /portForward/{podNamespace}/{podID}[/{uid}]` (`?port=...` for WebSocket).
async fn port_forward(
    State(state): State<StreamingState>,
    Path(params): Path<HashMap<String, String>>,
    request: Request,
) -> Response {
    let target = Target::from_path(params);
    let span = tracing::debug_span!("port_forward", pod = %target.pod_name());
    async move {
        let websocket = proxy::is_websocket_request(request.headers());
        let ports = options::port_forward_ports(request.uri().query(), websocket)?;
        let pod = state.pod(&target)?;
        let sandbox = state.ready_sandbox(&pod, &target).await?;
        require_upgrade(&request)?;
        tracing::debug!(sandbox_id = %sandbox, ?ports, websocket, "port-forward stream");
        let url = state.cri.port_forward(&sandbox, ports).await?;
        Ok::<_, StreamingError>(proxy::proxy(request, &url, state.active.clone()).await)
    }
    .instrument(span)
    .await
    .unwrap_or_else(IntoResponse::into_response)
}

/// `POST /run/{podNamespace}/{podID}[/{uid}]/{containerName}?cmd=...`: the command's
/// stdout then stderr, with upstream's (historical) JSON content type.
async fn run(
    State(state): State<StreamingState>,
    Path(params): Path<HashMap<String, String>>,
    request: Request,
) -> Response {
    let target = Target::from_path(params);
    let span = tracing::debug_span!("run", pod = %target.pod_name(), container = %target.container);
    async move {
        let pod = state.pod(&target)?;
        let command = options::run_command(request.uri().query())?;
        let id = state.running_container(&pod, &target).await?;
        // No command timeout, as upstream; the CRI call's own deadline still bounds it.
        let result = state
            .cri
            .exec_sync(&id, command.clone(), Duration::ZERO)
            .await?;
        if result.exit_code != 0 {
            return Err(StreamingError::CommandFailed {
                command: command.join(" "),
                code: result.exit_code,
                stderr: String::from_utf8_lossy(&result.stderr).into_owned(),
            });
        }
        let mut output = result.stdout;
        output.extend_from_slice(&result.stderr);
        Ok(([(header::CONTENT_TYPE, "application/json")], output).into_response())
    }
    .instrument(span)
    .await
    .unwrap_or_else(IntoResponse::into_response)
}

/// The streaming routes, ready to merge into the secure port's router (which must serve
/// HTTP/1.1 connections with upgrades, as `axum::serve` does).
pub fn router(state: StreamingState) -> Router {
    Router::new()
        .route(
            "/exec/{podNamespace}/{podID}/{containerName}",
            get(exec).post(exec),
        )
        .route(
            "/exec/{podNamespace}/{podID}/{uid}/{containerName}",
            get(exec).post(exec),
        )
        .route(
            "/attach/{podNamespace}/{podID}/{containerName}",
            get(attach).post(attach),
        )
        .route(
            "/attach/{podNamespace}/{podID}/{uid}/{containerName}",
            get(attach).post(attach),
        )
        .route(
            "/portForward/{podNamespace}/{podID}",
            get(port_forward).post(port_forward),
        )
        .route(
            "/portForward/{podNamespace}/{podID}/{uid}",
            get(port_forward).post(port_forward),
        )
        .route("/run/{podNamespace}/{podID}/{containerName}", post(run))
        .route(
            "/run/{podNamespace}/{podID}/{uid}/{containerName}",
            post(run),
        )
        .with_state(state)
}

#[cfg(test)]
mod tests;
