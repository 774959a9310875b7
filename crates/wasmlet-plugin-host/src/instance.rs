//! One loaded version of a plugin: its compiled component linked for its world, a warm
//! instance reused across calls, and calls run under the plugin's limits. A call that traps,
//! runs past its deadline, exhausts its fuel or its memory cap is a [`Fault`]; the instance is
//! dropped (a trap poisons it) and rebuilt from the pre-linked component on the next call.

use crate::bindings::{eviction, gc, hooks, pressure, probe};
use crate::cap;
use crate::config::{PluginSpec, World};
use crate::engine::{PluginEngine, EPOCH_TICK};
use crate::error::{Fault, LoadError};
use crate::limiter::{InstanceLimiter, OverCap};
use crate::records::PodScope;
use crate::state::{CallMeta, HostState};
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Store, Trap};

enum WorldPre {
    Eviction(eviction::EvictionPolicyPre<HostState>),
    /// An eviction plugin that also exports `pressure-watch` (0.1.2).
    PressureEviction(pressure::PressureEvictionPolicyPre<HostState>),
    Gc(gc::GcStrategyPre<HostState>),
    Probe(probe::ProbeHandlerPre<HostState>),
    Hooks(hooks::LifecycleHooksPre<HostState>),
}

/// One call of an export, as a future borrowing the instance's store and bindings; run by
/// [`LoadedPlugin::call`] under the call's deadline.
pub(crate) type CallFuture<'a, R> = Pin<Box<dyn Future<Output = wasmtime::Result<R>> + 'a>>;

/// Lets a call's future borrow the caller's data (`'d`, a snapshot's pods) as well as the
/// store (`'a`): its bound says the data outlives the call, as `std::thread::Scope` does for
/// a scope's borrows. Without it the future could hold only owned data, and a ranking would
/// copy every pod's words once more before wasmtime copies them into the guest.
pub(crate) struct Borrows<'a, 'd: 'a>(std::marker::PhantomData<&'a &'d ()>);

/// The instantiated bindings of one world.
pub(crate) enum WorldBindings {
    Eviction(eviction::EvictionPolicy),
    PressureEviction(pressure::PressureEvictionPolicy),
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
    /// The `wasmlet:plugin` version it was built against (`0.1.0`), for `/plugins`.
    pub contract: Option<String>,
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
    // Async: a guest blocked in WASI is stopped by the call's timeout (`engine` explains).
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    let pre = linker.instantiate_pre(component)?;
    Ok(match world {
        // The optional export is probed first: a component that has it is bound with it.
        World::EvictionPolicy => match pressure::PressureEvictionPolicyPre::new(pre.clone()) {
            Ok(with_watch) => WorldPre::PressureEviction(with_watch),
            Err(_) => WorldPre::Eviction(eviction::EvictionPolicyPre::new(pre)?),
        },
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

/// The `wasmlet:plugin` contract version a component was built against, read from its
/// imports (`wasmlet:plugin/host@0.1.0`): the host links every 0.1.x version at its own,
/// so authors and operators see which one a component speaks.
pub(crate) fn contract_version(component: &Component) -> Option<String> {
    component
        .component_type()
        .imports(component.engine())
        .find_map(|(name, _)| {
            name.strip_prefix("wasmlet:plugin/")
                .and_then(|rest| rest.split_once('@'))
                .map(|(_, version)| version.to_string())
        })
}

fn classify(error: wasmtime::Error, spec: &PluginSpec) -> Fault {
    if error.downcast_ref::<OverCap>().is_some() {
        return Fault::Memory(spec.limits.memory_mib);
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Fault::Deadline(spec.limits.deadline_ms),
        Some(Trap::OutOfFuel) => Fault::Fuel,
        // The text may carry the guest's own function names: capped too.
        _ => Fault::Trap(cap::reason(format!("{error:#}"))),
    }
}

/// Milliseconds from `now` to `deadline`, to the nearest, at least 1.
fn millis_until(deadline: Instant, now: Instant) -> u64 {
    let micros = deadline.saturating_duration_since(now).as_micros();
    (micros.saturating_add(500) / 1000).clamp(1, u128::from(u64::MAX)) as u64
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
        Self::link(engine, spec, &component, sha256)
    }

    /// Links a component compiled by `engine` (for the spec's fuel setting) for the spec's
    /// world: `plugin validate` has compiled it already to read its imports.
    pub(crate) fn link(
        engine: &PluginEngine,
        spec: &PluginSpec,
        component: &Component,
        sha256: &str,
    ) -> Result<Self, LoadError> {
        let pre = link(component, spec.world).map_err(|e| LoadError::World {
            expected: spec.world.as_str(),
            found: detect_world(component)
                .map_or("no plugin world".to_string(), |w| w.as_str().to_string()),
            detail: format!("{e:#}"),
        })?;
        Ok(Self {
            spec: spec.clone(),
            sha256: sha256.to_string(),
            loaded_at: SystemTime::now(),
            contract: contract_version(component),
            engine: engine.clone(),
            compiled_for: component.engine().clone(),
            pre,
            name: Arc::from(spec.name.as_str()),
            warm: Mutex::new(None),
        })
    }

    fn new_store(&self) -> Result<Store<HostState>, Fault> {
        let cap = usize::try_from(self.spec.limits.memory_mib.saturating_mul(1 << 20))
            .unwrap_or(usize::MAX);
        let state = HostState::new(
            self.name.clone(),
            InstanceLimiter::new(cap),
            &self.spec.capabilities,
        )
        .map_err(|error| Fault::Grant(error.to_string()))?;
        let mut store = Store::new(&self.compiled_for, state);
        store.limiter(|state| &mut state.limits);
        Ok(store)
    }

    /// Arms the store for a call ending at `deadline`: the epoch deadline (for a guest
    /// running Wasm) and the fuel. The same deadline bounds the call's future (for a guest
    /// blocked in a host call), in [`LoadedPlugin::run`]. Returns the milliseconds left, as
    /// a deadline fault names them.
    fn arm(&self, store: &mut Store<HostState>, deadline: Instant, now: Instant) -> u64 {
        let left_ms = millis_until(deadline, now);
        let ticks = left_ms.div_ceil(EPOCH_TICK.as_millis() as u64).max(1);
        store.set_epoch_deadline(ticks);
        if let Some(fuel) = self.spec.limits.fuel {
            let _ = store.set_fuel(fuel);
        }
        left_ms
    }

    /// Runs `future` (a call into the instance) until it ends or `deadline` passes, with the
    /// epoch ticking. A call cut at its deadline is [`Fault::Deadline`] of `deadline_ms` (what
    /// [`LoadedPlugin::arm`] found left), as an epoch interrupt is.
    fn run<R>(
        &self,
        deadline: Instant,
        deadline_ms: u64,
        future: impl Future<Output = wasmtime::Result<R>>,
    ) -> Result<R, Fault> {
        let _ticking = self.engine.begin_call();
        match self.engine.run_until(deadline, future) {
            None => Err(Fault::Deadline(deadline_ms)),
            Some(Ok(value)) => Ok(value),
            Some(Err(error)) => Err(match classify(error, &self.spec) {
                Fault::Deadline(_) => Fault::Deadline(deadline_ms),
                fault => fault,
            }),
        }
    }

    /// A fresh instance, configured, by `deadline`: a cold start is part of the call that
    /// needs it and ends with it.
    fn instantiate(&self, deadline: Instant) -> Result<Warm, Fault> {
        let mut store = self.new_store()?;
        let now = Instant::now();
        let deadline_ms = self.arm(&mut store, deadline, now);
        let config = self.spec.config_json.as_str();
        let pre = &self.pre;
        let store_ref = &mut store;
        let (bindings, configured) = self.run(deadline, deadline_ms, async move {
            let bindings = match pre {
                WorldPre::Eviction(pre) => pre
                    .instantiate_async(&mut *store_ref)
                    .await
                    .map(WorldBindings::Eviction),
                WorldPre::PressureEviction(pre) => pre
                    .instantiate_async(&mut *store_ref)
                    .await
                    .map(WorldBindings::PressureEviction),
                WorldPre::Gc(pre) => pre
                    .instantiate_async(&mut *store_ref)
                    .await
                    .map(WorldBindings::Gc),
                WorldPre::Probe(pre) => pre
                    .instantiate_async(&mut *store_ref)
                    .await
                    .map(WorldBindings::Probe),
                WorldPre::Hooks(pre) => pre
                    .instantiate_async(&mut *store_ref)
                    .await
                    .map(WorldBindings::Hooks),
            }?;
            let configured = match &bindings {
                WorldBindings::Eviction(b) => b.call_configure(&mut *store_ref, config).await,
                WorldBindings::PressureEviction(b) => {
                    b.call_configure(&mut *store_ref, config).await
                }
                WorldBindings::Gc(b) => b.call_configure(&mut *store_ref, config).await,
                WorldBindings::Probe(b) => b.call_configure(&mut *store_ref, config).await,
                WorldBindings::Hooks(b) => b.call_configure(&mut *store_ref, config).await,
            }?;
            Ok((bindings, configured))
        })?;
        match configured {
            Ok(()) => Ok(Warm { store, bindings }),
            Err(reason) => Err(Fault::Configure(cap::reason(reason))),
        }
    }

    /// What the host runs before swapping a version in: a fresh instance, `configure` and
    /// `self-check` under the plugin's limits. The instance is kept warm when it passes.
    pub fn validate(&self) -> Result<(), Fault> {
        let mut warm = self.instantiate(Instant::now() + self.deadline())?;
        let now = Instant::now();
        let deadline = now + self.deadline();
        let deadline_ms = self.arm(&mut warm.store, deadline, now);
        let checked = {
            let Warm { store, bindings } = &mut warm;
            self.run(deadline, deadline_ms, self_check(store, bindings))?
        };
        match checked {
            Ok(()) => {
                *self.warm.lock() = Some(warm);
                Ok(())
            }
            Err(reason) => Err(Fault::Error(format!("self-check: {}", cap::reason(reason)))),
        }
    }

    /// Runs `f` on the warm instance (building one if needed) with `meta` and `scope` in the
    /// store, under the plugin's deadline, fuel and memory limits. One call at a time.
    ///
    /// A call scoped to a pod (a probe or hook) ends at the earlier of the scope's deadline
    /// (the probe's timeout, the hook's grace) and the plugin's own `deadlineMs`; the scope
    /// the guest's `pod-access` calls see is cut to the same instant. `now` is the caller's
    /// reading of the clock as the call starts (one reading serves the call and its timing).
    pub(crate) fn call<'d, R>(
        &self,
        meta: CallMeta,
        scope: Option<PodScope>,
        now: Instant,
        f: impl for<'a> FnOnce(
            &'a mut Store<HostState>,
            &'a WorldBindings,
            Borrows<'a, 'd>,
        ) -> CallFuture<'a, R>,
    ) -> Result<R, Fault> {
        let mut slot = self.warm.lock();
        let mut scope = scope;
        let own = now + self.deadline();
        let deadline = match scope.as_mut() {
            Some(scope) => {
                scope.deadline = scope.deadline.min(own);
                scope.deadline
            }
            None => own,
        };
        let mut warm = match slot.take() {
            Some(warm) => warm,
            None => self.instantiate(deadline)?,
        };
        {
            let state = warm.store.data_mut();
            state.meta = meta;
            state.scope = scope;
            state.log_budget.reset();
        }
        let deadline_ms = self.arm(&mut warm.store, deadline, now);
        let result = {
            let Warm { store, bindings } = &mut warm;
            let borrows = Borrows(std::marker::PhantomData);
            self.run(deadline, deadline_ms, f(store, bindings, borrows))
        };
        // A fault poisons the instance (a trap, or a call cut mid-way): it is dropped here and
        // the next call gets a fresh one.
        let value = result?;
        let state = warm.store.data_mut();
        state.meta = CallMeta::default();
        state.scope = None;
        *slot = Some(warm);
        Ok(value)
    }

    /// Runs `self-check` on the warm instance under the plugin's limits: the cheapest call
    /// there is, so it measures what the boundary itself costs.
    pub fn self_check(&self) -> Result<(), Fault> {
        let checked = self.call(
            CallMeta::default(),
            None,
            Instant::now(),
            |store, bindings, _| Box::pin(self_check(store, bindings)),
        )?;
        checked.map_err(|reason| Fault::Error(format!("self-check: {}", cap::reason(reason))))
    }

    /// The deadline as a duration, for messages.
    pub fn deadline(&self) -> Duration {
        Duration::from_millis(self.spec.limits.deadline_ms)
    }

    /// Whether the component exports `pressure-watch` (world `pressure-eviction-policy`).
    pub fn watches_pressure(&self) -> bool {
        matches!(self.pre, WorldPre::PressureEviction(_))
    }
}

/// `self-check` of whichever world the instance serves.
async fn self_check(
    store: &mut Store<HostState>,
    bindings: &WorldBindings,
) -> wasmtime::Result<Result<(), String>> {
    match bindings {
        WorldBindings::Eviction(b) => b.call_self_check(store).await,
        WorldBindings::PressureEviction(b) => b.call_self_check(store).await,
        WorldBindings::Gc(b) => b.call_self_check(store).await,
        WorldBindings::Probe(b) => b.call_self_check(store).await,
        WorldBindings::Hooks(b) => b.call_self_check(store).await,
    }
}
