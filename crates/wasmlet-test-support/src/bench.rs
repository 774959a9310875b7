//! What the benchmarks share: counts from the environment, percentiles, and the raw CRI start
//! sequence wasmlet's own pod start is measured against.

use crate::harness::{busybox_pod, Node};
use std::path::Path;
use std::time::{Duration, Instant};
use wasmlet::cri::CriClient;
use wasmlet::kuberuntime::pod_cgroup;
use wasmlet::kuberuntime::pod_config::{self, NodeContext};
use wasmlet::resources::QosClass;
use wasmlet::source::manifest;

/// A count from environment variable `name` (`BENCH_*`), else `default`.
pub fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `p`th percentile (nearest rank) of `samples`, which it sorts.
pub fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * (samples.len() as f64 - 1.0)).round() as usize;
    samples[rank.min(samples.len() - 1)]
}

/// Milliseconds of `d`.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The two files the node writes for every container and bind-mounts into it (the pod's
/// `/etc/hosts` and the termination message file), written under `dir` before the clock
/// starts: the raw side makes runc do the same mounts, and wasmlet's writing them is its own.
fn node_written_files(dir: &Path) -> Vec<wasmlet::cri::api::Mount> {
    std::fs::create_dir_all(dir).expect("raw pod directory");
    let hosts = dir.join("etc-hosts");
    std::fs::write(&hosts, "127.0.0.1\tlocalhost\n::1\tlocalhost\n").expect("hosts file");
    let message = dir.join("termination-log");
    std::fs::write(&message, "").expect("termination message file");
    vec![
        wasmlet::cri::api::Mount {
            container_path: "/etc/hosts".into(),
            host_path: hosts.display().to_string(),
            selinux_relabel: true,
            ..Default::default()
        },
        wasmlet::cri::api::Mount {
            container_path: "/dev/termination-log".into(),
            host_path: message.display().to_string(),
            ..Default::default()
        },
    ]
}

/// The raw CRI sequence for one pod, with the configs and mounts wasmlet itself would send.
pub async fn raw_cri_start(cri: &CriClient, node: &NodeContext, name: &str) -> (Duration, String) {
    let text = busybox_pod(name, "", "exec sleep 3600");
    let pod =
        manifest::load(&text, Path::new("/bench/raw.yaml"), &node.node_name).expect("manifest");
    let sandbox_config = pod_config::sandbox_config(&pod, node, 0).expect("sandbox config");
    let container = &pod.spec.as_ref().unwrap().containers[0];
    std::fs::create_dir_all(&sandbox_config.log_directory).ok();
    let own_files = node_written_files(&node.root_dir.join(name));
    // The pod cgroup with the pod's limits, which the node creates before a sandbox runs:
    // runc then creates the sandbox's and the container's cgroups under the same parent.
    pod_cgroup::set_pod_cgroup(&pod).expect("pod cgroup");
    let started = Instant::now();
    let sandbox = cri
        .run_pod_sandbox(sandbox_config.clone())
        .await
        .expect("RunPodSandbox");
    let facts = wasmlet::fieldpath::PodFacts::default();
    let envs = wasmlet::kuberuntime::env::environment(&pod, container, &facts, &Default::default())
        .expect("environment");
    let config = pod_config::container_config(&pod, container, 0, envs, node, own_files)
        .expect("container config");
    let id = cri
        .create_container(&sandbox, config, sandbox_config)
        .await
        .expect("CreateContainer");
    cri.start_container(&id).await.expect("StartContainer");
    (started.elapsed(), sandbox)
}

/// Stops and removes a sandbox the raw side started, with its containers.
pub async fn remove_sandbox(cri: &CriClient, sandbox: &str) {
    let selector = wasmlet::cri::Labels::new();
    for c in cri.list_containers(selector).await.unwrap_or_default() {
        if c.pod_sandbox_id == sandbox {
            let _ = cri.stop_container(&c.id, Duration::ZERO).await;
            let _ = cri.remove_container(&c.id).await;
        }
    }
    // The raw side's pods are BestEffort, so their pod cgroups sit in that tier.
    let parent = cri
        .pod_sandbox_status(sandbox)
        .await
        .ok()
        .and_then(|status| status.metadata)
        .map(|pod| QosClass::BestEffort.cgroup_parent(&pod.uid));
    let _ = cri.stop_pod_sandbox(sandbox).await;
    let _ = cri.remove_pod_sandbox(sandbox).await;
    if let Some(parent) = parent {
        wasmlet::cgroups::remove_pod_cgroup(&parent);
    }
}

/// The node the raw CRI side starts its pods for: beside `node`, under a name of its own, so
/// neither side sees the other's sandboxes.
pub fn raw_node_context(node: &Node) -> NodeContext {
    NodeContext {
        node_name: "bench-raw".into(),
        node_ip: "127.0.0.1".into(),
        pod_logs_dir: node.logs_dir(),
        machine_memory_bytes: wasmlet::machine::machine_memory_bytes(),
        allocatable_cpu_millis: wasmlet::machine::machine_cpu_millis(),
        allocatable_memory_bytes: wasmlet::machine::machine_memory_bytes(),
        root_dir: node.dir.path().join("raw-root"),
        dns: pod_config::DnsContext {
            resolv_conf: "/etc/resolv.conf".into(),
            ..Default::default()
        },
    }
}
