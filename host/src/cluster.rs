//! Cluster mode: wasmlet as a node of a real control plane. The API server is one more pod
//! source beside the static directory, one more status sink beside `/pods`, one more place
//! events go, and the home of the Node object and its Lease. Everything here talks to the API
//! server as the node identity of `--kubeconfig` (`system:node:<name>` under the Node
//! authorizer and NodeRestriction) and never needs more.

pub mod events;
pub mod lease;
pub mod mirror;
pub mod node;
pub mod objects;
pub mod pod_source;
pub mod status_sync;
pub mod watch_backoff;

pub use objects::KubeObjectSource;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Upstream's heartbeat client timeout: `min(nodeStatusUpdateFrequency, leaseDuration)`, at
/// most 10 s with the defaults. Every call wasmlet makes to the API server has a deadline.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(10);
/// Deadline of any other single API call (not of watches, which the server ends itself).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Why cluster mode could not start.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The kubeconfig could not be read or parsed.
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig {
        /// The `--kubeconfig` path.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// A client could not be built from it (bad certificate, bad server URL).
    #[error("kubeconfig {path}: cannot build an API client: {message}")]
    Client {
        /// The `--kubeconfig` path.
        path: String,
        /// What kube-rs said.
        message: String,
    },
}

/// The API clients of the node, as upstream has three: the main one (throttled at
/// `kubeAPIQPS`/`kubeAPIBurst`), the heartbeat one (Lease and node status: unthrottled, with a
/// short deadline, so a slow API server never delays the heartbeat behind pod traffic) and the
/// events one (throttled at `eventRecordQPS`/`eventBurst`).
#[derive(Clone)]
pub struct ApiClients {
    /// Pods, statuses, configMaps, secrets, tokens, mirror pods.
    pub main: kube::Client,
    /// Lease renewals and node status.
    pub heartbeat: kube::Client,
    /// The node's name as registered.
    pub node_name: String,
    main_limit: Option<Arc<DefaultDirectRateLimiter>>,
    event_limit: Option<Arc<DefaultDirectRateLimiter>>,
}

/// A token bucket of `qps` per second with `burst`; `None` when `qps` is 0 (unlimited).
fn limiter(qps: i32, burst: i32) -> Option<Arc<DefaultDirectRateLimiter>> {
    let qps = NonZeroU32::new(u32::try_from(qps).ok()?)?;
    let burst = NonZeroU32::new(u32::try_from(burst).unwrap_or(0)).unwrap_or(qps);
    Some(Arc::new(RateLimiter::direct(
        Quota::per_second(qps).allow_burst(burst),
    )))
}

impl ApiClients {
    /// Reads `kubeconfig` and builds the clients; nothing is sent yet.
    pub async fn connect(
        kubeconfig: &Path,
        node_name: &str,
        kubelet: &crate::config::KubeletConfiguration,
    ) -> Result<Self, ConnectError> {
        let path = kubeconfig.display().to_string();
        let file = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| {
            ConnectError::Kubeconfig {
                path: path.clone(),
                message: e.to_string(),
            }
        })?;
        let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
            .await
            .map_err(|e| ConnectError::Kubeconfig {
                path: path.clone(),
                message: e.to_string(),
            })?;
        let build = |mut config: kube::Config, timeout: Option<Duration>| {
            config.connect_timeout = Some(HEARTBEAT_TIMEOUT);
            config.read_timeout = timeout;
            config.write_timeout = timeout;
            let host = config
                .cluster_url
                .authority()
                .map(|a| a.to_string())
                .unwrap_or_default();
            kube::client::ClientBuilder::try_from(config)
                .map(|builder| {
                    builder
                        .with_layer(&crate::metrics::rest_client::RestClientMetricsLayer::new(
                            host,
                        ))
                        .build()
                })
                .map_err(|e| ConnectError::Client {
                    path: path.clone(),
                    message: e.to_string(),
                })
        };
        // Watches of the main client stay open for minutes: no read deadline there; single
        // calls get theirs from `call`.
        let main = build(config.clone(), None)?;
        let heartbeat = build(config, Some(HEARTBEAT_TIMEOUT))?;
        Ok(Self {
            main,
            heartbeat,
            node_name: node_name.to_string(),
            main_limit: limiter(kubelet.kube_api_qps, kubelet.kube_api_burst),
            event_limit: limiter(kubelet.event_record_qps, kubelet.event_burst),
        })
    }

    /// Waits for a token of the main client's bucket (`kubeAPIQPS`/`kubeAPIBurst`).
    pub async fn throttle(&self) {
        if let Some(limit) = &self.main_limit {
            limit.until_ready().await;
        }
    }

    /// Takes a token of the events bucket without waiting; `false` means the event is dropped,
    /// as upstream's event rate limiter drops rather than queues.
    pub fn event_allowed(&self) -> bool {
        self.event_limit.as_ref().is_none_or(|l| l.check().is_ok())
    }

    /// Runs one throttled call of the main client with [`CALL_TIMEOUT`].
    pub async fn call<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ApiError> {
        self.throttle().await;
        within(CALL_TIMEOUT, call).await
    }
}

/// Upstream's back-off for the node's own API retries (registration, the Lease): 100 ms
/// doubling to 7 s.
pub fn api_backoff() -> crate::backoff::Doubling {
    crate::backoff::Doubling::new(Duration::from_millis(100), Duration::from_secs(7))
}

/// Runs one API call with `deadline`; no answer in time is [`ApiError::Timeout`].
pub async fn within<T>(
    deadline: Duration,
    call: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, ApiError> {
    match tokio::time::timeout(deadline, call).await {
        Ok(result) => result.map_err(ApiError::from),
        Err(_) => Err(ApiError::Timeout(deadline)),
    }
}

/// A failed API call, sorted by what the caller does about it.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The API server answered with a status (404, 409, 403, 422...).
    #[error("{} {}: {}", .0.code, .0.reason, .0.message)]
    Status(Box<kube::core::Status>),
    /// No answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The connection failed or the answer could not be read (boxed: `kube::Error` is large,
    /// and every API call returns this type).
    #[error("{0}")]
    Transport(#[source] Box<kube::Error>),
    /// The Node could not be built yet: the container runtime has not answered.
    #[error("the container runtime has not answered yet")]
    RuntimeNotReady,
}

impl ApiError {
    /// The HTTP status code the API server answered with, if it answered.
    pub fn code(&self) -> Option<u16> {
        match self {
            ApiError::Status(status) => Some(status.code),
            _ => None,
        }
    }

    /// Whether the object does not exist (404).
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// Whether the object exists already or changed under us (409).
    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }
}

impl From<kube::Error> for ApiError {
    fn from(error: kube::Error) -> Self {
        match error {
            kube::Error::Api(status) => ApiError::Status(status),
            other => ApiError::Transport(Box::new(other)),
        }
    }
}

/// The node's side of the cluster, run once the runtime has answered: register the Node,
/// then keep its Lease, its status and the API's view of it (`node_tx`) for as long as the
/// process runs.
pub async fn run_node(
    clients: ApiClients,
    view: Arc<crate::node_status::NodeView>,
    kubelet: crate::config::KubeletConfiguration,
    events: Arc<dyn crate::events::EventRecorder>,
    node_tx: tokio::sync::watch::Sender<Option<k8s_openapi::api::core::v1::Node>>,
    uid_tx: tokio::sync::watch::Sender<Option<String>>,
) {
    let uid_rx = uid_tx.subscribe();
    if !kubelet.register_node {
        tracing::info!("registerNode is false: the Node is expected to exist");
    }
    tokio::spawn(lease::run(
        clients.clone(),
        kubelet.node_lease_duration_seconds,
        uid_rx,
    ));
    tokio::spawn(node::watch_node(clients.clone(), node_tx));
    let registered = if kubelet.register_node {
        node::register(&clients, &view).await
    } else {
        node::wait_for_node(&clients).await
    };
    let _ = uid_tx.send(registered.metadata.uid.clone());
    node::run_status(
        clients,
        view,
        registered,
        kubelet.node_status_update_frequency,
        kubelet.node_status_report_frequency,
        events,
    )
    .await;
}
