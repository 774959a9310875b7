//! Pods from the API server: run, status, graceful deletion, admission.

use crate::cluster::{assert_never_forbidden, busybox_pod, cluster, shared};
use crate::harness::NodeOptions;
use std::time::{Duration, Instant};

#[test]
fn an_api_pod_runs_reports_status_and_a_graceful_delete_runs_pre_stop() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-lifecycle");
    let node = c.join("c-lifecycle", NodeOptions::default());
    c.wait_node_ready(&node);
    let marker = node.dir.path().join("marker");
    std::fs::create_dir_all(&marker).expect("marker dir");
    c.apply(&busybox_pod(
        &ns,
        "web",
        &node.name,
        &format!(
            "  volumes:\n  - name: marker\n    hostPath: {{path: {}}}\n",
            marker.display()
        ),
        "    volumeMounts: [{name: marker, mountPath: /marker}]\n    lifecycle:\n      preStop:\n        exec: {command: [sh, -c, 'echo stopped > /marker/pre-stop']}\n",
        "trap 'exit 0' TERM; while true; do sleep 1; done",
    ));
    let pod = c.wait_pod_phase(&node, &ns, "web", "Running");
    let status = &pod["status"];
    assert!(status["podIP"].is_string(), "{status}");
    assert!(status["hostIP"].is_string(), "{status}");
    assert_eq!(status["containerStatuses"][0]["name"], "main");
    c.wait_for(
        &node,
        "the pod to be Ready in the API",
        Duration::from_secs(30),
        || {
            c.pod(&ns, "web").filter(|p| {
                p["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
        },
    );
    assert_eq!(node.containers_named(Some("web")).len(), 1);

    let deleted_at = Instant::now();
    c.kubectl_ok(&["-n", &ns, "delete", "pod", "web", "--wait=false"]);
    c.wait_for(
        &node,
        "the pod to be gone from the API",
        Duration::from_secs(30),
        || c.pod(&ns, "web").is_none().then_some(()),
    );
    assert!(
        deleted_at.elapsed() < Duration::from_secs(12),
        "removed within its 10 s grace (took {:?})",
        deleted_at.elapsed()
    );
    let pre_stop = std::fs::read_to_string(marker.join("pre-stop")).unwrap_or_default();
    assert_eq!(pre_stop.trim(), "stopped", "preStop ran before the kill");
    assert!(node.containers_named(Some("web")).is_empty());
    assert_never_forbidden(&node);
}

#[test]
fn a_pod_that_exits_reaches_a_terminal_phase_in_the_api() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-exit");
    let node = c.join("c-exit", NodeOptions::default());
    c.wait_node_ready(&node);
    c.apply(&busybox_pod(
        &ns,
        "ok",
        &node.name,
        "  restartPolicy: Never\n",
        "",
        "exit 0",
    ));
    c.apply(&busybox_pod(
        &ns,
        "fails",
        &node.name,
        "  restartPolicy: Never\n",
        "",
        "exit 3",
    ));
    c.wait_pod_phase(&node, &ns, "ok", "Succeeded");
    let failed = c.wait_pod_phase(&node, &ns, "fails", "Failed");
    assert_eq!(
        failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        3
    );
    assert_never_forbidden(&node);
}

#[test]
fn admission_rejects_with_upstream_reasons_in_the_api() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-admit");
    let node = c.join("c-admit", NodeOptions::default());
    c.wait_node_ready(&node);
    let forever = "sleep 3600";
    c.apply(&busybox_pod(
        &ns,
        "too-big",
        &node.name,
        "",
        "    resources: {requests: {cpu: \"1000\"}}\n",
        forever,
    ));
    c.apply(&busybox_pod(
        &ns,
        "elsewhere",
        &node.name,
        "  nodeSelector: {disktype: ssd}\n",
        "",
        forever,
    ));
    c.apply(&busybox_pod(&ns, "fits", &node.name, "", "", forever));
    let too_big = c.wait_pod_phase(&node, &ns, "too-big", "Failed");
    assert_eq!(
        too_big["status"]["reason"], "OutOfcpu",
        "{}",
        too_big["status"]
    );
    let elsewhere = c.wait_pod_phase(&node, &ns, "elsewhere", "Failed");
    assert_eq!(
        elsewhere["status"]["reason"], "NodeAffinity",
        "{}",
        elsewhere["status"]
    );
    c.wait_pod_phase(&node, &ns, "fits", "Running");
    assert!(node.containers_named(Some("too-big")).is_empty());
    assert_never_forbidden(&node);
}

#[test]
fn a_second_delete_with_a_shorter_grace_period_shortens_the_termination() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-regrace");
    let node = c.join("c-regrace", NodeOptions::default());
    c.wait_node_ready(&node);
    // A container that ignores SIGTERM: only the grace period's end (the SIGKILL) stops it.
    c.apply(&format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: stubborn, namespace: {ns}}}
spec:
  nodeName: {node}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 600
  containers:
  - name: main
    image: docker.io/library/busybox:local
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "trap '' TERM; while true; do sleep 1; done"]
"#,
        node = node.name
    ));
    c.wait_pod_phase(&node, &ns, "stubborn", "Running");
    c.kubectl_ok(&["-n", &ns, "delete", "pod", "stubborn", "--wait=false"]);
    c.wait_for(
        &node,
        "the pod to show the first delete's 600 s grace",
        Duration::from_secs(30),
        || {
            c.pod(&ns, "stubborn")
                .filter(|p| p["metadata"]["deletionGracePeriodSeconds"] == 600)
        },
    );
    // The container is still stopping under the long period.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(node.containers_named(Some("stubborn")).len(), 1);
    c.kubectl_ok(&[
        "-n",
        &ns,
        "delete",
        "pod",
        "stubborn",
        "--grace-period=1",
        "--wait=false",
    ]);
    c.wait_for(
        &node,
        "the pod to be gone after the shorter second delete",
        Duration::from_secs(90),
        || c.pod(&ns, "stubborn").is_none().then_some(()),
    );
    assert!(node.containers_named(Some("stubborn")).is_empty());
    assert_never_forbidden(&node);
}

#[test]
fn sidecars_start_in_order_and_stop_after_the_app_the_last_declared_first() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-sidecar");
    let node = c.join("c-sidecar", NodeOptions::default());
    c.wait_node_ready(&node);
    let marker = node.dir.path().join("order");
    std::fs::create_dir_all(&marker).expect("marker dir");
    // Each container records its start and, on SIGTERM, its stop. Upstream's order: every
    // preStop hook runs at once, then each sidecar is stopped after the app and after the
    // sidecars declared after it. The app takes 3 s to stop and the proxy 1 s, so a sidecar
    // stopped beside the app, or `log` beside `proxy`, would record its stop too early.
    c.apply(&format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: served, namespace: {ns}}}
spec:
  nodeName: {node}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 20
  volumes: [{{name: marker, hostPath: {{path: {marker}}}}}]
  initContainers:
  - name: log
    restartPolicy: Always
    image: docker.io/library/busybox:local
    imagePullPolicy: IfNotPresent
    volumeMounts: [{{name: marker, mountPath: /marker}}]
    command: [sh, -c, "trap 'echo log-stop >> /marker/order; exit 0' TERM; echo log-start >> /marker/order; while true; do sleep 1; done"]
  - name: proxy
    restartPolicy: Always
    image: docker.io/library/busybox:local
    imagePullPolicy: IfNotPresent
    volumeMounts: [{{name: marker, mountPath: /marker}}]
    lifecycle: {{preStop: {{exec: {{command: [sh, -c, "echo proxy-prestop >> /marker/order"]}}}}}}
    command: [sh, -c, "trap 'sleep 1; echo proxy-stop >> /marker/order; exit 0' TERM; echo proxy-start >> /marker/order; while true; do sleep 1; done"]
  containers:
  - name: app
    image: docker.io/library/busybox:local
    imagePullPolicy: IfNotPresent
    volumeMounts: [{{name: marker, mountPath: /marker}}]
    command: [sh, -c, "trap 'sleep 3; echo app-stop >> /marker/order; exit 0' TERM; echo app-start >> /marker/order; while true; do sleep 1; done"]
"#,
        node = node.name,
        marker = marker.display()
    ));
    let pod = c.wait_pod_phase(&node, &ns, "served", "Running");
    let sidecars = &pod["status"]["initContainerStatuses"];
    assert_eq!(sidecars[0]["name"], "log");
    assert_eq!(sidecars[1]["name"], "proxy");
    let order = || std::fs::read_to_string(marker.join("order")).unwrap_or_default();
    c.wait_for(&node, "all three started", Duration::from_secs(30), || {
        (order() == "log-start\nproxy-start\napp-start\n").then_some(())
    });
    c.wait_for(
        &node,
        "the sidecars running and started in the API",
        Duration::from_secs(30),
        || {
            c.pod(&ns, "served").filter(|p| {
                (0..2).all(|i| {
                    let sidecar = &p["status"]["initContainerStatuses"][i];
                    sidecar["state"]["running"].is_object() && sidecar["started"] == true
                })
            })
        },
    );
    c.kubectl_ok(&["-n", &ns, "delete", "pod", "served", "--wait=false"]);
    c.wait_for(
        &node,
        "the pod to be gone from the API",
        Duration::from_secs(60),
        || c.pod(&ns, "served").is_none().then_some(()),
    );
    assert_eq!(
        order(),
        "log-start\nproxy-start\napp-start\nproxy-prestop\napp-stop\nproxy-stop\nlog-stop\n",
        "preStop hooks run at once; the sidecars stop after the app, the last declared first"
    );
    assert_never_forbidden(&node);
}
