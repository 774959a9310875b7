//! `volumeMounts` to CRI mounts: readOnly, subPath (resolved beneath its volume and bound
//! under the pod's directory), propagation.

use super::{sub_path, VolumeError, VolumeKind, VolumeProblem};
use crate::cri::api;
use k8s_openapi::api::core::v1::{Container, Pod};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Whether a subPath stays inside its volume (relative, no `..`).
pub fn valid_sub_path(sub_path: &str) -> bool {
    let path = Path::new(sub_path);
    path.is_relative()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// Whether the pod's volume `name` is mounted read-only whatever the `volumeMount` says
/// ([`VolumeKind::read_only`]).
fn read_only_volume(pod: &Pod, name: &str) -> bool {
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .find(|v| v.name == name)
        .is_some_and(|v| VolumeKind::of(v).read_only())
}

/// The CRI mounts of `container` of `pod`, from the prepared volume paths. A subPath is
/// bind-mounted by the node under `pod_dir` (`<root-dir>/pods/<uid>`) and the runtime gets
/// that mount.
pub fn mounts(
    pod: &Pod,
    container: &Container,
    volumes: &HashMap<String, PathBuf>,
    pod_dir: &Path,
) -> Result<Vec<api::Mount>, VolumeError> {
    let mut out = Vec::new();
    for (index, mount) in container.volume_mounts.iter().flatten().enumerate() {
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
            let target = sub_path::bind::target(pod_dir, &mount.name, &container.name, index)
                .ok_or_else(|| {
                    fail(VolumeProblem::SubPathMount {
                        sub_path: sub.into(),
                        target: pod_dir.to_path_buf(),
                        source: std::io::Error::new(
                            std::io::ErrorKind::InvalidInput,
                            "the volume or container name is not a plain file name",
                        ),
                    })
                })?;
            host_path = sub_path::mount(base, sub, &target).map_err(fail)?;
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
            readonly: mount.read_only.unwrap_or(false) || read_only_volume(pod, &mount.name),
            selinux_relabel: false,
            propagation: propagation as i32,
        });
    }
    Ok(out)
}
