//! The handlers only the secure port has: `/containerLogs` (moved from the read-only port,
//! where upstream never served it) and `/configz`.

use crate::logs::{self, LogOptions};
use crate::server::ServerState;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use k8s_openapi::api::core::v1::Pod;
use std::sync::Arc;

/// `/configz`: the running KubeletConfiguration as upstream shows it, `{"kubeletconfig": ...}`.
pub async fn configz(State(config): State<Arc<serde_json::Value>>) -> Json<serde_json::Value> {
    Json(serde_json::Value::clone(&config))
}

/// The deprecated `tail` parameter upstream still reads (`all` or a number) for `tailLines`.
#[derive(Debug, Default, serde::Deserialize)]
pub struct TailParam {
    tail: Option<String>,
}

fn error(code: StatusCode, message: String) -> Response {
    (code, message).into_response()
}

/// The container's restart count and whether it runs, from the pod's status.
fn container_state(pod: &Pod, container: &str) -> Option<(u32, bool)> {
    let status = pod.status.as_ref()?;
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .chain(status.ephemeral_container_statuses.iter().flatten())
        .find(|c| c.name == container)
        .map(|c| {
            let running = c.state.as_ref().is_some_and(|s| s.running.is_some());
            (c.restart_count.max(0) as u32, running)
        })
}

fn declares_container(pod: &Pod, container: &str) -> bool {
    crate::podutil::container_names(pod).any(|c| c == container)
}

/// `GET /containerLogs/{namespace}/{pod}/{container}`, as upstream: the log streamed from the
/// CRI file of the current (or `previous`) attempt.
pub async fn container_logs(
    State(state): State<ServerState>,
    Path((namespace, pod_name, container)): Path<(String, String, String)>,
    Query(mut options): Query<LogOptions>,
    Query(tail): Query<TailParam>,
) -> Response {
    match tail.tail.as_deref() {
        None => {}
        Some("all") => options.tail_lines = None,
        Some(lines) => match lines.parse() {
            Ok(lines) => options.tail_lines = Some(lines),
            Err(_) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!("tail {lines:?} is not a number or \"all\""),
                )
            }
        },
    }
    if let Err(invalid) = options.validate() {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Invalid request: {invalid}"),
        );
    }
    let pods = state.store.list();
    let Some(pod) = pods.iter().find(|p| {
        p.metadata.namespace.as_deref() == Some(namespace.as_str())
            && p.metadata.name.as_deref() == Some(pod_name.as_str())
    }) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("pod {pod_name:?} does not exist"),
        );
    };
    if !declares_container(pod, &container) {
        return error(
            StatusCode::NOT_FOUND,
            format!("container {container:?} not found in pod {pod_name:?}"),
        );
    }
    let Some((restart_count, _)) = container_state(pod, &container) else {
        return error(
            StatusCode::BAD_REQUEST,
            format!("container {container:?} in pod {pod_name:?} is waiting to start"),
        );
    };
    let attempt = if options.previous {
        match restart_count.checked_sub(1) {
            Some(previous) => previous,
            None => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "previous terminated container {container:?} in pod {pod_name:?} not found"
                    ),
                )
            }
        }
    } else {
        restart_count
    };
    let dir = crate::podutil::log_directory(&state.pod_logs_dir, pod);
    let file = logs::log_file(&dir, &container, attempt);
    if !file.exists() {
        return error(
            StatusCode::NOT_FOUND,
            format!("no log for container {container:?} in pod {pod_name:?} (attempt {attempt})"),
        );
    }
    // The previous attempt has ended; the current one is followed while it runs.
    let follow_current = !options.previous;
    let store = state.store.clone();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let still_running = move || {
        let running = follow_current
            && store
                .get(&uid)
                .and_then(|p| container_state(&p, &container))
                .is_some_and(|(count, running)| running && count == attempt);
        std::future::ready(running)
    };
    let body = Body::from_stream(logs::stream(file, options, still_running));
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}
