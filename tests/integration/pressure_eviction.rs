//! Evictions an eviction plugin asks for on pressure stall information (`pressure-watch`)
//! on real containerd, with the real `eviction-psi-guard` swapped in live. The node reads its
//! PSI from a directory laid out as `/proc/pressure` (`nodePressurePath`), which the test
//! writes: the reading is the one input a test cannot make the kernel give on demand; the
//! plugin, the host's bounds, the eviction and its status are the real ones.

use crate::harness::{condition, write_plugin_config, Node, NodeOptions};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;
use wasmlet_test_support::components;

/// Writes the three pressure files with memory `full avg10` (and twice that as `some`).
fn write_pressure(dir: &Path, memory_full_percent: f64) {
    let line = |kind: &str, avg10: f64| {
        format!(
            "{kind} avg10={avg10:.2} avg60={:.2} avg300=0.00 total=1000\n",
            avg10 / 2.0
        )
    };
    for (file, full) in [("cpu", 0.0), ("io", 1.0), ("memory", memory_full_percent)] {
        let text = line("some", (full * 2.0f64).min(100.0)) + &line("full", full);
        let tmp = dir.join(format!(".{file}"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, dir.join(file)).unwrap();
    }
}

/// A busybox pod holding `fill_mib` MiB in a memory-backed emptyDir (charged to its cgroup).
fn pod(name: &str, priority: i32, resources: &str, fill_mib: u32) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  priority: {priority}\n\
         \x20 terminationGracePeriodSeconds: 1\n  volumes:\n  - name: fill\n    emptyDir: {{medium: Memory}}\n\
         \x20 containers:\n  - name: main\n    image: docker.io/library/busybox:local\n\
         \x20   command: [sh, -c, \"dd if=/dev/zero of=/fill/f bs=1M count={fill_mib}; sleep 3600\"]\n\
         \x20   resources: {resources}\n    volumeMounts:\n    - name: fill\n      mountPath: /fill\n"
    )
}

fn psi_decisions(node: &Node) -> Vec<Value> {
    node.get_json("/evictions")["decisions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["signal"] == "psi")
        .cloned()
        .collect()
}

/// A node that evicts its static pods, at most one on PSI per hour, with the plugin config at
/// `config` and `extra` settings of the WasmletConfiguration.
fn eviction_node(name: &str, config: &Path, extra: &str) -> Node {
    Node::start_with(
        name,
        NodeOptions {
            extra_wasmlet: format!(
                "evictStaticPods: true\npsiEvictionWindow: 1h\npluginConfig: {}\n{extra}",
                config.display()
            ),
            ..Default::default()
        },
    )
}

#[test]
fn psi_guard_swapped_in_live_evicts_the_pod_over_its_request_once_per_window() {
    let dir = tempfile::tempdir().unwrap();
    let pressure = dir.path().join("pressure");
    std::fs::create_dir(&pressure).unwrap();
    write_pressure(&pressure, 0.0);
    let default_entry = format!(
        "- name: eviction\n  world: eviction-policy\n  path: {}\n",
        components::EVICTION_DEFAULT.path().display()
    );
    let config = write_plugin_config(dir.path(), &default_entry);
    let node = eviction_node(
        "t-psi-evict",
        &config,
        &format!(
            "evictionMonitoringPeriod: 500ms\nnodePressurePath: {}\n",
            pressure.display()
        ),
    );
    let guaranteed = "{requests: {cpu: 50m, memory: 96Mi}, limits: {cpu: 50m, memory: 96Mi}}";
    node.write_manifest("guaranteed.yaml", &pod("guaranteed", 0, guaranteed, 48));
    node.write_manifest(
        "important.yaml",
        &pod("important", 1000, "{requests: {memory: 4Mi}}", 48),
    );
    node.write_manifest(
        "thrasher.yaml",
        &pod("thrasher", 0, "{requests: {memory: 4Mi}}", 32),
    );
    for name in ["guaranteed", "important", "thrasher"] {
        node.wait_phase(name, "Running", Duration::from_secs(60));
    }
    // Every pod has its memory charged before pressure rises.
    std::thread::sleep(Duration::from_secs(3));

    // High pressure with the default plugin, which does not watch PSI: nothing is evicted.
    write_pressure(&pressure, 45.0);
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        psi_decisions(&node).is_empty(),
        "{}",
        node.get_json("/evictions")
    );
    for name in ["guaranteed", "important", "thrasher"] {
        let pod = node.pod(name).expect("pod listed");
        assert_eq!(pod["status"]["phase"], "Running", "{pod}");
    }

    // eviction-psi-guard swapped in by rewriting the plugin config.
    let guard_entry = format!(
        "- name: eviction\n  world: eviction-policy\n  path: {}\n  config:\n    memoryFullAvg10Percent: 20\n    forSeconds: 2\n",
        components::EVICTION_PSI_GUARD.path().display()
    );
    let staged = dir.path().join("staged");
    std::fs::create_dir(&staged).unwrap();
    std::fs::rename(write_plugin_config(&staged, &guard_entry), &config).unwrap();
    let decision = node.wait_for("a pressure eviction", Duration::from_secs(30), |n| {
        psi_decisions(n)
            .into_iter()
            .find(|d| d["evicted"].is_string())
    });
    assert_eq!(decision["evicted"], "thrasher-t-psi-evict", "{decision}");
    assert_eq!(decision["decidedBy"]["kind"], "plugin", "{decision}");
    assert_eq!(decision["decidedBy"]["name"], "eviction", "{decision}");
    assert_eq!(decision["psi"]["memoryFull"][0], 45.0, "{decision}");
    assert!(
        decision["reason"]
            .as_str()
            .is_some_and(|r| r.contains("memory full avg10 45.00% at or over 20%")),
        "{decision}"
    );
    // The Guaranteed pod within its requests is never a candidate the host acts on; the
    // higher-priority one ranks after the thrasher.
    let ranking: Vec<&str> = decision["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(ranking.first(), Some(&"thrasher-t-psi-evict"), "{decision}");

    let evicted = node.wait_phase("thrasher", "Failed", Duration::from_secs(30));
    assert_eq!(evicted["status"]["reason"], "Evicted", "{evicted}");
    let message = evicted["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("memory full avg10 45.00%")
            && message.contains("Eviction plugin eviction"),
        "{message}"
    );
    assert_eq!(condition(&evicted, "DisruptionTarget"), "True", "{evicted}");

    // The window holds: pressure stays high, the plugin keeps asking, no second eviction.
    std::thread::sleep(Duration::from_secs(5));
    let acted: Vec<Value> = psi_decisions(&node)
        .into_iter()
        .filter(|d| d["evicted"].is_string())
        .collect();
    assert_eq!(acted.len(), 1, "{acted:?}");
    for name in ["guaranteed", "important"] {
        let pod = node.pod(name).expect("pod listed");
        assert_eq!(pod["status"]["phase"], "Running", "{name}: {pod}");
    }
    assert!(
        node.log().contains("inside psiEvictionWindow"),
        "a request inside the window is logged"
    );
}

/// The kernel's own reading, not a fed one: a Burstable pod rewrites a file twice its memory
/// limit (reclaim in its cgroup waits on writeback, which the kernel counts as memory stall),
/// beside a Guaranteed pod. psi-guard evicts the thrasher on the node's real PSI, records the
/// reading behind it, keeps the Guaranteed pod, and the stall falls once the thrasher is gone.
/// (A BestEffort pod has no limit to thrash against on a node of this size.)
#[test]
fn a_real_page_cache_thrash_is_evicted_on_the_kernels_memory_stall_and_the_stall_falls() {
    const SOME_PERCENT: f64 = 5.0;
    let dir = tempfile::tempdir().unwrap();
    let guard_entry = format!(
        "- name: eviction\n  world: eviction-policy\n  path: {}\n  config:\n    memoryFullAvg10Percent: 60\n    memorySomeAvg10Percent: {SOME_PERCENT}\n    forSeconds: 5\n",
        components::EVICTION_PSI_GUARD.path().display()
    );
    let config = write_plugin_config(dir.path(), &guard_entry);
    let node = eviction_node("t-psi-real", &config, "evictionMonitoringPeriod: 1s\n");
    let guaranteed = "{requests: {cpu: 50m, memory: 96Mi}, limits: {cpu: 50m, memory: 96Mi}}";
    node.write_manifest("guaranteed.yaml", &pod("guaranteed", 0, guaranteed, 48));
    node.wait_phase("guaranteed", "Running", Duration::from_secs(60));
    node.write_manifest(
        "thrasher.yaml",
        include_str!("pods/pressure_eviction-thrasher.yaml"),
    );

    let decision = node.wait_for("an eviction on real PSI", Duration::from_secs(120), |n| {
        psi_decisions(n)
            .into_iter()
            .find(|d| d["evicted"].is_string())
    });
    assert_eq!(decision["evicted"], "thrasher-t-psi-real", "{decision}");
    let reading = decision["psi"]["memorySome"][0].as_f64().unwrap_or(0.0);
    assert!(
        reading >= SOME_PERCENT,
        "the decision's reading is the kernel's, over the limit: {decision}"
    );
    assert!(
        decision["reason"]
            .as_str()
            .is_some_and(|r| r.contains("memory some avg10")),
        "{decision}"
    );
    let evicted = node.wait_phase("thrasher", "Failed", Duration::from_secs(30));
    assert_eq!(evicted["status"]["reason"], "Evicted", "{evicted}");
    assert_eq!(condition(&evicted, "DisruptionTarget"), "True", "{evicted}");
    let kept = node.pod("guaranteed").expect("pod listed");
    assert_eq!(kept["status"]["phase"], "Running", "{kept}");

    // The stall the thrasher caused decays once it is gone (avg10 is a 10 s moving average).
    node.wait_for(
        "node memory some avg10 under the limit again",
        Duration::from_secs(120),
        |_| {
            let memory = wasmlet::stats::psi::node(wasmlet::stats::psi::Resource::Memory)?;
            (memory.some.avg10 < SOME_PERCENT).then_some(())
        },
    );
}
