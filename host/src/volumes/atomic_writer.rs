//! Upstream's atomic writer (`pkg/volume/util/atomic_writer.go`): the files of a volume live
//! in a timestamped directory, `..data` points at it and is swapped by one rename, and each
//! top-level name is a symlink through `..data`. A reader sees the old set or the new one,
//! never a mix, which is what lets a configMap or a token change under a running container.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

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

/// Every regular file under `dir`, by path relative to it.
fn read_tree(dir: &Path) -> std::io::Result<BTreeMap<String, (Vec<u8>, u32)>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, prefix)) = pending.pop() {
        for entry in std::fs::read_dir(&path)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let meta = entry.metadata()?;
            if meta.is_dir() {
                pending.push((entry.path(), relative));
            } else {
                let data = std::fs::read(entry.path())?;
                out.insert(relative, (data, meta.permissions().mode() & 0o7777));
            }
        }
    }
    Ok(out)
}

/// Whether the data `..data` points at is exactly `files` (paths, bytes and modes).
fn unchanged(current: &Path, files: &[FileProjection]) -> bool {
    let Ok(tree) = read_tree(current) else {
        return false;
    };
    tree.len() == files.len()
        && files.iter().all(|f| {
            tree.get(&f.path)
                .is_some_and(|(data, mode)| *data == f.data && *mode == f.mode)
        })
}

/// Writes `files` into `dir` with the atomic-writer layout; unchanged data is not rewritten,
/// and names the new payload no longer has disappear.
pub(super) fn atomic_write(dir: &Path, files: &[FileProjection]) -> std::io::Result<()> {
    use std::os::unix::fs::symlink;
    let current = dir.join("..data");
    if current.is_dir() && unchanged(&current, files) {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let stamp = format!("..{}.{:09}", now.as_secs(), now.subsec_nanos());
    let data_dir = dir.join(&stamp);
    std::fs::create_dir_all(&data_dir)?;
    for file in files {
        let target = data_dir.join(&file.path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, &file.data)?;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(file.mode))?;
    }
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    symlink(&stamp, &tmp)?;
    std::fs::rename(&tmp, &current)?;
    let top: BTreeSet<&str> = files
        .iter()
        .map(|f| f.path.split('/').next().unwrap_or(&f.path))
        .collect();
    for name in &top {
        let link = dir.join(name);
        if std::fs::symlink_metadata(&link).is_err() {
            symlink(format!("..data/{name}"), &link)?;
        }
    }
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let is_link = path.is_symlink();
        if name.starts_with("..") {
            // Old timestamped directories go once `..data` no longer points at them.
            if name != stamp && name != "..data" && !is_link && path.is_dir() {
                let _ = std::fs::remove_dir_all(&path);
            }
        } else if is_link && !top.contains(name.as_str()) {
            // A key the object no longer has.
            let _ = std::fs::remove_file(&path);
        }
    }
    Ok(())
}
