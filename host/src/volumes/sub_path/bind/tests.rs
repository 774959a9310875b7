//! These tests bind-mount, so they need root (CAP_SYS_ADMIN) as the node does; every mount is
//! undone by `volumes::cleanup` when the test's node directory is dropped, even on a panic.

use super::*;
use crate::volumes::cleanup::mount_points_under;
use crate::volumes::sub_path::{mount, open};
use crate::volumes::{cleanup, pod_dir, VolumeProblem};
use std::os::unix::fs::MetadataExt;

const UID: &str = "u1";

/// A root dir with one pod and one volume in it.
struct Node {
    root: tempfile::TempDir,
}

impl Node {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        let node = Self { root };
        std::fs::create_dir_all(node.volume()).unwrap_or_else(|e| panic!("volume: {e}"));
        node
    }

    fn pod_dir(&self) -> PathBuf {
        pod_dir(self.root.path(), UID)
    }

    fn volume(&self) -> PathBuf {
        self.pod_dir().join("volumes/kubernetes.io~empty-dir/data")
    }

    fn target(&self, index: usize) -> PathBuf {
        target(&self.pod_dir(), "data", "main", index).unwrap_or_default()
    }

    fn mounts_at(&self, path: &Path) -> usize {
        mount_points_under(&self.pod_dir())
            .iter()
            .filter(|p| *p == path)
            .count()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        cleanup(self.root.path(), UID);
    }
}

fn inode(path: &Path) -> (u64, u64) {
    std::fs::symlink_metadata(path).map_or((0, 0), |m| (m.dev(), m.ino()))
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| format!("<{e}>"))
}

#[test]
fn targets_are_upstreams_layout_and_plain_names_only() {
    let pod = Path::new("/var/lib/kubelet/pods/u1");
    assert_eq!(
        target(pod, "data", "main", 2),
        Some(pod.join("volume-subpaths/data/main/2"))
    );
    for bad in ["", ".", "..", "a/b", "/etc"] {
        assert_eq!(target(pod, bad, "main", 0), None, "volume {bad:?}");
        assert_eq!(target(pod, "data", bad, 0), None, "container {bad:?}");
    }
}

#[test]
fn the_target_is_bound_on_the_resolved_directory_and_reused() {
    let node = Node::new();
    write(&node.volume().join("a/b/f"), "inside");
    let target = node.target(0);
    let shown = mount(&node.volume(), "a/b", &target).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shown, target);
    assert!(target.is_dir());
    assert_eq!(inode(&target), inode(&node.volume().join("a/b")));
    assert_eq!(read(&target.join("f")), "inside");
    assert_eq!(node.mounts_at(&target), 1);

    // A restarted container: the same inode, the same mount.
    let fd = open(&node.volume(), "a/b").unwrap_or_else(|e| panic!("{e}"));
    assert!(bind(&fd, &target).unwrap_or_else(|e| panic!("{e}")));
    mount(&node.volume(), "a/b", &target).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(node.mounts_at(&target), 1, "reused, not stacked");
}

#[test]
fn a_component_swapped_for_a_symlink_after_resolve_changes_nothing() {
    let node = Node::new();
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    write(&outside.path().join("b/f"), "outside");
    write(&node.volume().join("a/b/f"), "inside");
    let target = node.target(0);

    let fd = open(&node.volume(), "a/b").unwrap_or_else(|e| panic!("{e}"));
    // What a container sharing the volume could do between the walk and the mount.
    std::fs::rename(node.volume().join("a"), node.volume().join("a.old"))
        .unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(outside.path(), node.volume().join("a"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!bind(&fd, &target).unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(read(&target.join("f")), "inside");
    assert_eq!(inode(&target), inode(&node.volume().join("a.old/b")));

    // The next start walks the swapped path and is refused; the target keeps what it showed.
    let error = mount(&node.volume(), "a/b", &target).map(drop);
    assert!(
        matches!(error, Err(VolumeProblem::SubPathEscapes { .. })),
        "{error:?}"
    );
    assert_eq!(read(&target.join("f")), "inside");
    assert_eq!(read(&outside.path().join("b/f")), "outside");
}

#[test]
fn a_sub_path_naming_another_file_is_bound_anew() {
    let node = Node::new();
    write(&node.volume().join("a/f"), "dir");
    let target = node.target(1);
    mount(&node.volume(), "a", &target).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read(&target.join("f")), "dir");

    std::fs::remove_dir_all(node.volume().join("a")).unwrap_or_else(|e| panic!("{e}"));
    write(&node.volume().join("a"), "file");
    mount(&node.volume(), "a", &target).unwrap_or_else(|e| panic!("{e}"));
    assert!(target.is_file());
    assert_eq!(read(&target), "file");
    assert_eq!(inode(&target), inode(&node.volume().join("a")));
    assert_eq!(node.mounts_at(&target), 1, "the stale bind is gone");
}

/// A subPath of a hostPath is bound under the pod's directory: the cleanup unmounts it before
/// it deletes the directory, so the host's files stay.
#[test]
fn cleanup_unmounts_the_binds_and_keeps_the_sources() {
    let node = Node::new();
    let host = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    write(&host.path().join("sub/keep"), "host data");
    let target = node.target(0);
    mount(host.path(), "sub", &target).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read(&target.join("keep")), "host data");

    cleanup(node.root.path(), UID);
    assert!(!node.pod_dir().exists());
    assert_eq!(read(&host.path().join("sub/keep")), "host data");
}
