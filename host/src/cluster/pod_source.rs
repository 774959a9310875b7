//! The API server as a pod source (upstream's `config/apiserver.go`): one list+watch of the
//! pods bound to this node (`spec.nodeName=<node>`, the only pod watch the Node authorizer
//! allows). Each change publishes the whole set, so a re-list after `410 Gone` is diffed by
//! the merge against what wasmlet holds and a pod deleted during the gap is terminated.
//! Mirror pods are not pods to run: they go to the mirror pod manager.

use super::ApiClients;
use crate::source::manifest::CONFIG_SOURCE_ANNOTATION;
use crate::source::ApiSnapshot;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::watcher;
use kube::runtime::WatchStreamExt;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::watch;
use tracing::{debug, warn};

/// The annotation marking a mirror pod (its value is the static pod's config hash).
pub const CONFIG_MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Whether `pod` is a mirror pod.
pub fn is_mirror(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(CONFIG_MIRROR_ANNOTATION))
}

/// The set the source holds, split into pods to run and mirror pods.
#[derive(Default)]
struct Held {
    pods: HashMap<String, Pod>,
    relisting: Option<HashMap<String, Pod>>,
}

impl Held {
    fn key(pod: &Pod) -> String {
        pod.metadata.uid.clone().unwrap_or_default()
    }

    /// Applies one watcher event; true when the published set may have changed.
    fn apply(&mut self, event: watcher::Event<Pod>) -> bool {
        match event {
            watcher::Event::Apply(pod) => {
                self.pods.insert(Self::key(&pod), pod);
                true
            }
            watcher::Event::Delete(pod) => {
                self.pods.remove(&Self::key(&pod));
                true
            }
            watcher::Event::Init => {
                self.relisting = Some(HashMap::new());
                false
            }
            watcher::Event::InitApply(pod) => {
                if let Some(buffer) = self.relisting.as_mut() {
                    buffer.insert(Self::key(&pod), pod);
                }
                false
            }
            watcher::Event::InitDone => {
                // Objects not in the re-list were deleted while the watch was down.
                if let Some(buffer) = self.relisting.take() {
                    self.pods = buffer;
                }
                true
            }
        }
    }

    fn split(&self) -> (Vec<Pod>, Vec<Pod>) {
        let (mirrors, pods): (Vec<Pod>, Vec<Pod>) =
            self.pods.values().cloned().partition(is_mirror);
        (pods, mirrors)
    }
}

/// Marks a pod as coming from the API server, as upstream annotates its internal copy.
fn annotate(mut pod: Pod) -> Pod {
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(CONFIG_SOURCE_ANNOTATION.to_string(), "api".to_string());
    pod.metadata.managed_fields = None;
    pod
}

/// Watches the pods bound to this node until the process ends, publishing the pods to run
/// on `pods` and the mirror pods on `mirrors`. Errors (the API server down, 410 Gone) are
/// logged and the watch resumes with back-off; the last view stays published meanwhile.
pub async fn run(
    clients: ApiClients,
    pods: watch::Sender<Arc<ApiSnapshot>>,
    mirrors: watch::Sender<Vec<Pod>>,
) {
    let api: Api<Pod> = Api::all(clients.main.clone());
    let config = watcher::Config::default().fields(&format!("spec.nodeName={}", clients.node_name));
    let mut stream = watcher::watcher(api, config).default_backoff().boxed();
    let mut held = Held::default();
    let mut ready = false;
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                warn!(%error, "pod watch failed; the watch resumes with back-off");
                continue;
            }
        };
        ready |= matches!(event, watcher::Event::InitDone);
        if !held.apply(event) || !ready {
            continue;
        }
        let (run, mirror) = held.split();
        debug!(pods = run.len(), mirrors = mirror.len(), "api pods changed");
        let _ = pods.send(Arc::new(ApiSnapshot {
            ready,
            pods: run.into_iter().map(annotate).collect(),
        }));
        let _ = mirrors.send(mirror);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str, mirror: bool) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.uid = Some(uid.into());
        pod.metadata.name = Some(format!("p-{uid}"));
        if mirror {
            pod.metadata.annotations =
                Some([(CONFIG_MIRROR_ANNOTATION.to_string(), "h".to_string())].into());
        }
        pod
    }

    fn uids(pods: &[Pod]) -> Vec<String> {
        let mut uids: Vec<String> = pods.iter().map(Held::key).collect();
        uids.sort();
        uids
    }

    #[test]
    fn a_relist_drops_pods_deleted_during_the_gap() {
        let mut held = Held::default();
        held.apply(watcher::Event::Init);
        held.apply(watcher::Event::InitApply(pod("a", false)));
        held.apply(watcher::Event::InitApply(pod("b", false)));
        assert!(held.apply(watcher::Event::InitDone));
        assert_eq!(uids(&held.split().0), ["a", "b"]);
        // The watch broke (410 Gone); "a" was deleted meanwhile, "c" created.
        assert!(!held.apply(watcher::Event::Init));
        held.apply(watcher::Event::InitApply(pod("b", false)));
        held.apply(watcher::Event::InitApply(pod("c", false)));
        assert_eq!(
            uids(&held.split().0),
            ["a", "b"],
            "nothing changes mid-relist"
        );
        held.apply(watcher::Event::InitDone);
        assert_eq!(uids(&held.split().0), ["b", "c"]);
    }

    #[test]
    fn mirror_pods_are_kept_apart() {
        let mut held = Held::default();
        held.apply(watcher::Event::Apply(pod("a", false)));
        held.apply(watcher::Event::Apply(pod("m", true)));
        let (run, mirrors) = held.split();
        assert_eq!(uids(&run), ["a"]);
        assert_eq!(uids(&mirrors), ["m"]);
        held.apply(watcher::Event::Delete(pod("a", false)));
        assert!(held.split().0.is_empty());
    }

    #[test]
    fn api_pods_are_annotated_with_their_source() {
        let pod = annotate(pod("a", false));
        let source = pod.metadata.annotations.unwrap_or_default();
        assert_eq!(source[CONFIG_SOURCE_ANNOTATION], "api");
    }
}
