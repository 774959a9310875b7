//! Pod sources. Standalone mode has one: the static manifest directory, watched with inotify
//! and rescanned every `fileCheckFrequency` as a safety net. The source publishes whole
//! snapshots; the SyncLoop diffs them by UID.

pub mod manifest;
pub mod merge;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use k8s_openapi::api::core::v1::Pod;
use notify::{RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tracing::{debug, info, warn};

/// A pod read from a manifest file.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticPod {
    /// The manifest it came from, so `/manifests` and errors can name it.
    pub file: PathBuf,
    /// The pod as the manifest defines it, with upstream's defaults, UID and node name filled in.
    pub pod: Pod,
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
    /// The pods bound to this node.
    pub pods: Vec<Pod>,
}

/// Reads every manifest under `path` (a directory, or a single file as upstream allows).
pub fn scan(path: &Path, node_name: &str) -> SourceSnapshot {
    let mut snapshot = SourceSnapshot {
        ready: true,
        ..Default::default()
    };
    let files = match list_manifest_files(path) {
        Ok(files) => files,
        Err(error) => {
            snapshot.errors.push(ManifestError {
                file: path.to_path_buf(),
                message: format!("cannot read the static pod path: {error}"),
            });
            return snapshot;
        }
    };
    for (file, text) in files {
        match manifest::load(&text, &file, node_name) {
            Ok(pod) => {
                let name = pod.metadata.name.clone();
                let namespace = pod.metadata.namespace.clone();
                let duplicate = snapshot
                    .pods
                    .iter()
                    .find(|p| p.pod.metadata.name == name && p.pod.metadata.namespace == namespace);
                match duplicate {
                    Some(first) => snapshot.errors.push(ManifestError {
                        message: format!(
                            "field `metadata.name`: pod {:?} is already defined by {}",
                            name.unwrap_or_default(),
                            first.file.display()
                        ),
                        file,
                    }),
                    None => snapshot.pods.push(StaticPod { file, pod }),
                }
            }
            Err(problem) => snapshot.errors.push(ManifestError {
                file,
                message: problem.to_string(),
            }),
        }
    }
    snapshot
}

/// Manifest files and their text, in name order; hidden files are skipped as upstream.
fn list_manifest_files(path: &Path) -> std::io::Result<Vec<(PathBuf, String)>> {
    if path.is_file() {
        return Ok(vec![(path.to_path_buf(), std::fs::read_to_string(path)?)]);
    }
    let dir = Dir::open_ambient_dir(path, ambient_authority())?;
    let mut names = Vec::new();
    for entry in dir.entries()? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.file_type()?.is_file() {
            continue;
        }
        names.push(name);
    }
    names.sort();
    let mut files = Vec::new();
    for name in names {
        match dir.read_to_string(&name) {
            Ok(text) => files.push((path.join(&name), text)),
            // Removed between listing and reading: the next event rescans.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(files)
}

/// Runs the static source until the receiver side is dropped.
pub async fn run_static_source(
    path: PathBuf,
    node_name: String,
    rescan_period: Duration,
    publish: watch::Sender<Arc<SourceSnapshot>>,
) {
    let (events_tx, mut events_rx) = mpsc::unbounded_channel::<()>();
    let mut watcher = None;
    let mut last_errors = Vec::new();
    loop {
        if watcher.is_none() {
            watcher = watch_directory(&path, events_tx.clone());
        }
        let snapshot = {
            let path = path.clone();
            let node_name = node_name.clone();
            tokio::task::spawn_blocking(move || scan(&path, &node_name))
                .await
                .unwrap_or_default()
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
            event = events_rx.recv() => {
                if event.is_none() { return; }
                // Writers often emit several events per change: take the burst, scan once.
                tokio::time::sleep(Duration::from_millis(2)).await;
                while events_rx.try_recv().is_ok() {}
            }
            _ = tokio::time::sleep(rescan_period) => {}
        }
    }
}

fn watch_directory(
    path: &Path,
    events: mpsc::UnboundedSender<()>,
) -> Option<notify::RecommendedWatcher> {
    let dir = if path.is_file() { path.parent()? } else { path };
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Reading the manifests is itself an (access) event: only changes trigger a scan.
        if event.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
            let _ = events.send(());
        }
    })
    .ok()?;
    match watcher.watch(dir, RecursiveMode::NonRecursive) {
        Ok(()) => {
            info!(path = %dir.display(), "watching static pod path");
            Some(watcher)
        }
        Err(error) => {
            warn!(path = %dir.display(), %error, "cannot watch static pod path; rescanning periodically");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let snapshot = scan(dir.path(), "node");
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
        let snapshot = scan(Path::new("/nonexistent/wasmlet-manifests"), "node");
        assert!(snapshot.pods.is_empty());
        assert_eq!(snapshot.errors.len(), 1);
    }
}
