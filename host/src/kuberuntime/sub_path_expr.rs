//! `subPathExpr`: a volume mount's sub-path written with `$(VAR)` references to the
//! container's environment, expanded as upstream's `ExpandContainerVolumeMounts` before the
//! mounts are made.

use super::env::expand_with;
use k8s_openapi::api::core::v1::Container;
use std::collections::HashMap;

/// A `subPathExpr` that names variables the container's environment does not set (or sets
/// empty): the container waits in `CreateContainerConfigError` with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "volumeMount {mount:?} of container {container:?}: subPathExpr {expr:?}: missing value for {}",
    .missing.join(", ")
)]
pub struct SubPathExprError {
    /// The volume mount's name.
    pub mount: String,
    /// The container's name.
    pub container: String,
    /// The expression as written.
    pub expr: String,
    /// The variables without a value, sorted.
    pub missing: Vec<String>,
}

/// `container` with each `subPathExpr` expanded from its environment `envs` into `subPath`,
/// as upstream's `ExpandContainerVolumeMounts`: a reference to a variable that is unset or
/// empty is an error, so a pod whose annotation is not there yet waits
/// (`CreateContainerConfigError`) instead of mounting the wrong directory.
pub fn expand(
    container: &Container,
    envs: &[(String, String)],
) -> Result<Container, SubPathExprError> {
    let vars: HashMap<&str, &str> = envs
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let mut expanded = container.clone();
    for mount in expanded.volume_mounts.iter_mut().flatten() {
        let Some(expr) = mount.sub_path_expr.take().filter(|e| !e.is_empty()) else {
            continue;
        };
        let mut missing = Vec::new();
        let sub_path = expand_with(&expr, |name| match vars.get(name) {
            Some(value) if !value.is_empty() => Some(value),
            _ => {
                if !missing.iter().any(|m| m == name) {
                    missing.push(name.to_string());
                }
                None
            }
        });
        if !missing.is_empty() {
            missing.sort();
            return Err(SubPathExprError {
                mount: mount.name.clone(),
                container: container.name.clone(),
                expr,
                missing,
            });
        }
        mount.sub_path = Some(sub_path);
    }
    Ok(expanded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_path_exprs_expand_from_the_environment_and_refuse_a_missing_value() {
        use k8s_openapi::api::core::v1::VolumeMount;
        let container = Container {
            name: "app".into(),
            volume_mounts: Some(vec![
                VolumeMount {
                    name: "work".into(),
                    mount_path: "/sub".into(),
                    sub_path_expr: Some("$(ANNOTATION)/$(POD_NAME)".into()),
                    ..Default::default()
                },
                VolumeMount {
                    name: "work".into(),
                    mount_path: "/plain".into(),
                    sub_path: Some("fixed".into()),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        let env = |annotation: &str| {
            vec![
                ("POD_NAME".to_string(), "foo".to_string()),
                ("ANNOTATION".to_string(), annotation.to_string()),
            ]
        };
        let expanded = expand(&container, &env("mypath")).expect("expands");
        let mounts = expanded.volume_mounts.unwrap_or_default();
        assert_eq!(mounts[0].sub_path.as_deref(), Some("mypath/foo"));
        assert_eq!(mounts[0].sub_path_expr, None);
        assert_eq!(mounts[1].sub_path.as_deref(), Some("fixed"));
        // An annotation that is not there yet reads as empty: the container waits for it.
        assert_eq!(
            expand(&container, &env(""))
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some(
                r#"volumeMount "work" of container "app": subPathExpr "$(ANNOTATION)/$(POD_NAME)": missing value for ANNOTATION"#
            )
        );
        assert!(expand(&container, &[]).is_err());
    }
}
