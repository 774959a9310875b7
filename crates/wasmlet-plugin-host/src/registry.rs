//! The plugin registry: the configured plugins, the version of each that serves now, their
//! counters, and hot swap. A change to the plugin config or to a `.wasm` file is compiled and
//! validated off the hot path, then swapped in atomically; calls in flight finish on the old
//! version; a version that fails validation never replaces a working one. An eviction plugin
//! with `rollout:` first tries a new version as the serving one's candidate (`rollout`).

mod pull;
mod rollout;

use rollout::Offered;
pub(crate) use rollout::TrialProgress;
pub use rollout::{CandidateRank, RolloutState};

use crate::config::{self, PluginSource, PluginSpec, World};
use crate::engine::{sha256_hex, PluginEngine};
use crate::instance::{Fault, LoadedPlugin};
use crate::metrics::{CallResult, PluginMetrics, SlotMetrics, SwapResult};
use crate::records::PodMeta;
use arc_swap::ArcSwapOption;
use notify::{RecursiveMode, Watcher};
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tracing::{error, info, warn};

/// Consecutive faults after which a plugin is put in the failed state (the built-in default
/// serves until a new version or config is loaded).
pub const FAULTS_TO_FAIL: u32 = 5;
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

#[derive(Debug)]
struct Stats {
    state: PluginState,
    calls: u64,
    faults: u64,
    consecutive_faults: u32,
    swaps: u64,
    last_fault: Option<String>,
    last_rejected: Option<Rejected>,
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
    spec: Mutex<PluginSpec>,
    current: ArcSwapOption<LoadedPlugin>,
    stats: Mutex<Stats>,
    metrics: SlotMetrics,
    /// What the registry said last, for `oci://` plugins.
    oci: Mutex<pull::OciState>,
    /// The candidate on trial and the last trial, for plugins with `rollout:`.
    rollout: Mutex<rollout::Rollouts>,
}

/// A time as the API server writes one (`metav1.Time`'s RFC 3339), as `/pods` shows times.
pub(crate) fn rfc3339(at: SystemTime) -> String {
    let nanos = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    jiff::Timestamp::from_nanosecond(nanos)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

impl PluginSlot {
    fn new(spec: PluginSpec, metrics: &PluginMetrics) -> Self {
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

    fn stats(&self) -> std::sync::MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether this plugin runs for the pod `meta` names: its entry's `selector`, if any.
    pub fn selects(&self, meta: &PodMeta) -> bool {
        self.spec
            .lock()
            .unwrap_or_else(|p| p.into_inner())
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

    fn reject(&self, sha256: &str, reason: String) {
        warn!(plugin = %self.name, %sha256, %reason, "plugin version rejected; the serving version stays");
        self.metrics.swap(SwapResult::Rejected);
        self.stats().last_rejected = Some(Rejected {
            sha256: sha256.to_string(),
            reason,
            at: rfc3339(SystemTime::now()),
        });
    }

    fn install(&self, version: Arc<LoadedPlugin>) {
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
        let spec = self.spec.lock().unwrap_or_else(|p| p.into_inner());
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

/// All configured plugins.
pub struct PluginRegistry {
    engine: PluginEngine,
    config_file: Option<PathBuf>,
    /// Shared with the `wasmlet_plugin_info` collector, which reads it at each scrape.
    slots: Arc<arc_swap::ArcSwap<Vec<Arc<PluginSlot>>>>,
    metrics: PluginMetrics,
    config_error: Mutex<Option<String>>,
    reload_lock: Mutex<()>,
    /// Where `oci://` plugins are kept; none without a root directory.
    oci_store: Option<crate::oci::Store>,
}

impl PluginRegistry {
    /// A registry serving `config_file` (none: every world uses its built-in default).
    /// Without a root directory there is no store for `oci://` plugins: they are refused
    /// (see [`PluginRegistry::with_root_dir`]).
    pub fn new(engine: PluginEngine, config_file: Option<PathBuf>) -> Arc<Self> {
        Self::build(engine, config_file, None)
    }

    /// A registry serving `config_file` whose `oci://` plugins are pulled into
    /// `<root_dir>/plugins/oci` (the node's root directory), tags polled by a thread of its
    /// own that ends with the registry.
    pub fn with_root_dir(
        engine: PluginEngine,
        config_file: Option<PathBuf>,
        root_dir: &Path,
    ) -> Arc<Self> {
        let store = crate::oci::Store::new(root_dir.join("plugins/oci"));
        let registry = Self::build(engine, config_file, Some(store));
        pull::start_poller(&registry);
        registry
    }

    fn build(
        engine: PluginEngine,
        config_file: Option<PathBuf>,
        oci_store: Option<crate::oci::Store>,
    ) -> Arc<Self> {
        let registry = Arc::new(Self {
            engine,
            config_file,
            slots: Arc::new(arc_swap::ArcSwap::from_pointee(Vec::new())),
            metrics: PluginMetrics::default(),
            config_error: Mutex::new(None),
            reload_lock: Mutex::new(()),
            oci_store,
        });
        registry.reload();
        registry
    }

    /// Registers the plugin series on `registry`, which is expected to carry the `wasmlet`
    /// prefix (`Registry::with_prefix("wasmlet")`, or a root's
    /// `sub_registry_with_prefix("wasmlet")`): `wasmlet_plugin_calls_total{plugin,world,result}`,
    /// `wasmlet_plugin_call_duration_seconds{plugin,world}` (a histogram, 1 µs to 1 s),
    /// `wasmlet_plugin_faults_total{plugin,kind}`, `wasmlet_plugin_swaps_total{plugin,result}`
    /// `wasmlet_plugin_info{plugin,world,sha256,state}`, `wasmlet_plugin_pulls_total{plugin,result}`,
    /// `wasmlet_plugin_rollouts_total{plugin,result}` and, while a candidate is on trial,
    /// `wasmlet_plugin_rollout_{decisions,disagreements,shadow_cycles}{plugin,sha256}`. The series count from the
    /// registry's creation, whenever this is called; call it once per Prometheus registry.
    pub fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        self.metrics.register(registry, self.slots.clone());
    }

    /// The engines the registry compiles with.
    pub fn engine(&self) -> &PluginEngine {
        &self.engine
    }

    /// The first plugin configured for `world`.
    pub fn slot(&self, world: World) -> Option<Arc<PluginSlot>> {
        self.slots
            .load()
            .iter()
            .find(|s| s.world == world && !s.shadow)
            .cloned()
    }

    /// The shadow plugin of `world`, if one is configured.
    pub fn shadow_slot(&self, world: World) -> Option<Arc<PluginSlot>> {
        self.slots
            .load()
            .iter()
            .find(|s| s.world == world && s.shadow)
            .cloned()
    }

    /// Every plugin configured for `world`, in config order.
    pub fn slots_of(&self, world: World) -> Vec<Arc<PluginSlot>> {
        self.slots
            .load()
            .iter()
            .filter(|s| s.world == world)
            .cloned()
            .collect()
    }

    /// Whether any plugin serves `world` (lets callers skip building a call's input).
    pub fn has(&self, world: World) -> bool {
        self.slots.load().iter().any(|s| s.world == world)
    }

    /// The plugin named `name`.
    pub fn slot_named(&self, name: &str) -> Option<Arc<PluginSlot>> {
        self.slots.load().iter().find(|s| s.name == name).cloned()
    }

    /// Re-reads the config and every `.wasm`; loads, validates and swaps in what changed.
    /// Blocking (it compiles): call it off the async executor.
    pub fn reload(&self) {
        let _one_at_a_time = self.reload_lock.lock().unwrap_or_else(|p| p.into_inner());
        let Some(file) = &self.config_file else {
            return;
        };
        let specs = match config::load(file) {
            Ok(specs) => {
                *self.config_error.lock().unwrap_or_else(|p| p.into_inner()) = None;
                specs
            }
            Err(problem) => {
                error!(error = %problem, "plugin config rejected; the plugins loaded before keep serving");
                *self.config_error.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(problem.to_string());
                return;
            }
        };
        let old = self.slots.load_full();
        let mut slots = Vec::new();
        for spec in specs {
            let slot = match old
                .iter()
                .find(|s| s.name == spec.name && s.world == spec.world && s.shadow == spec.shadow)
            {
                Some(existing) => existing.clone(),
                None => Arc::new(PluginSlot::new(spec.clone(), &self.metrics)),
            };
            self.refresh(&slot, spec);
            slots.push(slot);
        }
        self.slots.store(Arc::new(slots));
    }

    fn refresh(&self, slot: &PluginSlot, spec: PluginSpec) {
        let path = match &spec.source {
            PluginSource::File(path) => path.clone(),
            PluginSource::Oci(source) => {
                let source = source.clone();
                return self.refresh_oci(slot, spec, &source, false);
            }
        };
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) => {
                slot.reject("", format!("cannot read {}: {e}", path.display()));
                *slot.spec.lock().unwrap_or_else(|p| p.into_inner()) = spec;
                return;
            }
        };
        self.offer(slot, spec, &bytes, "", None);
    }

    /// Loads, validates and swaps in `bytes` for `spec` (or puts them on trial, `rollout`).
    /// `origin` prefixes a rejection's reason and `digest` names the OCI manifest they came
    /// in, for an `oci://` plugin.
    fn offer(
        &self,
        slot: &PluginSlot,
        spec: PluginSpec,
        bytes: &[u8],
        origin: &str,
        digest: Option<&str>,
    ) -> Offered {
        let sha256 = sha256_hex(bytes);
        let current = slot.current.load_full();
        let unchanged = current
            .as_ref()
            .is_some_and(|v| v.sha256 == sha256 && v.spec == spec);
        let on_trial = slot.is_candidate(&sha256, &spec);
        let already_rejected = slot
            .stats()
            .last_rejected
            .as_ref()
            .is_some_and(|r| r.sha256 == sha256)
            && *slot.spec.lock().unwrap_or_else(|p| p.into_inner()) == spec;
        *slot.spec.lock().unwrap_or_else(|p| p.into_inner()) = spec.clone();
        if on_trial {
            return Offered::OnTrial;
        }
        if unchanged {
            slot.withdraw("the serving version was offered again");
            return Offered::Serving;
        }
        if already_rejected {
            return Offered::Refused;
        }
        if let Some(pin) = &spec.sha256 {
            if *pin != sha256 {
                slot.reject(
                    &sha256,
                    format!("{origin}sha256 {sha256} does not match the pinned {pin}"),
                );
                return Offered::Refused;
            }
        }
        let started = Instant::now();
        let version = match LoadedPlugin::load(&self.engine, &spec, bytes, &sha256) {
            Ok(version) => version,
            Err(error) => {
                slot.reject(&sha256, format!("{origin}{error}"));
                return Offered::Refused;
            }
        };
        let span = tracing::debug_span!(
            "plugin_call",
            plugin = %spec.name,
            world = spec.world.as_str(),
            call = "self-check",
            %sha256,
            result = tracing::field::Empty,
            fault = tracing::field::Empty,
        );
        let validated = span.in_scope(|| version.validate());
        span.record("result", CallResult::of(validated.as_ref().err()).as_str());
        if let Err(fault) = &validated {
            span.record("fault", fault.kind());
        }
        if let Err(fault) = validated {
            slot.reject(&sha256, format!("{origin}validation failed: {fault}"));
            return Offered::Refused;
        }
        info!(plugin = %spec.name, %sha256, elapsed_ms = started.elapsed().as_millis() as u64, "plugin version validated");
        slot.adopt(version, digest, origin)
    }

    /// The `/plugins` document.
    pub fn report(&self) -> serde_json::Value {
        let plugins: Vec<serde_json::Value> =
            self.slots.load().iter().map(|s| s.report()).collect();
        serde_json::json!({
            "configFile": self.config_file,
            "configError": *self.config_error.lock().unwrap_or_else(|p| p.into_inner()),
            "plugins": plugins,
        })
    }

    /// Watches the config file and the `.wasm` files (their directories, so a file renamed
    /// over the old one is seen too) and reloads on change, off the async executor.
    pub fn watch(self: &Arc<Self>) -> Option<notify::RecommendedWatcher> {
        let file = self.config_file.clone()?;
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if event.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
                    let _ = tx.send(());
                }
            })
            .ok()?;
        let mut dirs: HashSet<PathBuf> = HashSet::new();
        dirs.insert(parent(&file));
        for slot in self.slots.load().iter() {
            // `oci://` plugins are polled (`pull`), not watched.
            if let PluginSource::File(path) =
                &slot.spec.lock().unwrap_or_else(|p| p.into_inner()).source
            {
                dirs.insert(parent(path));
            }
        }
        for dir in &dirs {
            if let Err(error) = watcher.watch(dir, RecursiveMode::NonRecursive) {
                warn!(dir = %dir.display(), %error, "cannot watch plugin directory");
            }
        }
        let registry = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("plugin-watch".into())
            .spawn(move || {
                while rx.recv().is_ok() {
                    // A copy or an editor emits a burst: let it settle, then reload once.
                    std::thread::sleep(Duration::from_millis(50));
                    while rx.try_recv().is_ok() {}
                    match registry.upgrade() {
                        Some(registry) => registry.reload(),
                        None => return,
                    }
                }
            })
            .ok()?;
        Some(watcher)
    }
}

fn parent(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}
