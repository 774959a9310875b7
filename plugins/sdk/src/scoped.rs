//! What a probe or hook may reach of its own pod.
//!
//! The host scopes every call to the pod the probe or hook runs for: it
//! fills in the pod IP and container IDs, refuses ports the pod does not
//! declare and containers it does not have, and bounds each call by what is
//! left of the caller's deadline. In a plugin the SDK passes an
//! implementation backed by the `pod-access` import, which both worlds
//! share; in tests pass a `fixtures::MockPod`.

use crate::types::{ExecOutput, HttpResponse};

/// Scoped network and exec access to one pod.
pub trait PodAccess {
    /// `GET http://<pod-ip>:<port><path>`. Any HTTP status is `Ok`; `Err` is
    /// a connection error, a timeout or a refused port.
    fn http_get(
        &self,
        port: u16,
        path: &str,
        headers: &[(&str, &str)],
        timeout_ms: u32,
    ) -> Result<HttpResponse, String>;

    /// Opens and closes a TCP connection to `<pod-ip>:<port>`.
    fn tcp_connect(&self, port: u16, timeout_ms: u32) -> Result<(), String>;

    /// Runs `command` in `container` (CRI `ExecSync`); a non-zero exit code
    /// is `Ok`.
    fn exec(
        &self,
        container: &str,
        command: &[&str],
        timeout_ms: u32,
    ) -> Result<ExecOutput, String>;

    /// Waits `ms` milliseconds, cut short at the hook's deadline
    /// (`pod-access.sleep`). Hooks only: in a probe it does nothing and
    /// answers `Err` (a probe returns and lets the next period run).
    fn sleep(&self, ms: u32) -> Result<(), String>;
}
