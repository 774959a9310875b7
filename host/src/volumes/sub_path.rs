//! Resolving a `subPath` without leaving its volume, whatever the volume holds: a container
//! that shares the volume may have replaced a directory on the way with a symlink to `/`
//! (the CVE-2017-1002101 class). Every step is opened with `openat2(RESOLVE_BENEATH)` from the
//! volume's own directory, so a symlink may point within the volume and never out of it, and a
//! missing directory is created with `mkdirat` in the parent so resolved, never by path.
//!
//! The path is never handed on: while the resolved file descriptor is still open, [`mount`]
//! bind-mounts it ([`bind`]) onto a target under the pod's directory, which only the node
//! writes, and the runtime gets that target. A component swapped for a symlink after the walk
//! changes nothing the container sees (upstream's `doBindSubPath`).

use super::VolumeProblem;
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// Mode of a directory created for a missing subPath (upstream's `0750` for subpaths it
/// makes is umask-dependent; containers expect to enter it).
const CREATED_DIR_MODE: u32 = 0o755;

fn beneath(dir: &OwnedFd, path: &Path) -> Result<OwnedFd, Errno> {
    rustix::fs::openat2(
        dir.as_fd(),
        path,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    )
}

/// Resolves `sub_path` beneath the volume at `base` and bind-mounts what it names onto
/// `target` (see [`bind`]); returns `target`, the path the runtime mounts into the container.
/// `sub_path` is already known to be relative without `..`.
pub fn mount(base: &Path, sub_path: &str, target: &Path) -> Result<PathBuf, VolumeProblem> {
    let fd = open(base, sub_path)?;
    match bind::bind(&fd, target) {
        Ok(reused) => {
            tracing::debug!(sub_path, target = %target.display(), reused, "subPath bound");
            Ok(target.to_path_buf())
        }
        Err(source) => Err(VolumeProblem::SubPathMount {
            sub_path: sub_path.to_string(),
            target: target.to_path_buf(),
            source,
        }),
    }
}

/// Opens (`O_PATH`) what `sub_path` of the volume at `base` resolves to, created as a
/// directory when missing (as upstream).
fn open(base: &Path, sub_path: &str) -> Result<OwnedFd, VolumeProblem> {
    let escape = |reason: String| VolumeProblem::SubPathEscapes {
        sub_path: sub_path.to_string(),
        reason,
    };
    let root = rustix::fs::open(
        base,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| escape(format!("cannot open the volume: {e}")))?;
    let mut walked = PathBuf::new();
    let mut current: Option<OwnedFd> = None;
    for component in Path::new(sub_path).components() {
        let Component::Normal(name) = component else {
            continue;
        };
        walked.push(name);
        let fd = match beneath(&root, &walked) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                let parent = current.as_ref().unwrap_or(&root);
                match rustix::fs::mkdirat(
                    parent.as_fd(),
                    name,
                    Mode::from_raw_mode(CREATED_DIR_MODE),
                ) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => {
                        return Err(VolumeProblem::CreateSubPath {
                            path: base.join(&walked),
                            source: e.into(),
                        })
                    }
                }
                beneath(&root, &walked).map_err(|e| refusal(&walked, e, &escape))?
            }
            Err(e) => return Err(refusal(&walked, e, &escape)),
        };
        current = Some(fd);
    }
    Ok(current.unwrap_or(root))
}

fn refusal(
    walked: &Path,
    error: Errno,
    escape: &impl Fn(String) -> VolumeProblem,
) -> VolumeProblem {
    match error {
        Errno::XDEV => escape(format!(
            "{} leads out of the volume (a symlink to an absolute path or above the volume)",
            walked.display()
        )),
        Errno::LOOP => escape(format!("{} is a symlink loop", walked.display())),
        Errno::NOSYS => escape(
            "the kernel lacks openat2 (Linux 5.6 or later is needed to mount a subPath safely)"
                .into(),
        ),
        other => escape(format!("{}: {other}", walked.display())),
    }
}

pub(super) mod bind;

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// The path the kernel resolved `sub_path` to.
    fn resolve(base: &Path, sub_path: &str) -> Result<PathBuf, VolumeProblem> {
        let fd = open(base, sub_path)?;
        Ok(std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap_or_default())
    }

    fn volume() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"))
    }

    #[test]
    fn a_missing_sub_path_is_created_inside_the_volume() {
        let dir = volume();
        let resolved = resolve(dir.path(), "a/b/c").unwrap_or_else(|e| panic!("{e}"));
        let base = dir.path().canonicalize().unwrap_or_default();
        assert_eq!(resolved, base.join("a/b/c"));
        assert!(resolved.is_dir());
    }

    #[test]
    fn a_symlink_within_the_volume_is_followed() {
        let dir = volume();
        std::fs::create_dir(dir.path().join("real")).unwrap_or_default();
        std::os::unix::fs::symlink("real", dir.path().join("link")).unwrap_or_default();
        let resolved = resolve(dir.path(), "link").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            resolved,
            dir.path().canonicalize().unwrap_or_default().join("real")
        );
    }

    #[test]
    fn a_symlink_out_of_the_volume_is_refused() {
        let dir = volume();
        std::os::unix::fs::symlink("/", dir.path().join("root")).unwrap_or_default();
        std::os::unix::fs::symlink("../..", dir.path().join("up")).unwrap_or_default();
        std::fs::create_dir(dir.path().join("d")).unwrap_or_default();
        std::os::unix::fs::symlink("/etc", dir.path().join("d/etc")).unwrap_or_default();
        for sub in ["root", "up", "d/etc", "root/etc/x"] {
            let error = resolve(dir.path(), sub).map(|p| p.display().to_string());
            assert!(
                matches!(error, Err(VolumeProblem::SubPathEscapes { .. })),
                "{sub}: {error:?}"
            );
        }
        assert!(
            !Path::new("/etc/x").exists(),
            "nothing created out of the volume"
        );
    }

    #[test]
    fn a_file_sub_path_resolves_to_the_file() {
        let dir = volume();
        std::fs::write(dir.path().join("f"), "x").unwrap_or_default();
        let resolved = resolve(dir.path(), "f").unwrap_or_else(|e| panic!("{e}"));
        assert!(resolved.is_file());
    }
}
