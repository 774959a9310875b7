//! Volumes and environment that come from the API server, and a workload's own API access.

use crate::cluster::{assert_never_forbidden, cluster, container_log, shared};
use crate::harness::NodeOptions;
use std::time::Duration;

#[test]
fn config_map_and_secret_volumes_and_env_follow_the_objects() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-objects");
    // A short sync period: an update the watch saw shows at the pod's next sync.
    let node = c.join(
        "c-objects",
        NodeOptions {
            extra_kubelet: "syncFrequency: 5s\n".into(),
            ..NodeOptions::default()
        },
    );
    c.wait_node_ready(&node);
    c.apply(&format!(
        r#"apiVersion: v1
kind: ConfigMap
metadata: {{name: settings, namespace: {ns}}}
data: {{greeting: hello, color: blue}}
---
apiVersion: v1
kind: Secret
metadata: {{name: creds, namespace: {ns}}}
stringData: {{password: s3cret}}
---
apiVersion: v1
kind: Pod
metadata: {{name: reader, namespace: {ns}}}
spec:
  nodeName: {node}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 2
  volumes:
  - name: settings
    configMap: {{name: settings}}
  - name: creds
    secret: {{secretName: creds, defaultMode: 0400, items: [{{key: password, path: db/password}}]}}
  - name: absent
    configMap: {{name: not-there, optional: true}}
  containers:
  - name: main
    image: docker.io/library/busybox:local
    imagePullPolicy: IfNotPresent
    env:
    - name: GREETING
      valueFrom: {{configMapKeyRef: {{name: settings, key: greeting}}}}
    - name: PASSWORD
      valueFrom: {{secretKeyRef: {{name: creds, key: password}}}}
    envFrom:
    - prefix: CFG_
      configMapRef: {{name: settings}}
    volumeMounts:
    - {{name: settings, mountPath: /etc/settings}}
    - {{name: creds, mountPath: /etc/creds}}
    - {{name: absent, mountPath: /etc/absent}}
    command: [sh, -c, 'echo "$GREETING $PASSWORD $CFG_color"; sleep 3600']
"#,
        node = node.name
    ));
    c.wait_pod_phase(&node, &ns, "reader", "Running");
    // `kubectl exec` and `kubectl logs` need the authenticated kubelet port (another issue):
    // the test reads the node's volume directories and the CRI log files instead.
    let pod_uid = c
        .pod(&ns, "reader")
        .map(|p| p["metadata"]["uid"].as_str().unwrap_or("").to_string())
        .unwrap_or_default();
    let volume_dir = node
        .dir
        .path()
        .join("root/pods")
        .join(&pod_uid)
        .join("volumes");
    let read = |path: &str| std::fs::read_to_string(volume_dir.join(path)).unwrap_or_default();
    assert_eq!(read("kubernetes.io~configmap/settings/greeting"), "hello");
    assert_eq!(read("kubernetes.io~secret/creds/db/password"), "s3cret");
    let log = c.wait_for(
        &node,
        "the container's output",
        Duration::from_secs(30),
        || {
            let text = container_log(&node, &ns, "reader", "main");
            (!text.is_empty()).then_some(text)
        },
    );
    assert_eq!(log, "hello s3cret blue");

    // An update of the configMap reaches the volume of the running pod.
    let patch = |body: &str| {
        c.kubectl_ok(&["-n", &ns, "patch", "configmap", "settings", "-p", body]);
    };
    patch(r#"{"data":{"greeting":"bonjour"}}"#);
    c.wait_for(
        &node,
        "the updated configMap in the volume",
        Duration::from_secs(120),
        || (read("kubernetes.io~configmap/settings/greeting") == "bonjour").then_some(()),
    );
    // A key deleted from the configMap leaves the volume. Within 30 s of the patch: the
    // configMap was read at most a few seconds ago (the update above), so a cache of GET
    // answers (strategy `Cache`, 60 s) would still serve the old object; the watch sees it.
    patch(r#"{"data":{"color":null}}"#);
    c.wait_for(
        &node,
        "the deleted key gone from the volume (by the watch, before a 60 s cache could expire)",
        Duration::from_secs(30),
        || {
            (!volume_dir
                .join("kubernetes.io~configmap/settings/color")
                .exists())
            .then_some(())
        },
    );
    assert_eq!(read("kubernetes.io~configmap/settings/greeting"), "bonjour");
    assert_never_forbidden(&node);
}

#[test]
fn a_missing_config_map_keeps_the_pod_waiting_until_it_exists() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-missing");
    let node = c.join("c-missing", NodeOptions::default());
    c.wait_node_ready(&node);
    c.apply(&format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: waits, namespace: {ns}}}
spec:
  nodeName: {node}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 2
  volumes: [{{name: late, configMap: {{name: late}}}}]
  containers:
  - name: main
    image: docker.io/library/busybox:local
    imagePullPolicy: IfNotPresent
    volumeMounts: [{{name: late, mountPath: /late}}]
    command: [sh, -c, 'cat /late/key; sleep 3600']
"#,
        node = node.name
    ));
    c.wait_for(
        &node,
        "a FailedMount event",
        Duration::from_secs(60),
        || {
            c.events(&ns).into_iter().find(|e| {
                e["reason"] == "FailedMount"
                    && e["message"]
                        .as_str()
                        .unwrap_or("")
                        .contains(r#"configmap "late" not found"#)
            })
        },
    );
    let pod = c.pod(&ns, "waits").unwrap_or_default();
    assert_eq!(pod["status"]["phase"], "Pending");
    c.apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: late, namespace: {ns}}}\ndata: {{key: value}}\n"
    ));
    c.wait_pod_phase(&node, &ns, "waits", "Running");
    assert_never_forbidden(&node);
}

#[test]
fn a_pod_calls_the_api_with_its_projected_token_through_the_kubernetes_service() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-token");
    let node = c.join("c-token", NodeOptions::default());
    c.wait_node_ready(&node);
    c.wait_until(
        "kube-root-ca.crt in the namespace",
        Duration::from_secs(60),
        || c.get(&["-n", &ns, "configmap", "kube-root-ca.crt"]),
    );
    c.apply(&format!(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: pod-reader, namespace: {ns}}}
rules: [{{apiGroups: [""], resources: [pods], verbs: [list]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: pod-reader, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}}
subjects: [{{kind: ServiceAccount, name: default, namespace: {ns}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: client, namespace: {ns}}}
spec:
  nodeName: {node}
  restartPolicy: Never
  containers:
  - name: main
    image: docker.io/library/wasmlet-test:local
    imagePullPolicy: IfNotPresent
    command: [/usr/local/bin/api_client]
"#,
        node = node.name
    ));
    let pod = c.wait_for(
        &node,
        "the client to finish",
        Duration::from_secs(90),
        || {
            c.pod(&ns, "client")
                .filter(|p| p["status"]["phase"] == "Succeeded" || p["status"]["phase"] == "Failed")
        },
    );
    let log = container_log(&node, &ns, "client", "main");
    assert_eq!(
        pod["status"]["phase"], "Succeeded",
        "api_client said:\n{log}"
    );
    assert!(log.starts_with("200"), "{log}");
    assert!(
        log.contains("\"client\""),
        "the pod sees itself in the list:\n{log}"
    );
    // The token is bound to the pod and was asked for by the node.
    let volumes = pod["spec"]["volumes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(volumes.iter().any(|v| v["name"]
        .as_str()
        .unwrap_or("")
        .starts_with("kube-api-access-")));
    assert_never_forbidden(&node);
}

/// Whether the API server authenticates `token` as a token of pod `namespace/pod`.
fn token_of_pod(c: &crate::cluster::Cluster, token: &str, namespace: &str, pod: &str) -> bool {
    let review = serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token},
    });
    let out = c.kubectl_stdin(
        &["create", "-f", "-", "-o", "json"],
        Some(&review.to_string()),
    );
    let Ok(answer) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
        return false;
    };
    let status = &answer["status"];
    status["authenticated"] == true
        && status["user"]["username"] == format!("system:serviceaccount:{namespace}:default")
        && status["user"]["extra"]["authentication.kubernetes.io/pod-name"][0] == pod
}

/// Upstream's token manager: a projected token is replaced once 80 % of its life has passed
/// (at 480 s of the shortest life the API allows, 600 s), not at every sync, and the new one
/// is valid and bound to the pod.
#[test]
fn a_projected_token_is_refreshed_at_80_percent_of_its_life() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-refresh");
    let node = c.join(
        "c-refresh",
        NodeOptions {
            extra_kubelet: "syncFrequency: 10s\n".into(),
            ..NodeOptions::default()
        },
    );
    c.wait_node_ready(&node);
    c.apply(&format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: holder, namespace: {ns}}}
spec:
  nodeName: {node}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 2
  volumes:
  - name: token
    projected:
      sources:
      - serviceAccountToken: {{path: token, expirationSeconds: 600}}
  containers:
  - name: main
    image: docker.io/library/busybox:local
    imagePullPolicy: IfNotPresent
    volumeMounts: [{{name: token, mountPath: /var/run/token}}]
    command: [sh, -c, 'sleep 3600']
"#,
        node = node.name
    ));
    let pod = c.wait_pod_phase(&node, &ns, "holder", "Running");
    let file = node
        .dir
        .path()
        .join("root/pods")
        .join(pod["metadata"]["uid"].as_str().unwrap_or(""))
        .join("volumes/kubernetes.io~projected/token/token");
    let read = || std::fs::read_to_string(&file).unwrap_or_default();
    let first = read();
    let issued = std::time::Instant::now();
    assert!(token_of_pod(c, &first, &ns, "holder"), "the first token");
    // Synced every 10 s, the pod keeps its token while it is fresh.
    std::thread::sleep(Duration::from_secs(60));
    assert_eq!(read(), first, "not replaced at every sync");
    let second = c.wait_for(
        &node,
        "the token to be refreshed before it expires",
        Duration::from_secs(600 - 60 - 30),
        || Some(read()).filter(|t| !t.is_empty() && *t != first),
    );
    assert!(
        issued.elapsed() >= Duration::from_secs(400),
        "refreshed after {:?}, before 80 % of its life",
        issued.elapsed()
    );
    assert!(token_of_pod(c, &second, &ns, "holder"), "the new token");
    assert_never_forbidden(&node);
}
