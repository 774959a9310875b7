//! The decisions plugins make, each with the host's checks and its fallback: a plugin
//! proposes, the host disposes. Eviction and GC fall back to the built-in copy of the default
//! policy (`wasmlet-policy-default`, the same source as the default plugins); a faulty probe
//! plugin fails its probe with the reason; a faulty admission plugin admits (fail open).
//! These functions block (they run Wasm): call them off the async executor.

use crate::bindings::{convert, types};
use crate::cap;
use crate::config::World;
use crate::error::{Fault, PluginError};
use crate::instance::{Borrows, CallFuture, LoadedPlugin, WorldBindings};
use crate::metrics::CallResult;
use crate::records::{PodMeta, PodScope};
use crate::registry::{CandidateRank, PluginRegistry, PluginSlot};
use crate::state::{CallMeta, HostState};
use std::time::Instant;
use wasmlet_policy_default as policy;

mod pod_calls;
mod pressure_watch;

pub use pressure_watch::PressureDecision;

/// Who made a decision, for logs and the eviction decision log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum DecidedBy {
    /// The plugin's answer passed the host's checks.
    Plugin {
        /// The plugin's configured name.
        name: String,
        /// The version that answered.
        sha256: String,
    },
    /// The built-in default decided, and why the plugin did not.
    BuiltIn {
        /// Why no plugin decided (a [`PluginError`] as text).
        reason: String,
    },
}

/// An ordered answer (pods to evict, images or containers to remove) and who gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Indices into the call's list, first to act on first.
    pub order: Vec<u32>,
    /// The plugin, or the built-in default with the reason.
    pub decided_by: DecidedBy,
}

/// Rejects an answer longer than the list it ranks, or with an index out of range or listed
/// twice: the size is checked first, before anything is sized by the plugin's answer.
fn check_indices(answer: &[u32], len: usize) -> Result<(), Fault> {
    if answer.len() > len {
        return Err(Fault::Rejected(format!(
            "answered {} indices for a list of {len}",
            answer.len()
        )));
    }
    // One bit per index: 2 words for 110 pods.
    let mut seen = vec![0u64; len.div_ceil(64)];
    for &index in answer {
        let i = index as usize;
        let Some(word) = seen.get_mut(i / 64).filter(|_| i < len) else {
            return Err(Fault::Rejected(format!(
                "index {index} is out of range (there are {len})"
            )));
        };
        let bit = 1u64 << (i % 64);
        if *word & bit != 0 {
            return Err(Fault::Rejected(format!("index {index} is listed twice")));
        }
        *word |= bit;
    }
    Ok(())
}

/// The span of one plugin call: the plugin, its world and version, the export called and,
/// for a call about one pod, the pod; `result` (and `fault`, the kind) are recorded when the
/// call ends. Built once per call; at the default level it is disabled and costs a level
/// check, no allocation.
fn call_span(
    slot: &PluginSlot,
    version: &LoadedPlugin,
    call: &'static str,
    pod: Option<&PodMeta>,
) -> tracing::Span {
    match pod {
        Some(pod) => tracing::debug_span!(
            "plugin_call",
            plugin = %slot.name,
            world = slot.world.as_str(),
            sha256 = %version.sha256,
            call,
            pod = %format_args!("{}/{}", pod.namespace, pod.name),
            uid = %pod.uid,
            result = tracing::field::Empty,
            fault = tracing::field::Empty,
        ),
        None => tracing::debug_span!(
            "plugin_call",
            plugin = %slot.name,
            world = slot.world.as_str(),
            sha256 = %version.sha256,
            call,
            result = tracing::field::Empty,
            fault = tracing::field::Empty,
        ),
    }
}

/// Which version of a slot answers a call.
enum Answerer {
    /// The serving one; the outcome counts in the slot's calls, faults and state.
    Serving,
    /// A candidate on trial (`registry::rollout`): its outcome is the trial's to judge, and
    /// never moves the serving version's counters or fails it.
    Candidate(std::sync::Arc<LoadedPlugin>),
}

/// Runs `call` on the slot's serving version, or on `answerer`'s candidate (inside the call's
/// span), records the outcome, and returns the answer or why the built-in default must decide.
#[allow(clippy::too_many_arguments)]
fn ask<'d, R>(
    slot: Option<std::sync::Arc<PluginSlot>>,
    answerer: Answerer,
    name: &'static str,
    pod: Option<&PodMeta>,
    meta: CallMeta,
    scope: Option<PodScope>,
    call: impl for<'a> FnOnce(
        &'a mut wasmtime::Store<HostState>,
        &'a WorldBindings,
        Borrows<'a, 'd>,
    ) -> CallFuture<'a, Result<R, String>>,
    check: impl FnOnce(&R) -> Result<(), Fault>,
) -> Result<(R, DecidedBy), PluginError> {
    let Some(slot) = slot else {
        return Err(PluginError::NotConfigured);
    };
    let (version, serving) = match answerer {
        Answerer::Candidate(version) => (version, false),
        Answerer::Serving => match slot.serving() {
            Some(version) => (version, true),
            None => return Err(PluginError::NotServing(slot.name.clone())),
        },
    };
    let span = call_span(&slot, &version, name, pod);
    let _entered = span.enter();
    let started = Instant::now();
    let result = version
        .call(meta, scope, started, call)
        .and_then(|answer| answer.map_err(|reason| Fault::Error(cap::reason(reason))));
    let result = result.and_then(|answer| check(&answer).map(|()| answer));
    let fault = result.as_ref().err();
    if serving {
        slot.record(&version, started.elapsed(), fault);
    }
    if !span.is_disabled() {
        span.record("result", CallResult::of(fault).as_str());
        if let Some(fault) = fault {
            span.record("fault", fault.kind());
        }
    }
    match result {
        Ok(answer) => Ok((
            answer,
            DecidedBy::Plugin {
                name: slot.name.clone(),
                sha256: version.sha256.clone(),
            },
        )),
        Err(fault) => Err(PluginError::Fault {
            plugin: slot.name.clone(),
            fault,
        }),
    }
}

fn wrong_world() -> wasmtime::Error {
    wasmtime::Error::msg("plugin bound to another world")
}

/// Asks an eviction plugin to rank `snapshot`; critical and static pods are dropped from its
/// answer, whatever it says. `Err` is why the plugin could not decide.
fn rank_by(
    slot: Option<std::sync::Arc<PluginSlot>>,
    answerer: Answerer,
    call: &'static str,
    snapshot: &EvictionSnapshot,
) -> Result<Decision, PluginError> {
    let node = convert::node(&snapshot.node);
    let pressure: Vec<types::SignalObservation> =
        snapshot.pressure.iter().map(convert::observation).collect();
    // Borrowed in place on little-endian hosts: wasmtime copies the words into the guest.
    let pods = policy::packed::pods_as_words(&snapshot.pods);
    let meta = CallMeta {
        pods: snapshot.meta.clone(),
        image_tags: Default::default(),
    };
    let (order, decided_by) = ask(
        slot,
        answerer,
        call,
        None,
        meta,
        None,
        move |store, bindings, _| {
            Box::pin(async move {
                match bindings {
                    WorldBindings::Eviction(b) => b.call_rank(store, node, &pressure, &pods).await,
                    WorldBindings::PressureEviction(b) => {
                        b.call_rank(store, node, &pressure, &pods).await
                    }
                    _ => Err(wrong_world()),
                }
            })
        },
        |order| check_indices(order, snapshot.pods.len()),
    )?;
    Ok(Decision {
        order: evictable(order, snapshot),
        decided_by,
    })
}

/// `order` without the pods the host never evicts (critical and static), whatever a plugin
/// answered.
fn evictable(order: Vec<u32>, snapshot: &EvictionSnapshot) -> Vec<u32> {
    order
        .into_iter()
        .filter(|&i| {
            snapshot
                .pods
                .get(i as usize)
                .is_some_and(policy::PodInfo::is_evictable)
        })
        .collect()
}

/// A candidate version's ranking of `snapshot` (evictable pods only, as a decision), or why it
/// gave none; its outcome is the trial's to judge (`registry::rollout`).
pub(crate) fn rank_candidate(
    slot: &std::sync::Arc<PluginSlot>,
    version: std::sync::Arc<LoadedPlugin>,
    snapshot: &EvictionSnapshot,
) -> Result<Vec<u32>, PluginError> {
    rank_by(
        Some(slot.clone()),
        Answerer::Candidate(version),
        "rank-candidate",
        snapshot,
    )
    .map(|decision| decision.order)
}

/// The input of an eviction ranking.
#[derive(Debug, Clone, Default)]
pub struct EvictionSnapshot {
    /// Capacity and allocatable of the node.
    pub node: policy::NodeInfo,
    /// The thresholds met, the one to relieve first.
    pub pressure: Vec<policy::SignalObservation>,
    /// Every active pod, in no particular order.
    pub pods: Vec<policy::PodInfo>,
    /// The pods' names, labels and annotations, by the same index (`pod-meta`).
    pub meta: std::sync::Arc<Vec<PodMeta>>,
}

impl PluginRegistry {
    /// Ranks pods for eviction, most evictable first; never lists critical or static pods.
    /// A candidate version on trial ranks the same snapshot too (see
    /// [`PluginRegistry::rank_with_candidate`]).
    ///
    /// Without an eviction plugin (or when it faults) the built-in default, upstream's order,
    /// decides, and the decision says why:
    ///
    /// ```
    /// use wasmlet_plugin_host::{DecidedBy, EvictionSnapshot, PluginEngine, PluginRegistry};
    /// use wasmlet_policy_default::{NodeInfo, PodInfo};
    ///
    /// let registry = PluginRegistry::new(PluginEngine::new(None)?, None);
    /// let snapshot = EvictionSnapshot {
    ///     node: NodeInfo::default(),
    ///     pressure: Vec::new(),
    ///     pods: vec![
    ///         PodInfo { is_static: true, memory_usage_bytes: 900 << 20, ..Default::default() },
    ///         PodInfo { memory_usage_bytes: 100 << 20, ..Default::default() },
    ///     ],
    ///     meta: Default::default(),
    /// };
    /// let decision = registry.rank(&snapshot);
    /// assert_eq!(decision.order, [1], "a static pod is never evicted");
    /// assert!(matches!(decision.decided_by, DecidedBy::BuiltIn { .. }));
    /// # Ok::<(), wasmlet_plugin_host::EngineError>(())
    /// ```
    pub fn rank(&self, snapshot: &EvictionSnapshot) -> Decision {
        self.rank_with_candidate(snapshot).0
    }

    /// Ranks as [`PluginRegistry::rank`] and, when the eviction plugin has a new version on
    /// trial (`rollout:`), ranks the same snapshot with it: one decision of its trial, which
    /// may promote or refuse it. The second value is its answer, for the decision log.
    pub fn rank_with_candidate(
        &self,
        snapshot: &EvictionSnapshot,
    ) -> (Decision, Option<CandidateRank>) {
        let slot = self.slot(World::EvictionPolicy);
        let decision = match rank_by(slot.clone(), Answerer::Serving, "rank", snapshot) {
            Ok(decision) => decision,
            Err(error) => Decision {
                order: policy::eviction::rank(&snapshot.pressure, &snapshot.pods),
                decided_by: DecidedBy::BuiltIn {
                    reason: error.to_string(),
                },
            },
        };
        let candidate = slot.and_then(|slot| self.judge_candidate(&slot, snapshot, &decision));
        (decision, candidate)
    }

    /// The shadow eviction plugin's ranking of the same snapshot, if one is configured; a
    /// faulty shadow gives `Err` and has no fallback (it decides nothing).
    pub fn rank_shadow(
        &self,
        snapshot: &EvictionSnapshot,
    ) -> Option<Result<Decision, PluginError>> {
        let slot = self.shadow_slot(World::EvictionPolicy)?;
        Some(rank_by(
            Some(slot),
            Answerer::Serving,
            "rank-shadow",
            snapshot,
        ))
    }

    /// Plans image removals: indices into `images`, in order.
    pub fn plan_images(
        &self,
        disk: &policy::DiskInfo,
        images: &[policy::ImageInfo],
        tags: Vec<Vec<String>>,
        now_ms: u64,
    ) -> Decision {
        let wasm_disk = convert::disk(disk);
        let wasm_images: Vec<types::ImageInfo> = images.iter().map(convert::image).collect();
        let meta = CallMeta {
            pods: Default::default(),
            image_tags: std::sync::Arc::new(tags),
        };
        let answer = ask(
            self.slot(World::GcStrategy),
            Answerer::Serving,
            "plan-images",
            None,
            meta,
            None,
            move |store, bindings, _| {
                Box::pin(async move {
                    match bindings {
                        WorldBindings::Gc(b) => {
                            b.call_plan_images(store, wasm_disk, &wasm_images).await
                        }
                        _ => Err(wrong_world()),
                    }
                })
            },
            |order| {
                check_indices(order, images.len())?;
                match order.iter().find(|&&i| {
                    images
                        .get(i as usize)
                        .is_none_or(|image| !policy::gc::is_candidate(disk, image, now_ms))
                }) {
                    Some(i) => Err(Fault::Rejected(format!(
                        "image {i} is in use, pinned or younger than the minimum GC age"
                    ))),
                    None => Ok(()),
                }
            },
        );
        match answer {
            Ok((order, decided_by)) => Decision { order, decided_by },
            Err(error) => Decision {
                order: policy::gc::plan_images(disk, images, now_ms),
                decided_by: DecidedBy::BuiltIn {
                    reason: error.to_string(),
                },
            },
        }
    }

    /// Plans dead-container removals: indices into `dead`, in order.
    pub fn plan_containers(
        &self,
        dead: &[policy::DeadContainer],
        meta: Vec<PodMeta>,
        gc_policy: &policy::gc::ContainerGcPolicy,
    ) -> Decision {
        let wasm_dead: Vec<types::DeadContainer> = dead.iter().map(convert::dead).collect();
        let answer = ask(
            self.slot(World::GcStrategy),
            Answerer::Serving,
            "plan-containers",
            None,
            CallMeta {
                pods: std::sync::Arc::new(meta),
                image_tags: Default::default(),
            },
            None,
            move |store, bindings, _| {
                Box::pin(async move {
                    match bindings {
                        WorldBindings::Gc(b) => b.call_plan_containers(store, &wasm_dead).await,
                        _ => Err(wrong_world()),
                    }
                })
            },
            |order| check_indices(order, dead.len()),
        );
        match answer {
            Ok((order, decided_by)) => Decision { order, decided_by },
            Err(error) => Decision {
                order: policy::gc::plan_containers(dead, gc_policy),
                decided_by: DecidedBy::BuiltIn {
                    reason: error.to_string(),
                },
            },
        }
    }
}
