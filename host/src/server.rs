//! The node agent's HTTP endpoints: the read-only port (`/pods`, `/healthz`, `/manifests`),
//! plain HTTP as upstream's `readOnlyPort`, and the healthz port.

use crate::health::Health;
use crate::source::SourceSnapshot;
use crate::status::StatusStore;
use axum::extract::State;
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
    pub store: Arc<StatusStore>,
    pub health: Arc<Health>,
    pub source: watch::Receiver<Arc<SourceSnapshot>>,
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
        Err(problem) => (StatusCode::INTERNAL_SERVER_ERROR, problem).into_response(),
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

/// Routes of the read-only port.
pub fn read_only_router(state: ServerState) -> Router {
    Router::new()
        .route("/pods", get(pods))
        .route("/healthz", get(healthz))
        .route("/manifests", get(manifests))
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
