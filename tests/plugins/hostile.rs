//! Hostile guests (`tests/guests/src/lib.rs`, one component per world): nothing a plugin returns
//! panics the host (strings are capped on character boundaries, answer lists are sized
//! before use), and a guest blocked in WASI is stopped at its deadline in every world.

use super::*;
use wasmlet_plugin_host::{Capabilities, Limits, LoadedPlugin, PluginError, PluginSpec, World};

/// A plugin's reason as the host words it: "plugin NAME <fault>: " plus the capped text.
const MAX_SHOWN: usize = 1024 + 128;

fn hostile(world: &str) -> PathBuf {
    Component::named(&format!("guest_hostile_{world}")).path()
}

fn meta() -> PodMeta {
    PodMeta {
        namespace: "default".into(),
        name: "web".into(),
        ..Default::default()
    }
}

fn admission_pod() -> AdmissionPod {
    AdmissionPod {
        containers: vec![AdmissionContainer {
            name: "web".into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn scope(deadline: Duration) -> PodScope {
    PodScope {
        pod_ip: "127.0.0.1".into(),
        ports: vec![],
        containers: vec!["web".into()],
        deadline: Instant::now() + deadline,
        exec: None,
    }
}

fn probe_request(timeout_ms: u32) -> ProbeRequest {
    ProbeRequest {
        args: String::new(),
        timeout_ms,
        pod_ip: "127.0.0.1".into(),
        ports: vec![],
        containers: vec!["web".into()],
        container: "web".into(),
        kind: ProbeKind::Liveness,
    }
}

fn built_in_reason(decision: &Decision) -> String {
    match &decision.decided_by {
        DecidedBy::BuiltIn { reason } => reason.clone(),
        other => panic!("the plugin decided: {other:?}"),
    }
}

fn assert_capped(what: &str, text: &str, needle: &str) {
    assert!(text.len() <= MAX_SHOWN, "{what}: {} bytes", text.len());
    let start: String = text.chars().take(120).collect();
    assert!(text.contains(needle), "{what}: {start}");
}

fn images() -> Vec<policy::ImageInfo> {
    vec![policy::ImageInfo {
        size_bytes: 1 << 20,
        ..Default::default()
    }]
}

#[test]
fn the_worst_strings_and_lists_a_plugin_returns_never_panic_the_host() {
    let s = snapshot(&mut Lcg(3), 20, policy::Signal::MemoryAvailable);
    let expected = policy::eviction::rank(&s.pressure, &s.pods);
    let config = |fault: &str, export: &str| {
        format!("  limits: {{deadlineMs: 5000, memoryMiB: 64}}\n  config: {{fault: {fault}, in: {export}}}\n")
    };

    // Eviction: a multibyte error (after logging and printing it), then a list far longer
    // than the pods, mostly out of range: each a counted fault, the built-in default ranks.
    let setup = registry(&plugin(
        "hostile",
        "eviction-policy",
        &hostile("eviction"),
        &config("strings", "rank"),
    ));
    let decision = setup.registry.rank(&s);
    assert_eq!(decision.order, expected);
    assert_capped(
        "rank error",
        &built_in_reason(&decision),
        "returned an error: a\u{e9}",
    );
    let setup = registry(&plugin(
        "hostile",
        "eviction-policy",
        &hostile("eviction"),
        &config("long-answer", "rank"),
    ));
    let decision = setup.registry.rank(&s);
    assert_eq!(decision.order, expected);
    assert_capped(
        "rank answer",
        &built_in_reason(&decision),
        "indices for a list of 20",
    );
    assert_eq!(setup.registry.report()["plugins"][0]["faults"], 1);

    // GC: the same for both plans.
    let disk = policy::DiskInfo::default();
    for (fault, images_needle, dead_needle) in [
        (
            "strings",
            "returned an error: a\u{e9}",
            "returned an error: a\u{e9}",
        ),
        (
            "long-answer",
            "indices for a list of 1",
            "indices for a list of 0",
        ),
    ] {
        let gc = |export: &str| {
            registry(&plugin(
                "hostile",
                "gc-strategy",
                &hostile("gc"),
                &config(fault, export),
            ))
        };
        let setup = gc("plan-images");
        let decision = setup
            .registry
            .plan_images(&disk, &images(), vec![vec![]], 0);
        assert_capped("plan-images", &built_in_reason(&decision), images_needle);
        let setup = gc("plan-containers");
        let decision = setup
            .registry
            .plan_containers(&[], Vec::new(), &Default::default());
        assert_capped("plan-containers", &built_in_reason(&decision), dead_needle);
    }

    // Probe: the worst message as an `unknown` result is kept, capped.
    let setup = registry(&plugin(
        "hostile",
        "probe-handler",
        &hostile("probe"),
        &config("strings", "check"),
    ));
    let result = setup.registry.probe(
        "hostile",
        &probe_request(2000),
        scope(Duration::from_secs(2)),
    );
    assert_eq!(result.outcome, ProbeOutcome::Unknown);
    assert_capped("probe message", &result.message, "a\u{e9}\u{e9}");

    // Hooks: the worst reason refuses admission and fails the hooks, capped.
    let hooks = |export: &str| {
        registry(&plugin(
            "hostile",
            "lifecycle-hooks",
            &hostile("hooks"),
            &config("strings", export),
        ))
    };
    let setup = hooks("admit");
    let (reason, _) = setup
        .registry
        .admit(&admission_pod(), meta())
        .expect_err("refused with the worst reason");
    assert_capped("admission reason", &reason, "a\u{e9}");
    let setup = hooks("post-start");
    let post_start = setup
        .registry
        .post_start("web", meta(), scope(Duration::from_secs(2)));
    let setup = hooks("pre-stop");
    let pre_stop = setup
        .registry
        .pre_stop("web", meta(), scope(Duration::from_secs(2)));
    for error in [post_start, pre_stop] {
        let error = error.expect_err("the hook refuses");
        assert!(matches!(error, PluginError::Refused { .. }), "{error:?}");
        assert_capped("hook reason", &error.to_string(), "a\u{e9}");
    }

    // configure and self-check: the version is rejected with a capped reason.
    for export in ["configure", "self-check"] {
        let setup = registry(&plugin(
            "hostile",
            "lifecycle-hooks",
            &hostile("hooks"),
            &config("strings", export),
        ));
        let entry = setup.registry.report()["plugins"][0].clone();
        assert_eq!(entry["state"], "notLoaded", "{export}");
        let reason = entry["lastRejected"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert_capped(export, &reason, "a\u{e9}");
    }
}

/// The margin a call may take past its deadline in these tests: generous for a loaded CI
/// machine; the point is that it is not the guest's 20 s sleep.
const MARGIN: Duration = Duration::from_millis(500);
const DEADLINE_MS: u64 = 200;

fn sleeper(world: &str, file: &str, export: &str) -> Setup {
    registry(&plugin(
        "sleeper",
        world,
        &hostile(file),
        &format!("  limits: {{deadlineMs: {DEADLINE_MS}}}\n  config: {{fault: sleep, in: {export}, sleepMs: 20000}}\n"),
    ))
}

/// Runs `call`, asserting it returned within the deadline plus [`MARGIN`]; returns its value.
fn prompt<T>(what: &str, call: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let value = call();
    let took = started.elapsed();
    eprintln!("{what}: returned after {took:?} against a {DEADLINE_MS} ms deadline");
    assert!(
        took < Duration::from_millis(DEADLINE_MS) + MARGIN,
        "{what} took {took:?} against a {DEADLINE_MS} ms deadline"
    );
    value
}

#[test]
fn a_guest_sleeping_in_wasi_is_stopped_at_its_deadline_in_every_world() {
    let deadline = format!("ran past its {DEADLINE_MS} ms deadline");
    let s = snapshot(&mut Lcg(4), 10, policy::Signal::MemoryAvailable);

    let setup = sleeper("eviction-policy", "eviction", "rank");
    let decision = prompt("rank", || setup.registry.rank(&s));
    assert!(
        built_in_reason(&decision).contains(&deadline),
        "{decision:?}"
    );

    let setup = sleeper("gc-strategy", "gc", "plan-images");
    let decision = prompt("plan-images", || {
        setup
            .registry
            .plan_images(&Default::default(), &images(), vec![vec![]], 0)
    });
    assert!(
        built_in_reason(&decision).contains(&deadline),
        "{decision:?}"
    );
    let setup = sleeper("gc-strategy", "gc", "plan-containers");
    let decision = prompt("plan-containers", || {
        setup
            .registry
            .plan_containers(&[], Vec::new(), &Default::default())
    });
    assert!(
        built_in_reason(&decision).contains(&deadline),
        "{decision:?}"
    );

    // A probe: the plugin's own deadline is shorter than the probe's 5 s timeout.
    let setup = sleeper("probe-handler", "probe", "check");
    let result = prompt("check", || {
        setup.registry.probe(
            "sleeper",
            &probe_request(5000),
            scope(Duration::from_secs(5)),
        )
    });
    assert_eq!(result.outcome, ProbeOutcome::Failure);
    assert!(result.message.contains("deadline"), "{}", result.message);

    // Admission fails open at the deadline; post-start and pre-stop fail with it.
    let setup = sleeper("lifecycle-hooks", "hooks", "admit");
    let admitted = prompt("admit", || setup.registry.admit(&admission_pod(), meta()));
    match admitted {
        Ok(DecidedBy::BuiltIn { reason }) => assert!(reason.contains(&deadline), "{reason}"),
        other => panic!("admit: {other:?}"),
    }
    let setup = sleeper("lifecycle-hooks", "hooks", "post-start");
    let error = prompt("post-start", || {
        setup
            .registry
            .post_start("web", meta(), scope(Duration::from_secs(5)))
    })
    .expect_err("post-start is cut at the deadline");
    assert!(error.to_string().contains("deadline"), "{error}");
    let setup = sleeper("lifecycle-hooks", "hooks", "pre-stop");
    let error = prompt("pre-stop", || {
        setup
            .registry
            .pre_stop("web", meta(), scope(Duration::from_secs(5)))
    })
    .expect_err("pre-stop is cut at the deadline");
    assert!(error.to_string().contains("deadline"), "{error}");

    // configure and self-check, as a swap validates a new version: timed without the compile.
    let engine = PluginEngine::new(None).unwrap();
    for export in ["configure", "self-check"] {
        let path = hostile("eviction");
        let bytes = std::fs::read(&path).unwrap();
        let spec = PluginSpec {
            name: "sleeper".into(),
            world: World::EvictionPolicy,
            source: wasmlet_plugin_host::PluginSource::File(path.clone()),
            path,
            sha256: None,
            limits: Limits {
                deadline_ms: DEADLINE_MS,
                ..Default::default()
            },
            config_json: format!(r#"{{"fault": "sleep", "in": "{export}", "sleepMs": 20000}}"#),
            shadow: false,
            rollout: None,
            capabilities: Capabilities::default(),
            selector: None,
        };
        let version = LoadedPlugin::load(&engine, &spec, &bytes, &sha256_hex(&bytes)).unwrap();
        let fault = prompt(export, || version.validate()).expect_err("validation is cut");
        assert!(fault.to_string().contains(&deadline), "{export}: {fault}");
    }
}

#[test]
fn a_guest_blocked_reading_a_fifo_is_stopped_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let setup = registry(&plugin(
        "reader",
        "eviction-policy",
        &hostile("eviction"),
        &format!(
            "  limits: {{deadlineMs: {DEADLINE_MS}}}\n  config: {{fault: read, in: rank, path: /data/fifo}}\n  capabilities:\n    directories:\n    - {{hostPath: {}, guestPath: /data}}\n",
            dir.path().display()
        ),
    ));
    let s = snapshot(&mut Lcg(6), 5, policy::Signal::MemoryAvailable);
    let decision = prompt("rank reading a FIFO", || setup.registry.rank(&s));
    assert!(
        built_in_reason(&decision).contains("deadline"),
        "{decision:?}"
    );
    // Release the reader the host left behind (non-blocking: O_NONBLOCK on Linux).
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(0o4000)
        .open(&fifo);
}

/// Threads of this process named `wasm-call` (the plugin call runtime's) now inside an open.
fn call_threads_in_open() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter(|task| {
            let read =
                |file: &str| std::fs::read_to_string(task.path().join(file)).unwrap_or_default();
            let syscall = read("syscall");
            read("comm").trim() == "wasm-call"
                && matches!(syscall.split(' ').next(), Some("2" | "257" | "437"))
        })
        .count()
}

#[test]
fn fifo_opens_cut_at_their_deadline_never_exhaust_the_blocking_pool() {
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("fifo"))
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::write(dir.path().join("file"), "hello").unwrap();
    // Four readers of the FIFO, each failed after its fifth fault: 20 opens cut at their
    // deadline, each of which would hold its pool thread until a writer came. Then a plugin
    // reads a regular file, and no pool thread is still in an open.
    let grant = format!(
        "  capabilities:\n    directories:\n    - {{hostPath: {}, guestPath: /data}}\n",
        dir.path().display()
    );
    let mut config = String::new();
    for name in ["fifo-0", "fifo-1", "fifo-2", "fifo-3", "file"] {
        let path = if name == "file" {
            "/data/file"
        } else {
            "/data/fifo"
        };
        config += &plugin(
            name,
            "probe-handler",
            &hostile("probe"),
            &format!(
                "  limits: {{deadlineMs: {DEADLINE_MS}}}\n  config: {{fault: read, in: check, path: {path}}}\n{grant}"
            ),
        );
    }
    let setup = registry(&config);
    for reader in ["fifo-0", "fifo-1", "fifo-2", "fifo-3"] {
        for _ in 0..5 {
            let result = prompt("check reading a FIFO", || {
                setup
                    .registry
                    .probe(reader, &probe_request(5000), scope(Duration::from_secs(5)))
            });
            assert!(result.message.contains("deadline"), "{}", result.message);
        }
    }
    let result = prompt("check reading a file", || {
        setup
            .registry
            .probe("file", &probe_request(5000), scope(Duration::from_secs(5)))
    });
    assert!(
        result.message.contains("read /data/file: 5 bytes"),
        "the pool still serves file reads: {}",
        result.message
    );
    assert_eq!(
        call_threads_in_open(),
        0,
        "no call thread is left waiting in an open"
    );
}
