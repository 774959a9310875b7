//! Test a plugin natively, without a kubelet (not compiled for wasm32).
//!
//! A *case* holds a snapshot as the host would pass it, plus the names,
//! labels, annotations and image tags that [`crate::host`] answers while the
//! case calls your plugin. Builders default to a plausible node so a test
//! states only what matters to it.
//!
//! ```
//! use wasmlet_plugin_sdk::fixtures::{EvictionCase, PodFixture, MI};
//! use wasmlet_plugin_sdk::{host, EvictionPolicy, NodeInfo, PodInfo, SignalObservation};
//!
//! #[derive(Default)]
//! struct SparePrefixed;
//! impl EvictionPolicy for SparePrefixed {
//!     fn rank(&self, _: &NodeInfo, _: &[SignalObservation], pods: &[PodInfo]) -> Result<Vec<u32>, String> {
//!         Ok((0..pods.len() as u32).filter(|&i| !host::pod_name(i).starts_with("keep-")).collect())
//!     }
//! }
//!
//! let case = EvictionCase::memory_pressure()
//!     .pod(PodFixture::new("default", "keep-me").memory(0, 10 * MI))
//!     .pod(PodFixture::new("default", "batch-1").memory(0, 10 * MI));
//! assert_eq!(case.rank_names(&SparePrefixed).unwrap(), ["default/batch-1"]);
//! ```

mod eviction;
mod gc;
mod hooks;
pub(crate) mod mock;

pub use eviction::{EvictionCase, PodFixture};
pub use gc::{GcCase, ImageFixture};
pub use hooks::{HookCase, MockPod};

use std::collections::HashSet;

use crate::types::LogLevel;

pub const KI: u64 = 1 << 10;
pub const MI: u64 = 1 << 20;
pub const GI: u64 = 1 << 30;
pub const MINUTE_MS: u64 = 60_000;
/// The wall clock of every case (2023-11-14T22:13:20Z); relative times in
/// builders count back from it.
pub const NOW_MS: u64 = 1_700_000_000_000;

/// One event a plugin logged through [`crate::host::log`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub level: LogLevel,
    pub message: String,
    pub fields: Vec<(String, String)>,
}

/// Takes the events logged on this thread so far.
pub fn take_logs() -> Vec<LogRecord> {
    mock::take_logs()
}

/// Fixes [`crate::host::now_unix_ms`] on this thread (`None`: the real clock).
/// Cases set [`NOW_MS`] themselves while they call a plugin.
pub fn set_now(now_unix_ms: Option<u64>) {
    mock::set_now(now_unix_ms)
}

/// What [`crate::host`] tells about one pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodMeta {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
}

impl PodMeta {
    pub fn new(namespace: &str, name: &str) -> Self {
        PodMeta {
            namespace: namespace.into(),
            name: name.into(),
            uid: format!("uid-{namespace}-{name}"),
            ..PodMeta::default()
        }
    }

    /// `namespace/name`, as tests compare them.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Runs `f` with `pods` (and image `tags`) installed as the call's snapshot
/// and the clock at [`NOW_MS`]: for calling a plugin method by hand.
pub fn with_snapshot<R>(pods: &[PodMeta], tags: &[Vec<String>], f: impl FnOnce() -> R) -> R {
    mock::set_now(Some(NOW_MS));
    let r = mock::with_snapshot(pods.to_vec(), tags.to_vec(), f);
    mock::set_now(None);
    r
}

/// The host's first check of any index answer: in range, no duplicates.
pub fn check_indices(answer: &[u32], len: usize, what: &str) -> Result<(), String> {
    let mut seen = HashSet::new();
    for &i in answer {
        if i as usize >= len {
            return Err(format!("{what} index {i} out of range (there are {len})"));
        }
        if !seen.insert(i) {
            return Err(format!("{what} index {i} listed twice"));
        }
    }
    Ok(())
}
