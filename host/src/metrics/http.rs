//! `kubelet_http_*`: every request to either port is counted, timed and shown while in flight,
//! bucketed by upstream's rules (`pkg/kubelet/server/server.go` `ServeHTTP`): the path's
//! first segment (`metrics/<x>` for metrics) when the server knows it, else `other`; the
//! method when standard, else `other`; `readonly` or `readwrite` by port.

use super::kubelet::{kubelet, Labels};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use std::time::Instant;

/// Which port served a request (upstream's `server_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerType {
    /// The unauthenticated read-only port.
    ReadOnly,
    /// The authenticated port.
    ReadWrite,
}

impl ServerType {
    fn as_str(self) -> &'static str {
        match self {
            ServerType::ReadOnly => "readonly",
            ServerType::ReadWrite => "readwrite",
        }
    }
}

/// The roots either port serves; any other path is `other`, so a scan of random paths
/// cannot grow the series without bound.
const KNOWN_ROOTS: &[&str] = &[
    "attach",
    "checkpoint",
    "configz",
    "containerLogs",
    "debug",
    "evictions",
    "exec",
    "healthz",
    "logs",
    "manifests",
    "metrics",
    "metrics/cadvisor",
    "metrics/probes",
    "metrics/resource",
    "node",
    "plugins",
    "pods",
    "portForward",
    "run",
    "runningpods",
    "spec",
    "stats",
];

/// Upstream's long-running roots. Its map spells `portforward` in lower case, so the
/// `portForward` path is not counted as long-running there; the same here.
const LONG_RUNNING_ROOTS: &[&str] = &["exec", "attach", "portforward", "debug"];

/// Upstream's `getURLRootPath` bucketed to the known roots.
pub fn path_bucket(path: &str) -> &'static str {
    let mut parts = path.trim_start_matches('/').splitn(3, '/');
    let first = parts.next().unwrap_or_default();
    let root = match (first, parts.next()) {
        ("metrics", Some(second)) if !second.is_empty() => {
            return KNOWN_ROOTS
                .iter()
                .find(|known| known.strip_prefix("metrics/") == Some(second))
                .copied()
                .unwrap_or("other");
        }
        _ => first,
    };
    KNOWN_ROOTS
        .iter()
        .find(|known| **known == root)
        .copied()
        .unwrap_or("other")
}

fn method_bucket(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// The series' labels for one request.
pub fn labels(server: ServerType, method: &axum::http::Method, path: &str) -> Labels {
    let path = path_bucket(path);
    vec![
        (
            "long_running",
            LONG_RUNNING_ROOTS.contains(&path).to_string(),
        ),
        ("method", method_bucket(method).to_string()),
        ("path", path.to_string()),
        ("server_type", server.as_str().to_string()),
    ]
}

/// Middleware: counts the request, holds it in flight until the response head is ready,
/// and times it.
pub async fn track(server: ServerType, request: Request, next: Next) -> Response {
    let labels = labels(server, request.method(), request.uri().path());
    let metrics = kubelet();
    metrics.http_requests.get_or_create(&labels).inc();
    let inflight = metrics
        .http_inflight_requests
        .get_or_create(&labels)
        .clone();
    inflight.inc();
    let started = Instant::now();
    let response = next.run(request).await;
    inflight.dec();
    metrics
        .http_requests_duration
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_bucket_as_upstreams() {
        assert_eq!(path_bucket("/pods"), "pods");
        assert_eq!(path_bucket("/stats/summary"), "stats");
        assert_eq!(path_bucket("/metrics"), "metrics");
        assert_eq!(path_bucket("/metrics/cadvisor"), "metrics/cadvisor");
        assert_eq!(path_bucket("/metrics/nope"), "other");
        assert_eq!(path_bucket("/containerLogs/ns/pod/c"), "containerLogs");
        assert_eq!(path_bucket("/../../etc/passwd"), "other");
        assert_eq!(path_bucket(""), "other");
    }

    #[test]
    fn long_running_follows_upstreams_map() {
        let get = axum::http::Method::GET;
        let exec = labels(ServerType::ReadWrite, &get, "/exec/ns/pod/c");
        assert!(exec.contains(&("long_running", "true".into())));
        let forward = labels(ServerType::ReadWrite, &get, "/portForward/ns/pod");
        assert!(forward.contains(&("long_running", "false".into())));
        let pods = labels(ServerType::ReadOnly, &get, "/pods");
        assert!(pods.contains(&("server_type", "readonly".into())));
    }
}
