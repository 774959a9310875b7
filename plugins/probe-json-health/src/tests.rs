use wasmlet_plugin_sdk::fixtures::MockPod;
use wasmlet_plugin_sdk::{ProbeHandler, ProbeOutcome, ProbeRequest};

use super::JsonHealth;

fn check(args: &str, pod: &MockPod) -> (ProbeOutcome, String) {
    let r = JsonHealth::default().check(&ProbeRequest::new(args), pod);
    (r.outcome, r.message)
}

#[test]
fn healthy_document_succeeds() {
    let pod = MockPod::new().http(8080, "/health", 200, r#"{"status":"ok"}"#);
    assert_eq!(check("", &pod).0, ProbeOutcome::Success);
    assert_eq!(pod.calls(), ["GET :8080/health"]);
}

#[test]
fn nested_field_and_other_expected_value() {
    let body = r#"{"checks":{"db":{"up":true}}}"#;
    let pod = MockPod::new().http(9000, "/status", 200, body);
    let args = r#"{"port": 9000, "path": "/status", "field": "checks.db.up", "expected": true}"#;
    assert_eq!(check(args, &pod).0, ProbeOutcome::Success);
}

#[test]
fn wrong_value_missing_field_or_bad_status_fail() {
    let pod = MockPod::new()
        .http(8080, "/health", 200, r#"{"status":"degraded"}"#)
        .http(8080, "/empty", 200, "{}")
        .http(8080, "/down", 503, r#"{"status":"ok"}"#);
    let (outcome, message) = check("", &pod);
    assert_eq!(outcome, ProbeOutcome::Failure);
    assert_eq!(message, r#"status is "degraded", expected "ok""#);
    assert_eq!(
        check(r#"{"path": "/empty"}"#, &pod).0,
        ProbeOutcome::Failure
    );
    let (outcome, message) = check(r#"{"path": "/down"}"#, &pod);
    assert_eq!(outcome, ProbeOutcome::Failure);
    assert!(message.contains("HTTP 503"), "{message}");
}

#[test]
fn not_json_is_unknown_and_connection_errors_fail() {
    let pod = MockPod::new().http(8080, "/health", 200, "OK");
    assert_eq!(check("", &pod).0, ProbeOutcome::Unknown);
    let (outcome, message) = check("", &MockPod::new());
    assert_eq!(outcome, ProbeOutcome::Failure);
    assert!(message.contains("connection refused"), "{message}");
}

#[test]
fn bad_args_or_ambiguous_port_fail_with_a_reason() {
    let pod = MockPod::new();
    let (_, message) = check(r#"{"prot": 1}"#, &pod);
    assert!(message.starts_with("invalid probe args"), "{message}");
    let mut request = ProbeRequest::new("");
    request.ports = vec![8080, 9090];
    let r = JsonHealth::default().check(&request, &pod);
    assert!(r.message.contains("need a \"port\""), "{}", r.message);
    assert!(pod.calls().is_empty());
}

#[test]
fn plugin_config_sets_defaults() {
    let mut probe = JsonHealth::default();
    probe
        .configure(r#"{"path": "/healthz", "field": "state", "expected": "UP"}"#)
        .unwrap();
    let pod = MockPod::new().http(8080, "/healthz", 200, r#"{"state":"UP"}"#);
    assert_eq!(
        probe.check(&ProbeRequest::new(""), &pod).outcome,
        ProbeOutcome::Success
    );
}
