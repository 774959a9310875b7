//! An in-memory [`ObjectSource`] for unit tests of volumes and the environment.

use super::{
    ObjectError, ObjectFuture, ObjectKind, ObjectSource, ServiceAccountToken, TokenRequest,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Objects by `(namespace, name)`; what is not there is not found.
#[derive(Default)]
pub struct FakeObjects {
    config_maps: Mutex<HashMap<(String, String), Arc<ConfigMap>>>,
    secrets: Mutex<HashMap<(String, String), Arc<Secret>>>,
    services: Mutex<HashMap<String, Arc<Vec<Service>>>>,
    token: Mutex<Option<Result<String, ObjectError>>>,
    /// Every token request, in order.
    pub token_requests: Mutex<Vec<(String, TokenRequest)>>,
}

fn meta(namespace: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: Some(namespace.into()),
        name: Some(name.into()),
        ..Default::default()
    }
}

fn key(namespace: &str, name: &str) -> (String, String) {
    (namespace.to_string(), name.to_string())
}

impl FakeObjects {
    /// Stores (or replaces) configMap `namespace/name` with string `data`.
    pub fn put_config_map(&self, namespace: &str, name: &str, data: &[(&str, &str)]) {
        let map = ConfigMap {
            metadata: meta(namespace, name),
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        };
        self.config_maps
            .lock()
            .insert(key(namespace, name), Arc::new(map));
    }

    /// Stores a whole configMap (for `binaryData`).
    pub fn put_config_map_object(&self, map: ConfigMap) {
        let k = key(
            map.metadata.namespace.as_deref().unwrap_or(""),
            map.metadata.name.as_deref().unwrap_or(""),
        );
        self.config_maps.lock().insert(k, Arc::new(map));
    }

    /// Deletes configMap `namespace/name`.
    pub fn remove_config_map(&self, namespace: &str, name: &str) {
        self.config_maps.lock().remove(&key(namespace, name));
    }

    /// Stores (or replaces) secret `namespace/name` with byte `data`.
    pub fn put_secret(&self, namespace: &str, name: &str, data: &[(&str, &[u8])]) {
        let secret = Secret {
            metadata: meta(namespace, name),
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.to_vec())))
                    .collect(),
            ),
            ..Default::default()
        };
        self.secrets
            .lock()
            .insert(key(namespace, name), Arc::new(secret));
    }

    /// Sets the Services of `namespace`.
    pub fn put_services(&self, namespace: &str, services: Vec<Service>) {
        self.services
            .lock()
            .insert(namespace.to_string(), Arc::new(services));
    }

    /// What every token request answers from now on (a token valid for an hour, or an
    /// error); unset, requests answer `token-<serviceaccount>`.
    pub fn set_token(&self, answer: Result<String, ObjectError>) {
        *self.token.lock() = Some(answer);
    }
}

impl ObjectSource for FakeObjects {
    fn config_map<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> ObjectFuture<'a, Arc<ConfigMap>> {
        let found = self.config_maps.lock().get(&key(namespace, name)).cloned();
        Box::pin(std::future::ready(found.ok_or_else(|| {
            ObjectError::NotFound {
                kind: ObjectKind::ConfigMap,
                namespace: namespace.into(),
                name: name.into(),
            }
        })))
    }

    fn secret<'a>(&'a self, namespace: &'a str, name: &'a str) -> ObjectFuture<'a, Arc<Secret>> {
        let found = self.secrets.lock().get(&key(namespace, name)).cloned();
        Box::pin(std::future::ready(found.ok_or_else(|| {
            ObjectError::NotFound {
                kind: ObjectKind::Secret,
                namespace: namespace.into(),
                name: name.into(),
            }
        })))
    }

    fn service_account_token<'a>(
        &'a self,
        pod: &'a Pod,
        request: &'a TokenRequest,
    ) -> ObjectFuture<'a, ServiceAccountToken> {
        self.token_requests.lock().push((
            pod.metadata.uid.clone().unwrap_or_default(),
            request.clone(),
        ));
        let answer = self
            .token
            .lock()
            .clone()
            .unwrap_or_else(|| Ok(format!("token-{}", request.service_account)));
        Box::pin(std::future::ready(answer.map(|token| {
            ServiceAccountToken {
                token,
                expires: SystemTime::now() + Duration::from_secs(3600),
            }
        })))
    }

    fn services<'a>(&'a self, namespace: &'a str) -> ObjectFuture<'a, Arc<Vec<Service>>> {
        let found = self.services.lock().get(namespace).cloned();
        Box::pin(std::future::ready(Ok(found.unwrap_or_default())))
    }
}
