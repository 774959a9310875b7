//! Every SDK decides as the Rust plugins do: the Go, Python and JavaScript builds of
//! `eviction-batch-first` rank 300 generated snapshots exactly as the Rust one, and their
//! `probe-json-health` give the Rust one's outcome on generated health documents; their
//! admission examples admit and refuse as the Rust one; and the Python and JavaScript
//! `gc-default` (the SDKs' upstream GC plans) plan as the Rust `gc-default` on generated
//! image and dead-container sets.
//!
//! The SDK components come from `scripts/build-sdk-plugins.sh` (target/sdk-plugins/). When
//! that directory does not exist these tests say so and pass; when it exists, every component
//! must be there.

use super::*;
use parking_lot::Mutex;

use wasmlet_test_support::sdk_plugins;

const LANGS: [&str; 3] = ["go", "python", "js"];
/// Interpreted runtimes need more than the Rust defaults (50 ms, 32 MiB) for a first call.
const SDK_LIMITS: &str = "  limits: {deadlineMs: 5000, memoryMiB: 256}\n";

/// The SDK builds of `name`, by language; None when the SDKs were not built at all.
fn sdk_components(name: &str) -> Option<Vec<(&'static str, PathBuf)>> {
    sdk_components_in(name, &LANGS)
}

fn sdk_components_in(name: &str, langs: &[&'static str]) -> Option<Vec<(&'static str, PathBuf)>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/sdk-plugins");
    sdk_plugins::components(&dir, name, langs)
}

#[test]
fn every_sdk_ranks_300_snapshots_as_the_rust_batch_first() {
    let Some(sdks) = sdk_components("eviction-batch-first") else {
        return;
    };
    let config = "  config: {protectNamespaces: [kube-system]}\n";
    let rust = registry(&plugin(
        "rust",
        "eviction-policy",
        &components::EVICTION_BATCH_FIRST.path(),
        config,
    ));
    let others: Vec<(&str, Setup)> = sdks
        .iter()
        .map(|(lang, path)| {
            let extra = format!("{config}{SDK_LIMITS}");
            (
                *lang,
                registry(&plugin(lang, "eviction-policy", path, &extra)),
            )
        })
        .collect();
    let mut rng = Lcg(18);
    for round in 0..300 {
        let signal = policy::Signal::ALL[round % policy::Signal::ALL.len()];
        let pods = 1 + rng.next(120) as usize;
        let s = snapshot(&mut rng, pods, signal);
        let expected = rust.registry.rank(&s);
        assert!(
            plugin_decided(&expected),
            "rust, round {round}: {:?}",
            expected.decided_by
        );
        for (lang, setup) in &others {
            let decision = setup.registry.rank(&s);
            assert!(
                plugin_decided(&decision),
                "{lang}, round {round}: {:?}",
                decision.decided_by
            );
            assert_eq!(
                decision.order, expected.order,
                "{lang}, round {round} ({signal:?}, {pods} pods)"
            );
        }
    }
    for (lang, setup) in &others {
        let report = setup.registry.report();
        assert_eq!(report["plugins"][0]["faults"], 0, "{lang}: {report}");
    }
}

/// A one-connection-at-a-time HTTP server answering every request with the current reply.
fn health_server() -> (u16, Arc<Mutex<(u16, String)>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let reply = Arc::new(Mutex::new((200u16, String::new())));
    let serving = reply.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 2048];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let (status, body) = serving.lock().clone();
            let text = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = std::io::Write::write_all(&mut stream, text.as_bytes());
        }
    });
    (port, reply)
}

/// A generated health document, its HTTP status and the probe args.
fn health_case(rng: &mut Lcg, port: u16) -> (u16, String, String) {
    let values = [
        r#""ok""#,
        r#""degraded""#,
        r#""OK""#,
        "true",
        "false",
        "1",
        "2",
        "null",
        r#"{"a":1}"#,
        "[1,2]",
    ];
    let value = |rng: &mut Lcg| values[rng.next(values.len() as u64) as usize];
    let body = match rng.next(8) {
        0 => "OK".to_string(),
        1 => "{\"status\": ".to_string(),
        2 => "{}".to_string(),
        3 => format!(
            r#"{{"checks":{{"db":{{"up":{}}}}},"status":{}}}"#,
            value(rng),
            value(rng)
        ),
        4 => format!(r#"{{"items":[{},{}]}}"#, value(rng), value(rng)),
        _ => format!(r#"{{"status":{},"version":"1.2"}}"#, value(rng)),
    };
    let status = [200, 200, 200, 204, 299, 301, 404, 503][rng.next(8) as usize];
    let field = [
        "status",
        "checks.db.up",
        "items.1",
        "items.7",
        "missing",
        "",
        "status.x",
    ][rng.next(7) as usize];
    let mut args = format!(r#"{{"port": {port}, "field": "{field}""#);
    if rng.next(3) != 0 {
        args.push_str(&format!(r#", "expected": {}"#, value(rng)));
    }
    if rng.next(10) == 0 {
        args.push_str(r#", "unknown": 1"#);
    }
    args.push('}');
    (status, body, args)
}

#[test]
fn every_sdk_probes_generated_health_documents_as_the_rust_json_health() {
    let Some(sdks) = sdk_components("probe-json-health") else {
        return;
    };
    let (port, reply) = health_server();
    let rust = registry(&plugin(
        "rust",
        "probe-handler",
        &components::PROBE_JSON_HEALTH.path(),
        "  limits: {deadlineMs: 2000}\n",
    ));
    let others: Vec<(&str, Setup)> = sdks
        .iter()
        .map(|(lang, path)| {
            (
                *lang,
                registry(&plugin(lang, "probe-handler", path, SDK_LIMITS)),
            )
        })
        .collect();
    let scope = || PodScope {
        pod_ip: "127.0.0.1".into(),
        ports: vec![port],
        containers: vec!["app".into()],
        deadline: Instant::now() + Duration::from_secs(5),
        exec: None,
    };
    let mut rng = Lcg(42);
    for round in 0..150 {
        let (status, body, args) = health_case(&mut rng, port);
        *reply.lock() = (status, body.clone());
        let request = ProbeRequest {
            args: args.clone(),
            timeout_ms: 2000,
            pod_ip: "127.0.0.1".into(),
            ports: vec![port],
            containers: vec!["app".into()],
            container: "app".into(),
            kind: ProbeKind::Readiness,
        };
        let expected = rust.registry.probe("rust", &request, scope());
        for (lang, setup) in &others {
            let got = setup.registry.probe(lang, &request, scope());
            assert_eq!(
                got.outcome, expected.outcome,
                "{lang}, round {round}: HTTP {status} {body} with {args}: {} vs rust's {}",
                got.message, expected.message
            );
        }
    }
}

/// Every SDK's admission example refuses and admits as the Rust one, reason for reason.
#[test]
fn sdk_admission_decides_as_the_rust_require_limits() {
    let Some(sdks) = sdk_components("admission-require-limits") else {
        return;
    };
    let config = "  config: {namespaces: [prod, payments]}\n";
    let rust = registry(&plugin(
        "rust",
        "lifecycle-hooks",
        &components::ADMISSION_REQUIRE_LIMITS.path(),
        config,
    ));
    let others: Vec<(&str, Setup)> = sdks
        .iter()
        .map(|(lang, path)| {
            let extra = format!("{config}{SDK_LIMITS}");
            (
                *lang,
                registry(&plugin(lang, "lifecycle-hooks", path, &extra)),
            )
        })
        .collect();
    let mut rng = Lcg(5);
    for round in 0..200 {
        let containers = (0..1 + rng.next(4))
            .map(|i| AdmissionContainer {
                name: format!("c{i}"),
                is_init: rng.next(4) == 0,
                has_cpu_request: rng.next(2) == 0,
                has_memory_request: rng.next(2) == 0,
                has_cpu_limit: rng.next(3) != 0,
                has_memory_limit: rng.next(3) != 0,
            })
            .collect();
        let pod = AdmissionPod {
            priority: 0,
            qos: policy::QosClass::Burstable,
            is_static: false,
            is_critical: false,
            containers,
        };
        let meta = PodMeta {
            namespace: ["prod", "payments", "dev", "kube-system"][rng.next(4) as usize].into(),
            name: format!("pod-{round}"),
            ..Default::default()
        };
        let expected = rust
            .registry
            .admit(&pod, meta.clone())
            .map(|_| ())
            .map_err(|(reason, _)| reason);
        for (lang, setup) in &others {
            let got = setup
                .registry
                .admit(&pod, meta.clone())
                .map(|_| ())
                .map_err(|(reason, _)| reason);
            assert_eq!(got, expected, "{lang}, round {round}");
        }
    }
}

/// Milliseconds in an hour: generated GC times are whole hours in the past and the age
/// limits whole hours and a half, so the plan does not depend on the moment each plugin
/// reads the host's clock.
const HOUR_MS: u64 = 3_600_000;

/// Generated images: ties in last-used and first-seen, some in use or pinned, some just
/// pulled, a few sizes above 2^52 (BigInt in JavaScript) and sums past u64.
fn gc_images(rng: &mut Lcg, now: u64) -> Vec<policy::ImageInfo> {
    (0..rng.next(40))
        .map(|_| {
            let seen_hours = rng.next(72);
            let used_hours = rng.next(seen_hours + 1);
            let size_bytes = match rng.next(20) {
                0 => (1 << 62) + rng.next(1 << 20),
                1 => 0,
                _ => (1 + rng.next(500)) << 20,
            };
            policy::ImageInfo {
                size_bytes,
                first_seen_unix_ms: now - seen_hours * HOUR_MS,
                last_used_unix_ms: now - used_hours * HOUR_MS,
                in_use: rng.next(5) == 0,
                pinned: rng.next(12) == 0,
            }
        })
        .collect()
}

fn gc_disk(rng: &mut Lcg) -> policy::DiskInfo {
    let half = HOUR_MS / 2;
    policy::DiskInfo {
        capacity_bytes: 100 << 30,
        available_bytes: 10 << 30,
        bytes_to_free: match rng.next(8) {
            0 => 0,
            1 => u64::MAX,
            _ => rng.next(8000) << 20,
        },
        min_age_ms: [0, 120_000, rng.next(24) * HOUR_MS + half][rng.next(3) as usize],
        max_age_ms: [0, 0, rng.next(48) * HOUR_MS + half][rng.next(3) as usize],
    }
}

/// Generated dead containers: units with sparse ids, ranks per unit, ties in finish
/// times, pods deleted together, in shuffled order.
fn gc_dead(rng: &mut Lcg, now: u64) -> Vec<policy::DeadContainer> {
    let mut dead = Vec::new();
    for u in 0..rng.next(14) {
        let pod = (u / 2) as u32;
        let pod_deleted = rng.next(6) == 0 && u % 2 == 0;
        for rank in 0..1 + rng.next(5) {
            dead.push(policy::DeadContainer {
                pod_deleted,
                finished_unix_ms: now - (rank * 10 + rng.next(12)) * 60_000,
                per_container_rank: rank as u32,
                unit: (3 + u * 37) as u32,
                pod,
            });
        }
    }
    for i in (1..dead.len()).rev() {
        dead.swap(i, rng.next(i as u64 + 1) as usize);
    }
    dead
}

/// The Python and JavaScript `gc-default` examples (the SDKs' default plans) plan as the
/// Rust `gc-default`, with upstream's flags and with container limits set.
#[test]
fn sdk_gc_default_plans_as_the_rust_gc_default() {
    let Some(sdks) = sdk_components_in("gc-default", &["python", "js"]) else {
        return;
    };
    // One compile cache for both configs: an interpreter's first compile takes seconds.
    let cache = tempfile::tempdir().unwrap();
    let registry = |plugins: &str| {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plugins.yaml");
        std::fs::write(
            &file,
            format!(
                "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{plugins}"
            ),
        )
        .unwrap();
        let engine = PluginEngine::new(Some(cache.path().to_path_buf())).unwrap();
        Setup {
            registry: PluginRegistry::new(engine, Some(file)),
            dir,
        }
    };
    for (seed, config) in [
        (21, ""),
        (22, "  config: {maxPerPodContainer: 2, maxContainers: 12}\n"),
    ] {
        let rust = registry(&plugin(
            "rust",
            "gc-strategy",
            &components::GC_DEFAULT.path(),
            config,
        ));
        let others: Vec<(&str, Setup)> = sdks
            .iter()
            .map(|(lang, path)| {
                let extra = format!("{config}{SDK_LIMITS}");
                (*lang, registry(&plugin(lang, "gc-strategy", path, &extra)))
            })
            .collect();
        let gc_policy = policy::gc::ContainerGcPolicy::default();
        let mut rng = Lcg(seed);
        for round in 0..100 {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64;
            let images = gc_images(&mut rng, now);
            let disk = gc_disk(&mut rng);
            let tags: Vec<Vec<String>> = (0..images.len())
                .map(|i| vec![format!("registry.local/image-{i}:1")])
                .collect();
            let expected = rust.registry.plan_images(&disk, &images, tags.clone(), now);
            assert!(plugin_decided(&expected), "rust, round {round}");
            let dead = gc_dead(&mut rng, now);
            let expected_dead = rust.registry.plan_containers(&dead, Vec::new(), &gc_policy);
            assert!(plugin_decided(&expected_dead), "rust, round {round}");
            for (lang, setup) in &others {
                let got = setup
                    .registry
                    .plan_images(&disk, &images, tags.clone(), now);
                assert!(
                    plugin_decided(&got),
                    "{lang}, round {round}: {:?}",
                    got.decided_by
                );
                assert_eq!(
                    got.order, expected.order,
                    "{lang}, images, round {round} ({config:?}): {disk:?} {images:?}"
                );
                let got = setup
                    .registry
                    .plan_containers(&dead, Vec::new(), &gc_policy);
                assert!(
                    plugin_decided(&got),
                    "{lang}, round {round}: {:?}",
                    got.decided_by
                );
                assert_eq!(
                    got.order, expected_dead.order,
                    "{lang}, containers, round {round} ({config:?}): {dead:?}"
                );
            }
        }
        for (lang, setup) in &others {
            let report = setup.registry.report();
            assert_eq!(report["plugins"][0]["faults"], 0, "{lang}: {report}");
        }
    }
}

/// Size, first load (compile), cached load and rank(110) per call of each language's
/// batch-first, in one run. Not a correctness test: run it on purpose with
/// `cargo test --release -p wasmlet-plugin-host --test plugins sdk_costs -- --ignored --nocapture`.
#[test]
#[ignore]
fn sdk_costs() {
    let Some(sdks) = sdk_components("eviction-batch-first") else {
        return;
    };
    let mut all = vec![("rust", components::EVICTION_BATCH_FIRST.path())];
    all.extend(sdks);
    let s = snapshot(&mut Lcg(110), 110, policy::Signal::MemoryAvailable);
    println!("| language | component | first load (compile) | cached load | rank(110) per call |");
    println!("|---|---|---|---|---|");
    for (lang, path) in all {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plugins.yaml");
        let extra = format!("  config: {{protectNamespaces: [kube-system]}}\n{SDK_LIMITS}");
        std::fs::write(
            &file,
            format!(
                "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{}",
                plugin(lang, "eviction-policy", &path, &extra)
            ),
        )
        .unwrap();
        let load = || {
            let started = Instant::now();
            let engine = PluginEngine::new(Some(dir.path().join("cache"))).unwrap();
            let registry = PluginRegistry::new(engine, Some(file.clone()));
            assert!(plugin_decided(&registry.rank(&s)), "{lang}");
            (registry, started.elapsed())
        };
        let (_, first) = load();
        let (registry, cached) = load();
        for _ in 0..20 {
            registry.rank(&s);
        }
        let calls = 200;
        let started = Instant::now();
        for _ in 0..calls {
            assert!(plugin_decided(&registry.rank(&s)));
        }
        let per_call = started.elapsed() / calls;
        let size = std::fs::metadata(&path).unwrap().len();
        println!(
            "| {lang} | {:.1} MiB | {:.2} s | {:.0} ms | {:.1} us |",
            size as f64 / (1 << 20) as f64,
            first.as_secs_f64(),
            cached.as_secs_f64() * 1e3,
            per_call.as_secs_f64() * 1e6
        );
    }
}

/// The Go and JavaScript `eviction-psi-guard` (world `pressure-eviction-policy`) ask to evict
/// on the same readings as the Rust one, with the same pods in the same order and the same
/// reason.
#[test]
fn the_go_and_javascript_psi_guards_watch_pressure_as_the_rust_one() {
    let Some(sdks) = sdk_components_in("eviction-psi-guard", &["go", "js"]) else {
        return;
    };
    let config =
        "  config: {memoryFullAvg10Percent: 20, memorySomeAvg10Percent: 30, forSeconds: 3}\n";
    let rust = registry(&plugin(
        "rust",
        "eviction-policy",
        &components::EVICTION_PSI_GUARD.path(),
        config,
    ));
    rust.registry.reload();
    let others: Vec<(&str, Setup)> = sdks
        .iter()
        .map(|(lang, path)| {
            let extra = format!("{config}{SDK_LIMITS}");
            let setup = registry(&plugin(lang, "eviction-policy", path, &extra));
            setup.registry.reload();
            let report = setup.registry.report();
            assert!(setup.registry.watches_pressure(), "{lang}: {report:#}");
            (*lang, setup)
        })
        .collect();
    let mut rng = Lcg(31);
    let s = snapshot(&mut rng, 40, policy::Signal::MemoryAvailable);
    let (mut asked, mut some_asked) = (0, 0);
    for second in 0..60u64 {
        let mut psi = policy::NodePsi {
            read_unix_ms: 1_000_000 + second * 1000,
            ..Default::default()
        };
        // Pressure comes and goes: over a limit for runs of 0 to 7 seconds, by `full`, by
        // `some` or by both.
        psi.memory.full.avg10 = if rng.next(8) == 0 { 500 } else { 2500 };
        psi.memory.some.avg10 = if rng.next(3) == 0 { 3500 } else { 1000 };
        if rng.next(3) == 0 {
            psi.memory.full.avg10 = 500;
        }
        let expected = rust
            .registry
            .watch_pressure(&s, &psi)
            .expect("rust answers");
        let strip =
            |d: Option<wasmlet_plugin_host::PressureDecision>| d.map(|d| (d.order, d.reason));
        asked += usize::from(expected.is_some());
        some_asked += usize::from(
            expected
                .as_ref()
                .is_some_and(|d| d.reason.starts_with("memory some")),
        );
        let expected = strip(expected);
        for (lang, other) in &others {
            let got = other.registry.watch_pressure(&s, &psi);
            let got = got.unwrap_or_else(|e| panic!("{lang} answers: {e}"));
            assert_eq!(strip(got), expected, "{lang}, second {second}");
        }
    }
    assert!(asked > 3, "the readings must make both ask several times");
    assert!(
        some_asked > 0,
        "the readings must make both ask on `some` at least once"
    );
}
