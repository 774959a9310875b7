//! Integration tests: the real `wasmlet` binary against the real containerd started by
//! scripts/setup-node.sh. One binary, a module per feature.

use wasmlet_test_support::harness;

mod events;
mod eviction;
mod gc;
mod hooks;
mod images;
mod logging;
mod logs;
mod manifests;
mod metrics;
mod plugin_pods;
mod plugins_api;
mod pods;
mod pressure_eviction;
mod probes;
mod restart_safety;
mod restarts;
mod secure_port;
mod stats;
mod streaming;
#[cfg(text_order)]
mod text_order;
mod volumes;
