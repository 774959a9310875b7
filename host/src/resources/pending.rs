//! A resize the node has not allocated yet, as the status shows it: a leaf, so the
//! allocation (which decides it) and the status (which shows it) both name it.

/// Why a resize waits: the `PodResizePending` condition's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingReason {
    /// The node could hold it, but not beside the other pods' allocations now.
    Deferred,
    /// The node can never hold it (or the pod cannot be resized at all).
    Infeasible,
}

impl PendingReason {
    /// The API spelling (`v1.PodReasonDeferred`, `v1.PodReasonInfeasible`).
    pub fn as_str(self) -> &'static str {
        match self {
            PendingReason::Deferred => "Deferred",
            PendingReason::Infeasible => "Infeasible",
        }
    }
}

/// A resize that waits: the `PodResizePending` condition's reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingResize {
    /// Deferred or Infeasible.
    pub reason: PendingReason,
    /// What the node lacks (the admission handler's message, or the capacity check's).
    pub message: String,
}
