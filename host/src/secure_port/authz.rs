//! What a caller may do: upstream's request → attributes mapping
//! (`pkg/kubelet/server/auth.go`, `GetRequestAttributes`, with `KubeletFineGrainedAuthz`) and
//! the authorizers of `authorization.mode`.
//!
//! A request to the secure port is a request on the Node object: verb from the HTTP method,
//! resource `nodes`, name the node's, and a subresource from the path. `/stats` is `stats`,
//! `/metrics` (and below) `metrics`, `/logs` `log`, `/checkpoint` `checkpoint`, everything
//! else `proxy`; `/pods`, `/healthz`, `/configz`, `/statusz` and `/runningpods` are first asked
//! as their own subresource (`pods`, `healthz`, ...) and then as `proxy`. One allowed
//! subresource is enough.

use super::authn::UserInfo;
use super::review::ReviewError;
use crate::ttl_cache::TtlCache;
use futures::future::BoxFuture;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The group allowed everything by the standalone rule (and by the API server's RBAC).
pub const MASTERS_GROUP: &str = "system:masters";

/// One set of authorization attributes of a request (upstream's `AttributesRecord` for a
/// kubelet request: API group "", version v1, resource `nodes`, no namespace).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Attributes {
    /// `get`, `create`, `update`, `patch`, `delete`, or "" for any other method.
    pub verb: &'static str,
    /// Always `nodes`.
    pub resource: &'static str,
    /// `stats`, `metrics`, `log`, `checkpoint`, `pods`, `healthz`, `configz`, `statusz` or `proxy`.
    pub subresource: &'static str,
    /// The node's name.
    pub name: String,
}

/// Whether `path` is `prefix` or below it (upstream's `isSubpath`).
fn is_subpath(path: &str, prefix: &str) -> bool {
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The attributes to authorize for `method` on `path`, in the order upstream asks them.
pub fn request_attributes(method: &str, path: &str, node_name: &str) -> Vec<Attributes> {
    let verb = match method {
        "POST" => "create",
        "GET" => "get",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        _ => "",
    };
    let mut subresources = Vec::with_capacity(2);
    let fine_grained = [
        ("/pods", "pods"),
        ("/healthz", "healthz"),
        ("/configz", "configz"),
        ("/statusz", "statusz"),
        ("/runningpods/", "pods"),
    ];
    if let Some((_, subresource)) = fine_grained.iter().find(|(p, _)| is_subpath(path, p)) {
        subresources.push(*subresource);
    }
    let coarse = [
        ("/stats/", "stats"),
        ("/metrics", "metrics"),
        ("/logs/", "log"),
        ("/spec/", "spec"),
        ("/checkpoint/", "checkpoint"),
    ];
    subresources.push(
        coarse
            .iter()
            .find(|(p, _)| is_subpath(path, p))
            .map_or("proxy", |(_, s)| *s),
    );
    subresources
        .into_iter()
        .map(|subresource| Attributes {
            verb,
            resource: "nodes",
            subresource,
            name: node_name.to_string(),
        })
        .collect()
}

/// Asks whether a user may do something (the API server's SubjectAccessReview,
/// `authorization.k8s.io/v1`); a trait so the authorizer is tested without an API server.
pub trait AccessReviewer: Send + Sync {
    /// The API server's answer to `spec`.
    fn review<'a>(
        &'a self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'a, Result<SubjectAccessReviewStatus, ReviewError>>;
}

/// The SubjectAccessReview upstream's webhook authorizer sends for `user` and `attributes`.
pub fn access_review_spec(user: &UserInfo, attributes: &Attributes) -> SubjectAccessReviewSpec {
    SubjectAccessReviewSpec {
        user: Some(user.name.clone()),
        uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
        groups: Some(user.groups.clone()),
        extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
        resource_attributes: Some(ResourceAttributes {
            verb: Some(attributes.verb.to_string()),
            version: Some("v1".into()),
            resource: Some(attributes.resource.to_string()),
            subresource: Some(attributes.subresource.to_string()),
            name: Some(attributes.name.clone()),
            // The API group and namespace are "" (left out, as Go's omitempty does).
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// SubjectAccessReviews with upstream's cache: "allowed" for `cacheAuthorizedTTL`, anything
/// else for `cacheUnauthorizedTTL`; a failed review is not cached.
pub struct WebhookAuthorizer {
    reviewer: Arc<dyn AccessReviewer>,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    cache: TtlCache<(UserInfo, Attributes), bool>,
}

impl WebhookAuthorizer {
    /// Asks `reviewer`, caching as `authorization.webhook` says.
    pub fn new(
        reviewer: Arc<dyn AccessReviewer>,
        allowed_ttl: Duration,
        denied_ttl: Duration,
    ) -> Self {
        Self {
            reviewer,
            allowed_ttl,
            denied_ttl,
            cache: TtlCache::default(),
        }
    }

    async fn authorize(
        &self,
        user: &UserInfo,
        attributes: &Attributes,
    ) -> Result<bool, ReviewError> {
        let key = (user.clone(), attributes.clone());
        if let Some(allowed) = self.cache.get(&key, Instant::now()) {
            return Ok(allowed);
        }
        let status = self
            .reviewer
            .review(access_review_spec(user, attributes))
            .await?;
        if let Some(error) = &status.evaluation_error {
            tracing::debug!(user = %user.name, subresource = attributes.subresource, %error, "SubjectAccessReview evaluation error");
        }
        // "No opinion" (neither allowed nor denied) is no permission for the kubelet either.
        let allowed = status.allowed;
        let ttl = if allowed {
            self.allowed_ttl
        } else {
            self.denied_ttl
        };
        self.cache.insert(key, allowed, ttl, Instant::now());
        Ok(allowed)
    }
}

/// The authorizer of the secure port, from `authorization.mode` and the node's mode.
pub enum Authorizer {
    /// `AlwaysAllow`: every authenticated request.
    AlwaysAllow,
    /// `Webhook` in cluster mode: the API server decides.
    Webhook(WebhookAuthorizer),
    /// `Webhook` standalone, where no API server can be asked: members of `system:masters`
    /// may do everything, nobody else anything (the README documents the rule).
    LocalMasters,
}

impl Authorizer {
    /// Whether `user` may do what `attributes` describe.
    pub async fn authorize(
        &self,
        user: &UserInfo,
        attributes: &Attributes,
    ) -> Result<bool, ReviewError> {
        match self {
            Authorizer::AlwaysAllow => Ok(true),
            Authorizer::LocalMasters => Ok(user.groups.iter().any(|g| g == MASTERS_GROUP)),
            Authorizer::Webhook(webhook) => webhook.authorize(user, attributes).await,
        }
    }
}

#[cfg(test)]
mod tests;
