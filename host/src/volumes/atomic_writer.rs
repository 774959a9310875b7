//! Upstream's atomic writer (`pkg/volume/util/atomic_writer.go`): the files of a volume live
//! in a timestamped directory, `..data` points at it and is swapped by one rename, and each
//! top-level name is a symlink through `..data`. A reader sees the old set or the new one,
//! never a mix, which is what lets a configMap or a token change under a running container.
//! Unlike upstream's, every file operation is confined to the volume's directory.

use cap_std::ambient_authority;
use cap_std::fs::{Dir, Permissions, PermissionsExt};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::Path;

/// The symlink to the current timestamped directory.
const DATA: &str = "..data";
/// The new `..data` before the rename that makes it current.
const DATA_TMP: &str = "..data_tmp";

/// One file of a volume's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileProjection {
    /// Relative path inside the volume (checked by the payload's maker).
    pub path: String,
    /// The bytes, written as they are.
    pub data: Vec<u8>,
    /// The file's mode (`defaultMode` or the item's `mode`).
    pub mode: u32,
}

impl FileProjection {
    pub fn new(path: impl Into<String>, data: impl Into<Vec<u8>>, mode: u32) -> Self {
        Self {
            path: path.into(),
            data: data.into(),
            mode: mode & 0o7777,
        }
    }
}

/// Every regular file under `dir`, by path relative to it. Anything else (a symlink, a
/// socket) is not what the writer made: an error, so the payload is written anew.
fn read_tree(dir: &Dir) -> io::Result<BTreeMap<String, (Vec<u8>, u32)>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![(dir.try_clone()?, String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        for entry in dir.entries()? {
            let entry = entry?;
            let name = entry.file_name();
            let text = name.to_string_lossy();
            let relative = if prefix.is_empty() {
                text.into_owned()
            } else {
                format!("{prefix}/{text}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push((entry.open_dir()?, relative));
            } else if kind.is_file() {
                let mode = entry.metadata()?.permissions().mode() & 0o7777;
                out.insert(relative, (dir.read(&name)?, mode));
            } else {
                return Err(io::Error::other(format!(
                    "{relative} is not a regular file"
                )));
            }
        }
    }
    Ok(out)
}

/// The target of the top-level symlink `name`: through `..data`.
fn link_target(name: &str) -> String {
    format!("{DATA}/{name}")
}

/// Whether the data `..data` points at is exactly `files` (paths, bytes and modes) and every
/// top-level name is still its symlink through `..data`.
fn unchanged(volume: &Dir, files: &[FileProjection], top: &BTreeSet<&str>) -> bool {
    let is_link = |name: &str| volume.symlink_metadata(name).is_ok_and(|m| m.is_symlink());
    if !is_link(DATA) {
        return false;
    }
    let links_right = top.iter().all(|name| {
        is_link(name)
            && volume
                .read_link_contents(name)
                .is_ok_and(|target| target == Path::new(&link_target(name)))
    });
    // Opening `..data` through the capability fails when it leads out of the volume.
    let Ok(tree) = volume.open_dir(DATA).and_then(|data| read_tree(&data)) else {
        return false;
    };
    links_right
        && tree.len() == files.len()
        && files.iter().all(|f| {
            tree.get(&f.path)
                .is_some_and(|(data, mode)| *data == f.data && *mode == f.mode)
        })
}

/// Removes `name` in `volume` whatever it is, without following it: a directory with its
/// content, anything else (a symlink included) by unlinking it.
fn remove(volume: &Dir, name: &str) -> io::Result<()> {
    match volume.symlink_metadata(name) {
        Ok(meta) if meta.is_dir() => volume.remove_dir_all(name),
        Ok(_) => volume.remove_file(name),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes `files` into `dir` with the atomic-writer layout; unchanged data is not rewritten,
/// and names the new payload no longer has disappear.
///
/// Every operation goes through `dir` opened as a capability ([`cap_std::fs::Dir`]): a
/// symlink planted in the volume (say `..data` or a top-level name pointing at `/etc`) is
/// refused when it leads out of `dir` and replaced, never written, chmod-ed or deleted
/// through, so the writer cannot touch anything outside the volume.
pub(super) fn atomic_write(dir: &Path, files: &[FileProjection]) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let volume = Dir::open_ambient_dir(dir, ambient_authority())?;
    let top: BTreeSet<&str> = files
        .iter()
        .map(|f| f.path.split('/').next().unwrap_or(&f.path))
        .collect();
    if unchanged(&volume, files, &top) {
        return Ok(());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let stamp = format!("..{}.{:09}", now.as_secs(), now.subsec_nanos());
    volume.create_dir(&stamp)?;
    let data = volume.open_dir(&stamp)?;
    for file in files {
        if let Some(parent) = Path::new(&file.path)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
        {
            data.create_dir_all(parent)?;
        }
        data.write(&file.path, &file.data)?;
        data.set_permissions(&file.path, Permissions::from_mode(file.mode))?;
    }
    remove(&volume, DATA_TMP)?;
    volume.symlink(&stamp, DATA_TMP)?;
    // A rename replaces a symlink or a file, not a directory a container may have put there.
    if volume.symlink_metadata(DATA).is_ok_and(|m| m.is_dir()) {
        volume.remove_dir_all(DATA)?;
    }
    volume.rename(DATA_TMP, &volume, DATA)?;
    for name in &top {
        let right = volume
            .read_link_contents(name)
            .is_ok_and(|target| target == Path::new(&link_target(name)));
        if !right {
            remove(&volume, name)?;
            volume.symlink(link_target(name), name)?;
        }
    }
    for entry in volume.entries()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if name.starts_with("..") {
            // Old timestamped directories go once `..data` no longer points at them.
            if name != stamp && name != DATA && kind.is_dir() {
                let _ = volume.remove_dir_all(&name);
            }
        } else if kind.is_symlink() && !top.contains(name.as_str()) {
            // A key the object no longer has.
            let _ = volume.remove_file(&name);
        }
    }
    Ok(())
}
