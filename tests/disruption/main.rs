//! Tests that disrupt the shared containerd. They live in their own test binary so they never
//! run beside the other integration tests (cargo runs test binaries one after another).

use wasmlet_test_support::harness;

use harness::{busybox_pod, container_status, Node};
use std::path::Path;
use std::time::Duration;

fn containerd_pid() -> i32 {
    let dir = std::env::var("WASMLET_NODE_DIR").unwrap_or_else(|_| "/var/lib/wasmlet-node".into());
    let text = std::fs::read_to_string(Path::new(&dir).join("containerd.pid"))
        .expect("containerd pidfile");
    text.trim().parse().expect("pid")
}

fn setup_node() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/setup-node.sh");
    let status = std::process::Command::new(script)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run setup-node.sh");
    assert!(status.success(), "setup-node.sh failed");
}

#[test]
fn containerd_killed_and_restarted_pods_keep_running_and_status_recovers() {
    let mut node = Node::start("t-runtime-restart");
    node.write_manifest("steady.yaml", &busybox_pod("steady", "", "exec sleep 3600"));
    let before = node.wait_phase("steady", "Running", Duration::from_secs(30));
    let container_id = container_status(&before, "main")["containerID"].clone();
    let sandbox_id = node.sandboxes(Some("steady"))[0].id.clone();

    // SIGKILL, as a crash: the shims and the containers survive it.
    let pid = containerd_pid();
    let target = rustix::process::Pid::from_raw(pid).expect("containerd pid is positive");
    rustix::process::kill_process(target, rustix::process::Signal::KILL)
        .unwrap_or_else(|e| panic!("kill containerd {pid}: {e}"));
    let stale = node.wait_for(
        "/pods to mark the status stale",
        Duration::from_secs(15),
        |n| {
            n.pod("steady").filter(|p| {
                !p["metadata"]["annotations"]["wasmlet.dev/status-stale-since"].is_null()
            })
        },
    );
    assert_eq!(
        stale["status"]["phase"], "Running",
        "the last known status is still served"
    );
    std::thread::sleep(Duration::from_secs(2));
    node.assert_running();

    setup_node();
    let after = node.wait_for(
        "the status to be fresh again",
        Duration::from_secs(30),
        |n| {
            n.pod("steady").filter(|p| {
                p["metadata"]["annotations"]["wasmlet.dev/status-stale-since"].is_null()
            })
        },
    );
    assert_eq!(after["status"]["phase"], "Running");
    let status = container_status(&after, "main");
    assert_eq!(
        status["containerID"], container_id,
        "no container restarted because the runtime blinked"
    );
    assert_eq!(status["restartCount"], 0);
    let sandboxes = node.sandboxes(Some("steady"));
    assert_eq!(sandboxes.len(), 1);
    assert_eq!(sandboxes[0].id, sandbox_id);

    // New pods start, and the event stream is back.
    node.wait_for("resubscription", Duration::from_secs(20), |n| {
        (n.log()
            .matches("subscribed to containerd task events")
            .count()
            >= 2)
            .then_some(())
    });
    node.write_manifest("fresh.yaml", &busybox_pod("fresh", "", "exec sleep 3600"));
    node.wait_phase("fresh", "Running", Duration::from_secs(30));
    assert_eq!(node.containers(Some("steady")).len(), 1);
}
