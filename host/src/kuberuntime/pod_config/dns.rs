//! The sandbox's resolver config, as upstream's `pkg/kubelet/network/dns` (`GetPodDNS`):
//! `ClusterFirst` (the default) asks the cluster's DNS (`clusterDNS`) with the search paths
//! `<ns>.svc.<domain>`, `svc.<domain>`, `<domain>` before the host's and `ndots:5`; without
//! `clusterDNS`, and for a hostNetwork pod, it falls back to `Default`, the host's resolver
//! (`resolvConf`); `ClusterFirstWithHostNet` keeps the cluster's under hostNetwork; `None`
//! starts empty. The pod's `dnsConfig` is merged in last, then the resolver's limits apply.

use crate::cri::api;
use k8s_openapi::api::core::v1::{Pod, PodDNSConfig};
use std::path::{Path, PathBuf};

/// Upstream's `MaxDNSNameservers`: the resolver reads no more.
const MAX_NAMESERVERS: usize = 3;
/// Upstream's `MaxDNSSearchPathsExpanded` (ExpandedDNSConfig, GA in 1.28).
const MAX_SEARCH_PATHS: usize = 32;
/// Upstream's `MaxDNSSearchListCharsExpanded`.
const MAX_SEARCH_CHARS: usize = 2048;
/// A search path longer than a DNS name aborts some resolvers (glibc 2.28): dropped.
const MAX_SEARCH_PATH_LEN: usize = 253;
/// Upstream's options for `ClusterFirst`.
const CLUSTER_OPTIONS: &[&str] = &["ndots:5"];

/// The node's DNS settings (KubeletConfiguration `clusterDNS`, `clusterDomain`,
/// `resolvConf`).
#[derive(Debug, Clone, Default)]
pub struct DnsContext {
    /// Cluster DNS server IPs; empty sends `ClusterFirst` pods to the host's resolver.
    pub cluster_dns: Vec<String>,
    /// The cluster's domain (`cluster.local`); empty adds no cluster search paths.
    pub cluster_domain: String,
    /// The host resolver config pods with `Default` inherit (upstream's `resolvConf`,
    /// `/etc/resolv.conf`); an empty path means none, and such pods get `127.0.0.1`.
    pub resolv_conf: PathBuf,
}

/// The parts of a resolv.conf the kubelet uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostDns {
    /// `nameserver` lines, in order.
    pub servers: Vec<String>,
    /// The last `search` line, trailing dots removed.
    pub searches: Vec<String>,
    /// The last `options` line.
    pub options: Vec<String>,
}

/// Parses resolv.conf text as upstream's `parseResolvConf`.
pub fn parse_resolv_conf(text: &str) -> HostDns {
    let mut host = HostDns::default();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        match fields.next() {
            Some("nameserver") => host.servers.extend(fields.next().map(str::to_string)),
            Some("search") => {
                host.searches = fields
                    .map(|s| s.trim_end_matches('.').to_string())
                    .collect()
            }
            Some("options") => host.options = fields.map(str::to_string).collect(),
            _ => {}
        }
    }
    host
}

/// The host's resolver config at `path` (empty when unset or unreadable).
pub fn read_host_dns(path: &Path) -> HostDns {
    if path.as_os_str().is_empty() {
        return HostDns::default();
    }
    match std::fs::read_to_string(path) {
        Ok(text) => parse_resolv_conf(&text),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "cannot read the host resolver config; pods inherit none");
            HostDns::default()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PodDnsType {
    Cluster,
    Host,
    None,
}

fn dns_type(pod: &Pod) -> PodDnsType {
    let spec = pod.spec.as_ref();
    match spec.and_then(|s| s.dns_policy.as_deref()) {
        Some("None") => PodDnsType::None,
        Some("Default") => PodDnsType::Host,
        Some("ClusterFirstWithHostNet") => PodDnsType::Cluster,
        // ClusterFirst, unset (the API's default), or unknown (upstream falls back to it).
        _ if crate::podutil::host_network(pod) => PodDnsType::Host,
        _ => PodDnsType::Cluster,
    }
}

fn omit_duplicates(list: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    list.into_iter()
        .filter(|s| seen.insert(s.clone()))
        .collect()
}

/// Options by name, the pod's over the base's, in first-seen order.
fn merge_options(base: Vec<String>, pod: &PodDNSConfig) -> Vec<String> {
    let mut options: Vec<(String, Option<String>)> = Vec::new();
    let mut set =
        |name: String, value: Option<String>| match options.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = value,
            None => options.push((name, value)),
        };
    for option in base {
        match option.split_once(':') {
            Some((name, value)) => set(name.into(), Some(value.into())),
            None => set(option, None),
        }
    }
    for option in pod.options.iter().flatten() {
        set(
            option.name.clone().unwrap_or_default(),
            option.value.clone().filter(|v| !v.is_empty()),
        );
    }
    options
        .into_iter()
        .map(|(name, value)| match value {
            Some(value) => format!("{name}:{value}"),
            None => name,
        })
        .collect()
}

/// Upstream's `formDNSSearchFitsLimits`: at most 32 paths, none over 253 characters, 2048
/// characters in all (cut from the end).
fn fit_searches(mut searches: Vec<String>) -> Vec<String> {
    searches.truncate(MAX_SEARCH_PATHS);
    searches.retain(|s| s.len() <= MAX_SEARCH_PATH_LEN);
    while !searches.is_empty() && searches.join(" ").len() > MAX_SEARCH_CHARS {
        searches.pop();
    }
    searches
}

/// The DNS config of `pod`'s sandbox from the node's settings and the host's resolver
/// config; `node_ip` picks the loopback resolver of a node without `resolvConf`.
pub fn pod_dns(pod: &Pod, node: &DnsContext, host: &HostDns, node_ip: &str) -> api::DnsConfig {
    let mut config = api::DnsConfig {
        servers: host.servers.clone(),
        searches: host.searches.clone(),
        options: host.options.clone(),
    };
    let mut kind = dns_type(pod);
    if kind == PodDnsType::Cluster && node.cluster_dns.is_empty() {
        // Upstream records MissingClusterDNS and falls back to Default.
        tracing::debug!("no clusterDNS configured: ClusterFirst falls back to Default");
        kind = PodDnsType::Host;
    }
    match kind {
        PodDnsType::None => config = api::DnsConfig::default(),
        PodDnsType::Cluster => {
            config.servers = node.cluster_dns.clone();
            if !node.cluster_domain.is_empty() {
                let domain = &node.cluster_domain;
                let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
                let mut searches = vec![
                    format!("{namespace}.svc.{domain}"),
                    format!("svc.{domain}"),
                    domain.clone(),
                ];
                searches.append(&mut config.searches);
                config.searches = omit_duplicates(searches);
            }
            config.options = CLUSTER_OPTIONS.iter().map(|o| o.to_string()).collect();
        }
        PodDnsType::Host if node.resolv_conf.as_os_str().is_empty() => {
            // No host resolver: ask the node itself, and search nothing.
            let loopback = if node_ip.contains(':') {
                "::1"
            } else {
                "127.0.0.1"
            };
            config.servers = vec![loopback.into()];
            config.searches = vec![".".into()];
        }
        PodDnsType::Host => {}
    }
    if let Some(extra) = pod.spec.as_ref().and_then(|s| s.dns_config.as_ref()) {
        config
            .servers
            .extend(extra.nameservers.iter().flatten().cloned());
        config.servers = omit_duplicates(std::mem::take(&mut config.servers));
        config
            .searches
            .extend(extra.searches.iter().flatten().cloned());
        config.searches = omit_duplicates(std::mem::take(&mut config.searches));
        config.options = merge_options(std::mem::take(&mut config.options), extra);
    }
    config.servers.truncate(MAX_NAMESERVERS);
    config.searches = fit_searches(config.searches);
    config
}

#[cfg(test)]
mod tests;
