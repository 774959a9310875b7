//! Faulty guests are contained and the default decides; a component of another world, or
//! garbage, is rejected with a reason.

use super::*;

#[test]
fn faulty_guests_are_contained_and_the_default_decides() {
    let cases = [
        ("guest_loop", "  limits: {deadlineMs: 20}\n", "deadline"),
        // With a fuel limit the plugin runs on the metered engine: the budget stops the loop
        // long before the deadline.
        (
            "guest_loop",
            "  limits: {deadlineMs: 60000, fuel: 5000000}\n",
            "exhausted its fuel",
        ),
        (
            "guest_alloc",
            "  limits: {deadlineMs: 2000, memoryMiB: 16}\n",
            "memory cap",
        ),
        ("guest_trap", "", "trapped"),
        (
            "guest_nonsense",
            "  config: {answer: out-of-range}\n",
            "nonsense",
        ),
    ];
    let s = snapshot(&mut Lcg(5), 50, policy::Signal::MemoryAvailable);
    let expected = policy::eviction::rank(&s.pressure, &s.pods);
    for (guest, extra, reason) in cases {
        let setup = registry(&plugin(
            "faulty",
            "eviction-policy",
            &Component::named(guest).path(),
            extra,
        ));
        for call in 0..6 {
            let started = Instant::now();
            let decision = setup.registry.rank(&s);
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{guest}: a call took {:?}",
                started.elapsed()
            );
            assert_eq!(
                decision.order, expected,
                "{guest}: the built-in default decided"
            );
            match &decision.decided_by {
                DecidedBy::BuiltIn { reason: why } if call < 5 => {
                    assert!(why.contains(reason), "{guest}: {why}")
                }
                DecidedBy::BuiltIn { .. } => {}
                other => panic!("{guest}: {other:?}"),
            }
        }
        let report = setup.registry.report();
        let entry = &report["plugins"][0];
        assert_eq!(entry["faults"], 5, "{guest}: {entry}");
        assert_eq!(
            entry["state"], "failed",
            "{guest}: repeated faults fail the plugin: {entry}"
        );
        let slot = setup.registry.slot_named("faulty").unwrap();
        assert!(slot.serving().is_none());
        drop(setup.dir);
    }
    let setup = registry(&plugin(
        "faulty-gc",
        "gc-strategy",
        &components::GUEST_GC_NONSENSE.path(),
        "  config: {answer: in-use}\n",
    ));
    let images = vec![
        policy::ImageInfo {
            size_bytes: 1 << 20,
            in_use: true,
            ..Default::default()
        },
        policy::ImageInfo {
            size_bytes: 1 << 20,
            ..Default::default()
        },
    ];
    let disk = policy::DiskInfo {
        bytes_to_free: 1 << 30,
        ..Default::default()
    };
    let decision = setup
        .registry
        .plan_images(&disk, &images, vec![vec![]; 2], 1_000_000_000);
    assert!(
        matches!(decision.decided_by, DecidedBy::BuiltIn { .. }),
        "{:?}",
        decision.decided_by
    );
    assert!(
        !decision.order.contains(&0),
        "an image in use is never planned"
    );
    assert_eq!(setup.registry.report()["plugins"][0]["faults"], 1);
}

#[test]
fn a_component_of_another_world_or_garbage_is_rejected_with_a_reason() {
    let setup = registry(&plugin(
        "misfit",
        "eviction-policy",
        &components::GC_DEFAULT.path(),
        "",
    ));
    let entry = setup.registry.report()["plugins"][0].clone();
    assert_eq!(entry["state"], "notLoaded");
    let reason = entry["lastRejected"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("does not implement world eviction-policy")
            && reason.contains("gc-strategy"),
        "{reason}"
    );
    let garbage = setup.dir.path().join("garbage.wasm");
    std::fs::write(&garbage, b"not wasm").unwrap();
    let setup = registry(&plugin("garbage", "eviction-policy", &garbage, ""));
    let entry = setup.registry.report()["plugins"][0].clone();
    assert!(
        entry["lastRejected"]["reason"]
            .as_str()
            .unwrap()
            .contains("not a valid component"),
        "{entry}"
    );
    let s = snapshot(&mut Lcg(1), 10, policy::Signal::MemoryAvailable);
    assert!(matches!(
        setup.registry.rank(&s).decided_by,
        DecidedBy::BuiltIn { .. }
    ));
    assert_eq!(PluginState::NotLoaded, PluginState::NotLoaded);
}
