//! Plugin call costs, each beside its native or cold counterpart in the same run:
//! `cargo bench -p wasmlet-plugin-host --bench plugins` (needs scripts/build-plugins.sh first).

use criterion::{black_box, criterion_main, BenchmarkId, Criterion};
use std::path::{Path, PathBuf};
use std::time::Duration;
use wasmlet_plugin_host::{
    sha256_hex, EvictionSnapshot, Limits, LoadedPlugin, PluginEngine, PluginRegistry, PluginSpec,
    PodMeta, World,
};
use wasmlet_policy_default as policy;
use wasmlet_test_support::components::{self, Component};

fn snapshot(pods: usize) -> EvictionSnapshot {
    let mut s = EvictionSnapshot {
        pressure: vec![policy::SignalObservation::new(
            policy::Signal::MemoryAvailable,
            50 << 20,
            8 << 30,
            100 << 20,
        )],
        ..Default::default()
    };
    for i in 0..pods {
        s.pods.push(policy::PodInfo {
            priority: (i % 3) as i32 * 100,
            qos: policy::QosClass::Burstable,
            has_stats: true,
            memory_request_bytes: ((i % 7) as u64) << 24,
            memory_usage_bytes: ((i * 37 % 101) as u64) << 22,
            container_count: 1,
            ..Default::default()
        });
        std::sync::Arc::make_mut(&mut s.meta).push(PodMeta {
            namespace: "default".into(),
            name: format!("pod-{i}"),
            ..Default::default()
        });
    }
    s.node.pod_count = pods as u32;
    s
}

fn registry(dir: &Path, name: &str) -> std::sync::Arc<PluginRegistry> {
    let config = dir.join("plugins.yaml");
    std::fs::write(
        &config,
        format!("apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: p\n  world: eviction-policy\n  path: {}\n", Component::named(name).path().display()),
    )
    .unwrap();
    PluginRegistry::new(
        PluginEngine::new(Some(dir.join("cache"))).unwrap(),
        Some(config),
    )
}

fn spec(path: PathBuf) -> PluginSpec {
    PluginSpec {
        name: "bench".into(),
        world: World::EvictionPolicy,
        source: wasmlet_plugin_host::PluginSource::File(path.clone()),
        path,
        sha256: None,
        limits: Limits::default(),
        config_json: "{}".into(),
        shadow: false,
        rollout: None,
        capabilities: Default::default(),
        selector: None,
    }
}

fn calls(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(dir.path(), "eviction_default");
    let version = registry
        .slot_named("p")
        .unwrap()
        .serving()
        .expect("eviction_default serves");
    c.bench_function("empty call (self-check)", |b| {
        b.iter(|| version.self_check().unwrap())
    });
    let mut group = c.benchmark_group("rank");
    for pods in [1usize, 110, 1000] {
        let s = snapshot(pods);
        group.bench_with_input(BenchmarkId::new("wasm", pods), &s, |b, s| {
            b.iter(|| black_box(registry.rank(s)))
        });
        group.bench_with_input(BenchmarkId::new("native", pods), &s, |b, s| {
            b.iter(|| black_box(policy::eviction::rank(&s.pressure, &s.pods)))
        });
    }
    group.finish();
}

fn loading(c: &mut Criterion) {
    let path = components::EVICTION_DEFAULT.path();
    let bytes = std::fs::read(&path).unwrap();
    let sha = sha256_hex(&bytes);
    let cold = PluginEngine::new(None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cached = PluginEngine::new(Some(dir.path().join("cache"))).unwrap();
    cached.compile(&path, &bytes, &sha, false).unwrap();
    let mut group = c.benchmark_group("load");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("compile", |b| {
        b.iter(|| cold.compile(&path, &bytes, &sha, false).unwrap())
    });
    group.bench_function("cached load", |b| {
        b.iter(|| cached.compile(&path, &bytes, &sha, false).unwrap())
    });
    let version = LoadedPlugin::load(&cached, &spec(path.clone()), &bytes, &sha).unwrap();
    group.bench_function("instantiate + configure + self-check", |b| {
        b.iter(|| version.validate().unwrap())
    });
    group.finish();

    // A swap: the file changes, the registry reads, hashes, loads (cached), links,
    // validates and swaps in the new version.
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.wasm");
    std::fs::copy(&path, &live).unwrap();
    let config = dir.path().join("plugins.yaml");
    std::fs::write(&config, format!("apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: p\n  world: eviction-policy\n  path: {}\n", live.display())).unwrap();
    let registry = PluginRegistry::new(
        PluginEngine::new(Some(dir.path().join("cache"))).unwrap(),
        Some(config),
    );
    let versions = [components::EVICTION_BATCH_FIRST.path(), path];
    for v in &versions {
        std::fs::copy(v, &live).unwrap();
        registry.reload();
    }
    let mut next = 0;
    let mut group = c.benchmark_group("swap");
    group.sample_size(20);
    group.bench_function("reload with a changed component (cached)", |b| {
        b.iter_batched(
            || {
                next = (next + 1) % 2;
                std::fs::copy(&versions[next], &live).unwrap();
            },
            |()| registry.reload(),
            criterion::BatchSize::PerIteration,
        )
    });
    group.finish();
}

// `criterion_group!` defines a public function; inside a private module it needs no doc.
mod group {
    criterion::criterion_group!(benches, super::calls, super::loading);
}
criterion_main!(group::benches);
