use super::*;
use axum::http::HeaderValue;
use k8s_openapi::api::authentication::v1::UserInfo as ApiUser;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A TokenReview stand-in: `good` is valid as user `alice`, anything else not; `fail` makes
/// the next reviews fail as an unreachable API server would.
#[derive(Default)]
struct FakeTokens {
    calls: AtomicUsize,
    fail: Mutex<bool>,
}

impl TokenReviewer for FakeTokens {
    fn review<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<TokenReviewStatus, ReviewError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let fail = *self.fail.lock();
        Box::pin(async move {
            if fail {
                return Err(ReviewError::NoStatus {
                    review: "TokenReview",
                });
            }
            Ok(if token == "good" {
                TokenReviewStatus {
                    authenticated: Some(true),
                    user: Some(ApiUser {
                        username: Some("alice".into()),
                        uid: Some("u-1".into()),
                        groups: Some(vec!["devs".into(), AUTHENTICATED_GROUP.into()]),
                        extra: None,
                    }),
                    ..Default::default()
                }
            } else {
                TokenReviewStatus {
                    authenticated: Some(false),
                    error: Some("token expired".into()),
                    ..Default::default()
                }
            })
        })
    }
}

fn bearer(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        axum::http::header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    headers
}

fn with_tokens(fake: &Arc<FakeTokens>, anonymous: bool) -> Authenticator {
    Authenticator {
        tokens: Some(TokenAuthenticator::new(
            fake.clone(),
            Duration::from_secs(120),
        )),
        anonymous,
    }
}

#[tokio::test]
async fn a_client_certificate_comes_first_and_joins_system_authenticated() {
    let fake = Arc::new(FakeTokens::default());
    let auth = with_tokens(&fake, false);
    let peer = PeerIdentity(Some(Arc::new(UserInfo::new("admin", &["system:masters"]))));
    let user = auth.authenticate(&peer, &bearer("bad")).await.unwrap();
    assert_eq!(user.name, "admin");
    assert_eq!(user.groups, ["system:masters", AUTHENTICATED_GROUP]);
    assert_eq!(
        fake.calls.load(Ordering::SeqCst),
        0,
        "no review for a certificate"
    );
}

#[tokio::test]
async fn tokens_are_reviewed_once_per_ttl_yes_and_no_alike() {
    let fake = Arc::new(FakeTokens::default());
    let auth = with_tokens(&fake, false);
    let none = PeerIdentity::default();
    for _ in 0..3 {
        let user = auth.authenticate(&none, &bearer("good")).await.unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.uid, "u-1");
        assert_eq!(
            user.groups,
            ["devs", AUTHENTICATED_GROUP],
            "no second system:authenticated"
        );
    }
    assert_eq!(fake.calls.load(Ordering::SeqCst), 1);
    for _ in 0..3 {
        let error = auth.authenticate(&none, &bearer("bad")).await.unwrap_err();
        assert!(matches!(error, AuthnError::InvalidToken), "{error}");
    }
    assert_eq!(
        fake.calls.load(Ordering::SeqCst),
        2,
        "a refusal is cached too"
    );
}

#[tokio::test]
async fn a_failed_review_is_a_401_and_is_not_cached() {
    let fake = Arc::new(FakeTokens::default());
    let auth = with_tokens(&fake, true);
    *fake.fail.lock() = true;
    let none = PeerIdentity::default();
    let error = auth.authenticate(&none, &bearer("good")).await.unwrap_err();
    assert!(matches!(error, AuthnError::Review(_)), "{error}");
    *fake.fail.lock() = false;
    assert_eq!(
        auth.authenticate(&none, &bearer("good"))
            .await
            .unwrap()
            .name,
        "alice"
    );
    assert_eq!(fake.calls.load(Ordering::SeqCst), 2);
    // A refused token is not turned into an anonymous request, as upstream.
    assert!(auth.authenticate(&none, &bearer("bad")).await.is_err());
}

#[tokio::test]
async fn anonymous_only_when_enabled() {
    let none = PeerIdentity::default();
    let closed = Authenticator {
        tokens: None,
        anonymous: false,
    };
    let error = closed
        .authenticate(&none, &HeaderMap::new())
        .await
        .unwrap_err();
    assert!(matches!(error, AuthnError::NoCredentials));
    // Without a token authenticator (standalone) a token is no credential.
    assert!(closed.authenticate(&none, &bearer("good")).await.is_err());
    let open = Authenticator {
        tokens: None,
        anonymous: true,
    };
    let user = open.authenticate(&none, &HeaderMap::new()).await.unwrap();
    assert_eq!(user.name, ANONYMOUS_USER);
    assert_eq!(user.groups, [UNAUTHENTICATED_GROUP]);
}

#[test]
fn bearer_tokens_are_read_as_upstream() {
    let header = |value: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(
            axum::http::header::AUTHORIZATION,
            HeaderValue::from_str(value).unwrap(),
        );
        headers
    };
    assert_eq!(bearer_token(&header("Bearer abc")), Some("abc"));
    assert_eq!(bearer_token(&header("bearer  abc ")), Some("abc"));
    assert_eq!(bearer_token(&header("Basic abc")), None);
    assert_eq!(bearer_token(&header("Bearer ")), None);
    assert_eq!(bearer_token(&HeaderMap::new()), None);
}

#[test]
fn a_review_names_its_user_only_when_authenticated() {
    assert_eq!(reviewed_user(&TokenReviewStatus::default()), None);
    let no_name = TokenReviewStatus {
        authenticated: Some(true),
        user: Some(ApiUser::default()),
        ..Default::default()
    };
    assert_eq!(reviewed_user(&no_name), None);
}
