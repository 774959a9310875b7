//! Filesystem capacity and free space (statvfs), the source of the nodefs and imagefs
//! eviction signals and of image GC's usage, as cadvisor gives them to upstream's kubelet.

use std::ffi::CString;
use std::io;
use std::path::Path;

/// One filesystem's size, in bytes and inodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsStats {
    pub capacity_bytes: u64,
    /// Available to unprivileged users (`f_bavail`), as cadvisor reports it.
    pub available_bytes: u64,
    pub inodes: u64,
    pub inodes_free: u64,
}

impl FsStats {
    /// Used space as a whole percentage of capacity (upstream image GC's measure).
    pub fn usage_percent(&self) -> u64 {
        if self.capacity_bytes == 0 {
            return 0;
        }
        let used = self.capacity_bytes.saturating_sub(self.available_bytes);
        (u128::from(used) * 100 / u128::from(self.capacity_bytes)) as u64
    }
}

/// statvfs of the filesystem holding `path`.
pub fn of(path: &Path) -> io::Result<FsStats> {
    let c_path = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    let mut raw: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c_path is a valid NUL-terminated string and raw a writable statvfs.
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut raw) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let block = raw.f_frsize as u64;
    Ok(FsStats {
        capacity_bytes: (raw.f_blocks as u64).saturating_mul(block),
        available_bytes: (raw.f_bavail as u64).saturating_mul(block),
        inodes: raw.f_files as u64,
        inodes_free: raw.f_ffree as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_root_filesystem() {
        let stats = of(Path::new("/")).expect("statvfs /");
        assert!(stats.capacity_bytes > 0);
        assert!(stats.available_bytes <= stats.capacity_bytes);
        assert!(stats.usage_percent() <= 100);
    }

    #[test]
    fn usage_is_used_over_capacity() {
        let stats = FsStats {
            capacity_bytes: 1000,
            available_bytes: 150,
            ..Default::default()
        };
        assert_eq!(stats.usage_percent(), 85);
        assert_eq!(FsStats::default().usage_percent(), 0);
    }

    #[test]
    fn a_missing_path_is_an_error() {
        assert!(of(Path::new("/does/not/exist/wasmlet")).is_err());
    }
}
