//! core/v1 Events the node writes, as `kubectl get events` shows them.

use crate::cluster::{assert_never_forbidden, busybox_pod, cluster, shared};
use crate::harness::NodeOptions;
use std::time::Duration;

#[test]
fn pod_and_node_events_have_upstream_reasons() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-events");
    let node = c.join("c-events", NodeOptions::default());
    c.wait_node_ready(&node);
    c.apply(&busybox_pod(&ns, "crashes", &node.name, "", "", "exit 1"));
    let reasons = |namespace: &str, object: &str| -> Vec<String> {
        c.events(namespace)
            .into_iter()
            .filter(|e| e["involvedObject"]["name"] == object)
            .filter_map(|e| e["reason"].as_str().map(str::to_string))
            .collect()
    };
    c.wait_for(
        &node,
        "Pulled, Created, Started and BackOff",
        Duration::from_secs(90),
        || {
            let seen = reasons(&ns, "crashes");
            ["Pulled", "Created", "Started", "BackOff"]
                .iter()
                .all(|r| seen.iter().any(|s| s == r))
                .then_some(())
        },
    );
    let events = c.events(&ns);
    let started = events
        .iter()
        .find(|e| e["reason"] == "Started")
        .cloned()
        .unwrap_or_default();
    assert_eq!(started["source"]["component"], "kubelet");
    assert_eq!(started["source"]["host"], "c-events");
    assert_eq!(
        started["involvedObject"]["fieldPath"],
        "spec.containers{main}"
    );
    assert_eq!(started["type"], "Normal");
    let backoff = events
        .iter()
        .find(|e| e["reason"] == "BackOff")
        .cloned()
        .unwrap_or_default();
    assert_eq!(backoff["type"], "Warning");

    c.wait_for(
        &node,
        "NodeReady and Starting on the node",
        Duration::from_secs(30),
        || {
            let seen = reasons("default", "c-events");
            (seen.iter().any(|r| r == "NodeReady") && seen.iter().any(|r| r == "Starting"))
                .then_some(())
        },
    );
    assert_never_forbidden(&node);
}
