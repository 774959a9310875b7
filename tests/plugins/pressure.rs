//! The optional `pressure-watch` export (contract 0.1.2) with the real `eviction-psi-guard`:
//! probed for at load, asked with the node's PSI, its answer checked as a ranking is; plugins
//! of `eviction-policy` (current and 0.1.0) are never asked.

use super::*;

fn psi_at(read_unix_ms: u64, memory_full_percent: u32) -> policy::NodePsi {
    let mut psi = policy::NodePsi {
        read_unix_ms,
        ..Default::default()
    };
    psi.memory.full.avg10 = memory_full_percent * 100;
    psi.memory.some.avg10 = memory_full_percent * 200;
    psi
}

fn pod(priority: i32, request: u64, usage: u64) -> policy::PodInfo {
    policy::PodInfo {
        priority,
        has_stats: true,
        qos: policy::QosClass::Burstable,
        memory_request_bytes: request,
        memory_usage_bytes: usage,
        ..Default::default()
    }
}

fn quiet_snapshot(pods: Vec<policy::PodInfo>) -> EvictionSnapshot {
    let meta = (0..pods.len())
        .map(|i| PodMeta {
            namespace: "default".into(),
            name: format!("pod-{i}"),
            uid: format!("uid-{i}"),
            ..Default::default()
        })
        .collect();
    EvictionSnapshot {
        pods,
        meta: Arc::new(meta),
        ..Default::default()
    }
}

#[test]
fn psi_guard_asks_to_evict_once_pressure_held_and_never_a_critical_pod() {
    let guard = components::EVICTION_PSI_GUARD.path();
    let setup = registry(&plugin(
        "psi-guard",
        "eviction-policy",
        &guard,
        "  config:\n    memoryFullAvg10Percent: 20\n    forSeconds: 10\n",
    ));
    setup.registry.reload();
    assert!(
        setup.registry.watches_pressure(),
        "{:#}",
        setup.registry.report()
    );
    let mut critical = pod(-100, 0, 1 << 30);
    critical.is_critical = true;
    let snapshot = quiet_snapshot(vec![
        pod(100, 0, 900 << 20),
        pod(0, 64 << 20, 80 << 20),
        critical,
        pod(0, 64 << 20, 600 << 20),
    ]);
    let ask = |ms, percent| {
        setup
            .registry
            .watch_pressure(&snapshot, &psi_at(ms, percent))
    };
    assert_eq!(ask(1_000, 5).expect("answers"), None, "below the limit");
    assert_eq!(
        ask(2_000, 30).expect("answers"),
        None,
        "over, not yet for 10 s"
    );
    let decision = ask(12_000, 30).expect("answers").expect("asks to evict");
    // Lowest priority first, then the most above its request; the critical pod never.
    assert_eq!(decision.order, [3, 1, 0]);
    assert!(
        decision
            .reason
            .contains("memory full avg10 30.00% at or over 20% for 10 s"),
        "{}",
        decision.reason
    );
    assert!(!decision.may_evict_guaranteed);
    match &decision.decided_by {
        DecidedBy::Plugin { name, .. } => assert_eq!(name, "psi-guard"),
        other => panic!("decided by {other:?}"),
    }
    // Under a threshold it ranks as upstream, as the built-in default does.
    let mut ranked = snapshot.clone();
    ranked.pressure = vec![policy::SignalObservation::new(
        policy::Signal::MemoryAvailable,
        10,
        100,
        20,
    )];
    let decision = setup.registry.rank(&ranked);
    assert!(plugin_decided(&decision), "{decision:?}");
    assert_eq!(
        decision.order,
        policy::eviction::rank(&ranked.pressure, &ranked.pods)
            .into_iter()
            .filter(|&i| ranked.pods[i as usize].is_evictable())
            .collect::<Vec<_>>()
    );
}

#[test]
fn the_guaranteed_grant_and_a_refused_config_come_from_the_plugin_config() {
    let guard = components::EVICTION_PSI_GUARD.path();
    let setup = registry(&plugin(
        "psi-guard",
        "eviction-policy",
        &guard,
        "  config:\n    forSeconds: 0\n    memoryFullAvg10Percent: 10\n  capabilities:\n    evictGuaranteed: true\n",
    ));
    setup.registry.reload();
    assert!(
        setup.registry.watches_pressure(),
        "{:#}",
        setup.registry.report()
    );
    let snapshot = quiet_snapshot(vec![pod(0, 0, 100)]);
    let decision = setup
        .registry
        .watch_pressure(&snapshot, &psi_at(0, 50))
        .expect("answers")
        .expect("forSeconds 0 asks at once");
    assert!(decision.may_evict_guaranteed);

    let refused = registry(&plugin(
        "psi-guard",
        "eviction-policy",
        &guard,
        "  config:\n    memoryFullAvg10Percent: 0\n",
    ));
    refused.registry.reload();
    assert!(!refused.registry.watches_pressure());
    let report = refused.registry.report().to_string();
    assert!(
        report.contains("memoryFullAvg10Percent must be in (0, 100]"),
        "{report}"
    );
}

#[test]
fn plugins_without_the_export_are_never_asked() {
    for name in ["eviction_default", "guest_contract_0_1_0"] {
        let setup = registry(&plugin(
            "plain",
            "eviction-policy",
            &Component::named(name).path(),
            "",
        ));
        setup.registry.reload();
        assert!(!setup.registry.watches_pressure(), "{name}");
        let answer = setup
            .registry
            .watch_pressure(&quiet_snapshot(vec![pod(0, 0, 100)]), &psi_at(0, 90));
        assert!(matches!(answer, Ok(None)), "{name}: {answer:?}");
    }
}
