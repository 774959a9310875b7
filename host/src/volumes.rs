//! Pod volumes a node can serve without an API server: `emptyDir` (on disk, or `medium:
//! Memory` as a sized tmpfs), `hostPath` with upstream's type checks, `downwardAPI` and
//! `projected` downward API sources (upstream's atomic-writer layout), mounted into
//! containers with `readOnly`, `subPath` and `mountPropagation`. The layout is upstream's:
//! `<root-dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>`.

use crate::cri::api;
use crate::fieldpath::FieldPathError;
use crate::resources::{self, QuantityError};
use k8s_openapi::api::core::v1::{Container, Pod, Volume};
use std::collections::HashMap;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Why a volume could not be set up; shown in the waiting containers' status, as upstream's
/// `FailedMount` events read.
#[derive(Debug, thiserror::Error)]
#[error("MountVolume.SetUp failed for volume {volume:?}: {reason}")]
pub struct VolumeError {
    /// The volume's name in the pod spec.
    pub volume: String,
    /// What went wrong and, where it can, what to change.
    pub reason: VolumeProblem,
}

/// What went wrong with one volume: a spec the node cannot serve, or the host refusing.
#[derive(Debug, thiserror::Error)]
pub enum VolumeProblem {
    /// A downward API item path that is absolute or climbs out with `..`.
    #[error("item path {path:?} must be relative without '..'")]
    InvalidItemPath {
        /// The item's path as written.
        path: String,
    },
    /// A downward API `fieldRef` path a volume cannot carry.
    #[error("unsupported fieldRef {path:?} in a downward API volume")]
    UnsupportedFieldRef {
        /// The field path as written.
        path: String,
    },
    /// A `resourceFieldRef` naming a container the pod does not have.
    #[error("resourceFieldRef names no container {container:?}")]
    NoSuchContainer {
        /// The container name as written.
        container: String,
    },
    /// A `resourceFieldRef` that cannot be resolved.
    #[error(transparent)]
    ResourceFieldRef(#[from] FieldPathError),
    /// A downward API item with neither `fieldRef` nor `resourceFieldRef`.
    #[error("item {path:?} has neither fieldRef nor resourceFieldRef")]
    NoItemSource {
        /// The item's path as written.
        path: String,
    },
    /// A path or mount option with a NUL byte, which `mount(2)` cannot take.
    #[error("{0}")]
    NulByte(#[from] std::ffi::NulError),
    /// The kernel refused the tmpfs of a `medium: Memory` emptyDir.
    #[error("mount tmpfs on {}: {source}", .path.display())]
    MountTmpfs {
        /// The mount point.
        path: PathBuf,
        /// What `mount(2)` said.
        source: std::io::Error,
    },
    /// A hostPath that exists but is not of the `type` the spec asks for.
    #[error("hostPath type check failed: {} is not a {want}", .path.display())]
    HostPathWrongType {
        /// The host path.
        path: PathBuf,
        /// What the spec's `type` wants (`directory`, `socket`, ...).
        want: &'static str,
    },
    /// A hostPath whose `type` requires it to exist, and it does not.
    #[error("hostPath type check failed: {} does not exist", .path.display())]
    HostPathMissing {
        /// The host path.
        path: PathBuf,
    },
    /// `DirectoryOrCreate` could not create the directory.
    #[error("cannot create directory {}: {source}", .path.display())]
    HostPathCreateDirectory {
        /// The host path.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// `FileOrCreate` could not create the file.
    #[error("cannot create file {}: {source}", .path.display())]
    HostPathCreateFile {
        /// The host path.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// A hostPath `type` Kubernetes does not define.
    #[error("unknown hostPath type {kind:?}")]
    UnknownHostPathType {
        /// The type as written.
        kind: String,
    },
    /// The volume's directory under the root dir could not be created.
    #[error("cannot create {}: {source}", .path.display())]
    CreateDirectory {
        /// The directory.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// An emptyDir `sizeLimit` that is not a valid quantity.
    #[error("sizeLimit: {0}")]
    SizeLimit(#[source] QuantityError),
    /// An emptyDir could not be made writable for every container user.
    #[error("cannot set permissions on {}: {source}", .path.display())]
    SetPermissions {
        /// The directory.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// A downward API volume's files could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The volume's directory.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// A volume type the node cannot serve; the text says why and what is supported.
    #[error("{0}")]
    Unsupported(&'static str),
    /// A `volumeMount` naming a volume the pod does not declare.
    #[error("no such volume in the pod")]
    NoSuchVolume,
    /// A `subPath` that is absolute or climbs out of the volume.
    #[error("subPath {sub_path:?} must be a relative path inside the volume")]
    InvalidSubPath {
        /// The subPath as written.
        sub_path: String,
    },
    /// A missing `subPath` could not be created.
    #[error("cannot create subPath {}: {source}", .path.display())]
    CreateSubPath {
        /// The subPath's host path.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// A `mountPropagation` other than None, HostToContainer or Bidirectional.
    #[error("unknown mountPropagation {propagation:?}")]
    UnknownPropagation {
        /// The propagation as written.
        propagation: String,
    },
}

/// The directory of a pod's data under the root dir.
pub fn pod_dir(root_dir: &Path, uid: &str) -> PathBuf {
    root_dir.join("pods").join(uid)
}

fn empty_dir_path(root_dir: &Path, uid: &str, name: &str) -> PathBuf {
    pod_dir(root_dir, uid)
        .join("volumes/kubernetes.io~empty-dir")
        .join(name)
}

/// Why a volume type cannot be served here, or `None` when it can.
pub fn unsupported(volume: &Volume) -> Option<&'static str> {
    let projected_downward_only = volume.projected.as_ref().is_some_and(|p| {
        p.sources.iter().flatten().all(|s| {
            s.downward_api.is_some()
                && s.config_map.is_none()
                && s.secret.is_none()
                && s.service_account_token.is_none()
        })
    });
    if volume.empty_dir.is_some()
        || volume.host_path.is_some()
        || volume.downward_api.is_some()
        || projected_downward_only
    {
        None
    } else if volume.config_map.is_some() || volume.secret.is_some() || volume.projected.is_some() {
        Some("configMap, secret and service-account token volumes need an API server; static pods cannot use them")
    } else {
        Some("only emptyDir, hostPath, downwardAPI and projected downwardAPI volumes are supported by wasmlet yet")
    }
}

/// `key="value"` lines, sorted, as upstream formats labels and annotations in files.
fn format_map(map: Option<&std::collections::BTreeMap<String, String>>) -> String {
    map.into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The files of a downward API volume: (path, content, mode).
fn downward_files(
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
fn atomic_write(dir: &Path, files: &[(String, String, u32)]) -> std::io::Result<()> {
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

fn is_mounted(path: &Path) -> bool {
    let target = path.display().to_string();
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|text| {
            text.lines()
                .any(|l| l.split(' ').nth(4) == Some(target.as_str()))
        })
        .unwrap_or(false)
}

fn mount_tmpfs(path: &Path, size_bytes: i64) -> Result<(), VolumeProblem> {
    use std::ffi::CString;
    let target = CString::new(path.as_os_str().as_encoded_bytes())?;
    let options = if size_bytes > 0 {
        format!("mode=0777,size={size_bytes}")
    } else {
        "mode=0777".into()
    };
    let options = CString::new(options)?;
    let fstype = CString::new("tmpfs")?;
    // SAFETY: all pointers are valid NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            options.as_ptr().cast(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(VolumeProblem::MountTmpfs {
            path: path.to_path_buf(),
            source: std::io::Error::last_os_error(),
        })
    }
}

/// The pod's memory limit (sum of its app containers' limits; 0 when any is unlimited).
fn pod_memory_limit(pod: &Pod) -> i64 {
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    let mut total = 0;
    for container in containers {
        let limit = container
            .resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .and_then(|l| l.get("memory"))
            .and_then(|q| resources::bytes(q).ok());
        match limit {
            Some(bytes) => total += bytes,
            None => return 0,
        }
    }
    total
}

fn host_path_check(path: &Path, kind: &str) -> Result<(), VolumeProblem> {
    let meta = std::fs::metadata(path);
    let exists_as = |want: &'static str, ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(VolumeProblem::HostPathWrongType {
                path: path.to_path_buf(),
                want,
            })
        }
    };
    match kind {
        "" => Ok(()),
        "DirectoryOrCreate" => match meta {
            Ok(m) => exists_as("directory", m.is_dir()),
            Err(_) => std::fs::create_dir_all(path)
                .and_then(|()| {
                    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
                })
                .map_err(|source| VolumeProblem::HostPathCreateDirectory {
                    path: path.to_path_buf(),
                    source,
                }),
        },
        "FileOrCreate" => match meta {
            Ok(m) => exists_as("file", m.is_file()),
            Err(_) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|f| f.set_permissions(std::fs::Permissions::from_mode(0o644)))
                .map_err(|source| VolumeProblem::HostPathCreateFile {
                    path: path.to_path_buf(),
                    source,
                }),
        },
        "Directory" | "File" | "Socket" | "CharDevice" | "BlockDevice" => {
            let m = meta.map_err(|_| VolumeProblem::HostPathMissing {
                path: path.to_path_buf(),
            })?;
            let t = m.file_type();
            match kind {
                "Directory" => exists_as("directory", t.is_dir()),
                "File" => exists_as("file", t.is_file()),
                "Socket" => exists_as("socket", t.is_socket()),
                "CharDevice" => exists_as("character device", t.is_char_device()),
                _ => exists_as("block device", t.is_block_device()),
            }
        }
        other => Err(VolumeProblem::UnknownHostPathType { kind: other.into() }),
    }
}

/// Sets up every volume of `pod` (idempotent) and returns each one's host path.
pub fn prepare(pod: &Pod, root_dir: &Path) -> Result<HashMap<String, PathBuf>, VolumeError> {
    let uid = pod.metadata.uid.as_deref().unwrap_or("");
    let mut paths = HashMap::new();
    for volume in pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
    {
        let fail = |reason: VolumeProblem| VolumeError {
            volume: volume.name.clone(),
            reason,
        };
        if let Some(empty) = &volume.empty_dir {
            let path = empty_dir_path(root_dir, uid, &volume.name);
            std::fs::create_dir_all(&path).map_err(|source| {
                fail(VolumeProblem::CreateDirectory {
                    path: path.clone(),
                    source,
                })
            })?;
            if empty.medium.as_deref() == Some("Memory") {
                if !is_mounted(&path) {
                    let size = match &empty.size_limit {
                        Some(q) => {
                            resources::bytes(q).map_err(|e| fail(VolumeProblem::SizeLimit(e)))?
                        }
                        None => pod_memory_limit(pod),
                    };
                    mount_tmpfs(&path, size).map_err(fail)?;
                }
            } else {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).map_err(
                    |source| {
                        fail(VolumeProblem::SetPermissions {
                            path: path.clone(),
                            source,
                        })
                    },
                )?;
            }
            paths.insert(volume.name.clone(), path);
        } else if let Some(host) = &volume.host_path {
            let path = PathBuf::from(&host.path);
            host_path_check(&path, host.type_.as_deref().unwrap_or("")).map_err(fail)?;
            paths.insert(volume.name.clone(), path);
        } else if let Some(downward) = &volume.downward_api {
            let dir = pod_dir(root_dir, uid)
                .join("volumes/kubernetes.io~downward-api")
                .join(&volume.name);
            let items = downward.items.clone().unwrap_or_default();
            let files = downward_files(
                pod,
                &items,
                downward.default_mode,
                crate::machine::machine_memory_bytes(),
            )
            .map_err(fail)?;
            atomic_write(&dir, &files).map_err(|source| {
                fail(VolumeProblem::Write {
                    path: dir.clone(),
                    source,
                })
            })?;
            paths.insert(volume.name.clone(), dir);
        } else if let (Some(projected), None) = (&volume.projected, unsupported(volume)) {
            let dir = pod_dir(root_dir, uid)
                .join("volumes/kubernetes.io~projected")
                .join(&volume.name);
            let items: Vec<_> = projected
                .sources
                .iter()
                .flatten()
                .filter_map(|s| s.downward_api.as_ref())
                .flat_map(|d| d.items.clone().unwrap_or_default())
                .collect();
            let files = downward_files(
                pod,
                &items,
                projected.default_mode,
                crate::machine::machine_memory_bytes(),
            )
            .map_err(fail)?;
            atomic_write(&dir, &files).map_err(|source| {
                fail(VolumeProblem::Write {
                    path: dir.clone(),
                    source,
                })
            })?;
            paths.insert(volume.name.clone(), dir);
        } else if let Some(reason) = unsupported(volume) {
            return Err(fail(VolumeProblem::Unsupported(reason)));
        }
    }
    Ok(paths)
}

/// Whether a subPath stays inside its volume (relative, no `..`).
pub fn valid_sub_path(sub_path: &str) -> bool {
    let path = Path::new(sub_path);
    path.is_relative()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// The CRI mounts of `container`, from the prepared volume paths.
pub fn mounts(
    container: &Container,
    volumes: &HashMap<String, PathBuf>,
) -> Result<Vec<api::Mount>, VolumeError> {
    let mut out = Vec::new();
    for mount in container.volume_mounts.iter().flatten() {
        let fail = |reason: VolumeProblem| VolumeError {
            volume: mount.name.clone(),
            reason,
        };
        let base = volumes
            .get(&mount.name)
            .ok_or_else(|| fail(VolumeProblem::NoSuchVolume))?;
        let mut host_path = base.clone();
        if let Some(sub) = mount.sub_path.as_deref().filter(|s| !s.is_empty()) {
            if !valid_sub_path(sub) {
                return Err(fail(VolumeProblem::InvalidSubPath {
                    sub_path: sub.into(),
                }));
            }
            host_path = base.join(sub);
            if !host_path.exists() {
                // As upstream: a missing subPath is created as a directory.
                std::fs::create_dir_all(&host_path).map_err(|source| {
                    fail(VolumeProblem::CreateSubPath {
                        path: host_path.clone(),
                        source,
                    })
                })?;
            }
        }
        let propagation = match mount.mount_propagation.as_deref() {
            None | Some("None") => api::MountPropagation::PropagationPrivate,
            Some("HostToContainer") => api::MountPropagation::PropagationHostToContainer,
            Some("Bidirectional") => api::MountPropagation::PropagationBidirectional,
            Some(other) => {
                return Err(fail(VolumeProblem::UnknownPropagation {
                    propagation: other.into(),
                }))
            }
        };
        out.push(api::Mount {
            container_path: mount.mount_path.clone(),
            host_path: host_path.display().to_string(),
            readonly: mount.read_only.unwrap_or(false),
            selinux_relabel: false,
            propagation: propagation as i32,
        });
    }
    Ok(out)
}

/// Removes a pod's volumes once its containers are gone: unmounts its tmpfs volumes, then
/// deletes `<root-dir>/pods/<uid>`. hostPath data is never touched.
pub fn cleanup(root_dir: &Path, uid: &str) {
    let dir = pod_dir(root_dir, uid);
    let prefix = format!("{}/", dir.display());
    if let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") {
        let mut points: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|p| p.starts_with(&prefix))
            .collect();
        points.sort_by_key(|p| std::cmp::Reverse(p.len()));
        for point in points {
            if let Ok(target) = std::ffi::CString::new(point) {
                // SAFETY: a valid NUL-terminated path.
                if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } != 0 {
                    tracing::warn!(mount = point, error = %std::io::Error::last_os_error(), "cannot unmount a pod volume");
                }
            }
        }
    }
    if let Err(error) = std::fs::remove_dir_all(&dir) {
        if error.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(dir = %dir.display(), %error, "cannot remove the pod's volumes");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{DownwardAPIVolumeFile, ResourceFieldSelector};

    #[test]
    fn host_path_types_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        assert!(host_path_check(&missing, "File")
            .unwrap_err()
            .to_string()
            .contains("does not exist"));
        assert!(host_path_check(&missing, "Directory").is_err());
        host_path_check(&missing, "DirectoryOrCreate").unwrap();
        assert!(missing.is_dir());
        assert!(host_path_check(&missing, "File")
            .unwrap_err()
            .to_string()
            .contains("is not a file"));
        let file = dir.path().join("f");
        host_path_check(&file, "FileOrCreate").unwrap();
        assert!(file.is_file());
        assert!(host_path_check(&file, "Socket")
            .unwrap_err()
            .to_string()
            .contains("is not a socket"));
        assert!(host_path_check(&file, "Sideways").is_err());
    }

    #[test]
    fn atomic_writer_layout_and_rewrites() {
        let dir = tempfile::tempdir().unwrap();
        let vol = dir.path().join("v");
        let files = vec![
            ("labels".to_string(), "app=\"web\"".to_string(), 0o644),
            ("sub/name".to_string(), "web".to_string(), 0o644),
        ];
        atomic_write(&vol, &files).unwrap();
        assert_eq!(
            std::fs::read_to_string(vol.join("labels")).unwrap(),
            "app=\"web\""
        );
        assert_eq!(
            std::fs::read_to_string(vol.join("sub/name")).unwrap(),
            "web"
        );
        let first = std::fs::read_link(vol.join("..data")).unwrap();
        assert!(first.to_string_lossy().starts_with(".."));
        atomic_write(&vol, &files).unwrap();
        assert_eq!(
            std::fs::read_link(vol.join("..data")).unwrap(),
            first,
            "unchanged data is not rewritten"
        );
        let changed = vec![
            ("labels".to_string(), "app=\"api\"".to_string(), 0o644),
            files[1].clone(),
        ];
        std::thread::sleep(std::time::Duration::from_millis(2));
        atomic_write(&vol, &changed).unwrap();
        assert_eq!(
            std::fs::read_to_string(vol.join("labels")).unwrap(),
            "app=\"api\""
        );
        assert!(
            !vol.join(&first).exists(),
            "the old timestamped directory is removed"
        );
    }

    #[test]
    fn sub_paths_stay_inside() {
        assert!(valid_sub_path("a/b"));
        assert!(!valid_sub_path("../etc"));
        assert!(!valid_sub_path("/etc"));
        assert!(!valid_sub_path("a/../../b"));
    }

    #[test]
    fn errors_read_as_before() {
        let error = VolumeError {
            volume: "data".into(),
            reason: VolumeProblem::InvalidSubPath {
                sub_path: "../x".into(),
            },
        };
        assert_eq!(
            error.to_string(),
            r#"MountVolume.SetUp failed for volume "data": subPath "../x" must be a relative path inside the volume"#
        );
        let missing = Path::new("/nonexistent/wasmlet-test");
        assert_eq!(
            host_path_check(missing, "Socket").unwrap_err().to_string(),
            "hostPath type check failed: /nonexistent/wasmlet-test does not exist"
        );
        assert_eq!(
            host_path_check(missing, "Sideways")
                .unwrap_err()
                .to_string(),
            r#"unknown hostPath type "Sideways""#
        );
        let no_container = DownwardAPIVolumeFile {
            path: "cpu".into(),
            resource_field_ref: Some(ResourceFieldSelector {
                container_name: Some("nope".into()),
                resource: "limits.cpu".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            downward_files(&Pod::default(), &[no_container], None, 1)
                .unwrap_err()
                .to_string(),
            r#"resourceFieldRef names no container "nope""#
        );
    }
}
