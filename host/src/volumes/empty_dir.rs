//! `emptyDir` with `medium: Memory`: a tmpfs sized by `sizeLimit` or the pod's memory limit.

use super::VolumeProblem;
use crate::resources;
use k8s_openapi::api::core::v1::Pod;
use std::path::Path;

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
