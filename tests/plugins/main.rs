//! The plugin platform with real components built from plugins/ and tests/guests/: each world
//! end to end, the default plugins deciding exactly as the built-in copy, faulty guests
//! contained, and hot swap under load. One binary, a module per feature.

mod admission;
mod cache;
mod conformance;
mod contract;
mod defaults;
mod faults;
mod hooks;
mod hostile;
mod metrics;
mod oci;
mod pod_access;
mod pressure;
mod probe;
mod rollout;
mod storm;
mod swap;
mod wasi;

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
use wasmlet_test_support::components::{self, Component};

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

/// The OpenMetrics text of the registry's plugin series, as the host's `/metrics` encodes
/// them: registered on a registry with the `wasmlet` prefix.
fn scrape(registry: &PluginRegistry) -> String {
    let mut prometheus = prometheus_client::registry::Registry::with_prefix("wasmlet");
    registry.register_metrics(&mut prometheus);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &prometheus).unwrap();
    text
}

/// The value of the series `name{labels}` (exactly), if it is in `text`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}
