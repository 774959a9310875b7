//! The merge of pod sources before the SyncLoop, as upstream's `PodConfig`
//! (`pkg/kubelet/config/config.go`): each source publishes what it holds, and the SyncLoop
//! gets one stream of additions, updates and removals by UID, never knowing where a pod came
//! from: the static manifest directory and, in cluster mode, the API server.

use super::SourceSnapshot;
use k8s_openapi::api::core::v1::Pod;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

/// Which source a pod came from (upstream's `kubernetes.io/config.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceKind {
    /// The static manifest directory (`staticPodPath`).
    File,
    /// The API server: pods bound to this node.
    Api,
}

/// A pod as a source delivered it.
#[derive(Debug, Clone, PartialEq)]
pub struct SourcePod {
    /// The source that holds it.
    pub source: SourceKind,
    /// Where in the source it came from, for logs (the manifest file).
    pub origin: String,
    /// The pod, with its UID set; the source's own, shared.
    pub pod: Arc<Pod>,
}

impl SourcePod {
    /// The pod's UID.
    pub fn uid(&self) -> &str {
        crate::podutil::uid(&self.pod)
    }
}

/// What changed since the last update: removals are applied before additions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodUpdates {
    /// UIDs no source holds any more.
    pub removed: Vec<String>,
    /// Pods no source held before.
    pub added: Vec<SourcePod>,
    /// Pods whose spec changed under the same UID.
    pub updated: Vec<SourcePod>,
    /// Whether every source has delivered a complete view (upstream's `sourcesReady`).
    pub ready: bool,
}

impl PodUpdates {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.added.is_empty() && self.updated.is_empty()
    }
}

/// The merged view of every source.
#[derive(Debug)]
pub struct PodConfig {
    pods: BTreeMap<SourceKind, HashMap<String, SourcePod>>,
    ready: BTreeMap<SourceKind, bool>,
}

impl PodConfig {
    /// A view waiting for each of `sources` to deliver.
    pub fn new(sources: &[SourceKind]) -> Self {
        Self {
            pods: sources.iter().map(|s| (*s, HashMap::new())).collect(),
            ready: sources.iter().map(|s| (*s, false)).collect(),
        }
    }

    /// Replaces what `source` holds with `pods` and says what changed.
    pub fn merge(&mut self, source: SourceKind, pods: Vec<SourcePod>, ready: bool) -> PodUpdates {
        self.ready.insert(source, ready);
        let current: HashMap<String, SourcePod> =
            pods.into_iter().map(|p| (p.uid().to_string(), p)).collect();
        let previous = self.pods.insert(source, current).unwrap_or_default();
        let current = &self.pods[&source];
        let mut updates = PodUpdates {
            ready: self.ready.values().all(|r| *r),
            ..Default::default()
        };
        updates.removed = previous
            .keys()
            .filter(|uid| !current.contains_key(*uid))
            .cloned()
            .collect();
        updates.removed.sort();
        for (uid, pod) in current {
            match previous.get(uid) {
                None => updates.added.push(pod.clone()),
                Some(before) if changed(&before.pod, &pod.pod) => updates.updated.push(pod.clone()),
                Some(_) => {}
            }
        }
        // Upstream sorts additions by creation time; a file source has none, so then by origin.
        updates
            .added
            .sort_by(|a, b| creation(a).cmp(&creation(b)).then(a.origin.cmp(&b.origin)));
        updates.updated.sort_by(|a, b| a.origin.cmp(&b.origin));
        updates
    }
}

/// Whether a pod changed in what the node acts on: its spec, its deletion (a graceful delete
/// sets `deletionTimestamp`), and its labels and annotations (the downward API shows them).
fn changed(before: &Pod, after: &Pod) -> bool {
    before.spec != after.spec
        || before.metadata.deletion_timestamp != after.metadata.deletion_timestamp
        || before.metadata.deletion_grace_period_seconds
            != after.metadata.deletion_grace_period_seconds
        || before.metadata.labels != after.metadata.labels
        || before.metadata.annotations != after.metadata.annotations
        || gate_conditions(before) != gate_conditions(after)
}

/// The status of each condition a pod's readiness gates name.
fn gate_conditions(pod: &Pod) -> Vec<(&str, Option<&str>)> {
    crate::podutil::readiness_gates(pod)
        .map(|(kind, condition)| (kind, condition.map(|c| c.status.as_str())))
        .collect()
}

fn creation(pod: &SourcePod) -> Option<String> {
    pod.pod
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
}

/// The static source's snapshot as source pods.
fn static_pods(snapshot: &SourceSnapshot) -> Vec<SourcePod> {
    snapshot
        .pods
        .iter()
        .map(|p| SourcePod {
            source: SourceKind::File,
            origin: p.file.display().to_string(),
            pod: Arc::clone(&p.pod),
        })
        .collect()
}

/// The API source's snapshot as source pods.
fn api_pods(snapshot: &super::ApiSnapshot) -> Vec<SourcePod> {
    snapshot
        .pods
        .iter()
        .map(|pod| SourcePod {
            source: SourceKind::Api,
            origin: "api".to_string(),
            pod: Arc::clone(pod),
        })
        .collect()
}

/// Feeds the merged updates of the static source (and, in cluster mode, the API source) to
/// the SyncLoop until a side goes.
pub async fn run(
    mut static_source: watch::Receiver<Arc<SourceSnapshot>>,
    mut api_source: Option<watch::Receiver<Arc<super::ApiSnapshot>>>,
    updates: mpsc::UnboundedSender<PodUpdates>,
) {
    let sources: &[SourceKind] = if api_source.is_some() {
        &[SourceKind::File, SourceKind::Api]
    } else {
        &[SourceKind::File]
    };
    let mut config = PodConfig::new(sources);
    let mut was_ready = false;
    // Which sources to read: both at first, then the one whose change woke the loop
    // (`changed()` marks the value seen, so it is read whether or not it is newer).
    let (mut read_static, mut read_api) = (true, true);
    loop {
        let mut batches = Vec::new();
        if read_static {
            let snapshot = static_source.borrow_and_update().clone();
            batches.push(config.merge(SourceKind::File, static_pods(&snapshot), snapshot.ready));
        }
        if let Some(api) = api_source.as_mut().filter(|_| read_api) {
            let snapshot = api.borrow_and_update().clone();
            batches.push(config.merge(SourceKind::Api, api_pods(&snapshot), snapshot.ready));
        }
        for merged in batches {
            if !merged.is_empty() || merged.ready != was_ready {
                was_ready = merged.ready;
                if updates.send(merged).is_err() {
                    return;
                }
            }
        }
        let api_changed = async {
            match api_source.as_mut() {
                Some(api) => api.changed().await,
                None => std::future::pending().await,
            }
        };
        (read_static, read_api) = tokio::select! {
            changed = static_source.changed() => {
                if changed.is_err() { return }
                (true, false)
            }
            changed = api_changed => {
                if changed.is_err() { return }
                (false, true)
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str, image: &str) -> SourcePod {
        let mut pod = Pod::default();
        pod.metadata.uid = Some(uid.into());
        pod.spec = Some(k8s_openapi::api::core::v1::PodSpec {
            containers: vec![k8s_openapi::api::core::v1::Container {
                name: "c".into(),
                image: Some(image.into()),
                ..Default::default()
            }],
            ..Default::default()
        });
        SourcePod {
            source: SourceKind::File,
            origin: format!("/manifests/{uid}.yaml"),
            pod: Arc::new(pod),
        }
    }

    #[test]
    fn additions_updates_and_removals_by_uid() {
        let mut config = PodConfig::new(&[SourceKind::File]);
        let first = config.merge(SourceKind::File, vec![pod("a", "x"), pod("b", "x")], false);
        assert_eq!(first.added.len(), 2);
        assert!(!first.ready);
        let second = config.merge(SourceKind::File, vec![pod("b", "y"), pod("c", "x")], true);
        assert_eq!(second.removed, ["a"]);
        assert_eq!(second.added, [pod("c", "x")]);
        assert_eq!(second.updated, [pod("b", "y")]);
        assert!(second.ready);
        let same = config.merge(SourceKind::File, vec![pod("b", "y"), pod("c", "x")], true);
        assert!(same.is_empty());
    }

    #[test]
    fn what_the_node_acts_on_is_an_update_and_the_rest_is_not() {
        type Change = fn(&mut Pod);
        // (case, the change, whether the worker gets the new pod)
        let cases: [(&str, Change, bool); 6] = [
            (
                "a label (downward API)",
                |p| p.metadata.labels = Some([("tier".to_string(), "web".to_string())].into()),
                true,
            ),
            (
                "an annotation (downward API)",
                |p| p.metadata.annotations = Some([("note".to_string(), "x".to_string())].into()),
                true,
            ),
            (
                "activeDeadlineSeconds",
                |p| {
                    if let Some(spec) = p.spec.as_mut() {
                        spec.active_deadline_seconds = Some(30);
                    }
                },
                true,
            ),
            (
                "a graceful delete",
                |p| p.metadata.deletion_grace_period_seconds = Some(30),
                true,
            ),
            (
                "the resourceVersion alone",
                |p| p.metadata.resource_version = Some("42".into()),
                false,
            ),
            (
                "the status alone",
                |p| {
                    p.status = Some(k8s_openapi::api::core::v1::PodStatus {
                        phase: Some("Running".into()),
                        ..Default::default()
                    })
                },
                false,
            ),
        ];
        for (case, change, update) in cases {
            let mut config = PodConfig::new(&[SourceKind::File]);
            config.merge(SourceKind::File, vec![pod("a", "x")], true);
            let mut changed = pod("a", "x");
            change(Arc::make_mut(&mut changed.pod));
            let updates = config.merge(SourceKind::File, vec![changed.clone()], true);
            let expected = if update { vec![changed] } else { vec![] };
            assert_eq!(updates.updated, expected, "{case}");
        }
    }

    #[tokio::test]
    async fn the_stream_starts_with_the_current_view_and_follows_changes() {
        let snapshot = |uids: &[&str]| {
            Arc::new(SourceSnapshot {
                ready: true,
                pods: uids
                    .iter()
                    .map(|uid| super::super::StaticPod {
                        file: format!("/m/{uid}.yaml").into(),
                        pod: pod(uid, "x").pod,
                    })
                    .collect(),
                errors: vec![],
            })
        };
        let (source_tx, source_rx) = watch::channel(snapshot(&["a"]));
        let (tx, mut rx) = mpsc::unbounded_channel();
        tokio::spawn(run(source_rx, None, tx));
        let first = rx.recv().await.unwrap();
        assert_eq!(first.added.len(), 1);
        assert!(first.ready);
        source_tx.send(snapshot(&["b"])).unwrap();
        let second = rx.recv().await.unwrap();
        assert_eq!(second.removed, ["a"]);
        assert_eq!(second.added[0].uid(), "b");
    }
}
