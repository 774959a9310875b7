//! The plugin registry: the configured plugins, the version of each that serves now, their
//! counters, and hot swap. A change to the plugin config or to a `.wasm` file is compiled and
//! validated off the hot path, then swapped in atomically; calls in flight finish on the old
//! version; a version that fails validation never replaces a working one. An eviction plugin
//! with `rollout:` first tries a new version as the serving one's candidate (`rollout`).
//! The host asks its questions through the registry's decisions (`decisions`: rank, plan,
//! probe, admit, hooks), each falling back to the built-in default; each plugin's version and
//! counters are its `slot`.

mod collectors;
mod decisions;
mod pull;
mod rollout;
mod slot;

pub use decisions::{DecidedBy, Decision, EvictionSnapshot, PressureDecision};
use rollout::Offered;
pub(crate) use rollout::TrialProgress;
pub use rollout::{CandidateRank, RolloutState};
pub use slot::{PluginSlot, PluginState, Rejected};

use crate::config::{self, PluginSource, PluginSpec, World};
use crate::engine::{sha256_hex, PluginEngine};
use crate::instance::LoadedPlugin;
use crate::metrics::{CallResult, PluginMetrics};
use notify::{RecursiveMode, Watcher};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{error, info, warn};

/// Consecutive faults after which a plugin is put in the failed state (the built-in default
/// serves until a new version or config is loaded).
pub const FAULTS_TO_FAIL: u32 = 5;

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
        self.metrics.register(registry);
        collectors::register(registry, self.slots.clone());
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
    ///
    /// A config that cannot be used is named in [`PluginRegistry::report`] and changes
    /// nothing; the plugins loaded before keep serving:
    ///
    /// ```
    /// use wasmlet_plugin_host::{PluginEngine, PluginRegistry, World};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let config = dir.path().join("plugins.yaml");
    /// let header = "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\n";
    /// std::fs::write(&config, format!("{header}plugins: []\n"))?;
    /// let registry = PluginRegistry::new(PluginEngine::new(None)?, Some(config.clone()));
    /// registry.reload();
    /// assert!(registry.report()["configError"].is_null());
    /// assert!(!registry.has(World::EvictionPolicy), "no plugin: the built-in default decides");
    ///
    /// std::fs::write(&config, format!("{header}plugins: [{{name: x, world: no-such-world}}]\n"))?;
    /// registry.reload();
    /// let error = registry.report()["configError"].as_str().unwrap_or_default().to_string();
    /// assert!(error.contains("no-such-world"), "{error}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reload(&self) {
        let _one_at_a_time = self.reload_lock.lock();
        let Some(file) = &self.config_file else {
            return;
        };
        let specs = match config::load(file) {
            Ok(specs) => {
                *self.config_error.lock() = None;
                specs
            }
            Err(problem) => {
                error!(error = %problem, "plugin config rejected; the plugins loaded before keep serving");
                *self.config_error.lock() = Some(problem.to_string());
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
                *slot.spec.lock() = spec;
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
            && *slot.spec.lock() == spec;
        *slot.spec.lock() = spec.clone();
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
                slot.refuse(
                    &sha256,
                    digest,
                    format!("{origin}sha256 {sha256} does not match the pinned {pin}"),
                );
                return Offered::Refused;
            }
        }
        let started = Instant::now();
        let version = match LoadedPlugin::load(&self.engine, &spec, bytes, &sha256) {
            Ok(version) => version,
            Err(error) => {
                slot.refuse(&sha256, digest, format!("{origin}{error}"));
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
            slot.refuse(
                &sha256,
                digest,
                format!("{origin}validation failed: {fault}"),
            );
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
            "configError": *self.config_error.lock(),
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
            if let PluginSource::File(path) = &slot.spec.lock().source {
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
