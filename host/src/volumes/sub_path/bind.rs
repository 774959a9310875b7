//! The node's own mount of a resolved subPath, as upstream's `prepareSubpathTarget` and
//! `doBindSubPath`: `/proc/self/fd/<fd>` of the still-open resolved file is bind-mounted onto
//! `<pod-dir>/volume-subpaths/<volume>/<container>/<index>`. The kernel binds what the file
//! descriptor holds, not a path, so a swap inside the volume after the walk cannot redirect
//! it; the runtime then bind-mounts the target, which no container can reach or replace.
//! `volumes::cleanup` unmounts the targets with the pod's other mounts.

use rustix::fs::{FileType, Stat};
use rustix::io::Errno;
use rustix::mount::{mount_bind, unmount, UnmountFlags};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Upstream's directory of a pod's subPath targets, beside its `volumes`.
const SUBPATHS_DIR: &str = "volume-subpaths";

/// Where the subPath of mount number `index` of `container`, in `volume`, is bound, or `None`
/// when a name is not one plain path component (the API server's and the manifest source's
/// name validation make that unreachable; checked here too, as the path is the node's).
pub fn target(pod_dir: &Path, volume: &str, container: &str, index: usize) -> Option<PathBuf> {
    let plain = |name: &str| !matches!(name, "" | "." | "..") && !name.contains(['/', '\0']);
    (plain(volume) && plain(container)).then(|| {
        pod_dir
            .join(SUBPATHS_DIR)
            .join(volume)
            .join(container)
            .join(index.to_string())
    })
}

fn same_file(a: &Stat, b: &Stat) -> bool {
    a.st_dev == b.st_dev && a.st_ino == b.st_ino
}

fn file_type(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode)
}

/// Binds the file `fd` holds onto `target`. Returns `true` when `target` already showed that
/// file (a restarted container reuses its mount), `false` when it was mounted now; a target
/// showing anything else is unmounted and bound again. The result is checked: `target` must
/// show the very inode `fd` holds.
pub fn bind(fd: &OwnedFd, target: &Path) -> io::Result<bool> {
    let want = rustix::fs::fstat(fd)?;
    match rustix::fs::lstat(target) {
        Ok(shown) if same_file(&shown, &want) => return Ok(true),
        // A stale bind (the subPath now names another file) or a bare placeholder.
        Ok(_) => match unmount(target, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW) {
            Ok(()) | Err(Errno::INVAL) => {}
            Err(e) => return Err(e.into()),
        },
        Err(Errno::NOENT) => {}
        Err(e) => return Err(e.into()),
    }
    placeholder(target, file_type(&want) == FileType::Directory)?;
    mount_bind(format!("/proc/self/fd/{}", fd.as_raw_fd()), target)?;
    let shown = rustix::fs::lstat(target)?;
    if !same_file(&shown, &want) {
        let _ = unmount(target, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW);
        return Err(io::Error::other(
            "the mount shows another file than the resolved subPath",
        ));
    }
    Ok(false)
}

/// Makes `target` an empty directory (for a directory) or an empty file (for anything else:
/// a file is a mount point for sockets, devices and pipes too), as upstream. A placeholder of
/// the other kind is replaced; only an empty directory is ever removed.
fn placeholder(target: &Path, dir: bool) -> io::Result<()> {
    if let Some(parent) = target.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o750)
            .create(parent)?;
    }
    let wanted = if dir {
        FileType::Directory
    } else {
        FileType::RegularFile
    };
    match rustix::fs::lstat(target).map(|stat| file_type(&stat)) {
        Ok(kind) if kind == wanted => return Ok(()),
        Ok(FileType::Directory) => std::fs::remove_dir(target)?,
        // A file of the other kind, or a symlink (removed itself, never followed).
        Ok(_) => std::fs::remove_file(target)?,
        Err(Errno::NOENT) => {}
        Err(e) => return Err(e.into()),
    }
    if dir {
        std::fs::DirBuilder::new().mode(0o750).create(target)
    } else {
        // `create_new` is O_EXCL: it never follows a symlink at `target`.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o640)
            .open(target)
            .map(drop)
    }
}

#[cfg(test)]
mod tests;
