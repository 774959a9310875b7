//! Glue between the generated bindings and the SDK traits. Not public API:
//! only [`crate::export!`] refers to it.

#[cfg(target_arch = "wasm32")]
pub use wit_bindgen;

#[cfg(target_arch = "wasm32")]
mod eviction;
#[cfg(target_arch = "wasm32")]
mod gc;
#[cfg(target_arch = "wasm32")]
mod hooks;
#[cfg(target_arch = "wasm32")]
mod pressure;
#[cfg(target_arch = "wasm32")]
mod probe;
#[cfg(target_arch = "wasm32")]
mod state;

#[cfg(target_arch = "wasm32")]
pub use self::{
    eviction::EvictionGuest, gc::GcGuest, hooks::HooksGuest, pressure::PressureEvictionGuest,
    probe::ProbeGuest,
};
