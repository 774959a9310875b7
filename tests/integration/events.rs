//! The event-driven PLEG: with relisting slowed to 30s, a container's exit still shows in
//! `/pods` within moments, because containerd's task events drive the pod workers.

use crate::harness::{busybox_pod, container_status, Node, NodeOptions};
use std::time::{Duration, Instant};

#[test]
fn exits_show_without_waiting_for_a_relist() {
    let node = Node::start_with(
        "t-events",
        NodeOptions {
            extra_wasmlet: "plegRelistPeriod: 30s\nplegEventedRelistPeriod: 30s\n".into(),
            ..Default::default()
        },
    );
    node.wait_for("the event subscription", Duration::from_secs(10), |n| {
        n.log()
            .contains("subscribed to containerd task events")
            .then_some(())
    });
    node.write_manifest(
        "short.yaml",
        &busybox_pod("short", "  restartPolicy: Never\n", "sleep 2; exit 4"),
    );
    let pod = node.wait_phase("short", "Running", Duration::from_secs(20));
    let running_seen = Instant::now();
    assert!(container_status(&pod, "main")["state"]["running"].is_object());
    let pod = node.wait_phase("short", "Failed", Duration::from_secs(15));
    let took = running_seen.elapsed();
    assert_eq!(
        container_status(&pod, "main")["state"]["terminated"]["exitCode"],
        4
    );
    // The container ran ~2s; a relist would only have noticed after up to 30s.
    assert!(
        took < Duration::from_secs(6),
        "exit took {took:?} to show in /pods"
    );
}
