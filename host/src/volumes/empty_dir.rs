//! `emptyDir`: a directory every container user may write, or with `medium: Memory` a tmpfs
//! sized by `sizeLimit` or the pod's memory limit.

use super::VolumeProblem;
use crate::resources;
use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, Pod};
use rustix::mount::MountFlags;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Creates the emptyDir at `path`: a tmpfs for `medium: Memory` (mounted once; a mounted one
/// stays), else a directory of mode 0777 so that any container user can write it.
pub(super) fn set_up(
    path: &Path,
    source: &EmptyDirVolumeSource,
    pod: &Pod,
) -> Result<(), VolumeProblem> {
    std::fs::create_dir_all(path).map_err(|error| VolumeProblem::CreateDirectory {
        path: path.to_path_buf(),
        source: error,
    })?;
    if source.medium.as_deref() == Some("Memory") {
        if !is_mounted(path) {
            let size = match &source.size_limit {
                Some(q) => resources::bytes(q).map_err(VolumeProblem::SizeLimit)?,
                None => pod_memory_limit(pod),
            };
            mount_tmpfs(path, size)?;
        }
    } else {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).map_err(
            |error| VolumeProblem::SetPermissions {
                path: path.to_path_buf(),
                source: error,
            },
        )?;
    }
    Ok(())
}

pub(super) fn is_mounted(path: &Path) -> bool {
    let target = path.display().to_string();
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|text| {
            text.lines()
                .any(|l| l.split(' ').nth(4) == Some(target.as_str()))
        })
        .unwrap_or(false)
}

pub(super) fn mount_tmpfs(path: &Path, size_bytes: i64) -> Result<(), VolumeProblem> {
    use std::ffi::CString;
    let target = CString::new(path.as_os_str().as_encoded_bytes())?;
    let options = if size_bytes > 0 {
        format!("mode=0777,size={size_bytes}")
    } else {
        "mode=0777".into()
    };
    let options = CString::new(options)?;
    rustix::mount::mount(
        c"tmpfs",
        target.as_c_str(),
        c"tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        options.as_c_str(),
    )
    .map_err(|errno| VolumeProblem::MountTmpfs {
        path: path.to_path_buf(),
        source: errno.into(),
    })
}

/// The pod's memory limit (sum of its app containers' limits; 0 when any is unlimited).
pub(super) fn pod_memory_limit(pod: &Pod) -> i64 {
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
