use super::*;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// A static pod as the file source makes it: UID = config hash.
fn static_pod(name: &str, hash: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("kube-system".into()),
            uid: Some(hash.into()),
            labels: Some([("tier".to_string(), "control-plane".to_string())].into()),
            annotations: Some(
                [
                    (CONFIG_HASH_ANNOTATION.to_string(), hash.to_string()),
                    (
                        "kubernetes.io/config.source".to_string(),
                        "file".to_string(),
                    ),
                ]
                .into(),
            ),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("busybox".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A mirror pod in the API with `uid`, mirroring `hash`.
fn api_mirror(name: &str, hash: &str, uid: &str) -> Pod {
    let mut pod = mirror_pod(&static_pod(name, hash), "node-1", "node-uid");
    pod.metadata.uid = Some(uid.into());
    pod
}

fn delete(name: &str, uid: &str, why: DeleteReason) -> MirrorAction {
    MirrorAction::Delete {
        namespace: "kube-system".into(),
        name: name.into(),
        uid: uid.into(),
        why,
    }
}

fn created(actions: &[MirrorAction]) -> Vec<(&str, &str)> {
    actions
        .iter()
        .filter_map(|a| match a {
            MirrorAction::Create { static_uid, pod } => {
                Some((static_uid.as_str(), pod.metadata.name.as_deref().unwrap()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_mirror_pod_copies_the_static_pod_and_is_owned_by_the_node() {
    let mut source = static_pod("etcd-node-1", "h1");
    source.metadata.resource_version = Some("7".into());
    source.status = Some(Default::default());
    let mirror = mirror_pod(&source, "node-1", "node-uid");
    let meta = &mirror.metadata;
    assert_eq!(meta.name.as_deref(), Some("etcd-node-1"));
    assert_eq!(meta.namespace.as_deref(), Some("kube-system"));
    assert_eq!(
        meta.uid, None,
        "the API server gives the mirror pod its own UID"
    );
    assert_eq!(meta.resource_version, None);
    assert_eq!(meta.labels, source.metadata.labels);
    let annotations = meta.annotations.as_ref().unwrap();
    assert_eq!(annotations[MIRROR_ANNOTATION], "h1");
    assert_eq!(annotations[CONFIG_HASH_ANNOTATION], "h1");
    assert_eq!(annotations["kubernetes.io/config.source"], "file");
    assert_eq!(
        meta.owner_references,
        Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: "node-1".into(),
            uid: "node-uid".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }])
    );
    let spec = mirror.spec.unwrap();
    assert_eq!(spec.node_name.as_deref(), Some("node-1"));
    assert_eq!(spec.containers, source.spec.unwrap().containers);
    assert_eq!(mirror.status, None);
}

#[test]
fn reconcile_creates_a_missing_mirror_pod_once_the_node_is_known() {
    let statics = [static_pod("etcd-node-1", "h1")];
    let actions = reconcile(&statics, true, &[], "node-1", Some("node-uid"));
    assert_eq!(created(&actions), [("h1", "etcd-node-1")]);
    let MirrorAction::Create { pod, .. } = &actions[0] else {
        unreachable!()
    };
    assert_eq!(**pod, mirror_pod(&statics[0], "node-1", "node-uid"));

    let before_registration = reconcile(&statics, true, &[], "node-1", None);
    assert!(before_registration.is_empty(), "{before_registration:?}");
}

#[test]
fn reconcile_leaves_a_current_mirror_pod_alone() {
    let statics = [static_pod("etcd-node-1", "h1")];
    let mirrors = [api_mirror("etcd-node-1", "h1", "m1")];
    assert!(reconcile(&statics, true, &mirrors, "node-1", Some("node-uid")).is_empty());
}

#[test]
fn reconcile_replaces_an_outdated_or_deleted_mirror_pod() {
    let statics = [static_pod("etcd-node-1", "h2")];
    let outdated = [api_mirror("etcd-node-1", "h1", "m1")];
    let actions = reconcile(&statics, true, &outdated, "node-1", Some("node-uid"));
    assert_eq!(
        actions[0],
        delete("etcd-node-1", "m1", DeleteReason::Outdated)
    );
    assert_eq!(created(&actions[1..]), [("h2", "etcd-node-1")]);
    assert_eq!(actions.len(), 2);

    let mut terminating = api_mirror("etcd-node-1", "h2", "m2");
    terminating.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let actions = reconcile(&statics, true, &[terminating], "node-1", Some("node-uid"));
    assert_eq!(
        actions[0],
        delete("etcd-node-1", "m2", DeleteReason::Terminating)
    );
    assert_eq!(created(&actions[1..]), [("h2", "etcd-node-1")]);

    // Without the Node's UID the old one still goes; the new one waits.
    let actions = reconcile(&statics, true, &outdated, "node-1", None);
    assert_eq!(
        actions,
        [delete("etcd-node-1", "m1", DeleteReason::Outdated)]
    );
}

#[test]
fn reconcile_deletes_orphans_only_once_the_source_is_ready() {
    let statics = [static_pod("etcd-node-1", "h1")];
    let mirrors = [
        api_mirror("etcd-node-1", "h1", "m1"),
        api_mirror("gone-node-1", "h9", "m9"),
    ];
    let actions = reconcile(&statics, true, &mirrors, "node-1", Some("node-uid"));
    assert_eq!(
        actions,
        [delete("gone-node-1", "m9", DeleteReason::Orphaned)]
    );
    assert!(reconcile(&statics, false, &mirrors, "node-1", Some("node-uid")).is_empty());
}

#[test]
fn reconcile_ignores_pods_that_are_not_mirror_pods() {
    let mut plain = api_mirror("web", "h1", "u1");
    plain
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .remove(MIRROR_ANNOTATION);
    assert!(reconcile(&[], true, &[plain], "node-1", Some("node-uid")).is_empty());
    // A pod without a config hash is not a static pod to mirror.
    let mut no_hash = static_pod("x", "h1");
    no_hash.metadata.annotations = None;
    assert!(reconcile(&[no_hash], true, &[], "node-1", Some("node-uid")).is_empty());
}

#[test]
fn mirror_uids_name_the_current_mirror_of_each_static_pod() {
    let statics = [
        static_pod("etcd-node-1", "h1"),
        static_pod("api-node-1", "h2"),
        static_pod("sched-node-1", "h3"),
    ];
    let mut terminating = api_mirror("sched-node-1", "h3", "m3");
    terminating.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let mirrors = [
        api_mirror("etcd-node-1", "h1", "m1"),
        api_mirror("api-node-1", "h-old", "m2"),
        terminating,
    ];
    let pods = MirrorPods::default();
    *pods.write() = mirror_uids(&statics, &mirrors);
    assert_eq!(pods.mirror_uid("h1").as_deref(), Some("m1"));
    assert_eq!(pods.mirror_uid("h2"), None, "outdated");
    assert_eq!(pods.mirror_uid("h3"), None, "being deleted");
    assert!(pods.is_static("h2"));
    assert!(!pods.is_static("api-pod-uid"));
    assert_eq!(pods.lookup("h1"), MirrorUid::Known("m1".into()));
    assert_eq!(pods.lookup("h2"), MirrorUid::NotYet);
    assert_eq!(pods.lookup("api-pod-uid"), MirrorUid::NotStatic);
}
