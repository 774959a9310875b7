//! Contract evolution: a component built against the previous `wasmlet:plugin` version
//! (`wit/history/0.1.0`, the guest `guest-contract-0-1-0`) is served beside current ones by a
//! host at 0.1.2, and a current one uses what 0.1.1 added (`host.log-enabled`).

use super::*;

#[test]
fn a_plugin_of_the_previous_contract_serves_beside_current_ones() {
    let old = components::GUEST_CONTRACT_0_1_0.path();
    let current = components::EVICTION_BATCH_FIRST.path();
    let setup = registry(&format!(
        "{}{}",
        plugin("previous", "eviction-policy", &old, ""),
        plugin("current", "eviction-policy", &current, "  shadow: true\n"),
    ));
    setup.registry.reload();
    let report = setup.registry.report();
    let entries = report["plugins"].as_array().expect("plugins listed");
    let contract = |name: &str| {
        entries
            .iter()
            .find(|p| p["name"] == name)
            .map(|p| (p["state"].clone(), p["contract"].clone()))
    };
    assert_eq!(
        contract("previous"),
        Some(("serving".into(), "0.1.0".into())),
        "{report:#}"
    );
    assert_eq!(
        contract("current"),
        Some((
            "serving".into(),
            wasmlet_plugin_host::CONTRACT_VERSION.into()
        )),
        "{report:#}"
    );

    // The 0.1.0 plugin decides (its imports, host.log and pod-meta, answered by the 0.1.2
    // host), and the current one ranks the same snapshot as its shadow.
    let mut rng = Lcg(7);
    let mut snapshot = snapshot(&mut rng, 12, policy::Signal::MemoryAvailable);
    for pod in &mut snapshot.pods {
        pod.is_static = false;
        pod.is_critical = false;
        pod.priority = 0;
    }
    let decision = setup.registry.rank(&snapshot);
    assert!(plugin_decided(&decision), "{decision:?}");
    assert_eq!(decision.order, (0..12).rev().collect::<Vec<u32>>());
    let shadow = setup
        .registry
        .rank_shadow(&snapshot)
        .expect("a shadow is configured")
        .expect("the current plugin ranks");
    assert!(plugin_decided(&shadow), "{shadow:?}");
    // eviction-batch-first protects no namespace by default: it ranks every pod.
    assert_eq!(shadow.order.len(), 12, "{shadow:?}");
}

#[test]
fn validate_names_the_contract_a_component_was_built_against() {
    for (name, version) in [
        ("guest_contract_0_1_0", "0.1.0"),
        (
            "eviction_batch_first",
            wasmlet_plugin_host::CONTRACT_VERSION,
        ),
    ] {
        let report = wasmlet_plugin_host::validate_plugin(
            &Component::named(name).path(),
            None,
            "{}",
            wasmlet_plugin_host::Limits::default(),
            Default::default(),
        )
        .unwrap();
        assert!(
            report.contains(&format!("built against wasmlet:plugin@{version}")),
            "{report}"
        );
    }
}
