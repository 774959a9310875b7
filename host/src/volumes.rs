//! Pod volumes a node can serve without an API server: `emptyDir` (on disk, or `medium:
//! Memory` as a sized tmpfs), `hostPath` with upstream's type checks, `downwardAPI` and
//! `projected` downward API sources (upstream's atomic-writer layout), mounted into
//! containers with `readOnly`, `subPath` and `mountPropagation`. The layout is upstream's:
//! `<root-dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>`.

use crate::fieldpath::FieldPathError;
use crate::resources::{self, QuantityError};
use downward::{atomic_write, downward_files};
use empty_dir::{is_mounted, mount_tmpfs, pod_memory_limit};
use host_path::host_path_check;
use k8s_openapi::api::core::v1::{Pod, Volume};
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

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

mod downward;
mod empty_dir;
mod host_path;
mod mounts;

pub use mounts::{mounts, valid_sub_path};

#[cfg(test)]
mod tests;
