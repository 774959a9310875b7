//! The API server as a pod source (upstream's `config/apiserver.go`): one list+watch of the
//! pods bound to this node (`spec.nodeName=<node>`, the only pod watch the Node authorizer
//! allows). Each change publishes the whole set, so a re-list after `410 Gone` is diffed by
//! the merge against what wasmlet holds and a pod deleted during the gap is terminated.
//! Mirror pods are not pods to run: they go to the mirror pod manager.

use super::{watch_backoff, ApiClients};
use crate::source::manifest::CONFIG_SOURCE_ANNOTATION;
use crate::source::ApiSnapshot;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;
use kube::runtime::WatchStreamExt;
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

/// Whether `event` may change the pods the store publishes: an object applied or deleted, or
/// a re-list completed (the store swaps the re-listed set in only then, so a pod deleted while
/// the watch was down is gone from it).
fn publishes(event: &watcher::Event<Pod>) -> bool {
    matches!(
        event,
        watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone
    )
}

/// The store's pods, split into pods to run (the store's own, shared) and mirror pods.
fn split(held: Vec<Arc<Pod>>) -> (Vec<Arc<Pod>>, Vec<Pod>) {
    let (mirrors, pods): (Vec<Arc<Pod>>, Vec<Arc<Pod>>) =
        held.into_iter().partition(|pod| is_mirror(pod));
    (
        pods,
        mirrors.into_iter().map(Arc::unwrap_or_clone).collect(),
    )
}

/// Prepares a pod as the watch delivers it, before the store holds it: a pod to run is marked
/// as coming from the API server (as upstream annotates its internal copy), and no pod keeps
/// its managed fields, which nothing on the node reads.
fn prepare(pod: &mut Pod) {
    pod.metadata.managed_fields = None;
    if !is_mirror(pod) {
        pod.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(CONFIG_SOURCE_ANNOTATION.to_string(), "api".to_string());
    }
}

/// Watches the pods bound to this node until the process ends, publishing the pods to run
/// on `pods` and the mirror pods on `mirrors`. The pods are held in kube-runtime's reflector
/// store. Errors (the API server down) are logged and the watch resumes with back-off; after
/// 410 Gone it re-lists at once. The last view stays published meanwhile.
pub async fn run(
    clients: ApiClients,
    pods: watch::Sender<Arc<ApiSnapshot>>,
    mirrors: watch::Sender<Vec<Pod>>,
) {
    let api: Api<Pod> = Api::all(clients.main.clone());
    let config = watcher::Config::default().fields(&format!("spec.nodeName={}", clients.node_name));
    let watch = watcher::watcher(api, config).modify(prepare);
    let mut stream = watch_backoff::backed_off(watch, "pods").boxed();
    let mut store = Writer::<Pod>::default();
    let held = store.as_reader();
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
        store.apply_watcher_event(&event);
        if !publishes(&event) || !ready {
            continue;
        }
        let (run, mirror) = split(held.state());
        debug!(pods = run.len(), mirrors = mirror.len(), "api pods changed");
        let _ = pods.send(Arc::new(ApiSnapshot { ready, pods: run }));
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
        pod.metadata.namespace = Some("default".into());
        if mirror {
            pod.metadata.annotations =
                Some([(CONFIG_MIRROR_ANNOTATION.to_string(), "h".to_string())].into());
        }
        pod
    }

    fn uids<P: std::borrow::Borrow<Pod>>(pods: &[P]) -> Vec<String> {
        let mut uids: Vec<String> = pods
            .iter()
            .map(|p| p.borrow().metadata.uid.clone().unwrap_or_default())
            .collect();
        uids.sort();
        uids
    }

    /// Applies `event` to the store as `run` does; whether it publishes.
    fn apply(store: &mut Writer<Pod>, event: watcher::Event<Pod>) -> bool {
        store.apply_watcher_event(&event);
        publishes(&event)
    }

    #[test]
    fn a_relist_drops_pods_deleted_during_the_gap() {
        let mut store = Writer::<Pod>::default();
        let held = store.as_reader();
        apply(&mut store, watcher::Event::Init);
        apply(&mut store, watcher::Event::InitApply(pod("a", false)));
        apply(&mut store, watcher::Event::InitApply(pod("b", false)));
        assert!(apply(&mut store, watcher::Event::InitDone));
        assert_eq!(uids(&split(held.state()).0), ["a", "b"]);
        // The watch broke (410 Gone); "a" was deleted meanwhile, "c" created.
        assert!(!apply(&mut store, watcher::Event::Init));
        assert!(!apply(
            &mut store,
            watcher::Event::InitApply(pod("b", false))
        ));
        apply(&mut store, watcher::Event::InitApply(pod("c", false)));
        assert_eq!(
            uids(&split(held.state()).0),
            ["a", "b"],
            "nothing changes mid-relist"
        );
        assert!(apply(&mut store, watcher::Event::InitDone));
        assert_eq!(uids(&split(held.state()).0), ["b", "c"]);
    }

    #[test]
    fn mirror_pods_are_kept_apart() {
        let mut store = Writer::<Pod>::default();
        let held = store.as_reader();
        assert!(apply(&mut store, watcher::Event::Apply(pod("a", false))));
        apply(&mut store, watcher::Event::Apply(pod("m", true)));
        let (run, mirrors) = split(held.state());
        assert_eq!(uids(&run), ["a"]);
        assert_eq!(uids(&mirrors), ["m"]);
        assert!(apply(&mut store, watcher::Event::Delete(pod("a", false))));
        assert!(split(held.state()).0.is_empty());
    }

    #[test]
    fn api_pods_are_annotated_with_their_source_and_mirror_pods_are_not() {
        let mut run = pod("a", false);
        run.metadata.managed_fields = Some(vec![Default::default()]);
        prepare(&mut run);
        let source = run.metadata.annotations.unwrap_or_default();
        assert_eq!(source[CONFIG_SOURCE_ANNOTATION], "api");
        assert_eq!(run.metadata.managed_fields, None);
        let mut mirror = pod("m", true);
        prepare(&mut mirror);
        let annotations = mirror.metadata.annotations.unwrap_or_default();
        assert!(!annotations.contains_key(CONFIG_SOURCE_ANNOTATION));
    }
}
