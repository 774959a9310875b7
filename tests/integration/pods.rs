//! Pods run, get an IP, serve, see their own identity, and end the way their containers end.

use crate::harness::{busybox_pod, container_status, Node};
use std::time::Duration;

#[test]
fn pod_reaches_running_with_an_ip_and_serves_http() {
    let node = Node::start("t-web");
    let manifest = include_str!("pods/pods-web.yaml");
    node.write_manifest("web.yaml", manifest);
    let pod = node.wait_phase("web", "Running", Duration::from_secs(30));
    let ip = pod["status"]["podIP"].as_str().expect("pod IP").to_string();
    assert!(ip.starts_with("10.88."), "pod IP {ip} from the CNI bridge");
    let status = container_status(&pod, "httpd");
    assert_eq!(status["ready"], true);
    assert!(status["containerID"]
        .as_str()
        .unwrap()
        .starts_with("containerd://"));
    let conditions = pod["status"]["conditions"].as_array().unwrap();
    for kind in [
        "PodReadyToStartContainers",
        "Initialized",
        "ContainersReady",
        "Ready",
        "PodScheduled",
    ] {
        let c = conditions
            .iter()
            .find(|c| c["type"] == kind)
            .unwrap_or_else(|| panic!("condition {kind}"));
        assert_eq!(c["status"], "True", "{kind}: {c}");
    }
    assert_eq!(pod["status"]["qosClass"], "BestEffort");
    let body = node.wait_for("httpd to answer", Duration::from_secs(10), |_| {
        ureq::get(&format!("http://{ip}:8080/env.txt"))
            .call()
            .ok()?
            .into_string()
            .ok()
    });
    let expected = format!("web-t-web default t-web {ip} hello web-t-web");
    assert_eq!(body.trim(), expected);
    // Upstream CRI labels identify the pod.
    let sandboxes = node.sandboxes(Some("web"));
    assert_eq!(sandboxes.len(), 1);
    assert_eq!(
        sandboxes[0].labels["io.kubernetes.pod.namespace"],
        "default"
    );
    assert_eq!(
        sandboxes[0].labels["io.kubernetes.pod.uid"],
        pod["metadata"]["uid"].as_str().unwrap()
    );
    // Logs land where CRI puts them: <podLogsDir>/<ns>_<name>_<uid>/<container>/<restart>.log
    let uid = pod["metadata"]["uid"].as_str().unwrap();
    let log_dir = node
        .logs_dir()
        .join(format!("default_web-t-web_{uid}/httpd"));
    node.wait_for("the container log file", Duration::from_secs(5), |_| {
        log_dir.join("0.log").exists().then_some(())
    });
}

/// Each sidecar starts once the one declared before it runs, which the worker learns from
/// the PLEG's report of that start: the pod runs within seconds, not at the next periodic
/// sync (a minute).
#[test]
fn sidecars_start_one_after_another_without_waiting_for_a_resync() {
    let node = Node::start("t-sidecars");
    node.write_manifest("sidecars.yaml", include_str!("pods/pods-sidecars.yaml"));
    let pod = node.wait_for(
        "the app and both sidecars running",
        Duration::from_secs(30),
        |n| {
            n.pod("sidecars").filter(|p| {
                let running = |statuses: &serde_json::Value| {
                    statuses
                        .as_array()
                        .is_some_and(|s| s.iter().all(|c| c["state"]["running"].is_object()))
                };
                running(&p["status"]["initContainerStatuses"])
                    && running(&p["status"]["containerStatuses"])
            })
        },
    );
    assert_eq!(pod["status"]["phase"], "Running", "{pod}");
    assert_eq!(pod["status"]["initContainerStatuses"][1]["name"], "proxy");
}

#[test]
fn host_network_pod_uses_the_node_ip() {
    let node = Node::start("t-hostnet");
    node.write_manifest(
        "h.yaml",
        &busybox_pod("h", "  hostNetwork: true\n", "exec sleep 3600"),
    );
    let pod = node.wait_phase("h", "Running", Duration::from_secs(30));
    assert_eq!(pod["status"]["podIP"], pod["status"]["hostIP"]);
}

#[test]
fn restart_policy_never_and_on_failure() {
    let node = Node::start("t-policies");
    node.write_manifest(
        "never-fail.yaml",
        &busybox_pod("never-fail", "  restartPolicy: Never\n", "echo bye; exit 3"),
    );
    node.write_manifest(
        "never-ok.yaml",
        &busybox_pod("never-ok", "  restartPolicy: Never\n", "exit 0"),
    );
    node.write_manifest(
        "onfail-ok.yaml",
        &busybox_pod("onfail-ok", "  restartPolicy: OnFailure\n", "exit 0"),
    );
    node.write_manifest(
        "onfail-fail.yaml",
        &busybox_pod("onfail-fail", "  restartPolicy: OnFailure\n", "exit 2"),
    );

    let pod = node.wait_phase("never-fail", "Failed", Duration::from_secs(30));
    let status = container_status(&pod, "main");
    assert_eq!(status["restartCount"], 0);
    assert_eq!(status["state"]["terminated"]["exitCode"], 3);
    assert_eq!(status["state"]["terminated"]["reason"], "Error");

    let pod = node.wait_phase("never-ok", "Succeeded", Duration::from_secs(30));
    assert_eq!(
        container_status(&pod, "main")["state"]["terminated"]["reason"],
        "Completed"
    );
    let pod = node.wait_phase("onfail-ok", "Succeeded", Duration::from_secs(30));
    assert_eq!(container_status(&pod, "main")["restartCount"], 0);

    // OnFailure restarts a failed container and the pod stays Running.
    let pod = node.wait_for("onfail-fail to restart", Duration::from_secs(30), |n| {
        n.pod("onfail-fail")
            .filter(|p| container_status(p, "main")["restartCount"].as_i64() >= Some(1))
    });
    assert_eq!(pod["status"]["phase"], "Running");
    // A finished pod's sandbox is stopped, its exited container kept for its logs.
    node.wait_for("never-ok's sandbox to stop", Duration::from_secs(10), |n| {
        let sandboxes = n.sandboxes(Some("never-ok"));
        (sandboxes.len() == 1
            && sandboxes[0].state == wasmlet::cri::api::PodSandboxState::SandboxNotready as i32)
            .then_some(())
    });
    assert_eq!(node.containers(Some("never-ok")).len(), 1);
}

#[test]
fn init_containers_run_in_order_and_a_failing_one_blocks_the_app() {
    let node = Node::start("t-init");
    let ordered = include_str!("pods/pods-ordered.yaml");
    node.write_manifest("ordered.yaml", ordered);
    let pod = node.wait_phase("ordered", "Running", Duration::from_secs(40));
    for init in ["first", "second"] {
        assert_eq!(
            container_status(&pod, init)["state"]["terminated"]["reason"],
            "Completed"
        );
    }
    let containers = node.containers(Some("ordered"));
    let by_name = |name: &str| {
        containers
            .iter()
            .find(|c| c.metadata.as_ref().unwrap().name == name)
            .unwrap_or_else(|| panic!("container {name}"))
    };
    let (first, second, app) = (by_name("first"), by_name("second"), by_name("app"));
    assert!(
        first.finished_at <= second.started_at,
        "second started before first finished"
    );
    assert!(
        second.finished_at <= app.started_at,
        "app started before the init containers finished"
    );

    let blocked = include_str!("pods/pods-blocked.yaml");
    node.write_manifest("blocked.yaml", blocked);
    let pod = node.wait_phase("blocked", "Failed", Duration::from_secs(30));
    assert_eq!(
        container_status(&pod, "fails")["state"]["terminated"]["exitCode"],
        1
    );
    assert_eq!(
        container_status(&pod, "app")["state"]["waiting"]["reason"],
        "PodInitializing"
    );
    let initialized = pod["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Initialized")
        .unwrap()
        .clone();
    assert_eq!(initialized["status"], "False");
    let names: Vec<String> = node
        .containers(Some("blocked"))
        .iter()
        .map(|c| c.metadata.as_ref().unwrap().name.clone())
        .collect();
    assert_eq!(names, ["fails"], "the app container was never created");
}

#[test]
fn memory_limited_container_ends_oom_killed() {
    let node = Node::start("t-oom");
    let manifest = include_str!("pods/pods-hog.yaml");
    node.write_manifest("hog.yaml", manifest);
    let pod = node.wait_phase("hog", "Failed", Duration::from_secs(30));
    let terminated = &container_status(&pod, "hog")["state"]["terminated"];
    assert_eq!(terminated["reason"], "OOMKilled", "{pod}");
    assert_eq!(terminated["exitCode"], 137);
    // A memory limit alone (no cpu) makes the pod Burstable, as upstream's QoS rules say.
    assert_eq!(pod["status"]["qosClass"], "Burstable");
}

#[test]
fn max_pods_rejects_the_pod_over_capacity() {
    let node = Node::start_with(
        "t-maxpods",
        crate::harness::NodeOptions {
            extra_kubelet: "maxPods: 1\n".into(),
            ..Default::default()
        },
    );
    node.write_manifest("a.yaml", &busybox_pod("a", "", "exec sleep 3600"));
    node.wait_phase("a", "Running", Duration::from_secs(30));
    node.write_manifest("b.yaml", &busybox_pod("b", "", "exec sleep 3600"));
    let pod = node.wait_phase("b", "Failed", Duration::from_secs(10));
    assert_eq!(pod["status"]["reason"], "OutOfpods");
    assert!(pod["status"]["message"]
        .as_str()
        .unwrap()
        .contains("capacity: 1"));
    assert!(
        node.sandboxes(Some("b")).is_empty(),
        "a rejected pod never runs"
    );
}
