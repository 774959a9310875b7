//! The kubelet's authenticated HTTPS port (`port`, default 10250): what the API server calls
//! for `kubectl logs` (and exec, attach, port-forward and the stats, which other modules add
//! through the `extra` router), and what a node administrator reaches with a client
//! certificate. Every route sits behind the same filter: TLS with an optional client
//! certificate, authentication (certificate, bearer token via TokenReview, or anonymous if
//! enabled) and authorization (SubjectAccessReview, `AlwaysAllow`, or standalone's local rule:
//! members of `system:masters` only).
//!
//! [`SecurePort::new`] resolves the certificates, the authenticator and the authorizer from
//! the configuration; [`SecurePort::serve`] binds and serves the routes.

pub mod authn;
pub mod authz;
pub mod filter;
pub mod handlers;
pub mod listener;
pub mod review;
pub mod tls;

use crate::cluster::ApiClients;
use crate::config::kubelet::KubeletAuthorizationMode;
use crate::config::{KubeletConfiguration, NodeConfig};
use crate::metrics::http::ServerType;
use crate::server::{self, ServerState};
use authn::{Authenticator, TokenAuthenticator, TokenReviewer};
use authz::{AccessReviewer, Authorizer, WebhookAuthorizer};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use filter::KubeletAuth;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use tracing::{info, warn};

/// Why the secure port could not start.
#[derive(Debug, thiserror::Error)]
pub enum SecurePortError {
    /// The serving certificate or the client CAs could not be loaded or made.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// `address:port` could not be bound, usually because the port is taken.
    #[error("cannot serve the secure port (`port`) on {addr}: {source}")]
    Bind {
        /// The address that was refused.
        addr: SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}

/// The secure port, ready to serve: its address, TLS config, filter and `/configz` document.
pub struct SecurePort {
    addr: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
    auth: Arc<KubeletAuth>,
    configz: Arc<serde_json::Value>,
}

/// The API server's reviews, in cluster mode.
pub struct Reviewers {
    /// TokenReview, for bearer tokens.
    pub tokens: Arc<dyn TokenReviewer>,
    /// SubjectAccessReview, for `authorization.mode: Webhook`.
    pub access: Arc<dyn AccessReviewer>,
}

/// The filter `kubelet` asks for on node `node_name`; `reviewers` is the API server (cluster
/// mode) or `None` (standalone: no bearer tokens, the local authorization rule).
pub fn kubelet_auth(
    kubelet: &KubeletConfiguration,
    node_name: &str,
    reviewers: Option<Reviewers>,
) -> KubeletAuth {
    let authentication = &kubelet.authentication;
    let tokens = match (&reviewers, authentication.webhook.enabled) {
        (Some(reviewers), true) => Some(TokenAuthenticator::new(
            reviewers.tokens.clone(),
            authentication.webhook.cache_ttl,
        )),
        (None, true) => {
            info!("secure port: bearer tokens are not accepted standalone (no API server to review them)");
            None
        }
        (_, false) => None,
    };
    let webhook = &kubelet.authorization.webhook;
    let authorizer = match (kubelet.authorization.mode, reviewers) {
        (KubeletAuthorizationMode::AlwaysAllow, _) => Authorizer::AlwaysAllow,
        (KubeletAuthorizationMode::Webhook, Some(reviewers)) => {
            Authorizer::Webhook(WebhookAuthorizer::new(
                reviewers.access,
                webhook.cache_authorized_ttl,
                webhook.cache_unauthorized_ttl,
            ))
        }
        (KubeletAuthorizationMode::Webhook, None) => Authorizer::LocalMasters,
    };
    KubeletAuth {
        authenticator: Authenticator {
            tokens,
            anonymous: authentication.anonymous.enabled,
        },
        authorizer,
        node_name: node_name.to_string(),
    }
}

/// `/configz`'s document: upstream's shape, with the serving certificate's files filled in as
/// upstream fills in the generated ones.
fn configz(
    kubelet: &KubeletConfiguration,
    certificate: &tls::ServingCertificate,
) -> serde_json::Value {
    let mut document = serde_json::to_value(kubelet).unwrap_or_default();
    if let Some(fields) = document.as_object_mut() {
        fields.insert(
            "tlsCertFile".into(),
            certificate.cert_file.display().to_string().into(),
        );
        fields.insert(
            "tlsPrivateKeyFile".into(),
            certificate.key_file.display().to_string().into(),
        );
    }
    serde_json::json!({ "kubeletconfig": document })
}

impl SecurePort {
    /// Loads (or makes) the serving certificate, reads the client CAs and builds the filter
    /// for `config`; `clients` are the API clients of cluster mode (`None` standalone).
    pub fn new(config: &NodeConfig, clients: Option<&ApiClients>) -> Result<Self, SecurePortError> {
        let reviewers = clients.map(|clients| {
            let reviews = Arc::new(review::ApiReviews(clients.clone()));
            Reviewers {
                tokens: reviews.clone(),
                access: reviews,
            }
        });
        Self::with_reviewers(config, reviewers)
    }

    /// As [`SecurePort::new`], with the reviews given (tests use fakes).
    pub fn with_reviewers(
        config: &NodeConfig,
        reviewers: Option<Reviewers>,
    ) -> Result<Self, SecurePortError> {
        let kubelet = &config.kubelet;
        let certificate = tls::serving_certificate(
            kubelet,
            &config.cert_dir,
            &config.node_name,
            &[config.node_ip],
        )?;
        let configz = Arc::new(configz(kubelet, &certificate));
        let client_ca = kubelet
            .authentication
            .x509
            .client_ca_file
            .as_deref()
            .map(Path::new);
        let tls = tls::server_config(certificate, client_ca)?;
        let auth = kubelet_auth(kubelet, &config.node_name, reviewers);
        if client_ca.is_none()
            && auth.authenticator.tokens.is_none()
            && !auth.authenticator.anonymous
        {
            warn!("secure port: no authentication.x509.clientCAFile and no bearer tokens: every request will get 401");
        }
        // Validated when the config was loaded.
        let ip: IpAddr = kubelet
            .address
            .parse()
            .unwrap_or(IpAddr::from([0, 0, 0, 0]));
        Ok(Self {
            addr: SocketAddr::new(ip, kubelet.port),
            tls,
            auth: Arc::new(auth),
            configz,
        })
    }

    /// The secure port's routes (`/pods`, `/healthz`, `/configz`, `/metrics`, `/metrics/probes`,
    /// `/containerLogs/...`) merged with `extra` (exec, attach, port-forward, stats: routers
    /// with their state applied), every one of them, and unknown paths too, behind the filter.
    /// `extra` must not repeat a path of these (axum refuses overlapping routes).
    pub fn app(&self, state: ServerState, extra: Router) -> Router {
        let logs = Router::new()
            .route(
                "/containerLogs/{namespace}/{pod}/{container}",
                get(handlers::container_logs),
            )
            .with_state(state.clone());
        let configz = Router::new()
            .route("/configz", get(handlers::configz))
            .with_state(self.configz.clone());
        server::shared_routes()
            .with_state(state)
            .merge(logs)
            .merge(configz)
            .merge(extra)
            .fallback(|| async { (StatusCode::NOT_FOUND, "404 page not found\n") })
            .layer(axum::middleware::from_fn_with_state(
                self.auth.clone(),
                filter::filter,
            ))
            .layer(axum::middleware::from_fn(|request, next| {
                crate::metrics::http::track(ServerType::ReadWrite, request, next)
            }))
    }

    /// Binds `address:port` and serves [`SecurePort::app`] in the background; returns the
    /// address bound and the accept loop's task.
    pub async fn serve(
        self,
        state: ServerState,
        extra: Router,
    ) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), SecurePortError> {
        let app = self.app(state, extra);
        let listener = tokio::net::TcpListener::bind(self.addr)
            .await
            .map_err(|source| SecurePortError::Bind {
                addr: self.addr,
                source,
            })?;
        let addr = listener.local_addr().unwrap_or(self.addr);
        info!(%addr, "serving the secure port");
        Ok((
            addr,
            tokio::spawn(listener::accept_loop(listener, self.tls, app)),
        ))
    }
}

#[cfg(test)]
mod tests;
