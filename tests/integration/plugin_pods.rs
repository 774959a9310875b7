//! Plugins on real pods: a probe plugin (probe-json-health) chosen by annotation drives
//! readiness; a faulty probe plugin (panics, endless loop, runaway allocation) only fails its
//! own probes; an admission plugin (admission-require-limits) refuses a pod with a reason;
//! a preStop plugin (hooks-drain) calls the pod's drain endpoint before SIGTERM.

use crate::harness::{
    condition, container_status, event_time, free_port, write_plugin_config, Node, NodeOptions,
};
use std::time::Duration;
use wasmlet_test_support::components;

/// A node serving `plugins` (YAML list items); the returned directory holds their config.
fn node_with_plugins(name: &str, plugins: &str) -> (Node, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = write_plugin_config(dir.path(), plugins);
    let node = Node::start_with(
        name,
        NodeOptions {
            extra_wasmlet: format!(
                "containerRestartBackOff: {{initialPeriod: 1s, maxPeriod: 4s, resetPeriod: 60s}}\npluginConfig: {}\n",
                config.display()
            ),
            ..Default::default()
        },
    );
    (node, dir)
}

fn plugin_report(node: &Node, name: &str) -> serde_json::Value {
    let report = node.get_json("/plugins");
    report["plugins"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == name).cloned())
        .unwrap_or_else(|| panic!("plugin {name} not in {report}"))
}

const JSON_SERVER: &str = r#"    command:
    - sh
    - -c
    - |
      mkdir -p /www
      echo '{"status": "ok"}' > /www/health
      (sleep 15; echo '{"status": "degraded"}' > /www/health) &
      exec httpd -f -p 8080 -h /www
    ports: [{containerPort: 8080}]
"#;

#[test]
fn probe_plugins_on_real_pods_and_a_faulty_one_contained() {
    let (mut node, _plugins) = node_with_plugins(
        "t-probe-plugin",
        &format!(
            "- name: json-health\n  world: probe-handler\n  path: {}\n\
             - name: faulty\n  world: probe-handler\n  path: {}\n  limits: {{memoryMiB: 16}}\n",
            components::PROBE_JSON_HEALTH.path().display(),
            components::GUEST_PROBE_FAULT.path().display()
        ),
    );
    node.write_manifest(
        "jh.yaml",
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: jh\n  annotations:\n    probe.wasmlet.dev/web.readiness: json-health\n    probe.wasmlet.dev/web.readiness.args: '{{\"port\": 8080, \"path\": \"/health\"}}'\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: web\n    image: docker.io/library/busybox:local\n{JSON_SERVER}    readinessProbe: {{periodSeconds: 1, failureThreshold: 1, tcpSocket: {{port: 8080}}}}\n"
        ),
    );
    for fault in ["panic", "loop", "alloc"] {
        node.write_manifest(
            &format!("{fault}.yaml"),
            &format!(
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {fault}\n  annotations:\n    probe.wasmlet.dev/main.readiness: faulty\n    probe.wasmlet.dev/main.readiness.args: '{{\"fault\": \"{fault}\"}}'\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: main\n    image: docker.io/library/busybox:local\n    command: [sh, -c, 'exec sleep 600']\n    readinessProbe: {{periodSeconds: 1, timeoutSeconds: 1, exec: {{command: ['true']}}}}\n"
            ),
        );
    }
    // The plugin reads the health document: Ready while it says "ok"...
    node.wait_for("Ready through the plugin", Duration::from_secs(30), |n| {
        n.pod("jh").filter(|p| condition(p, "Ready") == "True")
    });
    // ...and not Ready once it says "degraded", with the plugin's reason.
    node.wait_for("not Ready once degraded", Duration::from_secs(30), |n| {
        n.pod("jh").filter(|p| condition(p, "Ready") == "False")
    });
    let pod = node.pod("jh").unwrap();
    assert_eq!(container_status(&pod, "web")["restartCount"], 0);
    assert!(
        node.log()
            .contains(r#"status is \"degraded\", expected \"ok\""#)
            || node
                .log()
                .contains(r#"status is "degraded", expected "ok""#),
        "the plugin's message is logged"
    );
    assert!(
        plugin_report(&node, "json-health")["calls"]
            .as_u64()
            .unwrap()
            >= 2
    );

    // The faulty plugin faults on every call; its pods run, never ready, and nothing else
    // is touched.
    let faulty = node.wait_for("faults counted", Duration::from_secs(30), |n| {
        let report = plugin_report(n, "faulty");
        (report["faults"].as_u64()? >= 3).then_some(report)
    });
    assert!(faulty["lastFault"].is_string(), "{faulty}");
    for fault in ["panic", "loop", "alloc"] {
        let pod = node.pod(fault).unwrap();
        assert_eq!(pod["status"]["phase"], "Running", "{pod}");
        assert_eq!(container_status(&pod, "main")["ready"], false);
        assert_eq!(container_status(&pod, "main")["restartCount"], 0);
    }
    let log = node.log();
    assert!(
        log.contains("deadline") && (log.contains("trap") || log.contains("panic")),
        "faults are reported with their reason"
    );
    node.assert_running();
    // The node still serves and the healthy plugin still answers.
    let calls = plugin_report(&node, "json-health")["calls"]
        .as_u64()
        .unwrap();
    node.wait_for("json-health still called", Duration::from_secs(10), |n| {
        (plugin_report(n, "json-health")["calls"].as_u64()? > calls).then_some(())
    });
    let metrics = node.try_get("/metrics/probes").unwrap();
    assert!(
        metrics.contains("probe_type=\"Readiness\",result=\"failed\",container=\"main\",pod=\"panic-t-probe-plugin\""),
        "{metrics}"
    );
}

#[test]
fn admission_and_drain_plugins_on_real_pods() {
    let (node, _plugins) = node_with_plugins(
        "t-hook-plugins",
        &format!(
            "- name: require-limits\n  world: lifecycle-hooks\n  path: {}\n  config: {{namespaces: [prod]}}\n\
             - name: drain\n  world: lifecycle-hooks\n  path: {}\n  limits: {{deadlineMs: 5000}}\n  config: {{port: 8080, path: /cgi-bin/drain, waitMs: 1000, reserveMs: 2000, containers: [web]}}\n",
            components::ADMISSION_REQUIRE_LIMITS.path().display(),
            components::HOOKS_DRAIN.path().display()
        ),
    );
    let sleeper = |name: &str, namespace: &str, resources: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: main\n    image: docker.io/library/busybox:local\n    command: [sleep, '600']\n{resources}"
        )
    };
    node.write_manifest("nolimits.yaml", &sleeper("nolimits", "prod", ""));
    node.write_manifest(
        "limited.yaml",
        &sleeper(
            "limited",
            "prod",
            "    resources: {limits: {cpu: 100m, memory: 32Mi}}\n",
        ),
    );
    node.write_manifest("elsewhere.yaml", &sleeper("elsewhere", "default", ""));
    let refused = node.wait_phase("nolimits", "Failed", Duration::from_secs(30));
    assert_eq!(refused["status"]["reason"], "PluginAdmission", "{refused}");
    let message = refused["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("container \"main\" has no cpu and memory limits"),
        "{message}"
    );
    assert!(
        node.containers(Some("nolimits")).is_empty(),
        "a refused pod runs nothing"
    );
    node.wait_phase("limited", "Running", Duration::from_secs(30));
    node.wait_phase("elsewhere", "Running", Duration::from_secs(30));

    // The drain hook calls the pod's endpoint before SIGTERM.
    let shared = node.dir.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    node.write_manifest(
        "web.yaml",
        &format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: web}}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: web
    image: docker.io/library/busybox:local
    command:
    - sh
    - -c
    - |
      mkdir -p /www/cgi-bin
      printf '#!/bin/sh\necho "Content-Type: text/plain"\necho\necho draining\necho DRAIN $(date +%%s) >> /shared/events\n' > /www/cgi-bin/drain
      chmod +x /www/cgi-bin/drain
      trap 'echo TERM $(date +%s) >> /shared/events; exit 0' TERM
      httpd -f -p 8080 -h /www &
      echo UP >> /shared/events
      wait
    ports: [{{containerPort: 8080}}]
    volumeMounts: [{{name: shared, mountPath: /shared}}]
  volumes:
  - {{name: shared, hostPath: {{path: {}, type: Directory}}}}
"#,
            shared.display()
        ),
    );
    let events = shared.join("events");
    let web = node.wait_phase("web", "Running", Duration::from_secs(30));
    node.wait_for("the server to run", Duration::from_secs(30), |_| {
        std::fs::read_to_string(&events)
            .ok()
            .filter(|t| t.contains("UP"))
    });
    // "UP" is written as httpd starts in the background: wait until it answers, or the drain
    // request of a quick removal may find nothing listening yet.
    let ip = web["status"]["podIP"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    node.wait_for(
        "httpd to answer",
        Duration::from_secs(30),
        |_| match ureq::get(&format!("http://{ip}:8080/"))
            .timeout(Duration::from_secs(2))
            .call()
        {
            Ok(_) | Err(ureq::Error::Status(..)) => Some(()),
            Err(_) => None,
        },
    );
    node.remove_manifest("web.yaml");
    let text = node.wait_for("SIGTERM", Duration::from_secs(30), |_| {
        std::fs::read_to_string(&events)
            .ok()
            .filter(|t| t.contains("TERM"))
    });
    let time_of = |tag: &str| event_time(&text, tag);
    let (drained, term) = (time_of("DRAIN"), time_of("TERM"));
    assert!(
        term > drained,
        "drained, waited waitMs, then SIGTERM: {text:?}"
    );
    assert!(plugin_report(&node, "drain")["faults"] == 0);
}

/// A hostNetwork pod's plugin reaches the node's IP, and there only the ports the pod
/// declares: another port on the node, open and answering, is refused by the scope.
#[test]
fn a_host_network_pods_plugin_reaches_only_its_declared_ports_on_the_node() {
    let (node, _plugins) = node_with_plugins(
        "t-hostnet-plugin",
        &format!(
            "- name: reach\n  world: probe-handler\n  path: {}\n",
            components::GUEST_POD_ACCESS.path().display()
        ),
    );
    let (declared, undeclared) = (free_port(), free_port());
    node.write_manifest(
        "hostnet.yaml",
        &format!(
            r#"apiVersion: v1
kind: Pod
metadata:
  name: hostnet
  annotations:
    probe.wasmlet.dev/web.readiness: reach
    probe.wasmlet.dev/web.readiness.args: '{{"tcp": {declared}}}'
    probe.wasmlet.dev/side.readiness: reach
    probe.wasmlet.dev/side.readiness.args: '{{"tcp": {undeclared}}}'
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: docker.io/library/busybox:local
    command: [sh, -c, 'httpd -f -p {undeclared} & exec httpd -f -p {declared}']
    ports: [{{containerPort: {declared}}}]
    readinessProbe: {{periodSeconds: 1, exec: {{command: ['true']}}}}
  - name: side
    image: docker.io/library/busybox:local
    command: [sleep, '600']
    readinessProbe: {{periodSeconds: 1, exec: {{command: ['true']}}}}
"#
        ),
    );
    let pod = node.wait_for(
        "web ready through the plugin",
        Duration::from_secs(30),
        |n| {
            n.pod("hostnet")
                .filter(|p| container_status(p, "web")["ready"] == true)
        },
    );
    // The undeclared port is open on the node (the pod shares its network)...
    node.wait_for(
        "the undeclared port listens",
        Duration::from_secs(10),
        |_| std::net::TcpStream::connect(("127.0.0.1", undeclared)).ok(),
    );
    // ...and the plugin is refused it, before any connection is made.
    let refusal = format!("port {undeclared} is not declared by this pod");
    node.wait_for("the scope's refusal logged", Duration::from_secs(20), |n| {
        n.log().contains(&refusal).then_some(())
    });
    let pod = node.pod("hostnet").unwrap_or(pod);
    assert_eq!(container_status(&pod, "side")["ready"], false, "{pod}");
    assert_eq!(pod["status"]["podIP"], pod["status"]["hostIP"], "{pod}");
}
