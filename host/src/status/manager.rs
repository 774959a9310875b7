//! The status manager (upstream's `pkg/kubelet/status`): the only writer of pod status. Each
//! change gets a version per pod and goes to the local store `/pods` serves and to every sink
//! plugged in beside it (the API-server writer in cluster mode), never older over newer.

use super::{mark_evicted, StatusStore};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
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
    pub fn get(&self, uid: &str) -> Option<Arc<Pod>> {
        self.store.get(uid)
    }

    /// The status last published for the pod, copied without the rest of the pod.
    pub fn published_status(&self, uid: &str) -> Option<PodStatus> {
        self.get(uid).and_then(|pod| pod.status.clone())
    }

    /// Calls `f` with the pod of each of `uids` as last written, without copying it.
    pub fn visit<'a>(&self, uids: impl IntoIterator<Item = &'a str>, f: impl FnMut(&Pod)) {
        self.store.visit(uids, f);
    }

    /// Whether the pod's published phase is Succeeded or Failed.
    pub fn is_terminal(&self, uid: &str) -> bool {
        let mut terminal = false;
        self.visit([uid], |pod| terminal = crate::podutil::is_terminal(pod));
        terminal
    }

    /// Publishes `status` for `pod`.
    pub fn set_status(&self, pod: &Pod, status: PodStatus) {
        let mut pod = pod.clone();
        pod.status = Some(status);
        self.write(pod);
    }

    /// Marks the stored pod as being deleted (`deletionTimestamp`, grace period) as of now.
    pub fn mark_terminating(&self, uid: &str, grace: Duration) {
        self.rewrite(uid, |pod| {
            pod.metadata.deletion_timestamp = Some(crate::timestamps::now());
            pod.metadata.deletion_grace_period_seconds = Some(grace.as_secs() as i64);
        });
    }

    /// Marks the stored pod Failed / Evicted with `message` and a DisruptionTarget condition.
    pub fn mark_evicted(&self, uid: &str, message: String) {
        self.rewrite(uid, |pod| {
            if let Some(status) = pod.status.as_mut() {
                mark_evicted(status, message);
            }
        });
    }

    /// Marks the pod Failed with `reason` and `message` (see [`super::mark_failed`]).
    pub fn mark_failed(&self, uid: &str, reason: &str, message: String) {
        self.rewrite(uid, |pod| {
            if let Some(status) = pod.status.as_mut() {
                super::mark_failed(status, reason, message);
            }
        });
    }

    /// Writes a copy of the stored pod with `change` applied; a pod not stored stays unknown.
    fn rewrite(&self, uid: &str, change: impl FnOnce(&mut Pod)) {
        if let Some(mut pod) = self.get(uid).map(Arc::unwrap_or_clone) {
            change(&mut pod);
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

    fn write(&self, mut pod: Pod) {
        let uid = crate::podutil::uid(&pod).to_string();
        let stored = self.store.get(&uid);
        if let Some(previous) = stored.as_ref().and_then(|p| p.status.as_ref()) {
            keep_final_terminations(&mut pod, previous);
        }
        observe_generation(&mut pod);
        // Nothing changed (a periodic resync): no new version, so no write to the API server
        // (upstream's SetPodStatus no-op on an equal status).
        if stored.as_deref() == Some(&pod) {
            return;
        }
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

    fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<String, u64>> {
        // A panic while holding the lock cannot leave a counter half-written; keep serving.
        self.versions.lock()
    }
}

/// The status, and each condition the node computed in it, says which `metadata.generation`
/// of the pod it was computed from (upstream's `observedGeneration`, on by default since 1.34):
/// a client that changed the spec waits for the node to have seen it.
fn observe_generation(pod: &mut Pod) {
    let Some(generation) = pod.metadata.generation.filter(|g| *g > 0) else {
        return;
    };
    let Some(status) = pod.status.as_mut() else {
        return;
    };
    status.observed_generation = Some(generation);
    for condition in status.conditions.iter_mut().flatten() {
        condition.observed_generation = Some(generation);
    }
}

/// A container that terminated and will not restart stays terminated (upstream's
/// `checkContainerStateTransition`; the API server refuses the transition too): a status
/// computed from a runtime view older than the exit must not bring it back.
fn keep_final_terminations(pod: &mut Pod, previous: &PodStatus) {
    let policy = crate::podutil::restart_policy(pod).to_string();
    let Some(status) = pod.status.as_mut() else {
        return;
    };
    let lists = [
        (
            previous.container_statuses.as_ref(),
            status.container_statuses.as_mut(),
        ),
        (
            previous.init_container_statuses.as_ref(),
            status.init_container_statuses.as_mut(),
        ),
    ];
    for (before, after) in lists {
        let (Some(before), Some(after)) = (before, after) else {
            continue;
        };
        for old in before {
            let Some(exit) = old
                .state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .map(|t| t.exit_code)
            else {
                continue;
            };
            let final_exit = policy == "Never" || (policy == "OnFailure" && exit == 0);
            if !final_exit {
                continue;
            }
            if let Some(new) = after.iter_mut().find(|c| c.name == old.name) {
                let still_terminated = new.state.as_ref().is_some_and(|s| s.terminated.is_some());
                if !still_terminated {
                    *new = old.clone();
                }
            }
        }
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
            self.0.lock().push((phase, version));
        }
        fn pod_removed(&self, uid: &str) {
            self.0.lock().push((format!("removed {uid}"), 0));
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
    fn the_status_and_its_conditions_observe_the_pod_generation() {
        let store = Arc::new(StatusStore::default());
        let manager = StatusManager::new(store.clone(), Vec::new());
        let mut pod = pod("g");
        pod.metadata.generation = Some(7);
        let mut status = phase("Running");
        status.conditions = Some(vec![k8s_openapi::api::core::v1::PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        }]);
        manager.set_status(&pod, status);
        let stored = store
            .get("g")
            .and_then(|p| p.status.clone())
            .unwrap_or_default();
        assert_eq!(stored.observed_generation, Some(7));
        assert_eq!(
            stored.conditions.unwrap_or_default()[0].observed_generation,
            Some(7)
        );
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
            store
                .get("a")
                .and_then(|p| p.status.clone())
                .and_then(|s| s.reason),
            Some("Evicted".into())
        );
        manager.remove("a");
        assert!(store.get("a").is_none());
        manager.set_status(&pod("a"), phase("Pending"));
        assert_eq!(
            *sink.0.lock(),
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

#[cfg(test)]
mod transition_tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus, PodSpec,
    };

    fn status(state: ContainerState) -> PodStatus {
        PodStatus {
            container_statuses: Some(vec![ContainerStatus {
                name: "c".into(),
                state: Some(state),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    fn terminated(code: i32) -> ContainerState {
        ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: code,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn running() -> ContainerState {
        ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..Default::default()
        }
    }

    fn pod(policy: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.uid = Some("u".into());
        pod.spec = Some(PodSpec {
            restart_policy: Some(policy.into()),
            ..Default::default()
        });
        pod
    }

    fn state_after(policy: &str, before: ContainerState, after: ContainerState) -> ContainerState {
        let manager = StatusManager::new(Arc::new(StatusStore::default()), Vec::new());
        manager.set_status(&pod(policy), status(before));
        manager.set_status(&pod(policy), status(after));
        manager
            .get("u")
            .and_then(|p| p.status.clone())
            .and_then(|s| s.container_statuses)
            .and_then(|c| c.into_iter().next())
            .and_then(|c| c.state)
            .unwrap_or_default()
    }

    #[test]
    fn an_unchanged_status_is_no_new_version() {
        #[derive(Default)]
        struct Count(std::sync::atomic::AtomicUsize);
        impl StatusSink for Count {
            fn pod_changed(&self, _pod: &Pod, _version: u64) {
                self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            fn pod_removed(&self, _uid: &str) {}
        }
        let count = Arc::new(Count::default());
        let manager = StatusManager::new(Arc::new(StatusStore::default()), vec![count.clone()]);
        manager.set_status(&pod("Always"), status(running()));
        manager.set_status(&pod("Always"), status(running()));
        assert_eq!(count.0.load(std::sync::atomic::Ordering::Relaxed), 1);
        manager.set_status(&pod("Always"), status(terminated(0)));
        assert_eq!(count.0.load(std::sync::atomic::Ordering::Relaxed), 2);
    }

    #[test]
    fn a_final_exit_is_never_undone_by_an_older_view() {
        assert!(state_after("Never", terminated(1), running())
            .terminated
            .is_some());
        assert!(state_after("OnFailure", terminated(0), running())
            .terminated
            .is_some());
        // Containers that restart may run again.
        assert!(state_after("OnFailure", terminated(1), running())
            .running
            .is_some());
        assert!(state_after("Always", terminated(0), running())
            .running
            .is_some());
    }
}
