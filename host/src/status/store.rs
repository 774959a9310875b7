//! The local view of the node's pods and their latest status, which `/pods` serves; the
//! [`StatusManager`](super::StatusManager) is its only writer. Readers share the stored pods
//! (`Arc<Pod>`): a `/pods` request or a status write copies no pod under the lock.

use crate::timestamps;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The node's pods with their latest status, keyed by UID.
#[derive(Debug, Default)]
pub struct StatusStore {
    pods: Mutex<BTreeMap<String, Arc<Pod>>>,
    /// Since when the runtime has not answered; while set, `/pods` marks every pod stale.
    stale_since: Mutex<Option<Time>>,
}

/// Annotation `/pods` puts on pods while the runtime is unreachable: the status shown is the
/// last known one, as of the time given.
pub const STALE_ANNOTATION: &str = "wasmlet.dev/status-stale-since";

impl StatusStore {
    /// Records `pod` (with its status) under its UID; only the [`StatusManager`](super::StatusManager) writes.
    pub(super) fn set(&self, pod: Pod) {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        self.lock().insert(uid, Arc::new(pod));
    }

    /// Forgets the pod; only the [`StatusManager`](super::StatusManager) removes.
    pub(super) fn remove(&self, uid: &str) {
        self.lock().remove(uid);
    }

    /// The pod with UID `uid`, as last written.
    pub fn get(&self, uid: &str) -> Option<Arc<Pod>> {
        self.lock().get(uid).cloned()
    }

    /// Calls `f` with the pod of each of `uids` the store holds, under its lock and without
    /// copying it: the housekeeping sums over every pod use this, not [`Self::get`].
    pub fn visit<'a>(&self, uids: impl IntoIterator<Item = &'a str>, mut f: impl FnMut(&Pod)) {
        let pods = self.lock();
        for pod in uids.into_iter().filter_map(|uid| pods.get(uid)) {
            f(pod);
        }
    }

    /// The pod named `namespace/name`, as upstream's `GetPodByName` finds it for the
    /// streaming endpoints, without copying every other pod. While a deleted pod and its
    /// successor of the same name are both known, the successor.
    pub fn get_by_name(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.lock()
            .values()
            .filter(|p| {
                p.metadata.namespace.as_deref() == Some(namespace)
                    && p.metadata.name.as_deref() == Some(name)
            })
            .max_by_key(|p| p.metadata.deletion_timestamp.is_none())
            .cloned()
    }

    /// Marks the status stale (the runtime stopped answering) or fresh again.
    pub fn set_stale(&self, stale: bool) {
        let mut since = self.stale_since.lock();
        match (stale, since.is_some()) {
            (true, false) => *since = Some(timestamps::now()),
            (false, true) => *since = None,
            _ => {}
        }
    }

    /// All pods, ordered by namespace and name, as `/pods` lists them.
    pub fn list(&self) -> Vec<Arc<Pod>> {
        let stale = self.stale_since.lock().clone();
        let mut pods: Vec<Arc<Pod>> = self.lock().values().cloned().collect();
        if let Some(since) = stale {
            let since = since.0.to_string();
            for pod in &mut pods {
                let annotations = Arc::make_mut(pod)
                    .metadata
                    .annotations
                    .get_or_insert_with(BTreeMap::new);
                annotations.insert(STALE_ANNOTATION.into(), since.clone());
            }
        }
        pods.sort_by(|a, b| {
            (&a.metadata.namespace, &a.metadata.name)
                .cmp(&(&b.metadata.namespace, &b.metadata.name))
        });
        pods
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, BTreeMap<String, Arc<Pod>>> {
        // A panic while holding the lock cannot leave a map half-written; keep serving.
        self.pods.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str, name: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.uid = Some(uid.into());
        pod.metadata.name = Some(name.into());
        pod.metadata.namespace = Some("default".into());
        pod
    }

    #[test]
    fn readers_share_the_stored_pod_and_a_stale_list_marks_only_its_copies() {
        let store = StatusStore::default();
        store.set(pod("u2", "b"));
        store.set(pod("u1", "a"));
        let listed = store.list();
        let names: Vec<_> = listed.iter().map(|p| p.metadata.name.clone()).collect();
        assert_eq!(names, [Some("a".into()), Some("b".into())]);
        let stored = store.get("u1").expect("stored");
        assert!(Arc::ptr_eq(&listed[0], &stored), "listing copied the pod");

        store.set_stale(true);
        let stale = store.list();
        let marked = |p: &Pod| {
            p.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(STALE_ANNOTATION))
        };
        assert!(stale.iter().all(|p| marked(p)));
        assert!(!marked(&store.get("u1").expect("stored")));
    }
}
