//! The `kubelet.config.k8s.io/v1beta1` KubeletConfiguration subset wasmlet serves, with the
//! upstream field names and defaults (`pkg/kubelet/apis/config/v1beta1/defaults.go`).

use super::duration;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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
    "registerNode",
    "registerWithTaints",
    "nodeStatusUpdateFrequency",
    "nodeStatusReportFrequency",
    "nodeLeaseDurationSeconds",
    "kubeAPIQPS",
    "kubeAPIBurst",
    "eventRecordQPS",
    "eventBurst",
    "clusterDNS",
    "clusterDomain",
];

/// Upstream fields that parse but have no effect yet: warned about by name, not as unknown.
pub const NOT_YET_IMPLEMENTED: &[&str] = &[
    "authentication",
    "authorization",
    "cgroupDriver",
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
    /// Hard eviction thresholds, `signal: quantity-or-percent`; unset means upstream's
    /// defaults, and setting any drops the defaults for the others (as upstream).
    pub eviction_hard: Option<BTreeMap<String, String>>,
    /// Soft eviction thresholds; each needs an `evictionSoftGracePeriod` entry.
    pub eviction_soft: BTreeMap<String, String>,
    /// How long a soft threshold must hold before it evicts, per signal (durations).
    pub eviction_soft_grace_period: BTreeMap<String, String>,
    /// Extra headroom a threshold must regain before it counts as resolved, per signal.
    pub eviction_minimum_reclaim: BTreeMap<String, String>,
    /// How long a pressure condition stays true after its threshold was last met.
    #[serde(with = "duration::go")]
    pub eviction_pressure_transition_period: Duration,
    /// Cap on the pod grace period used by soft evictions (seconds; 0: the pod's own).
    pub eviction_max_pod_grace_period: i32,
    /// Image GC starts when imagefs usage reaches this percentage...
    #[serde(rename = "imageGCHighThresholdPercent")]
    pub image_gc_high_threshold_percent: i32,
    /// ...and frees space down to this one.
    #[serde(rename = "imageGCLowThresholdPercent")]
    pub image_gc_low_threshold_percent: i32,
    /// An image is never collected sooner than this after it was first seen.
    #[serde(rename = "imageMinimumGCAge", with = "duration::go")]
    pub image_minimum_gc_age: Duration,
    /// An image unused for longer than this is collected whatever the usage; 0 disables.
    #[serde(rename = "imageMaximumGCAge", with = "duration::go")]
    pub image_maximum_gc_age: Duration,
    /// In cluster mode, create (or reconcile) this node's Node object at start.
    pub register_node: bool,
    /// Taints the Node is registered with (only when it is created, as upstream).
    pub register_with_taints: Vec<k8s_openapi::api::core::v1::Taint>,
    /// How often node status is computed, and patched when it changed.
    #[serde(with = "duration::go")]
    pub node_status_update_frequency: Duration,
    /// How often node status is patched even when nothing changed.
    #[serde(with = "duration::go")]
    pub node_status_report_frequency: Duration,
    /// The Node Lease's duration; it is renewed every quarter of it.
    pub node_lease_duration_seconds: i32,
    /// Sustained rate of requests to the API server (0: unlimited).
    #[serde(rename = "kubeAPIQPS")]
    pub kube_api_qps: i32,
    /// Burst of requests to the API server above `kubeAPIQPS`.
    #[serde(rename = "kubeAPIBurst")]
    pub kube_api_burst: i32,
    /// Sustained rate of Events written (0: unlimited).
    #[serde(rename = "eventRecordQPS")]
    pub event_record_qps: i32,
    /// Burst of Events above `eventRecordQPS`.
    pub event_burst: i32,
    /// DNS server IPs written to the resolv.conf of pods with `dnsPolicy: ClusterFirst`.
    #[serde(rename = "clusterDNS")]
    pub cluster_dns: Vec<String>,
    /// The cluster's DNS domain: search paths `<ns>.svc.<domain>`, `svc.<domain>`, `<domain>`.
    pub cluster_domain: String,
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
            eviction_hard: None,
            eviction_soft: BTreeMap::new(),
            eviction_soft_grace_period: BTreeMap::new(),
            eviction_minimum_reclaim: BTreeMap::new(),
            eviction_pressure_transition_period: Duration::from_secs(300),
            eviction_max_pod_grace_period: 0,
            image_gc_high_threshold_percent: 85,
            image_gc_low_threshold_percent: 80,
            image_minimum_gc_age: Duration::from_secs(120),
            image_maximum_gc_age: Duration::ZERO,
            register_node: true,
            register_with_taints: Vec::new(),
            node_status_update_frequency: Duration::from_secs(10),
            node_status_report_frequency: Duration::from_secs(300),
            node_lease_duration_seconds: 40,
            kube_api_qps: 50,
            kube_api_burst: 100,
            event_record_qps: 50,
            event_burst: 100,
            cluster_dns: Vec::new(),
            cluster_domain: String::new(),
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
        let (high, low) = (
            self.image_gc_high_threshold_percent,
            self.image_gc_low_threshold_percent,
        );
        if !(0..=100).contains(&high) {
            return field("imageGCHighThresholdPercent", "must be between 0 and 100");
        }
        if !(0..=100).contains(&low) {
            return field("imageGCLowThresholdPercent", "must be between 0 and 100");
        }
        if low > high {
            return field(
                "imageGCLowThresholdPercent",
                "must not be greater than imageGCHighThresholdPercent",
            );
        }
        for (name, value) in [
            (
                "nodeStatusUpdateFrequency",
                self.node_status_update_frequency,
            ),
            (
                "nodeStatusReportFrequency",
                self.node_status_report_frequency,
            ),
        ] {
            if value.is_zero() {
                return field(name, "must be greater than 0");
            }
        }
        if self.node_lease_duration_seconds <= 0 {
            return field("nodeLeaseDurationSeconds", "must be greater than 0");
        }
        for (name, value) in [
            ("kubeAPIQPS", self.kube_api_qps),
            ("kubeAPIBurst", self.kube_api_burst),
            ("eventRecordQPS", self.event_record_qps),
            ("eventBurst", self.event_burst),
        ] {
            if value < 0 {
                return field(name, "must not be negative");
            }
        }
        for ip in &self.cluster_dns {
            if ip.parse::<std::net::IpAddr>().is_err() {
                return field("clusterDNS", "every entry must be an IP address");
            }
        }
        if self.eviction_max_pod_grace_period < 0 {
            return field("evictionMaxPodGracePeriod", "must not be negative");
        }
        super::eviction::thresholds(self)?;
        Ok(())
    }

    /// The runtime socket path behind `containerRuntimeEndpoint`.
    pub fn runtime_socket(&self) -> &str {
        self.container_runtime_endpoint
            .strip_prefix("unix://")
            .unwrap_or(&self.container_runtime_endpoint)
    }
}
