//! A pod's `fsGroup` applied to a volume, as upstream's `SetVolumeOwnership`: every file and
//! directory gets the group, files the group's read (and, when writable, write) bits,
//! directories also setgid and search, so a non-root container in that group can use it.
//! Symlinks are given the group but never chmod-ed (that would change their targets), and the
//! walk never follows one.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tracing::warn;

/// Group bits added to files: read, and write unless the volume is read-only.
const READ_WRITE_MASK: u32 = 0o660;
const READ_ONLY_MASK: u32 = 0o440;
/// Added to directories besides the file mask.
const DIRECTORY_MASK: u32 = 0o2110;

/// Applies `fs_group` under `dir` (itself included). Failures are logged per path and the walk
/// goes on, as upstream's.
pub fn apply(dir: &Path, fs_group: u32, read_only: bool) {
    let mask = if read_only {
        READ_ONLY_MASK
    } else {
        READ_WRITE_MASK
    };
    walk(dir, fs_group, mask);
}

fn walk(path: &Path, gid: u32, mask: u32) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if let Err(error) = rustix::fs::chownat(
        rustix::fs::CWD,
        path,
        None,
        Some(rustix::fs::Gid::from_raw(gid)),
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    ) {
        warn!(path = %path.display(), %error, "cannot give a volume file the pod's fsGroup");
    }
    if meta.file_type().is_symlink() {
        return;
    }
    let extra = if meta.is_dir() {
        mask | DIRECTORY_MASK
    } else {
        mask
    };
    let mode = meta.permissions().mode() & 0o7777;
    if mode | extra != mode {
        if let Err(error) =
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode | extra))
        {
            warn!(path = %path.display(), %error, "cannot set a volume file's group mode");
        }
    }
    if meta.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for entry in entries.flatten() {
            walk(&entry.path(), gid, mask);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn files_get_the_group_and_its_bits_symlinks_keep_their_targets() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("..data");
        std::fs::create_dir(&sub).expect("mkdir");
        let file = sub.join("key");
        std::fs::write(&file, "v").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o400)).expect("chmod");
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "o").expect("write");
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::os::unix::fs::symlink(&outside, sub.join("link")).expect("symlink");
        // The current group, so the test needs no privilege to chown.
        let gid = std::fs::metadata(dir.path()).expect("stat").gid();
        apply(&sub, gid, true);
        let mode = |p: &Path| {
            std::fs::symlink_metadata(p)
                .expect("stat")
                .permissions()
                .mode()
                & 0o7777
        };
        assert_eq!(mode(&file), 0o440);
        assert_eq!(mode(&sub) & 0o2550, 0o2550);
        assert_eq!(mode(&outside), 0o600, "a symlink's target is not chmod-ed");
        apply(&sub, gid, false);
        assert_eq!(mode(&file), 0o660);
    }
}
