//! The sysctl allowlist (upstream's `sysctl.patternAllowlist`): a pod may set only the safe,
//! namespaced sysctls and those `allowedUnsafeSysctls` names (a trailing `*` matches a prefix);
//! a net sysctl is refused with `hostNetwork` and an IPC one with `hostIPC`, for those would
//! change the node itself. Refused pods fail with reason `SysctlForbidden`.

use super::{AdmitAttributes, AdmitHandler, Rejection};

/// Upstream's `ForbiddenReason`.
const REASON: &str = "SysctlForbidden";

/// Upstream's safe sysctls (`safe_sysctls.go`); every one is namespaced on the kernels these
/// nodes run.
const SAFE: [&str; 12] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

/// The kernel namespace a sysctl belongs to, as upstream's `GetNamespace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Namespace {
    Ipc,
    Net,
    Unknown,
}

fn namespace(name: &str) -> Namespace {
    const IPC: [&str; 7] = [
        "kernel.sem",
        "kernel.shmall",
        "kernel.shmmax",
        "kernel.shmmni",
        "kernel.msgmax",
        "kernel.msgmnb",
        "kernel.msgmni",
    ];
    if IPC.contains(&name) || name.starts_with("fs.mqueue.") || name == "kernel.shm_rmid_forced" {
        Namespace::Ipc
    } else if name.starts_with("net.") {
        Namespace::Net
    } else {
        Namespace::Unknown
    }
}

/// `a/b/c` is another spelling of `a.b.c`: when the first separator is `/`, the two swap
/// (upstream's `NormalizeName`, so `net/ipv4/conf/eth0.100/x` is `net.ipv4.conf.eth0/100.x`).
fn normalize(name: &str) -> String {
    match name.find(['.', '/']) {
        Some(i) if name.as_bytes()[i] == b'/' => name
            .chars()
            .map(|c| match c {
                '/' => '.',
                '.' => '/',
                other => other,
            })
            .collect(),
        _ => name.to_string(),
    }
}

/// Why a pod's sysctl is forbidden; the handler prefixes "forbidden sysctl: ", as upstream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ForbiddenSysctl {
    /// Neither safe nor in `allowedUnsafeSysctls`.
    #[error("{0:?} not allowlisted")]
    NotAllowed(String),
    /// A network sysctl in a pod that shares the host's network namespace.
    #[error("{0:?} not allowed with host net enabled")]
    HostNetwork(String),
    /// An IPC sysctl in a pod that shares the host's IPC namespace.
    #[error("{0:?} not allowed with host ipc enabled")]
    HostIpc(String),
}

/// The allowlist handler.
pub struct SysctlAdmitHandler {
    allowed: Vec<String>,
}

impl SysctlAdmitHandler {
    /// The safe sysctls plus `allowed_unsafe` (`allowedUnsafeSysctls`).
    pub fn new(allowed_unsafe: &[String]) -> Self {
        let allowed = SAFE
            .iter()
            .map(|s| s.to_string())
            .chain(allowed_unsafe.iter().map(|s| normalize(s)))
            .collect();
        Self { allowed }
    }

    fn check(&self, name: &str, host_network: bool, host_ipc: bool) -> Result<(), ForbiddenSysctl> {
        let name = normalize(name);
        let listed = self
            .allowed
            .iter()
            .any(|allowed| match allowed.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => *allowed == name,
            });
        if !listed {
            return Err(ForbiddenSysctl::NotAllowed(name));
        }
        match namespace(&name) {
            Namespace::Net if host_network => Err(ForbiddenSysctl::HostNetwork(name)),
            Namespace::Ipc if host_ipc => Err(ForbiddenSysctl::HostIpc(name)),
            _ => Ok(()),
        }
    }
}

impl AdmitHandler for SysctlAdmitHandler {
    fn admit(&self, attrs: &AdmitAttributes<'_>) -> Result<(), Rejection> {
        let Some(spec) = attrs.pod.spec.as_ref() else {
            return Ok(());
        };
        let sysctls = spec
            .security_context
            .as_ref()
            .and_then(|s| s.sysctls.as_ref());
        for sysctl in sysctls.into_iter().flatten() {
            self.check(
                &sysctl.name,
                spec.host_network.unwrap_or(false),
                spec.host_ipc.unwrap_or(false),
            )
            .map_err(|error| Rejection::new(REASON, format!("forbidden sysctl: {error}")))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_allowed_and_host_namespaces() {
        let handler = SysctlAdmitHandler::new(&["kernel.msg*".into(), "net/core/somaxconn".into()]);
        assert_eq!(
            handler.check("kernel.shm_rmid_forced", false, false),
            Ok(())
        );
        assert_eq!(
            handler.check("net/ipv4/tcp_syncookies", false, false),
            Ok(())
        );
        assert_eq!(handler.check("kernel.msgmax", false, false), Ok(()));
        assert_eq!(handler.check("net.core.somaxconn", false, false), Ok(()));
        assert_eq!(
            handler.check("kernel.sem", false, false),
            Err(ForbiddenSysctl::NotAllowed("kernel.sem".into()))
        );
        assert_eq!(
            handler.check("net.ipv4.tcp_syncookies", true, false),
            Err(ForbiddenSysctl::HostNetwork(
                "net.ipv4.tcp_syncookies".into()
            ))
        );
        assert_eq!(
            handler.check("kernel.msgmax", false, true),
            Err(ForbiddenSysctl::HostIpc("kernel.msgmax".into()))
        );
        assert_eq!(
            ForbiddenSysctl::HostNetwork("net.ipv4.tcp_syncookies".into()).to_string(),
            "\"net.ipv4.tcp_syncookies\" not allowed with host net enabled"
        );
    }
}
