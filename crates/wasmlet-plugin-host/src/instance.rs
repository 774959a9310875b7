//! One loaded version of a plugin: its compiled component linked for its world, a warm
//! instance reused across calls, and calls run under the plugin's limits. A call that traps,
//! runs past its deadline, exhausts its fuel or its memory cap is a [`Fault`]; the instance is
//! dropped (a trap poisons it) and rebuilt from the pre-linked component on the next call.

use crate::bindings::{eviction, gc, hooks, probe};
use crate::config::{PluginSpec, World};
use crate::engine::{PluginEngine, EPOCH_TICK};
use crate::error::LoadError;
use crate::records::PodScope;
use crate::state::{CallMeta, HostState};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Store, StoreLimitsBuilder, Trap};

/// Why a call did not produce a usable answer; the host then uses its built-in default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// Interrupted at its deadline (ms): the plugin's, or the probe's or hook's.
    #[error("ran past its {0} ms deadline")]
    Deadline(u64),
    /// Ran out of its `fuel` limit.
    #[error("exhausted its fuel")]
    Fuel,
    /// Tried to grow its memory past `memoryMiB`.
    #[error("exceeded its {0} MiB memory cap")]
    Memory(u64),
    /// Any other trap (a panic, unreachable, an out-of-bounds access...).
    #[error("trapped: {0}")]
    Trap(String),
    /// A granted directory could not be opened.
    #[error("cannot be given its capabilities: {0}")]
    Grant(String),
    /// `configure` answered `err`.
    #[error("configure refused the config: {0}")]
    Configure(String),
    /// The call answered `err` (or `self-check` did).
    #[error("returned an error: {0}")]
    Error(String),
    /// The answer failed the host's checks.
    #[error("answered nonsense: {0}")]
    Rejected(String),
}

enum WorldPre {
    Eviction(eviction::EvictionPolicyPre<HostState>),
    Gc(gc::GcStrategyPre<HostState>),
    Probe(probe::ProbeHandlerPre<HostState>),
    Hooks(hooks::LifecycleHooksPre<HostState>),
}

/// The instantiated bindings of one world.
pub(crate) enum WorldBindings {
    Eviction(eviction::EvictionPolicy),
    Gc(gc::GcStrategy),
    Probe(probe::ProbeHandler),
    Hooks(hooks::LifecycleHooks),
}

struct Warm {
    store: Store<HostState>,
    bindings: WorldBindings,
}

/// A plugin version that compiled, linked and passed validation (or is being validated).
pub struct LoadedPlugin {
    /// The configuration it was loaded with.
    pub spec: PluginSpec,
    /// The component's hash, which tells versions apart.
    pub sha256: String,
    /// When it was loaded, for `/plugins`.
    pub loaded_at: SystemTime,
    engine: PluginEngine,
    /// The engine the component was compiled for (metered when the limits name fuel).
    compiled_for: wasmtime::Engine,
    pre: WorldPre,
    name: Arc<str>,
    warm: Mutex<Option<Warm>>,
}

fn link(component: &Component, world: World) -> wasmtime::Result<WorldPre> {
    let mut linker: Linker<HostState> = Linker::new(component.engine());
    match world {
        World::EvictionPolicy => {
            eviction::EvictionPolicy::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?
        }
        World::GcStrategy => gc::GcStrategy::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?,
        World::ProbeHandler => {
            probe::ProbeHandler::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?
        }
        World::LifecycleHooks => {
            hooks::LifecycleHooks::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?
        }
    }
    // WASI 0.2 with each store's deny-all context plus its grants (`super::wasi`). A
    // component importing anything else is refused at load, naming the import.
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    let pre = linker.instantiate_pre(component)?;
    Ok(match world {
        World::EvictionPolicy => WorldPre::Eviction(eviction::EvictionPolicyPre::new(pre)?),
        World::GcStrategy => WorldPre::Gc(gc::GcStrategyPre::new(pre)?),
        World::ProbeHandler => WorldPre::Probe(probe::ProbeHandlerPre::new(pre)?),
        World::LifecycleHooks => WorldPre::Hooks(hooks::LifecycleHooksPre::new(pre)?),
    })
}

/// The world a component implements, by trying each; `None` when it fits none.
pub(crate) fn detect_world(component: &Component) -> Option<World> {
    World::ALL
        .into_iter()
        .find(|world| link(component, *world).is_ok())
}

fn classify(error: wasmtime::Error, spec: &PluginSpec) -> Fault {
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Fault::Deadline(spec.limits.deadline_ms),
        Some(Trap::OutOfFuel) => Fault::Fuel,
        _ => {
            let text = format!("{error:#}");
            if text.contains("forcing trap when growing memory") {
                Fault::Memory(spec.limits.memory_mib)
            } else {
                Fault::Trap(text)
            }
        }
    }
}

impl LoadedPlugin {
    /// Compiles (or loads from cache) and links `bytes` for the spec's world.
    pub fn load(
        engine: &PluginEngine,
        spec: &PluginSpec,
        bytes: &[u8],
        sha256: &str,
    ) -> Result<Self, LoadError> {
        let component = engine.load(&spec.path, bytes, sha256, spec.limits.fuel.is_some())?;
        let pre = link(&component, spec.world).map_err(|e| LoadError::World {
            expected: spec.world.as_str(),
            found: detect_world(&component)
                .map_or("no plugin world".to_string(), |w| w.as_str().to_string()),
            detail: format!("{e:#}"),
        })?;
        Ok(Self {
            spec: spec.clone(),
            sha256: sha256.to_string(),
            loaded_at: SystemTime::now(),
            engine: engine.clone(),
            compiled_for: component.engine().clone(),
            pre,
            name: Arc::from(spec.name.as_str()),
            warm: Mutex::new(None),
        })
    }

    fn new_store(&self) -> Result<Store<HostState>, Fault> {
        let limits = StoreLimitsBuilder::new()
            .memory_size((self.spec.limits.memory_mib << 20) as usize)
            .trap_on_grow_failure(true)
            .build();
        let state = HostState::new(self.name.clone(), limits, &self.spec.capabilities)
            .map_err(Fault::Grant)?;
        let mut store = Store::new(&self.compiled_for, state);
        store.limiter(|state| &mut state.limits);
        Ok(store)
    }

    fn arm(&self, store: &mut Store<HostState>) {
        self.arm_for(store, self.spec.limits.deadline_ms);
    }

    fn arm_for(&self, store: &mut Store<HostState>, deadline_ms: u64) {
        let ticks = deadline_ms.div_ceil(EPOCH_TICK.as_millis() as u64).max(1);
        store.set_epoch_deadline(ticks);
        if let Some(fuel) = self.spec.limits.fuel {
            let _ = store.set_fuel(fuel);
        }
    }

    /// A fresh instance, configured.
    fn instantiate(&self) -> Result<Warm, Fault> {
        let mut store = self.new_store()?;
        self.arm(&mut store);
        let _ticking = self.engine.begin_call();
        let bindings = match &self.pre {
            WorldPre::Eviction(pre) => pre.instantiate(&mut store).map(WorldBindings::Eviction),
            WorldPre::Gc(pre) => pre.instantiate(&mut store).map(WorldBindings::Gc),
            WorldPre::Probe(pre) => pre.instantiate(&mut store).map(WorldBindings::Probe),
            WorldPre::Hooks(pre) => pre.instantiate(&mut store).map(WorldBindings::Hooks),
        }
        .map_err(|e| classify(e, &self.spec))?;
        let config = self.spec.config_json.as_str();
        let configured = match &bindings {
            WorldBindings::Eviction(b) => b.call_configure(&mut store, config),
            WorldBindings::Gc(b) => b.call_configure(&mut store, config),
            WorldBindings::Probe(b) => b.call_configure(&mut store, config),
            WorldBindings::Hooks(b) => b.call_configure(&mut store, config),
        };
        match configured {
            Ok(Ok(())) => Ok(Warm { store, bindings }),
            Ok(Err(reason)) => Err(Fault::Configure(reason)),
            Err(error) => Err(classify(error, &self.spec)),
        }
    }

    /// What the host runs before swapping a version in: a fresh instance, `configure` and
    /// `self-check` under the plugin's limits. The instance is kept warm when it passes.
    pub fn validate(&self) -> Result<(), Fault> {
        let mut warm = self.instantiate()?;
        self.arm(&mut warm.store);
        let _ticking = self.engine.begin_call();
        let checked = match &warm.bindings {
            WorldBindings::Eviction(b) => b.call_self_check(&mut warm.store),
            WorldBindings::Gc(b) => b.call_self_check(&mut warm.store),
            WorldBindings::Probe(b) => b.call_self_check(&mut warm.store),
            WorldBindings::Hooks(b) => b.call_self_check(&mut warm.store),
        };
        match checked {
            Ok(Ok(())) => {
                *self.warm.lock().unwrap_or_else(|p| p.into_inner()) = Some(warm);
                Ok(())
            }
            Ok(Err(reason)) => Err(Fault::Error(format!("self-check: {reason}"))),
            Err(error) => Err(classify(error, &self.spec)),
        }
    }

    /// Runs `f` on the warm instance (building one if needed) with `meta` and `scope` in the
    /// store, under the plugin's deadline, fuel and memory limits. One call at a time.
    pub(crate) fn call<R>(
        &self,
        meta: CallMeta,
        scope: Option<PodScope>,
        f: impl FnOnce(&mut Store<HostState>, &WorldBindings) -> wasmtime::Result<R>,
    ) -> Result<R, Fault> {
        let mut slot = self.warm.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(self.instantiate()?);
        }
        let warm = slot.as_mut().expect("instance just built");
        // A call scoped to a pod (a probe or hook) runs until the scope's deadline: the
        // probe's timeout, or what the host allows the hook.
        let deadline_ms = scope.as_ref().map_or(self.spec.limits.deadline_ms, |s| {
            s.deadline
                .saturating_duration_since(std::time::Instant::now())
                .as_millis()
                .max(1) as u64
        });
        {
            let state = warm.store.data_mut();
            state.meta = meta;
            state.scope = scope;
            state.log_budget.reset();
        }
        self.arm_for(&mut warm.store, deadline_ms);
        let result = {
            let _ticking = self.engine.begin_call();
            f(&mut warm.store, &warm.bindings)
        };
        match result {
            Ok(value) => {
                let state = warm.store.data_mut();
                state.meta = CallMeta::default();
                state.scope = None;
                Ok(value)
            }
            Err(error) => {
                // A trap poisons the instance: the next call gets a fresh one.
                *slot = None;
                Err(match classify(error, &self.spec) {
                    Fault::Deadline(_) => Fault::Deadline(deadline_ms),
                    fault => fault,
                })
            }
        }
    }

    /// Runs `self-check` on the warm instance under the plugin's limits: the cheapest call
    /// there is, so it measures what the boundary itself costs.
    pub fn self_check(&self) -> Result<(), Fault> {
        let checked = self.call(
            CallMeta::default(),
            None,
            |store, bindings| match bindings {
                WorldBindings::Eviction(b) => b.call_self_check(store),
                WorldBindings::Gc(b) => b.call_self_check(store),
                WorldBindings::Probe(b) => b.call_self_check(store),
                WorldBindings::Hooks(b) => b.call_self_check(store),
            },
        )?;
        checked.map_err(|reason| Fault::Error(format!("self-check: {reason}")))
    }

    /// The deadline as a duration, for messages.
    pub fn deadline(&self) -> Duration {
        Duration::from_millis(self.spec.limits.deadline_ms)
    }
}
