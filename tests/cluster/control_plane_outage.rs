//! The control plane goes away and comes back while pods run.

use crate::cluster::{assert_never_forbidden, busybox_pod, cluster, exclusive};
use crate::harness::NodeOptions;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Runs `scripts/control-plane.sh VERB DIR [NODE]`.
fn control_plane(verb: &str, dir: &Path, node: &str) {
    let script = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/control-plane.sh"
    ));
    let out = Command::new(script)
        .arg(verb)
        .arg(dir)
        .args((!node.is_empty()).then_some(node))
        .output()
        .expect("run control-plane.sh");
    assert!(
        out.status.success(),
        "control-plane.sh {verb} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn pods_keep_running_through_an_outage_and_the_api_catches_up() {
    let _alone = exclusive();
    let c = cluster();
    let ns = c.namespace("t-outage");
    let node = c.join("c-outage", NodeOptions::default());
    c.wait_node_ready(&node);
    let forever = "trap 'exit 0' TERM; while true; do sleep 1; done";
    c.apply(&busybox_pod(&ns, "steady", &node.name, "", "", forever));
    c.apply(&busybox_pod(&ns, "doomed", &node.name, "", "", forever));
    c.apply(&busybox_pod(
        &ns,
        "short",
        &node.name,
        "  restartPolicy: Never\n",
        "",
        "sleep 12; exit 0",
    ));
    let steady = c.wait_pod_phase(&node, &ns, "steady", "Running");
    let steady_id = steady["status"]["containerStatuses"][0]["containerID"].clone();
    c.wait_pod_phase(&node, &ns, "doomed", "Running");
    c.wait_pod_phase(&node, &ns, "short", "Running");

    control_plane("stop", &c.dir, "");
    // While the API server is away, `short` exits and nothing else changes.
    std::thread::sleep(Duration::from_secs(15));
    assert_eq!(node.containers_named(Some("steady")).len(), 1);
    let node_name = std::fs::read_to_string(c.dir.join("node-name")).unwrap_or_default();
    // Started again for the node it was started for (kube-proxy's node).
    control_plane("start", &c.dir, node_name.trim());
    // Deleted while wasmlet's watch is still reconnecting: it learns of it from the re-list.
    c.kubectl_ok(&[
        "-n",
        &ns,
        "delete",
        "pod",
        "doomed",
        "--grace-period=0",
        "--force",
    ]);

    c.wait_pod_phase(&node, &ns, "short", "Succeeded");
    c.wait_for(
        &node,
        "doomed's containers to be gone",
        Duration::from_secs(90),
        || {
            node.containers_named(Some("doomed"))
                .is_empty()
                .then_some(())
        },
    );
    let steady = c.wait_pod_phase(&node, &ns, "steady", "Running");
    assert_eq!(
        steady["status"]["containerStatuses"][0]["containerID"], steady_id,
        "no container restarted"
    );
    assert_eq!(steady["status"]["containerStatuses"][0]["restartCount"], 0);
    c.wait_node_ready(&node);
    assert_never_forbidden(&node);
}
