//! The kubelet-managed `/etc/hosts` of a pod (`kubelet_pods.go` `makeHostsMount`): written to
//! `<pod dir>/etc-hosts` before each container is created and bind-mounted over the image's, so
//! the pod resolves its own hostname and `hostAliases`. Host-network pods get the node's file
//! with the aliases appended.

use crate::cri::api;
use k8s_openapi::api::core::v1::{Container, HostAlias, Pod};
use std::fmt::Write as _;
use std::path::Path;

/// The first line of a pod-network hosts file; the conformance suite looks for it.
const MANAGED_HEADER: &str = "# Kubernetes-managed hosts file.\n";
/// The first line of a host-network pod's hosts file.
const HOST_NETWORK_HEADER: &str = "# Kubernetes-managed hosts file (host network).\n";
/// Where containers see it.
const ETC_HOSTS: &str = "/etc/hosts";

/// The pod's hostname and domain as upstream's `GeneratePodHostNameAndDomain`: `hostname` or
/// the pod's name (at most 63 characters, no trailing `-` or `.`), and with a `subdomain`,
/// `<subdomain>.<namespace>.svc.<cluster domain>`.
pub fn hostname_and_domain(pod: &Pod, cluster_domain: &str) -> (String, String) {
    let spec = pod.spec.as_ref();
    let name = spec
        .and_then(|s| s.hostname.clone())
        .filter(|h| !h.is_empty())
        .or_else(|| pod.metadata.name.clone())
        .unwrap_or_default();
    let hostname = name
        .chars()
        .take(63)
        .collect::<String>()
        .trim_end_matches(['-', '.'])
        .to_string();
    let domain = match spec.and_then(|s| s.subdomain.as_deref()) {
        Some(sub) if !sub.is_empty() && !cluster_domain.is_empty() => {
            let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
            format!("{sub}.{namespace}.svc.{cluster_domain}")
        }
        _ => String::new(),
    };
    (hostname, domain)
}

/// The content of a pod-network hosts file: localhost, the pod's IPs under its names, then
/// the aliases.
pub fn managed_content(
    pod_ips: &[String],
    hostname: &str,
    domain: &str,
    aliases: &[HostAlias],
) -> String {
    let mut out = String::from(MANAGED_HEADER);
    out.push_str("127.0.0.1\tlocalhost\n");
    out.push_str("::1\tlocalhost ip6-localhost ip6-loopback\n");
    out.push_str("fe00::0\tip6-localnet\n");
    out.push_str("fe00::0\tip6-mcastprefix\n");
    out.push_str("fe00::1\tip6-allnodes\n");
    out.push_str("fe00::2\tip6-allrouters\n");
    for ip in pod_ips {
        if domain.is_empty() {
            let _ = writeln!(out, "{ip}\t{hostname}");
        } else {
            let _ = writeln!(out, "{ip}\t{hostname}.{domain}\t{hostname}");
        }
    }
    out.push_str(&alias_entries(aliases));
    out
}

/// `hostAliases` as hosts-file lines, one per IP, after a blank line and a comment.
fn alias_entries(aliases: &[HostAlias]) -> String {
    if aliases.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n# Entries added by HostAliases.\n");
    for alias in aliases {
        let names = alias.hostnames.clone().unwrap_or_default().join("\t");
        let _ = writeln!(out, "{}\t{names}", alias.ip);
    }
    out
}

/// Writes the pod's hosts file under `pod_dir` and returns its mount for `container`, or
/// `None` when the container mounts a volume at `/etc/hosts` itself or the pod has no IP yet
/// (and is not on the host network), as upstream. `node_hosts` is the node's own file, read
/// for host-network pods.
pub fn mount(
    pod: &Pod,
    container: &Container,
    pod_dir: &Path,
    pod_ips: &[String],
    cluster_domain: &str,
    node_hosts: &Path,
) -> std::io::Result<Option<api::Mount>> {
    let host_network = pod
        .spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false);
    let own_mount = container
        .volume_mounts
        .iter()
        .flatten()
        .any(|m| m.mount_path == ETC_HOSTS);
    if own_mount || (pod_ips.is_empty() && !host_network) {
        return Ok(None);
    }
    let aliases = pod
        .spec
        .as_ref()
        .and_then(|s| s.host_aliases.clone())
        .unwrap_or_default();
    let content = if host_network {
        let node = std::fs::read_to_string(node_hosts)?;
        format!("{HOST_NETWORK_HEADER}{node}{}", alias_entries(&aliases))
    } else {
        let (hostname, domain) = hostname_and_domain(pod, cluster_domain);
        managed_content(pod_ips, &hostname, &domain, &aliases)
    };
    std::fs::create_dir_all(pod_dir)?;
    let path = pod_dir.join("etc-hosts");
    std::fs::write(&path, content)?;
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    Ok(Some(api::Mount {
        container_path: ETC_HOSTS.into(),
        host_path: path.display().to_string(),
        readonly: false,
        selinux_relabel: true,
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSpec, VolumeMount};

    fn pod(spec: PodSpec) -> Pod {
        Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("web-0".into()),
                namespace: Some("shop".into()),
                ..Default::default()
            },
            spec: Some(spec),
            ..Default::default()
        }
    }

    #[test]
    fn content_as_upstream_writes_it() {
        let aliases = vec![HostAlias {
            ip: "123.45.67.89".into(),
            hostnames: Some(vec!["foo.local".into(), "bar.local".into()]),
        }];
        assert_eq!(
            managed_content(&["10.0.0.5".into()], "web-0", "", &aliases),
            "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n\
             fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n\
             10.0.0.5\tweb-0\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo.local\tbar.local\n"
        );
        let with_domain = managed_content(
            &["10.0.0.5".into()],
            "web-0",
            "db.shop.svc.cluster.local",
            &[],
        );
        assert!(with_domain.ends_with("10.0.0.5\tweb-0.db.shop.svc.cluster.local\tweb-0\n"));
    }

    #[test]
    fn hostname_and_domain_follow_the_spec() {
        let plain = pod(PodSpec::default());
        assert_eq!(
            hostname_and_domain(&plain, "cluster.local"),
            ("web-0".into(), String::new())
        );
        let named = pod(PodSpec {
            hostname: Some(format!("{}-", "h".repeat(62))),
            subdomain: Some("db".into()),
            ..Default::default()
        });
        assert_eq!(
            hostname_and_domain(&named, "cluster.local"),
            ("h".repeat(62), "db.shop.svc.cluster.local".into())
        );
        assert_eq!(
            hostname_and_domain(&named, "").1,
            "",
            "no cluster domain, no domain"
        );
    }

    #[test]
    fn mounted_unless_the_container_mounts_its_own_or_there_is_no_ip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let node_hosts = dir.path().join("node-hosts");
        std::fs::write(&node_hosts, "127.0.0.1 node\n").expect("write");
        let pod_dir = dir.path().join("pod");
        let plain = pod(PodSpec::default());
        let container = Container::default();
        let ips = ["10.0.0.5".to_string()];
        let mount = mount(&plain, &container, &pod_dir, &ips, "", &node_hosts)
            .expect("written")
            .expect("mounted");
        assert_eq!(mount.container_path, "/etc/hosts");
        let written = std::fs::read_to_string(&mount.host_path).expect("read");
        assert!(written.starts_with(MANAGED_HEADER) && written.contains("10.0.0.5\tweb-0\n"));

        let own = Container {
            volume_mounts: Some(vec![VolumeMount {
                name: "v".into(),
                mount_path: "/etc/hosts".into(),
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert!(super::mount(&plain, &own, &pod_dir, &ips, "", &node_hosts)
            .expect("ok")
            .is_none());
        assert!(
            super::mount(&plain, &container, &pod_dir, &[], "", &node_hosts)
                .expect("ok")
                .is_none()
        );

        let host = pod(PodSpec {
            host_network: Some(true),
            host_aliases: Some(vec![HostAlias {
                ip: "1.2.3.4".into(),
                hostnames: Some(vec!["a".into()]),
            }]),
            ..Default::default()
        });
        let mount = super::mount(&host, &container, &pod_dir, &[], "", &node_hosts)
            .expect("written")
            .expect("mounted");
        assert_eq!(
            std::fs::read_to_string(&mount.host_path).expect("read"),
            "# Kubernetes-managed hosts file (host network).\n127.0.0.1 node\n\n# Entries added by HostAliases.\n1.2.3.4\ta\n"
        );
    }
}
