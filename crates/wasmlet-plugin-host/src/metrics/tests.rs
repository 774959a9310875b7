use super::*;

fn encode(metrics: &PluginMetrics) -> String {
    let mut registry = Registry::with_prefix("wasmlet");
    metrics.register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    text
}

#[test]
fn counters_are_named_once_with_total_and_start_at_zero() {
    let metrics = PluginMetrics::default();
    let slot = metrics.slot("p", World::EvictionPolicy);
    slot.call(Duration::from_micros(3), None);
    slot.call(Duration::from_millis(20), Some(&Fault::Deadline(20)));
    slot.call(Duration::from_micros(5), Some(&Fault::Rejected("x".into())));
    slot.swap(SwapResult::Swapped);
    slot.rollout(RolloutResult::Started);
    slot.rollout(RolloutResult::Promoted);
    let text = encode(&metrics);
    for line in [
        "# TYPE wasmlet_plugin_calls counter",
        r#"wasmlet_plugin_calls_total{plugin="p",world="eviction-policy",result="ok"} 1"#,
        r#"wasmlet_plugin_calls_total{plugin="p",world="eviction-policy",result="fault"} 1"#,
        r#"wasmlet_plugin_calls_total{plugin="p",world="eviction-policy",result="invalid"} 1"#,
        r#"wasmlet_plugin_calls_total{plugin="p",world="eviction-policy",result="error"} 0"#,
        r#"wasmlet_plugin_faults_total{plugin="p",kind="deadline"} 1"#,
        r#"wasmlet_plugin_faults_total{plugin="p",kind="invalid_answer"} 1"#,
        r#"wasmlet_plugin_faults_total{plugin="p",kind="trap"} 0"#,
        r#"wasmlet_plugin_swaps_total{plugin="p",result="swapped"} 1"#,
        r#"wasmlet_plugin_swaps_total{plugin="p",result="rejected"} 0"#,
        "# TYPE wasmlet_plugin_call_duration_seconds histogram",
        r#"wasmlet_plugin_call_duration_seconds_count{plugin="p",world="eviction-policy"} 3"#,
        r#"wasmlet_plugin_rollouts_total{plugin="p",result="started"} 1"#,
        r#"wasmlet_plugin_rollouts_total{plugin="p",result="promoted"} 1"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
    }
    assert!(!text.contains("_total_total"), "{text}");
}

#[test]
fn durations_fall_in_microsecond_buckets() {
    let metrics = PluginMetrics::default();
    let slot = metrics.slot("p", World::GcStrategy);
    slot.call(Duration::from_nanos(1500), None);
    let text = encode(&metrics);
    let bucket = |le: &str| {
        let series = format!(
            r#"wasmlet_plugin_call_duration_seconds_bucket{{le="{le}",plugin="p",world="gc-strategy"}} "#
        );
        text.lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .unwrap_or_else(|| panic!("no bucket {le} in\n{text}"))
            .to_string()
    };
    // 1.5 µs: above the 1 µs bound, within the 2 µs one; 21 bounds up to about 1 s.
    assert_eq!(bucket("0.000001"), "0");
    assert_eq!(bucket("0.000002"), "1");
    assert_eq!(bucket("1.048576"), "1");
    assert_eq!(bucket("+Inf"), "1");
}

#[test]
fn every_fault_has_its_own_kind_and_every_result_its_index() {
    let faults = [
        Fault::Deadline(1),
        Fault::Fuel,
        Fault::Memory(1),
        Fault::Trap(String::new()),
        Fault::Grant(String::new()),
        Fault::Configure(String::new()),
        Fault::Error(String::new()),
        Fault::Rejected(String::new()),
    ];
    for fault in &faults {
        assert_eq!(Fault::KINDS[fault.kind_index()], fault.kind());
    }
    for result in CallResult::ALL {
        assert_eq!(CallResult::ALL[result as usize], result);
    }
    assert_eq!(CallResult::of(None), CallResult::Ok);
    assert_eq!(CallResult::of(Some(&Fault::Fuel)), CallResult::Fault);
    assert_eq!(CallResult::of(Some(&faults[6])), CallResult::Error);
}
