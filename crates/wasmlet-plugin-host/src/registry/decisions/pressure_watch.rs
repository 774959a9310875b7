//! The optional pressure decision of an eviction plugin (`pressure-watch`, contract 0.1.2):
//! asked once per monitoring period with the node's PSI, it may ask to evict before any
//! threshold is met. The host checks the answer as it checks a ranking; what it then evicts
//! (the window, the `Guaranteed` guard) is the eviction manager's to decide.

use super::{ask, check_indices, evictable, Answerer, DecidedBy, EvictionSnapshot};
use crate::bindings::convert;
use crate::cap;
use crate::config::World;
use crate::error::PluginError;
use crate::instance::WorldBindings;
use crate::registry::PluginRegistry;
use crate::state::CallMeta;
use wasmlet_policy_default as policy;

/// A plugin's request to evict on pressure, as the host checked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PressureDecision {
    /// Indices into the snapshot's pods, first to evict first; critical and static pods are
    /// already left out.
    pub order: Vec<u32>,
    /// The plugin's reason, capped as every plugin string is.
    pub reason: String,
    /// The plugin's config grants it `Guaranteed` pods within their requests
    /// (`capabilities.evictGuaranteed`).
    pub may_evict_guaranteed: bool,
    /// The plugin and version that asked.
    pub decided_by: DecidedBy,
}

impl PluginRegistry {
    /// Whether the serving eviction plugin exports `pressure-watch`.
    pub fn watches_pressure(&self) -> bool {
        self.slot(World::EvictionPolicy)
            .and_then(|slot| slot.serving())
            .is_some_and(|version| version.watches_pressure())
    }

    /// Asks the serving eviction plugin whether to evict on `psi`. `Ok(None)`: it does not
    /// watch pressure, or it asked for nothing; `Err`: it faulted (counted in its slot), and
    /// nothing is evicted on pressure this period: there is no built-in pressure policy.
    pub fn watch_pressure(
        &self,
        snapshot: &EvictionSnapshot,
        psi: &policy::NodePsi,
    ) -> Result<Option<PressureDecision>, PluginError> {
        if !self.watches_pressure() {
            return Ok(None);
        }
        let slot = self.slot(World::EvictionPolicy);
        let may_evict_guaranteed = slot
            .as_ref()
            .and_then(|slot| slot.serving())
            .is_some_and(|version| version.spec.capabilities.evict_guaranteed);
        let node = convert::node(&snapshot.node);
        let psi = convert::node_psi(psi);
        let pods = policy::packed::pods_as_words(&snapshot.pods);
        let meta = CallMeta {
            pods: snapshot.meta.clone(),
            image_tags: Default::default(),
        };
        let (answer, decided_by) = ask(
            slot,
            Answerer::Serving,
            "watch",
            None,
            meta,
            None,
            move |store, bindings, _| {
                Box::pin(async move {
                    match bindings {
                        WorldBindings::PressureEviction(b) => {
                            b.wasmlet_plugin_pressure_watch()
                                .call_watch(store, node, psi, &pods)
                                .await
                        }
                        _ => Err(super::wrong_world()),
                    }
                })
            },
            |answer| match answer {
                Some(evict) => check_indices(&evict.pods, snapshot.pods.len()),
                None => Ok(()),
            },
        )?;
        Ok(answer.map(|evict| PressureDecision {
            order: evictable(evict.pods, snapshot),
            reason: cap::reason(evict.reason),
            may_evict_guaranteed,
            decided_by,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_without_an_eviction_plugin_watches_nothing() {
        let engine = crate::PluginEngine::new(None).expect("engine");
        let registry = PluginRegistry::new(engine, None);
        assert!(!registry.watches_pressure());
        let decision = registry.watch_pressure(&EvictionSnapshot::default(), &Default::default());
        assert!(matches!(decision, Ok(None)));
    }
}
