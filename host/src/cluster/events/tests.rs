use super::*;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use parking_lot::Mutex;

fn pod(name: &str, uid: &str) -> k8s_openapi::api::core::v1::Pod {
    k8s_openapi::api::core::v1::Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some(uid.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            init_containers: Some(vec![Container {
                name: "setup".into(),
                ..Default::default()
            }]),
            containers: vec![Container {
                name: "web".into(),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs)
}

fn recorded(object: ObjectRef, reason: &str, message: &str, when: SystemTime) -> Recorded {
    Recorded {
        object,
        kind: EventType::Normal,
        reason: reason.into(),
        message: message.into(),
        at: when,
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Call {
    Create(Box<Event>),
    Patch(String, String, serde_json::Value),
}

#[derive(Clone, Default)]
struct FakeSink {
    calls: Arc<Mutex<Vec<Call>>>,
    /// Every patch answers 404, as for an expired Event.
    patch_not_found: bool,
}

impl FakeSink {
    fn calls(&self) -> Vec<Call> {
        self.calls.lock().clone()
    }
}

impl EventSink for FakeSink {
    async fn create(&self, event: &Event) -> Result<(), ApiError> {
        self.calls
            .lock()
            .push(Call::Create(Box::new(event.clone())));
        Ok(())
    }

    async fn patch(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), ApiError> {
        self.calls
            .lock()
            .push(Call::Patch(namespace.into(), name.into(), patch.clone()));
        if self.patch_not_found {
            let status = kube::core::Status::failure("gone", "NotFound").with_code(404);
            return Err(ApiError::Status(Box::new(status)));
        }
        Ok(())
    }
}

/// Static pod `static-uid` has mirror pod `mirror-uid` once `known` is set.
struct Mirrors(Mutex<bool>);

impl MirrorLookup for Mirrors {
    fn lookup(&self, uid: &str) -> MirrorUid {
        match (uid, *self.0.lock()) {
            ("static-uid", true) => MirrorUid::Known("mirror-uid".into()),
            ("static-uid", false) => MirrorUid::NotYet,
            _ => MirrorUid::NotStatic,
        }
    }
}

fn writer(sink: FakeSink, mirrors: Arc<dyn MirrorLookup>) -> Writer<FakeSink> {
    let mut writer = Writer::new(sink, "node-1".into(), mirrors, Box::new(|| true));
    writer.retry_delay = Duration::ZERO;
    writer
}

#[test]
fn an_event_about_a_container_is_named_and_addressed_as_upstream() {
    let object = ObjectRef::container(&pod("web-0", "u1"), "web");
    let when = UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789);
    let event = make_event(&recorded(object, "Pulled", "pulled", when), "node-1");
    assert_eq!(
        event.metadata.name.as_deref(),
        Some(format!("web-0.{:x}", 1_700_000_000_123_456_789u128).as_str())
    );
    assert_eq!(event.metadata.namespace.as_deref(), Some("ns"));
    let o = &event.involved_object;
    assert_eq!(o.api_version.as_deref(), Some("v1"));
    assert_eq!(o.kind.as_deref(), Some("Pod"));
    assert_eq!(o.namespace.as_deref(), Some("ns"));
    assert_eq!(o.name.as_deref(), Some("web-0"));
    assert_eq!(o.uid.as_deref(), Some("u1"));
    assert_eq!(o.field_path.as_deref(), Some("spec.containers{web}"));
    assert_eq!(event.type_.as_deref(), Some("Normal"));
    assert_eq!(event.reason.as_deref(), Some("Pulled"));
    let source = event.source.clone().unwrap();
    assert_eq!(source.component.as_deref(), Some("kubelet"));
    assert_eq!(source.host.as_deref(), Some("node-1"));
    assert_eq!(event.reporting_component.as_deref(), Some("kubelet"));
    assert_eq!(event.reporting_instance.as_deref(), Some("node-1"));
    assert_eq!(event.count, Some(1));
    assert_eq!(event.first_timestamp, event.last_timestamp);
    assert!(event.first_timestamp.is_some());

    let init = ObjectRef::container(&pod("web-0", "u1"), "setup");
    assert_eq!(
        init.field_path.as_deref(),
        Some("spec.initContainers{setup}")
    );
}

#[test]
fn an_event_about_the_node_goes_to_the_default_namespace() {
    let object = ObjectRef::node("node-1", "node-1");
    let event = make_event(&recorded(object, "NodeReady", "ready", at(0)), "node-1");
    assert_eq!(event.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(event.involved_object.namespace, None);
    assert_eq!(event.involved_object.kind.as_deref(), Some("Node"));
    assert!(event.metadata.name.unwrap().starts_with("node-1."));
}

#[test]
fn an_identical_event_within_the_window_is_a_patch_of_the_first() {
    let object = ObjectRef::container(&pod("web-0", "u1"), "web");
    let mut correlator = Correlator::default();
    let first = make_event(&recorded(object.clone(), "BackOff", "m", at(0)), "n");
    let Correlated::Create(created) = correlator.correlate(first, at(0)) else {
        panic!("the first event is created");
    };
    for (count, secs) in [(2, 60), (3, 120)] {
        let again = make_event(&recorded(object.clone(), "BackOff", "m", at(secs)), "n");
        let Correlated::Patch { event, patch } = correlator.correlate(again, at(secs)) else {
            panic!("an identical event is a patch");
        };
        assert_eq!(event.metadata.name, created.metadata.name);
        assert_eq!(event.first_timestamp, created.first_timestamp);
        assert_eq!(event.count, Some(count));
        assert_eq!(patch["count"], count);
        assert_eq!(
            patch["lastTimestamp"],
            serde_json::to_value(crate::timestamps::api_time(at(secs))).unwrap()
        );
    }
    // Another message is another event.
    let other = make_event(&recorded(object.clone(), "BackOff", "other", at(130)), "n");
    assert!(matches!(
        correlator.correlate(other, at(130)),
        Correlated::Create(_)
    ));
    // After ten quiet minutes the same event starts a new Event.
    let later = at(120) + AGGREGATION_WINDOW;
    let late = make_event(&recorded(object, "BackOff", "m", later), "n");
    let Correlated::Create(renewed) = correlator.correlate(late, later) else {
        panic!("an event after the window is created anew");
    };
    assert_ne!(renewed.metadata.name, created.metadata.name);
    assert_eq!(renewed.count, Some(1));
}

#[test]
fn the_spam_filter_drops_floods_per_object_and_refills_slowly() {
    let noisy = ObjectRef::pod(&pod("noisy", "u1"));
    let quiet = ObjectRef::pod(&pod("quiet", "u2"));
    let mut correlator = Correlator::default();
    let mut send = |object: &ObjectRef, message: String, when: SystemTime| {
        let event = make_event(&recorded(object.clone(), "Unhealthy", &message, when), "n");
        correlator.correlate(event, when) != Correlated::Dropped
    };
    for i in 0..25 {
        assert!(
            send(&noisy, format!("m{i}"), at(0)),
            "event {i} is within the burst"
        );
    }
    assert!(!send(&noisy, "m25".into(), at(0)), "the 26th is dropped");
    assert!(!send(&noisy, "m0".into(), at(1)), "identical ones too");
    assert!(
        send(&quiet, "m".into(), at(1)),
        "another object has its own bucket"
    );
    assert!(
        send(&noisy, "m26".into(), at(300)),
        "one more after 5 minutes"
    );
    assert!(!send(&noisy, "m27".into(), at(301)));
}

#[tokio::test]
async fn the_writer_posts_once_then_patches_and_recreates_an_expired_event() {
    let sink = FakeSink::default();
    let mut w = writer(sink.clone(), Arc::new(()));
    let object = ObjectRef::container(&pod("web-0", "u1"), "web");
    w.accept(recorded(object.clone(), "Pulled", "m", at(0)), at(0))
        .await;
    w.accept(recorded(object.clone(), "Pulled", "m", at(5)), at(5))
        .await;
    let calls = sink.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let Call::Create(created) = &calls[0] else {
        panic!("{calls:?}")
    };
    let name = created.metadata.name.clone().unwrap();
    assert_eq!(
        calls[1],
        Call::Patch(
            "ns".into(),
            name.clone(),
            serde_json::json!({
                "count": 2,
                "lastTimestamp": crate::timestamps::api_time(at(5)),
            })
        )
    );

    let expired = FakeSink {
        patch_not_found: true,
        ..Default::default()
    };
    let mut w = writer(expired.clone(), Arc::new(()));
    w.accept(recorded(object.clone(), "Pulled", "m", at(0)), at(0))
        .await;
    w.accept(recorded(object, "Pulled", "m", at(5)), at(5))
        .await;
    let calls = expired.calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    let Call::Create(recreated) = &calls[2] else {
        panic!("{calls:?}")
    };
    assert_eq!(recreated.metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(recreated.count, Some(2));
}

#[tokio::test]
async fn the_writer_drops_events_over_the_qps_bucket() {
    let sink = FakeSink::default();
    let mut w = writer(sink.clone(), Arc::new(()));
    w.allowed = Box::new(|| false);
    let object = ObjectRef::pod(&pod("web-0", "u1"));
    w.accept(recorded(object, "Killing", "m", at(0)), at(0))
        .await;
    assert!(sink.calls().is_empty());
}

#[tokio::test]
async fn a_static_pod_is_addressed_through_its_mirror_pod() {
    let sink = FakeSink::default();
    let mirrors = Arc::new(Mirrors(Mutex::new(true)));
    let mut w = writer(sink.clone(), mirrors.clone());
    let object = ObjectRef::container(&pod("etcd-node-1", "static-uid"), "web");
    w.accept(recorded(object.clone(), "Started", "m", at(0)), at(0))
        .await;
    let calls = sink.calls();
    let [Call::Create(event)] = calls.as_slice() else {
        panic!("{calls:?}")
    };
    assert_eq!(event.involved_object.uid.as_deref(), Some("mirror-uid"));
    assert_eq!(event.involved_object.name.as_deref(), Some("etcd-node-1"));
    assert_eq!(event.involved_object.namespace.as_deref(), Some("ns"));
    assert_eq!(
        event.involved_object.field_path.as_deref(),
        Some("spec.containers{web}")
    );
}

#[tokio::test]
async fn events_of_a_static_pod_wait_for_its_mirror_pod_in_order() {
    let sink = FakeSink::default();
    let mirrors = Arc::new(Mirrors(Mutex::new(false)));
    let mut w = writer(sink.clone(), mirrors.clone());
    let object = ObjectRef::pod(&pod("etcd-node-1", "static-uid"));
    w.accept(recorded(object.clone(), "Pulling", "1", at(0)), at(0))
        .await;
    w.accept(recorded(object.clone(), "Pulled", "2", at(1)), at(1))
        .await;
    // Another pod is not held up.
    w.accept(
        recorded(ObjectRef::pod(&pod("other", "u9")), "Started", "m", at(1)),
        at(1),
    )
    .await;
    assert_eq!(sink.calls().len(), 1);
    w.flush_pending(at(2)).await;
    assert_eq!(sink.calls().len(), 1, "still no mirror pod");

    *mirrors.0.lock() = true;
    w.flush_pending(at(3)).await;
    let reasons: Vec<_> = sink
        .calls()
        .iter()
        .skip(1)
        .map(|c| match c {
            Call::Create(e) => (
                e.reason.clone().unwrap(),
                e.involved_object.uid.clone().unwrap(),
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("Pulling".to_string(), "mirror-uid".to_string()),
            ("Pulled".to_string(), "mirror-uid".to_string())
        ]
    );
}

#[tokio::test]
async fn without_a_mirror_pod_an_event_is_written_after_the_wait() {
    let sink = FakeSink::default();
    let mut w = writer(sink.clone(), Arc::new(Mirrors(Mutex::new(false))));
    let object = ObjectRef::pod(&pod("etcd-node-1", "static-uid"));
    w.accept(recorded(object, "Pulling", "1", at(0)), at(0))
        .await;
    w.flush_pending(at(0) + MIRROR_WAIT).await;
    let calls = sink.calls();
    let [Call::Create(event)] = calls.as_slice() else {
        panic!("{calls:?}")
    };
    assert_eq!(event.involved_object.uid.as_deref(), Some("static-uid"));
}
