//! The API objects a pod's volumes and environment read: configMaps, secrets, service-account
//! tokens and Services, through one [`ObjectSource`]. A leaf: `volumes` and `kuberuntime` ask
//! it without knowing whether an API server answers ([`crate::cluster::objects`]) or nobody
//! does ([`Standalone`], where static pods cannot name API objects, as upstream).
//!
//! Under the Node authorizer a kubelet may read a configMap or secret only by name, and only
//! when a pod bound to the node names it: the trait has no way to list them.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

/// What an [`ObjectSource`] call yields.
pub type ObjectFuture<'a, T> = BoxFuture<'a, Result<T, ObjectError>>;

/// The kinds of object a pod can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    /// A core/v1 ConfigMap.
    ConfigMap,
    /// A core/v1 Secret.
    Secret,
    /// A token of a ServiceAccount, from the TokenRequest API.
    ServiceAccountToken,
    /// The Services of a namespace (for service links).
    Services,
}

impl ObjectKind {
    /// The resource as upstream's kubelet names it in messages (`configmap "x" not found`).
    pub fn resource(self) -> &'static str {
        match self {
            ObjectKind::ConfigMap => "configmap",
            ObjectKind::Secret => "secret",
            ObjectKind::ServiceAccountToken => "serviceaccount",
            ObjectKind::Services => "services",
        }
    }

    fn what_needs_cluster_mode(self) -> &'static str {
        match self {
            ObjectKind::ConfigMap => "configMap volumes and env",
            ObjectKind::Secret => "secret volumes and env",
            ObjectKind::ServiceAccountToken => "service account token volumes",
            ObjectKind::Services => "service links",
        }
    }
}

/// Why an object could not be read, sorted by what the caller does about it: a missing
/// object may be `optional`, anything else is retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectError {
    /// The API server says the object does not exist (404).
    NotFound {
        /// What was asked for.
        kind: ObjectKind,
        /// The object's namespace.
        namespace: String,
        /// The object's name (the ServiceAccount's, for a token).
        name: String,
    },
    /// The API server refused (401/403): under the Node authorizer, an object no pod bound to
    /// this node names, or a ServiceAccount of a pod the API does not know on this node.
    Forbidden {
        /// What was asked for.
        kind: ObjectKind,
        /// The object's namespace.
        namespace: String,
        /// The object's name.
        name: String,
        /// What the API server said.
        message: String,
    },
    /// No usable answer: timeout, connection failure, a 5xx, an answer without the data.
    Unavailable {
        /// What was asked for.
        kind: ObjectKind,
        /// The object's namespace.
        namespace: String,
        /// The object's name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// The node runs without an API server (no `--kubeconfig`).
    NoApiServer {
        /// What was asked for.
        kind: ObjectKind,
    },
}

impl ObjectError {
    /// Whether the object does not exist (what `optional: true` forgives).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ObjectError::NotFound { .. })
    }
}

impl fmt::Display for ObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Tokens read as upstream's token manager words them.
        let token = |f: &mut fmt::Formatter<'_>| {
            if matches!(
                self,
                ObjectError::NotFound {
                    kind: ObjectKind::ServiceAccountToken,
                    ..
                } | ObjectError::Forbidden {
                    kind: ObjectKind::ServiceAccountToken,
                    ..
                } | ObjectError::Unavailable {
                    kind: ObjectKind::ServiceAccountToken,
                    ..
                }
            ) {
                f.write_str("failed to fetch token: ")
            } else {
                Ok(())
            }
        };
        match self {
            ObjectError::NotFound { kind, name, .. } => {
                token(f)?;
                write!(f, "{} {name:?} not found", kind.resource())
            }
            ObjectError::Forbidden {
                kind,
                namespace,
                name,
                message,
            } => {
                token(f)?;
                write!(
                    f,
                    "{} {namespace}/{name} is forbidden to this node: {message}",
                    kind.resource()
                )
            }
            ObjectError::Unavailable {
                kind,
                namespace,
                name,
                message,
            } => {
                token(f)?;
                write!(
                    f,
                    "cannot read {} {namespace}/{name}: {message}",
                    kind.resource()
                )
            }
            ObjectError::NoApiServer { kind } => write!(
                f,
                "{} need cluster mode (--kubeconfig): this node has no API server",
                kind.what_needs_cluster_mode()
            ),
        }
    }
}

impl std::error::Error for ObjectError {}

/// One projected `serviceAccountToken`: what the token is asked for. Tokens are cached by it
/// (with the pod's UID), as upstream's token manager keys them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TokenRequest {
    /// The pod's ServiceAccount (`spec.serviceAccountName`, `default` when unset).
    pub service_account: String,
    /// The audiences; empty means the API server's own.
    pub audiences: Vec<String>,
    /// The validity asked for (the projection's `expirationSeconds`, 3600 when unset).
    pub expiration_seconds: i64,
}

impl TokenRequest {
    /// The request a `serviceAccountToken` projection of `pod` makes.
    pub fn for_projection(
        pod: &Pod,
        projection: &k8s_openapi::api::core::v1::ServiceAccountTokenProjection,
    ) -> Self {
        Self {
            service_account: service_account(pod).to_string(),
            audiences: projection
                .audience
                .iter()
                .filter(|a| !a.is_empty())
                .cloned()
                .collect(),
            expiration_seconds: projection
                .expiration_seconds
                .unwrap_or(DEFAULT_TOKEN_EXPIRATION_SECONDS),
        }
    }
}

/// The API's default `expirationSeconds` of a projected token.
pub const DEFAULT_TOKEN_EXPIRATION_SECONDS: i64 = 3600;

/// The pod's ServiceAccount name (`default` when unset, as the API defaults it).
pub fn service_account(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.service_account_name.as_deref())
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
}

/// A token the TokenRequest API issued.
#[derive(Clone, PartialEq, Eq)]
pub struct ServiceAccountToken {
    /// The bearer token (a JWT).
    pub token: String,
    /// When the API server says it expires.
    pub expires: SystemTime,
}

impl fmt::Debug for ServiceAccountToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A token is a credential: never in a log line.
        f.debug_struct("ServiceAccountToken")
            .field("token", &"<redacted>")
            .field("expires", &self.expires)
            .finish()
    }
}

/// Where the pod's volumes and environment read API objects from.
///
/// Implementations cache as they see fit; callers ask on every pod sync, so that an updated
/// configMap reaches its volumes, and expect the answer to be cheap when nothing changed.
pub trait ObjectSource: Send + Sync {
    /// The configMap `namespace/name`.
    fn config_map<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> ObjectFuture<'a, Arc<ConfigMap>>;

    /// The secret `namespace/name`.
    fn secret<'a>(&'a self, namespace: &'a str, name: &'a str) -> ObjectFuture<'a, Arc<Secret>>;

    /// A token of the pod's ServiceAccount, bound to `pod` (kind, name, UID), as `request`
    /// asks.
    fn service_account_token<'a>(
        &'a self,
        pod: &'a Pod,
        request: &'a TokenRequest,
    ) -> ObjectFuture<'a, ServiceAccountToken>;

    /// The Services of `namespace`, for the service-link environment variables.
    fn services<'a>(&'a self, namespace: &'a str) -> ObjectFuture<'a, Arc<Vec<Service>>>;
}

/// The node without an API server: every call fails with [`ObjectError::NoApiServer`].
/// Admission refuses static pods whose volumes name API objects before they get here.
#[derive(Debug, Clone, Copy, Default)]
pub struct Standalone;

impl ObjectSource for Standalone {
    fn config_map<'a>(&'a self, _: &'a str, _: &'a str) -> ObjectFuture<'a, Arc<ConfigMap>> {
        Box::pin(std::future::ready(Err(ObjectError::NoApiServer {
            kind: ObjectKind::ConfigMap,
        })))
    }

    fn secret<'a>(&'a self, _: &'a str, _: &'a str) -> ObjectFuture<'a, Arc<Secret>> {
        Box::pin(std::future::ready(Err(ObjectError::NoApiServer {
            kind: ObjectKind::Secret,
        })))
    }

    fn service_account_token<'a>(
        &'a self,
        _: &'a Pod,
        _: &'a TokenRequest,
    ) -> ObjectFuture<'a, ServiceAccountToken> {
        Box::pin(std::future::ready(Err(ObjectError::NoApiServer {
            kind: ObjectKind::ServiceAccountToken,
        })))
    }

    fn services<'a>(&'a self, _: &'a str) -> ObjectFuture<'a, Arc<Vec<Service>>> {
        Box::pin(std::future::ready(Err(ObjectError::NoApiServer {
            kind: ObjectKind::Services,
        })))
    }
}

#[cfg(test)]
pub mod fake;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_upstream() {
        let missing = ObjectError::NotFound {
            kind: ObjectKind::ConfigMap,
            namespace: "ns".into(),
            name: "y".into(),
        };
        assert_eq!(missing.to_string(), r#"configmap "y" not found"#);
        assert!(missing.is_not_found());
        let token = ObjectError::Unavailable {
            kind: ObjectKind::ServiceAccountToken,
            namespace: "ns".into(),
            name: "default".into(),
            message: "no answer within 30s".into(),
        };
        assert_eq!(
            token.to_string(),
            "failed to fetch token: cannot read serviceaccount ns/default: no answer within 30s"
        );
        assert_eq!(
            ObjectError::NoApiServer {
                kind: ObjectKind::ConfigMap
            }
            .to_string(),
            "configMap volumes and env need cluster mode (--kubeconfig): this node has no API server"
        );
    }

    #[test]
    fn token_requests_default_as_the_api() {
        let pod = Pod::default();
        let request = TokenRequest::for_projection(
            &pod,
            &k8s_openapi::api::core::v1::ServiceAccountTokenProjection {
                audience: Some(String::new()),
                expiration_seconds: None,
                path: "token".into(),
            },
        );
        assert_eq!(request.service_account, "default");
        assert!(request.audiences.is_empty());
        assert_eq!(request.expiration_seconds, 3600);
        let token = ServiceAccountToken {
            token: "secret-jwt".into(),
            expires: SystemTime::UNIX_EPOCH,
        };
        assert!(!format!("{token:?}").contains("secret-jwt"));
    }
}
