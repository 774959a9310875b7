//! The node is the one writer of the pod status it owns (upstream's status manager
//! `needsReconcile`): a status someone else changed in the API is written back within the
//! sync period, fields the node does not compute are cleared, and the conditions other
//! writers own are left as they are.

use crate::cluster::{assert_never_forbidden, busybox_pod, cluster, shared};
use crate::harness::NodeOptions;
use serde_json::Value;
use std::time::Duration;

fn condition<'a>(pod: &'a Value, kind: &str) -> Option<&'a Value> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

#[test]
fn a_status_changed_by_another_writer_is_corrected_and_what_others_own_survives() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-reconcile");
    let node = c.join("c-reconcile", NodeOptions::default());
    c.wait_node_ready(&node);
    c.apply(&busybox_pod(
        &ns,
        "web",
        &node.name,
        "",
        "",
        "trap 'exit 0' TERM; while true; do sleep 1; done",
    ));
    c.wait_for(&node, "the pod Ready", Duration::from_secs(90), || {
        c.pod(&ns, "web")
            .filter(|p| condition(p, "Ready").is_some_and(|r| r["status"] == "True"))
    });
    // Another writer: Ready turned false with a reason, a pod-level reason and message, and
    // conditions of its own.
    c.kubectl_ok(&[
        "-n",
        &ns,
        "patch",
        "pod",
        "web",
        "--subresource=status",
        "--type=strategic",
        "-p",
        r#"{"status":{"reason":"Tampered","message":"not the node's",
            "conditions":[{"type":"Ready","status":"False","reason":"Tampered"},
                          {"type":"example.com/Audited","status":"True","reason":"TestOwned","message":"kept"}]}}"#,
    ]);
    let tampered = c.pod(&ns, "web").unwrap_or_default();
    assert_eq!(
        condition(&tampered, "Ready").map(|r| r["status"].clone()),
        Some(Value::from("False")),
        "the patch took"
    );
    let fixed = c.wait_for(
        &node,
        "the node to write its status back",
        Duration::from_secs(60),
        || {
            c.pod(&ns, "web").filter(|p| {
                condition(p, "Ready").is_some_and(|r| r["status"] == "True")
                    && p["status"]["message"].is_null()
            })
        },
    );
    let status = &fixed["status"];
    assert!(status["reason"].is_null(), "the node cleared it: {status}");
    assert!(
        condition(&fixed, "Ready").is_some_and(|r| r["reason"].is_null()),
        "{status}"
    );
    // Not DisruptionTarget: the disruption controller resets one that no termination follows.
    let audited = condition(&fixed, "example.com/Audited")
        .cloned()
        .unwrap_or_default();
    assert_eq!(audited["status"], "True", "{status}");
    assert_eq!(audited["reason"], "TestOwned", "{status}");
    assert_eq!(audited["message"], "kept", "{status}");
    assert_eq!(status["phase"], "Running");
    assert!(
        node.log().contains("differs from the node's"),
        "the node found the difference itself"
    );
    assert_never_forbidden(&node);
}
