//! The on-disk cache of compiled components: a directory only this user may write, and
//! entries trusted only when they are this user's and match the digest recorded beside them,
//! since a compiled component is loaded as machine code without further checks.

use super::sha256_hex;
use std::path::{Path, PathBuf};

/// Why a cache entry is not trusted; the component is then recompiled from its `.wasm`.
#[derive(Debug, thiserror::Error)]
pub(super) enum UntrustedEntry {
    /// The entry or its digest file is not a private file of this user's.
    #[error("{}: {reason}", .path.display())]
    NotPrivate {
        /// The entry or its digest file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        reason: NotPrivate,
    },
    /// The digest file could not be read.
    #[error("no recorded digest: {0}")]
    NoDigest(#[source] std::io::Error),
    /// The entry could not be read.
    #[error("unreadable: {0}")]
    Unreadable(#[source] std::io::Error),
    /// The entry's bytes are not those whose digest was recorded when they were written.
    #[error("sha256 {actual} ({len} bytes), recorded {recorded}")]
    Digest {
        /// The sha256 of the bytes read.
        actual: String,
        /// How many bytes were read.
        len: usize,
        /// The digest file's text, cut to 64 bytes.
        recorded: String,
    },
}

/// Why a file of the cache is not this user's alone.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotPrivate {
    /// Its metadata could not be read.
    #[error("unreadable: {0}")]
    Unreadable(#[source] std::io::Error),
    /// A symlink, directory or device.
    #[error("not a regular file")]
    NotFile,
    /// Another user owns it.
    #[error("owned by uid {owner}, not {me}")]
    Owner {
        /// Its owner.
        owner: u32,
        /// This process's effective uid.
        me: u32,
    },
    /// Its group or others may write it (the mode's permission bits).
    #[error("mode {0:o} lets others write it")]
    Writable(u32),
}

/// Creates `dir` (mode 0700) or makes an existing one 0700: compiled code is loaded without
/// further checks of its instructions, so only this user may write there. An existing
/// directory must be a real directory (not a symlink) owned by this user: making someone
/// else's directory 0700 would still leave it theirs to write.
pub(super) fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(std::io::Error::other("it is a symlink, not a directory"));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(std::io::Error::other(format!(
            "it is owned by uid {}, not by this process's uid {me}",
            meta.uid()
        )));
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    let mode = std::fs::metadata(dir)?.permissions().mode() & 0o777;
    if mode != 0o700 {
        return Err(std::io::Error::other(format!("mode is {mode:o}, not 700")));
    }
    Ok(())
}

/// `Err` with the reason unless `path` is a regular file (not a symlink) owned by this user
/// and writable by no one else: only then is a cache entry trusted.
fn owned_file(path: &Path) -> Result<(), NotPrivate> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).map_err(NotPrivate::Unreadable)?;
    if !meta.is_file() {
        return Err(NotPrivate::NotFile);
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(NotPrivate::Owner {
            owner: meta.uid(),
            me,
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(NotPrivate::Writable(meta.mode() & 0o777));
    }
    Ok(())
}

/// The file beside a cache entry that records the sha256 of the artifact as written.
fn digest_path(cached: &Path) -> PathBuf {
    cached.with_extension("cwasm.sha256")
}

/// Writes `artifact` and its digest, each through a temporary file and a rename, artifact
/// first: a crash in between leaves an entry whose digest does not match, which is recompiled.
pub(super) fn write_verified(cached: &Path, artifact: &[u8]) -> std::io::Result<()> {
    let write = |path: &Path, bytes: &[u8]| {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let tmp = path.with_extension("tmp");
        let _ = std::fs::remove_file(&tmp);
        // 0600 whatever the umask: an entry others can write is not trusted (`owned_file`).
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut file| file.write_all(bytes))
            .and_then(|()| std::fs::rename(&tmp, path))
    };
    write(cached, artifact)?;
    write(&digest_path(cached), sha256_hex(artifact).as_bytes())
}

/// A cache entry's bytes, if their sha256 is the one recorded when wasmlet wrote them.
pub(super) fn read_verified(cached: &Path) -> Result<Vec<u8>, UntrustedEntry> {
    for path in [cached, &digest_path(cached)] {
        owned_file(path).map_err(|reason| UntrustedEntry::NotPrivate {
            path: path.to_path_buf(),
            reason,
        })?;
    }
    let recorded =
        std::fs::read_to_string(digest_path(cached)).map_err(UntrustedEntry::NoDigest)?;
    let artifact = std::fs::read(cached).map_err(UntrustedEntry::Unreadable)?;
    let actual = sha256_hex(&artifact);
    if actual != recorded.trim() {
        return Err(UntrustedEntry::Digest {
            actual,
            len: artifact.len(),
            recorded: crate::cap::prefix(recorded.trim(), 64).to_string(),
        });
    }
    Ok(artifact)
}
