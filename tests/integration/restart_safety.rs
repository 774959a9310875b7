//! wasmlet can die at any moment: after a restart it adopts what is running (no duplicate
//! sandbox, no restarted container, restart counts kept) and finishes what it was doing.

use crate::harness::{busybox_pod, container_status, Node};
use std::time::Duration;

#[test]
fn kill_9_and_restart_adopts_running_pods() {
    let mut node = Node::start("t-adopt");
    node.write_manifest("steady.yaml", &busybox_pod("steady", "", "exec sleep 3600"));
    node.write_manifest(
        "crashy.yaml",
        &busybox_pod("crashy", "", "sleep 0.5; exit 1"),
    );
    node.wait_phase("steady", "Running", Duration::from_secs(30));
    let crashy = node.wait_for("crashy to restart twice", Duration::from_secs(30), |n| {
        n.pod("crashy")
            .filter(|p| container_status(p, "main")["restartCount"].as_i64() >= Some(2))
    });
    let restarts_before = container_status(&crashy, "main")["restartCount"]
        .as_i64()
        .unwrap();
    let steady_sandbox = node.sandboxes(Some("steady"));
    let steady_container = node.containers(Some("steady"));
    assert_eq!(steady_sandbox.len(), 1);
    assert_eq!(steady_container.len(), 1);

    let first_pid = node.pid();
    std::thread::sleep(Duration::from_secs(1));
    let restarted_at = wasmlet::timestamps::api_time(std::time::SystemTime::now())
        .0
        .to_string();
    node.kill();
    node.restart();
    node.assert_running();
    assert_ne!(node.pid(), first_pid, "a new wasmlet process");

    let steady = node.wait_phase("steady", "Running", Duration::from_secs(30));
    // The adopted pod keeps its start time (RFC 3339 in UTC sorts as text).
    let start_time = steady["status"]["startTime"].as_str().unwrap().to_string();
    assert!(
        start_time < restarted_at,
        "startTime {start_time} was reset by the restart at {restarted_at}"
    );
    let status = container_status(&steady, "main");
    assert_eq!(status["restartCount"], 0);
    assert_eq!(
        status["containerID"],
        format!("containerd://{}", steady_container[0].id)
    );
    std::thread::sleep(Duration::from_secs(2));
    let sandboxes = node.sandboxes(Some("steady"));
    assert_eq!(sandboxes.len(), 1, "no duplicate sandbox");
    assert_eq!(sandboxes[0].id, steady_sandbox[0].id);
    let containers = node.containers(Some("steady"));
    assert_eq!(containers.len(), 1, "no restarted container");
    assert_eq!(containers[0].id, steady_container[0].id);
    assert_eq!(
        node.sandboxes(Some("crashy")).len(),
        1,
        "no duplicate sandbox"
    );

    // The crash loop carries on from its count instead of starting over.
    let crashy = node.wait_for("crashy to restart again", Duration::from_secs(30), |n| {
        n.pod("crashy").filter(|p| {
            container_status(p, "main")["restartCount"].as_i64() > Some(restarts_before)
        })
    });
    assert!(
        container_status(&crashy, "main")["restartCount"]
            .as_i64()
            .unwrap()
            > restarts_before
    );
}

#[test]
fn a_pod_removed_while_wasmlet_was_down_is_terminated() {
    let mut node = Node::start("t-orphan");
    node.write_manifest("keep.yaml", &busybox_pod("keep", "", "exec sleep 3600"));
    node.write_manifest(
        "gone.yaml",
        &busybox_pod(
            "gone",
            "  terminationGracePeriodSeconds: 2\n",
            "exec sleep 3600",
        ),
    );
    node.wait_phase("keep", "Running", Duration::from_secs(30));
    node.wait_phase("gone", "Running", Duration::from_secs(30));
    node.kill();
    node.remove_manifest("gone.yaml");
    node.restart();
    node.wait_for(
        "the orphaned pod to be removed",
        Duration::from_secs(30),
        |n| {
            (n.sandboxes(Some("gone")).is_empty() && n.containers(Some("gone")).is_empty())
                .then_some(())
        },
    );
    assert_eq!(node.sandboxes(Some("keep")).len(), 1);
    assert_eq!(node.pod("keep").unwrap()["status"]["phase"], "Running");
}

#[test]
fn kill_9_during_termination_is_finished_after_restart() {
    let mut node = Node::start("t-midterm");
    // PID 1 ignores SIGTERM, so termination takes the whole 5s grace period.
    node.write_manifest(
        "slow.yaml",
        &busybox_pod(
            "slow",
            "  terminationGracePeriodSeconds: 5\n",
            "exec sleep 3600",
        ),
    );
    node.wait_phase("slow", "Running", Duration::from_secs(30));
    node.remove_manifest("slow.yaml");
    node.wait_for("termination to start", Duration::from_secs(10), |n| {
        n.pod("slow")
            .filter(|p| !p["metadata"]["deletionTimestamp"].is_null())
    });
    node.kill();
    assert_eq!(
        node.sandboxes(Some("slow")).len(),
        1,
        "killed before termination finished"
    );
    node.restart();
    node.wait_for("the pod to be finished off", Duration::from_secs(30), |n| {
        (n.sandboxes(Some("slow")).is_empty() && n.containers(Some("slow")).is_empty())
            .then_some(())
    });
}
