//! How far past its deadline a plugin call returns, for each way a plugin can wait:
//! `cargo bench -p wasmlet-plugin-host --bench plugin_deadlines` (or `cargo bench --bench
//! plugin_deadlines`; needs scripts/build-plugins.sh first). One row per way with the p50 and
//! p99 overrun past a 50 ms deadline; the goal is p99 <= 10 ms. The calls are made through the
//! registry, as the node makes them, each timed from the call to its answer.
//!
//! `exec` runs through an exec function standing in for the host's CRI `ExecSync`: it starts
//! `sleep 10` as a local process and kills it when the timeout the plugin host hands it runs
//! out, as the host's CRI client cancels its call.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmlet_plugin_host::{EvictionSnapshot, PluginSpec};
use wasmlet_plugin_host::{
    ExecOutput, LoadedPlugin, PluginEngine, PluginRegistry, PodMeta, PodScope, ProbeKind,
    ProbeRequest,
};
use wasmlet_policy_default as policy;
use wasmlet_test_support::components::{self, Component};

const DEADLINE_MS: u64 = 50;
const DEADLINE: Duration = Duration::from_millis(DEADLINE_MS);

/// A registry serving one plugin entry (YAML lines after `- name: p`), compiling into `cache`.
fn registry(cache: &Path, entry: &str) -> Arc<PluginRegistry> {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("plugins.yaml");
    std::fs::write(
        &config,
        format!("apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: p\n{entry}"),
    )
    .unwrap();
    let registry = PluginRegistry::new(
        PluginEngine::new(Some(cache.to_path_buf())).unwrap(),
        Some(config),
    );
    registry.reload();
    assert!(
        registry.slot_named("p").and_then(|s| s.serving()).is_some(),
        "the plugin does not serve: {:#}",
        registry.report()
    );
    registry
}

fn eviction_entry(guest: &str, extra: &str) -> String {
    format!(
        "  world: eviction-policy\n  path: {}\n  limits: {{deadlineMs: {DEADLINE_MS}}}\n{extra}",
        Component::named(guest).path().display()
    )
}

fn snapshot() -> EvictionSnapshot {
    let mut s = EvictionSnapshot {
        pressure: vec![policy::SignalObservation::new(
            policy::Signal::MemoryAvailable,
            1,
            100,
            10,
        )],
        ..Default::default()
    };
    s.pods.push(policy::PodInfo {
        has_stats: true,
        ..Default::default()
    });
    Arc::make_mut(&mut s.meta).push(PodMeta::default());
    s
}

/// The exec function: `sleep 10`, killed when `timeout` runs out.
fn sleep_exec() -> wasmlet_plugin_host::ExecFn {
    Arc::new(|_container: &str, _command: &[String], timeout: Duration| {
        let started = Instant::now();
        let mut child = std::process::Command::new("sleep")
            .arg("10")
            .spawn()
            .map_err(|e| format!("sleep: {e}"))?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Ok(ExecOutput {
                    exit_code: status.code().unwrap_or(-1),
                    ..Default::default()
                });
            }
            if started.elapsed() >= timeout {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("exec timed out after {timeout:?}"));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    })
}

fn probe(registry: &PluginRegistry, args: String, ports: Vec<u16>) {
    let request = ProbeRequest {
        args,
        timeout_ms: DEADLINE_MS as u32,
        pod_ip: "127.0.0.1".into(),
        ports: ports.clone(),
        containers: vec!["web".into()],
        container: "web".into(),
        kind: ProbeKind::Liveness,
    };
    let scope = PodScope {
        pod_ip: "127.0.0.1".into(),
        ports,
        containers: vec!["web".into()],
        deadline: Instant::now() + DEADLINE,
        exec: Some(sleep_exec()),
    };
    std::hint::black_box(registry.probe("p", &request, scope));
}

/// Runs `call` `n` times, each on a fresh `setup()` (untimed: the registry stops calling a
/// plugin after a few faults in a row, and the built-in default answers at once), and prints
/// the p50 and p99 of how far each call ran past the deadline.
fn row<T>(way: &str, n: usize, mut setup: impl FnMut() -> T, mut call: impl FnMut(&T)) {
    let mut overruns: Vec<f64> = (0..n)
        .map(|_| {
            let fresh = setup();
            let started = Instant::now();
            call(&fresh);
            (started.elapsed().as_secs_f64() - DEADLINE.as_secs_f64()) * 1e3
        })
        .collect();
    overruns.sort_by(f64::total_cmp);
    let at = |q: f64| overruns[((overruns.len() - 1) as f64 * q).round() as usize];
    println!(
        "{way}: p50 {:.1} ms, p99 {:.1} ms, min {:.1} ms ({n} calls, deadline {DEADLINE_MS} ms)",
        at(0.5),
        at(0.99),
        at(0.0)
    );
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let s = snapshot();
    // One compile cache for every registry: a fresh registry loads a cached component.
    let cache = dir.path().join("cache");
    let fresh = |entry: &str| registry(&cache, entry);

    let looping = eviction_entry("guest_loop", "");
    row("guest loop", 40, || fresh(&looping), |r| drop(r.rank(&s)));

    let sleeping = eviction_entry(
        "guest_hostile_eviction",
        "  config: {fault: sleep, in: rank, sleepMs: 10000}\n",
    );
    row(
        "WASI sleep 10 s",
        40,
        || fresh(&sleeping),
        |r| drop(r.rank(&s)),
    );

    // Each open that times out is interrupted (engine/blocked_open.rs): no pool thread is
    // left behind, however many calls there are.
    let fifo_dir = dir.path().join("fifo");
    std::fs::create_dir_all(&fifo_dir).unwrap();
    let fifo = fifo_dir.join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reading = eviction_entry(
        "guest_hostile_eviction",
        &format!(
            "  config: {{fault: read, in: rank, path: /data/fifo}}\n  capabilities:\n    directories:\n    - {{hostPath: {}, guestPath: /data}}\n",
            fifo_dir.display()
        ),
    );
    row(
        "FIFO read (no writer)",
        40,
        || fresh(&reading),
        |r| drop(r.rank(&s)),
    );
    println!(
        "FIFO read (no writer): {} call threads still in an open after 40 calls",
        call_threads_in_open()
    );

    let access = |extra: &str| {
        format!(
            "  world: probe-handler\n  path: {}\n  limits: {{deadlineMs: {DEADLINE_MS}}}\n{extra}",
            components::GUEST_POD_ACCESS.path().display()
        )
    };
    let exec = access("  capabilities:\n    exec: [web]\n");
    row(
        "exec sleep 10",
        30,
        || fresh(&exec),
        |r| probe(r, r#"{"exec": "web"}"#.into(), vec![]),
    );

    // A server that accepts and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming().flatten() {
            held.push(stream);
        }
    });
    let http = access("");
    row(
        "HTTP to a server that never answers",
        30,
        || fresh(&http),
        |r| probe(r, format!(r#"{{"http": {port}}}"#), vec![port]),
    );

    // A cold instantiation whose `configure` blocks: validation runs it under the deadline.
    let engine = PluginEngine::new(None).unwrap();
    let path = components::GUEST_HOSTILE_EVICTION.path();
    let bytes = std::fs::read(&path).unwrap();
    let sha = wasmlet_plugin_host::sha256_hex(&bytes);
    let mut spec = bench_spec(&path);
    spec.config_json = r#"{"fault": "sleep", "in": "configure", "sleepMs": 10000}"#.into();
    let version = LoadedPlugin::load(&engine, &spec, &bytes, &sha).unwrap();
    row(
        "cold instantiation (configure sleeps 10 s)",
        30,
        || (),
        |()| assert!(version.validate().is_err()),
    );
}

/// An eviction plugin's spec with the bench's deadline.
fn bench_spec(path: &Path) -> PluginSpec {
    PluginSpec {
        name: "bench".into(),
        world: wasmlet_plugin_host::World::EvictionPolicy,
        source: wasmlet_plugin_host::PluginSource::File(path.to_path_buf()),
        path: path.to_path_buf(),
        sha256: None,
        limits: wasmlet_plugin_host::Limits {
            deadline_ms: DEADLINE_MS,
            ..Default::default()
        },
        config_json: "{}".into(),
        shadow: false,
        rollout: None,
        capabilities: Default::default(),
        selector: None,
    }
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
            read("comm").trim() == "wasm-call"
                && matches!(read("syscall").split(' ').next(), Some("2" | "257" | "437"))
        })
        .count()
}
