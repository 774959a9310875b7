//! Service-account tokens from the TokenRequest API (`POST serviceaccounts/<sa>/token`, bound
//! to the pod by kind, name and UID), cached per pod and request as upstream's token manager
//! (`pkg/kubelet/token/token_manager.go`): refreshed once 80 % of their life (at most 24 h)
//! has passed, and on a failed refresh the old token is served until it expires. A token no
//! sync asked for in ten minutes belongs to a pod that is gone and is dropped.

use super::{object_error, through_graph_lag, ApiClients};
use crate::objects::{ObjectError, ObjectKind, ServiceAccountToken, TokenRequest};
use k8s_openapi::api::authentication::v1 as authn;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, PostParams};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tracing::{debug, warn};

/// Upstream's `maxTTL`: a token is refreshed at least once a day.
const TOKEN_MAX_REFRESH: Duration = Duration::from_secs(24 * 60 * 60);
/// A token no sync asked for this long belongs to a pod that is gone (every sync asks for
/// its pod's tokens): it is dropped, as upstream drops a deleted pod's tokens.
const TOKEN_IDLE: Duration = Duration::from_secs(10 * 60);
/// A token, when it was issued (for the refresh rule) and last served (to drop the tokens
/// of pods that are gone).
#[derive(Clone)]
struct IssuedToken {
    token: ServiceAccountToken,
    issued: SystemTime,
    used: Instant,
}

impl IssuedToken {
    /// Upstream's `requiresRefresh`: past 80 % of the token's life, or older than 24 h.
    fn needs_refresh(&self, now: SystemTime) -> bool {
        let life = self
            .token
            .expires
            .duration_since(self.issued)
            .unwrap_or(Duration::ZERO);
        let refresh_after = (life.saturating_mul(4) / 5).min(TOKEN_MAX_REFRESH);
        now.duration_since(self.issued)
            .is_ok_and(|age| age >= refresh_after)
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct TokenKey {
    namespace: String,
    pod_name: String,
    pod_uid: String,
    request: TokenRequest,
}

/// The tokens issued to the node's pods.
#[derive(Default)]
pub struct Tokens {
    issued: Mutex<HashMap<TokenKey, IssuedToken>>,
}

impl Tokens {
    /// A token for `pod` as `request` asks, from the cache while it is fresh.
    pub async fn get(
        &self,
        clients: &ApiClients,
        pod: &Pod,
        request: &TokenRequest,
    ) -> Result<ServiceAccountToken, ObjectError> {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let key = TokenKey {
            namespace: namespace.clone(),
            pod_name: pod.metadata.name.clone().unwrap_or_default(),
            pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
            request: request.clone(),
        };
        let now = SystemTime::now();
        let cached = self.issued.lock().get_mut(&key).map(|c| {
            c.used = Instant::now();
            c.clone()
        });
        if let Some(cached) = cached.as_ref().filter(|c| !c.needs_refresh(now)) {
            return Ok(cached.token.clone());
        }
        match self.request(clients, pod, &namespace, request).await {
            Ok(token) => {
                let mut tokens = self.issued.lock();
                tokens.retain(|_, t| t.token.expires > now && t.used.elapsed() < TOKEN_IDLE);
                tokens.insert(
                    key,
                    IssuedToken {
                        token: token.clone(),
                        issued: now,
                        used: Instant::now(),
                    },
                );
                Ok(token)
            }
            Err(error) => match cached.filter(|c| c.token.expires > now) {
                Some(cached) => {
                    warn!(%error, service_account = %request.service_account, "token refresh failed; serving the current token until it expires");
                    Ok(cached.token)
                }
                None => Err(error),
            },
        }
    }

    async fn request(
        &self,
        clients: &ApiClients,
        pod: &Pod,
        namespace: &str,
        request: &TokenRequest,
    ) -> Result<ServiceAccountToken, ObjectError> {
        let sa = request.service_account.as_str();
        let body = authn::TokenRequest {
            metadata: Default::default(),
            spec: authn::TokenRequestSpec {
                audiences: request.audiences.clone(),
                expiration_seconds: Some(request.expiration_seconds),
                bound_object_ref: Some(authn::BoundObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    name: pod.metadata.name.clone(),
                    uid: pod.metadata.uid.clone(),
                }),
            },
            status: None,
        };
        let api: Api<ServiceAccount> = Api::namespaced(clients.main.clone(), namespace);
        let post = PostParams::default();
        let answer = through_graph_lag(|| clients.call(api.create_token_request(sa, &post, &body)))
            .await
            .map_err(|e| object_error(ObjectKind::ServiceAccountToken, namespace, sa, e))?;
        let status = answer
            .status
            .filter(|s| !s.token.is_empty())
            .ok_or_else(|| ObjectError::Unavailable {
                kind: ObjectKind::ServiceAccountToken,
                namespace: namespace.into(),
                name: sa.into(),
                message: "the API server answered without a token".into(),
            })?;
        let nanos = status.expiration_timestamp.0.as_nanosecond();
        let expires = UNIX_EPOCH + Duration::from_nanos(u64::try_from(nanos).unwrap_or(0));
        debug!(namespace, service_account = sa, "token issued");
        Ok(ServiceAccountToken {
            token: status.token,
            expires,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued(life: Duration) -> IssuedToken {
        let issued = UNIX_EPOCH + Duration::from_secs(1_000_000);
        IssuedToken {
            token: ServiceAccountToken {
                token: "t".into(),
                expires: issued + life,
            },
            issued,
            used: Instant::now(),
        }
    }

    #[test]
    fn tokens_refresh_at_80_percent_or_a_day() {
        let hour = issued(Duration::from_secs(3600));
        let at = |secs| hour.issued + Duration::from_secs(secs);
        assert!(!hour.needs_refresh(at(2879)));
        assert!(hour.needs_refresh(at(2880)));
        // A year-long token (the API server extends kube-api-access tokens) is renewed daily.
        let year = issued(Duration::from_secs(365 * 24 * 3600));
        assert!(!year.needs_refresh(year.issued + Duration::from_secs(23 * 3600)));
        assert!(year.needs_refresh(year.issued + TOKEN_MAX_REFRESH));
    }
}
