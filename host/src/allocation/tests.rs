use super::*;
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const NODE: Allocatable = Allocatable {
    cpu_millis: 1000,
    memory_bytes: 1000 << 20,
};

/// A pod `uid` of one container `c` asking for `cpu` millicores and `memory_mib`.
fn pod(uid: &str, cpu: i64, memory_mib: i64) -> Pod {
    let list: BTreeMap<String, Quantity> = [
        ("cpu".to_string(), Quantity(format!("{cpu}m"))),
        ("memory".to_string(), Quantity(format!("{memory_mib}Mi"))),
    ]
    .into();
    Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            uid: Some(uid.into()),
            name: Some(uid.into()),
            generation: Some(2),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(list),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The node's resource predicate: the requests of `pod` and `others` fit in [`NODE`].
fn fits(pod: &Pod, others: &[Pod]) -> Result<(), Rejection> {
    let (mut cpu, mut memory) = cpu_and_memory_request(pod);
    for other in others {
        let (c, m) = cpu_and_memory_request(other);
        cpu += c;
        memory += m;
    }
    if cpu > i128::from(NODE.cpu_millis) || memory > i128::from(NODE.memory_bytes) {
        return Err(Rejection {
            reason: "OutOfcpu".into(),
            message: format!("no room: cpu {cpu}, memory {memory}"),
        });
    }
    Ok(())
}

/// Resizes queued in `allocations`, retried against `active` (specs as `desired` has them).
fn retry(allocations: &mut Allocations, desired: &[Pod]) -> Vec<(String, Outcome)> {
    let by_uid = |uid: &str| desired.iter().find(|p| podutil_uid(p) == uid).cloned();
    allocations.retry(by_uid, desired, NODE, fits)
}

fn podutil_uid(pod: &Pod) -> &str {
    crate::podutil::uid(pod)
}

fn requests(pod: &Pod) -> (i128, i128) {
    cpu_and_memory_request(pod)
}

#[test]
fn a_resize_is_allocated_only_once_the_node_holds_it_beside_the_others() {
    let mut allocations = Allocations::default();
    let (one, two) = (pod("one", 500, 100), pod("two", 400, 100));
    allocations.admit(&one);
    allocations.admit(&two);
    assert!(!allocations.differs(&two));

    // Two grows past what one leaves: deferred; it runs as admitted.
    let grown = pod("two", 700, 100);
    assert_eq!(allocations.pod_updated(&grown), None);
    assert!(allocations.differs(&grown));
    let changes = retry(&mut allocations, &[one.clone(), grown.clone()]);
    let pending = allocations.pending("two").cloned().expect("pending");
    assert_eq!(pending.reason, PendingReason::Deferred);
    assert_eq!(pending.message, "no room: cpu 1200, memory 209715200");
    assert_eq!(
        changes,
        vec![("two".to_string(), Outcome::Pending(pending))]
    );
    assert_eq!(requests(&allocations.allocated(&grown)), (400, 100 << 20));
    assert!(allocations.has_queued());

    // Tried again with nothing changed: still deferred, nothing new to report.
    assert_eq!(
        retry(&mut allocations, &[one.clone(), grown.clone()]),
        vec![]
    );

    // One leaves: granted, and the pod runs with its spec.
    let changes = retry(&mut allocations, std::slice::from_ref(&grown));
    assert_eq!(changes, vec![("two".to_string(), Outcome::Granted)]);
    assert_eq!(allocations.pending("two"), None);
    assert!(!allocations.differs(&grown));
    // The pod as allocated is the spec itself, not a copy of it.
    assert!(matches!(allocations.allocated(&grown), std::borrow::Cow::Borrowed(p) if *p == grown));
    assert!(!allocations.has_queued());
}

#[test]
fn a_resize_beyond_the_node_or_of_a_static_pod_is_infeasible_and_not_retried() {
    let mut allocations = Allocations::default();
    let mut static_pod = pod("static", 100, 100);
    static_pod.metadata.annotations = Some(
        [(
            "kubernetes.io/config.source".to_string(),
            "file".to_string(),
        )]
        .into(),
    );
    allocations.admit(&pod("big", 100, 100));
    allocations.admit(&static_pod);
    let too_big = pod("big", 1500, 100);
    let mut static_grown = static_pod.clone();
    static_grown.spec.as_mut().unwrap().containers[0] =
        pod("x", 200, 100).spec.unwrap().containers[0].clone();
    allocations.pod_updated(&too_big);
    allocations.pod_updated(&static_grown);
    retry(&mut allocations, &[too_big, static_grown]);
    let message = |uid| {
        let pending = allocations.pending(uid).expect("pending");
        assert_eq!(pending.reason, PendingReason::Infeasible);
        pending.message.clone()
    };
    assert_eq!(
        message("big"),
        "Node didn't have enough capacity: cpu, requested: 1500, capacity: 1000"
    );
    assert_eq!(
        message("static"),
        "In-place resize of static-pods is not supported"
    );
    assert!(!allocations.has_queued(), "infeasible waits for a new spec");

    // Memory is named first, as upstream's.
    let mut allocations = Allocations::default();
    allocations.admit(&pod("big", 100, 100));
    let huge = pod("big", 1500, 2000);
    allocations.pod_updated(&huge);
    retry(&mut allocations, &[huge]);
    assert_eq!(
        allocations.pending("big").map(|p| p.message.as_str()),
        Some(
            "Node didn't have enough capacity: memory, requested: 2097152000, capacity: 1048576000"
        )
    );
}

#[test]
fn deferred_resizes_are_granted_in_a_chain_in_upstreams_order() {
    // Upstream's pod-resize-retry-deferred-test-3, scaled: four pods of 250m/200Mi; two asks
    // for 333m with less memory, three for 666Mi with less CPU, four for 625m. Each grant
    // makes room for the next once one leaves.
    let mut allocations = Allocations::default();
    let first: Vec<Pod> = (1..=4).map(|i| pod(&format!("p{i}"), 250, 200)).collect();
    for p in &first {
        allocations.admit(p);
    }
    let resized = [pod("p2", 333, 41), pod("p3", 41, 666), pod("p4", 625, 200)];
    let mut desired = vec![first[0].clone()];
    desired.extend(resized.iter().cloned());
    for p in &resized {
        allocations.pod_updated(p);
        retry(&mut allocations, &desired);
        assert_eq!(
            allocations.pending(podutil_uid(p)).map(|p| p.reason),
            Some(PendingReason::Deferred)
        );
    }
    let changes = retry(&mut allocations, &desired[1..]);
    let granted: Vec<&str> = changes
        .iter()
        .filter(|(_, outcome)| *outcome == Outcome::Granted)
        .map(|(uid, _)| uid.as_str())
        .collect();
    assert_eq!(granted, ["p2", "p3", "p4"]);
}

#[test]
fn a_resize_that_shrinks_requests_or_has_higher_priority_goes_first() {
    let mut allocations = Allocations::default();
    for uid in ["grow", "high", "shrink"] {
        allocations.admit(&pod(uid, 300, 100));
    }
    let mut high = pod("high", 350, 100);
    high.spec.as_mut().unwrap().priority = Some(1000);
    // Queued in the worst order; the retry sorts them.
    let desired = [pod("grow", 500, 100), high, pod("shrink", 200, 100)];
    for p in &desired {
        allocations.pod_updated(p);
    }
    let order: Vec<String> = retry(&mut allocations, &desired)
        .into_iter()
        .map(|(uid, _)| uid)
        .collect();
    assert_eq!(order, ["shrink", "high", "grow"]);
    assert_eq!(
        allocations.pending("grow").map(|p| p.reason),
        Some(PendingReason::Deferred),
        "shrink and high took the room: 200 + 350 + 500 > 1000"
    );
}

#[test]
fn a_reverted_resize_clears_its_condition_and_a_gone_pod_is_dropped() {
    let mut allocations = Allocations::default();
    let (one, two) = (pod("one", 600, 100), pod("two", 300, 100));
    allocations.admit(&one);
    allocations.admit(&two);
    let grown = pod("two", 600, 100);
    allocations.pod_updated(&grown);
    retry(&mut allocations, &[one.clone(), grown]);
    assert!(allocations.pending("two").is_some());
    assert_eq!(allocations.pod_updated(&two), Some(Outcome::Cleared));
    assert_eq!(allocations.pending("two"), None);
    assert!(!allocations.has_queued());

    // A queued pod whose source no longer has it is forgotten by the retry.
    allocations.pod_updated(&pod("two", 600, 100));
    assert_eq!(allocations.retry(|_| None, &[], NODE, fits), vec![]);
    assert!(!allocations.has_queued());
    allocations.retain(|uid| uid == "one");
    assert!(!allocations.differs(&pod("two", 1, 1)), "nothing allocated");
}

#[test]
fn the_event_message_summarises_the_specs_resources_as_upstream() {
    let message = resize_message(&pod("p", 250, 64), "Pod resize Deferred", "no room");
    assert_eq!(
        message,
        r#"Pod resize Deferred: {"containers":[{"name":"c","resources":{"requests":{"cpu":"250m","memory":"64Mi"}}}],"generation":2,"error":"no room"}"#
    );
}

#[test]
fn a_restarted_node_admits_a_pod_with_what_it_was_granted_and_queues_its_pending_resize() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(checkpoint::FILE_NAME);
    let mut allocations = Allocations::with_checkpoint(path.clone());
    let (one, two) = (pod("one", 500, 100), pod("two", 300, 100));
    allocations.admit(&one);
    allocations.admit(&two);
    // Granted, then a further resize deferred: only the grant is saved.
    let granted = pod("two", 400, 100);
    allocations.pod_updated(&granted);
    retry(&mut allocations, &[one.clone(), granted.clone()]);
    let deferred = pod("two", 700, 100);
    allocations.pod_updated(&deferred);
    retry(&mut allocations, &[one.clone(), deferred.clone()]);
    assert_eq!(
        allocations.pending("two").map(|p| p.reason),
        Some(PendingReason::Deferred)
    );

    // The node restarts: admission judges two as granted, and its resize waits again.
    let mut restarted = Allocations::with_checkpoint(path.clone());
    assert_eq!(
        requests(&restarted.admitted_form(&Arc::new(deferred.clone()))),
        (400, 100 << 20)
    );
    // A pod the checkpoint does not know is admitted as its spec asks: the pod itself, shared.
    let new = Arc::new(pod("new", 1, 1));
    assert!(Arc::ptr_eq(&restarted.admitted_form(&new), &new));
    restarted.admit(&one);
    restarted.admit(&deferred);
    assert!(restarted.has_queued());
    assert_eq!(requests(&restarted.allocated(&deferred)), (400, 100 << 20));
    retry(&mut restarted, &[one, deferred]);
    assert_eq!(
        restarted.pending("two").map(|p| p.reason),
        Some(PendingReason::Deferred)
    );

    // A pod gone while the node was down is forgotten once the sources are read.
    let mut again = Allocations::with_checkpoint(path);
    again.forget_restored();
    assert_eq!(
        requests(&again.admitted_form(&Arc::new(pod("two", 700, 100)))),
        (700, 100 << 20)
    );
}

#[test]
fn an_unreadable_checkpoint_is_named_and_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(checkpoint::FILE_NAME);
    assert!(checkpoint::load(&path)
        .expect("no file: nothing saved")
        .is_empty());
    std::fs::write(&path, r#"{"version": 7, "pods": {}}"#).expect("write");
    let error = checkpoint::load(&path).expect_err("a version this node does not write");
    assert_eq!(
        error.to_string(),
        format!(
            "{}: field `version`: 7 is not the version this node writes (1)",
            path.display()
        )
    );
    std::fs::write(&path, "not json").expect("write");
    let error = checkpoint::load(&path).expect_err("not JSON");
    assert!(
        error.to_string().starts_with(&path.display().to_string()),
        "{error}"
    );
    // The node starts with its pods' specs.
    let allocations = Allocations::with_checkpoint(path);
    assert_eq!(
        requests(&allocations.admitted_form(&Arc::new(pod("p", 5, 5)))),
        (5, 5 << 20)
    );
}
