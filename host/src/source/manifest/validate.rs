//! Validation of a static pod manifest: the checks of upstream's `ValidatePodCreate` that
//! matter to this node, each refusal naming the offending field.

use super::{problem, ManifestProblem};
use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::{BTreeMap, HashSet};
use wasmlet_plugin_host::names::{is_dns_label, is_dns_subdomain};

/// Checks `pod` as the API server would before this node runs it.
pub(super) fn validate(pod: &Pod) -> Result<(), ManifestProblem> {
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
