//! The Node object and its Lease.

use crate::cluster::{assert_never_forbidden, cluster, quantity_cpus, shared};
use crate::harness::NodeOptions;
use std::time::Duration;

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

/// A quantity of bytes as the API writes it (`24683584Ki`, `100Mi`, `1048576`).
fn quantity_bytes(text: &str) -> i64 {
    let (digits, shift) = [("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40)]
        .iter()
        .find_map(|(suffix, shift)| text.strip_suffix(suffix).map(|d| (d, *shift)))
        .unwrap_or((text, 0));
    digits.parse::<i64>().unwrap_or(-1) << shift
}

/// The Ready condition's heartbeat time of the Node `name`.
fn heartbeat(c: &crate::cluster::Cluster, name: &str) -> Option<String> {
    let node = c.get(&["node", name])?;
    node["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .and_then(|c| c["lastHeartbeatTime"].as_str())
        .map(str::to_string)
}

#[test]
fn reservations_shape_allocatable_and_what_others_write_on_the_node_survives_its_reports() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-alloc");
    let node = c.join(
        "c-alloc",
        NodeOptions {
            extra_kubelet: "nodeStatusReportFrequency: 2s\n\
                            systemReserved: {cpu: 300m, memory: 100Mi}\n\
                            kubeReserved: {cpu: 200m, memory: 50Mi}\n"
                .into(),
            ..Default::default()
        },
    );
    let api = c.wait_node_ready(&node);
    let status = &api["status"];
    // Upstream's form: bytes with the largest exact binary suffix, never a plain byte count.
    let memory = status["capacity"]["memory"].as_str().unwrap_or("");
    assert!(
        ["Ki", "Mi", "Gi"].iter().any(|s| memory.ends_with(s)),
        "capacity memory {memory:?}"
    );
    // allocatable = capacity - systemReserved - kubeReserved - the hard eviction threshold
    // (the harness's memory.available 100Mi).
    let cpu = |map: &str| quantity_cpus(status[map]["cpu"].as_str().unwrap_or(""));
    assert!(
        (cpu("capacity") - cpu("allocatable") - 0.5).abs() < 1e-9,
        "{status}"
    );
    let bytes = |map: &str| quantity_bytes(status[map]["memory"].as_str().unwrap_or(""));
    assert_eq!(
        bytes("capacity") - bytes("allocatable"),
        250 << 20,
        "{status}"
    );

    // Admission holds pods to allocatable, not capacity.
    let over = format!("{}m", (cpu("allocatable") * 1000.0) as i64 + 100);
    let forever = "sleep 3600";
    c.apply(&crate::cluster::busybox_pod(
        &ns,
        "over",
        &node.name,
        "",
        &format!("    resources: {{requests: {{cpu: {over}}}}}\n"),
        forever,
    ));
    let over = c.wait_pod_phase(&node, &ns, "over", "Failed");
    assert_eq!(over["status"]["reason"], "OutOfcpu", "{}", over["status"]);

    // Others write on the Node: an extended resource (as a device operator), a taint, a label.
    c.kubectl_ok(&[
        "patch",
        "node",
        &node.name,
        "--subresource=status",
        "--type=strategic",
        "-p",
        r#"{"status":{"capacity":{"example.com/dongle":"4"},"allocatable":{"example.com/dongle":"4"}}}"#,
    ]);
    c.kubectl_ok(&[
        "taint",
        "node",
        &node.name,
        "example.com/test=yes:NoSchedule",
    ]);
    c.kubectl_ok(&["label", "node", &node.name, "example.com/owner=test"]);
    // Two of the node's reports later, everything is still there.
    let mut beat = heartbeat(c, &node.name);
    for _ in 0..2 {
        beat = Some(c.wait_for(
            &node,
            "the next node status report",
            Duration::from_secs(30),
            || heartbeat(c, &node.name).filter(|b| Some(b) != beat.as_ref()),
        ));
    }
    let api = c.get(&["node", &node.name]).unwrap_or_default();
    assert_eq!(
        api["status"]["capacity"]["example.com/dongle"], "4",
        "{api}"
    );
    assert_eq!(
        api["status"]["allocatable"]["example.com/dongle"], "4",
        "{api}"
    );
    assert_eq!(api["metadata"]["labels"]["example.com/owner"], "test");
    let taints = api["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        taints.iter().any(|t| t["key"] == "example.com/test"),
        "{taints:?}"
    );
    // And admission counts the extended resource the API shows.
    let dongles = |n: u32| format!("    resources: {{limits: {{example.com/dongle: {n}}}}}\n");
    c.apply(&crate::cluster::busybox_pod(
        &ns,
        "three",
        &node.name,
        "",
        &dongles(3),
        forever,
    ));
    c.wait_pod_phase(&node, &ns, "three", "Running");
    c.apply(&crate::cluster::busybox_pod(
        &ns,
        "two-more",
        &node.name,
        "",
        &dongles(2),
        forever,
    ));
    let refused = c.wait_pod_phase(&node, &ns, "two-more", "Failed");
    assert_eq!(
        refused["status"]["reason"], "OutOfexample.com/dongle",
        "{}",
        refused["status"]
    );
    assert_never_forbidden(&node);
}
