//! The pod-level resolve step: every configMap, secret and token the pod's volumes name is
//! asked of the [`ObjectSource`] before the synchronous writer runs, so that the writer (and
//! its tests) never touch the network. Each answer is kept as it came: whether a missing
//! object is an error depends on the volume's `optional`.

use super::{ProjectionKind, VolumeKind};
use crate::objects::{ObjectError, ObjectKind, ObjectSource, ServiceAccountToken, TokenRequest};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The API objects the volumes of one pod name, as the source answered in this sync.
#[derive(Debug, Default)]
pub struct FetchedObjects {
    namespace: String,
    config_maps: HashMap<String, Result<Arc<ConfigMap>, ObjectError>>,
    secrets: HashMap<String, Result<Arc<Secret>, ObjectError>>,
    tokens: HashMap<TokenRequest, Result<ServiceAccountToken, ObjectError>>,
}

impl FetchedObjects {
    fn not_fetched(&self, kind: ObjectKind, name: &str) -> ObjectError {
        ObjectError::Unavailable {
            kind,
            namespace: self.namespace.clone(),
            name: name.into(),
            message: "not fetched before the volume was written".into(),
        }
    }

    /// ConfigMap `name` of the pod's namespace.
    pub(super) fn config_map(&self, name: &str) -> Result<Arc<ConfigMap>, ObjectError> {
        self.config_maps
            .get(name)
            .cloned()
            .unwrap_or_else(|| Err(self.not_fetched(ObjectKind::ConfigMap, name)))
    }

    /// Secret `name` of the pod's namespace.
    pub(super) fn secret(&self, name: &str) -> Result<Arc<Secret>, ObjectError> {
        self.secrets
            .get(name)
            .cloned()
            .unwrap_or_else(|| Err(self.not_fetched(ObjectKind::Secret, name)))
    }

    /// The token `request` was answered with.
    pub(super) fn token(&self, request: &TokenRequest) -> Result<ServiceAccountToken, ObjectError> {
        self.tokens.get(request).cloned().unwrap_or_else(|| {
            Err(self.not_fetched(ObjectKind::ServiceAccountToken, &request.service_account))
        })
    }
}

/// Asks `objects` for everything the volumes of `pod` name, each object once, concurrently.
pub async fn fetch(pod: &Pod, objects: &dyn ObjectSource) -> FetchedObjects {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let mut config_maps = BTreeSet::new();
    let mut secrets = BTreeSet::new();
    let mut tokens = Vec::new();
    for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
        let kind = VolumeKind::of(volume);
        match kind {
            VolumeKind::ConfigMap(map) => {
                config_maps.insert(map.name.clone());
            }
            VolumeKind::Secret(secret) => {
                secrets.insert(secret.secret_name.clone().unwrap_or_default());
            }
            VolumeKind::Projected(_) => {
                for projection in kind.projections() {
                    match projection {
                        ProjectionKind::ConfigMap(map) => {
                            config_maps.insert(map.name.clone());
                        }
                        ProjectionKind::Secret(secret) => {
                            secrets.insert(secret.name.clone());
                        }
                        ProjectionKind::ServiceAccountToken(token) => {
                            let request = TokenRequest::for_projection(pod, token);
                            if !tokens.contains(&request) {
                                tokens.push(request);
                            }
                        }
                        ProjectionKind::DownwardApi(_) | ProjectionKind::Unsupported => {}
                    }
                }
            }
            VolumeKind::EmptyDir(_)
            | VolumeKind::HostPath(_)
            | VolumeKind::DownwardApi(_)
            | VolumeKind::Unsupported => {}
        }
    }
    let ns = namespace.as_str();
    let (config_maps, secrets, tokens) = futures::join!(
        futures::future::join_all(config_maps.into_iter().map(|name| async move {
            let answer = objects.config_map(ns, &name).await;
            (name, answer)
        })),
        futures::future::join_all(secrets.into_iter().map(|name| async move {
            let answer = objects.secret(ns, &name).await;
            (name, answer)
        })),
        futures::future::join_all(tokens.into_iter().map(|request| async move {
            let answer = objects.service_account_token(pod, &request).await;
            (request, answer)
        })),
    );
    FetchedObjects {
        namespace,
        config_maps: config_maps.into_iter().collect(),
        secrets: secrets.into_iter().collect(),
        tokens: tokens.into_iter().collect(),
    }
}
