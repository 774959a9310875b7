//! Node-pressure eviction on real containerd with real memory pressure. Thresholds are derived
//! from `memory.available` computed as upstream computes it (wasmlet's own signal code, the
//! same formula the node uses), never from /proc/meminfo's MemAvailable. Static pods are made
//! evictable with `evictStaticPods: true` (a standalone node has nothing else).

use crate::harness::{write_plugin_config, Node, NodeOptions};
use parking_lot::Mutex;
use serde_json::Value;
use std::time::{Duration, Instant};
use wasmlet_test_support::components;

/// The test that fills memory runs alone: it needs the node's memory to hold still.
static MEMORY: Mutex<()> = Mutex::new(());
const GIB: i64 = 1 << 30;

fn memory_available() -> i64 {
    wasmlet::stats::node::memory()
        .expect("memory signal")
        .available()
}

/// A busybox pod; `extra_spec` and `extra_container` are indented YAML lines.
fn pod(name: &str, labels: &str, extra_spec: &str, extra_container: &str, script: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{{labels}}}\nspec:\n\
         \x20 terminationGracePeriodSeconds: 1\n{extra_spec}  containers:\n  - name: main\n\
         \x20   image: docker.io/library/busybox:local\n    command: [sh, -c, {script:?}]\n{extra_container}"
    )
}

/// A pod that fills a memory-backed emptyDir with `gib` GiB and keeps it.
fn hog(name: &str, priority: i32, gib: i64) -> String {
    pod(
        name,
        "",
        &format!(
            "  priority: {priority}\n  volumes:\n  - name: hog\n    emptyDir: {{medium: Memory, sizeLimit: {}Gi}}\n",
            gib + 1
        ),
        "    volumeMounts:\n    - name: hog\n      mountPath: /hog\n",
        &format!("dd if=/dev/zero of=/hog/fill bs=1M count={}; sleep 3600", gib * 1024),
    )
}

/// A Burstable pod using far less than its memory request.
fn steady(name: &str, priority: i32, labels: &str) -> String {
    pod(
        name,
        labels,
        &format!("  priority: {priority}\n"),
        "    resources: {requests: {memory: 64Mi}}\n",
        "sleep 3600",
    )
}

/// A Burstable pod with a CPU request only, for a node whose hard threshold sits above the
/// memory available from the start: its allocatable memory is about zero, so a pod with a
/// memory request would not be admitted (as upstream).
fn steady_cpu(name: &str, priority: i32, labels: &str) -> String {
    pod(
        name,
        labels,
        &format!("  priority: {priority}\n"),
        "    resources: {requests: {cpu: 10m}}\n",
        "sleep 3600",
    )
}

fn decisions(node: &Node) -> Vec<Value> {
    node.get_json("/evictions")["decisions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn evicted(node: &Node) -> Vec<String> {
    decisions(node)
        .iter()
        .filter_map(|d| d["evicted"].as_str().map(str::to_string))
        .collect()
}

fn memory_pressure(node: &Node) -> Option<bool> {
    let n = node.get_json("/node");
    n["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "MemoryPressure")
        .map(|c| c["status"] == "True")
}

/// A node whose memory.available threshold sits `headroom` above what is available now:
/// with a positive headroom the pressure is real from the start and never ends.
fn pressured_node(name: &str, headroom: i64, plugins: &str) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let config = write_plugin_config(dir.path(), plugins);
    let threshold = memory_available() + headroom;
    let node = Node::start_with(
        name,
        NodeOptions {
            extra_kubelet: format!(
                "evictionHard: {{memory.available: \"{}Mi\"}}\nevictionPressureTransitionPeriod: 2s\n",
                threshold >> 20
            ),
            extra_wasmlet: format!(
                "evictStaticPods: true\nevictionMonitoringPeriod: 3s\npluginConfig: {}\n",
                config.display()
            ),
            ..Default::default()
        },
    );
    std::mem::forget(dir); // the plugin config must outlive the node
    node
}

#[test]
fn memory_pressure_evicts_in_upstream_order_then_clears() {
    let _alone = MEMORY.lock();
    // Two 3 GiB hogs; pressure once both are full, and gone once either is evicted.
    let before = memory_available();
    let threshold = before - 6 * GIB + 3 * GIB / 2;
    assert!(
        threshold > GIB,
        "the machine needs more than 6 GiB free (has {before})"
    );
    let node = Node::start_with(
        "t-evict-memory",
        NodeOptions {
            extra_kubelet: format!(
                "evictionHard: {{memory.available: \"{}Mi\"}}\nevictionPressureTransitionPeriod: 8s\n",
                threshold >> 20
            ),
            extra_wasmlet: "evictStaticPods: true\nevictionMonitoringPeriod: 500ms\n".into(),
            ..Default::default()
        },
    );
    node.write_manifest("steady.yaml", &steady("steady", 0, ""));
    node.write_manifest("big-high.yaml", &hog("big-high", 1000, 3));
    node.write_manifest("big-low.yaml", &hog("big-low", 0, 3));

    let first = node.wait_for("an eviction", Duration::from_secs(90), |n| {
        decisions(n).into_iter().find(|d| d["evicted"].is_string())
    });
    let evicted_at = Instant::now();
    let name = |p: &str| format!("{p}-t-evict-memory");
    // Upstream's memory ranking: pods over their request first (both BestEffort hogs), then
    // lower priority; the Burstable pod under its request comes last.
    assert_eq!(first["evicted"], name("big-low"), "{first}");
    assert_eq!(
        first["ranking"],
        serde_json::json!([name("big-low"), name("big-high"), name("steady")]),
        "{first}"
    );
    assert_eq!(first["signal"], "memory.available");
    assert_eq!(first["decidedBy"]["kind"], "builtIn", "{first}");

    // MemoryPressure holds for the transition period: a BestEffort pod is refused meanwhile.
    assert_eq!(memory_pressure(&node), Some(true));
    node.write_manifest("late.yaml", &pod("late", "", "", "", "sleep 3600"));
    let late = node.wait_phase("late", "Failed", Duration::from_secs(10));
    assert_eq!(late["status"]["reason"], "Evicted");
    assert_eq!(
        late["status"]["message"],
        "Pod was rejected: The node had condition: [MemoryPressure]."
    );

    let evicted_pod = node.wait_phase("big-low", "Failed", Duration::from_secs(30));
    assert_eq!(evicted_pod["status"]["reason"], "Evicted");
    let message = evicted_pod["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("The node was low on resource: memory."),
        "{message}"
    );

    node.wait_for("MemoryPressure to clear", Duration::from_secs(40), |n| {
        (memory_pressure(n) == Some(false)).then_some(())
    });
    let held = evicted_at.elapsed();
    assert!(
        held >= Duration::from_secs(7),
        "MemoryPressure cleared after only {held:?}"
    );
    // One eviction was enough: the others keep running.
    assert_eq!(evicted(&node), vec![name("big-low")]);
    for running in ["big-high", "steady"] {
        assert_eq!(
            node.pod(running).unwrap()["status"]["phase"],
            "Running",
            "{running}"
        );
    }
    let metrics = node.try_get("/metrics").expect("/metrics");
    assert!(
        metrics.contains(
            "wasmlet_evictions_total{eviction_signal=\"memory.available\",plugin=\"built-in\"} 1"
        ),
        "{metrics}"
    );
    // Upstream's own series, under its legacy name without `_total`.
    assert!(
        metrics.contains("kubelet_evictions{eviction_signal=\"memory.available\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "kubelet_eviction_stats_age_seconds_count{eviction_signal=\"memory.available\"} 1"
        ),
        "{metrics}"
    );
}

#[test]
fn a_hot_swap_under_pressure_changes_the_next_eviction() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("eviction.wasm");
    std::fs::copy(components::EVICTION_DEFAULT.path(), &live).unwrap();
    let node = pressured_node(
        "t-evict-swap",
        4 * GIB,
        &format!(
            "- name: eviction\n  world: eviction-policy\n  path: {}\n",
            live.display()
        ),
    );
    for (name, priority, labels) in [
        ("low", 1, ""),
        ("mid", 2, ""),
        ("batch", 3, "workload-class: batch"),
        ("top", 4, ""),
    ] {
        node.write_manifest(&format!("{name}.yaml"), &steady_cpu(name, priority, labels));
    }
    let name = |p: &str| format!("{p}-t-evict-swap");
    node.wait_for("the first eviction", Duration::from_secs(30), |n| {
        (evicted(n).first() == Some(&name("low"))).then_some(())
    });
    // Swap in batch-first while the pressure holds: batch goes next, before mid.
    let tmp = dir.path().join("eviction.wasm.new");
    std::fs::copy(components::EVICTION_BATCH_FIRST.path(), &tmp).unwrap();
    std::fs::rename(&tmp, &live).unwrap();
    node.wait_for("all four evicted", Duration::from_secs(60), |n| {
        (evicted(n).len() == 4).then_some(())
    });
    let log = decisions(&node);
    let evictions: Vec<&Value> = log.iter().filter(|d| d["evicted"].is_string()).collect();
    let order: Vec<&str> = evictions
        .iter()
        .map(|d| d["evicted"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [name("low"), name("batch"), name("mid"), name("top")],
        "{log:?}"
    );
    let sha = |d: &Value| d["decidedBy"]["sha256"].as_str().unwrap_or("").to_string();
    assert_ne!(
        sha(evictions[0]),
        sha(evictions[1]),
        "the swap must change the deciding version"
    );
    // No cycle missed or doubled: one eviction per cycle, in increasing cycle order.
    let cycles: Vec<u64> = evictions
        .iter()
        .map(|d| d["cycle"].as_u64().unwrap())
        .collect();
    assert!(cycles.windows(2).all(|w| w[0] < w[1]), "{cycles:?}");
    for p in ["low", "mid", "batch", "top"] {
        let pod = node.wait_phase(p, "Failed", Duration::from_secs(20));
        assert_eq!(pod["status"]["reason"], "Evicted", "{p}");
    }
}

#[test]
fn a_shadow_plugin_reports_disagreements_and_evicts_nothing() {
    let node = pressured_node(
        "t-evict-shadow",
        4 * GIB,
        &format!(
            "- name: active\n  world: eviction-policy\n  path: {}\n\
             - name: shadow\n  world: eviction-policy\n  path: {}\n  shadow: true\n",
            components::EVICTION_DEFAULT.path().display(),
            components::EVICTION_BATCH_FIRST.path().display()
        ),
    );
    node.write_manifest("low.yaml", &steady_cpu("low", 1, ""));
    node.write_manifest(
        "batch.yaml",
        &steady_cpu("batch", 5, "workload-class: batch"),
    );
    let name = |p: &str| format!("{p}-t-evict-shadow");
    let first = node.wait_for("a decision with both pods", Duration::from_secs(30), |n| {
        decisions(n).into_iter().find(|d| {
            d["evicted"].is_string() && d["ranking"].as_array().is_some_and(|r| r.len() == 2)
        })
    });
    assert_eq!(
        first["evicted"],
        name("low"),
        "the active plugin decides: {first}"
    );
    assert_eq!(first["shadow"]["wouldEvict"], name("batch"), "{first}");
    assert_eq!(first["shadow"]["agrees"], false);
    assert_eq!(first["shadow"]["decidedBy"]["name"], "shadow");
    let metrics = node.try_get("/metrics").expect("/metrics");
    assert!(
        metrics.contains("wasmlet_eviction_shadow_disagreements_total{plugin=\"shadow\"} 1"),
        "{metrics}"
    );
}

#[test]
fn a_trapping_eviction_plugin_falls_back_to_the_default() {
    let mut node = pressured_node(
        "t-evict-trap",
        4 * GIB,
        &format!(
            "- name: trap\n  world: eviction-policy\n  path: {}\n",
            components::GUEST_TRAP.path().display()
        ),
    );
    node.write_manifest("low.yaml", &steady_cpu("low", 1, ""));
    node.write_manifest("high.yaml", &steady_cpu("high", 9, ""));
    let first = node.wait_for(
        "an eviction of both candidates",
        Duration::from_secs(30),
        |n| {
            decisions(n).into_iter().find(|d| {
                d["evicted"].is_string() && d["ranking"].as_array().is_some_and(|r| r.len() == 2)
            })
        },
    );
    assert_eq!(first["evicted"], "low-t-evict-trap", "{first}");
    assert_eq!(first["decidedBy"]["kind"], "builtIn", "{first}");
    node.assert_running();
    assert_eq!(node.try_get("/healthz").as_deref(), Some("ok"));
}
