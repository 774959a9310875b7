use super::*;
use crate::source::manifest;
use std::path::Path;

fn pod(text: &str) -> Pod {
    manifest::load(text, Path::new("/m/p.yaml"), "node").unwrap()
}

fn probes_of(text: &str) -> Vec<ProbeConfig> {
    let pod = pod(text);
    let container = pod.spec.as_ref().unwrap().containers[0].clone();
    container_probes(&pod, &container)
}

const HEAD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n";

#[test]
fn defaults_and_handlers_as_upstream() {
    let probes = probes_of(&format!(
        "{HEAD}spec:\n  containers:\n  - name: c\n    image: busybox:local\n    ports: [{{name: web, containerPort: 8080}}]\n\
         \x20   livenessProbe: {{exec: {{command: [cat, /tmp/healthy]}}}}\n\
         \x20   readinessProbe: {{httpGet: {{port: web, path: healthz, httpHeaders: [{{name: X-A, value: b}}]}}, periodSeconds: 2, timeoutSeconds: 3, successThreshold: 2, failureThreshold: 5, initialDelaySeconds: 4}}\n\
         \x20   startupProbe: {{tcpSocket: {{port: 8080}}, terminationGracePeriodSeconds: 7}}\n"
    ));
    assert_eq!(probes.len(), 3);
    let by = |kind| probes.iter().find(|p| p.kind == kind).unwrap();
    let live = by(ProbeKind::Liveness);
    assert_eq!(live.period, Duration::from_secs(10));
    assert_eq!(live.timeout, Duration::from_secs(1));
    assert_eq!((live.success_threshold, live.failure_threshold), (1, 3));
    assert_eq!(live.initial_delay, Duration::ZERO);
    assert_eq!(
        live.handler,
        Handler::Exec {
            command: vec!["cat".into(), "/tmp/healthy".into()]
        }
    );
    let ready = by(ProbeKind::Readiness);
    assert_eq!(ready.period, Duration::from_secs(2));
    assert_eq!(ready.timeout, Duration::from_secs(3));
    assert_eq!((ready.success_threshold, ready.failure_threshold), (2, 5));
    assert_eq!(ready.initial_delay, Duration::from_secs(4));
    match &ready.handler {
        Handler::Http(get) => {
            assert_eq!(get.port, 8080, "named port resolved");
            assert_eq!(get.url("10.1.2.3"), "http://10.1.2.3:8080/healthz");
            assert_eq!(get.headers, vec![("X-A".to_string(), "b".to_string())]);
        }
        other => panic!("{other:?}"),
    }
    let startup = by(ProbeKind::Startup);
    assert_eq!(
        startup.handler,
        Handler::Tcp {
            host: None,
            port: 8080
        }
    );
    assert_eq!(startup.termination_grace, Some(Duration::from_secs(7)));
}

#[test]
fn unknown_port_name_is_an_error_naming_container_and_field() {
    let probes = probes_of(&format!(
        "{HEAD}spec:\n  containers:\n  - name: c\n    image: busybox:local\n    livenessProbe: {{tcpSocket: {{port: nope}}}}\n"
    ));
    match &probes[0].handler {
        Handler::Invalid(message) => {
            assert!(message.contains("\"c\""), "{message}");
            assert!(
                message.contains("livenessProbe.tcpSocket.port"),
                "{message}"
            );
            assert!(message.contains("nope"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn annotation_hands_a_probe_to_a_plugin() {
    let probes = probes_of(&format!(
        "{HEAD}  annotations:\n    probe.wasmlet.dev/c.readiness: json-health\n    probe.wasmlet.dev/c.readiness.args: '{{\"port\": 80}}'\n    probe.wasmlet.dev/c.liveness: other\n\
         spec:\n  containers:\n  - name: c\n    image: busybox:local\n    readinessProbe: {{tcpSocket: {{port: 80}}, periodSeconds: 1}}\n"
    ));
    let ready = probes
        .iter()
        .find(|p| p.kind == ProbeKind::Readiness)
        .unwrap();
    assert_eq!(
        ready.period,
        Duration::from_secs(1),
        "the spec's timing stays"
    );
    assert_eq!(
        ready.handler,
        Handler::Plugin {
            plugin: "json-health".into(),
            args: "{\"port\": 80}".into()
        }
    );
    let live = probes
        .iter()
        .find(|p| p.kind == ProbeKind::Liveness)
        .unwrap();
    assert_eq!(live.period, Duration::from_secs(10), "upstream defaults");
    assert_eq!(
        live.handler,
        Handler::Plugin {
            plugin: "other".into(),
            args: "{}".into()
        }
    );
}
