//! wasmlet's own logs and traces: `--logging-format=json` with `-v`, and the OTLP export of
//! pod-sync spans to a collector (a tiny OTLP trace receiver inside the test).

use crate::harness::{busybox_pod, Node, NodeOptions};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn json_logs_are_one_upstream_object_per_line() {
    let mut node = Node::start_with(
        "t-log-json",
        NodeOptions {
            extra_args: vec!["--logging-format=json".into(), "-v=2".into()],
            rust_log: None,
            ..NodeOptions::default()
        },
    );
    node.write_manifest(
        "json.yaml",
        &busybox_pod(
            "json",
            "  terminationGracePeriodSeconds: 1\n",
            "echo hi; exec sleep 3600",
        ),
    );
    node.wait_phase("json", "Running", Duration::from_secs(30));
    node.remove_manifest("json.yaml");
    node.wait_for("the pod removed", Duration::from_secs(30), |n| {
        n.pod("json").is_none().then_some(())
    });
    node.assert_running();

    let log = node.log();
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    assert!(lines.len() > 5, "{log}");
    for line in &lines {
        assert!(line["ts"].as_f64().is_some_and(|ts| ts > 1.6e12), "{line}");
        assert!(
            line["caller"].as_str().is_some_and(|c| c.contains(".rs")),
            "{line}"
        );
        assert!(line["msg"].is_string(), "{line}");
        // Upstream writes `v` on every line but errors.
        assert!(line["v"].is_u64() || line.get("err").is_some(), "{line}");
        assert!(
            line["v"].as_u64().is_none_or(|v| v <= 2),
            "-v=2 shows no v 5: {line}"
        );
    }
    // -v=2 shows wasmlet's debug lines, inside the pod-sync spans with their fields.
    let pod = format!("json-{}_default", node.name);
    let synced = lines
        .iter()
        .filter(|l| l["pod"] == pod.as_str() && l["sync_type"].is_string())
        .collect::<Vec<_>>();
    assert!(
        synced.iter().any(|l| l["v"] == 2),
        "no debug line in a sync span of {pod}:\n{log}"
    );
    assert!(
        synced.iter().any(|l| l["sync_type"] == "kill"),
        "the removal is a kill sync:\n{log}"
    );
}

#[test]
fn bad_logging_flags_are_refused_by_name() {
    for (flag, named) in [
        ("--logging-format=xml", "--logging-format"),
        ("--vmodule=pod_*=2", "--vmodule"),
        ("-v=loud", "--v"),
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_wasmlet"))
            .args(["run", flag, "--hostname-override", "t-log-flags"])
            .args(["--root-dir", "/nonexistent/wasmlet-log-flags"])
            .env_remove("RUST_LOG")
            .output()
            .expect("run wasmlet");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{flag}: {stderr}");
        assert!(stderr.contains(named), "{flag}: {stderr}");
    }
}

/// What the receiver got: each span's name and string attributes.
type Received = Arc<Mutex<Vec<(String, BTreeMap<String, String>)>>>;

struct Receiver(Received);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut received = self.0.lock();
        let spans = request
            .into_inner()
            .resource_spans
            .into_iter()
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans);
        for span in spans {
            let attributes = span
                .attributes
                .into_iter()
                .filter_map(|kv| match kv.value?.value? {
                    AnyValue::StringValue(text) => Some((kv.key, text)),
                    _ => None,
                })
                .collect();
            received.push((span.name, attributes));
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// An OTLP/gRPC trace receiver on a free loopback port, served by `runtime`.
fn receiver(runtime: &tokio::runtime::Runtime) -> (u16, Received) {
    let received = Received::default();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind the receiver");
    let port = listener.local_addr().expect("receiver address").port();
    let service = TraceServiceServer::new(Receiver(received.clone()));
    runtime.spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = service.clone();
            tokio::spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .http2_only()
                    .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
                    .await;
            });
        }
    });
    (port, received)
}

#[test]
fn pod_sync_spans_are_exported_over_otlp() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("receiver runtime");
    let (port, received) = receiver(&runtime);
    // Logs at the default verbosity: the export takes the debug-level sync spans anyway.
    let node = Node::start_with(
        "t-log-otlp",
        NodeOptions {
            extra_kubelet: format!(
                "tracing: {{endpoint: '127.0.0.1:{port}', samplingRatePerMillion: 1000000}}\n"
            ),
            rust_log: None,
            ..NodeOptions::default()
        },
    );
    node.write_manifest("traced.yaml", &busybox_pod("traced", "", "exec sleep 3600"));
    node.wait_phase("traced", "Running", Duration::from_secs(30));
    let pod = format!("traced-{}_default", node.name);
    // The batch processor exports every 5 s.
    let span = node.wait_for("a sync span of the pod", Duration::from_secs(30), |_| {
        let received = received.lock();
        received
            .iter()
            .find(|(name, attributes)| {
                name == "sync" && attributes.get("pod").is_some_and(|p| p == &pod)
            })
            .cloned()
    });
    let attributes = &span.1;
    assert!(
        matches!(
            attributes.get("sync_type").map(String::as_str),
            Some("create" | "sync")
        ),
        "{attributes:?}"
    );
    assert_eq!(attributes.get("result").map(String::as_str), Some("ok"));
    assert!(attributes.contains_key("uid"), "{attributes:?}");
    // No log line at the default verbosity comes from a sync span.
    assert!(!node.log().contains("sync{"), "{}", node.log_tail());
}
