//! The API server as the pods' [`ObjectSource`], over the main [`ApiClients`] client (its QPS
//! bucket and call deadline).
//!
//! ConfigMaps and secrets follow `configMapAndSecretChangeDetectionStrategy`, as upstream:
//! `Watch` (the default) reads each named object once and then keeps it by a watch of that
//! one object ([`watched`]); `Cache` serves a GET's answer for [`OBJECT_TTL`]
//! (`pkg/kubelet/util/manager/cache_based_manager.go`); `Get` reads on every use. Only
//! successful answers are kept, so an object created after a pod that needs it is seen on the
//! next retry. They are never listed: the Node authorizer lets a node read only the named
//! configMaps and secrets of pods bound to it.
//!
//! Tokens come from the TokenRequest API, cached and refreshed as upstream's token manager
//! ([`tokens`]).
//!
//! Services (for service links) come from a reflector store a watch of every Service keeps
//! (upstream's service informer); until its first list completes they are listed per
//! namespace with the same TTL, and a failed list serves the last good one.

mod tokens;
mod watched;

use super::{ApiClients, ApiError};
use crate::config::ChangeDetectionStrategy;
use crate::objects::{
    ObjectError, ObjectFuture, ObjectKind, ObjectSource, ServiceAccountToken, TokenRequest,
};
use crate::ttl_cache::TtlCache;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use kube::api::{Api, ListParams};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{debug, warn};

/// How long a configMap or secret (strategy `Cache`, upstream's default TTL) or a Service
/// list is served from the cache.
pub const OBJECT_TTL: Duration = Duration::from_secs(60);

/// A configMap or secret cache under each strategy: the watches, and the TTL answers.
type Kept<'a, K> = (
    &'a watched::Watched<K>,
    &'a TtlCache<(String, String), Arc<K>>,
);

/// The kube-rs [`ObjectSource`]; see the module documentation for its caching.
pub struct KubeObjectSource {
    clients: ApiClients,
    strategy: ChangeDetectionStrategy,
    /// How long a configMap or secret answer is reused (strategy `Cache`) and a Service list
    /// is (before the Service store has listed).
    ttl: Duration,
    watched_config_maps: watched::Watched<ConfigMap>,
    watched_secrets: watched::Watched<Secret>,
    config_maps: TtlCache<(String, String), Arc<ConfigMap>>,
    secrets: TtlCache<(String, String), Arc<Secret>>,
    services: TtlCache<String, Arc<Vec<Service>>>,
    /// Every Service of the cluster, kept by a watch as upstream's service informer, once
    /// [`KubeObjectSource::watch_services`] started it.
    service_store: Option<reflector::Store<Service>>,
    tokens: tokens::Tokens,
}

impl KubeObjectSource {
    /// A source over `clients.main` that keeps configMaps and secrets current by `strategy`.
    pub fn new(clients: ApiClients, strategy: ChangeDetectionStrategy) -> Self {
        Self {
            clients,
            strategy,
            ttl: OBJECT_TTL,
            watched_config_maps: Default::default(),
            watched_secrets: Default::default(),
            config_maps: Default::default(),
            secrets: Default::default(),
            services: Default::default(),
            service_store: None,
            tokens: Default::default(),
        }
    }

    /// Keeps every Service in a reflector store fed by a watch (kube-runtime's, with its
    /// default back-off), so a pod started right after a Service was created gets its
    /// environment variables; until the first list completes, Services are listed per
    /// namespace through the TTL cache. Needs a Tokio runtime.
    pub fn watch_services(mut self) -> Self {
        let (store, writer) = reflector::store();
        let api: Api<Service> = Api::all(self.clients.main.clone());
        let watcher = watcher::watcher(api, watcher::Config::default());
        let stream =
            super::watch_backoff::backed_off(reflector::reflector(writer, watcher), "services")
                .touched_objects();
        tokio::spawn(async move {
            futures::pin_mut!(stream);
            while let Some(event) = stream.next().await {
                if let Err(error) = event {
                    warn!(%error, "the Service watch failed; retrying");
                }
            }
        });
        self.service_store = Some(store);
        self
    }

    async fn get<K: watched::Watchable>(
        &self,
        (watched, cache): Kept<'_, K>,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<K>, ObjectError> {
        let key = (namespace.to_string(), name.to_string());
        match self.strategy {
            ChangeDetectionStrategy::Watch => match watched.lookup(namespace, name) {
                watched::Lookup::Found(object) => return Ok(object),
                watched::Lookup::Gone => {
                    return Err(ObjectError::NotFound {
                        kind,
                        namespace: key.0,
                        name: key.1,
                    })
                }
                watched::Lookup::Unknown => {}
            },
            ChangeDetectionStrategy::Cache => {
                if let Some(object) = cache.get(&key, Instant::now()) {
                    return Ok(object);
                }
            }
            ChangeDetectionStrategy::Get => {}
        }
        let api: Api<K> = Api::namespaced(self.clients.main.clone(), namespace);
        let object = through_graph_lag(|| self.clients.call(api.get(name)))
            .await
            .map_err(|e| object_error(kind, namespace, name, e))?;
        let object = Arc::new(object);
        match self.strategy {
            ChangeDetectionStrategy::Watch => watched.keep(&self.clients.main, object.clone()),
            ChangeDetectionStrategy::Cache => {
                cache.insert(key, object.clone(), self.ttl, Instant::now())
            }
            ChangeDetectionStrategy::Get => {}
        }
        debug!(
            kind = kind.resource(),
            namespace, name, "read from the API server"
        );
        Ok(object)
    }

    async fn list_services(&self, namespace: &str) -> Result<Arc<Vec<Service>>, ObjectError> {
        let ready = |store: &&reflector::Store<Service>| {
            futures::FutureExt::now_or_never(store.wait_until_ready()).is_some_and(|r| r.is_ok())
        };
        if let Some(store) = self.service_store.as_ref().filter(ready) {
            let list = store
                .state()
                .iter()
                .filter(|s| s.metadata.namespace.as_deref() == Some(namespace))
                .map(|s| Service::clone(s))
                .collect();
            return Ok(Arc::new(list));
        }
        let key = namespace.to_string();
        if let Some(list) = self.services.get(&key, Instant::now()) {
            return Ok(list);
        }
        let api: Api<Service> = Api::namespaced(self.clients.main.clone(), namespace);
        match self.clients.call(api.list(&ListParams::default())).await {
            Ok(list) => {
                let list = Arc::new(list.items);
                self.services
                    .insert(key, list.clone(), self.ttl, Instant::now());
                Ok(list)
            }
            Err(error) => {
                let stale = self.services.last(&key);
                match stale {
                    Some(list) => {
                        warn!(namespace, %error, "listing Services failed; serving the last list");
                        Ok(list)
                    }
                    None => Err(object_error(ObjectKind::Services, namespace, "", error)),
                }
            }
        }
    }
}

/// How long a refusal for "no relationship found" is retried before it counts. The Node
/// authorizer learns a new pod's references (its configMaps, secrets, service account) from
/// its own informer, so a node acting on the pod's watch event at once can be refused for a
/// few milliseconds; a reference the pod really lacks is still refused after this.
const GRAPH_LAG: Duration = Duration::from_secs(3);

/// Whether `error` is the Node authorizer not knowing (yet) that a pod of this node
/// references the object.
fn graph_lag(error: &ApiError) -> bool {
    error.code() == Some(403)
        && error
            .to_string()
            .contains("no relationship found between node")
}

/// Runs `call` again while the Node authorizer's graph lags behind the pod, for at most
/// [`GRAPH_LAG`]; any other answer, or the same one after that, is returned as it is.
async fn through_graph_lag<T, F, Fut>(mut call: F) -> Result<T, ApiError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ApiError>>,
{
    let deadline = tokio::time::Instant::now() + GRAPH_LAG;
    let mut backoff =
        crate::backoff::Doubling::new(Duration::from_millis(50), Duration::from_millis(800));
    loop {
        match call().await {
            Err(error)
                if graph_lag(&error) && tokio::time::Instant::now() + backoff.peek() < deadline =>
            {
                // Not the error text: it reads as a refusal, and this is not one yet.
                debug!("the Node authorizer has not linked the pod to the object yet; retrying");
                tokio::time::sleep(backoff.next_delay()).await;
            }
            other => return other,
        }
    }
}

/// An API error as the object error its caller sorts by.
fn object_error(kind: ObjectKind, namespace: &str, name: &str, error: ApiError) -> ObjectError {
    let (namespace, name) = (namespace.to_string(), name.to_string());
    match error.code() {
        Some(404) => ObjectError::NotFound {
            kind,
            namespace,
            name,
        },
        Some(401 | 403) => ObjectError::Forbidden {
            kind,
            namespace,
            name,
            message: error.to_string(),
        },
        _ => ObjectError::Unavailable {
            kind,
            namespace,
            name,
            message: error.to_string(),
        },
    }
}

impl ObjectSource for KubeObjectSource {
    fn config_map<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> ObjectFuture<'a, Arc<ConfigMap>> {
        let kept = (&self.watched_config_maps, &self.config_maps);
        Box::pin(self.get(kept, ObjectKind::ConfigMap, namespace, name))
    }

    fn secret<'a>(&'a self, namespace: &'a str, name: &'a str) -> ObjectFuture<'a, Arc<Secret>> {
        let kept = (&self.watched_secrets, &self.secrets);
        Box::pin(self.get(kept, ObjectKind::Secret, namespace, name))
    }

    fn service_account_token<'a>(
        &'a self,
        pod: &'a Pod,
        request: &'a TokenRequest,
    ) -> ObjectFuture<'a, ServiceAccountToken> {
        Box::pin(self.tokens.get(&self.clients, pod, request))
    }

    fn services<'a>(&'a self, namespace: &'a str) -> ObjectFuture<'a, Arc<Vec<Service>>> {
        Box::pin(self.list_services(namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_lagging_node_graph_is_waited_out_and_a_real_refusal_is_not() {
        let refusal = |message: &str| {
            ApiError::Status(Box::new(kube::core::Status {
                code: 403,
                message: message.into(),
                ..Default::default()
            }))
        };
        let lag =
            "configmaps \"x\" is forbidden: no relationship found between node 'n' and this object";
        let mut calls = 0;
        let answer = through_graph_lag(|| {
            calls += 1;
            let result = if calls < 3 {
                Err(refusal(lag))
            } else {
                Ok(calls)
            };
            async move { result }
        })
        .await;
        assert_eq!(answer.ok(), Some(3), "retried until the graph caught up");

        let mut calls = 0;
        let answer: Result<(), _> = through_graph_lag(|| {
            calls += 1;
            async { Err(refusal("configmaps is forbidden: RBAC says no")) }
        })
        .await;
        assert!(answer.is_err());
        assert_eq!(calls, 1, "another refusal is not retried");

        let started = tokio::time::Instant::now();
        let answer: Result<(), _> = through_graph_lag(|| async { Err(refusal(lag)) }).await;
        assert!(
            answer.is_err(),
            "a reference the pod lacks is refused in the end"
        );
        assert!(started.elapsed() <= GRAPH_LAG, "{:?}", started.elapsed());
    }

    #[test]
    fn api_errors_sort_by_what_the_caller_does() {
        let status = |code: u16| {
            ApiError::Status(Box::new(kube::core::Status {
                code,
                message: format!("code {code}"),
                ..Default::default()
            }))
        };
        assert!(object_error(ObjectKind::ConfigMap, "ns", "x", status(404)).is_not_found());
        assert_eq!(
            object_error(ObjectKind::ConfigMap, "ns", "x", status(404)).to_string(),
            r#"configmap "x" not found"#
        );
        assert!(matches!(
            object_error(ObjectKind::Secret, "ns", "x", status(403)),
            ObjectError::Forbidden { .. }
        ));
        assert!(matches!(
            object_error(
                ObjectKind::Secret,
                "ns",
                "x",
                ApiError::Timeout(Duration::from_secs(1))
            ),
            ObjectError::Unavailable { .. }
        ));
    }
}
