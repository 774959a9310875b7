//! Hot swap under load.

use super::*;

/// Replaces `target` by `source` with a rename, as a deployment tool would.
fn replace(source: &Path, target: &Path) {
    let tmp = target.with_extension("tmp");
    std::fs::copy(source, &tmp).unwrap();
    std::fs::rename(&tmp, target).unwrap();
}

#[test]
fn hot_swap_100_times_under_load_never_fails_a_call() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("policy.wasm");
    std::fs::copy(components::EVICTION_DEFAULT.path(), &live).unwrap();
    let config = dir.path().join("plugins.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{}",
            // What is tested is the swap, not the deadline: a call that the machine's other
            // load slows past the default 50 ms would fall back for that reason alone.
            plugin(
                "swapped",
                "eviction-policy",
                &live,
                "  limits: {deadlineMs: 2000}\n"
            )
        ),
    )
    .unwrap();
    let engine = PluginEngine::new(Some(dir.path().join("cache"))).unwrap();
    let registry = PluginRegistry::new(engine, Some(config));
    let _watcher = registry.watch().expect("watcher");

    // A snapshot where the two rules differ: the batch pod has the highest priority.
    let mut s = snapshot(&mut Lcg(9), 20, policy::Signal::MemoryAvailable);
    for (i, pod) in s.pods.iter_mut().enumerate() {
        pod.is_static = false;
        pod.is_critical = false;
        pod.priority = if i == 0 { 1000 } else { 0 };
        let meta = std::sync::Arc::make_mut(&mut s.meta);
        meta[i].labels.clear();
        meta[i].namespace = "default".into();
    }
    std::sync::Arc::make_mut(&mut s.meta)[0]
        .labels
        .insert("workload-class".into(), "batch".into());
    let default_first = policy::eviction::rank(&s.pressure, &s.pods)[0];
    assert_ne!(default_first, 0);

    let valid = [
        (components::EVICTION_BATCH_FIRST.path(), 0u32),
        (components::EVICTION_DEFAULT.path(), default_first),
    ];
    let valid_shas: Vec<String> = valid
        .iter()
        .map(|(p, _)| sha256_hex(&std::fs::read(p).unwrap()))
        .collect();
    let garbage = dir.path().join("garbage.bin");
    std::fs::write(&garbage, b"\0asm garbage").unwrap();
    let invalid = [garbage, components::GC_DEFAULT.path()];

    let stop = Arc::new(AtomicBool::new(false));
    let caller = {
        let registry = registry.clone();
        let stop = stop.clone();
        let s = s.clone();
        let valid_shas = valid_shas.clone();
        std::thread::spawn(move || {
            let mut calls = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let decision = registry.rank(&s);
                match &decision.decided_by {
                    DecidedBy::Plugin { sha256, .. } => assert!(
                        valid_shas.contains(sha256),
                        "a decision from an unknown version {sha256}"
                    ),
                    other => panic!("call {calls} fell back: {other:?}"),
                }
                calls += 1;
            }
            calls
        })
    };
    let slot = registry.slot_named("swapped").unwrap();
    let serving_sha = || slot.serving().map(|v| v.sha256.clone());
    for swap in 0..100 {
        if swap % 2 == 0 {
            let (source, first) = &valid[(swap / 2) % 2];
            let sha = sha256_hex(&std::fs::read(source).unwrap());
            replace(source, &live);
            let deadline = Instant::now() + Duration::from_secs(20);
            while serving_sha().as_deref() != Some(sha.as_str()) {
                assert!(
                    Instant::now() < deadline,
                    "swap {swap}: the new version never served"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(
                registry.rank(&s).order[0],
                *first,
                "swap {swap}: decisions follow the new rule"
            );
        } else {
            let source = &invalid[(swap / 2) % 2];
            let sha = sha256_hex(&std::fs::read(source).unwrap());
            let before = serving_sha();
            replace(source, &live);
            let deadline = Instant::now() + Duration::from_secs(20);
            while registry.report()["plugins"][0]["lastRejected"]["sha256"] != sha.as_str() {
                assert!(
                    Instant::now() < deadline,
                    "swap {swap}: the invalid version was never rejected"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(
                serving_sha(),
                before,
                "swap {swap}: an invalid version never replaces a working one"
            );
        }
    }
    stop.store(true, Ordering::SeqCst);
    let calls = caller.join().expect("no call failed");
    assert!(
        calls > 100,
        "the caller kept calling during the swaps ({calls} calls)"
    );
    assert_eq!(registry.report()["plugins"][0]["faults"], 0);
}
