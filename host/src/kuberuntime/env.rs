//! Container environment, as upstream's `makeEnvironmentVariables`: the service links
//! (`pkg/kubelet/envvars`), then `envFrom` configMaps and secrets (with `prefix`), then `env`
//! (`value` with `$(VAR)` expansion, `fieldRef`, `resourceFieldRef`, `configMapKeyRef`,
//! `secretKeyRef`); on a shared name the later wins, so `env` beats `envFrom` beats the
//! services. The API objects are fetched first through an [`ObjectSource`] ([`fetch`]);
//! [`environment`] is then pure. Expansion follows `third_party/forked/golang/expansion`.

use crate::fieldpath::{self, PodFacts};
use crate::objects::{ObjectError, ObjectSource};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Secret, Service};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// Why a container's environment cannot be built: the container is not created and waits
/// with `CreateContainerConfigError` and this message, as upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A configMap or secret the environment names could not be read (a missing one reads
    /// `configmap "x" not found`).
    #[error(transparent)]
    Object(#[from] ObjectError),
    /// `configMapKeyRef` names a key the configMap lacks, and is not `optional`.
    #[error("couldn't find key {key} in ConfigMap {namespace}/{name}")]
    MissingConfigMapKey {
        /// The pod's namespace.
        namespace: String,
        /// The configMap.
        name: String,
        /// The key as written.
        key: String,
    },
    /// `secretKeyRef` names a key the secret lacks, and is not `optional`.
    #[error("couldn't find key {key} in Secret {namespace}/{name}")]
    MissingSecretKey {
        /// The pod's namespace.
        namespace: String,
        /// The secret.
        name: String,
        /// The key as written.
        key: String,
    },
    /// The Services for the service links could not be listed.
    #[error("failed to list services when setting up env vars: {0}")]
    Services(ObjectError),
}

/// The API objects one container's environment names, as the source answered.
#[derive(Debug, Default, Clone)]
pub struct EnvObjects {
    config_maps: HashMap<String, Result<Arc<ConfigMap>, ObjectError>>,
    secrets: HashMap<String, Result<Arc<Secret>, ObjectError>>,
    /// The service-link variables, in order.
    services: Vec<(String, String)>,
}

fn namespace(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or("default")
}

/// The namespace whose `kubernetes` Service every pod gets variables for.
const MASTER_NAMESPACE: &str = "default";
/// The Service every pod gets variables for, even without service links.
const MASTER_SERVICE: &str = "kubernetes";

/// Upstream's `getServiceEnvVarMap`: the `kubernetes` Service of `default` always, and with
/// `enableServiceLinks` (the default) every Service of the pod's namespace (which wins over
/// `default/kubernetes` on the name). Services without a cluster IP give nothing. A node
/// without an API server has no Services, as upstream's kubelet without a lister.
async fn service_links(
    pod: &Pod,
    objects: &dyn ObjectSource,
) -> Result<Vec<(String, String)>, EnvError> {
    let links = pod
        .spec
        .as_ref()
        .and_then(|s| s.enable_service_links)
        .unwrap_or(true);
    let mut chosen: BTreeMap<String, Service> = BTreeMap::new();
    if links {
        for service in list_services(objects, namespace(pod)).await?.iter() {
            if let Some(name) = &service.metadata.name {
                chosen.insert(name.clone(), service.clone());
            }
        }
    }
    if !chosen.contains_key(MASTER_SERVICE) {
        let master = list_services(objects, MASTER_NAMESPACE).await?;
        if let Some(service) = master
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some(MASTER_SERVICE))
        {
            chosen.insert(MASTER_SERVICE.into(), service.clone());
        }
    }
    Ok(service_env(chosen.values()))
}

async fn list_services(
    objects: &dyn ObjectSource,
    namespace: &str,
) -> Result<Arc<Vec<Service>>, EnvError> {
    match objects.services(namespace).await {
        Ok(services) => Ok(services),
        Err(ObjectError::NoApiServer { .. }) => Ok(Arc::default()),
        Err(error) => Err(EnvError::Services(error)),
    }
}

/// Upstream's `envvars.FromServices`: `<SVC>_SERVICE_HOST`, `<SVC>_SERVICE_PORT`,
/// `<SVC>_SERVICE_PORT_<NAME>` per named port, and the docker-link family `<SVC>_PORT`,
/// `<SVC>_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}`. Services whose cluster IP is unset or
/// `None` are skipped.
pub fn service_env<'a>(services: impl IntoIterator<Item = &'a Service>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for service in services {
        let Some(ip) = service
            .spec
            .as_ref()
            .and_then(|s| s.cluster_ip.as_deref())
            .filter(|ip| !ip.is_empty() && *ip != "None")
        else {
            continue;
        };
        let prefix = env_name(service.metadata.name.as_deref().unwrap_or(""));
        let ports = service
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_deref())
            .unwrap_or_default();
        out.push((format!("{prefix}_SERVICE_HOST"), ip.to_string()));
        let Some(first) = ports.first() else {
            continue;
        };
        out.push((format!("{prefix}_SERVICE_PORT"), first.port.to_string()));
        for port in ports {
            if let Some(name) = port.name.as_deref().filter(|n| !n.is_empty()) {
                out.push((
                    format!("{prefix}_SERVICE_PORT_{}", env_name(name)),
                    port.port.to_string(),
                ));
            }
        }
        let host = if ip.contains(':') {
            format!("[{ip}]")
        } else {
            ip.to_string()
        };
        for (i, port) in ports.iter().enumerate() {
            let protocol = port.protocol.as_deref().unwrap_or("TCP");
            let lower = protocol.to_ascii_lowercase();
            let url = format!("{lower}://{host}:{}", port.port);
            if i == 0 {
                out.push((format!("{prefix}_PORT"), url.clone()));
            }
            let family = format!(
                "{prefix}_PORT_{}_{}",
                port.port,
                protocol.to_ascii_uppercase()
            );
            out.push((family.clone(), url));
            out.push((format!("{family}_PROTO"), lower));
            out.push((format!("{family}_PORT"), port.port.to_string()));
            out.push((format!("{family}_ADDR"), ip.to_string()));
        }
    }
    out
}

/// A Service or port name as a variable name: upper case, `-` as `_`.
fn env_name(name: &str) -> String {
    name.to_ascii_uppercase().replace('-', "_")
}

/// Asks `objects` for everything the environment of `container` names: each configMap and
/// secret once (a missing one is kept as the answer: it may be `optional`), and the Services
/// of the service links.
pub async fn fetch(
    pod: &Pod,
    container: &Container,
    objects: &dyn ObjectSource,
) -> Result<EnvObjects, EnvError> {
    let ns = namespace(pod);
    let mut config_maps = BTreeSet::new();
    let mut secrets = BTreeSet::new();
    for from in container.env_from.iter().flatten() {
        if let Some(map) = &from.config_map_ref {
            config_maps.insert(map.name.clone());
        }
        if let Some(secret) = &from.secret_ref {
            secrets.insert(secret.name.clone());
        }
    }
    for source in container
        .env
        .iter()
        .flatten()
        .filter_map(|v| v.value_from.as_ref())
    {
        if let Some(map) = &source.config_map_key_ref {
            config_maps.insert(map.name.clone());
        }
        if let Some(secret) = &source.secret_key_ref {
            secrets.insert(secret.name.clone());
        }
    }
    let services = service_links(pod, objects).await?;
    let mut out = EnvObjects {
        services,
        ..Default::default()
    };
    for name in config_maps {
        let answer = objects.config_map(ns, &name).await;
        out.config_maps.insert(name, answer);
    }
    for name in secrets {
        let answer = objects.secret(ns, &name).await;
        out.secrets.insert(name, answer);
    }
    Ok(out)
}

/// `name` of `fetched`: `Ok(None)` when missing and `optional` forgives it.
fn lookup<T: Clone>(
    fetched: &HashMap<String, Result<T, ObjectError>>,
    kind: crate::objects::ObjectKind,
    namespace: &str,
    name: &str,
    optional: bool,
) -> Result<Option<T>, EnvError> {
    match fetched.get(name) {
        Some(Ok(object)) => Ok(Some(object.clone())),
        Some(Err(error)) if error.is_not_found() && optional => Ok(None),
        Some(Err(error)) => Err(EnvError::Object(error.clone())),
        None => Err(EnvError::Object(ObjectError::Unavailable {
            kind,
            namespace: namespace.into(),
            name: name.into(),
            message: "not fetched before the environment was built".into(),
        })),
    }
}

/// Whether `name` can be an environment variable: what the API accepts since
/// `RelaxedEnvironmentVariableValidation` (printable ASCII but `=`). Upstream's kubelet no
/// longer filters `envFrom` keys; the API never stores a key this refuses, so only a bad
/// `prefix` from an older API server is ever skipped.
fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && b != b'=')
}

/// The container's environment, in order: service links, `envFrom`, `env`; a name defined
/// again moves to its last definition with the later value. Values are expanded.
pub fn environment(
    pod: &Pod,
    container: &Container,
    facts: &PodFacts,
    objects: &EnvObjects,
) -> Result<Vec<(String, String)>, EnvError> {
    use crate::objects::ObjectKind;
    let ns = namespace(pod);
    // What `$(VAR)` sees: envFrom and earlier env over the service variables.
    let mut defined: HashMap<String, String> = objects.services.iter().cloned().collect();
    let mut ordered: Vec<(String, String)> = objects.services.clone();
    let mut skipped = Vec::new();
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.as_deref().unwrap_or("");
        let entries: Vec<(String, String)> = if let Some(map) = &from.config_map_ref {
            let optional = map.optional.unwrap_or(false);
            match lookup(
                &objects.config_maps,
                ObjectKind::ConfigMap,
                ns,
                &map.name,
                optional,
            )? {
                Some(map) => map
                    .data
                    .iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                None => continue,
            }
        } else if let Some(secret) = &from.secret_ref {
            let optional = secret.optional.unwrap_or(false);
            match lookup(
                &objects.secrets,
                ObjectKind::Secret,
                ns,
                &secret.name,
                optional,
            )? {
                Some(secret) => secret
                    .data
                    .iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned()))
                    .collect(),
                None => continue,
            }
        } else {
            continue;
        };
        for (key, value) in entries {
            let name = format!("{prefix}{key}");
            if !valid_env_name(&name) {
                skipped.push(name);
                continue;
            }
            defined.insert(name.clone(), value.clone());
            ordered.push((name, value));
        }
    }
    if !skipped.is_empty() {
        tracing::warn!(container = %container.name, keys = ?skipped, "envFrom keys that are not valid environment variable names were skipped");
    }
    for var in container.env.iter().flatten() {
        let from = var.value_from.as_ref();
        let value = match (&var.value, from) {
            (Some(value), _) if !value.is_empty() => expand(value, &defined),
            (_, Some(from)) => {
                if let Some(field_ref) = &from.field_ref {
                    fieldpath::value(pod, facts, &field_ref.field_path)
                } else if let Some(resource_ref) = &from.resource_field_ref {
                    fieldpath::resource_value(
                        container,
                        &resource_ref.resource,
                        resource_ref.divisor.as_ref(),
                        facts.node_cpu_millis,
                        facts.node_memory_bytes,
                    )
                    .unwrap_or_default()
                } else if let Some(key_ref) = &from.config_map_key_ref {
                    let optional = key_ref.optional.unwrap_or(false);
                    let Some(map) = lookup(
                        &objects.config_maps,
                        ObjectKind::ConfigMap,
                        ns,
                        &key_ref.name,
                        optional,
                    )?
                    else {
                        continue;
                    };
                    let found = map.data.as_ref().and_then(|d| d.get(&key_ref.key)).cloned();
                    match found {
                        Some(value) => value,
                        None if optional => continue,
                        None => {
                            return Err(EnvError::MissingConfigMapKey {
                                namespace: ns.into(),
                                name: key_ref.name.clone(),
                                key: key_ref.key.clone(),
                            })
                        }
                    }
                } else if let Some(key_ref) = &from.secret_key_ref {
                    let optional = key_ref.optional.unwrap_or(false);
                    let Some(secret) = lookup(
                        &objects.secrets,
                        ObjectKind::Secret,
                        ns,
                        &key_ref.name,
                        optional,
                    )?
                    else {
                        continue;
                    };
                    let found = secret
                        .data
                        .as_ref()
                        .and_then(|d| d.get(&key_ref.key))
                        .map(|v| String::from_utf8_lossy(&v.0).into_owned());
                    match found {
                        Some(value) => value,
                        None if optional => continue,
                        None => {
                            return Err(EnvError::MissingSecretKey {
                                namespace: ns.into(),
                                name: key_ref.name.clone(),
                                key: key_ref.key.clone(),
                            })
                        }
                    }
                } else {
                    String::new()
                }
            }
            _ => String::new(),
        };
        defined.insert(var.name.clone(), value.clone());
        ordered.push((var.name.clone(), value));
    }
    Ok(last_definition_wins(ordered))
}

/// Keeps each name once, at its last definition.
fn last_definition_wins(ordered: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut seen = HashSet::new();
    let mut out: Vec<(String, String)> = ordered
        .into_iter()
        .rev()
        .filter(|(name, _)| seen.insert(name.clone()))
        .collect();
    out.reverse();
    out
}

/// [`fetch`], then [`environment`].
pub async fn resolve(
    pod: &Pod,
    container: &Container,
    facts: &PodFacts,
    objects: &dyn ObjectSource,
) -> Result<Vec<(String, String)>, EnvError> {
    let fetched = fetch(pod, container, objects).await?;
    environment(pod, container, facts, &fetched)
}

/// Expands `$(NAME)` from `vars`; `$$` escapes a `$`; unknown references stay as written.
pub fn expand(input: &str, vars: &HashMap<String, String>) -> String {
    expand_with(input, |name| vars.get(name).map(String::as_str))
}

/// [`expand`] over any lookup.
pub(super) fn expand_with<'v>(
    input: &str,
    mut lookup: impl FnMut(&str) -> Option<&'v str>,
) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(') {
            match inner.find(')') {
                Some(end) => {
                    let name = &inner[..end];
                    match lookup(name) {
                        Some(value) => out.push_str(value),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &inner[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = inner;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
