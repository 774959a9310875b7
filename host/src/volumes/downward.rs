//! Downward API volume files, written with upstream's atomic-writer layout.

use super::{valid_sub_path, VolumeProblem};
use k8s_openapi::api::core::v1::Pod;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// `key="value"` lines, sorted, as upstream formats labels and annotations in files.
pub(super) fn format_map(map: Option<&std::collections::BTreeMap<String, String>>) -> String {
    map.into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The files of a downward API volume: (path, content, mode).
pub(super) fn downward_files(
    pod: &Pod,
    items: &[k8s_openapi::api::core::v1::DownwardAPIVolumeFile],
    default_mode: Option<i32>,
    node_memory_bytes: i64,
) -> Result<Vec<(String, String, u32)>, VolumeProblem> {
    let meta = &pod.metadata;
    let mut files = Vec::new();
    for item in items {
        if !valid_sub_path(&item.path) {
            return Err(VolumeProblem::InvalidItemPath {
                path: item.path.clone(),
            });
        }
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
        let mode = item.mode.or(default_mode).unwrap_or(0o644) as u32;
        files.push((item.path.clone(), content, mode));
    }
    Ok(files)
}

/// Writes `files` with upstream's atomic-writer layout: a timestamped directory holds the
/// data, `..data` points at it and is swapped by rename, and each top-level name is a symlink
/// through `..data`. Readers see the old or the new set, never a mix. Unchanged data is not
/// rewritten.
pub(super) fn atomic_write(dir: &Path, files: &[(String, String, u32)]) -> std::io::Result<()> {
    use std::os::unix::fs::symlink;
    let current = dir.join("..data");
    let unchanged = current.is_dir()
        && files.iter().all(|(path, content, _)| {
            std::fs::read_to_string(current.join(path)).is_ok_and(|c| &c == content)
        });
    if unchanged {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let stamp = format!("..{}.{:09}", now.as_secs(), now.subsec_nanos());
    let data_dir = dir.join(&stamp);
    for (path, content, mode) in files {
        let target = data_dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, content)?;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(*mode))?;
    }
    std::fs::create_dir_all(&data_dir)?;
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    symlink(&stamp, &tmp)?;
    std::fs::rename(&tmp, &current)?;
    for (path, _, _) in files {
        let top = path.split('/').next().unwrap_or(path);
        let link = dir.join(top);
        if std::fs::symlink_metadata(&link).is_err() {
            symlink(format!("..data/{top}"), &link)?;
        }
    }
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("..")
            && name != stamp
            && name != "..data"
            && entry.path().is_dir()
            && !entry.path().is_symlink()
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    Ok(())
}
