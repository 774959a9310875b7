//! Volumes for static pods: emptyDir (disk and Memory), hostPath types, subPath and readOnly,
//! cleanup with the pod. downwardAPI and projected volumes are not implemented yet.

use crate::harness::{container_status, Node};
use std::time::Duration;

fn empty_dir(node: &Node, uid: &str, name: &str) -> std::path::PathBuf {
    node.dir.path().join(format!(
        "root/pods/{uid}/volumes/kubernetes.io~empty-dir/{name}"
    ))
}

#[test]
fn init_container_hands_work_to_the_app_through_an_empty_dir() {
    let node = Node::start("t-vol-init");
    let manifest = include_str!("pods/volumes-init-demo.yaml");
    node.write_manifest("init.yaml", manifest);
    let pod = node.wait_phase("init-demo", "Running", Duration::from_secs(40));
    let ip = pod["status"]["podIP"].as_str().unwrap().to_string();
    let body = node.wait_for(
        "the app to serve the init container's file",
        Duration::from_secs(10),
        |_| {
            ureq::get(&format!("http://{ip}:8080/index.html"))
                .call()
                .ok()?
                .into_string()
                .ok()
        },
    );
    assert_eq!(body, "made by the init container\n");
    let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
    let dir = empty_dir(&node, &uid, "workdir");
    assert!(
        dir.join("index.html").is_file(),
        "upstream's layout under the root dir"
    );

    node.remove_manifest("init.yaml");
    node.wait_for(
        "the emptyDir to be removed with its pod",
        Duration::from_secs(20),
        |_| (!dir.exists()).then_some(()),
    );
}

#[test]
fn memory_empty_dir_is_a_sized_tmpfs_and_mounts_honour_read_only_and_sub_path() {
    let node = Node::start("t-vol-mem");
    let host_dir = node.dir.path().join("host-data");
    std::fs::create_dir_all(&host_dir).unwrap();
    std::fs::write(host_dir.join("config.txt"), "from the host\n").unwrap();
    let manifest = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: mounts}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: main\n    image: docker.io/library/busybox:local\n    command: [sh, -c, 'grep \" /cache \" /proc/mounts; df -k /cache | tail -1; cat /host/config.txt; touch /host/new 2>&1; echo written > /data/hello; exec sleep 3600']\n    volumeMounts:\n    - {{name: cache, mountPath: /cache}}\n    - {{name: host, mountPath: /host, readOnly: true}}\n    - {{name: scratch, mountPath: /data, subPath: sub}}\n  volumes:\n  - {{name: cache, emptyDir: {{medium: Memory, sizeLimit: 8Mi}}}}\n  - {{name: host, hostPath: {{path: {}, type: Directory}}}}\n  - {{name: scratch, emptyDir: {{}}}}\n",
        host_dir.display()
    );
    node.write_manifest("mounts.yaml", &manifest);
    let pod = node.wait_phase("mounts", "Running", Duration::from_secs(30));
    let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
    let log = node.wait_for("the container's report", Duration::from_secs(10), |n| {
        n.container_log(&pod, "main")
            .filter(|t| t.contains("from the host"))
    });
    assert!(log.contains("tmpfs /cache tmpfs"), "a tmpfs: {log}");
    let df: Vec<&str> = log
        .lines()
        .find(|l| l.contains("/cache") && !l.contains("tmpfs /cache"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(df[1], "8192", "sizeLimit 8Mi: {log}");
    assert!(
        log.contains("Read-only file system"),
        "readOnly holds: {log}"
    );
    let sub = empty_dir(&node, &uid, "scratch").join("sub/hello");
    node.wait_for("the subPath file", Duration::from_secs(5), |_| {
        sub.is_file().then_some(())
    });
    assert!(
        !empty_dir(&node, &uid, "scratch").join("hello").exists(),
        "written under the subPath only"
    );

    let mount_point = empty_dir(&node, &uid, "cache").display().to_string();
    node.remove_manifest("mounts.yaml");
    node.wait_for("the tmpfs to be unmounted", Duration::from_secs(20), |_| {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        (!mounts.contains(&mount_point)).then_some(())
    });
}

#[test]
fn host_path_types_create_or_fail_the_pod_with_a_reason() {
    let node = Node::start("t-vol-hostpath");
    let created = node.dir.path().join("made/by/wasmlet");
    let missing = node.dir.path().join("no-such-file");
    let pod = |name: &str, path: &std::path::Path, kind: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: main\n    image: docker.io/library/busybox:local\n    command: [sleep, '3600']\n    volumeMounts: [{{name: h, mountPath: /h}}]\n  volumes:\n  - {{name: h, hostPath: {{path: {}, type: {kind}}}}}\n", path.display())
    };
    node.write_manifest("create.yaml", &pod("create", &created, "DirectoryOrCreate"));
    node.write_manifest("missing.yaml", &pod("missing", &missing, "File"));
    node.wait_phase("create", "Running", Duration::from_secs(30));
    assert!(created.is_dir(), "DirectoryOrCreate created the directory");
    let failed = node.wait_for(
        "the missing file to be reported",
        Duration::from_secs(20),
        |n| {
            n.pod("missing").filter(|p| {
                container_status(p, "main")["state"]["waiting"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("hostPath"))
            })
        },
    );
    let message = container_status(&failed, "main")["state"]["waiting"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("MountVolume.SetUp failed for volume \"h\"")
            && message.contains("does not exist"),
        "{message}"
    );
    assert_eq!(failed["status"]["phase"], "Pending");
    assert!(
        node.containers(Some("missing")).is_empty(),
        "no container starts without its volumes"
    );

    node.write_manifest("cm.yaml", include_str!("pods/volumes-cm.yaml"));
    let rejected = node.wait_phase("cm", "Failed", Duration::from_secs(10));
    assert_eq!(rejected["status"]["reason"], "UnsupportedVolume");
    let message = rejected["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("volume \"settings\"") && message.contains("need an API server"),
        "{message}"
    );
    assert!(node.sandboxes(Some("cm")).is_empty());
}

#[test]
fn downward_api_volumes_show_the_pods_labels_and_follow_an_edit() {
    let node = Node::start("t-vol-downward");
    let manifest = |tier: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: info\n  labels: {{app: web, tier: {tier}}}\n  annotations: {{owner: team-a}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: docker.io/library/busybox:local\n    command: [sh, -c, 'cat /etc/podinfo/labels; echo; cat /etc/podinfo/name; echo; cat /etc/projected/mem; echo; echo MEM=$MEM_LIMIT_MI; exec sleep 3600']\n    resources: {{limits: {{memory: 64Mi}}}}\n    env:\n    - {{name: MEM_LIMIT_MI, valueFrom: {{resourceFieldRef: {{resource: limits.memory, divisor: 1Mi}}}}}}\n    volumeMounts:\n    - {{name: podinfo, mountPath: /etc/podinfo, readOnly: true}}\n    - {{name: projected, mountPath: /etc/projected}}\n  volumes:\n  - name: podinfo\n    downwardAPI:\n      items:\n      - {{path: labels, fieldRef: {{fieldPath: metadata.labels}}}}\n      - {{path: name, fieldRef: {{fieldPath: metadata.name}}}}\n  - name: projected\n    projected:\n      sources:\n      - downwardAPI:\n          items:\n          - {{path: mem, resourceFieldRef: {{containerName: main, resource: limits.memory, divisor: 1Mi}}}}\n")
    };
    node.write_manifest("info.yaml", &manifest("frontend"));
    let pod = node.wait_phase("info", "Running", Duration::from_secs(30));
    let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
    let log = node.wait_for("the container's report", Duration::from_secs(10), |n| {
        n.container_log(&pod, "main").filter(|t| t.contains("MEM="))
    });
    assert_eq!(
        log,
        "app=\"web\"\ntier=\"frontend\"\ninfo-t-vol-downward\n64\nMEM=64\n"
    );
    let volume = node.dir.path().join(format!(
        "root/pods/{uid}/volumes/kubernetes.io~downward-api/podinfo"
    ));
    assert!(
        std::fs::read_link(volume.join("..data"))
            .unwrap()
            .to_string_lossy()
            .starts_with(".."),
        "atomic-writer layout"
    );

    // An edit makes a new pod (as upstream for static pods); its files show the new labels.
    node.write_manifest("info.yaml", &manifest("backend"));
    let log = node.wait_for("the new pod's report", Duration::from_secs(30), |n| {
        let pod = n.pod("info")?;
        (pod["metadata"]["uid"] != uid.as_str() && pod["status"]["phase"] == "Running")
            .then_some(())?;
        n.container_log(&pod, "main").filter(|t| t.contains("MEM="))
    });
    assert!(log.starts_with("app=\"web\"\ntier=\"backend\"\n"), "{log}");
}

/// The CVE-2017-1002101 class: a container replaces its own subPath with a symlink to `/` and
/// exits. The restart must not bind the host's root: the container gets
/// `CreateContainerConfigError` naming the subPath, and never runs again with it.
#[test]
fn a_sub_path_swapped_for_a_symlink_out_of_the_volume_is_refused() {
    let node = Node::start("t-vol-subpath");
    let manifest = include_str!("pods/volumes-swapper.yaml");
    node.write_manifest("swapper.yaml", manifest);
    let pod = node.wait_for("the restart to be refused", Duration::from_secs(60), |n| {
        let pod = n.pod("swapper")?;
        let waiting = &container_status(&pod, "main")["state"]["waiting"];
        (waiting["reason"] == "CreateContainerConfigError").then_some(pod)
    });
    let message = container_status(&pod, "main")["state"]["waiting"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains(r#"subPath "sub""#) && message.contains("out of the volume"),
        "{message}"
    );
    // It ran once (the swap) and no second instance was created with the host's root mounted:
    // the CRI log of a second instance would be `main/1.log`.
    let logs = std::fs::read_dir(node.logs_dir())
        .map(|entries| entries.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default();
    let pod_logs = logs
        .iter()
        .find(|p| p.to_string_lossy().contains("_swapper-t-vol-subpath_"))
        .unwrap_or_else(|| panic!("no log directory of the pod in {logs:?}"));
    assert!(pod_logs.join("main/0.log").exists(), "the first run logged");
    assert!(
        !pod_logs.join("main/1.log").exists(),
        "a second instance was created"
    );
    node.remove_manifest("swapper.yaml");
}
