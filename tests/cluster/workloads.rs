//! Workloads through the scheduler and the ReplicaSet controller: a Deployment placed on the
//! wasmlet node serves HTTP, rolls out to a new image, and scales to zero.

use crate::cluster::{assert_never_forbidden, cluster, shared, Cluster};
use crate::harness::{Node, NodeOptions};
use serde_json::Value;
use std::io::{Read, Write};
use std::time::Duration;

/// The Deployment `web`, pinned to `node`, serving `/www/index.html` (holding `version`)
/// on port 8080 from `image`.
fn deployment(namespace: &str, node: &str, image: &str, version: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {namespace}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  strategy: {{rollingUpdate: {{maxUnavailable: 1, maxSurge: 1}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      nodeSelector: {{kubernetes.io/hostname: {node}}}
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 2
      containers:
      - name: httpd
        image: {image}
        imagePullPolicy: IfNotPresent
        command: [sh, -c, 'mkdir -p /www && echo {version} > /www/index.html && exec httpd -f -p 8080 -h /www']
        readinessProbe:
          httpGet: {{path: /, port: 8080}}
          periodSeconds: 1
"#
    )
}

/// The pods of the Deployment in the API, as (name, pod IP, image).
fn web_pods(c: &Cluster, namespace: &str) -> Vec<(String, String, String)> {
    let list = c
        .get(&["-n", namespace, "pods", "-l", "app=web"])
        .unwrap_or(Value::Null);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (
                text(&p["metadata"]["name"]),
                text(&p["status"]["podIP"]),
                text(&p["spec"]["containers"][0]["image"]),
            )
        })
        .collect()
}

/// The body of `GET /` on `ip:8080`, or `None` when it does not answer.
fn http_body(ip: &str) -> Option<String> {
    let address = format!("{ip}:8080").parse().ok()?;
    let mut stream = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET / HTTP/1.0\r\nHost: {ip}\r\n\r\n").ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let (head, body) = reply.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.").then(|| body.trim().to_string())
}

/// Waits until the Deployment has `replicas` available pods, all of `image`, each answering
/// with `version`; returns their names.
fn wait_serving(
    c: &Cluster,
    node: &Node,
    namespace: &str,
    image: &str,
    version: &str,
) -> Vec<String> {
    c.wait_for(
        node,
        &format!("2 pods of {image} serving {version}"),
        Duration::from_secs(180),
        || {
            let deploy = c.get(&["-n", namespace, "deployment", "web"])?;
            let status = &deploy["status"];
            let settled = status["availableReplicas"] == 2
                && status["updatedReplicas"] == 2
                && status["replicas"] == 2;
            let pods = web_pods(c, namespace);
            let serving = pods.len() == 2
                && pods
                    .iter()
                    .all(|(_, ip, img)| img == image && http_body(ip).as_deref() == Some(version));
            (settled && serving).then(|| pods.into_iter().map(|(name, _, _)| name).collect())
        },
    )
}

#[test]
fn a_deployment_is_scheduled_serves_rolls_out_and_scales_to_zero() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-deploy");
    let node = c.join("c-deploy", NodeOptions::default());
    c.wait_node_ready(&node);
    let first_image = "docker.io/library/busybox:local";
    c.apply(&deployment(&ns, &node.name, first_image, "v1"));
    let first = wait_serving(c, &node, &ns, first_image, "v1");
    assert!(node.containers_named(None).len() >= 2);

    // A rollout to another image replaces both pods.
    let second_image = "docker.io/library/wasmlet-test:local";
    c.apply(&deployment(&ns, &node.name, second_image, "v2"));
    let second = wait_serving(c, &node, &ns, second_image, "v2");
    assert!(
        second.iter().all(|name| !first.contains(name)),
        "new pods: {first:?} -> {second:?}"
    );

    // Scaled to zero, the pods and their containers go.
    c.kubectl_ok(&["-n", &ns, "scale", "deployment", "web", "--replicas=0"]);
    c.wait_for(
        &node,
        "no pods of the Deployment",
        Duration::from_secs(120),
        || web_pods(c, &ns).is_empty().then_some(()),
    );
    c.wait_for(
        &node,
        "no containers of its pods",
        Duration::from_secs(60),
        || {
            second
                .iter()
                .chain(&first)
                .all(|name| node.containers_named(Some(name)).is_empty())
                .then_some(())
        },
    );
    assert_never_forbidden(&node);
}
