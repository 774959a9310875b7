//! `hostPath` type checks, as upstream's `hostpath` volume plugin.

use super::VolumeProblem;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;

pub(super) fn host_path_check(path: &Path, kind: &str) -> Result<(), VolumeProblem> {
    let meta = std::fs::metadata(path);
    let exists_as = |want: &'static str, ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(VolumeProblem::HostPathWrongType {
                path: path.to_path_buf(),
                want,
            })
        }
    };
    match kind {
        "" => Ok(()),
        "DirectoryOrCreate" => match meta {
            Ok(m) => exists_as("directory", m.is_dir()),
            Err(_) => std::fs::create_dir_all(path)
                .and_then(|()| {
                    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
                })
                .map_err(|source| VolumeProblem::HostPathCreateDirectory {
                    path: path.to_path_buf(),
                    source,
                }),
        },
        "FileOrCreate" => match meta {
            Ok(m) => exists_as("file", m.is_file()),
            Err(_) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|f| f.set_permissions(std::fs::Permissions::from_mode(0o644)))
                .map_err(|source| VolumeProblem::HostPathCreateFile {
                    path: path.to_path_buf(),
                    source,
                }),
        },
        "Directory" | "File" | "Socket" | "CharDevice" | "BlockDevice" => {
            let m = meta.map_err(|_| VolumeProblem::HostPathMissing {
                path: path.to_path_buf(),
            })?;
            let t = m.file_type();
            match kind {
                "Directory" => exists_as("directory", t.is_dir()),
                "File" => exists_as("file", t.is_file()),
                "Socket" => exists_as("socket", t.is_socket()),
                "CharDevice" => exists_as("character device", t.is_char_device()),
                _ => exists_as("block device", t.is_block_device()),
            }
        }
        other => Err(VolumeProblem::UnknownHostPathType { kind: other.into() }),
    }
}
