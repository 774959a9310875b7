//! The stats endpoints, served on the secure port and the read-only port as upstream serves
//! them (`pkg/kubelet/server/stats/handler.go`, `metrics/collectors/resource_metrics.go`):
//! `GET`/`POST /stats/summary` (the Summary API, `?only_cpu_and_memory=true` for the cheap part),
//! `GET /metrics/resource` (what metrics-server scrapes) and `GET /metrics/cadvisor` (the
//! container series Prometheus scrapes, `pkg/kubelet/server/server.go`).

use crate::cri::CriClient;
use crate::stats::cadvisor::CadvisorProvider;
use crate::stats::resource_metrics::{self, ResourceMetrics};
use crate::stats::summary::SummaryProvider;
use crate::stats::text_format;
use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What the stats handlers read: one provider, whose CPU samples persist across requests (the
/// `usageNanoCores` rate is computed between them).
#[derive(Clone)]
pub struct StatsState {
    /// Builds the Summary.
    pub summary: Arc<SummaryProvider>,
    /// Builds `/metrics/resource` from the Summary.
    pub resource: Arc<ResourceMetrics>,
    /// Builds `/metrics/cadvisor`.
    pub cadvisor: Arc<CadvisorProvider>,
}

impl StatsState {
    /// The stats of the pods of `node_name` in the runtime behind `cri`, with the kubelet's
    /// `--root-dir` (nodefs, volumes) and `podLogsDir`; `/metrics/cadvisor` and
    /// `/metrics/resource` read every `housekeeping` while scraped.
    pub fn new(
        cri: CriClient,
        node_name: impl Into<String>,
        root_dir: impl Into<PathBuf>,
        pod_logs_dir: impl Into<PathBuf>,
        housekeeping: Duration,
    ) -> Self {
        let (node_name, root_dir) = (node_name.into(), root_dir.into());
        let summary = Arc::new(SummaryProvider::new(
            cri.clone(),
            node_name.clone(),
            root_dir.clone(),
            pod_logs_dir,
        ));
        StatsState {
            cadvisor: Arc::new(CadvisorProvider::new(
                cri,
                node_name,
                root_dir,
                housekeeping,
            )),
            resource: Arc::new(ResourceMetrics::new(summary.clone(), housekeeping)),
            summary,
        }
    }
}

/// `/stats/summary`, `/metrics/resource` and `/metrics/cadvisor`, with their state.
pub fn router(state: StatsState) -> Router {
    Router::new()
        .route("/stats/summary", get(summary).post(summary))
        .route("/metrics/resource", get(resource))
        .route("/metrics/cadvisor", get(cadvisor))
        .with_state(state)
}

/// Whether the query asks for CPU and memory only: exactly one `only_cpu_and_memory=true`, as
/// upstream's handler checks it. Public so the `kubelet_request` fuzz target (`fuzz/`) reaches it.
pub fn only_cpu_and_memory(query: Option<&str>) -> bool {
    let values: Vec<&str> = query
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .filter(|(key, _)| *key == "only_cpu_and_memory")
        .map(|(_, value)| value)
        .collect();
    values == ["true"]
}

async fn summary(State(state): State<StatsState>, RawQuery(query): RawQuery) -> Response {
    match state
        .summary
        .get(only_cpu_and_memory(query.as_deref()))
        .await
    {
        Ok(summary) => Json(summary).into_response(),
        Err(error) => {
            tracing::error!(path = "/stats/summary", %error, "cannot build the stats summary");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Internal Error: {error}"),
            )
                .into_response()
        }
    }
}

async fn resource(State(state): State<StatsState>) -> Response {
    (
        [(header::CONTENT_TYPE, resource_metrics::CONTENT_TYPE)],
        state.resource.scrape().await,
    )
        .into_response()
}

async fn cadvisor(State(state): State<StatsState>) -> Response {
    (
        [(header::CONTENT_TYPE, text_format::CONTENT_TYPE)],
        state.cadvisor.scrape().await,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exactly_one_true_asks_for_cpu_and_memory() {
        assert!(only_cpu_and_memory(Some("only_cpu_and_memory=true")));
        assert!(only_cpu_and_memory(Some("x=1&only_cpu_and_memory=true")));
        assert!(!only_cpu_and_memory(None));
        assert!(!only_cpu_and_memory(Some("only_cpu_and_memory=1")));
        assert!(!only_cpu_and_memory(Some("only_cpu_and_memory")));
        assert!(!only_cpu_and_memory(Some(
            "only_cpu_and_memory=true&only_cpu_and_memory=true"
        )));
    }
}
