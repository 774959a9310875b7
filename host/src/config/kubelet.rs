//! The `kubelet.config.k8s.io/v1beta1` KubeletConfiguration subset wasmlet serves, with the
//! upstream field names and defaults (`pkg/kubelet/apis/config/v1beta1/defaults.go`).

use super::duration;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Fields of the upstream KubeletConfiguration that wasmlet implements.
pub const KNOWN_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "staticPodPath",
    "containerRuntimeEndpoint",
    "fileCheckFrequency",
    "syncFrequency",
    "maxPods",
    "podLogsDir",
    "address",
    "readOnlyPort",
    "port",
    "healthzPort",
    "healthzBindAddress",
    "runtimeRequestTimeout",
];

/// Upstream fields that parse but have no effect yet: warned about by name, not as unknown.
pub const NOT_YET_IMPLEMENTED: &[&str] = &[
    "evictionHard",
    "evictionSoft",
    "evictionSoftGracePeriod",
    "evictionMinimumReclaim",
    "evictionPressureTransitionPeriod",
    "evictionMaxPodGracePeriod",
    "imageGCHighThresholdPercent",
    "imageGCLowThresholdPercent",
    "imageMinimumGCAge",
    "imageMaximumGCAge",
    "authentication",
    "authorization",
    "cgroupDriver",
    "clusterDNS",
    "clusterDomain",
    "nodeStatusUpdateFrequency",
    "serializeImagePulls",
];

/// What the node agent runs with; every field keeps upstream's name and meaning.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct KubeletConfiguration {
    /// Directory (or single file) of static pod manifests; unset runs no static pods.
    pub static_pod_path: Option<String>,
    /// CRI endpoint, `unix:///path/to/socket`.
    pub container_runtime_endpoint: String,
    /// How often the static pod directory is rescanned besides inotify.
    #[serde(with = "duration::go")]
    pub file_check_frequency: Duration,
    /// Resync period of a pod worker when nothing else wakes it.
    #[serde(with = "duration::go")]
    pub sync_frequency: Duration,
    /// Admission limit on pods that are not in a terminal phase.
    pub max_pods: i64,
    /// Root of the per-pod container log directories handed to the runtime.
    pub pod_logs_dir: String,
    /// Bind address of the read-only port.
    pub address: String,
    /// Unauthenticated HTTP port for `/pods`, `/healthz`; 0 disables it, as upstream.
    pub read_only_port: u16,
    /// Authenticated port; accepted for compatibility, nothing is served on it yet.
    pub port: u16,
    /// Port of the `/healthz` endpoint; 0 disables it.
    pub healthz_port: u16,
    /// Bind address of the healthz port.
    pub healthz_bind_address: String,
    /// Deadline of each CRI call (except those with their own, such as StopContainer).
    #[serde(with = "duration::go")]
    pub runtime_request_timeout: Duration,
}

impl Default for KubeletConfiguration {
    fn default() -> Self {
        Self {
            static_pod_path: None,
            container_runtime_endpoint: "unix:///run/containerd/containerd.sock".into(),
            file_check_frequency: Duration::from_secs(20),
            sync_frequency: Duration::from_secs(60),
            max_pods: 110,
            pod_logs_dir: "/var/log/pods".into(),
            address: "0.0.0.0".into(),
            read_only_port: 0,
            port: 10250,
            healthz_port: 10248,
            healthz_bind_address: "127.0.0.1".into(),
            runtime_request_timeout: Duration::from_secs(120),
        }
    }
}

impl KubeletConfiguration {
    /// Checks values serde cannot: the error names the field and what is wrong with it.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let field = |name: &str, why: &str| Err((name.to_string(), why.to_string()));
        if !self.container_runtime_endpoint.starts_with("unix://") {
            return field(
                "containerRuntimeEndpoint",
                "must be a unix socket URL such as unix:///run/containerd/containerd.sock",
            );
        }
        if self.max_pods <= 0 {
            return field("maxPods", "must be greater than 0");
        }
        for (name, value) in [
            ("fileCheckFrequency", self.file_check_frequency),
            ("syncFrequency", self.sync_frequency),
            ("runtimeRequestTimeout", self.runtime_request_timeout),
        ] {
            if value.is_zero() {
                return field(name, "must be greater than 0");
            }
        }
        if self.pod_logs_dir.is_empty() || !self.pod_logs_dir.starts_with('/') {
            return field("podLogsDir", "must be an absolute path");
        }
        for (name, value) in [
            ("address", &self.address),
            ("healthzBindAddress", &self.healthz_bind_address),
        ] {
            if value.parse::<std::net::IpAddr>().is_err() {
                return field(name, "must be an IP address");
            }
        }
        Ok(())
    }

    /// The runtime socket path behind `containerRuntimeEndpoint`.
    pub fn runtime_socket(&self) -> &str {
        self.container_runtime_endpoint
            .strip_prefix("unix://")
            .unwrap_or(&self.container_runtime_endpoint)
    }
}
