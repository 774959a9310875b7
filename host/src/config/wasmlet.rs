//! The `wasmlet.dev/v1alpha1` WasmletConfiguration: settings upstream has no field for, or
//! only a compiled-in constant (so tests can shorten periods instead of sleeping through them).

use super::duration;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Fields of the WasmletConfiguration document.
pub const KNOWN_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "plegRelistPeriod",
    "plegEventedRelistPeriod",
    "plegUseEvents",
    "housekeepingPeriod",
    "containerRestartBackOff",
    "imagePullBackOff",
    "pluginConfig",
    "containerGCPeriod",
    "imageGCPeriod",
    "evictionMonitoringPeriod",
    "evictStaticPods",
    "cadvisorHousekeepingPeriod",
    "psiEvictionWindow",
    "nodePressurePath",
    "maxParallelRuntimeStarts",
];

/// wasmlet's own settings, the second document of the config file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct WasmletConfiguration {
    /// Period of the relisting PLEG (upstream: 1s, compiled in).
    #[serde(with = "duration::go")]
    pub pleg_relist_period: Duration,
    /// Relist period while containerd's event stream is up: the safety net that corrects
    /// anything the stream missed.
    #[serde(with = "duration::go")]
    pub pleg_evented_relist_period: Duration,
    /// Subscribe to containerd's task events (when the runtime is containerd).
    pub pleg_use_events: bool,
    /// Period of orphan cleanup (upstream: 2s).
    #[serde(with = "duration::go")]
    pub housekeeping_period: Duration,
    /// CrashLoopBackOff (upstream: 10s doubling to 5m, reset after 10m of running).
    pub container_restart_back_off: BackOffConfig,
    /// ImagePullBackOff (upstream: 10s doubling to 5m).
    pub image_pull_back_off: BackOffConfig,
    /// The PluginConfiguration file (relative to this config file); unset: built-in
    /// defaults decide everything.
    pub plugin_config: Option<String>,
    /// Period of container GC (upstream: 1m, compiled in).
    #[serde(rename = "containerGCPeriod", with = "duration::go")]
    pub container_gc_period: Duration,
    /// Period of image GC (upstream: 5m, compiled in).
    #[serde(rename = "imageGCPeriod", with = "duration::go")]
    pub image_gc_period: Duration,
    /// Period of the eviction manager's signal check (upstream: 10s, compiled in).
    #[serde(with = "duration::go")]
    pub eviction_monitoring_period: Duration,
    /// Treat static pods as ordinary pods for eviction and pressure admission (a standalone
    /// node has nothing but static pods); upstream always treats them as critical.
    pub evict_static_pods: bool,
    /// How often `/metrics/cadvisor` and `/metrics/resource` read the cgroups and the runtime
    /// while they are scraped (cAdvisor's housekeeping interval, 10s as the kubelet sets it,
    /// whose cAdvisor both come from upstream); a scrape serves the last reading.
    #[serde(with = "duration::go")]
    pub cadvisor_housekeeping_period: Duration,
    /// At most one eviction an eviction plugin asks for on pressure stall information
    /// (`pressure-watch`) per window; a request inside it is logged, not acted on.
    #[serde(rename = "psiEvictionWindow", with = "duration::go")]
    pub psi_eviction_window: Duration,
    /// The directory the eviction manager reads the node's PSI from, laid out as
    /// `/proc/pressure` (`cpu`, `memory`, `io`): another path where wasmlet runs with a
    /// `/proc` of its own and the host's is mounted elsewhere.
    pub node_pressure_path: std::path::PathBuf,
    /// At most this many RunPodSandbox, CreateContainer and StartContainer calls in flight at
    /// once (0: no bound). containerd serialises much of that work, and a burst of starts
    /// (110 static pods at boot) finishes sooner a few at a time; image pulls are not bounded
    /// by it (upstream's `maxParallelImagePulls` is their knob).
    pub max_parallel_runtime_starts: usize,
}

/// An exponential back-off: `initialPeriod`, doubled per failure up to `maxPeriod`, forgotten
/// once nothing failed for `resetPeriod`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackOffConfig {
    /// The delay after the first failure.
    #[serde(with = "duration::go")]
    pub initial_period: Duration,
    /// The ceiling the doubling stops at.
    #[serde(with = "duration::go")]
    pub max_period: Duration,
    /// How long without a failure before the next failure starts again from `initial_period`.
    #[serde(with = "duration::go")]
    pub reset_period: Duration,
}

impl BackOffConfig {
    /// Upstream's container and image back-off: 10s, 300s, forgotten after 600s.
    pub const UPSTREAM: BackOffConfig = BackOffConfig {
        initial_period: Duration::from_secs(10),
        max_period: Duration::from_secs(300),
        reset_period: Duration::from_secs(600),
    };
}

impl Default for WasmletConfiguration {
    fn default() -> Self {
        Self {
            pleg_relist_period: Duration::from_secs(1),
            pleg_evented_relist_period: Duration::from_secs(10),
            pleg_use_events: true,
            housekeeping_period: Duration::from_secs(2),
            container_restart_back_off: BackOffConfig::UPSTREAM,
            image_pull_back_off: BackOffConfig::UPSTREAM,
            plugin_config: None,
            container_gc_period: Duration::from_secs(60),
            image_gc_period: Duration::from_secs(300),
            eviction_monitoring_period: Duration::from_secs(10),
            evict_static_pods: false,
            cadvisor_housekeeping_period: Duration::from_secs(10),
            psi_eviction_window: Duration::from_secs(300),
            node_pressure_path: crate::stats::psi::NODE_PRESSURE_DIR.into(),
            max_parallel_runtime_starts: 8,
        }
    }
}

impl WasmletConfiguration {
    /// Checks values serde cannot: the error names the field and what is wrong with it.
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (name, value) in [
            ("plegRelistPeriod", self.pleg_relist_period),
            ("plegEventedRelistPeriod", self.pleg_evented_relist_period),
            ("housekeepingPeriod", self.housekeeping_period),
            ("containerGCPeriod", self.container_gc_period),
            ("imageGCPeriod", self.image_gc_period),
            ("evictionMonitoringPeriod", self.eviction_monitoring_period),
            (
                "cadvisorHousekeepingPeriod",
                self.cadvisor_housekeeping_period,
            ),
            ("psiEvictionWindow", self.psi_eviction_window),
        ] {
            if value.is_zero() {
                return Err((name.into(), "must be greater than 0".into()));
            }
        }
        for (name, backoff) in [
            ("containerRestartBackOff", &self.container_restart_back_off),
            ("imagePullBackOff", &self.image_pull_back_off),
        ] {
            if backoff.initial_period.is_zero() || backoff.max_period < backoff.initial_period {
                return Err((name.into(), "needs 0 < initialPeriod <= maxPeriod".into()));
            }
        }
        Ok(())
    }
}
