//! The node agent's HTTP endpoints: the read-only port (`/pods`, `/healthz`, `/manifests`),
//! plain HTTP as upstream's `readOnlyPort`, and the healthz port. [`stats`] has the stats
//! endpoints both the read-only and the secure port serve.

pub mod stats;

use crate::health::Health;
use crate::logs::{self, LogOptions};
use crate::source::SourceSnapshot;
use crate::status::StatusStore;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use k8s_openapi::api::core::v1::Pod;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::watch;

/// What the handlers read.
#[derive(Clone)]
pub struct ServerState {
    /// The pods with their current status, for `/pods`.
    pub store: Arc<StatusStore>,
    /// Whether the PLEG and SyncLoop are alive, for `/healthz`.
    pub health: Arc<Health>,
    /// The static pod source's last scan, for `/manifests`: which file became which pod and
    /// which were refused.
    pub source: watch::Receiver<Arc<SourceSnapshot>>,
    /// Where the CRI log files are, for `/containerLogs`.
    pub pod_logs_dir: std::path::PathBuf,
    /// The loaded plugins and what they did, for `/plugins`.
    pub plugins: Arc<wasmlet_plugin_host::PluginRegistry>,
    /// The node's own counters, for `/metrics`.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The node's pressure conditions and observations, for `/node` and `/evictions`.
    pub pressure: Arc<crate::eviction::NodePressure>,
    /// The last eviction decisions, for `/evictions`.
    pub evictions: Arc<crate::eviction::DecisionLog>,
    /// The node's live view, for `/node`.
    pub node: Arc<crate::node_status::NodeView>,
    /// The prober's metrics, served at `/metrics/probes`.
    pub probe_metrics: Arc<crate::prober::metrics::ProbeMetrics>,
}

/// The Node object: capacity, allocatable and the pressure conditions.
async fn node(State(state): State<ServerState>) -> Response {
    match state.node.current() {
        Some(node) => Json(node).into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the container runtime has not answered yet",
        )
            .into_response(),
    }
}

/// The eviction decision log and the latest signal observations: why a pod was evicted,
/// which plugin (and version) ranked it, and what a shadow plugin would have done.
async fn evictions(State(state): State<ServerState>) -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "observations": state.pressure.observations(),
        "decisions": state.evictions.list(),
    }))
}

/// The node's GC and eviction counters in the Prometheus text format.
async fn metrics(State(state): State<ServerState>) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.encode(),
    )
        .into_response()
}

/// Upstream's `/metrics/probes`: `prober_probe_total` and `prober_probe_duration_seconds`.
async fn probe_metrics(State(state): State<ServerState>) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.probe_metrics.encode(),
    )
        .into_response()
}

/// Each configured plugin: world, serving version, state, counters, latency, last rejection.
async fn plugins(State(state): State<ServerState>) -> Json<serde_json::Value> {
    Json(state.plugins.report())
}

async fn pods(State(state): State<ServerState>) -> Json<k8s_openapi::List<Pod>> {
    Json(k8s_openapi::List {
        items: state.store.list(),
        metadata: Default::default(),
    })
}

async fn healthz(State(state): State<ServerState>) -> Response {
    match state.health.check() {
        Ok(()) => (StatusCode::OK, "ok").into_response(),
        Err(problem) => (StatusCode::INTERNAL_SERVER_ERROR, problem.to_string()).into_response(),
    }
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ManifestReport {
    file: String,
    pod: String,
    uid: String,
}

/// Which manifest became which pod, and which were refused and why.
async fn manifests(State(state): State<ServerState>) -> Json<serde_json::Value> {
    let snapshot = state.source.borrow().clone();
    let pods: Vec<ManifestReport> = snapshot
        .pods
        .iter()
        .map(|p| ManifestReport {
            file: p.file.display().to_string(),
            pod: p.pod.metadata.name.clone().unwrap_or_default(),
            uid: p.uid().to_string(),
        })
        .collect();
    Json(serde_json::json!({ "pods": pods, "errors": snapshot.errors }))
}

fn container_restart_count(pod: &Pod, container: &str) -> Option<(u32, bool)> {
    let status = pod.status.as_ref()?;
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .find(|c| c.name == container)
        .map(|c| {
            let running = c.state.as_ref().is_some_and(|s| s.running.is_some());
            (c.restart_count.max(0) as u32, running)
        })
}

fn not_found(message: String) -> Response {
    (StatusCode::NOT_FOUND, message).into_response()
}

/// `GET /containerLogs/{namespace}/{pod}/{container}`, as upstream.
async fn container_logs(
    State(state): State<ServerState>,
    Path((namespace, pod_name, container)): Path<(String, String, String)>,
    Query(options): Query<LogOptions>,
) -> Response {
    let pods = state.store.list();
    let Some(pod) = pods.iter().find(|p| {
        p.metadata.namespace.as_deref() == Some(&namespace)
            && p.metadata.name.as_deref() == Some(&pod_name)
    }) else {
        return not_found(format!("pod {namespace}/{pod_name} not found"));
    };
    let Some((restart_count, _)) = container_restart_count(pod, &container) else {
        return not_found(format!(
            "container {container:?} in pod {pod_name:?} not found"
        ));
    };
    let attempt = if options.previous {
        match restart_count.checked_sub(1) {
            Some(previous) => previous,
            None => {
                return (
                    StatusCode::BAD_REQUEST,
                    format!(
                        "previous terminated container {container:?} in pod {pod_name:?} not found"
                    ),
                )
                    .into_response()
            }
        }
    } else {
        restart_count
    };
    let dir = crate::podutil::log_directory(&state.pod_logs_dir, pod);
    let file = logs::log_file(&dir, &container, attempt);
    if !file.exists() {
        return not_found(format!(
            "no log for container {container:?} in pod {pod_name:?} (attempt {attempt})"
        ));
    }
    let follow_current = !options.previous;
    let store = state.store.clone();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let still_running = move || {
        follow_current
            && store
                .get(&uid)
                .and_then(|p| container_restart_count(&p, &container))
                .is_some_and(|(count, running)| running && count == attempt)
    };
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        if let Err(error) = logs::stream(file.clone(), options, tx, still_running).await {
            tracing::warn!(file = %file.display(), %error, "reading container log failed");
        }
    });
    let body =
        tokio_stream::StreamExt::map(tokio_stream::wrappers::ReceiverStream::new(rx), |line| {
            Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(line))
        });
    Response::builder()
        .header("content-type", "text/plain; charset=utf-8")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Routes of the read-only port.
pub fn read_only_router(state: ServerState) -> Router {
    Router::new()
        .route("/pods", get(pods))
        .route("/healthz", get(healthz))
        .route("/manifests", get(manifests))
        .route("/plugins", get(plugins))
        .route("/metrics", get(metrics))
        .route("/node", get(node))
        .route("/evictions", get(evictions))
        .route("/metrics/probes", get(probe_metrics))
        .route(
            "/containerLogs/{namespace}/{pod}/{container}",
            get(container_logs),
        )
        .with_state(state)
}

/// Routes of the healthz port.
pub fn healthz_router(state: ServerState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .with_state(state)
}

/// Binds `addr` and serves `router` in the background; binding errors are returned.
pub async fn serve(
    addr: SocketAddr,
    router: Router,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    Ok(tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(%addr, %error, "HTTP server stopped");
        }
    }))
}
