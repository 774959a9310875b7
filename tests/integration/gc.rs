//! Image and container garbage collection on real containerd. Container GC runs on the shared
//! node (it only touches this node's containers); image GC is node-wide, so it runs on its own
//! containerd whose image filesystem is a small tmpfs (scripts/setup-gc-node.sh), where a test
//! can push usage over the thresholds without touching anybody else's images.

use crate::harness::{busybox_pod, write_plugin_config, Node, NodeOptions};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use wasmlet::cri::CriClient;
use wasmlet_test_support::components;

/// Image GC tests share the GC node and must not overlap.
static GC_NODE: Mutex<()> = Mutex::new(());

const GC_NODE_DIR: &str = "/var/lib/wasmlet-gc-node";
const MIB: u64 = 1 << 20;

/// The extra images, each a busybox base plus one incompressible layer of the given size.
const IMAGES: [(&str, u64); 4] = [("gc-a", 24), ("gc-b", 48), ("gc-c", 36), ("keep-big", 60)];

fn tag(name: &str) -> String {
    format!("docker.io/library/{name}:local")
}

/// Deterministic filler, so the image digests (and the import) are the same every run.
fn filler(seed: u64, size: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(size as usize);
    while (out.len() as u64) < size {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(size as usize);
    out
}

/// Starts (or converges) the GC node with the extra images imported; returns its socket.
fn gc_node_with_images(dir: &Path) -> PathBuf {
    let mut specs = Vec::new();
    for (i, (name, mib)) in IMAGES.iter().enumerate() {
        let file = dir.join(name);
        std::fs::write(&file, filler(i as u64 + 1, mib * MIB)).unwrap();
        specs.push(format!("{name}={}:/data/blob", file.display()));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/setup-gc-node.sh");
    let status = Command::new(&script)
        .env("WASMLET_EXTRA_IMAGE_FILES", specs.join(" "))
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run setup-gc-node.sh");
    assert!(status.success(), "{} failed", script.display());
    PathBuf::from(GC_NODE_DIR).join("containerd.sock")
}

fn image_tags(socket: &Path) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let cri = CriClient::connect(socket, Duration::from_secs(10)).unwrap();
        cri.list_images()
            .await
            .expect("ListImages")
            .into_iter()
            .flat_map(|i| i.repo_tags)
            .collect()
    })
}

/// Thresholds that make image GC free between 70 and ~75 MiB (by the runtime's image sizes):
/// more than gc-b alone (50 MiB), no more than gc-b and gc-c together (88 MiB).
fn thresholds_freeing_70_mib() -> (u64, u64) {
    let fs = wasmlet::stats::fs::of(&Path::new(GC_NODE_DIR).join("root")).expect("statvfs");
    let used = fs.capacity_bytes - fs.available_bytes;
    let target = 70 * MIB;
    assert!(
        used > target + fs.capacity_bytes / 100,
        "the GC node's image filesystem holds only {used} bytes"
    );
    let low = (used - target) * 100 / fs.capacity_bytes;
    (low + 1, low)
}

fn gc_node(name: &str, socket: PathBuf, plugins: &Path) -> Node {
    let (high, low) = thresholds_freeing_70_mib();
    let node = Node::start_with(
        name,
        NodeOptions {
            extra_kubelet: format!(
                "imageGCHighThresholdPercent: {high}\nimageGCLowThresholdPercent: {low}\nimageMinimumGCAge: 0s\n"
            ),
            extra_wasmlet: format!(
                "imageGCPeriod: 3s\ncontainerGCPeriod: 1s\npluginConfig: {}\n",
                plugins.display()
            ),
            runtime_socket: Some(socket),
            ..Default::default()
        },
    );
    // A running container keeps busybox in use; the sandbox keeps pause pinned.
    node.write_manifest(
        "user.yaml",
        &busybox_pod("user", "  hostNetwork: true\n", "sleep 3600"),
    );
    node.wait_phase("user", "Running", Duration::from_secs(30));
    node
}

fn plugin_config(dir: &Path, name: &str, wasm: &Path, config: &str) -> PathBuf {
    write_plugin_config(
        dir,
        &format!(
            "- name: {name}\n  world: gc-strategy\n  path: {}\n  config: {config}\n",
            wasm.display()
        ),
    )
}

#[test]
fn image_gc_removes_unused_images_in_plan_order_down_to_the_low_threshold() {
    let _serial = GC_NODE.lock();
    let dir = tempfile::tempdir().unwrap();
    let socket = gc_node_with_images(dir.path());
    // The kept prefixes come from a file in a directory the plugin config grants (read-only):
    // the real node's plugin reads it through WASI.
    let keep = dir.path().join("keep");
    std::fs::create_dir(&keep).unwrap();
    std::fs::write(keep.join("prefixes"), "# kept\ndocker.io/library/keep-\n").unwrap();
    let plugins = plugin_config(
        dir.path(),
        "gc-keep",
        &components::GC_KEEP_PREFIXES.path(),
        &format!(
            "{{keepPrefixesFile: /keep/prefixes}}\n  capabilities: {{directories: [{{hostPath: {}, guestPath: /keep}}]}}",
            keep.display()
        ),
    );
    let node = gc_node("t-image-gc", socket.clone(), &plugins);

    // Largest unused first, kept prefixes never: gc-b (48 MiB), then gc-c (36 MiB) reach
    // the 70 MiB to free; gc-a and keep-big (the largest of all) stay.
    node.wait_for("gc-b and gc-c removed", Duration::from_secs(30), |_| {
        let tags = image_tags(&socket);
        (!tags.contains(&tag("gc-b")) && !tags.contains(&tag("gc-c"))).then_some(())
    });
    // One more cycle changes nothing: usage is below the high threshold now.
    std::thread::sleep(Duration::from_secs(4));
    let tags = image_tags(&socket);
    for kept in ["gc-a", "keep-big", "busybox"] {
        assert!(tags.contains(&tag(kept)), "{kept} was removed: {tags:?}");
    }
    assert!(
        tags.contains(&"registry.k8s.io/pause:local".to_string()),
        "{tags:?}"
    );

    let log = node.log();
    let removal = |name: &str| {
        log.lines()
            .position(|l| l.contains("image GC: removed image") && l.contains(&tag(name)))
            .unwrap_or_else(|| panic!("no removal logged for {name}:\n{}", node.log_tail()))
    };
    assert!(removal("gc-b") < removal("gc-c"), "gc-b must go first");
    assert!(
        log.lines()
            .filter(|l| l.contains("image GC: removed image"))
            .all(|l| l.contains("plugin=gc-keep")),
        "{}",
        node.log_tail()
    );
    let metrics = node.try_get("/metrics").expect("/metrics");
    assert!(
        metrics.contains("wasmlet_image_gc_removed_images_total{plugin=\"gc-keep\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("kubelet_image_garbage_collected_total{reason=\"space\"} 2"),
        "{metrics}"
    );
}

#[test]
fn a_faulty_gc_plugin_falls_back_to_the_default_order() {
    let _serial = GC_NODE.lock();
    let dir = tempfile::tempdir().unwrap();
    let socket = gc_node_with_images(dir.path());
    // Plans in-use and pinned images and an index out of range: the host rejects it.
    let plugins = plugin_config(
        dir.path(),
        "gc-nonsense",
        &components::GUEST_GC_NONSENSE.path(),
        "{answer: mixed}",
    );
    let mut node = gc_node("t-image-gc-fault", socket.clone(), &plugins);

    node.wait_for(
        "an image removed by the built-in",
        Duration::from_secs(30),
        |n| {
            n.log()
                .lines()
                .any(|l| l.contains("image GC: removed image") && l.contains("plugin=built-in"))
                .then_some(())
        },
    );
    let tags = image_tags(&socket);
    assert!(
        tags.contains(&tag("busybox")),
        "in-use image removed: {tags:?}"
    );
    assert!(
        tags.contains(&"registry.k8s.io/pause:local".to_string()),
        "sandbox image removed: {tags:?}"
    );
    let report = node.get_json("/plugins");
    let entry = &report["plugins"][0];
    assert!(entry["faults"].as_u64().unwrap_or(0) >= 1, "{entry}");
    node.assert_running();
}

#[test]
fn container_gc_keeps_only_the_newest_dead_container() {
    let node = Node::start_with(
        "t-container-gc",
        NodeOptions {
            extra_wasmlet:
                "containerGCPeriod: 1s\n\
                 containerRestartBackOff: {initialPeriod: 500ms, maxPeriod: 1s, resetPeriod: 60s}\n"
                    .into(),
            ..Default::default()
        },
    );
    // Fails three times, succeeds on the fourth attempt: four dead containers in all.
    let script = "n=$(cat /data/n 2>/dev/null || echo 0); echo $((n+1)) > /data/n; [ $n -ge 3 ]";
    node.write_manifest(
        "retry.yaml",
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: retry\nspec:\n  restartPolicy: OnFailure\n\
             \x20 volumes:\n  - name: data\n    emptyDir: {{}}\n  containers:\n  - name: main\n\
             \x20   image: docker.io/library/busybox:local\n    command: [sh, -c, {script:?}]\n\
             \x20   volumeMounts:\n    - name: data\n      mountPath: /data\n"
        ),
    );
    node.wait_phase("retry", "Succeeded", Duration::from_secs(60));
    let kept = node.wait_for("one dead container left", Duration::from_secs(20), |n| {
        let containers = n.containers(Some("retry"));
        (containers.len() == 1).then(|| containers[0].clone())
    });
    assert_eq!(
        kept.metadata.as_ref().map(|m| m.attempt),
        Some(3),
        "the newest attempt must be the one kept"
    );
    assert_eq!(kept.exit_code, 0);
    // The pod's sandbox is its newest: kept while the pod exists.
    assert_eq!(node.sandboxes(Some("retry")).len(), 1);
    // The runtime has removed the third container before wasmlet reads its answer and counts
    // it: under load the test can see the list before the counter moves.
    node.wait_for("three removals counted", Duration::from_secs(10), |n| {
        n.try_get("/metrics").filter(|m| {
            m.contains("wasmlet_container_gc_removed_containers_total{plugin=\"built-in\"} 3")
        })
    });

    // A deleted pod leaves nothing behind.
    node.remove_manifest("retry.yaml");
    node.wait_for(
        "the deleted pod's containers and sandbox gone",
        Duration::from_secs(30),
        |n| {
            (n.containers(Some("retry")).is_empty() && n.sandboxes(Some("retry")).is_empty())
                .then_some(())
        },
    );
}
