use super::*;
use crate::config::eviction::ThresholdValue;
use crate::eviction::DecisionLog;
use wasmlet_plugin_host::{sha256_hex, PluginEngine, PodMeta};
use wasmlet_policy_default::{PodInfo, QosClass, Signal, SignalObservation};
use wasmlet_test_support::components;

/// Two evictable pods: `low` (priority 0) goes first by the upstream order, `batch`
/// (priority 1000, `workload-class=batch`) first by `eviction_batch_first`.
fn snapshot() -> EvictionSnapshot {
    let pod = |priority| PodInfo {
        priority,
        qos: QosClass::BestEffort,
        has_stats: true,
        container_count: 1,
        ..Default::default()
    };
    let meta = |name: &str, labels: &[(&str, &str)]| PodMeta {
        namespace: "default".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        annotations: Default::default(),
    };
    let mut snapshot = EvictionSnapshot {
        pressure: vec![SignalObservation::new(
            Signal::MemoryAvailable,
            50,
            1000,
            100,
        )],
        pods: vec![pod(0), pod(1000)],
        meta: Arc::new(vec![
            meta("low", &[]),
            meta("batch", &[("workload-class", "batch")]),
        ]),
        ..Default::default()
    };
    snapshot.node.pod_count = 2;
    snapshot
}

/// `/evictions` shows the candidate version on trial beside each decision its trial ranked:
/// what it would have evicted, whether it agreed, and how far its trial got, until the
/// decision that promotes it; the serving version decides meanwhile.
#[test]
fn the_decision_log_shows_the_rollout_candidate_on_trial() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("policy.wasm");
    std::fs::copy(components::EVICTION_DEFAULT.path(), &live).unwrap();
    let config = dir.path().join("plugins.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n\
             - name: rolled\n  world: eviction-policy\n  path: {}\n  rollout: {{shadowCycles: 2}}\n",
            live.display()
        ),
    )
    .unwrap();
    let plugins = PluginRegistry::new(PluginEngine::new(None).unwrap(), Some(config));
    let metrics = Metrics::default();
    let threshold = Threshold {
        signal: Signal::MemoryAvailable,
        value: ThresholdValue::Quantity(100),
        grace_period: Duration::ZERO,
        min_reclaim: None,
    };
    let log = DecisionLog::default();
    let decide = |cycle| {
        let (chosen, record) = decide(&plugins, &metrics, &snapshot(), cycle, &threshold, 50, 1000);
        assert_eq!(chosen, Some(0), "the serving version decides: low first");
        log.push(record);
    };

    decide(1);
    let new = std::fs::read(components::EVICTION_BATCH_FIRST.path()).unwrap();
    let tmp = dir.path().join("policy.tmp");
    std::fs::write(&tmp, &new).unwrap();
    std::fs::rename(&tmp, &live).unwrap();
    plugins.reload();
    decide(2);
    decide(3);

    let shown = serde_json::to_value(log.list()).unwrap();
    assert!(shown[0]["candidate"].is_null(), "no trial yet: {shown}");
    for (i, state) in [(1, "trial"), (2, "promoted")] {
        let decision = &shown[i];
        assert_eq!(decision["ranking"], serde_json::json!(["low", "batch"]));
        let candidate = &decision["candidate"];
        assert_eq!(candidate["plugin"], "rolled", "{decision}");
        assert_eq!(candidate["sha256"], sha256_hex(&new), "{decision}");
        assert_eq!(candidate["wouldEvict"], "batch", "{decision}");
        assert_eq!(
            candidate["ranking"],
            serde_json::json!(["batch", "low"]),
            "{decision}"
        );
        assert_eq!(candidate["agrees"], false, "{decision}");
        assert_eq!(candidate["decisions"], i, "{decision}");
        assert_eq!(candidate["shadowCycles"], 2, "{decision}");
        assert_eq!(candidate["disagreements"], i, "{decision}");
        assert_eq!(candidate["state"], state, "{decision}");
    }
}
