//! Static pods in a cluster: their mirror pods, and events.

use crate::cluster::{assert_never_forbidden, cluster, shared};
use crate::harness::{busybox_pod, NodeOptions};
use std::time::Duration;

#[test]
fn a_static_pod_gets_a_mirror_pod_that_comes_back_when_deleted() {
    let _up = shared();
    let c = cluster();
    let node = c.join("c-mirror", NodeOptions::default());
    c.wait_node_ready(&node);
    node.write_manifest("static.yaml", &busybox_pod("static", "", "sleep 3600"));
    let name = "static-c-mirror";
    let mirror = c.wait_for(
        &node,
        "the mirror pod Running",
        Duration::from_secs(60),
        || {
            c.pod("default", name)
                .filter(|p| p["status"]["phase"] == "Running")
        },
    );
    let annotations = &mirror["metadata"]["annotations"];
    assert!(
        annotations["kubernetes.io/config.mirror"].is_string(),
        "{annotations}"
    );
    let owner = &mirror["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Node");
    assert_eq!(owner["name"], "c-mirror");
    assert_eq!(owner["controller"], true);
    assert_eq!(mirror["spec"]["nodeName"], "c-mirror");
    let first_uid = mirror["metadata"]["uid"].clone();

    // Deleted by someone: recreated, and the static pod itself never stopped.
    let containers = node.containers(Some("static"));
    c.kubectl_ok(&["-n", "default", "delete", "pod", name, "--wait=false"]);
    c.wait_for(
        &node,
        "the mirror pod to come back",
        Duration::from_secs(60),
        || {
            c.pod("default", name)
                .filter(|p| p["metadata"]["uid"] != first_uid && p["status"]["phase"] == "Running")
        },
    );
    let after = node.containers(Some("static"));
    assert_eq!(
        containers.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        after.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        "deleting the mirror pod does not touch the static pod"
    );

    // The static pod's events are shown on its mirror pod.
    c.wait_for(
        &node,
        "a Started event for the static pod",
        Duration::from_secs(30),
        || {
            c.events("default")
                .into_iter()
                .find(|e| e["reason"] == "Started" && e["involvedObject"]["name"] == name)
        },
    );

    // The manifest removed: the mirror pod goes too.
    node.remove_manifest("static.yaml");
    c.wait_for(
        &node,
        "the mirror pod to be deleted",
        Duration::from_secs(60),
        || c.pod("default", name).is_none().then_some(()),
    );
    assert_never_forbidden(&node);
}
