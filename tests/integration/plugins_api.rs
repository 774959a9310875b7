//! `/plugins` on a running node, and a live swap seen there.

use crate::harness::{write_plugin_config, Node, NodeOptions};
use std::time::Duration;
use wasmlet_test_support::components;

#[test]
fn plugins_are_listed_and_swapped_on_a_live_node() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("eviction.wasm");
    std::fs::copy(components::EVICTION_DEFAULT.path(), &live).unwrap();
    let config = write_plugin_config(
        dir.path(),
        &format!(
            "- name: eviction\n  world: eviction-policy\n  path: eviction.wasm\n\
             - name: gc-default\n  world: gc-strategy\n  path: {}\n",
            components::GC_DEFAULT.path().display()
        ),
    );
    let node = Node::start_with(
        "t-plugins",
        NodeOptions {
            extra_wasmlet: format!("pluginConfig: {}\n", config.display()),
            ..Default::default()
        },
    );
    let report = node.get_json("/plugins");
    let plugins = report["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 2, "{report}");
    for entry in plugins {
        assert_eq!(entry["state"], "serving", "{entry}");
        assert_eq!(entry["sha256"].as_str().unwrap().len(), 64);
        for key in [
            "name",
            "world",
            "loadedAt",
            "calls",
            "faults",
            "latencyMicros",
            "lastRejected",
        ] {
            assert!(entry.get(key).is_some(), "{key} missing in {entry}");
        }
    }
    let old_sha = plugins[0]["sha256"].as_str().unwrap().to_string();

    // Replace the component by renaming a new one over it, as a deployment would.
    let tmp = dir.path().join("eviction.wasm.new");
    std::fs::copy(components::EVICTION_BATCH_FIRST.path(), &tmp).unwrap();
    std::fs::rename(&tmp, &live).unwrap();
    let swapped = node.wait_for("the swap to show", Duration::from_secs(20), |n| {
        let report = n.get_json("/plugins");
        let entry = report["plugins"][0].clone();
        (entry["sha256"] != old_sha.as_str()).then_some(entry)
    });
    assert_eq!(swapped["state"], "serving");
    assert_eq!(swapped["swaps"], 2);
    assert!(
        node.log().contains("plugin swapped in"),
        "the swap is logged"
    );

    // A broken version is rejected and the working one keeps serving.
    std::fs::write(&tmp, b"broken").unwrap();
    std::fs::rename(&tmp, &live).unwrap();
    let rejected = node.wait_for("the rejection to show", Duration::from_secs(20), |n| {
        let entry = n.get_json("/plugins")["plugins"][0].clone();
        entry["lastRejected"].is_object().then_some(entry)
    });
    assert_eq!(rejected["sha256"], swapped["sha256"]);
    assert!(rejected["lastRejected"]["reason"]
        .as_str()
        .unwrap()
        .contains("not a valid component"));
}
