//! The plugin series of `/metrics`: calls, their latency and faults, swaps, staged rollouts,
//! and which version of each plugin serves. No kubelet has these: they are the plugin host's.
//!
//! The families live in the [`crate::PluginRegistry`] from its creation and count whether or
//! not anyone registered them, so the host may register them on its Prometheus registry at any
//! time ([`crate::PluginRegistry::register_metrics`]). Each plugin slot resolves its label sets
//! once ([`SlotMetrics`]): a call then costs a few atomic increments and one histogram
//! observation, never a label lookup or an allocation.

use crate::config::World;
use crate::error::Fault;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::time::Duration;

/// How a call ended, the `result` label of `wasmlet_plugin_calls_total`. Every result but
/// `ok` is a fault of the plugin ([`Fault`]) and moves `wasmlet_plugin_faults_total` too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallResult {
    /// The answer passed the host's checks (a hook's refusal is an answer too).
    Ok,
    /// The plugin answered `err`: it declined to decide.
    Error,
    /// The answer failed the host's checks (an index out of range, an image in use...).
    Invalid,
    /// The runtime stopped it or could not run it: a trap, its deadline, fuel or memory
    /// cap, or an instance that could not be built or configured.
    Fault,
}

impl CallResult {
    /// Every result, in label order.
    pub const ALL: [CallResult; 4] = [Self::Ok, Self::Error, Self::Invalid, Self::Fault];

    /// The result of a call that ended with `fault` (none: `ok`).
    pub fn of(fault: Option<&Fault>) -> Self {
        match fault {
            None => Self::Ok,
            Some(Fault::Error(_)) => Self::Error,
            Some(Fault::Rejected(_)) => Self::Invalid,
            Some(_) => Self::Fault,
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Invalid => "invalid",
            Self::Fault => "fault",
        }
    }
}

impl Fault {
    /// Every kind of fault, the `kind` label of `wasmlet_plugin_faults_total`, in label order.
    pub const KINDS: [&'static str; 8] = [
        "deadline",
        "fuel",
        "memory",
        "trap",
        "grant",
        "configure",
        "error",
        "invalid_answer",
    ];

    /// The `kind` label of this fault (one of [`Fault::KINDS`]).
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Deadline(_) => "deadline",
            Fault::Fuel => "fuel",
            Fault::Memory(_) => "memory",
            Fault::Trap(_) => "trap",
            Fault::Grant(_) => "grant",
            Fault::Configure(_) => "configure",
            Fault::Error(_) => "error",
            Fault::Rejected(_) => "invalid_answer",
        }
    }

    fn kind_index(&self) -> usize {
        match self {
            Fault::Deadline(_) => 0,
            Fault::Fuel => 1,
            Fault::Memory(_) => 2,
            Fault::Trap(_) => 3,
            Fault::Grant(_) => 4,
            Fault::Configure(_) => 5,
            Fault::Error(_) => 6,
            Fault::Rejected(_) => 7,
        }
    }
}

/// What a version swap came to, the `result` label of `wasmlet_plugin_swaps_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SwapResult {
    /// A new version (or config) validated and now serves.
    Swapped,
    /// A version was refused (unreadable, pin mismatch, not a component of the world, failed
    /// validation); the serving version, if any, stays.
    Rejected,
}

impl SwapResult {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Swapped => "swapped",
            Self::Rejected => "rejected",
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    plugin: String,
    world: &'static str,
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    plugin: String,
    world: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FaultLabels {
    plugin: String,
    kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SwapLabels {
    plugin: String,
    result: &'static str,
}

/// What asking a registry for an `oci://` plugin came to, the `result` label of
/// `wasmlet_plugin_pulls_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PullResult {
    /// A new version was pulled (or found in the store) and offered for validation.
    Pulled,
    /// The registry could not be reached; the last version that served (if any) stays.
    Unreachable,
    /// The registry answered with something refused: not found, denied, a digest mismatch,
    /// not a wasm artifact, or no valid signature.
    Refused,
}

impl PullResult {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pulled => "pulled",
            Self::Unreachable => "unreachable",
            Self::Refused => "refused",
        }
    }
}

/// What a staged rollout came to, the `result` label of `wasmlet_plugin_rollouts_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RolloutResult {
    /// A new version validated and went on trial as the serving version's candidate.
    Started,
    /// The candidate ranked its decisions without a fault and within its disagreements: it
    /// was swapped in.
    Promoted,
    /// The candidate faulted or disagreed too often: refused, the serving version stays.
    Refused,
    /// The trial ended without a verdict: a newer version replaced the candidate, the source
    /// went back to the serving version, or the entry no longer asks for a rollout.
    Withdrawn,
}

impl RolloutResult {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Promoted => "promoted",
            Self::Refused => "refused",
            Self::Withdrawn => "withdrawn",
        }
    }
}

/// The histogram buckets of a call's duration: 1 µs doubling to about 1 s (21 bounds). A
/// warm call of a small policy takes a few µs, a ranking of 110 pods about 5, a probe plugin
/// doing HTTP a millisecond or more; deadlines are counted in ms.
fn call_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-6, 2.0, 21))
}

type DurationFamily = Family<DurationLabels, Histogram, fn() -> Histogram>;

/// The counter families of every plugin; shared (each family is a handle) by the registry,
/// its slots and the Prometheus registry they are registered on.
#[derive(Clone)]
pub(crate) struct PluginMetrics {
    calls: Family<CallLabels, Counter>,
    durations: DurationFamily,
    faults: Family<FaultLabels, Counter>,
    swaps: Family<SwapLabels, Counter>,
    pulls: Family<SwapLabels, Counter>,
    rollouts: Family<SwapLabels, Counter>,
}

impl Default for PluginMetrics {
    fn default() -> Self {
        Self {
            calls: Family::default(),
            durations: Family::new_with_constructor(call_histogram),
            faults: Family::default(),
            swaps: Family::default(),
            pulls: Family::default(),
            rollouts: Family::default(),
        }
    }
}

impl PluginMetrics {
    /// The series of one plugin, resolved once. Each starts at zero, so a rate over a
    /// counter that has not moved yet is 0 rather than absent.
    pub(crate) fn slot(&self, plugin: &str, world: World) -> SlotMetrics {
        let world = world.as_str();
        let plugin = plugin.to_string();
        SlotMetrics {
            calls: CallResult::ALL.map(|result| {
                self.calls.get_or_create_owned(&CallLabels {
                    plugin: plugin.clone(),
                    world,
                    result: result.as_str(),
                })
            }),
            duration: self.durations.get_or_create_owned(&DurationLabels {
                plugin: plugin.clone(),
                world,
            }),
            faults: Fault::KINDS.map(|kind| {
                self.faults.get_or_create_owned(&FaultLabels {
                    plugin: plugin.clone(),
                    kind,
                })
            }),
            swapped: self.swaps.get_or_create_owned(&SwapLabels {
                plugin: plugin.clone(),
                result: SwapResult::Swapped.as_str(),
            }),
            rejected: self.swaps.get_or_create_owned(&SwapLabels {
                plugin: plugin.clone(),
                result: SwapResult::Rejected.as_str(),
            }),
            pulls: self.pulls.clone(),
            rollouts: self.rollouts.clone(),
            plugin,
        }
    }

    /// Registers the families on `registry` (the registry adds the collectors that read its
    /// slots).
    pub(crate) fn register(&self, registry: &mut Registry) {
        // Counters without `_total`: the encoder appends it to the samples.
        registry.register(
            "plugin_calls",
            "Plugin calls, by plugin, world and result (ok, error, invalid, fault)",
            self.calls.clone(),
        );
        registry.register(
            "plugin_call_duration_seconds",
            "Duration of plugin calls, from the serving version's lookup to the checked answer",
            self.durations.clone(),
        );
        registry.register(
            "plugin_faults",
            "Plugin calls that gave no usable answer, by plugin and kind of fault",
            self.faults.clone(),
        );
        registry.register(
            "plugin_swaps",
            "Plugin versions swapped in or rejected, by plugin",
            self.swaps.clone(),
        );
        registry.register(
            "plugin_pulls",
            "Registry requests for oci:// plugins, by plugin and result (pulled, unreachable, refused)",
            self.pulls.clone(),
        );
        registry.register(
            "plugin_rollouts",
            "Staged rollouts of eviction plugins, by plugin and result (started, promoted, refused, withdrawn)",
            self.rollouts.clone(),
        );
    }
}

/// One plugin's series, resolved: recording is atomic increments and one histogram lock.
pub(crate) struct SlotMetrics {
    calls: [Counter; 4],
    duration: Histogram,
    faults: [Counter; 8],
    swapped: Counter,
    rejected: Counter,
    /// Created on first use: only `oci://` plugins pull.
    pulls: Family<SwapLabels, Counter>,
    /// Created on first use: only plugins with `rollout:` have trials.
    rollouts: Family<SwapLabels, Counter>,
    plugin: String,
}

impl SlotMetrics {
    /// Counts one call, its duration and its fault, if any.
    pub(crate) fn call(&self, elapsed: Duration, fault: Option<&Fault>) {
        // The discriminant is the index in `CallResult::ALL`, the order `calls` was built in.
        if let Some(counter) = self.calls.get(CallResult::of(fault) as usize) {
            counter.inc();
        }
        self.duration.observe(elapsed.as_secs_f64());
        if let Some(counter) = fault.and_then(|f| self.faults.get(f.kind_index())) {
            counter.inc();
        }
    }

    /// Counts a swap or a rejected version.
    pub(crate) fn swap(&self, result: SwapResult) {
        match result {
            SwapResult::Swapped => self.swapped.inc(),
            SwapResult::Rejected => self.rejected.inc(),
        };
    }

    /// Counts one request of a registry for an `oci://` plugin.
    pub(crate) fn pull(&self, result: PullResult) {
        self.pulls
            .get_or_create(&SwapLabels {
                plugin: self.plugin.clone(),
                result: result.as_str(),
            })
            .inc();
    }

    /// Counts a step of a staged rollout.
    pub(crate) fn rollout(&self, result: RolloutResult) {
        self.rollouts
            .get_or_create(&SwapLabels {
                plugin: self.plugin.clone(),
                result: result.as_str(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests;
