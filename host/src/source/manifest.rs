//! One static pod manifest: parse (YAML or JSON, typed by k8s-openapi), validate, and apply
//! the defaults and identity the upstream file source gives it (`pkg/kubelet/config/common.go`).

use crate::config::is_dns_subdomain;
use k8s_openapi::api::core::v1::{Container, Pod, PodStatus, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

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

/// Parses a manifest's text, validates it, and turns it into the pod the node runs.
pub fn load(text: &str, file: &Path, node_name: &str) -> Result<Pod, ManifestProblem> {
    let mut documents = serde_yaml::Deserializer::from_str(text);
    let document = documents
        .next()
        .ok_or_else(|| problem("(file)", "is empty"))?;
    let mut pod: Pod = serde_path_to_error::deserialize(document).map_err(|e| {
        let field = e.path().to_string();
        problem(
            // The root, or the empty key a YAML scan error leaves behind (`&a:\nb`): the
            // error is the document's, and its reason gives the line and column.
            if field == "." || field.is_empty() {
                "(document)".into()
            } else {
                field
            },
            e.into_inner().to_string(),
        )
    })?;
    if documents.next().is_some() {
        return Err(problem(
            "(file)",
            "holds more than one YAML document; put one pod per file",
        ));
    }
    validate(&pod)?;
    apply_defaults(&mut pod, text, file, node_name);
    Ok(pod)
}

fn validate(pod: &Pod) -> Result<(), ManifestProblem> {
    let name = pod.metadata.name.as_deref().unwrap_or("");
    if name.is_empty() {
        return Err(problem("metadata.name", "is required"));
    }
    if !is_dns_subdomain(name) {
        return Err(problem(
            "metadata.name",
            format!("{name:?} is not a valid DNS subdomain"),
        ));
    }
    if let Some(namespace) = &pod.metadata.namespace {
        if !is_dns_label(namespace) {
            return Err(problem(
                "metadata.namespace",
                format!("{namespace:?} is not a valid DNS label"),
            ));
        }
    }
    let spec = pod
        .spec
        .as_ref()
        .ok_or_else(|| problem("spec", "is required"))?;
    if spec.containers.is_empty() {
        return Err(problem("spec.containers", "needs at least one container"));
    }
    let mut names = HashSet::new();
    let groups = [
        (
            "spec.initContainers",
            spec.init_containers.as_deref().unwrap_or(&[]),
        ),
        ("spec.containers", &spec.containers[..]),
    ];
    for (group, containers) in groups {
        for (i, container) in containers.iter().enumerate() {
            validate_container(container, &format!("{group}[{i}]"), &mut names)?;
        }
    }
    if let Some(policy) = &spec.restart_policy {
        if !["Always", "OnFailure", "Never"].contains(&policy.as_str()) {
            return Err(problem(
                "spec.restartPolicy",
                format!("{policy:?} is not one of Always, OnFailure, Never"),
            ));
        }
    }
    if spec.termination_grace_period_seconds.is_some_and(|g| g < 0) {
        return Err(problem(
            "spec.terminationGracePeriodSeconds",
            "must not be negative",
        ));
    }
    for (name, quantity) in spec.overhead.iter().flatten() {
        quantity_milli(&format!("spec.overhead[{name}]"), quantity)?;
    }
    validate_resources(spec.resources.as_ref(), "spec.resources")?;
    let mut volume_names = HashSet::new();
    for (i, volume) in spec.volumes.iter().flatten().enumerate() {
        if !is_dns_label(&volume.name) || !volume_names.insert(volume.name.clone()) {
            return Err(problem(
                format!("spec.volumes[{i}].name"),
                format!("{:?} is not a unique DNS label", volume.name),
            ));
        }
        if let Some(limit) = volume
            .empty_dir
            .as_ref()
            .and_then(|e| e.size_limit.as_ref())
        {
            quantity_milli(&format!("spec.volumes[{i}].emptyDir.sizeLimit"), limit)?;
        }
        let items = volume
            .downward_api
            .iter()
            .flat_map(|d| d.items.iter().flatten());
        for (j, item) in items.enumerate() {
            let divisor = item
                .resource_field_ref
                .as_ref()
                .and_then(|r| r.divisor.as_ref());
            if let Some(divisor) = divisor {
                let field =
                    format!("spec.volumes[{i}].downwardAPI.items[{j}].resourceFieldRef.divisor");
                // Zero is how the API server writes an unset divisor: only its form is checked.
                quantity_milli(&field, divisor)?;
            }
        }
    }
    let groups = [
        (
            "spec.initContainers",
            spec.init_containers.as_deref().unwrap_or(&[]),
        ),
        ("spec.containers", &spec.containers[..]),
    ];
    for (group, containers) in groups {
        for (c, container) in containers.iter().enumerate() {
            for (m, mount) in container.volume_mounts.iter().flatten().enumerate() {
                let field = format!("{group}[{c}].volumeMounts[{m}]");
                if !volume_names.contains(&mount.name) {
                    return Err(problem(
                        format!("{field}.name"),
                        format!("no volume named {:?} in spec.volumes", mount.name),
                    ));
                }
                if !mount.mount_path.starts_with('/') {
                    return Err(problem(
                        format!("{field}.mountPath"),
                        "must be an absolute path",
                    ));
                }
                if let Some(sub) = mount.sub_path.as_deref().filter(|s| !s.is_empty()) {
                    if !crate::volumes::valid_sub_path(sub) {
                        return Err(problem(
                            format!("{field}.subPath"),
                            "must be a relative path without '..'",
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

fn validate_container(
    container: &Container,
    path: &str,
    names: &mut HashSet<String>,
) -> Result<(), ManifestProblem> {
    if container.name.is_empty() {
        return Err(problem(format!("{path}.name"), "is required"));
    }
    if !is_dns_label(&container.name) {
        return Err(problem(
            format!("{path}.name"),
            format!("{:?} is not a valid DNS label", container.name),
        ));
    }
    if !names.insert(container.name.clone()) {
        return Err(problem(
            format!("{path}.name"),
            format!("duplicate container name {:?}", container.name),
        ));
    }
    if container.image.as_deref().unwrap_or("").is_empty() {
        return Err(problem(format!("{path}.image"), "is required"));
    }
    validate_resources(container.resources.as_ref(), &format!("{path}.resources"))?;
    if let Some(policy) = &container.image_pull_policy {
        if !["Always", "IfNotPresent", "Never"].contains(&policy.as_str()) {
            return Err(problem(
                format!("{path}.imagePullPolicy"),
                format!("{policy:?} is not one of Always, IfNotPresent, Never"),
            ));
        }
    }
    for (j, env) in container.env.iter().flatten().enumerate() {
        let Some(from) = &env.value_from else {
            continue;
        };
        let field = format!("{path}.env[{j}].valueFrom");
        if from.config_map_key_ref.is_some() || from.secret_key_ref.is_some() {
            return Err(problem(
                field,
                "configMapKeyRef and secretKeyRef need an API server; static pods cannot use them",
            ));
        }
        if let Some(resource_ref) = &from.resource_field_ref {
            let probe = crate::fieldpath::resource_value(
                container,
                &resource_ref.resource,
                resource_ref.divisor.as_ref(),
                1000,
                1,
            );
            if let Err(reason) = probe {
                return Err(problem(
                    format!("{field}.resourceFieldRef"),
                    reason.to_string(),
                ));
            }
        }
        if let Some(field_ref) = &from.field_ref {
            if crate::fieldpath::supported(&field_ref.field_path).is_err() {
                return Err(problem(
                    format!("{field}.fieldRef.fieldPath"),
                    format!("{:?} is not a supported field path", field_ref.field_path),
                ));
            }
        }
    }
    if container.env_from.as_ref().is_some_and(|e| !e.is_empty()) {
        return Err(problem(
            format!("{path}.envFrom"),
            "envFrom needs an API server; static pods cannot use it",
        ));
    }
    Ok(())
}

/// A quantity of the manifest in thousandths of its unit; negative amounts are refused, as the
/// API server refuses them. The parse is bounded (no exponent or digit string makes it slow).
fn quantity_milli(field: &str, quantity: &Quantity) -> Result<i128, ManifestProblem> {
    match crate::resources::parse_milli(&quantity.0) {
        Ok(milli) if milli < 0 => Err(problem(
            field,
            format!(
                "quantity {:?} must be greater than or equal to 0",
                quantity.0
            ),
        )),
        Ok(milli) => Ok(milli),
        Err(error) => Err(problem(field, error.to_string())),
    }
}

/// Requests and limits (`<path>.requests[cpu]`): each a valid, non-negative quantity, and no
/// request above its limit, as upstream's `ValidateResourceRequirements`.
fn validate_resources(
    resources: Option<&ResourceRequirements>,
    path: &str,
) -> Result<(), ManifestProblem> {
    let Some(resources) = resources else {
        return Ok(());
    };
    let mut limits = BTreeMap::new();
    for (name, quantity) in resources.limits.iter().flatten() {
        limits.insert(
            name,
            quantity_milli(&format!("{path}.limits[{name}]"), quantity)?,
        );
    }
    for (name, quantity) in resources.requests.iter().flatten() {
        let field = format!("{path}.requests[{name}]");
        let request = quantity_milli(&field, quantity)?;
        if let Some(limit) = limits.get(name).filter(|limit| request > **limit) {
            let limit_text = resources
                .limits
                .as_ref()
                .and_then(|l| l.get(name))
                .map_or_else(|| limit.to_string(), |q| q.0.clone());
            return Err(problem(
                field,
                format!(
                    "{:?} must be less than or equal to {name} limit of {limit_text}",
                    quantity.0
                ),
            ));
        }
    }
    Ok(())
}

/// RFC 1123 label (container names, namespaces).
pub fn is_dns_label(name: &str) -> bool {
    name.len() <= 63 && !name.contains('.') && is_dns_subdomain(name)
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

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;

    const WEB: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: web\n    image: busybox:local\n";

    #[test]
    fn static_pod_identity_and_defaults() {
        let file = Path::new("/etc/manifests/web.yaml");
        let pod = load(WEB, file, "node-a").unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("web-node-a"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
        let uid = pod.metadata.uid.clone().unwrap();
        assert_eq!(uid.len(), 32);
        let spec = pod.spec.unwrap();
        assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
        assert_eq!(spec.termination_grace_period_seconds, Some(30));
        assert_eq!(
            spec.containers[0].image_pull_policy.as_deref(),
            Some("IfNotPresent")
        );
        // Same content elsewhere, or edited content, is another pod.
        assert_ne!(pod_uid(WEB, file, "node-b"), uid);
        assert_ne!(pod_uid(&format!("{WEB}# edit\n"), file, "node-a"), uid);
        assert_eq!(pod_uid(WEB, file, "node-a"), uid);
    }

    #[test]
    fn json_manifests_parse() {
        let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}"#;
        let pod = load(json, Path::new("/m/j.json"), "n").unwrap();
        assert_eq!(
            pod.spec.unwrap().containers[0].image_pull_policy.as_deref(),
            Some("Always")
        );
    }

    #[test]
    fn problems_name_the_field() {
        let check = |text: &str, field: &str| {
            let err = load(text, Path::new("/m/x.yaml"), "n").unwrap_err();
            assert_eq!(err.field, field, "{err}");
        };
        check("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - image: busybox\n", "spec.containers[0].name");
        check("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: c\n    image: b\n    ports: [{containerPort: eighty}]\n", "spec.containers[0].ports[0].containerPort");
        check(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: []\n",
            "spec.containers",
        );
        check("apiVersion: v1\nkind: Pod\nmetadata: {name: X_1}\nspec:\n  containers: [{name: c, image: b}]\n", "metadata.name");
        check("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  restartPolicy: Sometimes\n  containers: [{name: c, image: b}]\n", "spec.restartPolicy");
        check("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: c, image: b}, {name: c, image: b}]\n", "spec.containers[1].name");
        check(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: c}]\n",
            "spec.containers[0].image",
        );
    }

    #[test]
    fn pull_policy_defaults() {
        assert_eq!(default_pull_policy("busybox"), "Always");
        assert_eq!(default_pull_policy("busybox:latest"), "Always");
        assert_eq!(default_pull_policy("localhost:5000/busybox"), "Always");
        assert_eq!(
            default_pull_policy("localhost:5000/busybox:1.2"),
            "IfNotPresent"
        );
        assert_eq!(default_pull_policy("busybox@sha256:abc"), "IfNotPresent");
    }

    #[test]
    fn quantities_are_checked_with_the_field_named() {
        let with = |resources: &str| {
            format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: x}}\nspec:\n  containers:\n  - name: c\n    image: b\n    resources: {resources}\n")
        };
        let check = |text: String, field: &str, words: &str| {
            let started = std::time::Instant::now();
            let err = load(&text, Path::new("/m/x.yaml"), "n").unwrap_err();
            assert!(started.elapsed() < std::time::Duration::from_millis(50));
            assert_eq!(err.field, field, "{err}");
            assert!(err.reason.contains(words), "{err}");
        };
        check(
            with("{limits: {cpu: 1e2147483647}}"),
            "spec.containers[0].resources.limits[cpu]",
            "too large",
        );
        let digits = "9".repeat(10_000);
        check(
            with(&format!("{{requests: {{memory: '{digits}'}}}}")),
            "spec.containers[0].resources.requests[memory]",
            "too large",
        );
        check(
            with("{requests: {memory: 12x}}"),
            "spec.containers[0].resources.requests[memory]",
            "unknown suffix",
        );
        check(
            with("{requests: {cpu: '-1'}}"),
            "spec.containers[0].resources.requests[cpu]",
            "greater than or equal to 0",
        );
        check(
            with("{requests: {cpu: '2'}, limits: {cpu: 1500m}}"),
            "spec.containers[0].resources.requests[cpu]",
            "less than or equal to cpu limit of 1500m",
        );
        check(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  overhead: {memory: 1e99}\n  containers: [{name: c, image: b}]\n".into(),
            "spec.overhead[memory]",
            "too large",
        );
        check(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  volumes: [{name: v, emptyDir: {sizeLimit: 1Qi}}]\n  containers: [{name: c, image: b}]\n".into(),
            "spec.volumes[0].emptyDir.sizeLimit",
            "unknown suffix",
        );
        check(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  volumes: [{name: v, downwardAPI: {items: [{path: p, resourceFieldRef: {containerName: c, resource: limits.cpu, divisor: '-1'}}]}}]\n  containers: [{name: c, image: b}]\n".into(),
            "spec.volumes[0].downwardAPI.items[0].resourceFieldRef.divisor",
            "greater than or equal to 0",
        );
        assert!(load(
            &with("{requests: {cpu: 500m}, limits: {cpu: '1', memory: 64Mi}}"),
            Path::new("/m/x.yaml"),
            "n"
        )
        .is_ok());
    }
}
