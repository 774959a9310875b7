//! Downward API volume files (`downwardAPI` volumes and projected `downwardAPI` sources).

use super::atomic_writer::FileProjection;
use super::payload::check_item_path;
use super::VolumeProblem;
use k8s_openapi::api::core::v1::Pod;

/// `key="value"` lines, sorted, as upstream formats labels and annotations in files.
pub(super) fn format_map(map: Option<&std::collections::BTreeMap<String, String>>) -> String {
    map.into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The files of a downward API volume; an item's `mode` wins over `default_mode`.
pub(super) fn downward_files(
    pod: &Pod,
    items: &[k8s_openapi::api::core::v1::DownwardAPIVolumeFile],
    default_mode: u32,
    node_memory_bytes: i64,
) -> Result<Vec<FileProjection>, VolumeProblem> {
    let meta = &pod.metadata;
    let mut files = Vec::new();
    for item in items {
        check_item_path(&item.path)?;
        let content = if let Some(field) = &item.field_ref {
            match field.field_path.as_str() {
                "metadata.name" => meta.name.clone().unwrap_or_default(),
                "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
                "metadata.uid" => meta.uid.clone().unwrap_or_default(),
                "metadata.labels" => format_map(meta.labels.as_ref()),
                "metadata.annotations" => format_map(meta.annotations.as_ref()),
                path => {
                    let key = |prefix: &str| {
                        path.strip_prefix(prefix)?
                            .strip_prefix("['")?
                            .strip_suffix("']")
                            .map(str::to_string)
                    };
                    if let Some(k) = key("metadata.labels") {
                        meta.labels
                            .as_ref()
                            .and_then(|m| m.get(&k))
                            .cloned()
                            .unwrap_or_default()
                    } else if let Some(k) = key("metadata.annotations") {
                        meta.annotations
                            .as_ref()
                            .and_then(|m| m.get(&k))
                            .cloned()
                            .unwrap_or_default()
                    } else {
                        return Err(VolumeProblem::UnsupportedFieldRef { path: path.into() });
                    }
                }
            }
        } else if let Some(resource) = &item.resource_field_ref {
            let name = resource.container_name.as_deref().unwrap_or("");
            let container = pod
                .spec
                .as_ref()
                .and_then(|s| {
                    s.containers
                        .iter()
                        .chain(s.init_containers.iter().flatten())
                        .find(|c| c.name == name)
                })
                .ok_or_else(|| VolumeProblem::NoSuchContainer {
                    container: name.into(),
                })?;
            crate::fieldpath::resource_value(
                container,
                &resource.resource,
                resource.divisor.as_ref(),
                crate::machine::machine_cpu_millis(),
                node_memory_bytes,
            )?
        } else {
            return Err(VolumeProblem::NoItemSource {
                path: item.path.clone(),
            });
        };
        let mode = item.mode.map_or(default_mode, |m| m as u32);
        files.push(FileProjection::new(item.path.clone(), content, mode));
    }
    Ok(files)
}
