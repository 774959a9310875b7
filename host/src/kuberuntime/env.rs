//! Container environment: `env` with `valueFrom.fieldRef`, and `$(VAR)` expansion in values,
//! command and args, with upstream's rules (`third_party/forked/golang/expansion`).

use crate::fieldpath::{self, PodFacts};
use k8s_openapi::api::core::v1::{Container, Pod};
use std::collections::HashMap;

/// The container's environment in declaration order, values expanded.
pub fn environment(pod: &Pod, container: &Container, facts: &PodFacts) -> Vec<(String, String)> {
    let mut defined: HashMap<String, String> = HashMap::new();
    let mut ordered = Vec::new();
    for var in container.env.iter().flatten() {
        let from = var.value_from.as_ref();
        let value = if let Some(value) = &var.value {
            expand(value, &defined)
        } else if let Some(field_ref) = from.and_then(|f| f.field_ref.as_ref()) {
            fieldpath::value(pod, facts, &field_ref.field_path)
        } else if let Some(resource_ref) = from.and_then(|f| f.resource_field_ref.as_ref()) {
            fieldpath::resource_value(
                container,
                &resource_ref.resource,
                resource_ref.divisor.as_ref(),
                facts.node_cpu_millis,
                facts.node_memory_bytes,
            )
            .unwrap_or_default()
        } else {
            String::new()
        };
        defined.insert(var.name.clone(), value.clone());
        ordered.retain(|(name, _): &(String, String)| name != &var.name);
        ordered.push((var.name.clone(), value));
    }
    ordered
}

/// Expands `$(NAME)` from `vars`; `$$` escapes a `$`; unknown references stay as written.
pub fn expand(input: &str, vars: &HashMap<String, String>) -> String {
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
                    match vars.get(name) {
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
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    #[test]
    fn expansion_rules() {
        let vars = HashMap::from([("A".to_string(), "x".to_string())]);
        assert_eq!(expand("$(A)-$(B)", &vars), "x-$(B)");
        assert_eq!(expand("$$(A) $ $(A", &vars), "$(A) $ $(A");
    }

    #[test]
    fn field_refs_and_literals() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("web-node".into()),
                namespace: Some("default".into()),
                labels: Some([("app".to_string(), "web".to_string())].into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: Some("node".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let field = |name: &str, path: &str| EnvVar {
            name: name.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: path.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let container = Container {
            name: "c".into(),
            env: Some(vec![
                field("POD", "metadata.name"),
                field("IP", "status.podIP"),
                field("APP", "metadata.labels['app']"),
                EnvVar {
                    name: "GREETING".into(),
                    value: Some("hi $(POD) at $(IP)".into()),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        let facts = PodFacts {
            pod_ip: "10.88.0.5".into(),
            ..Default::default()
        };
        let env = environment(&pod, &container, &facts);
        assert_eq!(env[0], ("POD".into(), "web-node".into()));
        assert_eq!(env[2], ("APP".into(), "web".into()));
        assert_eq!(
            env[3],
            ("GREETING".into(), "hi web-node at 10.88.0.5".into())
        );
    }
}
