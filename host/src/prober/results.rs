//! What probes find and publish: the outcome of one run, the result a probe publishes once its
//! threshold is met, and the shared map of a container's published results that the status
//! and the pod worker read.

use super::ProbeKind;
use parking_lot::Mutex;
use std::collections::HashMap;

/// What one probe run found (upstream's `probe.Result` with its error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The probe passed.
    Success,
    /// Success with a note (an HTTP redirect to another host), as upstream's `Warning`.
    Warning(String),
    /// The probe ran and failed, with the handler's message.
    Failure(String),
    /// A plugin could not tell: counted as a failure, labelled `unknown` in the metrics.
    Unknown(String),
    /// The probe could not run at all (a port name that does not exist, the runtime did not
    /// answer): retried, then thrown away, as upstream's prober errors.
    Error(String),
}

/// The result a probe publishes once its threshold is met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeResult {
    /// Not yet known (a startup probe before its first result).
    Unknown,
    /// Passing.
    Success,
    /// Failing.
    Failure,
}

/// The published result of each probe of a container, and why it last changed.
#[derive(Debug, Clone)]
pub struct Published {
    /// The result the status and the pod worker act on.
    pub result: ProbeResult,
    /// Why (the handler's message), for the log line that reports a change or a kill.
    pub message: String,
}

/// One container's published results, shared by its probe tasks and the pod worker.
#[derive(Default)]
pub(super) struct Shared {
    results: Mutex<HashMap<ProbeKind, Published>>,
}

impl Shared {
    /// The results, recovered if a task panicked while holding them.
    pub(super) fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<ProbeKind, Published>> {
        self.results.lock()
    }

    /// The container has started: it has no startup probe, or that probe succeeded.
    pub(super) fn started(&self) -> bool {
        self.lock()
            .get(&ProbeKind::Startup)
            .is_none_or(|p| p.result == ProbeResult::Success)
    }

    /// Records a result; true when it changed.
    pub(super) fn publish(&self, kind: ProbeKind, result: ProbeResult, message: String) -> bool {
        let mut results = self.lock();
        let changed = results.get(&kind).is_none_or(|p| p.result != result);
        results.insert(kind, Published { result, message });
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_gates_ready_and_started() {
        let shared = Shared::default();
        shared.publish(ProbeKind::Startup, ProbeResult::Unknown, String::new());
        shared.publish(ProbeKind::Readiness, ProbeResult::Failure, String::new());
        assert!(!shared.started());
        assert!(shared.publish(ProbeKind::Startup, ProbeResult::Success, String::new()));
        assert!(shared.started());
        assert!(!shared.publish(ProbeKind::Startup, ProbeResult::Success, String::new()));
    }
}
