//! The node agent's plain HTTP endpoints: the read-only port (`readOnlyPort`: `/pods`,
//! `/healthz`, `/metrics`, `/metrics/probes` as upstream, and wasmlet's own read-only views
//! `/manifests`, `/plugins`, `/node`, `/evictions`) and the healthz port. Container logs and
//! the other debugging endpoints are on the authenticated port only (`secure_port`); here they
//! answer 405 as upstream's read-only server does.
//! [`stats`] has the stats endpoints both the read-only and the secure port serve.

pub mod limits;
pub mod spec;
pub mod stats;

use crate::health::Health;
use crate::source::SourceSnapshot;
use crate::status::StatusStore;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
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
/// which plugin (and version) ranked it, what a shadow plugin would have done, and what a new
/// plugin version on trial ranked.
async fn evictions(State(state): State<ServerState>) -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "observations": state.pressure.observations(),
        "decisions": state.evictions.list(),
    }))
}

/// `/metrics`: upstream's kubelet and process series, then wasmlet's own, in the format the
/// scraper's `Accept` prefers.
async fn metrics(State(state): State<ServerState>, headers: HeaderMap) -> Response {
    let kubelet = crate::metrics::kubelet::kubelet();
    exposition(&headers, &[kubelet.registry(), state.metrics.registry()])
}

/// Upstream's `/metrics/probes`: `prober_probe_total` and `prober_probe_duration_seconds`.
async fn probe_metrics(State(state): State<ServerState>, headers: HeaderMap) -> Response {
    exposition(&headers, &[state.probe_metrics.registry()])
}

fn exposition(
    headers: &HeaderMap,
    registries: &[&prometheus_client::registry::Registry],
) -> Response {
    use crate::metrics::exposition::{render, Format};
    let accept = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let format = Format::negotiate(accept);
    (
        [(axum::http::header::CONTENT_TYPE, format.content_type())],
        render(format, registries),
    )
        .into_response()
}

/// Each configured plugin: world, serving version, state, counters, latency, last rejection.
async fn plugins(State(state): State<ServerState>) -> Json<serde_json::Value> {
    Json(state.plugins.report())
}

async fn pods(State(state): State<ServerState>) -> Response {
    let pods = state.store.list();
    Json(PodList {
        api_version: "v1",
        kind: "PodList",
        items: pods.iter().map(|pod| &**pod).collect(),
        metadata: Default::default(),
    })
    .into_response()
}

/// The body of `/pods`: upstream's `PodList`, written from the status store's shared pods
/// without copying them.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PodList<'a> {
    api_version: &'static str,
    kind: &'static str,
    items: Vec<&'a Pod>,
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta,
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

/// Upstream's answer on the read-only port to the endpoints only the authenticated port has.
async fn debugging_disabled() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        "Debug endpoints are disabled.\n",
    )
        .into_response()
}

/// The endpoints both ports serve (`/pods`, `/healthz`, `/metrics`, `/metrics/probes`).
pub fn shared_routes() -> Router<ServerState> {
    Router::new()
        .route("/pods", get(pods))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/metrics/probes", get(probe_metrics))
        .route("/spec", get(spec))
        .route("/spec/", get(spec))
}

/// `/spec/`: the machine, as cAdvisor's `MachineInfo` (read when asked: it is rarely asked).
async fn spec() -> Json<spec::MachineSpec> {
    Json(spec::machine_spec())
}

/// Routes of the read-only port.
pub fn read_only_router(state: ServerState) -> Router {
    let mut router = shared_routes()
        .route("/manifests", get(manifests))
        .route("/plugins", get(plugins))
        .route("/node", get(node))
        .route("/evictions", get(evictions));
    // upstream's InstallDebuggingDisabledHandlers
    for prefix in [
        "/run",
        "/exec",
        "/attach",
        "/portForward",
        "/containerLogs",
        "/runningpods",
        "/debug/pprof",
        "/logs",
    ] {
        router = router
            .route(&format!("{prefix}/"), any(debugging_disabled))
            .route(&format!("{prefix}/{{*rest}}"), any(debugging_disabled));
    }
    router.with_state(state)
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
    Ok(tokio::spawn(limits::serve_plain(
        listener,
        router,
        limits::Limits::default(),
    )))
}
