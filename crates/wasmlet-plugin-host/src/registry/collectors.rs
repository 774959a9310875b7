//! The plugin series read from the registry's slots at each scrape rather than counted:
//! `wasmlet_plugin_info` and the progress of a candidate on trial. A plugin removed from the
//! config or a trial that ended leaves no stale series.

use super::{PluginSlot, PluginState, TrialProgress};
use arc_swap::ArcSwap;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::Arc;

/// The slots the collectors read, shared with the registry.
type Slots = Arc<ArcSwap<Vec<Arc<PluginSlot>>>>;

/// Registers both collectors over `slots` on `registry`.
pub(super) fn register(registry: &mut Registry, slots: Slots) {
    registry.register_collector(Box::new(InfoCollector {
        slots: slots.clone(),
    }));
    registry.register_collector(Box::new(TrialCollector { slots }));
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TrialLabels {
    plugin: String,
    sha256: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InfoLabels {
    plugin: String,
    world: &'static str,
    sha256: String,
    state: &'static str,
}

/// `wasmlet_plugin_info`, read from the slots at each scrape, so a version swapped out or a
/// plugin removed from the config leaves no stale series.
struct InfoCollector {
    slots: Slots,
}

impl std::fmt::Debug for InfoCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InfoCollector").finish_non_exhaustive()
    }
}

/// The `state` label: the slot's [`PluginState`], with `shadow` for a serving shadow plugin
/// (it ranks for comparison only).
fn state_label(state: &PluginState, shadow: bool) -> &'static str {
    match state {
        PluginState::Serving if shadow => "shadow",
        PluginState::Serving => "serving",
        PluginState::NotLoaded => "notLoaded",
        PluginState::Failed => "failed",
    }
}

impl Collector for InfoCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let slots = self.slots.load();
        let mut family = encoder.encode_descriptor(
            "plugin_info",
            "The version of each configured plugin (sha256 of its component, empty when none \
             loaded) and its state (serving, shadow, failed, notLoaded); always 1",
            None,
            MetricType::Gauge,
        )?;
        for slot in slots.iter() {
            let (sha256, state) = slot.info();
            let labels = InfoLabels {
                plugin: slot.name.clone(),
                world: slot.world.as_str(),
                sha256,
                state: state_label(&state, slot.shadow),
            };
            family.encode_family(&labels)?.encode_gauge(&1i64)?;
        }
        Ok(())
    }
}

/// Reads one of a candidate's counts.
type TrialValue = fn(&TrialProgress) -> u32;

/// The progress of each candidate on trial, read from the slots at each scrape (a trial that
/// ended leaves no series): `wasmlet_plugin_rollout_decisions`,
/// `wasmlet_plugin_rollout_disagreements` and `wasmlet_plugin_rollout_shadow_cycles` (the
/// decisions it needs), each `{plugin,sha256}` with the candidate's sha256.
struct TrialCollector {
    slots: Slots,
}

impl std::fmt::Debug for TrialCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrialCollector").finish_non_exhaustive()
    }
}

impl Collector for TrialCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let trials: Vec<(TrialLabels, TrialProgress)> = self
            .slots
            .load()
            .iter()
            .filter_map(|slot| {
                let progress = slot.trial_progress()?;
                let labels = TrialLabels {
                    plugin: slot.name.clone(),
                    sha256: progress.sha256.clone(),
                };
                Some((labels, progress))
            })
            .collect();
        let families: [(&str, &str, TrialValue); 3] = [
            (
                "plugin_rollout_decisions",
                "Decisions the candidate version on trial has ranked so far",
                |p| p.decisions,
            ),
            (
                "plugin_rollout_disagreements",
                "Decisions the candidate version on trial ranked differently from the serving one",
                |p| p.disagreements,
            ),
            (
                "plugin_rollout_shadow_cycles",
                "Decisions the candidate version on trial must rank before it is promoted",
                |p| p.shadow_cycles,
            ),
        ];
        for (name, help, value) in families {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (labels, progress) in &trials {
                family
                    .encode_family(labels)?
                    .encode_gauge(&i64::from(value(progress)))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_described_with_no_slot() {
        let mut registry = Registry::with_prefix("wasmlet");
        register(&mut registry, Arc::new(ArcSwap::from_pointee(Vec::new())));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "# TYPE wasmlet_plugin_info gauge",
            "# TYPE wasmlet_plugin_rollout_decisions gauge",
            "# TYPE wasmlet_plugin_rollout_disagreements gauge",
            "# TYPE wasmlet_plugin_rollout_shadow_cycles gauge",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        assert!(!text.contains("wasmlet_plugin_info{"), "{text}");
    }
}
