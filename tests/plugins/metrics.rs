//! The plugin series of `/metrics` (issue 17) move when the thing they count happens, with real
//! components: a call, a fault of each kind the guests can cause, a swap, a rejected version,
//! and the info series following the serving version and its state.

use super::*;

fn calls(text: &str, plugin: &str, world: &str, result: &str) -> Option<f64> {
    value(
        text,
        &format!(
            r#"wasmlet_plugin_calls_total{{plugin="{plugin}",world="{world}",result="{result}"}}"#
        ),
    )
}

fn faults(text: &str, plugin: &str, kind: &str) -> Option<f64> {
    value(
        text,
        &format!(r#"wasmlet_plugin_faults_total{{plugin="{plugin}",kind="{kind}"}}"#),
    )
}

fn swaps(text: &str, plugin: &str, result: &str) -> Option<f64> {
    value(
        text,
        &format!(r#"wasmlet_plugin_swaps_total{{plugin="{plugin}",result="{result}"}}"#),
    )
}

fn info(text: &str, plugin: &str, world: &str, sha256: &str, state: &str) -> Option<f64> {
    value(
        text,
        &format!(
            r#"wasmlet_plugin_info{{plugin="{plugin}",world="{world}",sha256="{sha256}",state="{state}"}}"#
        ),
    )
}

fn sha_of(path: &Path) -> String {
    sha256_hex(&std::fs::read(path).unwrap())
}

#[test]
fn a_call_moves_the_call_counter_and_the_duration_histogram() {
    let setup = registry(&plugin(
        "ranker",
        "eviction-policy",
        &components::EVICTION_DEFAULT.path(),
        "",
    ));
    let world = "eviction-policy";
    let before = scrape(&setup.registry);
    assert_eq!(calls(&before, "ranker", world, "ok"), Some(0.0), "{before}");
    let s = snapshot(&mut Lcg(12), 30, policy::Signal::MemoryAvailable);
    for _ in 0..3 {
        assert!(plugin_decided(&setup.registry.rank(&s)));
    }
    let text = scrape(&setup.registry);
    assert_eq!(calls(&text, "ranker", world, "ok"), Some(3.0), "{text}");
    assert_eq!(calls(&text, "ranker", world, "fault"), Some(0.0), "{text}");
    let histogram =
        r#"wasmlet_plugin_call_duration_seconds_count{plugin="ranker",world="eviction-policy"}"#;
    assert_eq!(value(&text, histogram), Some(3.0), "{text}");
    let sum =
        r#"wasmlet_plugin_call_duration_seconds_sum{plugin="ranker",world="eviction-policy"}"#;
    let sum = value(&text, sum).unwrap_or_default();
    assert!(sum > 0.0 && sum < 3.0, "3 rankings took {sum} s");
    // The +Inf bucket holds every call; the 1 s bound too (a warm ranking takes µs).
    let bucket = |le: &str| {
        value(
            &text,
            &format!(
                r#"wasmlet_plugin_call_duration_seconds_bucket{{le="{le}",plugin="ranker",world="eviction-policy"}}"#
            ),
        )
    };
    assert_eq!(bucket("+Inf"), Some(3.0), "{text}");
    assert_eq!(bucket("1.048576"), Some(3.0), "{text}");
    // Counters are exposed once, with `_total` on the samples only.
    assert!(
        text.contains("# TYPE wasmlet_plugin_calls counter"),
        "{text}"
    );
    assert!(!text.contains("_total_total"), "{text}");
}

#[test]
fn a_faulting_guest_moves_the_fault_counter_of_its_kind() {
    let world = "eviction-policy";
    let s = snapshot(&mut Lcg(13), 20, policy::Signal::MemoryAvailable);
    for (guest, extra, kind, result) in [
        ("guest_trap", "", "trap", "fault"),
        (
            "guest_loop",
            "  limits: {deadlineMs: 20}\n",
            "deadline",
            "fault",
        ),
        (
            "guest_loop",
            "  limits: {deadlineMs: 60000, fuel: 5000000}\n",
            "fuel",
            "fault",
        ),
        (
            "guest_alloc",
            "  limits: {deadlineMs: 2000, memoryMiB: 16}\n",
            "memory",
            "fault",
        ),
        (
            "guest_nonsense",
            "  config: {answer: out-of-range}\n",
            "invalid_answer",
            "invalid",
        ),
    ] {
        let setup = registry(&plugin(
            "faulty",
            world,
            &Component::named(guest).path(),
            extra,
        ));
        let decision = setup.registry.rank(&s);
        assert!(!plugin_decided(&decision), "{guest}: {decision:?}");
        let text = scrape(&setup.registry);
        assert_eq!(faults(&text, "faulty", kind), Some(1.0), "{guest}: {text}");
        assert_eq!(
            calls(&text, "faulty", world, result),
            Some(1.0),
            "{guest}: {text}"
        );
        assert_eq!(calls(&text, "faulty", world, "ok"), Some(0.0), "{guest}");
        let others: f64 = wasmlet_plugin_host::Fault::KINDS
            .iter()
            .filter(|k| **k != kind)
            .filter_map(|k| faults(&text, "faulty", k))
            .sum();
        assert_eq!(others, 0.0, "{guest}: only {kind} moved: {text}");
    }

    // A guest that answers `err`: an error, not a fault of the runtime.
    let setup = registry(&plugin(
        "hostile",
        world,
        &components::GUEST_HOSTILE_EVICTION.path(),
        "  limits: {deadlineMs: 5000, memoryMiB: 64}\n  config: {fault: strings, in: rank}\n",
    ));
    let _ = setup.registry.rank(&s);
    let text = scrape(&setup.registry);
    assert_eq!(faults(&text, "hostile", "error"), Some(1.0), "{text}");
    assert_eq!(calls(&text, "hostile", world, "error"), Some(1.0), "{text}");
}

#[test]
fn swaps_and_rejected_versions_are_counted_and_info_follows_the_serving_version() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("policy.wasm");
    std::fs::copy(components::EVICTION_DEFAULT.path(), &live).unwrap();
    let config = dir.path().join("plugins.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{}{}",
            plugin("live", "eviction-policy", &live, ""),
            plugin(
                "trial",
                "eviction-policy",
                &components::EVICTION_BATCH_FIRST.path(),
                "  shadow: true\n"
            ),
        ),
    )
    .unwrap();
    let engine = PluginEngine::new(Some(dir.path().join("cache"))).unwrap();
    let registry = PluginRegistry::new(engine, Some(config));
    let world = "eviction-policy";
    let first = sha_of(&components::EVICTION_DEFAULT.path());
    let text = scrape(&registry);
    assert_eq!(swaps(&text, "live", "swapped"), Some(1.0), "{text}");
    assert_eq!(swaps(&text, "live", "rejected"), Some(0.0), "{text}");
    assert_eq!(
        info(&text, "live", world, &first, "serving"),
        Some(1.0),
        "{text}"
    );
    let trial = sha_of(&components::EVICTION_BATCH_FIRST.path());
    assert_eq!(
        info(&text, "trial", world, &trial, "shadow"),
        Some(1.0),
        "{text}"
    );

    // A new version swaps in: counted, and info names it alone.
    std::fs::copy(components::EVICTION_BATCH_FIRST.path(), &live).unwrap();
    registry.reload();
    let text = scrape(&registry);
    assert_eq!(swaps(&text, "live", "swapped"), Some(2.0), "{text}");
    assert_eq!(
        info(&text, "live", world, &trial, "serving"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        info(&text, "live", world, &first, "serving"),
        None,
        "{text}"
    );

    // A version of another world is rejected; the serving one stays in info.
    std::fs::copy(components::GC_DEFAULT.path(), &live).unwrap();
    registry.reload();
    let text = scrape(&registry);
    assert_eq!(swaps(&text, "live", "rejected"), Some(1.0), "{text}");
    assert_eq!(swaps(&text, "live", "swapped"), Some(2.0), "{text}");
    assert_eq!(
        info(&text, "live", world, &trial, "serving"),
        Some(1.0),
        "{text}"
    );
    // The same rejected bytes seen again are not a new rejection.
    registry.reload();
    assert_eq!(
        swaps(&scrape(&registry), "live", "rejected"),
        Some(1.0),
        "rejections are counted per version"
    );
}

#[test]
fn info_shows_a_failed_plugin_and_one_never_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.wasm");
    std::fs::write(&garbage, b"not wasm").unwrap();
    let setup = registry(&format!(
        "{}{}",
        plugin(
            "trapper",
            "eviction-policy",
            &components::GUEST_TRAP.path(),
            ""
        ),
        plugin("broken", "gc-strategy", &garbage, ""),
    ));
    let s = snapshot(&mut Lcg(14), 5, policy::Signal::MemoryAvailable);
    for _ in 0..wasmlet_plugin_host::FAULTS_TO_FAIL {
        let _ = setup.registry.rank(&s);
    }
    let text = scrape(&setup.registry);
    let sha = sha_of(&components::GUEST_TRAP.path());
    assert_eq!(
        info(&text, "trapper", "eviction-policy", &sha, "failed"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        info(&text, "broken", "gc-strategy", "", "notLoaded"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(swaps(&text, "broken", "rejected"), Some(1.0), "{text}");
    assert_eq!(
        faults(&text, "trapper", "trap"),
        Some(f64::from(wasmlet_plugin_host::FAULTS_TO_FAIL)),
        "{text}"
    );
}
