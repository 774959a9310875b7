//! The default plugins decide exactly as the built-in copy of the same code, and an example
//! eviction plugin follows its config through `pod-meta`.

use super::*;

#[test]
fn eviction_default_plugin_ranks_exactly_as_the_built_in_copy() {
    let setup = registry(&plugin(
        "eviction-default",
        "eviction-policy",
        &components::EVICTION_DEFAULT.path(),
        "",
    ));
    let mut rng = Lcg(7);
    for round in 0..300 {
        let signal = policy::Signal::ALL[round % policy::Signal::ALL.len()];
        let pods = 1 + rng.next(120) as usize;
        let s = snapshot(&mut rng, pods, signal);
        let decision = setup.registry.rank(&s);
        assert!(
            plugin_decided(&decision),
            "round {round}: {:?}",
            decision.decided_by
        );
        assert_eq!(
            decision.order,
            policy::eviction::rank(&s.pressure, &s.pods),
            "round {round} ({signal:?})"
        );
    }
    let report = setup.registry.report();
    assert_eq!(report["plugins"][0]["calls"], 300);
    assert_eq!(report["plugins"][0]["faults"], 0);
}

#[test]
fn gc_default_plugin_plans_as_the_built_in_copy() {
    let setup = registry(&plugin(
        "gc-default",
        "gc-strategy",
        &components::GC_DEFAULT.path(),
        "",
    ));
    let mut rng = Lcg(11);
    // The plugin reads the host's clock (`now-unix-ms`); the built-in copy is given the same.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    for round in 0..100 {
        let images: Vec<policy::ImageInfo> = (0..1 + rng.next(40))
            .map(|_| policy::ImageInfo {
                size_bytes: (1 + rng.next(500)) << 20,
                first_seen_unix_ms: now - rng.next(10_000_000),
                last_used_unix_ms: now - rng.next(5_000_000),
                in_use: rng.next(4) == 0,
                pinned: rng.next(10) == 0,
            })
            .collect();
        let disk = policy::DiskInfo {
            capacity_bytes: 100 << 30,
            available_bytes: 10 << 30,
            bytes_to_free: rng.next(4000) << 20,
            min_age_ms: 120_000,
            max_age_ms: 0,
        };
        let tags = (0..images.len())
            .map(|i| vec![format!("registry.local/image-{i}:1")])
            .collect();
        let decision = setup.registry.plan_images(&disk, &images, tags, now);
        assert!(
            plugin_decided(&decision),
            "round {round}: {:?}",
            decision.decided_by
        );
        assert_eq!(
            decision.order,
            policy::gc::plan_images(&disk, &images, now),
            "round {round}"
        );

        let dead: Vec<policy::DeadContainer> = (0..rng.next(30))
            .map(|i| policy::DeadContainer {
                pod_deleted: rng.next(5) == 0,
                finished_unix_ms: now - rng.next(1_000_000),
                per_container_rank: (i % 3) as u32,
                unit: (i / 3) as u32,
                pod: (i / 6) as u32,
            })
            .collect();
        let decision = setup.registry.plan_containers(
            &dead,
            Vec::new(),
            &policy::gc::ContainerGcPolicy::default(),
        );
        assert!(plugin_decided(&decision));
        assert_eq!(
            decision.order,
            policy::gc::plan_containers(&dead, &policy::gc::ContainerGcPolicy::default())
        );
    }
}

#[test]
fn batch_first_plugin_follows_its_config_through_pod_meta() {
    let setup = registry(&plugin(
        "eviction-batch-first",
        "eviction-policy",
        &components::EVICTION_BATCH_FIRST.path(),
        "  config: {protectNamespaces: [kube-system]}\n",
    ));
    let s = snapshot(&mut Lcg(3), 110, policy::Signal::MemoryAvailable);
    let decision = setup.registry.rank(&s);
    assert!(plugin_decided(&decision), "{:?}", decision.decided_by);
    assert!(!decision.order.is_empty());
    let is_batch = |i: u32| s.meta[i as usize].labels.contains_key("workload-class");
    let first_other = decision
        .order
        .iter()
        .position(|&i| !is_batch(i))
        .unwrap_or(decision.order.len());
    assert!(
        decision.order[first_other..].iter().all(|&i| !is_batch(i)),
        "batch pods come first"
    );
    assert!(
        decision
            .order
            .iter()
            .all(|&i| s.meta[i as usize].namespace != "kube-system"),
        "protected namespace never proposed"
    );
}
