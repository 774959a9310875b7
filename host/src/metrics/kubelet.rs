//! The upstream kubelet's own series (`pkg/kubelet/metrics/metrics.go`), with its names, help
//! text (and stability prefix), types, labels and buckets, so the kubernetes-mixin dashboards
//! and kube-prometheus alerts read wasmlet unchanged.
//!
//! One set per process, as upstream's `legacyregistry`: the CRI client, the PLEG, the pod
//! workers, both HTTP ports and the API client all count into it, and threading a handle
//! through each of them would buy nothing a process has two of.

use super::exposition::register_verbatim;
pub use labels::{image_gc_reason, label, operation_type, static_label};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::LazyLock;

mod labels;

/// Label pairs of one series.
pub type Labels = Vec<(&'static str, String)>;

/// Upstream's `metrics.DefBuckets` (client_golang's default).
pub const DEFAULT_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Upstream's `podStartupDurationBuckets`.
const POD_STARTUP_BUCKETS: [f64; 25] = [
    0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 30.0, 45.0, 60.0, 120.0, 180.0, 240.0,
    300.0, 360.0, 480.0, 600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0,
];

/// Builds a histogram with fixed buckets for every new series of a family.
#[derive(Clone)]
pub struct Buckets(fn() -> Histogram);

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        (self.0)()
    }
}

fn default_histogram() -> Histogram {
    Histogram::new(DEFAULT_BUCKETS)
}

fn runtime_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.5, 14))
}

/// client-go's request latency buckets.
fn rest_client_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
    ])
}

fn pod_startup_histogram() -> Histogram {
    Histogram::new(POD_STARTUP_BUCKETS)
}

/// A labelled histogram family.
pub type HistogramFamily = Family<Labels, Histogram, Buckets>;

/// The kubelet's series. Fields are named after the series they feed.
pub struct KubeletMetrics {
    registry: Registry,
    /// `kubelet_node_name{node}`: always 1.
    pub node_name: Family<Labels, Gauge>,
    /// `kubelet_running_pods`: pods with a ready sandbox, from the last relist.
    pub running_pods: Gauge,
    /// `kubelet_running_containers{container_state}`, from the last relist.
    pub running_containers: Family<Labels, Gauge>,
    /// `kubelet_desired_pods{static}`: pods the sources ask for.
    pub desired_pods: Family<Labels, Gauge>,
    /// `kubelet_active_pods{static}`: admitted pods that are not terminal.
    pub active_pods: Family<Labels, Gauge>,
    /// `kubelet_mirror_pods`: mirror pods the node keeps for its static pods.
    pub mirror_pods: Gauge,
    /// `kubelet_pod_start_duration_seconds`: first seen to running.
    pub pod_start_duration: Histogram,
    /// `kubelet_pod_start_sli_duration_seconds`: creation to all containers started, less
    /// image pulls.
    pub pod_start_sli_duration: Histogram,
    /// `kubelet_first_network_pod_start_sli_duration_seconds`: the same for the first pod on
    /// the node with its own network namespace (it also waited for the network plugin).
    pub first_network_pod_start_sli_duration: Gauge<f64, AtomicU64>,
    /// `kubelet_pod_worker_duration_seconds{operation_type}`: one sync.
    pub pod_worker_duration: HistogramFamily,
    /// `kubelet_pod_worker_start_duration_seconds`: first seen to the worker's start.
    pub pod_worker_start_duration: Histogram,
    /// `kubelet_pleg_relist_duration_seconds`.
    pub pleg_relist_duration: Histogram,
    /// `kubelet_pleg_relist_interval_seconds`: between the starts of two relists.
    pub pleg_relist_interval: Histogram,
    /// `kubelet_pleg_last_seen_seconds`: the Unix time of the last relist.
    pub pleg_last_seen: Gauge<f64, AtomicU64>,
    /// `kubelet_pleg_discard_events`: events dropped because the channel was full.
    pub pleg_discard_events: Counter,
    /// `kubelet_runtime_operations_total{operation_type}`.
    pub runtime_operations: Family<Labels, Counter>,
    /// `kubelet_runtime_operations_errors_total{operation_type}`.
    pub runtime_operations_errors: Family<Labels, Counter>,
    /// `kubelet_runtime_operations_duration_seconds{operation_type}`.
    pub runtime_operations_duration: HistogramFamily,
    /// `kubelet_evictions{eviction_signal}`.
    pub evictions: Family<Labels, Counter>,
    /// `kubelet_eviction_stats_age_seconds{eviction_signal}`.
    pub eviction_stats_age: HistogramFamily,
    /// `kubelet_preemptions{preemption_signal}`: pods preempted to admit a critical pod.
    pub preemptions: Family<Labels, Counter>,
    /// `kubelet_started_pods_total`: sandboxes created.
    pub started_pods: Counter,
    /// `kubelet_started_pods_errors_total`.
    pub started_pods_errors: Counter,
    /// `kubelet_started_containers_total{container_type}`.
    pub started_containers: Family<Labels, Counter>,
    /// `kubelet_started_containers_errors_total{container_type,code}`.
    pub started_containers_errors: Family<Labels, Counter>,
    /// `kubelet_restarted_pods_total{static}`: a UID deleted and added again.
    pub restarted_pods: Family<Labels, Counter>,
    /// `kubelet_image_garbage_collected_total{reason}`: `age` or `space`, see
    /// [`image_gc_reason`].
    pub image_garbage_collected: Family<Labels, Counter>,
    /// `kubelet_node_startup_duration_seconds`: boot to the node's first Ready.
    pub node_startup_duration: Gauge<f64, AtomicU64>,
    /// `kubelet_http_requests_total{long_running,method,path,server_type}`.
    pub http_requests: Family<Labels, Counter>,
    /// `kubelet_http_requests_duration_seconds{long_running,method,path,server_type}`.
    pub http_requests_duration: HistogramFamily,
    /// `kubelet_http_inflight_requests{long_running,method,path,server_type}`.
    pub http_inflight_requests: Family<Labels, Gauge>,
    /// `kubernetes_build_info{...}`: always 1, labelled with the version.
    pub build_info: Family<Labels, Gauge>,
    /// `rest_client_requests_total{code,host,method}`: API server requests (cluster mode).
    pub rest_client_requests: Family<Labels, Counter>,
    /// `rest_client_request_duration_seconds{host,verb}`.
    pub rest_client_request_duration: HistogramFamily,
    /// `kubelet_cgroup_manager_duration_seconds{operation_type}`: pod cgroup `create`,
    /// `update` (an in-place resize) and `destroy`.
    pub cgroup_manager_duration: HistogramFamily,
    /// `kubelet_cgroup_version`: 1 or 2, set at start.
    pub cgroup_version: Gauge,
    /// The latest emptyDir measurements, for `kubelet_volume_stats_*`.
    pub volume_stats: super::volume_stats::VolumeStats,
    /// Whether a pod with its own network has started yet.
    first_network_pod_started: std::sync::atomic::AtomicBool,
}

impl KubeletMetrics {
    fn new() -> Self {
        let histograms =
            |make: fn() -> Histogram| HistogramFamily::new_with_constructor(Buckets(make));
        let metrics = KubeletMetrics {
            registry: Registry::default(),
            node_name: Family::default(),
            running_pods: Gauge::default(),
            running_containers: Family::default(),
            desired_pods: Family::default(),
            active_pods: Family::default(),
            mirror_pods: Gauge::default(),
            pod_start_duration: pod_startup_histogram(),
            pod_start_sli_duration: pod_startup_histogram(),
            first_network_pod_start_sli_duration: Gauge::default(),
            pod_worker_duration: histograms(default_histogram),
            pod_worker_start_duration: default_histogram(),
            pleg_relist_duration: default_histogram(),
            pleg_relist_interval: default_histogram(),
            pleg_last_seen: Gauge::default(),
            pleg_discard_events: Counter::default(),
            runtime_operations: Family::default(),
            runtime_operations_errors: Family::default(),
            runtime_operations_duration: histograms(runtime_histogram),
            evictions: Family::default(),
            eviction_stats_age: histograms(default_histogram),
            preemptions: Family::default(),
            started_pods: Counter::default(),
            started_pods_errors: Counter::default(),
            started_containers: Family::default(),
            started_containers_errors: Family::default(),
            restarted_pods: Family::default(),
            image_garbage_collected: Family::default(),
            node_startup_duration: Gauge::default(),
            http_requests: Family::default(),
            http_requests_duration: histograms(default_histogram),
            http_inflight_requests: Family::default(),
            build_info: Family::default(),
            rest_client_requests: Family::default(),
            rest_client_request_duration: histograms(rest_client_histogram),
            cgroup_manager_duration: histograms(default_histogram),
            cgroup_version: Gauge::default(),
            volume_stats: Default::default(),
            first_network_pod_started: std::sync::atomic::AtomicBool::new(false),
        };
        metrics.registered()
    }

    fn registered(mut self) -> Self {
        let r = &mut self.registry;
        r.register_collector(Box::new(super::process::ProcessCollector));
        r.register_collector(Box::new(super::volume_stats::VolumeStatsCollector));
        // Counters are registered without `_total`: the encoder appends it (see exposition).
        register_verbatim(
            r,
            "kubelet_node_name",
            "[ALPHA] The node's name. The count is always 1.",
            self.node_name.clone(),
        );
        register_verbatim(
            r,
            "kubelet_running_pods",
            "[ALPHA] Number of pods that have a running pod sandbox",
            self.running_pods.clone(),
        );
        register_verbatim(
            r,
            "kubelet_running_containers",
            "[ALPHA] Number of containers currently running",
            self.running_containers.clone(),
        );
        register_verbatim(r, "kubelet_desired_pods", "[ALPHA] The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.", self.desired_pods.clone());
        register_verbatim(r, "kubelet_active_pods", "[ALPHA] The number of pods the kubelet considers active and which are being considered when admitting new pods. static is true if the pod is not from the apiserver.", self.active_pods.clone());
        register_verbatim(r, "kubelet_mirror_pods", "[ALPHA] The number of mirror pods the kubelet will try to create (one per admitted static pod)", self.mirror_pods.clone());
        register_verbatim(r, "kubelet_pod_start_duration_seconds", "[ALPHA] Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run", self.pod_start_duration.clone());
        register_verbatim(r, "kubelet_pod_start_sli_duration_seconds", "[ALPHA] Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch", self.pod_start_sli_duration.clone());
        register_verbatim(r, "kubelet_first_network_pod_start_sli_duration_seconds", "[INTERNAL] Duration in seconds to start the first network pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch", self.first_network_pod_start_sli_duration.clone());
        register_verbatim(r, "kubelet_pod_worker_duration_seconds", "[ALPHA] Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync", self.pod_worker_duration.clone());
        register_verbatim(
            r,
            "kubelet_pod_worker_start_duration_seconds",
            "[ALPHA] Duration in seconds from kubelet seeing a pod to starting a worker.",
            self.pod_worker_start_duration.clone(),
        );
        register_verbatim(
            r,
            "kubelet_pleg_relist_duration_seconds",
            "[ALPHA] Duration in seconds for relisting pods in PLEG.",
            self.pleg_relist_duration.clone(),
        );
        register_verbatim(
            r,
            "kubelet_pleg_relist_interval_seconds",
            "[ALPHA] Interval in seconds between relisting in PLEG.",
            self.pleg_relist_interval.clone(),
        );
        register_verbatim(
            r,
            "kubelet_pleg_last_seen_seconds",
            "[ALPHA] Timestamp in seconds when PLEG was last seen active.",
            self.pleg_last_seen.clone(),
        );
        register_verbatim(
            r,
            "kubelet_pleg_discard_events",
            "[ALPHA] The number of discard events in PLEG.",
            self.pleg_discard_events.clone(),
        );
        register_verbatim(
            r,
            "kubelet_runtime_operations",
            "[ALPHA] Cumulative number of runtime operations by operation type.",
            self.runtime_operations.clone(),
        );
        register_verbatim(
            r,
            "kubelet_runtime_operations_errors",
            "[ALPHA] Cumulative number of runtime operation errors by operation type.",
            self.runtime_operations_errors.clone(),
        );
        register_verbatim(
            r,
            "kubelet_runtime_operations_duration_seconds",
            "[ALPHA] Duration in seconds of runtime operations. Broken down by operation type.",
            self.runtime_operations_duration.clone(),
        );
        register_verbatim(
            r,
            "kubelet_evictions",
            "[ALPHA] Cumulative number of pod evictions by eviction signal",
            self.evictions.clone(),
        );
        register_verbatim(r, "kubelet_eviction_stats_age_seconds", "[ALPHA] Time between when stats are collected, and when pod is evicted based on those stats by eviction signal", self.eviction_stats_age.clone());
        register_verbatim(
            r,
            "kubelet_preemptions",
            "[ALPHA] Cumulative number of pod preemptions by preemption resource",
            self.preemptions.clone(),
        );
        register_verbatim(
            r,
            "kubelet_started_pods",
            "[ALPHA] Cumulative number of pods started",
            self.started_pods.clone(),
        );
        register_verbatim(
            r,
            "kubelet_started_pods_errors",
            "[ALPHA] Cumulative number of errors when starting pods",
            self.started_pods_errors.clone(),
        );
        register_verbatim(
            r,
            "kubelet_started_containers",
            "[ALPHA] Cumulative number of containers started",
            self.started_containers.clone(),
        );
        register_verbatim(
            r,
            "kubelet_started_containers_errors",
            "[ALPHA] Cumulative number of errors when starting containers",
            self.started_containers_errors.clone(),
        );
        register_verbatim(r, "kubelet_restarted_pods", "[ALPHA] Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)", self.restarted_pods.clone());
        register_verbatim(r, "kubelet_image_garbage_collected", "[ALPHA] Total number of images garbage collected by the kubelet, whether through disk usage or image age.", self.image_garbage_collected.clone());
        register_verbatim(
            r,
            "kubelet_node_startup_duration_seconds",
            "[ALPHA] Duration in seconds of node startup in total.",
            self.node_startup_duration.clone(),
        );
        register_verbatim(
            r,
            "kubelet_http_requests",
            "[ALPHA] Number of the http requests received since the server started",
            self.http_requests.clone(),
        );
        register_verbatim(
            r,
            "kubelet_http_requests_duration_seconds",
            "[ALPHA] Duration in seconds to serve http requests",
            self.http_requests_duration.clone(),
        );
        register_verbatim(
            r,
            "kubelet_http_inflight_requests",
            "[ALPHA] Number of the inflight http requests",
            self.http_inflight_requests.clone(),
        );
        register_verbatim(
            r,
            "rest_client_requests",
            "[ALPHA] Number of HTTP requests, partitioned by status code, method, and host.",
            self.rest_client_requests.clone(),
        );
        register_verbatim(
            r,
            "rest_client_request_duration_seconds",
            "[ALPHA] Request latency in seconds. Broken down by verb, and host.",
            self.rest_client_request_duration.clone(),
        );
        register_verbatim(
            r,
            "kubelet_cgroup_manager_duration_seconds",
            "[ALPHA] Duration in seconds for cgroup manager operations. Broken down by method.",
            self.cgroup_manager_duration.clone(),
        );
        register_verbatim(
            r,
            "kubelet_cgroup_version",
            "[ALPHA] cgroup version on the hosts.",
            self.cgroup_version.clone(),
        );
        register_verbatim(
            r,
            "storage_operation_duration_seconds",
            "[ALPHA] Storage operation duration",
            super::storage::storage_operations().clone(),
        );
        register_verbatim(r, "kubernetes_build_info", "[ALPHA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.", self.build_info.clone());
        self
    }

    /// A pod ran for the first time: `since_seen` from the worker's first sight of it, `sli`
    /// from its creation less image pulls (none when the pod has no creation time). As
    /// upstream's `pod_startup_latency_tracker.go`, the first pod with an SLI and its own
    /// network namespace also sets `kubelet_first_network_pod_start_sli_duration_seconds`.
    pub fn pod_started(&self, since_seen: f64, sli: Option<f64>, host_network: bool) {
        self.pod_start_duration.observe(since_seen);
        let Some(sli) = sli.map(|sli| sli.max(0.0)) else {
            return;
        };
        self.pod_start_sli_duration.observe(sli);
        if !host_network
            && !self
                .first_network_pod_started
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            self.first_network_pod_start_sli_duration.set(sli);
        }
    }

    /// Sets `kubernetes_build_info`: `kubernetes_version` is the Kubernetes release wasmlet
    /// behaves as (`v1.35.4`), shown with wasmlet's own version after it as the node's
    /// `kubeletVersion`; `arch` as Go names it. Go's label is empty.
    pub fn set_build_info(&self, kubernetes_version: &str, arch: &str) {
        let mut parts = kubernetes_version.trim_start_matches('v').split('.');
        let major = parts.next().unwrap_or_default().to_string();
        let minor = parts.next().unwrap_or_default().to_string();
        let labels = vec![
            ("build_date", String::new()),
            ("compiler", "rustc".to_string()),
            ("git_commit", String::new()),
            ("git_tree_state", String::new()),
            (
                "git_version",
                format!("{kubernetes_version}-wasmlet.{}", env!("CARGO_PKG_VERSION")),
            ),
            ("go_version", String::new()),
            ("major", major),
            ("minor", minor),
            ("platform", format!("linux/{arch}")),
        ];
        self.build_info.get_or_create(&labels).set(1);
    }

    /// The registry, for the exposition.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// `kubelet_pod_worker_duration_seconds{operation_type}` for one sync or kill that
    /// `began` then.
    pub fn pod_worker_operation(&self, operation: &str, began: std::time::Instant) {
        self.pod_worker_duration
            .get_or_create(&label("operation_type", operation))
            .observe(began.elapsed().as_secs_f64());
    }

    /// Times one pod cgroup operation (`create`, `update`, `destroy`), as upstream's cgroup
    /// manager does.
    pub fn cgroup_operation<T>(&self, operation: &str, run: impl FnOnce() -> T) -> T {
        let started = std::time::Instant::now();
        let result = run();
        self.cgroup_manager_duration
            .get_or_create(&label("operation_type", operation))
            .observe(started.elapsed().as_secs_f64());
        result
    }

    /// Counts one CRI call (`rpc` as CRI names it): its duration and whether it failed.
    pub fn runtime_operation(&self, rpc: &str, seconds: f64, failed: bool) {
        let labels = label("operation_type", operation_type(rpc));
        self.runtime_operations.get_or_create(&labels).inc();
        self.runtime_operations_duration
            .get_or_create(&labels)
            .observe(seconds);
        if failed {
            self.runtime_operations_errors.get_or_create(&labels).inc();
        }
    }
}

/// The process's kubelet series.
pub fn kubelet() -> &'static KubeletMetrics {
    static METRICS: LazyLock<KubeletMetrics> = LazyLock::new(KubeletMetrics::new);
    &METRICS
}
