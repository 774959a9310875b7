//! A pod changed in the API after the node admitted it (upstream's `UpdatePod`): labels and
//! annotations reach its downward API volume (and a label the environment names, the
//! container's next start), an `activeDeadlineSeconds` set on it fails it
//! with `DeadlineExceeded`, a new image replaces its container, and `kubectl debug` adds an
//! ephemeral container that runs in the target's PID namespace and can be attached to.

use crate::cluster::{
    assert_never_forbidden, busybox_pod, cluster, container_log, shared, status_of,
};
use crate::harness::NodeOptions;
use crate::kubelet_api::{lines_of, wait_line};
use std::time::Duration;
use wasmlet::cri::api;

const FOREVER: &str = "trap 'exit 0' TERM; while true; do sleep 1; done";

#[test]
fn labels_annotations_a_deadline_and_an_image_change_reach_a_running_pod() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-update");
    // A short sync period: the downward API volume is rewritten at the pod's next sync.
    let node = c.join(
        "c-update",
        NodeOptions {
            extra_kubelet: "syncFrequency: 5s\n".into(),
            ..NodeOptions::default()
        },
    );
    c.wait_node_ready(&node);
    c.apply(&format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: info
  namespace: {ns}
  labels: {{tier: web}}
  annotations: {{note: first}}
spec:
  nodeName: {node}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 2
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - {{path: labels, fieldRef: {{fieldPath: metadata.labels}}}}
      - {{path: note, fieldRef: {{fieldPath: "metadata.annotations['note']"}}}}
  containers:
  - name: main
    image: docker.io/library/busybox:local
    imagePullPolicy: IfNotPresent
    volumeMounts: [{{name: podinfo, mountPath: /etc/podinfo}}]
    env: [{{name: TIER, valueFrom: {{fieldRef: {{fieldPath: "metadata.labels['tier']"}}}}}}]
    command: [sh, -c, {FOREVER:?}]
"#,
        node = node.name
    ));
    c.apply(&busybox_pod(&ns, "deadline", &node.name, "", "", FOREVER));
    c.apply(&busybox_pod(&ns, "image", &node.name, "", "", FOREVER));
    let info = c.wait_pod_phase(&node, &ns, "info", "Running");
    c.wait_pod_phase(&node, &ns, "deadline", "Running");
    let before = c.wait_pod_phase(&node, &ns, "image", "Running");
    let before_id = status_of(&before, "containerStatuses", "main")
        .map(|s| s["containerID"].clone())
        .unwrap_or_default();

    // Labels and annotations changed on the running pod show in its downward API files.
    let uid = info["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let podinfo = node
        .dir
        .path()
        .join("root/pods")
        .join(&uid)
        .join("volumes/kubernetes.io~downward-api/podinfo");
    let read = |file: &str| std::fs::read_to_string(podinfo.join(file)).unwrap_or_default();
    assert_eq!(read("labels"), "tier=\"web\"");
    assert_eq!(read("note"), "first");
    c.kubectl_ok(&["-n", &ns, "label", "pod", "info", "tier=api", "--overwrite"]);
    c.kubectl_ok(&["-n", &ns, "label", "pod", "info", "added=yes"]);
    c.kubectl_ok(&[
        "-n",
        &ns,
        "annotate",
        "pod",
        "info",
        "note=second",
        "--overwrite",
    ]);
    c.wait_for(
        &node,
        "the new labels and annotation in the downward API volume",
        Duration::from_secs(30),
        || {
            (read("labels") == "added=\"yes\"\ntier=\"api\"" && read("note") == "second")
                .then_some(())
        },
    );

    // The environment is the container's from its start, as upstream: the running container
    // keeps the old label, and its next start (the shell exits on TERM and is restarted)
    // gets the new one.
    let tier = || {
        let out = c.kubectl(&["-n", &ns, "exec", "info", "--", "sh", "-c", "echo $TIER"]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    assert_eq!(tier().as_deref(), Some("web"));
    c.kubectl_ok(&["-n", &ns, "exec", "info", "--", "kill", "1"]);
    c.wait_for(
        &node,
        "the restarted container to see the new label",
        Duration::from_secs(60),
        || {
            let restarted = c.pod(&ns, "info").is_some_and(|p| {
                status_of(&p, "containerStatuses", "main")
                    .is_some_and(|s| s["restartCount"] == 1 && s["state"]["running"].is_object())
            });
            (restarted && tier().as_deref() == Some("api")).then_some(())
        },
    );

    // activeDeadlineSeconds set on a pod that has run longer: it fails at once.
    c.kubectl_ok(&[
        "-n",
        &ns,
        "patch",
        "pod",
        "deadline",
        "-p",
        r#"{"spec":{"activeDeadlineSeconds":1}}"#,
    ]);
    let failed = c.wait_pod_phase(&node, &ns, "deadline", "Failed");
    assert_eq!(
        failed["status"]["reason"], "DeadlineExceeded",
        "{}",
        failed["status"]
    );
    c.wait_for(
        &node,
        "the deadline pod's container to stop",
        Duration::from_secs(30),
        || {
            node.containers_named(Some("deadline"))
                .iter()
                .all(|c| c.state != api::ContainerState::ContainerRunning as i32)
                .then_some(())
        },
    );

    // A new image: the container is replaced and runs the new image, once.
    c.kubectl_ok(&[
        "-n",
        &ns,
        "set",
        "image",
        "pod/image",
        "main=docker.io/library/wasmlet-test:local",
    ]);
    let replaced = c.wait_for(
        &node,
        "the container to run the new image",
        Duration::from_secs(60),
        || {
            c.pod(&ns, "image").filter(|p| {
                status_of(p, "containerStatuses", "main").is_some_and(|s| {
                    s["image"]
                        .as_str()
                        .unwrap_or("")
                        .contains("wasmlet-test:local")
                        && s["state"]["running"].is_object()
                })
            })
        },
    );
    let after = status_of(&replaced, "containerStatuses", "main")
        .cloned()
        .unwrap_or_default();
    assert_ne!(after["containerID"], before_id, "a new container");
    assert_eq!(after["restartCount"], 1, "{after}");
    assert_eq!(replaced["status"]["phase"], "Running");
    assert_never_forbidden(&node);
}

#[test]
fn kubectl_debug_adds_an_ephemeral_container_in_the_target_pid_namespace() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-debug");
    let node = c.join("c-debug", NodeOptions::default());
    c.wait_node_ready(&node);
    c.apply(&busybox_pod(
        &ns,
        "target",
        &node.name,
        "",
        "",
        "trap 'exit 0' TERM; while true; do sleep 7; done",
    ));
    c.wait_pod_phase(&node, &ns, "target", "Running");
    c.kubectl_ok(&[
        "-n",
        &ns,
        "debug",
        "target",
        "--image=docker.io/library/busybox:local",
        "--image-pull-policy=IfNotPresent",
        "--target=main",
        "-c",
        "debugger",
        "--",
        "sh",
        "-c",
        "ps; while true; do echo tick; sleep 1; done",
    ]);
    let pod = c.wait_for(
        &node,
        "the ephemeral container running in ephemeralContainerStatuses",
        Duration::from_secs(60),
        || {
            c.pod(&ns, "target").filter(|p| {
                status_of(p, "ephemeralContainerStatuses", "debugger")
                    .is_some_and(|s| s["state"]["running"].is_object())
            })
        },
    );
    let debugger = status_of(&pod, "ephemeralContainerStatuses", "debugger")
        .cloned()
        .unwrap_or_default();
    assert!(
        debugger["containerID"]
            .as_str()
            .unwrap_or("")
            .starts_with("containerd://"),
        "{debugger}"
    );
    // The target's process is visible: the debugger shares its PID namespace.
    let log = c.wait_for(
        &node,
        "the debugger's ps output",
        Duration::from_secs(30),
        || {
            let log = container_log(&node, &ns, "target", "debugger");
            log.contains("tick").then_some(log)
        },
    );
    assert!(log.contains("sleep 7"), "ps in the debugger:\n{log}");
    // Attachable: kubectl attach streams its output.
    let mut attach = c.kubectl_spawn(&["-n", &ns, "attach", "target", "-c", "debugger"]);
    let lines = lines_of(attach.stdout.take().expect("attach stdout"));
    wait_line(&lines, "tick", Duration::from_secs(30));
    let _ = attach.kill();
    let _ = attach.wait();
    // The pod's own container never restarted for it.
    let main = status_of(&pod, "containerStatuses", "main")
        .cloned()
        .unwrap_or_default();
    assert_eq!(main["restartCount"], 0, "{main}");
    assert_never_forbidden(&node);
}
