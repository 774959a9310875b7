use wasmlet_plugin_sdk::fixtures::{HookCase, MockPod};
use wasmlet_plugin_sdk::LifecycleHooks;

use super::Drain;

fn drain(config: &str) -> Drain {
    let mut d = Drain::default();
    d.configure(config).unwrap();
    d
}

#[test]
fn drains_then_waits() {
    let pod = MockPod::new().http(8080, "/drain", 200, "");
    let case = HookCase::new("web", "frontend");
    case.pre_stop(&drain(r#"{"port": 8080}"#), "app", 30_000, &pod)
        .unwrap();
    assert_eq!(pod.calls(), ["GET :8080/drain", "SLEEP 5000ms"]);
}

#[test]
fn the_wait_leaves_the_reserve_of_a_short_grace() {
    let pod = MockPod::new().http(8080, "/drain", 204, "");
    let case = HookCase::new("web", "frontend");
    case.pre_stop(
        &drain(r#"{"port": 8080, "waitMs": 10000}"#),
        "app",
        3_000,
        &pod,
    )
    .unwrap();
    assert_eq!(pod.calls(), ["GET :8080/drain", "SLEEP 1000ms"]);
}

#[test]
fn failed_drain_request_fails_the_hook_without_waiting() {
    let case = HookCase::new("web", "frontend");
    let pod = MockPod::new().http(8080, "/drain", 500, "");
    let err = case
        .pre_stop(&drain(r#"{"port": 8080}"#), "app", 30_000, &pod)
        .unwrap_err();
    assert!(err.contains("HTTP 500"), "{err}");
    let refused = MockPod::new();
    let err = case
        .pre_stop(&drain(r#"{"port": 8080}"#), "app", 30_000, &refused)
        .unwrap_err();
    assert!(err.contains("connection refused"), "{err}");
    assert_eq!(refused.calls(), ["GET :8080/drain"]);
}

#[test]
fn only_listed_containers_are_drained() {
    let pod = MockPod::new();
    let case = HookCase::new("web", "frontend");
    let d = drain(r#"{"port": 8080, "containers": ["app"]}"#);
    case.pre_stop(&d, "log-shipper", 30_000, &pod).unwrap();
    assert!(pod.calls().is_empty());
}

#[test]
fn config_needs_a_port_and_an_absolute_path() {
    assert!(Drain::default().configure("{}").is_err());
    assert!(Drain::default()
        .configure(r#"{"port": 80, "path": "drain"}"#)
        .is_err());
}
