//! Pod spec to CRI configs, as `kuberuntime_sandbox.go` and `kuberuntime_container.go` build
//! them: metadata and labels that identify the pod, namespaces, cgroup parent by QoS,
//! resources, security context, ports, DNS ([`dns`]), environment and the log location.

use super::env;
use super::linux_resources::linux_resources;
use crate::cri::{api, labels};
use crate::resources::{self, QuantityError};
use k8s_openapi::api::core::v1::{Container, Pod, SecurityContext};
use std::collections::HashMap;
use std::path::PathBuf;

/// Why a pod spec cannot be turned into a CRI config: the container waits with
/// `CreateContainerConfigError` (or the sync fails), with this text as the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The pod has no `spec` (a source should have refused it).
    #[error("pod has no spec")]
    NoSpec,
    /// A port's `protocol` is not TCP, UDP or SCTP.
    #[error("unknown port protocol {protocol:?}")]
    UnknownProtocol {
        /// The protocol as written.
        protocol: String,
    },
    /// A request or limit is not a valid quantity.
    #[error(transparent)]
    Resources(#[from] QuantityError),
}

mod dns;

pub use dns::{parse_resolv_conf, pod_dns, read_host_dns, DnsContext, HostDns};

/// Node-wide facts every config needs.
#[derive(Debug, Clone)]
pub struct NodeContext {
    /// The node's name: the label that marks the runtime's objects as this node's.
    pub node_name: String,
    /// The node's IP, for `status.hostIP` and host-network pods.
    pub node_ip: String,
    /// Where container logs go (`podLogsDir`), one directory per pod as upstream lays it out.
    pub pod_logs_dir: PathBuf,
    /// The machine's memory, which a Burstable container's OOM score is scaled against.
    pub machine_memory_bytes: i64,
    /// CPU capacity less the reservations (upstream's `GetNodeAllocatableAbsolute`), in
    /// millicores: no pod may be resized to ask for more.
    pub allocatable_cpu_millis: i64,
    /// Memory capacity less the reservations, in bytes: no pod may be resized to ask for more.
    pub allocatable_memory_bytes: i64,
    /// `--root-dir`: pod volumes live under `<root-dir>/pods/<uid>`.
    pub root_dir: PathBuf,
    /// `clusterDNS`, `clusterDomain` and the host resolver config, for the sandbox's DNS.
    pub dns: DnsContext,
}

/// The labels that tie a sandbox to its pod and node.
pub fn pod_labels(pod: &Pod, node_name: &str) -> HashMap<String, String> {
    let meta = &pod.metadata;
    let mut out: HashMap<String, String> = meta
        .labels
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.insert(
        labels::POD_NAME.into(),
        meta.name.clone().unwrap_or_default(),
    );
    out.insert(
        labels::POD_NAMESPACE.into(),
        meta.namespace.clone().unwrap_or_default(),
    );
    out.insert(labels::POD_UID.into(), meta.uid.clone().unwrap_or_default());
    out.insert(labels::NODE.into(), node_name.into());
    out
}

fn host_network(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false)
}

fn namespace_options(pod: &Pod) -> api::NamespaceOption {
    use api::NamespaceMode::{Container, Node, Pod as Shared};
    let spec = pod.spec.as_ref();
    let flag = |get: fn(&k8s_openapi::api::core::v1::PodSpec) -> Option<bool>| {
        spec.and_then(get).unwrap_or(false)
    };
    let network = if flag(|s| s.host_network) {
        Node
    } else {
        Shared
    };
    let pid = match (flag(|s| s.host_pid), flag(|s| s.share_process_namespace)) {
        (true, _) => Node,
        (false, true) => Shared,
        (false, false) => Container,
    };
    let ipc = if flag(|s| s.host_ipc) { Node } else { Shared };
    api::NamespaceOption {
        network: network as i32,
        pid: pid as i32,
        ipc: ipc as i32,
        ..Default::default()
    }
}

/// The sandbox config; `attempt` counts sandboxes created for this pod before.
pub fn sandbox_config(
    pod: &Pod,
    node: &NodeContext,
    attempt: u32,
) -> Result<api::PodSandboxConfig, ConfigError> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref().ok_or(ConfigError::NoSpec)?;
    let uid = meta.uid.clone().unwrap_or_default();
    let hostname = if host_network(pod) {
        // runc refuses to set a hostname without a private UTS namespace; upstream sends none.
        String::new()
    } else {
        super::etc_hosts::hostname_and_domain(pod, "").0
    };
    let mut port_mappings = Vec::new();
    for container in &spec.containers {
        for port in container.ports.iter().flatten() {
            let Some(host_port) = port.host_port.filter(|p| *p != 0) else {
                continue;
            };
            port_mappings.push(api::PortMapping {
                protocol: protocol(port.protocol.as_deref())? as i32,
                container_port: port.container_port,
                host_port,
                host_ip: port.host_ip.clone().unwrap_or_default(),
            });
        }
    }
    let pod_security = spec.security_context.as_ref();
    let qos = resources::qos_class(spec);
    let sysctls = pod_security
        .and_then(|s| s.sysctls.as_ref())
        .map(|list| {
            list.iter()
                .map(|s| (s.name.clone(), s.value.clone()))
                .collect()
        })
        .unwrap_or_default();
    Ok(api::PodSandboxConfig {
        metadata: Some(api::PodSandboxMetadata {
            name: meta.name.clone().unwrap_or_default(),
            uid: uid.clone(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            attempt,
        }),
        hostname,
        log_directory: crate::podutil::log_directory(&node.pod_logs_dir, pod)
            .display()
            .to_string(),
        dns_config: Some(dns::pod_dns(
            pod,
            &node.dns,
            &dns::read_host_dns(&node.dns.resolv_conf),
            &node.node_ip,
        )),
        port_mappings,
        labels: pod_labels(pod, &node.node_name),
        annotations: meta
            .annotations
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        linux: Some(api::LinuxPodSandboxConfig {
            cgroup_parent: qos.cgroup_parent(&uid),
            security_context: Some(api::LinuxSandboxSecurityContext {
                namespace_options: Some(namespace_options(pod)),
                run_as_user: pod_security
                    .and_then(|s| s.run_as_user)
                    .map(|value| api::Int64Value { value }),
                run_as_group: pod_security
                    .and_then(|s| s.run_as_group)
                    .map(|value| api::Int64Value { value }),
                supplemental_groups: pod_security
                    .and_then(|s| s.supplemental_groups.clone())
                    .unwrap_or_default(),
                privileged: spec
                    .containers
                    .iter()
                    .chain(spec.init_containers.iter().flatten())
                    .any(|c| {
                        c.security_context
                            .as_ref()
                            .and_then(|s| s.privileged)
                            .unwrap_or(false)
                    }),
                ..Default::default()
            }),
            sysctls,
            overhead: None,
            resources: None,
        }),
        windows: None,
    })
}

fn protocol(name: Option<&str>) -> Result<api::Protocol, ConfigError> {
    match name.unwrap_or("TCP") {
        "TCP" => Ok(api::Protocol::Tcp),
        "UDP" => Ok(api::Protocol::Udp),
        "SCTP" => Ok(api::Protocol::Sctp),
        other => Err(ConfigError::UnknownProtocol {
            protocol: other.into(),
        }),
    }
}

fn security_context(pod: &Pod, container: &Container) -> api::LinuxContainerSecurityContext {
    let pod_security = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let own: SecurityContext = container.security_context.clone().unwrap_or_default();
    let run_as_user = own.run_as_user.or(pod_security.and_then(|s| s.run_as_user));
    let run_as_group = own
        .run_as_group
        .or(pod_security.and_then(|s| s.run_as_group));
    let mut supplemental_groups = pod_security
        .and_then(|s| s.supplemental_groups.clone())
        .unwrap_or_default();
    if let Some(fs_group) = pod_security.and_then(|s| s.fs_group) {
        supplemental_groups.push(fs_group);
    }
    let capabilities = own.capabilities.as_ref().map(|c| api::Capability {
        add_capabilities: c.add.clone().unwrap_or_default(),
        drop_capabilities: c.drop.clone().unwrap_or_default(),
        add_ambient_capabilities: Vec::new(),
    });
    api::LinuxContainerSecurityContext {
        capabilities,
        privileged: own.privileged.unwrap_or(false),
        namespace_options: Some(namespace_options(pod)),
        run_as_user: run_as_user.map(|value| api::Int64Value { value }),
        run_as_group: run_as_group.map(|value| api::Int64Value { value }),
        readonly_rootfs: own.read_only_root_filesystem.unwrap_or(false),
        supplemental_groups,
        no_new_privs: own.allow_privilege_escalation == Some(false),
        ..Default::default()
    }
}

/// The config of one container, attempt number `restart_count`, with its environment `envs`
/// (from [`env::resolve`]; command and args are expanded with it) and volume `mounts`.
pub fn container_config(
    pod: &Pod,
    container: &Container,
    restart_count: u32,
    envs: Vec<(String, String)>,
    node: &NodeContext,
    mounts: Vec<api::Mount>,
) -> Result<api::ContainerConfig, ConfigError> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref().ok_or(ConfigError::NoSpec)?;
    let qos = resources::qos_class(spec);
    let limits = linux_resources(container, qos, node.machine_memory_bytes)?;
    let vars: HashMap<String, String> = envs.iter().cloned().collect();
    let expand_all = |list: &Option<Vec<String>>| {
        list.iter()
            .flatten()
            .map(|s| env::expand(s, &vars))
            .collect::<Vec<_>>()
    };
    let mut container_labels = HashMap::from([
        (
            labels::POD_NAME.to_string(),
            meta.name.clone().unwrap_or_default(),
        ),
        (
            labels::POD_NAMESPACE.to_string(),
            meta.namespace.clone().unwrap_or_default(),
        ),
        (
            labels::POD_UID.to_string(),
            meta.uid.clone().unwrap_or_default(),
        ),
        (labels::CONTAINER_NAME.to_string(), container.name.clone()),
    ]);
    container_labels.insert(labels::NODE.into(), node.node_name.clone());
    let is_named = |c: &Container| c.name == container.name;
    let init_position = spec.init_containers.iter().flatten().position(is_named);
    let kind = if spec.containers.iter().any(is_named) {
        labels::TYPE_REGULAR
    } else if init_position.is_some() {
        labels::TYPE_INIT
    } else {
        labels::TYPE_EPHEMERAL
    };
    container_labels.insert(labels::CONTAINER_TYPE.into(), kind.into());
    if let (true, Some(position)) = (crate::podutil::is_sidecar(container), init_position) {
        container_labels.insert(labels::SIDECAR.into(), position.to_string());
    }
    let annotations = HashMap::from([
        (
            labels::CONTAINER_RESTART_COUNT.to_string(),
            restart_count.to_string(),
        ),
        (
            labels::CONTAINER_TERMINATION_MESSAGE_PATH.to_string(),
            container
                .termination_message_path
                .clone()
                .unwrap_or_default(),
        ),
        (
            labels::CONTAINER_TERMINATION_MESSAGE_POLICY.to_string(),
            container
                .termination_message_policy
                .clone()
                .unwrap_or_else(|| "File".into()),
        ),
        (
            labels::POD_TERMINATION_GRACE_PERIOD.to_string(),
            spec.termination_grace_period_seconds
                .unwrap_or(30)
                .to_string(),
        ),
        (
            labels::CONTAINER_HASH.to_string(),
            super::actions::container_hash(container),
        ),
    ]);
    Ok(api::ContainerConfig {
        metadata: Some(api::ContainerMetadata {
            name: container.name.clone(),
            attempt: restart_count,
        }),
        image: Some(api::ImageSpec {
            image: container.image.clone().unwrap_or_default(),
            ..Default::default()
        }),
        command: expand_all(&container.command),
        args: expand_all(&container.args),
        working_dir: container.working_dir.clone().unwrap_or_default(),
        envs: envs
            .into_iter()
            .map(|(key, value)| api::KeyValue { key, value })
            .collect(),
        mounts,
        devices: Vec::new(),
        labels: container_labels,
        annotations,
        log_path: format!("{}/{}.log", container.name, restart_count),
        stdin: container.stdin.unwrap_or(false),
        stdin_once: container.stdin_once.unwrap_or(false),
        tty: container.tty.unwrap_or(false),
        linux: Some(api::LinuxContainerConfig {
            resources: Some(limits.to_cri()),
            security_context: Some(security_context(pod, container)),
        }),
        windows: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::manifest;

    fn node() -> NodeContext {
        NodeContext {
            node_name: "node".into(),
            node_ip: "10.0.0.1".into(),
            pod_logs_dir: "/var/log/pods".into(),
            machine_memory_bytes: 1 << 30,
            allocatable_cpu_millis: 2000,
            allocatable_memory_bytes: 1 << 30,
            root_dir: "/var/lib/kubelet".into(),
            dns: DnsContext::default(),
        }
    }

    #[test]
    fn sandbox_and_container_configs() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: web}}\nspec:\n  hostNetwork: true\n  containers:\n  - name: web\n    image: busybox:local\n    command: [sh, -c, 'echo $(MSG)']\n    env: [{name: MSG, value: hi}]\n    ports: [{containerPort: 80, hostPort: 8080}]\n    resources: {limits: {memory: 64Mi, cpu: 500m}}\n    securityContext: {allowPrivilegeEscalation: false, runAsUser: 1000}\n";
        let pod = manifest::load(text, std::path::Path::new("/m/web.yaml"), "node").unwrap();
        let sandbox = sandbox_config(&pod, &node(), 0).unwrap();
        let uid = pod.metadata.uid.clone().unwrap();
        assert_eq!(sandbox.hostname, "", "hostNetwork sends no hostname");
        assert_eq!(sandbox.labels[labels::POD_UID], uid);
        assert_eq!(sandbox.labels["app"], "web");
        assert_eq!(
            sandbox.log_directory,
            format!("/var/log/pods/default_web-node_{uid}")
        );
        let linux = sandbox.linux.unwrap();
        assert_eq!(linux.cgroup_parent, format!("/kubepods/pod{uid}"));
        let ns = linux.security_context.unwrap().namespace_options.unwrap();
        assert_eq!(ns.network, api::NamespaceMode::Node as i32);
        assert_eq!(ns.pid, api::NamespaceMode::Container as i32);
        assert_eq!(sandbox.port_mappings[0].host_port, 8080);

        let spec = pod.spec.as_ref().unwrap();
        let config = container_config(
            &pod,
            &spec.containers[0],
            3,
            vec![("MSG".into(), "hi".into())],
            &node(),
            vec![],
        )
        .unwrap();
        assert_eq!(config.metadata.unwrap().attempt, 3);
        assert_eq!(config.log_path, "web/3.log");
        assert_eq!(config.command, ["sh", "-c", "echo hi"]);
        assert_eq!(config.labels[labels::CONTAINER_NAME], "web");
        let linux = config.linux.unwrap();
        assert_eq!(linux.resources.unwrap().memory_limit_in_bytes, 64 << 20);
        let security = linux.security_context.unwrap();
        assert!(security.no_new_privs);
        assert_eq!(security.run_as_user, Some(api::Int64Value { value: 1000 }));
    }

    #[test]
    fn errors_read_as_before() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: web\n    image: busybox:local\n    ports: [{containerPort: 80, hostPort: 8080, protocol: QUIC}]\n";
        let mut pod: Pod = wasmlet_plugin_host::yaml::from_str(text).expect("test pod parses");
        assert_eq!(
            sandbox_config(&pod, &node(), 0).unwrap_err().to_string(),
            r#"unknown port protocol "QUIC""#
        );
        pod.spec = None;
        assert_eq!(
            sandbox_config(&pod, &node(), 0).unwrap_err().to_string(),
            "pod has no spec"
        );
    }
}
