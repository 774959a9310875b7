//! The Node object and its Lease.

use crate::cluster::{assert_never_forbidden, cluster, shared};
use crate::harness::NodeOptions;
use std::time::Duration;

fn quantity_cpus(text: &str) -> f64 {
    match text.strip_suffix('m') {
        Some(millis) => millis.parse::<f64>().unwrap_or(0.0) / 1000.0,
        None => text.parse().unwrap_or(0.0),
    }
}

#[test]
fn node_registers_ready_with_labels_capacity_node_info_and_a_renewed_lease() {
    let _up = shared();
    let c = cluster();
    let mut node = c.join(
        "c-register",
        NodeOptions {
            extra_kubelet: "nodeLeaseDurationSeconds: 8\n".into(),
            extra_args: vec!["--node-labels".into(), "wasmlet.dev/test=register".into()],
            ..Default::default()
        },
    );
    let api = c.wait_node_ready(&node);
    let labels = &api["metadata"]["labels"];
    assert_eq!(labels["kubernetes.io/hostname"], "c-register");
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert!(labels["kubernetes.io/arch"].is_string(), "{labels}");
    assert_eq!(labels["wasmlet.dev/test"], "register");

    let status = &api["status"];
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    assert_eq!(
        quantity_cpus(status["capacity"]["cpu"].as_str().unwrap_or("")),
        cpus
    );
    assert_eq!(status["capacity"]["pods"], "110");
    assert!(status["capacity"]["memory"].is_string());
    assert!(status["capacity"]["ephemeral-storage"].is_string());
    assert_ne!(
        status["capacity"]["memory"], status["allocatable"]["memory"],
        "allocatable memory is capacity minus the hard eviction threshold"
    );
    let info = &status["nodeInfo"];
    assert!(
        info["containerRuntimeVersion"]
            .as_str()
            .unwrap_or("")
            .starts_with("containerd://"),
        "{info}"
    );
    assert!(info["kubeletVersion"]
        .as_str()
        .unwrap_or("")
        .starts_with("v1.35"));
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    assert_eq!(info["bootID"], boot_id.trim());
    assert_eq!(info["operatingSystem"], "linux");
    assert!(!info["kernelVersion"].as_str().unwrap_or("").is_empty());
    assert_eq!(
        status["daemonEndpoints"]["kubeletEndpoint"]["Port"],
        node.secure_port
            .expect("the cluster nodes serve the secure port")
    );
    let addresses = status["addresses"].as_array().cloned().unwrap_or_default();
    assert!(
        addresses.iter().any(|a| a["type"] == "InternalIP"),
        "{addresses:?}"
    );
    for condition in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
        let found = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == condition)
            .cloned()
            .unwrap_or_default();
        assert_eq!(found["status"], "False", "{condition}: {found}");
    }

    // The Lease: held by the node, owned by the Node, renewed every quarter of its duration.
    let node_uid = api["metadata"]["uid"].clone();
    let lease = c.wait_for(&node, "the node Lease", Duration::from_secs(30), || {
        c.get(&["-n", "kube-node-lease", "lease", "c-register"])
            .filter(|l| l["metadata"]["ownerReferences"][0]["uid"] == node_uid)
    });
    assert_eq!(lease["spec"]["holderIdentity"], "c-register");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 8);
    let first = lease["spec"]["renewTime"].clone();
    c.wait_for(
        &node,
        "the Lease to be renewed",
        Duration::from_secs(10),
        || {
            c.get(&["-n", "kube-node-lease", "lease", "c-register"])
                .filter(|l| l["spec"]["renewTime"] != first)
        },
    );

    // client-go's request series count the node's API calls; the startup time is set once
    // the node first reported Ready.
    let metrics = node.try_get("/metrics").expect("/metrics");
    let requests = |method: &str| {
        metrics.lines().any(|line| {
            line.starts_with("rest_client_requests_total{code=\"200\",host=\"")
                && line.contains(&format!("method=\"{method}\""))
        })
    };
    assert!(requests("GET") && requests("PATCH"), "{metrics}");
    assert!(
        metrics.contains("rest_client_request_duration_seconds_count{host=\""),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("kubelet_node_startup_duration_seconds ") && !l.ends_with(" 0")),
        "{metrics}"
    );

    // Stopping wasmlet leaves the Node; a restart reconciles it instead of failing.
    node.kill();
    assert!(c.get(&["node", "c-register"]).is_some());
    node.restart();
    c.wait_for(
        &node,
        "the node to reconcile after a restart",
        Duration::from_secs(30),
        || {
            node.log()
                .contains("node was previously registered")
                .then_some(())
        },
    );
    c.wait_node_ready(&node);
    assert_never_forbidden(&node);
}
