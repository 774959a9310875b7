//! The filter in front of every route of the secure port (upstream's `InstallAuthFilter`):
//! authenticate, map the request to attributes, authorize any one of them, or answer
//! 401 `Unauthorized`, 403 `Forbidden (user=..., verb=..., resource=..., subresource(s)=[...])`
//! or 500 `Authorization error (...)` with upstream's texts. A refused request costs the
//! check and nothing else: it never reaches a handler.

use super::authn::{Authenticator, PeerIdentity, UserInfo};
use super::authz::{request_attributes, Authorizer};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tracing::{debug, warn};

/// Authentication and authorization of one node's secure port.
pub struct KubeletAuth {
    /// Who is calling.
    pub authenticator: Authenticator,
    /// What they may do.
    pub authorizer: Authorizer,
    /// The node's name: every request is about this Node.
    pub node_name: String,
}

/// The authenticated user of a request that passed the filter, in its extensions.
#[derive(Debug, Clone)]
pub struct Caller(pub Arc<UserInfo>);

/// axum middleware: lets a request through only when it is authenticated and authorized.
pub async fn filter(
    State(auth): State<Arc<KubeletAuth>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<PeerIdentity>()
        .cloned()
        .unwrap_or_default();
    let user = match auth
        .authenticator
        .authenticate(&peer, request.headers())
        .await
    {
        Ok(user) => user,
        Err(error) => {
            debug!(path = %request.uri().path(), %error, "secure port: unauthorized");
            return (StatusCode::UNAUTHORIZED, "Unauthorized").into_response();
        }
    };
    let attributes = request_attributes(
        request.method().as_str(),
        request.uri().path(),
        &auth.node_name,
    );
    let mut allowed = false;
    for attribute in &attributes {
        match auth.authorizer.authorize(&user, attribute).await {
            Ok(true) => {
                allowed = true;
                break;
            }
            Ok(false) => {}
            Err(error) => {
                warn!(user = %user.name, verb = attribute.verb, subresource = attribute.subresource, %error, "secure port: authorization error");
                let message = format!(
                    "Authorization error (user={}, verb={}, resource={}, subresource={})",
                    user.name, attribute.verb, attribute.resource, attribute.subresource
                );
                return (StatusCode::INTERNAL_SERVER_ERROR, message).into_response();
            }
        }
    }
    if !allowed {
        let subresources: Vec<&str> = attributes.iter().map(|a| a.subresource).collect();
        let (verb, resource) = attributes
            .first()
            .map_or(("", "nodes"), |a| (a.verb, a.resource));
        debug!(user = %user.name, verb, ?subresources, "secure port: forbidden");
        // Go's %v of a []string: [pods proxy].
        let message = format!(
            "Forbidden (user={}, verb={verb}, resource={resource}, subresource(s)=[{}])\n",
            user.name,
            subresources.join(" ")
        );
        return (StatusCode::FORBIDDEN, message).into_response();
    }
    request.extensions_mut().insert(Caller(Arc::new(user)));
    next.run(request).await
}
