extern crate self as wasmlet_plugin_sdk;
#[cfg(target_arch = "wasm32")]
pub mod bindings;
#[doc(hidden)]
pub mod __rt {
    #[cfg(target_arch = "wasm32")]
    pub use wit_bindgen;
}
