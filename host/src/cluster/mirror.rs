//! Mirror pods, as upstream's `pkg/kubelet/pod/mirror_client.go` and the kubelet's use of it:
//! the API server learns of a static pod only through its mirror pod, a copy of the static
//! pod's metadata and spec bound to this node, annotated `kubernetes.io/config.mirror` with the
//! static pod's `kubernetes.io/config.hash` and owned by the Node (NodeRestriction requires
//! it). The reconciler keeps one mirror pod per static pod: it creates a missing one,
//! replaces one whose hash differs or that is being deleted (a `kubectl delete` of a static
//! pod's mirror only recreates it), and deletes one whose static pod is gone. Every delete
//! carries a UID precondition, so a newer pod of the same name is never hit.
//!
//! [`reconcile`] is the pure decision (desired vs actual → actions); [`run`] feeds it on every
//! change of its inputs and every [`RESYNC_PERIOD`], and carries the actions out, logging and
//! retrying errors. [`MirrorPods`] tells the status writer and the event recorder each static
//! pod's mirror pod UID.

use super::events::{MirrorLookup, MirrorUid};
use super::{ApiClients, ApiError};
use crate::source::manifest::CONFIG_HASH_ANNOTATION;
use crate::source::SourceSnapshot;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::{debug, info, warn};

/// The annotation of a mirror pod, holding its static pod's `kubernetes.io/config.hash`.
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// Reconciles also run this often without any change, so a failed call is retried.
pub const RESYNC_PERIOD: Duration = Duration::from_secs(10);

/// The mirror pod of each static pod, as last reconciled: shared with the pod status writer
/// and the event recorder.
#[derive(Debug, Default)]
pub struct MirrorPods {
    /// Static pod UID -> its mirror pod's UID, `None` while it has none.
    known: RwLock<HashMap<String, Option<String>>>,
}

impl MirrorPods {
    /// The UID of the mirror pod of the static pod `static_uid`, if it has one.
    pub fn mirror_uid(&self, static_uid: &str) -> Option<String> {
        self.read().get(static_uid).cloned().flatten()
    }

    /// Whether `uid` is a static pod's (as of the last reconcile).
    pub fn is_static(&self, uid: &str) -> bool {
        self.read().contains_key(uid)
    }

    fn read(&self) -> parking_lot::RwLockReadGuard<'_, HashMap<String, Option<String>>> {
        self.known.read()
    }

    fn write(&self) -> parking_lot::RwLockWriteGuard<'_, HashMap<String, Option<String>>> {
        self.known.write()
    }
}

impl MirrorLookup for MirrorPods {
    fn lookup(&self, uid: &str) -> MirrorUid {
        match self.read().get(uid) {
            None => MirrorUid::NotStatic,
            Some(Some(mirror)) => MirrorUid::Known(mirror.clone()),
            Some(None) => MirrorUid::NotYet,
        }
    }
}

/// Why a mirror pod is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteReason {
    /// Its static pod is gone.
    Orphaned,
    /// Its hash is not its static pod's (the manifest changed): it is recreated.
    Outdated,
    /// Someone deleted it (it has a deletionTimestamp): it is recreated.
    Terminating,
}

impl DeleteReason {
    fn as_str(self) -> &'static str {
        match self {
            DeleteReason::Orphaned => "static pod removed",
            DeleteReason::Outdated => "static pod changed",
            DeleteReason::Terminating => "mirror pod being deleted",
        }
    }
}

/// One change the API needs, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub enum MirrorAction {
    /// Delete the mirror pod `namespace/name` if its UID is still `uid` (grace 0).
    Delete {
        /// The mirror pod's namespace.
        namespace: String,
        /// The mirror pod's name.
        name: String,
        /// The UID precondition.
        uid: String,
        /// Why.
        why: DeleteReason,
    },
    /// Create `pod`, the mirror pod of the static pod `static_uid`.
    Create {
        /// The static pod it mirrors.
        static_uid: String,
        /// The mirror pod to create.
        pod: Box<Pod>,
    },
}

type FullName = (String, String);

fn full_name(pod: &Pod) -> FullName {
    (
        pod.metadata.namespace.clone().unwrap_or_default(),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// The mirror pod of `static_pod` on node `node_name` (UID `node_uid`): its name, namespace,
/// labels, annotations (plus [`MIRROR_ANNOTATION`]) and spec, bound to the node and owned by
/// the Node object.
pub fn mirror_pod(static_pod: &Pod, node_name: &str, node_uid: &str) -> Pod {
    let meta = &static_pod.metadata;
    let hash = annotation(static_pod, CONFIG_HASH_ANNOTATION).unwrap_or_default();
    let mut annotations = meta.annotations.clone().unwrap_or_default();
    annotations.insert(MIRROR_ANNOTATION.into(), hash.to_string());
    let mut spec = static_pod.spec.clone().unwrap_or_default();
    spec.node_name = Some(node_name.to_string());
    Pod {
        metadata: ObjectMeta {
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            labels: meta.labels.clone(),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Node".into(),
                name: node_name.to_string(),
                uid: node_uid.to_string(),
                controller: Some(true),
                block_owner_deletion: None,
            }]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// What the API must change so that it holds exactly one current mirror pod per static pod.
///
/// `statics` are the static pods (those without a `kubernetes.io/config.hash` are skipped);
/// `mirrors` the mirror pods the API holds for this node (pods without
/// [`MIRROR_ANNOTATION`] are ignored). Orphans are deleted only once the static source is
/// `source_ready`, so a restart never deletes mirror pods whose manifests were not read yet;
/// nothing is created before the Node's UID is known (the owner reference needs it).
pub fn reconcile(
    statics: &[Pod],
    source_ready: bool,
    mirrors: &[Pod],
    node_name: &str,
    node_uid: Option<&str>,
) -> Vec<MirrorAction> {
    let statics: BTreeMap<FullName, (&Pod, &str)> = statics
        .iter()
        .filter_map(|p| Some((full_name(p), (p, annotation(p, CONFIG_HASH_ANNOTATION)?))))
        .collect();
    let mirrors: BTreeMap<FullName, &Pod> = mirrors
        .iter()
        .filter(|p| annotation(p, MIRROR_ANNOTATION).is_some())
        .map(|p| (full_name(p), p))
        .collect();
    let delete = |mirror: &Pod, why| MirrorAction::Delete {
        namespace: mirror.metadata.namespace.clone().unwrap_or_default(),
        name: mirror.metadata.name.clone().unwrap_or_default(),
        uid: mirror.metadata.uid.clone().unwrap_or_default(),
        why,
    };
    let mut actions = Vec::new();
    if source_ready {
        for (name, mirror) in &mirrors {
            if !statics.contains_key(name) {
                actions.push(delete(mirror, DeleteReason::Orphaned));
            }
        }
    }
    for (name, (static_pod, hash)) in &statics {
        let replace = match mirrors.get(name) {
            None => None,
            Some(m) if m.metadata.deletion_timestamp.is_some() => {
                Some((m, DeleteReason::Terminating))
            }
            Some(m) if annotation(m, MIRROR_ANNOTATION) != Some(*hash) => {
                Some((m, DeleteReason::Outdated))
            }
            Some(_) => continue,
        };
        if let Some((mirror, why)) = replace {
            actions.push(delete(mirror, why));
        }
        if let Some(node_uid) = node_uid {
            actions.push(MirrorAction::Create {
                static_uid: static_pod.metadata.uid.clone().unwrap_or_default(),
                pod: Box::new(mirror_pod(static_pod, node_name, node_uid)),
            });
        }
    }
    actions
}

/// Static pod UID -> the UID of its current mirror pod among `mirrors` (same name, same hash,
/// not being deleted), or `None`.
pub fn mirror_uids(statics: &[Pod], mirrors: &[Pod]) -> HashMap<String, Option<String>> {
    statics
        .iter()
        .filter_map(|p| {
            let hash = annotation(p, CONFIG_HASH_ANNOTATION)?;
            let name = full_name(p);
            let mirror = mirrors.iter().find(|m| {
                full_name(m) == name
                    && annotation(m, MIRROR_ANNOTATION) == Some(hash)
                    && m.metadata.deletion_timestamp.is_none()
            });
            Some((
                p.metadata.uid.clone().unwrap_or_default(),
                mirror.and_then(|m| m.metadata.uid.clone()),
            ))
        })
        .collect()
}

/// What the reconciler watches.
pub struct MirrorInputs {
    /// The static source's snapshots.
    pub statics: watch::Receiver<Arc<SourceSnapshot>>,
    /// The pods bound to this node that carry [`MIRROR_ANNOTATION`], from the API pod watch.
    pub mirrors: watch::Receiver<Vec<Pod>>,
    /// The Node object's UID, once registered.
    pub node_uid: watch::Receiver<Option<String>>,
}

/// The reconciler's memory between the API's views.
#[derive(Default)]
struct Reconciler {
    /// Mirror pods created since the API's last view (the watch has not shown them yet).
    created: BTreeMap<FullName, Pod>,
    /// UIDs of mirror pods deleted since the API's last view.
    deleted: HashSet<String>,
    /// The last error per pod, so a lasting failure is warned about once.
    errors: HashMap<FullName, String>,
}

/// Keeps the API's mirror pods in line with the static pods until the process ends: on every
/// change of `inputs` and every [`RESYNC_PERIOD`]. Errors are logged and retried; it never
/// stops.
pub async fn run(clients: ApiClients, pods: Arc<MirrorPods>, mut inputs: MirrorInputs) {
    let mut state = Reconciler::default();
    let mut tick = tokio::time::interval(RESYNC_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut statics_open, mut mirrors_open, mut node_open) = (true, true, true);
    let mut waiting_for_node = false;
    loop {
        let snapshot = inputs.statics.borrow_and_update().clone();
        let node_uid = inputs.node_uid.borrow_and_update().clone();
        let mut actual = inputs.mirrors.borrow_and_update().clone();
        actual.retain(|p| {
            p.metadata
                .uid
                .as_ref()
                .is_none_or(|uid| !state.deleted.contains(uid))
        });
        for (name, pod) in &state.created {
            if !actual.iter().any(|p| &full_name(p) == name) {
                actual.push(pod.clone());
            }
        }
        let statics: Vec<Pod> = snapshot.pods.iter().map(|s| Pod::clone(&s.pod)).collect();
        let known = mirror_uids(&statics, &actual);
        crate::metrics::kubelet::kubelet()
            .mirror_pods
            .set(known.len() as i64);
        *pods.write() = known;
        if node_uid.is_none() && !statics.is_empty() && !waiting_for_node {
            info!(
                pods = statics.len(),
                "mirror pods wait for the Node to be registered"
            );
        }
        waiting_for_node = node_uid.is_none();
        let actions = reconcile(
            &statics,
            snapshot.ready,
            &actual,
            &clients.node_name,
            node_uid.as_deref(),
        );
        state.execute(&clients, &pods, actions).await;

        tokio::select! {
            changed = inputs.statics.changed(), if statics_open => statics_open = changed.is_ok(),
            changed = inputs.mirrors.changed(), if mirrors_open => {
                mirrors_open = changed.is_ok();
                // A new view of the API supersedes what this reconciler remembers doing.
                state.created.clear();
                state.deleted.clear();
            }
            changed = inputs.node_uid.changed(), if node_open => node_open = changed.is_ok(),
            _ = tick.tick() => {}
        }
    }
}

impl Reconciler {
    async fn execute(
        &mut self,
        clients: &ApiClients,
        pods: &MirrorPods,
        actions: Vec<MirrorAction>,
    ) {
        let mut kept = HashSet::new();
        for action in actions {
            match action {
                MirrorAction::Delete {
                    namespace,
                    name,
                    uid,
                    why,
                } => {
                    let key = (namespace, name);
                    match delete(clients, &key.0, &key.1, &uid).await {
                        Ok(()) => {
                            info!(pod = %format!("{}_{}", key.1, key.0), %uid, why = why.as_str(), "mirror pod deleted");
                            self.deleted.insert(uid);
                            self.created.remove(&key);
                            self.errors.remove(&key);
                        }
                        Err(error) => {
                            // A create now would only conflict with it.
                            self.failed(&key, "cannot delete the mirror pod", &error);
                            kept.insert(key);
                        }
                    }
                }
                MirrorAction::Create { static_uid, pod } => {
                    let key = full_name(&pod);
                    if kept.contains(&key) {
                        continue;
                    }
                    match create(clients, &pod).await {
                        Ok(created) => {
                            let uid = created.metadata.uid.clone();
                            info!(pod = %format!("{}_{}", key.1, key.0), uid = uid.as_deref().unwrap_or(""), "mirror pod created");
                            pods.write().insert(static_uid, uid);
                            self.created.insert(key.clone(), created);
                            self.errors.remove(&key);
                        }
                        Err(error) if error.is_conflict() => {
                            debug!(pod = %format!("{}_{}", key.1, key.0), "a mirror pod of that name exists; the watch decides");
                        }
                        Err(error) => self.failed(&key, "cannot create the mirror pod", &error),
                    }
                }
            }
        }
    }

    /// Warns about a failure once, then at debug level while it lasts.
    fn failed(&mut self, key: &FullName, what: &str, error: &ApiError) {
        let text = error.to_string();
        let pod = format!("{}_{}", key.1, key.0);
        if self.errors.get(key) == Some(&text) {
            debug!(%pod, error = %text, "{what}; retrying");
        } else {
            warn!(%pod, error = %text, "{what}; retrying");
            self.errors.insert(key.clone(), text);
        }
    }
}

/// Deletes a mirror pod at once (grace 0) if its UID is still `uid`; gone already is done.
async fn delete(
    clients: &ApiClients,
    namespace: &str,
    name: &str,
    uid: &str,
) -> Result<(), ApiError> {
    let api: Api<Pod> = Api::namespaced(clients.main.clone(), namespace);
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: (!uid.is_empty()).then(|| Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..Default::default()
    };
    match clients.call(api.delete(name, &params)).await {
        Ok(_) => Ok(()),
        Err(error) if error.is_not_found() => Ok(()),
        Err(error) => Err(error),
    }
}

/// Creates a mirror pod. A conflict (one of that name exists, or the one just deleted is not
/// gone yet) is left to the pod watch: the next reconcile sees the existing pod and keeps it
/// when its hash matches, or replaces it. Upstream GETs it at once instead; the Node
/// authorizer refuses that GET while its graph does not yet link the pod to the node.
async fn create(clients: &ApiClients, pod: &Pod) -> Result<Pod, ApiError> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let api: Api<Pod> = Api::namespaced(clients.main.clone(), namespace);
    clients.call(api.create(&PostParams::default(), pod)).await
}

#[cfg(test)]
mod tests;
