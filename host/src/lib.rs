//! wasmlet: a Kubernetes node agent (kubelet) whose policies are WebAssembly components.
//!
//! The call path is short on purpose: [`source`] -> [`syncloop`] (with [`admission`]) ->
//! [`pod_worker`] -> [`kuberuntime`] -> [`cri`], with [`pleg`] telling the loop what changed
//! and [`status`] the only writer of pod status.

pub mod admission;
pub mod agent;
pub mod allocation;
pub mod backoff;
pub mod cgroups;
pub mod cluster;
pub mod config;
pub mod cri;
pub mod events;
pub mod eviction;
pub mod fieldpath;
pub mod gc;
pub mod health;
pub mod heap;
pub mod kuberuntime;
pub mod lifecycle;
pub mod logging;
pub mod logs;
pub mod machine;
pub mod metrics;
pub mod node_status;
pub mod objects;
pub mod pleg;
pub mod pod_worker;
pub mod podutil;
pub mod prober;
pub mod resources;
pub mod runtime_status;
pub mod secure_port;
pub mod server;
pub mod source;
pub mod stats;
pub mod status;
pub mod streaming;
pub mod syncloop;
pub mod terminal;
pub mod timestamps;
pub mod ttl_cache;
pub mod volumes;

#[cfg(test)]
mod plugin_input_props;
