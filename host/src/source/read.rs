//! Reading one manifest file without trusting it: opened non-blocking (a FIFO cannot hold
//! the scan), its type and size checked on the opened file, read bounded, decoded as UTF-8.

use super::MAX_MANIFEST_BYTES;
use std::path::{Path, PathBuf};

/// Why a manifest file cannot be used; displayed after its name in `/manifests` and the log.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A symlink whose target is gone.
    #[error("is a symlink to {}, which does not exist", .0.display())]
    DanglingSymlink(PathBuf),
    /// The file could not be opened (permissions, a symlink loop...).
    #[error("cannot open: {0}")]
    Open(#[source] std::io::Error),
    /// The opened file's metadata could not be read.
    #[error("cannot read its metadata: {0}")]
    Metadata(#[source] std::io::Error),
    /// A directory: the static pod path is one level deep.
    #[error("is a directory; the static pod path is not read recursively")]
    Directory,
    /// A FIFO, socket or device.
    #[error("is not a regular file")]
    NotRegular,
    /// Larger than [`MAX_MANIFEST_BYTES`] (the size found, in bytes).
    #[error("is {} bytes, more than the {} bytes a manifest may hold", .0, MAX_MANIFEST_BYTES)]
    TooLarge(u64),
    /// Reading failed part way.
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
    /// Not UTF-8 text.
    #[error("is not UTF-8 text (invalid byte at offset {})", .0.utf8_error().valid_up_to())]
    NotUtf8(#[source] std::string::FromUtf8Error),
}

/// The text of one manifest: `Ok(None)` if it went between listing and reading (the next
/// event rescans), `Err` saying why it cannot be used. Symlinks are followed, as upstream.
pub fn read_manifest(file: &Path) -> Result<Option<String>, ReadError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking, so a FIFO cannot hold the scan; the type is checked on the opened file.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(
            (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY)
                .bits()
                .cast_signed(),
        )
        .open(file);
    let handle = match opened {
        Ok(handle) => handle,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return match std::fs::read_link(file) {
                Ok(target) => Err(ReadError::DanglingSymlink(target)),
                Err(_) => Ok(None),
            };
        }
        Err(e) => return Err(ReadError::Open(e)),
    };
    let metadata = handle.metadata().map_err(ReadError::Metadata)?;
    if metadata.is_dir() {
        return Err(ReadError::Directory);
    }
    if !metadata.is_file() {
        return Err(ReadError::NotRegular);
    }
    if metadata.len() > MAX_MANIFEST_BYTES {
        return Err(ReadError::TooLarge(metadata.len()));
    }
    // Bounded again while reading, for a file that grows after the check.
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    handle
        .take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Read)?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(ReadError::TooLarge(bytes.len() as u64));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(ReadError::NotUtf8)
}
