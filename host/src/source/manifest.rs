//! One static pod manifest: parse (YAML or JSON, typed by k8s-openapi), validate, and apply
//! the defaults and identity the upstream file source gives it (`pkg/kubelet/config/common.go`).

use k8s_openapi::api::core::v1::{Pod, PodStatus, Toleration};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use validate::validate;

/// Annotation holding the hash the UID was derived from (upstream: `kubernetes.io/config.hash`).
pub const CONFIG_HASH_ANNOTATION: &str = "kubernetes.io/config.hash";
/// Annotation naming the pod's source (upstream: `kubernetes.io/config.source`).
pub const CONFIG_SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";
/// Annotation with the time the source first saw this version of the pod.
pub const CONFIG_SEEN_ANNOTATION: &str = "kubernetes.io/config.seen";
/// Annotation with the manifest file, so an operator can find a pod's source.
pub const CONFIG_FILE_ANNOTATION: &str = "wasmlet.dev/manifest-file";

/// Why one manifest was refused: the field path and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {reason}")]
pub struct ManifestProblem {
    /// The offending field's path in the manifest (`spec.containers[0].image`).
    pub field: String,
    /// What is wrong and what would be accepted.
    pub reason: String,
}

fn problem(field: impl Into<String>, reason: impl Into<String>) -> ManifestProblem {
    ManifestProblem {
        field: field.into(),
        reason: reason.into(),
    }
}

/// Where a parse error is, as a field of the manifest. When the text is no YAML at all
/// (`scan_error`), the path loses the `?` segments the scanner leaves where it stopped (a key
/// it could not read), so a syntax error inside `spec.containers[0]` names that container;
/// otherwise the path is exact, and a key may itself end in `?`. The root, or nothing left,
/// is `(document)`, and the reason gives the line and column.
fn error_place(path: &str, scan_error: bool) -> String {
    let mut place = path;
    while let Some(rest) = place
        .strip_suffix(".?")
        .or_else(|| place.strip_suffix('?'))
        .filter(|_| scan_error)
    {
        place = rest;
    }
    if place.is_empty() || place == "." {
        "(document)".into()
    } else {
        place.to_string()
    }
}

/// The document's `apiVersion` or `kind` when it is not `v1` / `Pod` (the typed parse reports
/// either at the document's root): the field to fix rather than the whole document.
fn type_problem(text: &str) -> Option<ManifestProblem> {
    let serde_json::Value::Object(document) =
        wasmlet_plugin_host::yaml::from_str::<serde_json::Value>(text).ok()?
    else {
        return None;
    };
    [("apiVersion", "v1"), ("kind", "Pod")]
        .into_iter()
        .find_map(|(field, expected)| match document.get(field) {
            Some(serde_json::Value::String(value)) if value == expected => None,
            Some(serde_json::Value::String(value)) => Some(problem(
                field,
                format!("is {value:?}; a static pod manifest is apiVersion: v1, kind: Pod"),
            )),
            Some(_) => Some(problem(field, format!("must be the string {expected:?}"))),
            None => Some(problem(field, format!("is required ({expected})"))),
        })
}

/// Parses a manifest's text, validates it, and turns it into the pod the node runs.
pub fn load(text: &str, file: &Path, node_name: &str) -> Result<Pod, ManifestProblem> {
    // One document reads as a pod or names its field; only a text that does not is counted.
    let mut pod: Pod = wasmlet_plugin_host::yaml::from_str(text).map_err(|e| {
        let documents = wasmlet_plugin_host::yaml::document_count(text);
        match documents {
            Ok(0) => return problem("(file)", "is empty"),
            Ok(2..) => {
                return problem(
                    "(file)",
                    "holds more than one YAML document; put one pod per file",
                )
            }
            _ => {}
        }
        let place = error_place(&e.path, documents.is_err());
        if place == "(document)" {
            type_problem(text).unwrap_or_else(|| problem(place, e.message))
        } else {
            problem(place, e.message)
        }
    })?;
    validate(&pod)?;
    apply_defaults(&mut pod, text, file, node_name);
    Ok(pod)
}

/// The pod UID: a hash of the manifest's bytes, the node and the file, so editing the file
/// (or moving it to another node) yields a new pod, as upstream.
pub fn pod_uid(text: &str, file: &Path, node_name: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    hasher.update(b"\0host:");
    hasher.update(node_name.as_bytes());
    hasher.update(b"\0file:");
    hasher.update(file.as_os_str().as_encoded_bytes());
    hasher.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The image pull policy the API server would default: `Always` for `:latest` or no tag.
pub fn default_pull_policy(image: &str) -> &'static str {
    let name = image.split('@').next().unwrap_or(image);
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.split_once(':') {
        Some((_, "latest")) | None if !image.contains('@') => "Always",
        _ => "IfNotPresent",
    }
}

fn apply_defaults(pod: &mut Pod, text: &str, file: &Path, node_name: &str) {
    let uid = pod_uid(text, file, node_name);
    let meta = &mut pod.metadata;
    let name = meta.name.take().unwrap_or_default();
    meta.name = Some(format!("{name}-{node_name}"));
    meta.namespace.get_or_insert_with(|| "default".into());
    meta.uid = Some(uid.clone());
    let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(CONFIG_HASH_ANNOTATION.into(), uid);
    annotations.insert(CONFIG_SOURCE_ANNOTATION.into(), "file".into());
    annotations.insert(CONFIG_FILE_ANNOTATION.into(), file.display().to_string());
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = Some(node_name.into());
        spec.restart_policy.get_or_insert_with(|| "Always".into());
        spec.termination_grace_period_seconds.get_or_insert(30);
        spec.dns_policy.get_or_insert_with(|| "ClusterFirst".into());
        spec.scheduler_name
            .get_or_insert_with(|| "default-scheduler".into());
        // Upstream gives static pods a toleration of every NoExecute taint.
        spec.tolerations
            .get_or_insert_with(Vec::new)
            .push(Toleration {
                operator: Some("Exists".into()),
                effect: Some("NoExecute".into()),
                ..Default::default()
            });
        let containers = spec
            .init_containers
            .iter_mut()
            .flatten()
            .chain(spec.containers.iter_mut());
        for container in containers {
            let image = container.image.clone().unwrap_or_default();
            container
                .image_pull_policy
                .get_or_insert_with(|| default_pull_policy(&image).into());
            container
                .termination_message_path
                .get_or_insert_with(|| "/dev/termination-log".into());
            container
                .termination_message_policy
                .get_or_insert_with(|| "File".into());
        }
    }
    pod.status = Some(PodStatus {
        phase: Some("Pending".into()),
        ..Default::default()
    });
}

mod validate;

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests;
