//! The status manager (upstream's `pkg/kubelet/status`): the only writer of pod status. Each
//! change gets a version per pod and goes to the local store `/pods` serves and to every sink
//! plugged in beside it (the API-server writer in cluster mode), never older over newer.

use super::{mark_evicted, StatusStore};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Somewhere pod statuses go besides the local store.
pub trait StatusSink: Send + Sync {
    /// `pod` (with its status) changed; `version` grows with every change of this pod.
    fn pod_changed(&self, pod: &Pod, version: u64);
    /// The pod is gone from the node.
    fn pod_removed(&self, uid: &str);
}

/// The only writer of pod status.
pub struct StatusManager {
    store: Arc<StatusStore>,
    sinks: Vec<Arc<dyn StatusSink>>,
    versions: Mutex<HashMap<String, u64>>,
}

impl StatusManager {
    /// A manager writing to `store` (what `/pods` serves) and to `sinks`.
    pub fn new(store: Arc<StatusStore>, sinks: Vec<Arc<dyn StatusSink>>) -> Self {
        Self {
            store,
            sinks,
            versions: Mutex::new(HashMap::new()),
        }
    }

    /// The local view, for readers.
    pub fn store(&self) -> &Arc<StatusStore> {
        &self.store
    }

    /// The pod as last written.
    pub fn get(&self, uid: &str) -> Option<Pod> {
        self.store.get(uid)
    }

    /// Whether the pod's published phase is Succeeded or Failed.
    pub fn is_terminal(&self, uid: &str) -> bool {
        self.get(uid)
            .and_then(|p| p.status)
            .and_then(|s| s.phase)
            .is_some_and(|phase| phase == "Succeeded" || phase == "Failed")
    }

    /// Publishes `status` for `pod`.
    pub fn set_status(&self, pod: &Pod, status: PodStatus) {
        let mut pod = pod.clone();
        pod.status = Some(status);
        self.write(pod);
    }

    /// Marks the stored pod as being deleted (`deletionTimestamp`, grace period) as of now.
    pub fn mark_terminating(&self, uid: &str, grace: Duration) {
        if let Some(mut pod) = self.get(uid) {
            pod.metadata.deletion_timestamp = Some(crate::timestamps::now());
            pod.metadata.deletion_grace_period_seconds = Some(grace.as_secs() as i64);
            self.write(pod);
        }
    }

    /// Marks the stored pod Failed / Evicted with `message` and a DisruptionTarget condition.
    pub fn mark_evicted(&self, uid: &str, message: String) {
        if let Some(mut pod) = self.get(uid) {
            if let Some(status) = pod.status.as_mut() {
                mark_evicted(status, message);
            }
            self.write(pod);
        }
    }

    /// Forgets the pod: it is gone from the node.
    pub fn remove(&self, uid: &str) {
        self.store.remove(uid);
        self.lock().remove(uid);
        for sink in &self.sinks {
            sink.pod_removed(uid);
        }
    }

    fn write(&self, pod: Pod) {
        let uid = crate::podutil::uid(&pod).to_string();
        let version = {
            let mut versions = self.lock();
            let version = versions.entry(uid).or_insert(0);
            *version += 1;
            *version
        };
        for sink in &self.sinks {
            sink.pod_changed(&pod, version);
        }
        self.store.set(pod);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        // A panic while holding the lock cannot leave a counter half-written; keep serving.
        self.versions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<(String, u64)>>);

    impl StatusSink for Recorder {
        fn pod_changed(&self, pod: &Pod, version: u64) {
            let phase = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_default();
            self.0.lock().unwrap().push((phase, version));
        }
        fn pod_removed(&self, uid: &str) {
            self.0.lock().unwrap().push((format!("removed {uid}"), 0));
        }
    }

    fn pod(uid: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.uid = Some(uid.into());
        pod
    }

    fn phase(phase: &str) -> PodStatus {
        PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        }
    }

    #[test]
    fn every_change_reaches_the_store_and_the_sinks_with_a_growing_version() {
        let sink = Arc::new(Recorder::default());
        let store = Arc::new(StatusStore::default());
        let manager = StatusManager::new(store.clone(), vec![sink.clone()]);
        manager.set_status(&pod("a"), phase("Pending"));
        manager.set_status(&pod("a"), phase("Running"));
        manager.mark_evicted("a", "low on memory".into());
        assert!(manager.is_terminal("a"));
        assert_eq!(
            store.get("a").and_then(|p| p.status).and_then(|s| s.reason),
            Some("Evicted".into())
        );
        manager.remove("a");
        assert!(store.get("a").is_none());
        manager.set_status(&pod("a"), phase("Pending"));
        assert_eq!(
            *sink.0.lock().unwrap(),
            [
                ("Pending".to_string(), 1),
                ("Running".to_string(), 2),
                ("Failed".to_string(), 3),
                ("removed a".to_string(), 0),
                ("Pending".to_string(), 1),
            ]
        );
    }
}
