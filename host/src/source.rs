//! Pod sources. Standalone mode has one: the static manifest directory, watched with inotify
//! and rescanned every `fileCheckFrequency` as a safety net. The source publishes whole
//! snapshots; the SyncLoop diffs them by UID.

mod changes;
pub mod manifest;
pub mod merge;
mod read;

use k8s_openapi::api::core::v1::Pod;
pub use read::{read_manifest, ReadError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn};

/// A pod read from a manifest file.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticPod {
    /// The manifest it came from, so `/manifests` and errors can name it.
    pub file: PathBuf,
    /// The pod as the manifest defines it, with upstream's defaults, UID and node name filled
    /// in; shared with the merge and the SyncLoop, which hold the same pod.
    pub pod: Arc<Pod>,
}

impl StaticPod {
    /// The UID the manifest hashed to.
    pub fn uid(&self) -> &str {
        self.pod.metadata.uid.as_deref().unwrap_or("")
    }
}

/// A manifest that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ManifestError {
    /// The manifest that was refused.
    pub file: PathBuf,
    /// Why, in words the author can act on.
    pub message: String,
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

/// Everything the directory held at one scan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceSnapshot {
    /// Whether the source has completed a scan (upstream's `sourcesReady`): orphan cleanup
    /// waits for it so a restart never kills pods whose manifests were not read yet.
    pub ready: bool,
    /// The pods the usable manifests defined.
    pub pods: Vec<StaticPod>,
    /// The manifests that were refused, kept so `/manifests` shows them.
    pub errors: Vec<ManifestError>,
}

/// The API server source's view (cluster mode): the pods bound to this node, mirror pods
/// excluded. `cluster::pod_source` fills it; the merge reads it beside the static snapshot.
#[derive(Debug, Clone, Default)]
pub struct ApiSnapshot {
    /// Whether the first list has completed (upstream's `sourcesReady` for the API source).
    pub ready: bool,
    /// The pods bound to this node, shared with the merge and the SyncLoop.
    pub pods: Vec<Arc<Pod>>,
}

/// The largest manifest file read, in bytes. Upstream has no cap; a pod spec is a few KiB, so
/// a file past 1 MiB is a mistake (or an attack on the scan) and is refused by name, its size
/// read from the opened file before any of it is.
pub const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// Reads every manifest under `path` (a directory, or a single file as upstream allows).
///
/// Each file stands alone: one that cannot be opened, is not a regular file, is larger than
/// [`MAX_MANIFEST_BYTES`], is not UTF-8 or does not parse is reported by name and skipped.
/// A file that defined a pod in `previous` and has turned bad keeps that pod as it was until
/// the file is fixed or removed, as upstream's file source keeps a pod whose file it cannot
/// process on a change; a path that cannot be listed keeps every pod of `previous`. A file
/// whose text is unchanged (the UID hashes it with the node and the path) keeps its pod of
/// `previous` without being parsed again: the periodic rescan reads, but does not parse.
pub fn scan(path: &Path, node_name: &str, previous: &SourceSnapshot) -> SourceSnapshot {
    let mut snapshot = SourceSnapshot {
        ready: true,
        ..Default::default()
    };
    let files = match list_manifest_files(path) {
        Ok(files) => files,
        Err(error) => {
            // Gone altogether: nothing to run (upstream sends an empty set). Unreadable: keep
            // what ran, as upstream sends no update when it cannot list the path.
            if error.kind() != std::io::ErrorKind::NotFound {
                snapshot.pods = previous.pods.clone();
            }
            snapshot.errors.push(ManifestError {
                file: path.to_path_buf(),
                message: format!("cannot read the static pod path: {error}"),
            });
            return snapshot;
        }
    };
    snapshot.pods.reserve_exact(files.len());
    let by_file: HashMap<&Path, &StaticPod> = previous
        .pods
        .iter()
        .map(|p| (p.file.as_path(), p))
        .collect();
    for file in files {
        let kept = by_file.get(file.as_path()).copied();
        let loaded = match read_manifest(&file) {
            Ok(None) => continue,
            Ok(Some(text)) => {
                let uid = manifest::pod_uid(&text, &file, node_name);
                if let Some(unchanged) = kept.filter(|p| p.uid() == uid) {
                    add_pod(&mut snapshot, unchanged.clone());
                    continue;
                }
                manifest::load(&text, &file, node_name)
                    .map(Arc::new)
                    .map_err(|p| p.to_string())
            }
            Err(error) => Err(error.to_string()),
        };
        let message = match loaded {
            Ok(pod) => {
                add_pod(&mut snapshot, StaticPod { file, pod });
                continue;
            }
            Err(message) => message,
        };
        match kept {
            Some(kept) => {
                snapshot.errors.push(ManifestError {
                    file,
                    message: format!(
                        "{message}; pod {:?} keeps running as the file last defined it",
                        kept.pod.metadata.name.as_deref().unwrap_or_default()
                    ),
                });
                add_pod(&mut snapshot, kept.clone());
            }
            None => snapshot.errors.push(ManifestError { file, message }),
        }
    }
    snapshot
}

/// Adds `pod` unless an earlier file already defined a pod of that name and namespace.
fn add_pod(snapshot: &mut SourceSnapshot, pod: StaticPod) {
    let meta = &pod.pod.metadata;
    let duplicate = snapshot
        .pods
        .iter()
        .find(|p| p.pod.metadata.name == meta.name && p.pod.metadata.namespace == meta.namespace);
    match duplicate {
        Some(first) => snapshot.errors.push(ManifestError {
            message: format!(
                "field `metadata.name`: pod {:?} is already defined by {}",
                meta.name.as_deref().unwrap_or_default(),
                first.file.display()
            ),
            file: pod.file,
        }),
        None => snapshot.pods.push(pod),
    }
}

/// Whether a directory entry is hidden: the scan skips it, as upstream does, and its changes
/// start no scan.
fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().starts_with(b".")
}

/// The manifest files under `path`, in name order; hidden files are skipped as upstream.
/// Every other entry is listed, whatever its type, so that one that cannot be used is named.
fn list_manifest_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if std::fs::metadata(path)?.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let name = entry?.file_name();
        if !is_hidden(&name) {
            names.push(name);
        }
    }
    names.sort();
    Ok(names.into_iter().map(|name| path.join(name)).collect())
}

/// Runs the static source until the receiver side is dropped.
pub async fn run_static_source(
    path: PathBuf,
    node_name: String,
    rescan_period: Duration,
    publish: watch::Sender<Arc<SourceSnapshot>>,
) {
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let mut watcher = None;
    let mut last_errors = Vec::new();
    loop {
        if watcher.is_none() {
            watcher = changes::watch_directory(&path, events_tx.clone());
        }
        let snapshot = {
            let path = path.clone();
            let node_name = node_name.clone();
            let previous = publish.borrow().clone();
            match tokio::task::spawn_blocking(move || scan(&path, &node_name, &previous)).await {
                Ok(snapshot) => snapshot,
                // The scan panicked (a bug): keep what the node runs rather than drop it all.
                Err(error) => {
                    warn!(%error, "static pod scan failed; keeping the pods of the last scan");
                    (**publish.borrow()).clone()
                }
            }
        };
        if snapshot.errors != last_errors {
            for error in &snapshot.errors {
                warn!(file = %error.file.display(), error = %error.message, "static pod manifest rejected");
            }
            last_errors = snapshot.errors.clone();
        }
        let changed = **publish.borrow() != snapshot;
        if changed {
            debug!(
                pods = snapshot.pods.len(),
                errors = snapshot.errors.len(),
                "static pod source changed"
            );
            if publish.send(Arc::new(snapshot)).is_err() {
                return;
            }
        }
        tokio::select! {
            change = changes::next_change(&mut events_rx, changes::SETTLE) => if change.is_none() { return },
            _ = tokio::time::sleep(rescan_period) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let mode = rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR;
        rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, mode, 0).unwrap();
    }

    #[test]
    fn one_bad_file_does_not_hide_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let good = "apiVersion: v1\nkind: Pod\nmetadata: {name: good}\nspec:\n  containers: [{name: c, image: busybox:local}]\n";
        std::fs::write(dir.path().join("a-good.yaml"), good).unwrap();
        std::fs::write(
            dir.path().join("b-bad.yaml"),
            "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [{name: c}]}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("c-dup.yaml"), good).unwrap();
        std::fs::write(dir.path().join(".hidden.yaml"), "garbage").unwrap();
        let snapshot = scan(dir.path(), "node", &SourceSnapshot::default());
        assert!(snapshot.ready);
        assert_eq!(snapshot.pods.len(), 1);
        assert_eq!(
            snapshot.pods[0].pod.metadata.name.as_deref(),
            Some("good-node")
        );
        assert_eq!(snapshot.errors.len(), 2, "{:?}", snapshot.errors);
        assert!(snapshot.errors[0].file.ends_with("b-bad.yaml"));
        assert!(
            snapshot.errors[0]
                .message
                .contains("spec.containers[0].image"),
            "{}",
            snapshot.errors[0]
        );
        assert!(
            snapshot.errors[1].message.contains("already defined by"),
            "{}",
            snapshot.errors[1]
        );
    }

    #[test]
    fn missing_directory_is_an_error_not_a_panic() {
        let snapshot = scan(
            Path::new("/nonexistent/wasmlet-manifests"),
            "node",
            &SourceSnapshot::default(),
        );
        assert!(snapshot.pods.is_empty());
        assert_eq!(snapshot.errors.len(), 1);
    }

    const GOOD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: good}\nspec:\n  containers: [{name: c, image: busybox:local}]\n";

    fn pod_yaml(name: &str) -> String {
        GOOD.replace("name: good", &format!("name: {name}"))
    }

    #[test]
    fn a_rescan_keeps_the_pods_of_unchanged_files_and_parses_only_the_edited_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), pod_yaml("a")).unwrap();
        std::fs::write(dir.path().join("b.yaml"), pod_yaml("b")).unwrap();
        let first = scan(dir.path(), "node", &SourceSnapshot::default());
        let again = scan(dir.path(), "node", &first);
        assert_eq!(again, first);
        for (kept, before) in again.pods.iter().zip(&first.pods) {
            assert!(
                Arc::ptr_eq(&kept.pod, &before.pod),
                "{} parsed again",
                kept.file.display()
            );
        }
        // The same text under another node name is another pod: the UID hashes the node.
        let elsewhere = scan(dir.path(), "other", &first);
        assert!(!Arc::ptr_eq(&elsewhere.pods[0].pod, &first.pods[0].pod));
        assert_eq!(
            elsewhere.pods[0].pod.metadata.name.as_deref(),
            Some("a-other")
        );
        std::fs::write(
            dir.path().join("b.yaml"),
            pod_yaml("b").replace("busybox:local", "busybox:2"),
        )
        .unwrap();
        let edited = scan(dir.path(), "node", &again);
        assert!(Arc::ptr_eq(&edited.pods[0].pod, &first.pods[0].pod));
        assert_ne!(edited.pods[1].uid(), first.pods[1].uid());
        let image = edited.pods[1].pod.spec.as_ref().unwrap().containers[0]
            .image
            .as_deref();
        assert_eq!(image, Some("busybox:2"));
    }

    /// An alias bomb: nine levels of nine references, 9^9 strings once expanded, in the one
    /// field of a pod that takes any JSON (`managedFields[].fieldsV1`), so it is expanded.
    pub(crate) fn alias_bomb() -> String {
        let mut text = String::from("apiVersion: v1\nkind: Pod\n");
        text.push_str("x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for level in 1..9 {
            let previous = format!("*x{}", level - 1);
            let refs = [previous.as_str(); 9].join(", ");
            text.push_str(&format!("x{level}: &x{level} [{refs}]\n"));
        }
        text.push_str("metadata: {name: bomb, managedFields: [{fieldsV1: *x8}]}\n");
        text.push_str("spec:\n  containers: [{name: c, image: busybox:local}]\n");
        text
    }

    fn error_for<'a>(snapshot: &'a SourceSnapshot, name: &str) -> &'a ManifestError {
        snapshot
            .errors
            .iter()
            .find(|e| e.file.file_name().is_some_and(|f| f == name))
            .unwrap_or_else(|| panic!("no error for {name}: {:?}", snapshot.errors))
    }

    #[test]
    fn each_unusable_file_is_named_and_the_others_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        std::fs::write(path.join("a-good.yaml"), pod_yaml("a")).unwrap();
        std::fs::write(path.join("latin1.yaml"), b"metadata: {name: caf\xe9}\n").unwrap();
        std::fs::create_dir(path.join("subdir.yaml")).unwrap();
        std::os::unix::fs::symlink(path.join("nowhere.yaml"), path.join("dangling.yaml")).unwrap();
        // A symlink loop fails to open for root too, as a permission error would for others.
        std::os::unix::fs::symlink("loop.yaml", path.join("loop.yaml")).unwrap();
        let big = std::fs::File::create(path.join("big.yaml")).unwrap();
        big.set_len(MAX_MANIFEST_BYTES + 1).unwrap();
        mkfifo(&path.join("fifo.yaml"));
        std::fs::write(path.join("bomb.yaml"), alias_bomb()).unwrap();
        std::fs::write(path.join("z-good.yaml"), pod_yaml("z")).unwrap();
        std::os::unix::fs::symlink(path.join("z-good.yaml"), path.join("link.yaml")).unwrap();

        let started = std::time::Instant::now();
        let snapshot = scan(path, "node", &SourceSnapshot::default());
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        let names: Vec<_> = snapshot
            .pods
            .iter()
            .map(|p| p.pod.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["a-node", "z-node"], "{:?}", snapshot.errors);
        let expect = |file: &str, words: &str| {
            let error = error_for(&snapshot, file);
            assert!(error.message.contains(words), "{file}: {}", error.message);
        };
        expect("latin1.yaml", "not UTF-8 text (invalid byte at offset 20)");
        expect("subdir.yaml", "is a directory");
        expect("dangling.yaml", "which does not exist");
        expect("loop.yaml", "cannot open");
        expect("big.yaml", "more than the 1048576 bytes");
        expect("fifo.yaml", "not a regular file");
        expect("bomb.yaml", "budget breached");
        // The symlink to a good file is read (upstream follows symlinks), so the file it
        // points to, read after it, duplicates it.
        expect("z-good.yaml", "link.yaml");
        assert_eq!(snapshot.errors.len(), 8, "{:?}", snapshot.errors);
    }

    #[test]
    fn a_file_that_turns_bad_keeps_its_pod_until_fixed_or_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
        std::fs::write(&a, pod_yaml("a")).unwrap();
        std::fs::write(&b, pod_yaml("b")).unwrap();
        let first = scan(dir.path(), "node", &SourceSnapshot::default());
        assert_eq!(first.pods.len(), 2);

        std::fs::write(&a, b"\xff\xfe").unwrap();
        std::fs::write(&b, "spec: [").unwrap();
        let broken = scan(dir.path(), "node", &first);
        assert_eq!(broken.pods, first.pods, "both pods kept as they were");
        assert!(error_for(&broken, "a.yaml")
            .message
            .contains("keeps running"));
        assert!(error_for(&broken, "b.yaml")
            .message
            .contains("keeps running"));
        // Still broken on the next scan: still kept.
        let again = scan(dir.path(), "node", &broken);
        assert_eq!(again.pods, first.pods);

        std::fs::write(&a, pod_yaml("a2")).unwrap();
        std::fs::remove_file(&b).unwrap();
        let fixed = scan(dir.path(), "node", &again);
        let names: Vec<_> = fixed
            .pods
            .iter()
            .map(|p| p.pod.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["a2-node"]);
        assert!(fixed.errors.is_empty(), "{:?}", fixed.errors);

        // A file never valid keeps nothing.
        std::fs::write(&b, "spec: [").unwrap();
        let new_bad = scan(dir.path(), "node", &fixed);
        assert_eq!(new_bad.pods.len(), 1);
        assert!(!error_for(&new_bad, "b.yaml")
            .message
            .contains("keeps running"));
    }

    #[test]
    fn a_path_that_cannot_be_listed_keeps_every_pod_and_a_missing_one_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), pod_yaml("a")).unwrap();
        let first = scan(dir.path(), "node", &SourceSnapshot::default());
        assert_eq!(first.pods.len(), 1);
        // Not a directory (ENOTDIR on listing), as an unreadable one is for a non-root user.
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let unlistable = scan(&fifo, "node", &first);
        assert_eq!(unlistable.pods, first.pods);
        assert_eq!(unlistable.errors.len(), 1, "{:?}", unlistable.errors);
        let missing = scan(&dir.path().join("missing"), "node", &first);
        assert!(missing.pods.is_empty());
    }
}
