//! What every part of the node asks of a pod spec: its full name for logs, its declared
//! ports, its grace period. A leaf, so that workers, hooks, probes, admission and eviction
//! share it without depending on each other.

use k8s_openapi::api::core::v1::{
    Container, EphemeralContainer, LifecycleHandler, Pod, PodCondition, Probe,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Upstream's floor on the grace period given to a container (`minimumGracePeriodInSeconds`).
pub const MINIMUM_GRACE: Duration = Duration::from_secs(2);

/// What is left of `grace` after `spent`, in whole seconds as upstream counts both (CRI takes
/// seconds, and a hook of a few milliseconds must not cost a second).
pub fn whole_seconds_left(grace: Duration, spent: Duration) -> Duration {
    Duration::from_secs(grace.as_secs().saturating_sub(spent.as_secs()))
}

/// Waits for `turn` (the containers a container outlives exiting) at most `limit`; returns how
/// long it waited. A turn already come is taken even with no time left (the future is polled
/// before the limit is checked).
pub async fn wait_for_turn(turn: impl Future<Output = ()>, limit: Duration) -> Duration {
    let started = Instant::now();
    let _ = tokio::time::timeout(limit, turn).await;
    started.elapsed()
}

/// `<name>_<namespace>`, as upstream names pods in logs.
pub fn full_name(pod: &Pod) -> String {
    format!(
        "{}_{}",
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.namespace.as_deref().unwrap_or("")
    )
}

/// The pod's UID ("" before the source gave it one).
pub fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or("")
}

/// An ephemeral container as the container it runs as: the two share every field but the
/// target (`targetContainerName`), so the conversion goes through their common JSON form.
/// `None` only if the two types ever stop sharing that form.
pub fn ephemeral_as_container(ephemeral: &EphemeralContainer) -> Option<Container> {
    let mut value = serde_json::to_value(ephemeral).ok()?;
    if let Some(fields) = value.as_object_mut() {
        fields.remove("targetContainerName");
    }
    serde_json::from_value(value).ok()
}

/// Whether an init container is a sidecar (`restartPolicy: Always`, KEP-753): it keeps
/// running beside the app containers and is restarted whenever it exits.
pub fn is_sidecar(container: &Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

/// The containers that run for as long as the pod does: its sidecars in the order declared,
/// then its app containers. They are what probes watch, what an in-place resize may change
/// (upstream's `IsResizableContainer`), what may hold host ports, and what must all run
/// before a pod's start is complete.
pub fn sidecars_and_app_containers(pod: &Pod) -> impl Iterator<Item = &Container> {
    pod.spec.iter().flat_map(|spec| {
        let sidecars = spec
            .init_containers
            .iter()
            .flatten()
            .filter(|c| is_sidecar(c));
        sidecars.chain(&spec.containers)
    })
}

/// Each readiness gate's condition type with the condition of that type in the pod's status,
/// if there is one: other controllers write them, and the pod's Ready condition follows them.
pub fn readiness_gates(pod: &Pod) -> impl Iterator<Item = (&str, Option<&PodCondition>)> {
    let conditions = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    pod.spec
        .iter()
        .flat_map(|s| s.readiness_gates.iter().flatten())
        .map(move |gate| {
            let kind = gate.condition_type.as_str();
            (kind, conditions.iter().find(|c| c.type_ == kind))
        })
}

/// The names of every container the pod declares: init, app and ephemeral.
pub fn container_names(pod: &Pod) -> impl Iterator<Item = &str> {
    pod.spec.iter().flat_map(|spec| {
        let init = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| c.name.as_str());
        let app = spec.containers.iter().map(|c| c.name.as_str());
        let ephemeral = spec
            .ephemeral_containers
            .iter()
            .flatten()
            .map(|c| c.name.as_str());
        init.chain(app).chain(ephemeral)
    })
}

/// Whether the pod runs in the node's network namespace.
pub fn host_network(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false)
}

/// `spec.restartPolicy` (`Always` when unset, the API's default).
pub fn restart_policy(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always")
}

/// `terminationGracePeriodSeconds` (30 s when unset), floored at [`MINIMUM_GRACE`].
pub fn grace_period(pod: &Pod) -> Duration {
    let seconds = pod
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
        .unwrap_or(30);
    Duration::from_secs(seconds.max(0) as u64).max(MINIMUM_GRACE)
}

/// The ports `pod` declares, sorted and deduplicated: its containers' `ports` (app and init
/// containers) and the numeric ports its own probes (`httpGet`, `tcpSocket`, `grpc`) and
/// lifecycle handlers (`httpGet`, `tcpSocket`) name — named ports resolve to container ports,
/// already listed. This is all a scoped plugin's `tcp-connect` and `http-get` may reach.
pub fn declared_ports(pod: &Pod) -> Vec<u16> {
    let Some(spec) = &pod.spec else {
        return Vec::new();
    };
    let containers = || {
        spec.containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
    };
    let numeric = |port: &IntOrString| match port {
        IntOrString::Int(n) => u16::try_from(*n).ok(),
        IntOrString::String(_) => None,
    };
    let probe_ports = |probe: &Probe| {
        [
            probe.http_get.as_ref().and_then(|h| numeric(&h.port)),
            probe.tcp_socket.as_ref().and_then(|t| numeric(&t.port)),
            probe.grpc.as_ref().and_then(|g| u16::try_from(g.port).ok()),
        ]
    };
    let handler_ports = |handler: &LifecycleHandler| {
        [
            handler.http_get.as_ref().and_then(|h| numeric(&h.port)),
            handler.tcp_socket.as_ref().and_then(|t| numeric(&t.port)),
        ]
    };
    let mut ports: Vec<u16> = containers()
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| u16::try_from(p.container_port).ok())
        .chain(containers().flat_map(|c| {
            [&c.liveness_probe, &c.readiness_probe, &c.startup_probe]
                .into_iter()
                .flatten()
                .flat_map(&probe_ports)
                .chain(c.lifecycle.iter().flat_map(|l| {
                    [&l.post_start, &l.pre_stop]
                        .into_iter()
                        .flatten()
                        .flat_map(&handler_ports)
                }))
                .flatten()
        }))
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// `<podLogsDir>/<namespace>_<name>_<uid>`, upstream's layout.
pub fn log_directory(pod_logs_dir: &Path, pod: &Pod) -> PathBuf {
    let meta = &pod.metadata;
    log_directory_of(
        pod_logs_dir,
        meta.namespace.as_deref().unwrap_or("default"),
        meta.name.as_deref().unwrap_or(""),
        meta.uid.as_deref().unwrap_or(""),
    )
}

/// [`log_directory`] from the names the runtime's sandbox carries.
pub fn log_directory_of(pod_logs_dir: &Path, namespace: &str, name: &str, uid: &str) -> PathBuf {
    pod_logs_dir.join(format!("{namespace}_{name}_{uid}"))
}

/// Whether the pod's published phase is Succeeded or Failed: it runs nothing any more.
pub fn is_terminal(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded") | Some("Failed"))
}

/// A pod from a file or HTTP source rather than the API server (upstream's `IsStaticPod`).
pub fn is_static(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubernetes.io/config.source"))
        .is_some_and(|source| source != "api")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_ports_are_container_probe_and_handler_ports() {
        let pod: Pod = wasmlet_plugin_host::yaml::from_str(
            r#"
metadata: {name: p}
spec:
  initContainers:
  - {name: init, image: i, ports: [{containerPort: 9000}]}
  containers:
  - name: web
    image: i
    ports: [{containerPort: 8080, name: http}, {containerPort: 70000}]
    livenessProbe: {httpGet: {port: http, path: /}}
    readinessProbe: {tcpSocket: {port: 8081}}
    startupProbe: {grpc: {port: 8082}}
    lifecycle:
      postStart: {httpGet: {port: 8083}}
      preStop: {tcpSocket: {port: 8080}}
"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(declared_ports(&pod), vec![8080, 8081, 8082, 8083, 9000]);
        assert!(declared_ports(&Pod::default()).is_empty());
    }
}
