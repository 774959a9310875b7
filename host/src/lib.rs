//! wasmlet: a Kubernetes node agent (kubelet) whose policies are WebAssembly components.
//!
//! The call path is short on purpose: [`source`] -> [`syncloop`] -> [`pod_worker`] -> [`cri`],
//! with [`pleg`] telling the loop what changed and [`status`] computing what `/pods` serves.

pub mod agent;
pub mod backoff;
pub mod cgroups;
pub mod config;
pub mod cri;
pub mod eviction;
pub mod fs_stats;
pub mod gc;
pub mod health;
pub mod lifecycle;
pub mod logs;
pub mod metrics;
pub mod node_status;
pub mod pleg;
pub mod pod_worker;
pub mod prober;
pub mod resources;
pub mod runtime_status;
pub mod server;
pub mod source;
pub mod status;
pub mod syncloop;
pub mod terminal;
pub mod volumes;
