use super::*;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

fn subresources(method: &str, path: &str) -> (Vec<&'static str>, &'static str) {
    let attributes = request_attributes(method, path, "node-a");
    assert!(attributes
        .iter()
        .all(|a| a.resource == "nodes" && a.name == "node-a"));
    (
        attributes.iter().map(|a| a.subresource).collect(),
        attributes[0].verb,
    )
}

#[test]
fn requests_map_to_upstreams_attributes() {
    // (method, path, subresources in the order asked, verb), as pkg/kubelet/server/auth.go.
    let cases: &[(&str, &str, &[&str], &str)] = &[
        ("GET", "/stats/summary", &["stats"], "get"),
        ("GET", "/stats", &["stats"], "get"),
        ("GET", "/metrics", &["metrics"], "get"),
        ("GET", "/metrics/cadvisor", &["metrics"], "get"),
        ("GET", "/metrics/resource", &["metrics"], "get"),
        ("GET", "/metrics/probes", &["metrics"], "get"),
        ("GET", "/logs/syslog", &["log"], "get"),
        ("GET", "/spec/", &["spec"], "get"),
        ("GET", "/spec", &["spec"], "get"),
        ("POST", "/checkpoint/ns/pod/c", &["checkpoint"], "create"),
        ("GET", "/pods", &["pods", "proxy"], "get"),
        ("GET", "/pods/", &["pods", "proxy"], "get"),
        ("GET", "/runningpods/", &["pods", "proxy"], "get"),
        ("GET", "/healthz", &["healthz", "proxy"], "get"),
        ("GET", "/healthz/ping", &["healthz", "proxy"], "get"),
        ("GET", "/configz", &["configz", "proxy"], "get"),
        ("GET", "/statusz", &["statusz", "proxy"], "get"),
        ("GET", "/containerLogs/ns/pod/c", &["proxy"], "get"),
        ("POST", "/exec/ns/pod/c", &["proxy"], "create"),
        ("GET", "/exec/ns/pod/c", &["proxy"], "get"),
        ("POST", "/portForward/ns/pod", &["proxy"], "create"),
        ("PUT", "/anything", &["proxy"], "update"),
        ("PATCH", "/anything", &["proxy"], "patch"),
        ("DELETE", "/anything", &["proxy"], "delete"),
        ("HEAD", "/pods", &["pods", "proxy"], ""),
        // A prefix counts only as a whole path segment.
        ("GET", "/podsx", &["proxy"], "get"),
        ("GET", "/statsx", &["proxy"], "get"),
        ("GET", "/metricsfoo", &["proxy"], "get"),
        ("GET", "/", &["proxy"], "get"),
    ];
    for (method, path, expected, verb) in cases {
        assert_eq!(
            subresources(method, path),
            (expected.to_vec(), *verb),
            "{method} {path}"
        );
    }
}

#[test]
fn the_access_review_is_upstreams() {
    let mut user = UserInfo::new("system:serviceaccount:ns:sa", &["system:serviceaccounts"]);
    user.uid = "u-7".into();
    let attributes = &request_attributes("GET", "/stats/summary", "node-a")[0];
    let spec = serde_json::to_value(access_review_spec(&user, attributes)).unwrap();
    assert_eq!(
        spec,
        serde_json::json!({
            "user": "system:serviceaccount:ns:sa",
            "uid": "u-7",
            "groups": ["system:serviceaccounts"],
            "resourceAttributes": {
                "verb": "get", "version": "v1", "resource": "nodes",
                "subresource": "stats", "name": "node-a"
            }
        })
    );
}

/// A SubjectAccessReview stand-in: allows user `alice`, counts calls, can fail.
#[derive(Default)]
struct FakeAccess {
    calls: AtomicUsize,
    fail: Mutex<bool>,
}

impl AccessReviewer for FakeAccess {
    fn review<'a>(
        &'a self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'a, Result<SubjectAccessReviewStatus, ReviewError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let fail = *self.fail.lock();
        Box::pin(async move {
            if fail {
                return Err(ReviewError::NoStatus {
                    review: "SubjectAccessReview",
                });
            }
            Ok(SubjectAccessReviewStatus {
                allowed: spec.user.as_deref() == Some("alice"),
                ..Default::default()
            })
        })
    }
}

#[tokio::test]
async fn the_webhook_caches_allowed_and_denied_for_their_ttls() {
    let fake = Arc::new(FakeAccess::default());
    let authorizer = Authorizer::Webhook(WebhookAuthorizer::new(
        fake.clone(),
        Duration::from_secs(300),
        Duration::from_millis(200),
    ));
    let attributes = &request_attributes("GET", "/pods", "node-a")[0];
    let alice = UserInfo::new("alice", &[]);
    let bob = UserInfo::new("bob", &[]);
    for _ in 0..3 {
        assert!(authorizer.authorize(&alice, attributes).await.unwrap());
        assert!(!authorizer.authorize(&bob, attributes).await.unwrap());
    }
    assert_eq!(fake.calls.load(Ordering::SeqCst), 2);
    // The denial expires (cacheUnauthorizedTTL), the permission does not yet.
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(!authorizer.authorize(&bob, attributes).await.unwrap());
    assert!(authorizer.authorize(&alice, attributes).await.unwrap());
    assert_eq!(fake.calls.load(Ordering::SeqCst), 3);
    // Another subresource is another question.
    let proxy = &request_attributes("GET", "/pods", "node-a")[1];
    assert!(authorizer.authorize(&alice, proxy).await.unwrap());
    assert_eq!(fake.calls.load(Ordering::SeqCst), 4);
    // A failed review is an error, and is asked again next time.
    *fake.fail.lock() = true;
    let carol = UserInfo::new("carol", &[]);
    assert!(authorizer.authorize(&carol, attributes).await.is_err());
    assert!(authorizer.authorize(&carol, attributes).await.is_err());
    assert_eq!(fake.calls.load(Ordering::SeqCst), 6);
}

#[tokio::test]
async fn standalone_allows_system_masters_only() {
    let attributes = &request_attributes("GET", "/containerLogs/a/b/c", "node-a")[0];
    let admin = UserInfo::new("admin", &["system:masters"]);
    let other = UserInfo::new("viewer", &["system:nodes"]);
    let local = Authorizer::LocalMasters;
    assert!(local.authorize(&admin, attributes).await.unwrap());
    assert!(!local.authorize(&other, attributes).await.unwrap());
    assert!(Authorizer::AlwaysAllow
        .authorize(&other, attributes)
        .await
        .unwrap());
}
