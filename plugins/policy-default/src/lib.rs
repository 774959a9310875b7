//! The upstream kubelet's eviction ranking and garbage-collection planning,
//! as plain functions over plain types.
//!
//! This crate is the single source of wasmlet's default policies. The
//! `eviction-default` and `gc-default` plugins compile it to WebAssembly; the
//! `wasmlet` host compiles the very same source natively as its built-in copy,
//! which serves when no plugin is configured and whenever a plugin faults.
//! It has no dependencies and knows nothing of WIT: its types mirror the
//! records of `wit/types.wit` field for field, so both sides convert into
//! them with a plain struct literal.
//!
//! ```
//! use wasmlet_policy_default::{eviction, PodInfo, Signal, SignalObservation};
//!
//! let pods = [
//!     PodInfo { priority: 10, has_stats: true, memory_usage_bytes: 100, ..PodInfo::default() },
//!     PodInfo { priority: 0, has_stats: true, memory_usage_bytes: 50, ..PodInfo::default() },
//! ];
//! let pressure = [SignalObservation::new(Signal::MemoryAvailable, 0, 0, 0)];
//! // Both exceed their (zero) requests: the lower priority goes first.
//! assert_eq!(eviction::rank(&pressure, &pods), vec![1, 0]);
//! ```

pub mod eviction;
pub mod gc;
pub mod packed;
mod types;

pub use types::{
    DeadContainer, DiskInfo, EvictNow, ImageInfo, NodeInfo, NodePsi, PodInfo, Pressure, PsiLine,
    PsiResource, QosClass, Signal, SignalObservation,
};
