//! What the runtime gave each running container of a pod (at creation or by the last in-place
//! resize), kept apart from the spec: the status reports it as `resources`, and the runtime
//! compares it with the spec to decide a resize. A leaf, so the status and the runtime can both
//! read it without reaching each other.

use k8s_openapi::api::core::v1::ResourceRequirements;
use std::collections::HashMap;

/// What each running container of one pod was given, by container ID, and why the last
/// in-place resize failed, if it did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppliedResources {
    by_id: HashMap<String, ResourceRequirements>,
    resize_error: Option<String>,
}

impl AppliedResources {
    /// What the container `id` was given, if this process knows.
    pub fn get(&self, id: &str) -> Option<&ResourceRequirements> {
        self.by_id.get(id)
    }

    /// Records that the container `id` now runs with `resources`.
    pub fn record(&mut self, id: String, resources: ResourceRequirements) {
        self.by_id.insert(id, resources);
    }

    /// Forgets containers the runtime no longer runs.
    pub fn retain(&mut self, live: impl Fn(&str) -> bool) {
        self.by_id.retain(|id, _| live(id));
    }

    /// Why the last sync's resizes failed (`None`: they succeeded), for the
    /// `PodResizeInProgress` condition's `Error` reason.
    pub fn resize_error(&self) -> Option<&str> {
        self.resize_error.as_deref()
    }

    /// The outcome of a sync that resized containers: their errors, joined, or none.
    pub fn set_resize_errors(&mut self, errors: &[String]) {
        self.resize_error = (!errors.is_empty()).then(|| errors.join("; "));
    }
}
