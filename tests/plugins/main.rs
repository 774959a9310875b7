//! The plugin platform with real components built from plugins/ and tests/guests/: each world
//! end to end, the default plugins deciding exactly as the built-in copy, faulty guests
//! contained, and hot swap under load.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmlet_plugin_host::{
    sha256_hex, AdmissionContainer, AdmissionPod, DecidedBy, Decision, EvictionSnapshot,
    PluginEngine, PluginRegistry, PluginState, PodMeta, PodScope, ProbeKind, ProbeOutcome,
    ProbeRequest,
};
use wasmlet_policy_default as policy;

/// A component built by the test command (`cargo build --target wasm32-wasip2`).
fn wasm(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for dir in [
        "plugins/target/wasm32-wasip2/release",
        "tests/guests/target/wasm32-wasip2/release",
    ] {
        let path = root.join(dir).join(format!("{name}.wasm"));
        if path.exists() {
            return path.canonicalize().unwrap();
        }
    }
    panic!("{name}.wasm is not built: run scripts/build-plugins.sh (the test command does)");
}

struct Setup {
    dir: tempfile::TempDir,
    registry: Arc<PluginRegistry>,
}

/// A registry over a config listing `plugins` as YAML list items.
fn registry(plugins: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plugins.yaml");
    std::fs::write(
        &file,
        format!("apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{plugins}"),
    )
    .unwrap();
    let engine = PluginEngine::new(Some(dir.path().join("cache"))).unwrap();
    let registry = PluginRegistry::new(engine, Some(file));
    Setup { dir, registry }
}

fn plugin(name: &str, world: &str, path: &Path, extra: &str) -> String {
    format!(
        "- name: {name}\n  world: {world}\n  path: {}\n{extra}",
        path.display()
    )
}

/// Deterministic pseudo-random snapshots (a linear congruential generator).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below.max(1)
    }
}

fn snapshot(rng: &mut Lcg, pods: usize, signal: policy::Signal) -> EvictionSnapshot {
    let mut snapshot = EvictionSnapshot {
        pressure: vec![policy::SignalObservation::new(signal, 10, 100, 20)],
        ..Default::default()
    };
    for i in 0..pods {
        let request = (rng.next(4) * 64) << 20;
        snapshot.pods.push(policy::PodInfo {
            priority: [0, 0, 100, 1000, 2_000_000_000][rng.next(5) as usize],
            qos: [
                policy::QosClass::BestEffort,
                policy::QosClass::Burstable,
                policy::QosClass::Guaranteed,
            ][rng.next(3) as usize],
            is_static: rng.next(20) == 0,
            is_critical: rng.next(25) == 0,
            has_stats: rng.next(10) != 0,
            memory_request_bytes: request,
            memory_usage_bytes: rng.next(300) << 20,
            disk_request_bytes: rng.next(3) << 30,
            disk_usage_bytes: rng.next(5000) << 20,
            inodes_used: rng.next(10_000),
            process_count: rng.next(50),
            container_count: 1 + rng.next(3) as u32,
            ..Default::default()
        });
        let batch = rng.next(4) == 0;
        std::sync::Arc::make_mut(&mut snapshot.meta).push(PodMeta {
            namespace: if rng.next(6) == 0 {
                "kube-system".into()
            } else {
                "default".into()
            },
            name: format!("pod-{i}"),
            uid: format!("uid-{i}"),
            labels: if batch {
                [("workload-class".to_string(), "batch".to_string())].into()
            } else {
                Default::default()
            },
            annotations: Default::default(),
        });
    }
    snapshot.node.pod_count = pods as u32;
    snapshot
}

fn plugin_decided(decision: &Decision) -> bool {
    matches!(decision.decided_by, DecidedBy::Plugin { .. })
}

#[test]
fn eviction_default_plugin_ranks_exactly_as_the_built_in_copy() {
    let setup = registry(&plugin(
        "eviction-default",
        "eviction-policy",
        &wasm("eviction_default"),
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
        &wasm("gc_default"),
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
        &wasm("eviction_batch_first"),
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

#[test]
fn probe_plugin_checks_a_json_health_body_with_scoped_http() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let healthy = Arc::new(AtomicBool::new(true));
    let serving = healthy.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 1024];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let body = if serving.load(Ordering::SeqCst) {
                r#"{"status":"ok"}"#
            } else {
                r#"{"status":"degraded"}"#
            };
            let reply = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
            let _ = std::io::Write::write_all(&mut stream, reply.as_bytes());
        }
    });
    let setup = registry(&plugin(
        "probe-json-health",
        "probe-handler",
        &wasm("probe_json_health"),
        "  limits: {deadlineMs: 2000}\n",
    ));
    let request = ProbeRequest {
        args: format!(
            r#"{{"port": {port}, "path": "/health", "field": "status", "expected": "ok"}}"#
        ),
        timeout_ms: 1000,
        pod_ip: "127.0.0.1".into(),
        ports: vec![port],
        containers: vec!["app".into()],
        container: "app".into(),
        kind: ProbeKind::Readiness,
    };
    let scope = || PodScope {
        pod_ip: "127.0.0.1".into(),
        ports: vec![port],
        containers: vec!["app".into()],
        deadline: Instant::now() + Duration::from_secs(2),
        exec: None,
    };
    let result = setup.registry.probe("probe-json-health", &request, scope());
    assert_eq!(result.outcome, ProbeOutcome::Success, "{}", result.message);
    healthy.store(false, Ordering::SeqCst);
    let result = setup.registry.probe("probe-json-health", &request, scope());
    assert_eq!(result.outcome, ProbeOutcome::Failure, "{}", result.message);
    // Scoped: another address is out of reach whatever the plugin asks.
    let mut elsewhere = scope();
    elsewhere.pod_ip = "127.0.0.2".into();
    let result = setup
        .registry
        .probe("probe-json-health", &request, elsewhere);
    assert_eq!(result.outcome, ProbeOutcome::Failure);
}

#[test]
fn admission_plugin_refuses_pods_without_limits() {
    let setup = registry(&plugin(
        "require-limits",
        "lifecycle-hooks",
        &wasm("admission_require_limits"),
        "  config: {namespaces: [prod]}\n",
    ));
    let container = |name: &str, limits: bool| AdmissionContainer {
        name: name.into(),
        is_init: false,
        has_cpu_request: limits,
        has_memory_request: limits,
        has_cpu_limit: limits,
        has_memory_limit: limits,
    };
    let pod = |containers| AdmissionPod {
        priority: 0,
        qos: policy::QosClass::BestEffort,
        is_static: true,
        is_critical: false,
        containers,
    };
    let meta = |namespace: &str| PodMeta {
        namespace: namespace.into(),
        name: "web".into(),
        ..Default::default()
    };
    let refused = setup.registry.admit(
        &pod(vec![container("ok", true), container("greedy", false)]),
        meta("prod"),
    );
    let (reason, _) = refused.expect_err("a container without limits in prod is refused");
    assert!(reason.contains("greedy"), "{reason}");
    assert!(setup
        .registry
        .admit(&pod(vec![container("ok", true)]), meta("prod"))
        .is_ok());
    assert!(setup
        .registry
        .admit(&pod(vec![container("greedy", false)]), meta("dev"))
        .is_ok());
}

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
        let setup = registry(&plugin("faulty", "eviction-policy", &wasm(guest), extra));
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
        &wasm("guest_gc_nonsense"),
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

/// What `guest_wasi` reports it could do with `config` and `capabilities`.
fn wasi_report(setup: &Setup) -> String {
    let entry = &setup.registry.report()["plugins"][0];
    assert_eq!(entry["state"], "serving", "{entry}");
    let s = snapshot(&mut Lcg(3), 3, policy::Signal::MemoryAvailable);
    match setup.registry.rank(&s).decided_by {
        DecidedBy::BuiltIn { reason } => reason,
        other => panic!("guest_wasi always errs: {other:?}"),
    }
}

/// A captured log for one thread's plugin calls.
#[derive(Clone, Default)]
struct CapturedLog(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn wasi_is_deny_all_unless_the_config_grants_a_directory_or_environment() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("prefixes"), "registry.local/\n").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = format!(
        "  config: {{read: /data/prefixes, write: /data/out, env: MODE, connect: \"127.0.0.1:{port}\", print: hello from the guest}}\n"
    );

    // No grant: no file, no environment, no network; stdout and stderr reach the host log.
    let log = CapturedLog::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let setup = tracing::subscriber::with_default(subscriber, || {
        registry(&plugin(
            "wasi",
            "eviction-policy",
            &wasm("guest_wasi"),
            &config,
        ))
    });
    let report = wasi_report(&setup);
    assert!(report.contains("read=err:"), "{report}");
    assert!(report.contains("write=err:"), "{report}");
    assert!(report.contains("env=unset"), "{report}");
    assert!(report.contains("connect=err:"), "{report}");
    let logged = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert!(
        logged.contains("hello from the guest")
            && logged.contains("plugin=\"wasi\"")
            && logged.contains("stream=\"stdout\""),
        "stdout is logged under the plugin's name: {logged}"
    );
    assert!(
        logged.contains("hello from the guest (stderr)") && logged.contains("stream=\"stderr\""),
        "{logged}"
    );

    // A read-only grant (the default) and an environment variable.
    let grants = format!(
        "  capabilities:\n    directories: [{{hostPath: {}, guestPath: /data}}]\n    environment: {{MODE: strict}}\n",
        data.path().display()
    );
    let setup = registry(&plugin(
        "wasi",
        "eviction-policy",
        &wasm("guest_wasi"),
        &format!("{config}{grants}"),
    ));
    let report = wasi_report(&setup);
    assert!(report.contains("read=ok:registry.local/"), "{report}");
    assert!(
        report.contains("write=err:"),
        "read-only by default: {report}"
    );
    assert!(!data.path().join("out").exists());
    assert!(report.contains("env=strict"), "{report}");
    assert!(
        report.contains("connect=err:"),
        "no grant opens the network: {report}"
    );

    // A writable grant.
    let writable = format!(
        "  capabilities:\n    directories: [{{hostPath: {}, guestPath: /data, writable: true}}]\n",
        data.path().display()
    );
    let setup = registry(&plugin(
        "wasi",
        "eviction-policy",
        &wasm("guest_wasi"),
        &format!("{config}{writable}"),
    ));
    let report = wasi_report(&setup);
    assert!(report.contains("write=ok:"), "{report}");
    assert_eq!(std::fs::read(data.path().join("out")).unwrap(), b"x");

    // A granted directory that does not exist: the version is refused with the reason.
    let missing = data.path().join("missing");
    let setup = registry(&plugin(
        "wasi",
        "eviction-policy",
        &wasm("guest_wasi"),
        &format!(
            "  capabilities: {{directories: [{{hostPath: {}}}]}}\n",
            missing.display()
        ),
    ));
    let entry = setup.registry.report()["plugins"][0].clone();
    assert_eq!(entry["state"], "notLoaded", "{entry}");
    let reason = entry["lastRejected"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("cannot open granted directory") && reason.contains("missing"),
        "{reason}"
    );
    drop(listener);
}

#[test]
fn a_component_of_another_world_or_garbage_is_rejected_with_a_reason() {
    let setup = registry(&plugin(
        "misfit",
        "eviction-policy",
        &wasm("gc_default"),
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
    std::fs::copy(wasm("eviction_default"), &live).unwrap();
    let config = dir.path().join("plugins.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{}",
            plugin("swapped", "eviction-policy", &live, "")
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
        (wasm("eviction_batch_first"), 0u32),
        (wasm("eviction_default"), default_first),
    ];
    let valid_shas: Vec<String> = valid
        .iter()
        .map(|(p, _)| sha256_hex(&std::fs::read(p).unwrap()))
        .collect();
    let garbage = dir.path().join("garbage.bin");
    std::fs::write(&garbage, b"\0asm garbage").unwrap();
    let invalid = [garbage, wasm("gc_default")];

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

/// A local HTTP server answering 200 to every request; counts them.
fn counting_server() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buffer = [0u8; 2048];
            let _ = stream.read(&mut buffer);
            seen.fetch_add(1, Ordering::SeqCst);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    (port, count)
}

fn scope_until(port: u16, deadline: Duration) -> PodScope {
    PodScope {
        pod_ip: "127.0.0.1".into(),
        ports: vec![port],
        containers: vec!["web".into()],
        deadline: Instant::now() + deadline,
        exec: None,
    }
}

#[test]
fn hook_plugins_run_pre_stop_with_the_grace_left_and_post_start() {
    let (port, requests) = counting_server();
    let setup = registry(&format!(
        "{}{}",
        plugin(
            "require-limits",
            "lifecycle-hooks",
            &wasm("admission_require_limits"),
            "  config: {namespaces: [prod]}\n",
        ),
        plugin(
            "drain",
            "lifecycle-hooks",
            &wasm("hooks_drain"),
            &format!("  limits: {{deadlineMs: 5000}}\n  config: {{port: {port}, path: /drain, waitMs: 300, reserveMs: 100}}\n"),
        )
    ));
    let meta = || PodMeta {
        namespace: "default".into(),
        name: "web".into(),
        ..Default::default()
    };
    // post-start: both plugins keep the SDK's default (ok).
    setup
        .registry
        .post_start("web", meta(), scope_until(port, Duration::from_secs(2)))
        .expect("post-start");
    // pre-stop: the drain plugin calls the endpoint, then waits its waitMs.
    let started = Instant::now();
    setup
        .registry
        .pre_stop("web", meta(), scope_until(port, Duration::from_secs(5)))
        .expect("pre-stop");
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    assert!(started.elapsed() >= Duration::from_millis(300));
    // A grace period shorter than the wait: the wait is cut to what is left.
    let started = Instant::now();
    setup
        .registry
        .pre_stop("web", meta(), scope_until(port, Duration::from_millis(150)))
        .expect("pre-stop within a short grace");
    assert!(started.elapsed() < Duration::from_millis(1000));
    // A drain endpoint that is down fails the hook with the plugin's reason.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let setup_down = registry(&plugin(
        "drain",
        "lifecycle-hooks",
        &wasm("hooks_drain"),
        &format!("  limits: {{deadlineMs: 5000}}\n  config: {{port: {closed}}}\n"),
    ));
    let error = setup_down
        .registry
        .pre_stop("web", meta(), scope_until(closed, Duration::from_secs(5)))
        .expect_err("the drain request cannot connect")
        .to_string();
    assert!(
        error.contains("drain") && error.contains("drain request"),
        "{error}"
    );
}

#[test]
fn a_probe_plugin_runs_until_the_probe_timeout_not_the_plugin_deadline() {
    let setup = registry(&plugin(
        "faulty",
        "probe-handler",
        &wasm("guest_probe_fault"),
        "  limits: {deadlineMs: 20}\n",
    ));
    let request = |fault: &str, timeout_ms: u32| ProbeRequest {
        args: format!(r#"{{"fault": "{fault}"}}"#),
        timeout_ms,
        pod_ip: "127.0.0.1".into(),
        ports: vec![],
        containers: vec!["main".into()],
        container: "main".into(),
        kind: ProbeKind::Liveness,
    };
    let scope = |timeout| PodScope {
        pod_ip: "127.0.0.1".into(),
        ports: vec![],
        containers: vec!["main".into()],
        deadline: Instant::now() + timeout,
        exec: None,
    };
    let ok = setup.registry.probe(
        "faulty",
        &request("none", 500),
        scope(Duration::from_millis(500)),
    );
    assert_eq!(ok.outcome, ProbeOutcome::Success, "{}", ok.message);
    let started = Instant::now();
    let spun = setup.registry.probe(
        "faulty",
        &request("loop", 300),
        scope(Duration::from_millis(300)),
    );
    let took = started.elapsed();
    assert_eq!(spun.outcome, ProbeOutcome::Failure);
    assert!(spun.message.contains("deadline"), "{}", spun.message);
    assert!(
        took >= Duration::from_millis(250),
        "the probe's 300 ms, not the plugin's 20 ms: {took:?}"
    );
    let missing = setup.registry.probe(
        "nope",
        &request("none", 100),
        scope(Duration::from_millis(100)),
    );
    assert_eq!(missing.outcome, ProbeOutcome::Failure);
    assert!(missing.message.contains("\"nope\""), "{}", missing.message);
}
