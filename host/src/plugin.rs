//! The plugin platform: policies as WebAssembly components (`wit/`, package
//! `wasmlet:plugin@0.1.0`), run sandboxed under per-plugin limits, swapped on a live node, and
//! backed by built-in defaults. Nothing outside this module touches wasmtime.

pub mod bindings;
pub mod config;
pub mod decisions;
pub mod engine;
pub mod instance;
pub mod registry;
pub mod state;
pub mod tool;
pub mod wasi;

pub use config::World;
pub use decisions::{DecidedBy, Decision, EvictionSnapshot};
pub use engine::PluginEngine;
pub use instance::Fault;
pub use registry::{PluginRegistry, PluginState};
