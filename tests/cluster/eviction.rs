//! Node-pressure eviction of API pods under real memory pressure: the evicted pod is `Failed` /
//! `Evicted` in the API with the `DisruptionTarget` condition, the Node reports
//! `MemoryPressure`, and the `Evicted` event is in the pod's namespace.

use crate::cluster::{assert_never_forbidden, busybox_pod, cluster, shared};
use crate::harness::NodeOptions;
use std::time::Duration;

const GIB: i64 = 1 << 30;

#[test]
fn memory_pressure_evicts_an_api_pod_and_the_api_shows_why() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-evict");
    // Pressure once the 3 GiB hog is full; the margin leaves the other tests room.
    let available = wasmlet::stats::node::memory()
        .expect("memory signal")
        .available();
    let threshold = available - 3 * GIB + GIB / 2;
    assert!(
        threshold > GIB,
        "the machine needs more than 4 GiB free (has {available})"
    );
    let node = c.join(
        "c-evict",
        NodeOptions {
            extra_kubelet: format!(
                "evictionHard: {{memory.available: \"{}Mi\"}}\nevictionPressureTransitionPeriod: 2s\n",
                threshold >> 20
            ),
            extra_wasmlet: "evictionMonitoringPeriod: 500ms\n".into(),
            ..NodeOptions::default()
        },
    );
    c.wait_node_ready(&node);
    c.apply(&busybox_pod(
        &ns,
        "steady",
        &node.name,
        "",
        "    resources: {requests: {memory: 64Mi}}\n",
        "sleep 3600",
    ));
    c.wait_pod_phase(&node, &ns, "steady", "Running");
    c.apply(&busybox_pod(
        &ns,
        "hog",
        &node.name,
        "  volumes:\n  - name: hog\n    emptyDir: {medium: Memory, sizeLimit: 4Gi}\n",
        "    volumeMounts: [{name: hog, mountPath: /hog}]\n",
        "dd if=/dev/zero of=/hog/fill bs=1M count=3072; sleep 3600",
    ));

    let evicted = c.wait_pod_phase(&node, &ns, "hog", "Failed");
    let status = &evicted["status"];
    assert_eq!(status["reason"], "Evicted", "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("The node was low on resource: memory."),
        "{message}"
    );
    let disruption = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "DisruptionTarget")
        .unwrap_or_else(|| panic!("no DisruptionTarget condition: {status}"));
    assert_eq!(disruption["status"], "True", "{disruption}");
    assert_eq!(disruption["reason"], "TerminationByKubelet", "{disruption}");

    // The Node said why while the pressure lasted, and the eviction is an event of the pod.
    let transitions = c.wait_for(
        &node,
        "the MemoryPressure events of the node",
        Duration::from_secs(30),
        || {
            let reasons: Vec<String> = c
                .events("default")
                .into_iter()
                .filter(|e| e["involvedObject"]["name"] == node.name.as_str())
                .filter_map(|e| e["reason"].as_str().map(str::to_string))
                .collect();
            reasons
                .iter()
                .any(|r| r == "NodeHasInsufficientMemory")
                .then_some(reasons)
        },
    );
    assert!(transitions.iter().any(|r| r == "NodeHasInsufficientMemory"));
    c.wait_for(
        &node,
        "the Evicted event of the pod",
        Duration::from_secs(30),
        || {
            c.events(&ns)
                .into_iter()
                .find(|e| e["reason"] == "Evicted" && e["involvedObject"]["name"] == "hog")
        },
    );
    // The pod under its request was never in danger.
    assert_eq!(
        c.pod(&ns, "steady").expect("steady pod")["status"]["phase"],
        "Running"
    );
    assert_never_forbidden(&node);
}
