//! Filesystem capacity and free space (statvfs), the source of the nodefs and imagefs
//! eviction signals and of image GC's usage, as cadvisor gives them to upstream's kubelet.

use super::StatsError;
use crate::cri::CriClient;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One filesystem's size, in bytes and inodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsStats {
    /// Total size (`f_blocks`).
    pub capacity_bytes: u64,
    /// Available to unprivileged users (`f_bavail`), as cadvisor reports it.
    pub available_bytes: u64,
    /// In use (`f_blocks - f_bfree`), cadvisor's `Usage` of a filesystem.
    pub used_bytes: u64,
    /// Total inodes (`f_files`).
    pub inodes: u64,
    /// Free inodes (`f_ffree`).
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
pub fn of(path: &Path) -> Result<FsStats, StatsError> {
    let raw = rustix::fs::statvfs(path).map_err(|errno| StatsError::Statvfs {
        path: path.to_path_buf(),
        source: errno.into(),
    })?;
    let block = raw.f_frsize;
    Ok(FsStats {
        capacity_bytes: raw.f_blocks.saturating_mul(block),
        available_bytes: raw.f_bavail.saturating_mul(block),
        used_bytes: raw
            .f_blocks
            .saturating_sub(raw.f_bfree)
            .saturating_mul(block),
        inodes: raw.f_files,
        inodes_free: raw.f_ffree,
    })
}

/// The image filesystem's size: the runtime names its mountpoint, statvfs measures it
/// (the runtime's own usage figure lags by seconds).
pub async fn image_fs(cri: &CriClient) -> Result<FsStats, StatsError> {
    let info = cri.image_fs_info().await?;
    let mountpoint = info
        .image_filesystems
        .iter()
        .filter_map(|f| f.fs_id.as_ref())
        .map(|id| id.mountpoint.clone())
        .find(|m| !m.is_empty())
        .ok_or(StatsError::NoImageFs)?;
    of(Path::new(&mountpoint))
}

/// The mount table (`/proc/self/mountinfo`), parsed once per reading, naming the device that
/// holds a path as cadvisor names filesystems in its `device` label: the mount source of the
/// deepest mount holding it (`/dev/vda1`, `overlay`, `tmpfs`). A node with 110 pods has
/// hundreds of mounts and every container asks for the same few paths, so each distinct path
/// is resolved once.
pub struct Mounts<'a> {
    /// Mount point and source of every mount.
    mounts: Vec<(&'a Path, &'a str)>,
    resolved: RefCell<HashMap<PathBuf, Option<&'a str>>>,
}

impl<'a> Mounts<'a> {
    /// The mounts of `mountinfo`'s text; lines it cannot read are skipped.
    pub fn parse(mountinfo: &'a str) -> Self {
        let mounts = mountinfo
            .lines()
            .filter_map(|line| {
                // id parent major:minor root mountpoint options [optional...] - fstype source super
                let mut fields = line.split(' ');
                let mountpoint = fields.nth(4)?;
                let source = fields.skip_while(|f| *f != "-").nth(2)?;
                Some((Path::new(mountpoint), source))
            })
            .collect();
        Mounts {
            mounts,
            resolved: RefCell::default(),
        }
    }

    /// The source of the deepest mount holding `path`.
    pub fn device_of(&self, path: &Path) -> Option<&'a str> {
        if let Some(device) = self.resolved.borrow().get(path) {
            return *device;
        }
        let device = self
            .mounts
            .iter()
            .filter(|(mountpoint, _)| path.starts_with(mountpoint))
            .max_by_key(|(mountpoint, _)| mountpoint.as_os_str().len())
            .map(|(_, source)| *source);
        self.resolved
            .borrow_mut()
            .insert(path.to_path_buf(), device);
        device
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_root_filesystem() {
        let stats = of(Path::new("/")).expect("statvfs /");
        assert!(stats.capacity_bytes > 0);
        assert!(stats.available_bytes <= stats.capacity_bytes);
        assert!(stats.used_bytes <= stats.capacity_bytes);
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
    fn a_missing_path_is_an_error_naming_it() {
        let error = of(Path::new("/does/not/exist/wasmlet")).expect_err("missing path");
        assert!(
            error
                .to_string()
                .starts_with("statvfs /does/not/exist/wasmlet: "),
            "{error}"
        );
    }

    #[test]
    fn a_path_is_on_the_deepest_mount_holding_it() {
        let mountinfo = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
30 22 0:26 / /var/lib/data rw shared:5 - xfs /dev/vdb rw
31 22 0:27 / /var/lib/database rw - tmpfs tmpfs rw
";
        let mounts = Mounts::parse(mountinfo);
        let device = |p: &str| mounts.device_of(Path::new(p));
        assert_eq!(device("/var/lib/data/containerd"), Some("/dev/vdb"));
        assert_eq!(device("/var/lib/database"), Some("tmpfs"));
        // A mountpoint is a path prefix, not a string prefix.
        assert_eq!(device("/var/lib/datastore"), Some("/dev/vda1"));
        // Asked again, the answer is the same (now from what was resolved).
        assert_eq!(device("/var/lib/data/containerd"), Some("/dev/vdb"));
        assert_eq!(Mounts::parse("").device_of(Path::new("/")), None);
    }
}
