//! Pod start in cluster mode: a pod created bound to the node (`spec.nodeName`) -> `Running`
//! in the API, against the raw CRI sequence RunPodSandbox + CreateContainer + StartContainer on
//! the same containerd, interleaved in one run (issue 15's target: overhead ≤ 10 % of the median).
//!
//! The API side is timed from the create request to the watch event that shows the pod
//! Running: the API server's write, the watch to wasmlet, admission, the default
//! `kube-api-access` volume (a TokenRequest), the CRI calls, the status patch and the watch back.
//! It is measured with the default token volume and without (`automountServiceAccountToken:
//! false`), so the TokenRequest's share shows.
//!
//! A third path times the API alone, with no node agent and no runtime: a pod created bound to
//! a node no agent runs, seen on an agent-like watch (`spec.nodeName`), whose status that
//! watcher patches to Running at once, timed to the creator's watch showing it. That is the
//! part of the API path any agent pays on top of the runtime's work (two writes, two watch
//! deliveries), on the same machine.
//!
//! Needs the control plane: `scripts/control-plane.sh start /var/lib/wasmlet-bench-cluster`, then
//! `WASMLET_BENCH_CLUSTER_DIR=/var/lib/wasmlet-bench-cluster cargo bench --bench cluster_start`
//! (env `BENCH_BOUND`, default 20).

use wasmlet_test_support::{bench as support, harness};

use futures::{StreamExt, TryStreamExt};
use harness::{Node, NodeOptions};
use k8s_openapi::api::core::v1::{Namespace, Node as ApiNode, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{env_count, ms, percentile, raw_cri_start, raw_node_context, remove_sandbox};
use wasmlet::cri::CriClient;

const NODE: &str = "bench-bound";
/// The node of the API-alone path: no agent runs it.
const NOBODY: &str = "bench-nobody";
const NAMESPACE: &str = "bench-bound";

async fn admin_client(dir: &Path) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(dir.join("admin.kubeconfig")).expect("admin kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig");
    kube::Client::try_from(config).expect("client")
}

fn bound_pod(name: &str, node: &str, token: bool) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": token,
            "containers": [{"name": "main", "image": "docker.io/library/busybox:local",
                            "imagePullPolicy": "IfNotPresent", "command": ["sh", "-c", "exec sleep 3600"]}]
        }
    }))
    .expect("pod")
}

/// Creates `name` bound to `node` and returns the time from the create request to the watch
/// event showing it Running; then deletes it and waits until it is gone.
async fn api_start(pods: &Api<Pod>, name: &str, node: &str, token: bool) -> Duration {
    let fields = format!("metadata.name={name}");
    let list = pods
        .list(&ListParams::default().fields(&fields))
        .await
        .expect("list");
    let version = list.metadata.resource_version.unwrap_or_default();
    let watch = WatchParams::default().fields(&fields).timeout(120);
    let mut events = pods.watch(&watch, &version).await.expect("watch").boxed();
    let started = Instant::now();
    pods.create(&PostParams::default(), &bound_pod(name, node, token))
        .await
        .expect("create");
    let mut took = None;
    while let Some(event) = events.try_next().await.expect("watch event") {
        match event {
            WatchEvent::Added(pod) | WatchEvent::Modified(pod) => {
                let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
                if took.is_none() && phase == Some("Running") {
                    took = Some(started.elapsed());
                    pods.delete(name, &DeleteParams::default().grace_period(0))
                        .await
                        .expect("delete");
                }
            }
            WatchEvent::Deleted(_) if took.is_some() => break,
            WatchEvent::Error(error) => panic!("watch of {name}: {error:?}"),
            _ => {}
        }
    }
    took.unwrap_or_else(|| panic!("{name} never ran"))
}

/// The API alone: while the creator times `name` as [`api_start`] does, an agent-like watch of
/// pods bound to [`NOBODY`] patches its status to Running as soon as it sees it.
async fn api_alone(pods: &Api<Pod>, name: &str) -> Duration {
    let fields = format!("spec.nodeName={NOBODY}");
    let version = pods
        .list(&ListParams::default().fields(&fields))
        .await
        .expect("list")
        .metadata
        .resource_version
        .unwrap_or_default();
    let mut agent = pods
        .watch(
            &WatchParams::default().fields(&fields).timeout(120),
            &version,
        )
        .await
        .expect("watch")
        .boxed();
    let agent_pods = pods.clone();
    let wanted = name.to_string();
    let agent = tokio::spawn(async move {
        while let Some(event) = agent.try_next().await.expect("agent watch event") {
            if let WatchEvent::Added(pod) = event {
                if pod.metadata.name.as_deref() == Some(wanted.as_str()) {
                    let running = serde_json::json!({"status": {"phase": "Running"}});
                    agent_pods
                        .patch_status(&wanted, &PatchParams::default(), &Patch::Merge(&running))
                        .await
                        .expect("status patch");
                    return;
                }
            }
        }
    });
    let took = api_start(pods, name, NOBODY, false).await;
    agent.await.expect("agent");
    took
}

fn main() {
    let dir = PathBuf::from(
        std::env::var("WASMLET_BENCH_CLUSTER_DIR")
            .expect("WASMLET_BENCH_CLUSTER_DIR names a running control plane (scripts/control-plane.sh start DIR)"),
    );
    let rounds = env_count("BENCH_BOUND", 20);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let cri = {
        let _guard = runtime.enter();
        CriClient::connect(harness::cri_socket(), Duration::from_secs(120)).expect("CRI")
    };
    let client = runtime.block_on(admin_client(&dir));
    let nodes: Api<ApiNode> = Api::all(client.clone());
    let _ = runtime.block_on(nodes.delete(NODE, &DeleteParams::default()));
    let out = std::process::Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/control-plane.sh"
    ))
    .args(["node-kubeconfig", &dir.display().to_string(), NODE])
    .output()
    .expect("control-plane.sh");
    assert!(
        out.status.success(),
        "node-kubeconfig: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kubeconfig = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let node = Node::start_with(
        NODE,
        NodeOptions {
            extra_args: vec!["--kubeconfig".into(), kubeconfig],
            ..NodeOptions::default()
        },
    );
    node.wait_for("the Node to be Ready", Duration::from_secs(60), |_| {
        let n = runtime.block_on(nodes.get_opt(NODE)).ok()??;
        let ready = n
            .status?
            .conditions?
            .into_iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        ready.then_some(())
    });
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NAMESPACE}}))
            .expect("namespace");
    let _ = runtime.block_on(namespaces.create(&PostParams::default(), &namespace));
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), NAMESPACE);
    node.wait_for(
        "the default service account",
        Duration::from_secs(60),
        |_| {
            runtime
                .block_on(accounts.get_opt("default"))
                .ok()?
                .map(|_| ())
        },
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let raw_node = raw_node_context(&node);

    // A first round of each warms caches (image, token signer, watch cache) and is not counted.
    let (mut raw, mut with_token, mut without_token) = (Vec::new(), Vec::new(), Vec::new());
    let mut alone = Vec::new();
    for i in 0..=rounds {
        let (took, sandbox) = runtime.block_on(raw_cri_start(&cri, &raw_node, &format!("raw{i}")));
        runtime.block_on(remove_sandbox(&cri, &sandbox));
        let token = runtime.block_on(api_start(&pods, &format!("token{i}"), NODE, true));
        let plain = runtime.block_on(api_start(&pods, &format!("plain{i}"), NODE, false));
        let api = runtime.block_on(api_alone(&pods, &format!("alone{i}")));
        if i > 0 {
            raw.push(ms(took));
            with_token.push(ms(token));
            without_token.push(ms(plain));
            alone.push(ms(api));
        }
    }
    let alone_median = percentile(&mut alone, 50.0);
    let raw_median = percentile(&mut raw, 50.0);
    println!("## pod bound -> Running in the API ({rounds} rounds, interleaved)");
    println!("| path | median ms | p90 ms | overhead vs raw CRI |\n|---|---|---|---|");
    println!(
        "| raw CRI RunPodSandbox+CreateContainer+StartContainer | {raw_median:.1} | {:.1} | - |",
        percentile(&mut raw, 90.0)
    );
    for (label, samples) in [
        (
            "API: created bound -> Running (default token volume)",
            &mut with_token,
        ),
        (
            "API: created bound -> Running (no token volume)",
            &mut without_token,
        ),
    ] {
        let median = percentile(samples, 50.0);
        println!(
            "| {label} | {median:.1} | {:.1} | {:+.1} % |",
            percentile(samples, 90.0),
            (median / raw_median - 1.0) * 100.0
        );
    }
    println!(
        "| API alone: created bound -> Running, no agent (a watcher patches the status) | {alone_median:.1} | {:.1} | - |",
        percentile(&mut alone, 90.0)
    );
    println!(
        "\nraw CRI + API alone = {:.1} ms: the least any agent can take here ({:+.1} % over raw CRI)",
        raw_median + alone_median,
        alone_median / raw_median * 100.0
    );
    let _ = runtime.block_on(namespaces.delete(NAMESPACE, &DeleteParams::default()));
    drop(node);
    let _ = runtime.block_on(nodes.delete(NODE, &DeleteParams::default()));
}
