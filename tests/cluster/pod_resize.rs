//! In-place resize through the `resize` subresource (KEP-1287): the pod and container cgroups
//! follow a granted resize without a restart, and a resize the node cannot hold beside the
//! other pods' allocations waits as `Deferred` until one leaves, as upstream's allocation
//! manager; one beyond the node is `Infeasible`.

use crate::cluster::{
    assert_never_forbidden, busybox_pod, cluster, exclusive, quantity_cpus, shared, status_of,
    Cluster,
};
use crate::harness::{Node, NodeOptions};
use serde_json::Value;
use std::time::Duration;

const FOREVER: &str = "trap 'exit 0' TERM; while true; do sleep 1; done";

/// Patches container `main` of pod `namespace/name` through the `resize` subresource.
fn resize(c: &Cluster, namespace: &str, name: &str, resources: &str) {
    let patch =
        format!(r#"{{"spec":{{"containers":[{{"name":"main","resources":{resources}}}]}}}}"#);
    c.kubectl_ok(&[
        "-n",
        namespace,
        "patch",
        "pod",
        name,
        "--subresource",
        "resize",
        "-p",
        &patch,
    ]);
}

/// The pod's condition of `type_`, if it has one.
fn condition<'a>(pod: &'a Value, type_: &str) -> Option<&'a Value> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// One value of a cgroup v1 file of the pod cgroup `parent` (or one of its containers).
fn cgroup_value(controller: &str, parent: &str, file: &str) -> String {
    std::fs::read_to_string(format!("/sys/fs/cgroup/{controller}{parent}/{file}"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn an_in_place_resize_moves_the_pod_and_container_cgroups_without_a_restart() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-resize");
    let node = c.join("c-resize", NodeOptions::default());
    c.wait_node_ready(&node);
    c.apply(&busybox_pod(
        &ns,
        "resize",
        &node.name,
        "",
        "    resources: {requests: {cpu: 100m, memory: 32Mi}, limits: {cpu: 200m, memory: 64Mi}}\n",
        FOREVER,
    ));
    let running = c.wait_pod_phase(&node, &ns, "resize", "Running");
    let uid = running["metadata"]["uid"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let pod_cgroup = format!("/kubepods/burstable/pod{uid}");
    let container_id = status_of(&running, "containerStatuses", "main")
        .and_then(|s| s["containerID"].as_str())
        .and_then(|id| id.split("://").nth(1))
        .unwrap_or("")
        .to_string();
    let container_cgroup = format!("{pod_cgroup}/{container_id}");
    // The pod cgroup has the pod's limits from the start (upstream's ResourceConfigForPod).
    let pod_values = || {
        (
            cgroup_value("cpu", &pod_cgroup, "cpu.shares"),
            cgroup_value("cpu", &pod_cgroup, "cpu.cfs_quota_us"),
            cgroup_value("memory", &pod_cgroup, "memory.limit_in_bytes"),
        )
    };
    let expect = |shares: &str, quota: &str, memory: i64| {
        (shares.to_string(), quota.to_string(), memory.to_string())
    };
    assert_eq!(pod_values(), expect("102", "20000", 64 << 20));

    // Up: a larger CPU request and limit and a larger memory limit.
    resize(
        c,
        &ns,
        "resize",
        r#"{"requests":{"cpu":"150m"},"limits":{"cpu":"300m","memory":"96Mi"}}"#,
    );
    c.wait_for(
        &node,
        "the pod cgroup to grow",
        Duration::from_secs(30),
        || (pod_values() == expect("153", "30000", 96 << 20)).then_some(()),
    );
    c.wait_for(
        &node,
        "the container cgroup to grow",
        Duration::from_secs(30),
        || {
            (cgroup_value("cpu", &container_cgroup, "cpu.cfs_quota_us") == "30000"
                && cgroup_value("memory", &container_cgroup, "memory.limit_in_bytes")
                    == (96i64 << 20).to_string())
            .then_some(())
        },
    );

    // Down: below where it started.
    resize(
        c,
        &ns,
        "resize",
        r#"{"requests":{"cpu":"50m"},"limits":{"cpu":"100m","memory":"48Mi"}}"#,
    );
    c.wait_for(
        &node,
        "the pod cgroup to shrink",
        Duration::from_secs(30),
        || (pod_values() == expect("51", "10000", 48 << 20)).then_some(()),
    );
    assert_eq!(
        cgroup_value("cpu", &container_cgroup, "cpu.cfs_quota_us"),
        "10000"
    );
    let resized = c.wait_for(
        &node,
        "the status to show the new resources",
        Duration::from_secs(30),
        || {
            c.pod(&ns, "resize").filter(|p| {
                status_of(p, "containerStatuses", "main")
                    .is_some_and(|s| s["resources"]["limits"]["cpu"] == "100m")
            })
        },
    );
    let status = status_of(&resized, "containerStatuses", "main")
        .cloned()
        .unwrap_or_default();
    assert_eq!(status["restartCount"], 0, "{status}");
    assert!(
        status["containerID"]
            .as_str()
            .is_some_and(|id| id.ends_with(&container_id)),
        "the same container: {status}"
    );
    assert_never_forbidden(&node);
}

/// Waits until pod `namespace/name` shows `PodResizePending` with `reason`; returns its message.
fn wait_pending(c: &Cluster, node: &Node, namespace: &str, name: &str, reason: &str) -> String {
    c.wait_for(
        node,
        &format!("{name}'s resize to be {reason}"),
        Duration::from_secs(30),
        || {
            let pod = c.pod(namespace, name)?;
            let pending = condition(&pod, "PodResizePending")?;
            (pending["reason"] == reason)
                .then(|| pending["message"].as_str().unwrap_or("").to_string())
        },
    )
}

#[test]
fn a_resize_that_does_not_fit_beside_the_other_pods_is_deferred_until_one_leaves() {
    // Alone: every node of the machine writes the QoS-level cgroups this test reads.
    let _up = exclusive();
    let c = cluster();
    let ns = c.namespace("t-deferred");
    let mut node = c.join("c-deferred", NodeOptions::default());
    let ready = c.wait_node_ready(&node);
    let allocatable = (quantity_cpus(ready["status"]["allocatable"]["cpu"].as_str().unwrap_or(""))
        * 1000.0) as i64;
    assert!(allocatable >= 400, "allocatable cpu {allocatable}m");
    let half = allocatable / 2;
    let requests =
        |cpu: i64| format!("    resources: {{requests: {{cpu: {cpu}m, memory: 32Mi}}}}\n");
    c.apply(&busybox_pod(
        &ns,
        "big",
        &node.name,
        "",
        &requests(half),
        FOREVER,
    ));
    c.apply(&busybox_pod(
        &ns,
        "small",
        &node.name,
        "",
        &requests(100),
        FOREVER,
    ));
    c.wait_pod_phase(&node, &ns, "big", "Running");
    let running = c.wait_pod_phase(&node, &ns, "small", "Running");
    let uid = running["metadata"]["uid"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let read_shares = |cgroup: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/cpu/kubepods/{cgroup}/cpu.shares"))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let shares = || read_shares(&format!("burstable/pod{uid}"));
    assert_eq!(shares(), "102");
    // The QoS tiers (upstream's UpdateQOSCgroups): burstable holds both pods' requests,
    // besteffort the fewest shares.
    let tier = |millis: i64| (millis * 1024 / 1000).to_string();
    c.wait_for(
        &node,
        "the burstable tier's shares",
        Duration::from_secs(20),
        || (read_shares("burstable") == tier(half + 100)).then_some(()),
    );
    assert_eq!(read_shares("besteffort"), "2");

    // Grown past what big leaves: deferred, with the admission predicate's message; small
    // keeps what it was allocated and runs with it.
    let grown = half + 100;
    resize(
        c,
        &ns,
        "small",
        &format!(r#"{{"requests":{{"cpu":"{grown}m"}}}}"#),
    );
    let message = wait_pending(c, &node, &ns, "small", "Deferred");
    assert!(
        message.starts_with("Node didn't have enough resource: cpu, requested: "),
        "{message}"
    );
    let pod = c.pod(&ns, "small").unwrap_or_default();
    let status = status_of(&pod, "containerStatuses", "main")
        .cloned()
        .unwrap_or_default();
    assert_eq!(status["allocatedResources"]["cpu"], "100m", "{status}");
    assert_eq!(status["resources"]["requests"]["cpu"], "100m", "{status}");
    assert!(condition(&pod, "PodResizeInProgress").is_none(), "{pod}");
    assert_eq!(shares(), "102");
    let events = c.events(&ns);
    assert!(
        events.iter().any(|e| e["reason"] == "ResizeDeferred"
            && e["involvedObject"]["name"] == "small"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Pod resize Deferred: {"))),
        "no ResizeDeferred event: {events:?}"
    );

    // The node crashes and comes back: small is admitted with what it was granted (read
    // back from the allocation checkpoint), not refused for the spec that does not fit, and
    // its resize waits again.
    node.restart();
    c.wait_for(
        &node,
        "the restarted node to report small again",
        Duration::from_secs(60),
        || {
            let pod = c.pod(&ns, "small")?;
            let log = node.log();
            (log.matches("pod added").count() >= 4
                && pod["status"]["phase"] == "Running"
                && condition(&pod, "PodResizePending").is_some_and(|p| p["reason"] == "Deferred"))
            .then_some(())
        },
    );
    assert_eq!(shares(), "102");
    assert!(
        !node.log().contains("pod rejected at admission"),
        "{}",
        node.log_tail()
    );

    // Big leaves: the resize is granted and actuated, without a restart.
    c.kubectl_ok(&["-n", &ns, "delete", "pod", "big", "--wait=false"]);
    let resized = c.wait_for(
        &node,
        "small's deferred resize to be actuated",
        Duration::from_secs(60),
        || {
            c.pod(&ns, "small").filter(|p| {
                condition(p, "PodResizePending").is_none()
                    && condition(p, "PodResizeInProgress").is_none()
                    && status_of(p, "containerStatuses", "main").is_some_and(|s| {
                        s["allocatedResources"]["cpu"] == format!("{grown}m")
                            && s["resources"]["requests"]["cpu"] == format!("{grown}m")
                    })
            })
        },
    );
    let status = status_of(&resized, "containerStatuses", "main")
        .cloned()
        .unwrap_or_default();
    assert_eq!(status["restartCount"], 0, "{status}");
    assert_eq!(shares(), tier(grown));
    c.wait_for(
        &node,
        "the burstable tier to follow",
        Duration::from_secs(20),
        || (read_shares("burstable") == tier(grown)).then_some(()),
    );

    // Beyond the node itself: infeasible, whoever leaves.
    resize(
        c,
        &ns,
        "small",
        &format!(r#"{{"requests":{{"cpu":"{}m"}}}}"#, allocatable * 2),
    );
    let message = wait_pending(c, &node, &ns, "small", "Infeasible");
    assert_eq!(
        message,
        format!(
            "Node didn't have enough capacity: cpu, requested: {}, capacity: {allocatable}",
            allocatable * 2
        )
    );
    assert_never_forbidden(&node);
}
