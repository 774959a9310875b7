//! The control plane goes away and comes back while pods run, and a pod deleted while the
//! node could not watch is terminated after the re-list that the watch's `410 Gone` forces.

use crate::cluster::{assert_never_forbidden, busybox_pod, cluster, exclusive};
use crate::harness::NodeOptions;
use crate::relay::{through, Relay};
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
    // The node reaches the API server through a relay the test cuts, so that it learns of
    // nothing between the cut and the restore, whatever its watch's back-off does.
    let admin = std::fs::read_to_string(c.dir.join("admin.kubeconfig")).unwrap_or_default();
    let (_, api_server) = through(&admin, 0);
    let relay = Relay::start(api_server.expect("the API server's address in admin.kubeconfig"));
    let node = c.join_with("c-outage", NodeOptions::default(), |text| {
        through(&text, relay.port).0
    });
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

    // The node loses the API server; `doomed` is deleted while it cannot watch.
    relay.cut();
    c.kubectl_ok(&[
        "-n",
        &ns,
        "delete",
        "pod",
        "doomed",
        "--grace-period=0",
        "--force",
    ]);
    control_plane("stop", &c.dir, "");
    // While the API server is away, `short` exits and nothing else changes.
    std::thread::sleep(Duration::from_secs(15));
    assert_eq!(node.containers_named(Some("steady")).len(), 1);
    assert_eq!(node.containers_named(Some("doomed")).len(), 1);
    let node_name = std::fs::read_to_string(c.dir.join("node-name")).unwrap_or_default();
    // Started again for the node it was started for (kube-proxy's node). The restarted API
    // server's watch cache begins after the delete, so the node's watch, resuming from the
    // resourceVersion it saw before the cut, gets 410 Gone and re-lists.
    control_plane("start", &c.dir, node_name.trim());
    relay.restore();

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
    let log = node.log();
    assert!(
        log.lines()
            .any(|l| l.contains("watch expired (410 Gone)") && l.contains(r#"watch="pods""#)),
        "the watch was forced to re-list:\n{}",
        node.log_tail()
    );
    assert_never_forbidden(&node);
}
