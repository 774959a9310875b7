//! Host ports (`nodeports.Fits`, `HostPortInfo.CheckConflict`): a `(hostIP, protocol,
//! hostPort)` of the pod must not be taken by an active pod. An empty host IP is `0.0.0.0`
//! and an empty protocol `TCP`; `0.0.0.0` conflicts with every IP on the same protocol and
//! port, any other IP with itself and `0.0.0.0`.

use k8s_openapi::api::core::v1::Pod;

/// Upstream's `DefaultBindAllHostIP`.
const ANY_IP: &str = "0.0.0.0";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HostPort<'a> {
    ip: &'a str,
    protocol: &'a str,
    port: i32,
}

/// The host ports the pod binds while it runs (`schedutil.GetHostPorts`): its app containers'
/// and its sidecars' (restartable init containers), not those of init containers that exit.
fn host_ports(pod: &Pod) -> impl Iterator<Item = HostPort<'_>> {
    crate::podutil::sidecars_and_app_containers(pod)
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let port = p.host_port.filter(|port| *port > 0)?;
            let ip = p.host_ip.as_deref().filter(|ip| !ip.is_empty());
            let protocol = p.protocol.as_deref().filter(|p| !p.is_empty());
            Some(HostPort {
                ip: ip.unwrap_or(ANY_IP),
                protocol: protocol.unwrap_or("TCP"),
                port,
            })
        })
}

fn conflicts(wanted: &HostPort<'_>, taken: &HostPort<'_>) -> bool {
    wanted.protocol == taken.protocol
        && wanted.port == taken.port
        && (wanted.ip == ANY_IP || taken.ip == ANY_IP || wanted.ip == taken.ip)
}

/// Whether a host port of `pod` is taken by one of `others`.
pub(super) fn conflict(pod: &Pod, others: &[Pod]) -> bool {
    host_ports(pod).any(|wanted| {
        others
            .iter()
            .flat_map(host_ports)
            .any(|taken| conflicts(&wanted, &taken))
    })
}
