//! Write wasmlet plugins as plain Rust.
//!
//! wasmlet is a Kubernetes kubelet whose policies are WebAssembly components
//! (contract: `wit/`, package `wasmlet:plugin@0.1.2`). This crate hides the
//! component model: implement one trait, call [`export!`] once, build for
//! `wasm32-wasip2`, and test the same code natively with `fixtures`.
//!
//! | world | trait | `export!(T as ...)` |
//! |---|---|---|
//! | `eviction-policy` | [`EvictionPolicy`] | `eviction` |
//! | `pressure-eviction-policy` (0.1.2) | [`PressureWatch`] (and [`EvictionPolicy`]) | `pressure_eviction` |
//! | `gc-strategy` | [`GcStrategy`] | `gc` |
//! | `probe-handler` | [`ProbeHandler`] | `probe` |
//! | `lifecycle-hooks` | [`LifecycleHooks`] | `hooks` |
//!
//! A complete eviction plugin that evicts the pods with the most restarts
//! first, and its test:
//!
//! ```
//! use wasmlet_plugin_sdk::{export, EvictionPolicy, NodeInfo, PodInfo, SignalObservation};
//!
//! #[derive(Default)]
//! struct RestartsFirst;
//!
//! impl EvictionPolicy for RestartsFirst {
//!     fn rank(&self, _: &NodeInfo, _: &[SignalObservation], pods: &[PodInfo]) -> Result<Vec<u32>, String> {
//!         let mut order: Vec<u32> = (0..pods.len() as u32)
//!             .filter(|&i| pods[i as usize].is_evictable())
//!             .collect();
//!         order.sort_by_key(|&i| std::cmp::Reverse(pods[i as usize].restart_count));
//!         Ok(order)
//!     }
//! }
//!
//! export!(RestartsFirst as eviction);
//!
//! # fn main() {
//! // #[test]
//! # {
//!     use wasmlet_plugin_sdk::fixtures::{EvictionCase, PodFixture};
//!     let case = EvictionCase::memory_pressure()
//!         .pod(PodFixture::new("default", "calm").restarts(0))
//!         .pod(PodFixture::new("default", "flappy").restarts(9))
//!         .pod(PodFixture::new("kube-system", "etcd").restarts(50).static_pod());
//!     assert_eq!(case.rank_names(&RestartsFirst).unwrap(), ["default/flappy", "default/calm"]);
//! # }
//! # }
//! ```
//!
//! `Cargo.toml` of such a plugin: `crate-type = ["cdylib"]` and a dependency
//! on this crate; build with `cargo build --release --target wasm32-wasip2`.
//!
//! Hot-path data is narrow by design: pods, images and dead containers are
//! numbers and enums, referred to by index; fetch names, labels and
//! annotations with [`host`] only for the pods you need. Return `Err` for a
//! condition the operator should see: the host logs it, counts a fault and
//! falls back to its built-in default for that call.

extern crate self as wasmlet_plugin_sdk;

pub mod config;
pub mod host;
pub mod scoped;
pub mod types;

#[cfg(not(target_arch = "wasm32"))]
pub mod fixtures;

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod bindings;

#[doc(hidden)]
pub mod __rt;

pub use scoped::PodAccess;
pub use types::*;
/// The upstream policies, for plugins that adjust rather than replace them.
pub use wasmlet_policy_default as defaults;

/// A policy choosing which pods to evict under node pressure
/// (world `eviction-policy`).
pub trait EvictionPolicy {
    /// Applies the plugin's JSON config (see [`config::parse`]). Called on a
    /// fresh default instance; `Err` refuses the config.
    fn configure(&mut self, config: &str) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// Exercises the plugin before the host swaps it in; `Err` rejects it.
    fn self_check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Indices into `pods`, most evictable first; see `wit/eviction.wit` for
    /// what the host guarantees and checks.
    fn rank(
        &self,
        node: &NodeInfo,
        pressure: &[SignalObservation],
        pods: &[PodInfo],
    ) -> Result<Vec<u32>, String>;
}

/// An eviction policy that also watches the node's pressure stall information (world
/// `pressure-eviction-policy`, contract 0.1.2): besides ranking when a threshold is met, it
/// may ask to evict before one is.
pub trait PressureWatch: EvictionPolicy {
    /// Called once per eviction monitoring period with the node's PSI; `Some` asks the host
    /// to evict (at most one pod, within the host's bounds: see `wit/pressure.wit`). `&mut`:
    /// a policy may keep what it saw across calls (how long pressure has been high).
    fn watch(
        &mut self,
        node: &NodeInfo,
        psi: &NodePsi,
        pods: &[PodInfo],
    ) -> Result<Option<EvictNow>, String>;
}

/// A strategy choosing which images and dead containers to collect
/// (world `gc-strategy`). Both plans default to the upstream kubelet's.
pub trait GcStrategy {
    /// Applies the plugin's JSON config; `Err` refuses it.
    fn configure(&mut self, config: &str) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// Exercises the plugin before the host swaps it in; `Err` rejects it.
    fn self_check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Images to delete, as indices into `images`, in order. Default:
    /// upstream least-recently-used ([`defaults::gc::plan_images`]).
    fn plan_images(&self, disk: &DiskInfo, images: &[ImageInfo]) -> Result<Vec<u32>, String> {
        Ok(defaults::gc::plan_images(disk, images, host::now_unix_ms()))
    }

    /// Dead containers to remove, as indices into `dead`. Default: upstream
    /// with its default flags ([`defaults::gc::plan_containers`]).
    fn plan_containers(&self, dead: &[DeadContainer]) -> Result<Vec<u32>, String> {
        Ok(defaults::gc::plan_containers(
            dead,
            &defaults::gc::ContainerGcPolicy::default(),
        ))
    }
}

/// A probe handler chosen by a pod annotation (world `probe-handler`).
pub trait ProbeHandler {
    /// Applies the plugin's JSON config; `Err` refuses it.
    fn configure(&mut self, config: &str) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// Exercises the plugin before the host swaps it in; `Err` rejects it.
    fn self_check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Runs one probe; `pod` reaches the probed pod only.
    fn check(&self, request: &ProbeRequest, pod: &dyn PodAccess) -> ProbeResult;
}

/// Admission and container lifecycle hooks (world `lifecycle-hooks`). Every
/// hook defaults to doing nothing and succeeding.
pub trait LifecycleHooks {
    /// Applies the plugin's JSON config; `Err` refuses it.
    fn configure(&mut self, config: &str) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// Exercises the plugin before the host swaps it in; `Err` rejects it.
    fn self_check(&self) -> Result<(), String> {
        Ok(())
    }

    /// `Err(reason)` rejects the pod. Pod index 0 in [`host`] is this pod.
    fn admit(&self, pod: &AdmissionPod) -> Result<(), String> {
        let _ = pod;
        Ok(())
    }

    /// Runs after `container` started; `Err` fails the hook (the container
    /// is killed, as upstream).
    fn post_start(&self, container: &str, pod: &dyn PodAccess) -> Result<(), String> {
        let _ = (container, pod);
        Ok(())
    }

    /// Runs before `container` is stopped, with `grace_ms` left; `Err` is
    /// logged and termination goes on.
    fn pre_stop(&self, container: &str, grace_ms: u32, pod: &dyn PodAccess) -> Result<(), String> {
        let _ = (container, grace_ms, pod);
        Ok(())
    }
}

/// Exports a type as the plugin of one world.
///
/// `export!(MyType as eviction)` (or `pressure_eviction`, `gc`, `probe`, `hooks`). The type must
/// implement the world's trait and `Default`: the SDK keeps one instance,
/// created with `Default` and configured by the host's `configure` call
/// (each `configure` starts again from `Default`). Use it once per plugin
/// crate. Natively it only checks the trait bounds, so the crate still
/// builds and tests on the host target.
#[macro_export]
macro_rules! export {
    ($ty:ty as eviction) => {
        $crate::__export_world!(
            $ty,
            EvictionPolicy,
            EvictionGuest,
            __export_eviction_policy_impl,
            eviction
        );
    };
    ($ty:ty as pressure_eviction) => {
        $crate::__export_world!(
            $ty,
            PressureWatch,
            PressureEvictionGuest,
            __export_pressure_eviction_policy_impl,
            pressure_eviction
        );
    };
    ($ty:ty as gc) => {
        $crate::__export_world!($ty, GcStrategy, GcGuest, __export_gc_strategy_impl, gc);
    };
    ($ty:ty as probe) => {
        $crate::__export_world!(
            $ty,
            ProbeHandler,
            ProbeGuest,
            __export_probe_handler_impl,
            probe
        );
    };
    ($ty:ty as hooks) => {
        $crate::__export_world!(
            $ty,
            LifecycleHooks,
            HooksGuest,
            __export_lifecycle_hooks_impl,
            hooks
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export_world {
    ($ty:ty, $trait:ident, $guest:ident, $export:ident, $module:ident) => {
        const _: fn() = || {
            fn assert_plugin<T: $crate::$trait + ::core::default::Default + 'static>() {}
            assert_plugin::<$ty>();
        };
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            type __WasmletGuest = $crate::__rt::$guest<$ty>;
    $crate::$export!(__WasmletGuest with_types_in $crate::bindings::$module);
        };
    };
}
