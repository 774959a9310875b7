//! Who is calling: upstream's kubelet authenticator (`DelegatingAuthenticatorConfig`), in its
//! order. A verified client certificate first (CN is the user, O the groups), then a bearer
//! token checked by a TokenReview (cached for `cacheTTL`, a "yes" and a "no" alike), then
//! `system:anonymous` if `authentication.anonymous.enabled`. A token the API server refuses is
//! a 401 even when anonymous requests are allowed, as upstream.

use super::review::ReviewError;
use crate::ttl_cache::TtlCache;
use axum::http::HeaderMap;
use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::TokenReviewStatus;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The user of anonymous requests.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group of anonymous requests.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The group every authenticated user is in (upstream's `AuthenticatedGroupAdder`).
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// An authenticated caller, as upstream's `user.Info`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct UserInfo {
    /// The user name (a certificate's CN, a token's `status.user.username`).
    pub name: String,
    /// The user's UID, when the token names one.
    pub uid: String,
    /// The groups (a certificate's O entries, a token's groups).
    pub groups: Vec<String>,
    /// Extra attributes a token carries (service account pod name and such).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// `name` in `groups`, as a client certificate would name them.
    pub fn new(name: &str, groups: &[&str]) -> Self {
        Self {
            name: name.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn with_authenticated_group(mut self) -> Self {
        if !self.groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
            self.groups.push(AUTHENTICATED_GROUP.to_string());
        }
        self
    }
}

/// The identity of the client certificate a connection presented and the TLS layer verified
/// against `clientCAFile`; put in every request of the connection. `None`: no certificate.
#[derive(Debug, Clone, Default)]
pub struct PeerIdentity(pub Option<Arc<UserInfo>>);

/// Asks whether a bearer token is valid (the API server's TokenReview, `authentication.k8s.io/v1`);
/// a trait so the authenticator is tested without an API server.
pub trait TokenReviewer: Send + Sync {
    /// The API server's answer about `token`.
    fn review<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<TokenReviewStatus, ReviewError>>;
}

/// The user a TokenReview's answer names; `None` when it says the token is not valid (or
/// names no user).
pub fn reviewed_user(status: &TokenReviewStatus) -> Option<UserInfo> {
    if status.authenticated != Some(true) {
        return None;
    }
    let user = status.user.as_ref()?;
    let name = user.username.clone().filter(|n| !n.is_empty())?;
    Some(UserInfo {
        name,
        uid: user.uid.clone().unwrap_or_default(),
        groups: user.groups.clone().unwrap_or_default(),
        extra: user.extra.clone().unwrap_or_default(),
    })
}

/// Why a request is not authenticated: always a 401 "Unauthorized" to the client, the reason
/// is for the log.
#[derive(Debug, thiserror::Error)]
pub enum AuthnError {
    /// No client certificate, no usable token, and anonymous requests are off.
    #[error("no credentials (no client certificate or bearer token) and anonymous requests are disabled")]
    NoCredentials,
    /// The API server said the bearer token is not valid (or the answer was cached).
    #[error("invalid bearer token")]
    InvalidToken,
    /// The TokenReview failed; nothing was cached.
    #[error("cannot review the bearer token: {0}")]
    Review(#[source] ReviewError),
}

/// Bearer tokens through a [`TokenReviewer`], with upstream's cache.
pub struct TokenAuthenticator {
    reviewer: Arc<dyn TokenReviewer>,
    ttl: Duration,
    /// By SHA-256 of the token, so the tokens themselves are not kept.
    cache: TtlCache<[u8; 32], Option<UserInfo>>,
}

impl TokenAuthenticator {
    /// Reviews tokens with `reviewer`, reusing each answer for `ttl` (`cacheTTL`).
    pub fn new(reviewer: Arc<dyn TokenReviewer>, ttl: Duration) -> Self {
        Self {
            reviewer,
            ttl,
            cache: TtlCache::default(),
        }
    }

    async fn authenticate(&self, token: &str) -> Result<UserInfo, AuthnError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let answer = match self.cache.get(&key, Instant::now()) {
            Some(answer) => answer,
            None => {
                let status = self
                    .reviewer
                    .review(token)
                    .await
                    .map_err(AuthnError::Review)?;
                if let Some(error) = &status.error {
                    tracing::debug!(%error, "TokenReview: the token was not accepted");
                }
                let answer = reviewed_user(&status);
                self.cache
                    .insert(key, answer.clone(), self.ttl, Instant::now());
                answer
            }
        };
        answer
            .map(UserInfo::with_authenticated_group)
            .ok_or(AuthnError::InvalidToken)
    }
}

/// The authenticators of the secure port, tried in upstream's order.
pub struct Authenticator {
    /// Bearer tokens; `None` when `authentication.webhook.enabled` is false or standalone.
    pub tokens: Option<TokenAuthenticator>,
    /// `authentication.anonymous.enabled`.
    pub anonymous: bool,
}

impl Authenticator {
    /// Who sent a request that came over a connection with `peer` and carries `headers`.
    pub async fn authenticate(
        &self,
        peer: &PeerIdentity,
        headers: &HeaderMap,
    ) -> Result<UserInfo, AuthnError> {
        if let Some(user) = &peer.0 {
            return Ok(UserInfo::clone(user).with_authenticated_group());
        }
        if let (Some(tokens), Some(token)) = (&self.tokens, bearer_token(headers)) {
            return tokens.authenticate(token).await;
        }
        if self.anonymous {
            return Ok(UserInfo::new(ANONYMOUS_USER, &[UNAUTHENTICATED_GROUP]));
        }
        Err(AuthnError::NoCredentials)
    }
}

/// The token of an `Authorization: Bearer <token>` header; another scheme or an empty token
/// is no token, as upstream's `bearertoken` authenticator reads it.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests;
