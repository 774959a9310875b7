//! What wasmlet's integration tests and benchmarks share, in one crate instead of source files
//! included by path: the table of plugin components, a real OCI registry, the real cosign, the
//! SDK-built plugins and, with the `node` feature, a test node running the real `wasmlet`
//! binary on the real containerd, its secure port's clients, and the benchmarks' raw CRI side.
//!
//! The `node` feature pulls in the host crate; the plugin host's own tests leave it off.

pub mod components;
pub mod cosign;
pub mod oci_registry;
pub mod sdk_plugins;

#[cfg(feature = "node")]
pub mod bench;
#[cfg(feature = "node")]
pub mod harness;
#[cfg(feature = "node")]
pub mod secure_port;
