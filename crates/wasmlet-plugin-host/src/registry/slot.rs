//! One configured plugin: the version serving it, its spec, and the counters `/plugins` and
//! `wasmlet_plugin_info` show. The registry swaps versions in; calls record their outcome.

use super::{pull, rollout, FAULTS_TO_FAIL};
use crate::config::{PluginSource, PluginSpec, World};
use crate::error::Fault;
use crate::instance::LoadedPlugin;
use crate::metrics::{PluginMetrics, SlotMetrics, SwapResult};
use crate::records::PodMeta;
use crate::timestamp::rfc3339;
use arc_swap::ArcSwapOption;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tracing::{error, info, warn};

const LATENCY_SAMPLES: usize = 1024;

/// What an operator sees of a plugin's health.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum PluginState {
    /// Serving its decisions.
    Serving,
    /// No version could be loaded yet; the built-in default serves.
    NotLoaded,
    /// Faulted repeatedly; the built-in default serves until a new version loads.
    Failed,
}

/// A version refused at load or validation.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejected {
    /// The refused component's hash ("" when it could not be read).
    pub sha256: String,
    /// Why it was refused.
    pub reason: String,
    /// When, in RFC 3339.
    pub at: String,
}

/// A slot's counters and state, for `/plugins`.
#[derive(Debug)]
pub(super) struct Stats {
    pub(super) state: PluginState,
    calls: u64,
    faults: u64,
    consecutive_faults: u32,
    swaps: u64,
    last_fault: Option<String>,
    pub(super) last_rejected: Option<Rejected>,
    latencies: VecDeque<Duration>,
}

/// One configured plugin and the version serving it.
pub struct PluginSlot {
    /// The plugin's configured name.
    pub name: String,
    /// The world it serves.
    pub world: World,
    /// Ranks for comparison only (see `PluginSpec::shadow`).
    pub shadow: bool,
    pub(super) spec: Mutex<PluginSpec>,
    pub(super) current: ArcSwapOption<LoadedPlugin>,
    stats: Mutex<Stats>,
    pub(super) metrics: SlotMetrics,
    /// What the registry said last, for `oci://` plugins.
    pub(super) oci: Mutex<pull::OciState>,
    /// The candidate on trial and the last trial, for plugins with `rollout:`.
    pub(super) rollout: Mutex<rollout::Rollouts>,
}

impl PluginSlot {
    pub(super) fn new(spec: PluginSpec, metrics: &PluginMetrics) -> Self {
        Self {
            metrics: metrics.slot(&spec.name, spec.world),
            name: spec.name.clone(),
            world: spec.world,
            shadow: spec.shadow,
            spec: Mutex::new(spec),
            current: ArcSwapOption::empty(),
            stats: Mutex::new(Stats {
                state: PluginState::NotLoaded,
                calls: 0,
                faults: 0,
                consecutive_faults: 0,
                swaps: 0,
                last_fault: None,
                last_rejected: None,
                latencies: VecDeque::with_capacity(LATENCY_SAMPLES),
            }),
            oci: Mutex::new(pull::OciState::default()),
            rollout: Mutex::new(rollout::Rollouts::default()),
        }
    }

    pub(super) fn stats(&self) -> parking_lot::MutexGuard<'_, Stats> {
        self.stats.lock()
    }

    /// Whether this plugin runs for the pod `meta` names: its entry's `selector`, if any.
    pub fn selects(&self, meta: &PodMeta) -> bool {
        self.spec
            .lock()
            .selector
            .as_ref()
            .is_none_or(|selector| selector.matches(meta))
    }

    /// The version to call now, unless the plugin is not loaded or has failed.
    pub fn serving(&self) -> Option<Arc<LoadedPlugin>> {
        if self.stats().state != PluginState::Serving {
            return None;
        }
        self.current.load_full()
    }

    /// Records a call's outcome (and its latency) against the version that served it.
    pub(crate) fn record(&self, version: &LoadedPlugin, elapsed: Duration, fault: Option<&Fault>) {
        self.metrics.call(elapsed, fault);
        let mut stats = self.stats();
        stats.calls += 1;
        if stats.latencies.len() == LATENCY_SAMPLES {
            stats.latencies.pop_front();
        }
        stats.latencies.push_back(elapsed);
        match fault {
            None => stats.consecutive_faults = 0,
            Some(fault) => {
                stats.faults += 1;
                stats.consecutive_faults += 1;
                stats.last_fault = Some(format!("{}: {fault}", rfc3339(SystemTime::now())));
                warn!(plugin = %self.name, sha256 = %version.sha256, %fault, "plugin fault; the built-in default decides");
                if stats.consecutive_faults >= FAULTS_TO_FAIL && stats.state == PluginState::Serving
                {
                    stats.state = PluginState::Failed;
                    error!(plugin = %self.name, faults = stats.consecutive_faults, "plugin failed; the built-in default serves until a new version loads");
                }
            }
        }
    }

    pub(super) fn reject(&self, sha256: &str, reason: String) {
        warn!(plugin = %self.name, %sha256, %reason, "plugin version rejected; the serving version stays");
        self.metrics.swap(SwapResult::Rejected);
        self.stats().last_rejected = Some(Rejected {
            sha256: sha256.to_string(),
            reason,
            at: rfc3339(SystemTime::now()),
        });
    }

    /// Rejects a version; `digest`, its `oci://` manifest, is recorded as refused first, so a
    /// report that shows the rejection shows the refused manifest too.
    pub(super) fn refuse(&self, sha256: &str, digest: Option<&str>, reason: String) {
        if let Some(digest) = digest {
            self.oci().refused_manifest(digest);
        }
        self.reject(sha256, reason);
    }

    /// Swaps `version` in. `digest`, its `oci://` manifest, is recorded first, so a report
    /// that shows the new version never shows the old manifest beside it.
    pub(super) fn install(&self, version: Arc<LoadedPlugin>, digest: Option<&str>) {
        if let Some(digest) = digest {
            self.oci().serving_manifest(digest);
        }
        let old = self.current.swap(Some(version));
        let new = self.current.load();
        let new_sha = new.as_ref().map(|v| v.sha256.as_str()).unwrap_or("");
        info!(plugin = %self.name, old_sha256 = old.as_ref().map(|v| v.sha256.as_str()).unwrap_or("none"), new_sha256 = new_sha, "plugin swapped in");
        let mut stats = self.stats();
        stats.state = PluginState::Serving;
        stats.consecutive_faults = 0;
        stats.swaps += 1;
        drop(stats);
        self.metrics.swap(SwapResult::Swapped);
    }

    /// The serving version's sha256 ("" when none is loaded) and the state, for
    /// `wasmlet_plugin_info`.
    pub(crate) fn info(&self) -> (String, PluginState) {
        let sha256 = self
            .current
            .load()
            .as_ref()
            .map(|v| v.sha256.clone())
            .unwrap_or_default();
        (sha256, self.stats().state.clone())
    }

    /// The `/plugins` entry.
    pub fn report(&self) -> serde_json::Value {
        let rollout = self.rollout_report();
        let current = self.current.load_full();
        let stats = self.stats();
        let mut sorted: Vec<Duration> = stats.latencies.iter().copied().collect();
        sorted.sort();
        let percentile = |p: f64| {
            sorted
                .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
                .map(|d| d.as_secs_f64() * 1e6)
        };
        let spec = self.spec.lock();
        serde_json::json!({
            "name": self.name,
            "world": self.world.as_str(),
            "shadow": self.shadow,
            "path": spec.path,
            "sha256": current.as_ref().map(|v| v.sha256.clone()),
            "contract": current.as_ref().and_then(|v| v.contract.clone()),
            "state": stats.state,
            "loadedAt": current.as_ref().map(|v| rfc3339(v.loaded_at)),
            "calls": stats.calls,
            "faults": stats.faults,
            "consecutiveFaults": stats.consecutive_faults,
            "swaps": stats.swaps,
            "latencyMicros": {"p50": percentile(0.5), "p90": percentile(0.9), "p99": percentile(0.99)},
            "limits": {"deadlineMs": spec.limits.deadline_ms, "memoryMiB": spec.limits.memory_mib, "fuel": spec.limits.fuel},
            "lastFault": stats.last_fault,
            "lastRejected": stats.last_rejected,
            "selector": spec.selector,
            "exec": spec.capabilities.exec,
            "oci": matches!(spec.source, PluginSource::Oci(_)).then(|| self.oci_report()),
            "rollout": rollout,
        })
    }
}
