//! The decisions plugins make about one pod: a probe's outcome (a fault fails the probe with
//! the reason), admission (a fault admits: fail open) and the post-start and pre-stop hooks (a
//! fault fails the hook). Each call is scoped to the pod it serves (`PodScope`).

use super::{ask, wrong_world, Answerer, DecidedBy};
use crate::bindings::convert;
use crate::cap;
use crate::config::World;
use crate::error::PluginError;
use crate::instance::{CallFuture, WorldBindings};
use crate::records::{AdmissionPod, PodMeta, PodScope, ProbeOutcome, ProbeRequest, ProbeResult};
use crate::registry::PluginRegistry;
use crate::state::{CallMeta, HostState};
use std::time::Instant;

impl PluginRegistry {
    /// Runs the named probe plugin; a fault fails the probe with the reason.
    pub fn probe(&self, plugin: &str, request: &ProbeRequest, scope: PodScope) -> ProbeResult {
        let Some(slot) = self
            .slot_named(plugin)
            .filter(|s| s.world == World::ProbeHandler)
        else {
            return ProbeResult {
                outcome: ProbeOutcome::Failure,
                message: PluginError::NoProbePlugin(plugin.to_string()).to_string(),
            };
        };
        let request = convert::probe_request(request);
        let answer = ask(
            Some(slot),
            Answerer::Serving,
            "check",
            None,
            CallMeta::default(),
            Some(scope),
            move |store, bindings, _| {
                Box::pin(async move {
                    match bindings {
                        WorldBindings::Probe(b) => b.call_check(store, &request).await.map(Ok),
                        _ => Err(wrong_world()),
                    }
                })
            },
            |_| Ok(()),
        );
        match answer {
            Ok((result, _)) => convert::probe_result(result),
            Err(error) => ProbeResult {
                outcome: ProbeOutcome::Failure,
                message: error.to_string(),
            },
        }
    }

    /// Asks every `lifecycle-hooks` plugin, in config order, whether `pod` may run: the first
    /// rejection decides. A plugin's fault admits the pod as far as that plugin goes (fail
    /// open); with no plugin the pod is admitted by the built-in handlers alone.
    pub fn admit(
        &self,
        pod: &AdmissionPod,
        meta: PodMeta,
    ) -> Result<DecidedBy, (String, DecidedBy)> {
        let pod = convert::admission_pod(pod);
        let meta = std::sync::Arc::new(vec![meta]);
        let mut decided = DecidedBy::BuiltIn {
            reason: "no plugin configured".into(),
        };
        for slot in self.slots_of(World::LifecycleHooks) {
            if meta.first().is_some_and(|m| !slot.selects(m)) {
                continue;
            }
            let answer = ask(
                Some(slot),
                Answerer::Serving,
                "admit",
                meta.first(),
                CallMeta {
                    pods: meta.clone(),
                    image_tags: Default::default(),
                },
                None,
                |store, bindings, _| {
                    let pod = pod.clone();
                    Box::pin(async move {
                        match bindings {
                            WorldBindings::Hooks(b) => b.call_admit(store, &pod).await.map(Ok),
                            _ => Err(wrong_world()),
                        }
                    })
                },
                |_| Ok(()),
            );
            match answer {
                Ok((Ok(()), by)) => decided = by,
                Ok((Err(reason), by)) => return Err((cap::reason(reason), by)),
                Err(error) => {
                    let reason = error.to_string();
                    tracing::warn!(%reason, "admission plugin faulted; admitting as far as it goes");
                    decided = DecidedBy::BuiltIn { reason }
                }
            }
        }
        Ok(decided)
    }

    /// Runs every `lifecycle-hooks` plugin's `post-start` for `container`, each scoped to the
    /// pod and bounded by the smaller of its own deadline and `scope.deadline`. The first
    /// failure (an error, a trap, a deadline overrun) is returned with the plugin's name.
    pub fn post_start(
        &self,
        container: &str,
        meta: PodMeta,
        scope: PodScope,
    ) -> Result<(), PluginError> {
        let container = container.to_string();
        self.hooks("post-start", meta, scope, move |store, bindings| {
            let container = container.clone();
            Box::pin(async move {
                match bindings {
                    WorldBindings::Hooks(b) => b.call_post_start(store, &container).await,
                    _ => Err(wrong_world()),
                }
            })
        })
    }

    /// Runs every `lifecycle-hooks` plugin's `pre-stop` for `container` with the grace left
    /// (each bounded as in [`PluginRegistry::post_start`]); the first failure is returned.
    pub fn pre_stop(
        &self,
        container: &str,
        meta: PodMeta,
        scope: PodScope,
    ) -> Result<(), PluginError> {
        let container = container.to_string();
        self.hooks("pre-stop", meta, scope, move |store, bindings| {
            let grace_ms = store.data().scope.as_ref().map_or(0, |s| {
                s.deadline
                    .saturating_duration_since(Instant::now())
                    .as_millis()
                    .min(u128::from(u32::MAX)) as u32
            });
            let container = container.clone();
            Box::pin(async move {
                match bindings {
                    WorldBindings::Hooks(b) => b.call_pre_stop(store, &container, grace_ms).await,
                    _ => Err(wrong_world()),
                }
            })
        })
    }

    fn hooks(
        &self,
        name: &'static str,
        meta: PodMeta,
        scope: PodScope,
        call: impl for<'a> Fn(
            &'a mut wasmtime::Store<HostState>,
            &'a WorldBindings,
        ) -> CallFuture<'a, Result<(), String>>,
    ) -> Result<(), PluginError> {
        let meta = std::sync::Arc::new(vec![meta]);
        for slot in self.slots_of(World::LifecycleHooks) {
            // A plugin that is not serving (not loaded, or failed) has no hook to run.
            if slot.serving().is_none() || meta.first().is_some_and(|m| !slot.selects(m)) {
                continue;
            }
            // `call` cuts the scope to the plugin's own deadline.
            let scope = scope.clone();
            let plugin = slot.name.clone();
            let answer = ask(
                Some(slot),
                Answerer::Serving,
                name,
                meta.first(),
                CallMeta {
                    pods: meta.clone(),
                    image_tags: Default::default(),
                },
                Some(scope),
                // A hook's `err` is an answer, not a fault of the plugin.
                |store, bindings, _| {
                    let future = call(store, bindings);
                    Box::pin(async move { future.await.map(Ok) })
                },
                |_| Ok(()),
            );
            match answer {
                Ok((Ok(()), _)) => {}
                Ok((Err(reason), _)) => {
                    return Err(PluginError::Refused {
                        plugin,
                        reason: cap::reason(reason),
                    })
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}
