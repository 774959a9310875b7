//! The `kubelet.config.k8s.io/v1beta1` KubeletConfiguration subset wasmlet serves, with the
//! upstream field names and defaults (`pkg/kubelet/apis/config/v1beta1/defaults.go`).

use super::duration;
use super::logging::{LoggingConfiguration, TracingConfiguration};
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
    "allowedUnsafeSysctls",
    "configMapAndSecretChangeDetectionStrategy",
    "systemReserved",
    "kubeReserved",
    "reservedSystemCPUs",
    "enforceNodeAllocatable",
    "tlsCertFile",
    "tlsPrivateKeyFile",
    "authentication",
    "authorization",
    "logging",
    "tracing",
];

/// Upstream fields that parse but have no effect yet: warned about by name, not as unknown.
pub const NOT_YET_IMPLEMENTED: &[&str] = &["cgroupDriver", "serializeImagePulls"];

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
    /// The authenticated HTTPS port (`/pods`, `/containerLogs`, `/configz`, ...). 0 turns it
    /// off: a wasmlet extension (upstream requires 1-65535) so test nodes can run side by side.
    pub port: u16,
    /// The serving certificate (PEM, may hold a chain) of `port`; unset with
    /// `tlsPrivateKeyFile` unset: a self-signed one in `--cert-dir`, as upstream.
    pub tls_cert_file: Option<String>,
    /// The private key (PEM) of `tlsCertFile`.
    pub tls_private_key_file: Option<String>,
    /// Who may call `port`: client certificates, bearer tokens, anonymous requests.
    pub authentication: KubeletAuthentication,
    /// What an authenticated caller of `port` may do.
    pub authorization: KubeletAuthorization,
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
    /// How often the emptyDir volumes' usage is measured for `kubelet_volume_stats_*`
    /// (a walk of each volume); 0 turns it off.
    #[serde(with = "duration::go")]
    pub volume_stats_agg_period: Duration,
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
    /// Unsafe sysctls (or `prefix*` patterns) pods may set beyond the safe ones.
    pub allowed_unsafe_sysctls: Vec<String>,
    /// How the configMaps and secrets of running pods are kept current.
    pub config_map_and_secret_change_detection_strategy: ChangeDetectionStrategy,
    /// Resources kept for the operating system (`cpu`, `memory`, `ephemeral-storage`, `pid`):
    /// taken off allocatable.
    pub system_reserved: BTreeMap<String, String>,
    /// Resources kept for the node agent and the runtime, as `systemReserved`.
    pub kube_reserved: BTreeMap<String, String>,
    /// CPUs (a cpuset list, `0-1`) kept for the system; their count replaces the `cpu` of
    /// both reservations.
    #[serde(rename = "reservedSystemCPUs")]
    pub reserved_system_cpus: String,
    /// `pods` (the default) limits the `kubepods` cgroup to capacity minus the reservations;
    /// `none` does not.
    pub enforce_node_allocatable: Vec<String>,
    /// Log format and verbosity (`--logging-format`, `-v`, `--vmodule` override it).
    pub logging: LoggingConfiguration,
    /// OTLP export of spans; absent (the default) exports nothing.
    pub tracing: Option<TracingConfiguration>,
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
            volume_stats_agg_period: Duration::from_secs(60),
            node_status_update_frequency: Duration::from_secs(10),
            node_status_report_frequency: Duration::from_secs(300),
            node_lease_duration_seconds: 40,
            kube_api_qps: 50,
            kube_api_burst: 100,
            event_record_qps: 50,
            event_burst: 100,
            cluster_dns: Vec::new(),
            cluster_domain: String::new(),
            allowed_unsafe_sysctls: Vec::new(),
            config_map_and_secret_change_detection_strategy: ChangeDetectionStrategy::Watch,
            system_reserved: BTreeMap::new(),
            kube_reserved: BTreeMap::new(),
            reserved_system_cpus: String::new(),
            enforce_node_allocatable: vec!["pods".into()],
            tls_cert_file: None,
            tls_private_key_file: None,
            authentication: KubeletAuthentication::default(),
            authorization: KubeletAuthorization::default(),
            logging: LoggingConfiguration::default(),
            tracing: None,
        }
    }
}

/// Upstream's `ResourceChangeDetectionStrategy`: how the configMaps and secrets that running
/// pods name are kept current.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub enum ChangeDetectionStrategy {
    /// One watch per referenced object: an update shows in the next sync.
    #[default]
    Watch,
    /// A GET whose answer is reused for a minute.
    Cache,
    /// A GET on every use.
    Get,
}

/// Upstream's `KubeletAuthentication`: the ways a request to the secure port is authenticated,
/// tried in this order (client certificate, bearer token, anonymous).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct KubeletAuthentication {
    /// Client certificates signed by `clientCAFile`.
    pub x509: KubeletX509Authentication,
    /// Bearer tokens checked by a TokenReview (cluster mode only).
    pub webhook: KubeletWebhookAuthentication,
    /// Requests with no credentials, as `system:anonymous`.
    pub anonymous: KubeletAnonymousAuthentication,
}

/// Upstream's `KubeletX509Authentication`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct KubeletX509Authentication {
    /// PEM bundle of the CAs whose client certificates are accepted: the certificate's CN is
    /// the user, its O entries the groups. Unset: no client certificate is asked for.
    #[serde(rename = "clientCAFile", skip_serializing_if = "Option::is_none")]
    pub client_ca_file: Option<String>,
}

/// Upstream's `KubeletWebhookAuthentication`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct KubeletWebhookAuthentication {
    /// Check bearer tokens with a TokenReview to the API server (default true; standalone has
    /// no API server, so tokens are never accepted there).
    pub enabled: bool,
    /// How long a TokenReview's answer (yes or no) is reused for the same token.
    #[serde(rename = "cacheTTL", with = "duration::go")]
    pub cache_ttl: Duration,
}

impl Default for KubeletWebhookAuthentication {
    fn default() -> Self {
        Self {
            enabled: true,
            cache_ttl: Duration::from_secs(120),
        }
    }
}

/// Upstream's `KubeletAnonymousAuthentication`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct KubeletAnonymousAuthentication {
    /// Serve requests with no credentials as `system:anonymous` in `system:unauthenticated`
    /// (still subject to authorization). Default false: such requests get 401.
    pub enabled: bool,
}

/// Upstream's `KubeletAuthorization`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct KubeletAuthorization {
    /// `Webhook` (default): ask the API server with a SubjectAccessReview (standalone: the
    /// local rule, `system:masters` only); `AlwaysAllow`: every authenticated request.
    pub mode: KubeletAuthorizationMode,
    /// The SubjectAccessReview cache.
    pub webhook: KubeletWebhookAuthorization,
}

/// Upstream's `KubeletAuthorizationMode`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub enum KubeletAuthorizationMode {
    /// SubjectAccessReview to the API server (standalone: the local rule).
    #[default]
    Webhook,
    /// Every authenticated request is allowed.
    AlwaysAllow,
}

/// Upstream's `KubeletWebhookAuthorization`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct KubeletWebhookAuthorization {
    /// How long an "allowed" answer is reused.
    #[serde(rename = "cacheAuthorizedTTL", with = "duration::go")]
    pub cache_authorized_ttl: Duration,
    /// How long a "not allowed" answer is reused.
    #[serde(rename = "cacheUnauthorizedTTL", with = "duration::go")]
    pub cache_unauthorized_ttl: Duration,
}

impl Default for KubeletWebhookAuthorization {
    fn default() -> Self {
        Self {
            cache_authorized_ttl: Duration::from_secs(300),
            cache_unauthorized_ttl: Duration::from_secs(30),
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
        super::reserved::validate(self)?;
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
        match (&self.tls_cert_file, &self.tls_private_key_file) {
            (Some(_), None) => {
                return field("tlsPrivateKeyFile", "must be set when tlsCertFile is set")
            }
            (None, Some(_)) => {
                return field("tlsCertFile", "must be set when tlsPrivateKeyFile is set")
            }
            _ => {}
        }
        if self.eviction_max_pod_grace_period < 0 {
            return field("evictionMaxPodGracePeriod", "must not be negative");
        }
        for item in &self.logging.vmodule {
            item.target()
                .map_err(|why| ("logging.vmodule".to_string(), why.to_string()))?;
        }
        if let Some(rate) = self
            .tracing
            .as_ref()
            .and_then(|t| t.sampling_rate_per_million)
        {
            if !(0..=1_000_000).contains(&rate) {
                return field(
                    "tracing.samplingRatePerMillion",
                    "must be between 0 and 1000000",
                );
            }
        }
        super::eviction::thresholds(self)?;
        Ok(())
    }

    /// Reads an empty path as unset, as upstream does (`tlsCertFile: ""` is no file).
    pub fn normalize_paths(&mut self) {
        for path in [
            &mut self.static_pod_path,
            &mut self.tls_cert_file,
            &mut self.tls_private_key_file,
            &mut self.authentication.x509.client_ca_file,
        ] {
            if path.as_deref() == Some("") {
                *path = None;
            }
        }
    }

    /// The runtime socket path behind `containerRuntimeEndpoint`.
    pub fn runtime_socket(&self) -> &str {
        self.container_runtime_endpoint
            .strip_prefix("unix://")
            .unwrap_or(&self.container_runtime_endpoint)
    }
}
