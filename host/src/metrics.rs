//! The node's metrics, served at `/metrics`: upstream's kubelet series ([`kubelet`]), the
//! process's ([`process`]), the HTTP ports' ([`http`]) and wasmlet's own (GC and eviction by
//! plugin, below), in the format the scraper asks for ([`exposition`]).

pub mod exposition;
pub mod http;
pub mod kubelet;
pub mod process;
pub mod rest_client;
pub mod storage;
pub mod volume_stats;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// Which plugin (or `built-in`) made a GC decision.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginLabels {
    /// The plugin's name from the plugin config, or `built-in` when no plugin decided.
    pub plugin: String,
}

/// An eviction, by the signal that caused it and the plugin that ranked it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EvictionLabels {
    /// The upstream signal name (`memory.available`), as the Evicted event reports it.
    pub eviction_signal: String,
    /// The plugin that ranked the pods, or `built-in`.
    pub plugin: String,
}

/// Counters shared by the GC and eviction managers.
pub struct Metrics {
    registry: Registry,
    /// Images removed by image GC.
    pub images_removed: Family<PluginLabels, Counter>,
    /// Bytes image GC freed, by the sizes the runtime reported.
    pub image_bytes_freed: Counter,
    /// Dead containers removed by container GC.
    pub containers_removed: Family<PluginLabels, Counter>,
    /// Dead sandboxes removed by container GC.
    pub sandboxes_removed: Counter,
    /// Pods evicted under node pressure.
    pub evictions: Family<EvictionLabels, Counter>,
    /// Rankings where a shadow eviction plugin disagreed with the active one.
    pub shadow_disagreements: Family<PluginLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("wasmlet");
        let images_removed = Family::default();
        registry.register(
            "image_gc_removed_images",
            "Images removed by image garbage collection, by the plugin that planned it",
            images_removed.clone(),
        );
        let image_bytes_freed = Counter::default();
        registry.register(
            "image_gc_freed_bytes",
            "Bytes freed by image garbage collection (image sizes as the runtime reports them)",
            image_bytes_freed.clone(),
        );
        let containers_removed = Family::default();
        registry.register(
            "container_gc_removed_containers",
            "Dead containers removed by container garbage collection, by the planning plugin",
            containers_removed.clone(),
        );
        let sandboxes_removed = Counter::default();
        registry.register(
            "container_gc_removed_sandboxes",
            "Dead pod sandboxes removed by container garbage collection",
            sandboxes_removed.clone(),
        );
        let evictions = Family::default();
        registry.register(
            "evictions",
            "Pods evicted under node pressure, by signal and by the plugin that ranked them",
            evictions.clone(),
        );
        let shadow_disagreements = Family::default();
        registry.register(
            "eviction_shadow_disagreements",
            "Eviction rankings where a shadow plugin chose another pod than the active plugin",
            shadow_disagreements.clone(),
        );
        Metrics {
            registry,
            images_removed,
            image_bytes_freed,
            containers_removed,
            sandboxes_removed,
            evictions,
            shadow_disagreements,
        }
    }
}

impl Metrics {
    /// The counters, and the plugin platform's series of `plugins` (calls, latency, faults,
    /// swaps, versions) under the same `wasmlet_` prefix.
    pub fn with_plugins(plugins: &wasmlet_plugin_host::PluginRegistry) -> Self {
        let mut metrics = Self::default();
        plugins.register_metrics(&mut metrics.registry);
        metrics
    }

    /// The registry, for the exposition.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}

/// The label value for a decision's author.
pub fn decided_by_label(by: &wasmlet_plugin_host::DecidedBy) -> String {
    match by {
        wasmlet_plugin_host::DecidedBy::Plugin { name, .. } => name.clone(),
        wasmlet_plugin_host::DecidedBy::BuiltIn { .. } => "built-in".into(),
    }
}
