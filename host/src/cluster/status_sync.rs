//! Pod statuses to the API server (upstream's status manager `syncBatch`): the status manager
//! hands every versioned change to this sink; a task patches `pods/<name>/status` with a
//! strategic-merge patch that carries `metadata.uid` as a precondition, only for pods whose
//! version grew since the last write, and retries failed writes every 10 s. A static pod's
//! status goes to its mirror pod. When a pod from the API is gone from the node (its
//! containers stopped and removed after a graceful delete), the API object is deleted with
//! grace 0 and a UID precondition, so a new pod of the same name is never touched.

use super::events::{MirrorLookup, MirrorUid};
use super::ApiClients;
use crate::source::manifest::CONFIG_SOURCE_ANNOTATION;
use crate::source::ApiSnapshot;
use crate::status::StatusSink;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Notify};
use tracing::{debug, info, warn};

/// Upstream's status manager `syncPeriod`: how often failed writes are retried.
pub const SYNC_PERIOD: Duration = Duration::from_secs(10);

/// Pods whose writes are in flight at once.
const CONCURRENT_WRITES: usize = 8;

/// What is known of one pod's status.
struct Entry {
    pod: Pod,
    version: u64,
    written: u64,
    /// The API object the last write went to: a static pod's mirror pod may be recreated
    /// with a new UID, which then needs the status again.
    written_to: Option<String>,
    removed: bool,
    /// The API server's copy of the status as last seen, for the patch to clear fields.
    api_status: Option<serde_json::Value>,
    /// When the last status write succeeded: the API's copy is compared only once the watch
    /// has had a sync period to bring it.
    written_at: Option<std::time::Instant>,
}

/// The API-server status sink.
#[derive(Default)]
pub struct ApiStatusWriter {
    entries: Mutex<HashMap<String, Entry>>,
    wake: Notify,
}

impl StatusSink for ApiStatusWriter {
    fn pod_changed(&self, pod: &Pod, version: u64) {
        let uid = crate::podutil::uid(pod).to_string();
        let mut entries = self.lock();
        let entry = entries.entry(uid).or_insert_with(|| Entry {
            pod: pod.clone(),
            version: 0,
            written: 0,
            written_to: None,
            removed: false,
            api_status: None,
            written_at: None,
        });
        // Never an older status over a newer one.
        if version > entry.version {
            entry.pod = pod.clone();
            entry.version = version;
        }
        drop(entries);
        self.wake.notify_one();
    }

    fn pod_removed(&self, uid: &str) {
        let mut entries = self.lock();
        if let Some(entry) = entries.get_mut(uid) {
            entry.removed = true;
            if is_static(&entry.pod) && entry.written >= entry.version {
                entries.remove(uid);
            }
        }
        drop(entries);
        self.wake.notify_one();
    }
}

/// One write the task must make.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Patch the status of `namespace/name` (whose UID is `uid`).
    Status {
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        name: String,
        /// The UID the patch requires of the API object.
        uid: String,
        /// The status.
        status: serde_json::Value,
        /// The version this writes.
        version: u64,
    },
    /// Delete `namespace/name` with grace 0 if its UID is still `uid`.
    Delete {
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        name: String,
        /// The UID the delete requires.
        uid: String,
    },
}

/// Whether `pod` is a static pod (its status goes to the mirror pod; it is never deleted here).
fn is_static(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONFIG_SOURCE_ANNOTATION))
        .is_some_and(|s| s != "api")
}

impl ApiStatusWriter {
    fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock()
    }

    /// The writes due now: a status patch for each pod whose version grew, then a delete for
    /// each API pod that is gone from the node. Static pods without a mirror yet wait.
    pub fn pending(&self, mirrors: &dyn MirrorLookup) -> Vec<(String, Write)> {
        let mut writes = Vec::new();
        for (uid, entry) in self.lock().iter() {
            let namespace = entry.pod.metadata.namespace.clone().unwrap_or_default();
            let name = entry.pod.metadata.name.clone().unwrap_or_default();
            let target = if is_static(&entry.pod) {
                match mirrors.lookup(uid) {
                    MirrorUid::Known(mirror) => mirror,
                    MirrorUid::NotYet | MirrorUid::NotStatic => continue,
                }
            } else {
                uid.clone()
            };
            if entry.version > entry.written || entry.written_to.as_deref() != Some(target.as_str())
            {
                writes.push((
                    uid.clone(),
                    Write::Status {
                        namespace: namespace.clone(),
                        name: name.clone(),
                        uid: target.clone(),
                        status: reconcile::patch(
                            &serde_json::to_value(&entry.pod.status).unwrap_or_default(),
                            entry.api_status.as_ref(),
                        ),
                        version: entry.version,
                    },
                ));
            }
            if entry.removed && !is_static(&entry.pod) {
                writes.push((
                    uid.clone(),
                    Write::Delete {
                        namespace,
                        name,
                        uid: target,
                    },
                ));
            }
        }
        writes
    }

    /// Records that `write` for the pod `uid` is done (or can never be done): a status
    /// version counts as written; a delete (or the end of a static pod) forgets the pod.
    pub fn done(&self, uid: &str, write: &Write) {
        let mut entries = self.lock();
        match write {
            Write::Status {
                version, uid: to, ..
            } => {
                if let Some(entry) = entries.get_mut(uid) {
                    entry.written = entry.written.max(*version);
                    entry.written_to = Some(to.clone());
                    entry.written_at = Some(std::time::Instant::now());
                }
            }
            Write::Delete { .. } => {
                entries.remove(uid);
            }
        }
        if entries
            .get(uid)
            .is_some_and(|e| e.removed && e.written >= e.version && is_static(&e.pod))
        {
            entries.remove(uid);
        }
    }

    /// Compares the API server's copies of the pods with what was written (upstream's
    /// `needsReconcile`): a status someone else changed where the node owns it is written
    /// again. Static pods are left out: their mirror pods carry their status.
    pub fn reconcile<P: std::borrow::Borrow<Pod>>(&self, api_pods: &[P]) {
        self.reconcile_at(api_pods, std::time::Instant::now());
    }

    /// [`Self::reconcile`] at `now`: a status written less than a [`SYNC_PERIOD`] before is
    /// not compared yet (the watch may not have brought it back).
    fn reconcile_at<P: std::borrow::Borrow<Pod>>(&self, api_pods: &[P], now: std::time::Instant) {
        let mut entries = self.lock();
        for api_pod in api_pods.iter().map(P::borrow) {
            let uid = crate::podutil::uid(api_pod);
            let Some(entry) = entries.get_mut(uid) else {
                continue;
            };
            let settled = entry
                .written_at
                .is_some_and(|at| now.saturating_duration_since(at) >= SYNC_PERIOD);
            if entry.removed || is_static(&entry.pod) || entry.written < entry.version || !settled {
                continue;
            }
            let api = serde_json::to_value(&api_pod.status).unwrap_or_default();
            let ours = serde_json::to_value(&entry.pod.status).unwrap_or_default();
            if reconcile::differs(&api, &ours) {
                info!(pod = %crate::podutil::full_name(api_pod), %uid, "pod status in the API server differs from the node's; writing it again");
                entry.written = 0;
            }
            entry.api_status = Some(api);
        }
        drop(entries);
        self.wake.notify_one();
    }

    /// Forgets the pod: the API object is gone or was replaced.
    fn forget(&self, uid: &str) {
        self.lock().remove(uid);
    }

    /// Writes statuses until the process ends: on every change, and every [`SYNC_PERIOD`]
    /// for what failed before. Pods are written side by side ([`CONCURRENT_WRITES`] at a
    /// time, all under `kubeAPIQPS`), so the statuses of 110 starting pods do not queue
    /// behind each other; one pod's writes stay in order (its final status before its delete).
    pub async fn run(
        self: Arc<Self>,
        clients: ApiClients,
        mirrors: Arc<dyn MirrorLookup>,
        api_pods: watch::Receiver<Arc<ApiSnapshot>>,
    ) {
        let mut reconciled = tokio::time::Instant::now();
        loop {
            let _ = tokio::time::timeout(SYNC_PERIOD, self.wake.notified()).await;
            if reconciled.elapsed() >= SYNC_PERIOD {
                reconciled = tokio::time::Instant::now();
                let snapshot = api_pods.borrow().clone();
                self.reconcile(&snapshot.pods);
            }
            let mut by_pod: Vec<(String, Vec<Write>)> = Vec::new();
            for (uid, write) in self.pending(mirrors.as_ref()) {
                match by_pod.last_mut() {
                    Some((last, writes)) if *last == uid => writes.push(write),
                    _ => by_pod.push((uid, vec![write])),
                }
            }
            futures::stream::iter(by_pod)
                .for_each_concurrent(CONCURRENT_WRITES, |(uid, writes)| {
                    let (this, clients) = (&self, &clients);
                    async move {
                        for write in writes {
                            if !this.write(clients, &uid, write).await {
                                break;
                            }
                        }
                    }
                })
                .await;
        }
    }

    /// Performs one write and records its outcome; false when it failed and is retried later.
    async fn write(&self, clients: &ApiClients, uid: &str, write: Write) -> bool {
        match self.perform(clients, &write).await {
            Ok(()) => self.done(uid, &write),
            Err(error)
                if error.is_not_found() || error.is_conflict() || error.code() == Some(422) =>
            {
                // The pod is gone or is another pod now: nothing to write.
                debug!(%uid, %error, "pod no longer in the API server; status dropped");
                match write {
                    Write::Delete { .. } => self.forget(uid),
                    Write::Status { .. } => self.done(uid, &write),
                }
            }
            Err(error) => {
                warn!(%uid, %error, "failed to update pod status; will retry");
                return false;
            }
        }
        true
    }

    async fn perform(&self, clients: &ApiClients, write: &Write) -> Result<(), super::ApiError> {
        match write {
            Write::Status {
                namespace,
                name,
                uid,
                status,
                ..
            } => {
                let pods: Api<Pod> = Api::namespaced(clients.main.clone(), namespace);
                let patch = json!({"metadata": {"uid": uid}, "status": status});
                clients
                    .call(pods.patch_status(
                        name,
                        &PatchParams::default(),
                        &Patch::Strategic(&patch),
                    ))
                    .await?;
                debug!(pod = %format!("{namespace}/{name}"), "status patched");
                Ok(())
            }
            Write::Delete {
                namespace,
                name,
                uid,
            } => {
                let pods: Api<Pod> = Api::namespaced(clients.main.clone(), namespace);
                let params = DeleteParams {
                    grace_period_seconds: Some(0),
                    preconditions: Some(Preconditions {
                        uid: Some(uid.clone()),
                        resource_version: None,
                    }),
                    ..Default::default()
                };
                clients.call(pods.delete(name, &params)).await?;
                info!(pod = %format!("{namespace}/{name}"), %uid, "pod fully terminated and removed from the API server");
                Ok(())
            }
        }
    }
}

mod reconcile;

#[cfg(test)]
mod tests {
    use super::*;

    struct Mirrors(HashMap<String, String>);
    impl MirrorLookup for Mirrors {
        fn lookup(&self, uid: &str) -> MirrorUid {
            match self.0.get(uid) {
                Some(mirror) => MirrorUid::Known(mirror.clone()),
                None => MirrorUid::NotYet,
            }
        }
    }

    fn pod(uid: &str, source: &str, phase: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.uid = Some(uid.into());
        pod.metadata.name = Some(format!("p-{uid}"));
        pod.metadata.namespace = Some("default".into());
        pod.metadata.annotations =
            Some([(CONFIG_SOURCE_ANNOTATION.to_string(), source.to_string())].into());
        pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        });
        pod
    }

    fn no_mirrors() -> Mirrors {
        Mirrors(HashMap::new())
    }

    #[test]
    fn only_newer_versions_are_written_and_never_older_over_newer() {
        let writer = ApiStatusWriter::default();
        writer.pod_changed(&pod("a", "api", "Pending"), 1);
        writer.pod_changed(&pod("a", "api", "Running"), 3);
        writer.pod_changed(&pod("a", "api", "Pending"), 2);
        let writes = writer.pending(&no_mirrors());
        assert_eq!(writes.len(), 1);
        let Write::Status {
            status,
            version,
            uid,
            ..
        } = &writes[0].1
        else {
            panic!("expected a status write, got {writes:?}");
        };
        assert_eq!(
            (status["phase"].as_str(), *version, uid.as_str()),
            (Some("Running"), 3, "a")
        );
        writer.done("a", &writes[0].1);
        assert!(writer.pending(&no_mirrors()).is_empty());
    }

    #[test]
    fn a_removed_api_pod_gets_its_last_status_then_a_delete() {
        let writer = ApiStatusWriter::default();
        writer.pod_changed(&pod("a", "api", "Running"), 1);
        writer.done("a", &writer.pending(&no_mirrors())[0].1);
        writer.pod_changed(&pod("a", "api", "Failed"), 2);
        writer.pod_removed("a");
        let writes: Vec<Write> = writer
            .pending(&no_mirrors())
            .into_iter()
            .map(|w| w.1)
            .collect();
        assert!(matches!(writes[0], Write::Status { version: 2, .. }));
        assert_eq!(
            writes[1],
            Write::Delete {
                namespace: "default".into(),
                name: "p-a".into(),
                uid: "a".into()
            }
        );
        writer.done("a", &writes[1]);
        assert!(writer.pending(&no_mirrors()).is_empty());
    }

    #[test]
    fn static_pods_write_to_their_mirror_and_are_never_deleted() {
        let writer = ApiStatusWriter::default();
        writer.pod_changed(&pod("s", "file", "Running"), 1);
        assert!(
            writer.pending(&no_mirrors()).is_empty(),
            "no mirror yet: wait"
        );
        let mirrors = Mirrors([("s".to_string(), "m".to_string())].into());
        let writes = writer.pending(&mirrors);
        assert!(matches!(&writes[0].1, Write::Status { uid, .. } if uid == "m"));
        writer.done("s", &writes[0].1);
        assert!(writer.pending(&mirrors).is_empty());
        // The mirror pod was deleted and recreated: the same status goes to the new one.
        let recreated = Mirrors([("s".to_string(), "m2".to_string())].into());
        let writes = writer.pending(&recreated);
        assert!(matches!(&writes[0].1, Write::Status { uid, version: 1, .. } if uid == "m2"));
        writer.done("s", &writes[0].1);
        writer.pod_removed("s");
        assert!(writer.pending(&recreated).is_empty());
    }
    #[test]
    fn a_status_another_writer_changed_is_written_again_once_settled() {
        let writer = ApiStatusWriter::default();
        let ours = pod("a", "api", "Running");
        writer.pod_changed(&ours, 1);
        writer.done("a", &writer.pending(&no_mirrors())[0].1);
        let settled = std::time::Instant::now() + SYNC_PERIOD;
        let mut theirs = pod("a", "api", "Failed");
        let disruption = k8s_openapi::api::core::v1::PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            ..Default::default()
        };
        if let Some(status) = theirs.status.as_mut() {
            status.conditions = Some(vec![disruption.clone()]);
        }
        writer.reconcile_at(std::slice::from_ref(&theirs), std::time::Instant::now());
        assert!(writer.pending(&no_mirrors()).is_empty(), "not settled yet");
        writer.reconcile_at(std::slice::from_ref(&theirs), settled);
        let writes = writer.pending(&no_mirrors());
        let Some((_, Write::Status { status, .. })) = writes.first() else {
            panic!("expected the status again, got {writes:?}");
        };
        assert_eq!(status["phase"], "Running");
        assert!(
            status.get("conditions").is_none(),
            "others' condition left alone: {status}"
        );
        writer.done("a", &writes[0].1);
        // Only a condition of another writer added: nothing to correct.
        let mut theirs = ours.clone();
        if let Some(status) = theirs.status.as_mut() {
            status.conditions = Some(vec![disruption]);
        }
        writer.reconcile_at(&[theirs], settled + SYNC_PERIOD);
        assert!(writer.pending(&no_mirrors()).is_empty());
    }
}
