//! What a test may change about its node; the defaults keep every period short.

use std::path::PathBuf;

/// Settings a test may change; the defaults keep periods short.
pub struct NodeOptions {
    /// Lines added to the `KubeletConfiguration` document.
    pub extra_kubelet: String,
    /// Lines added to the `WasmletConfiguration` document (replacing the short test defaults).
    pub extra_wasmlet: String,
    /// Another containerd than the shared one (e.g. the image GC node's).
    pub runtime_socket: Option<PathBuf>,
    /// More `wasmlet run` flags (the cluster tests pass `--kubeconfig`).
    pub extra_args: Vec<String>,
    /// Serve the secure port (on a free port); off (`port: 0`) when `None`.
    pub secure_port: Option<SecurePortOptions>,
    /// `RUST_LOG` of the wasmlet process (`info,wasmlet=debug`); `None` leaves it unset so
    /// `-v`/`--vmodule` and the config file decide.
    pub rust_log: Option<String>,
}

/// The secure port of a test node.
#[derive(Debug, Clone, Default)]
pub struct SecurePortOptions {
    /// `authentication.x509.clientCAFile`: the CA whose client certificates are accepted.
    pub client_ca: Option<PathBuf>,
}

impl Default for NodeOptions {
    fn default() -> Self {
        Self {
            extra_kubelet: String::new(),
            extra_wasmlet:
                "containerRestartBackOff: {initialPeriod: 1s, maxPeriod: 4s, resetPeriod: 60s}\ncadvisorHousekeepingPeriod: 1s\n"
                    .into(),
            runtime_socket: None,
            extra_args: Vec::new(),
            secure_port: None,
            rust_log: Some("info,wasmlet=debug".into()),
        }
    }
}
