//! Teardown of a pod's volumes: every mount under the pod's directory, deepest first, then the
//! directory itself, without following a symlink a container planted.

use super::pod_dir;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use tracing::warn;

/// The mount points under `dir`, deepest first, from `/proc/self/mountinfo` (whose octal
/// escapes of spaces and the like are decoded).
pub(super) fn mount_points_under(dir: &Path) -> Vec<PathBuf> {
    mount_points(dir, false)
}

/// The mount points under `dir`, and `dir` itself when `with_dir` and it is one, deepest
/// first.
fn mount_points(dir: &Path, with_dir: bool) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let mut points: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(std::ffi::OsString::from_vec(unescape_mountinfo(p))))
        .filter(|p| p.starts_with(dir) && (with_dir || p != dir))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
    points
}

/// A mountinfo field with its `\ooo` escapes decoded.
fn unescape_mountinfo(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0')));
        match octal.and_then(|n| u8::try_from(n).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    out
}

/// Removes a pod's volumes once its containers are gone: unmounts everything mounted under
/// `<root-dir>/pods/<uid>` (tmpfs volumes and the subPath binds in `volume-subpaths`),
/// deepest first, then deletes the directory. hostPath data is never touched: a subPath bind
/// of a hostPath is a mount point, and the directory stays (with a warning) while any mount
/// is left under it, as `remove_dir_all` would otherwise descend into it. Nothing here follows
/// a symlink: mountinfo lists kernel paths, the unmounts use `UMOUNT_NOFOLLOW`, and
/// `remove_dir_all` unlinks a symlink instead of entering it, so a link a container planted in
/// a volume never leads the cleanup out of the pod's directory.
pub fn cleanup(root_dir: &Path, uid: &str) {
    let dir = pod_dir(root_dir, uid);
    // The subPath binds first: they are mounts of the volumes' content. Then each volume on
    // its own, a `volume_unmount` of its plugin.
    unmount_all(mount_points_under(&dir.join("volume-subpaths")));
    for (plugin, volume) in volume_dirs(&dir) {
        let started = std::time::Instant::now();
        let removed = tear_down(&volume);
        crate::metrics::storage::record(&plugin, "volume_unmount", removed, started.elapsed());
    }
    unmount_all(mount_points_under(&dir));
    let left = mount_points_under(&dir);
    if let Some(point) = left.first() {
        warn!(dir = %dir.display(), mount = %point.display(), mounts = left.len(), "pod directory still has mounts; not removing it");
        return;
    }
    if let Err(error) = std::fs::remove_dir_all(&dir) {
        if error.kind() != std::io::ErrorKind::NotFound {
            warn!(dir = %dir.display(), %error, "cannot remove the pod's volumes");
        }
    }
}

fn unmount_all(points: Vec<PathBuf>) {
    use rustix::mount::{unmount, UnmountFlags};
    for point in points {
        if let Err(error) = unmount(&point, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW) {
            warn!(mount = %point.display(), %error, "cannot unmount a pod volume");
        }
    }
}

/// Each volume directory of the pod (`volumes/kubernetes.io~configmap/<name>`) with its
/// plugin's name (`kubernetes.io/configmap`).
fn volume_dirs(pod_dir: &Path) -> Vec<(String, PathBuf)> {
    let entries = |dir: &Path| {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
    };
    let mut volumes = Vec::new();
    for plugin_dir in entries(&pod_dir.join("volumes")) {
        let Some(plugin) = plugin_dir
            .file_name()
            .map(|n| n.to_string_lossy().replace('~', "/"))
        else {
            continue;
        };
        volumes.extend(entries(&plugin_dir).map(|volume| (plugin.clone(), volume)));
    }
    volumes
}

/// Unmounts one volume (a tmpfs itself, or with mounts under it) and removes its directory;
/// whether it is gone. A volume that keeps a mount is left in place, never descended into.
fn tear_down(volume: &Path) -> bool {
    unmount_all(mount_points(volume, true));
    if !mount_points(volume, true).is_empty() {
        return false;
    }
    match std::fs::remove_dir_all(volume) {
        Ok(()) => true,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => true,
        Err(error) => {
            warn!(volume = %volume.display(), %error, "cannot remove a pod volume");
            false
        }
    }
}
