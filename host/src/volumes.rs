//! Pod volumes, laid out as upstream's volume plugins lay them out under
//! `<root-dir>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>`: `emptyDir` (on disk, or
//! `medium: Memory` as a sized tmpfs), `hostPath` with upstream's type checks, and the volumes
//! whose files the node writes with upstream's atomic writer: `downwardAPI`, `configMap`,
//! `secret` and `projected` (serviceAccountToken, configMap, secret and downwardAPI sources;
//! secret and projected volumes on a tmpfs, as upstream, so that secrets never reach the
//! disk). They are mounted into containers with `readOnly`, `subPath` and `mountPropagation`.
//!
//! The API objects volumes name are read through an [`ObjectSource`] in a resolve step
//! ([`fetch`]) before the synchronous writer ([`prepare`]) runs, so the writer needs no
//! network. [`PodVolumes`] does both on every pod sync: the first setup gates the containers
//! (`ContainerCreating` with upstream's `FailedMount` message, retried with back-off), and
//! later syncs rewrite the object-backed volumes when their content changed, as upstream's
//! reconciler remounts volumes that `RequiresRemount`; a failing rewrite keeps the old content.

use crate::objects::ObjectSource;
use atomic_writer::{atomic_write, FileProjection};
use downward::downward_files;
use empty_dir::{is_mounted, mount_tmpfs, pod_memory_limit};
use host_path::host_path_check;
use k8s_openapi::api::core::v1::{Pod, Volume};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tracing::{debug, warn};

/// The directory of a pod's data under the root dir.
pub fn pod_dir(root_dir: &Path, uid: &str) -> PathBuf {
    root_dir.join("pods").join(uid)
}

/// Where volume `name` of plugin `plugin` (`kubernetes.io/configmap`) lives:
/// `volumes/kubernetes.io~configmap/<name>` under the pod's directory.
fn volume_dir(root_dir: &Path, uid: &str, plugin: &str, name: &str) -> PathBuf {
    pod_dir(root_dir, uid)
        .join("volumes")
        .join(plugin.replace('/', "~"))
        .join(name)
}

/// Upstream's `kubernetes.io/config.source` value of pods from the API server.
const API_SOURCE: &str = "api";

/// Whether `pod` came from the API server (`kubernetes.io/config.source: api`), the only
/// pods that may name API objects: a static pod cannot, in upstream as here.
pub fn from_api_server(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubernetes.io/config.source"))
        .is_some_and(|source| source == API_SOURCE)
}

/// Why `volume` of `pod` cannot be served here, or `None` when it can: admission refuses the
/// pod with it (`UnsupportedVolume`). Volumes that name API objects are served to pods from
/// the API server only.
pub fn unsupported(pod: &Pod, volume: &Volume) -> Option<&'static str> {
    VolumeKind::of(volume).unsupported(from_api_server(pod))
}

/// Where a pod's volumes go on this node.
#[derive(Debug, Clone, Copy)]
pub struct VolumeHost<'a> {
    /// `--root-dir`: volumes live under `<root-dir>/pods/<uid>/volumes`.
    pub root_dir: &'a Path,
    /// Back secret and projected volumes with a tmpfs, as upstream; off only where the
    /// process cannot mount (unit tests).
    pub memory_backed: bool,
}

/// Sets up the volumes of `pod` that `previous` does not hold yet, and rewrites every
/// object-backed one from `fetched`. Returns each volume's host path and the volumes that
/// failed; the others are set up even when one fails.
pub fn prepare(
    pod: &Pod,
    host: &VolumeHost<'_>,
    fetched: &FetchedObjects,
    previous: Option<&HashMap<String, PathBuf>>,
) -> (HashMap<String, PathBuf>, Vec<VolumeError>) {
    let mut paths = HashMap::new();
    let mut errors = Vec::new();
    for volume in pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
    {
        let kind = VolumeKind::of(volume);
        let known = previous
            .and_then(|p| p.get(&volume.name))
            .filter(|_| !kind.requires_remount());
        if let Some(path) = known {
            paths.insert(volume.name.clone(), path.clone());
            continue;
        }
        let started = std::time::Instant::now();
        let outcome = set_up(pod, host, fetched, volume, kind);
        if let Some(plugin) = kind.plugin_name() {
            crate::metrics::storage::record(
                plugin,
                "volume_mount",
                outcome.is_ok(),
                started.elapsed(),
            );
        }
        match outcome {
            Ok(path) => {
                paths.insert(volume.name.clone(), path);
            }
            Err(reason) => errors.push(VolumeError {
                volume: volume.name.clone(),
                reason,
            }),
        }
    }
    (paths, errors)
}

/// Creates `dir`, on a tmpfs when `memory_backed` (once: a mounted one stays).
fn make_volume_dir(dir: &Path, pod: &Pod, memory_backed: bool) -> Result<(), VolumeProblem> {
    std::fs::create_dir_all(dir).map_err(|source| VolumeProblem::CreateDirectory {
        path: dir.to_path_buf(),
        source,
    })?;
    if memory_backed && !is_mounted(dir) {
        mount_tmpfs(dir, pod_memory_limit(pod))?;
    }
    Ok(())
}

/// Writes an API-data volume (read-only to containers) and gives it the pod's `fsGroup`.
fn write_files(dir: &Path, files: &[FileProjection], pod: &Pod) -> Result<(), VolumeProblem> {
    atomic_write(dir, files).map_err(|source| VolumeProblem::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    if let Some(group) = fs_group(pod) {
        ownership::apply(dir, group, true);
    }
    Ok(())
}

/// The pod's `securityContext.fsGroup`, when it names a valid group.
fn fs_group(pod: &Pod) -> Option<u32> {
    let group = pod.spec.as_ref()?.security_context.as_ref()?.fs_group?;
    u32::try_from(group).ok()
}

/// Sets up (or rewrites) one volume, of `kind`, and returns its host path.
fn set_up(
    pod: &Pod,
    host: &VolumeHost<'_>,
    fetched: &FetchedObjects,
    volume: &Volume,
    kind: VolumeKind<'_>,
) -> Result<PathBuf, VolumeProblem> {
    let uid = crate::podutil::uid(pod);
    let plugin = kind.plugin_name().unwrap_or_default();
    let dir = || volume_dir(host.root_dir, uid, plugin, &volume.name);
    let memory = crate::machine::machine_memory_bytes;
    match kind {
        VolumeKind::EmptyDir(empty) => {
            let path = dir();
            empty_dir::set_up(&path, empty, pod)?;
            if let Some(group) = fs_group(pod) {
                ownership::apply(&path, group, false);
            }
            Ok(path)
        }
        VolumeKind::HostPath(host_path) => {
            let path = PathBuf::from(&host_path.path);
            host_path_check(&path, host_path.type_.as_deref().unwrap_or(""))?;
            Ok(path)
        }
        VolumeKind::DownwardApi(downward) => {
            let path = dir();
            let items = downward.items.as_deref().unwrap_or_default();
            let files = downward_files(
                pod,
                items,
                payload::mode_of(downward.default_mode),
                memory(),
            )?;
            write_files(&path, &files, pod)?;
            Ok(path)
        }
        VolumeKind::ConfigMap(source) => {
            let files = payload::config_map_volume(source, fetched)?;
            let path = dir();
            make_volume_dir(&path, pod, false)?;
            write_files(&path, &files, pod)?;
            Ok(path)
        }
        VolumeKind::Secret(source) => {
            let files = payload::secret_volume(source, fetched)?;
            let path = dir();
            make_volume_dir(&path, pod, host.memory_backed)?;
            write_files(&path, &files, pod)?;
            Ok(path)
        }
        VolumeKind::Projected(source) => {
            let files = payload::projected_volume(pod, source, fetched, memory())?;
            let path = dir();
            make_volume_dir(&path, pod, host.memory_backed)?;
            write_files(&path, &files, pod)?;
            Ok(path)
        }
        VolumeKind::Unsupported => Err(VolumeProblem::Unsupported(kind::UNSUPPORTED_TYPE)),
    }
}

/// Upstream's volume operation back-off (`nestedpendingoperations`): 500 ms, doubling.
const RETRY_INITIAL: Duration = Duration::from_millis(500);
/// Upstream's longest wait between two attempts of a failing volume operation.
const RETRY_MAX: Duration = Duration::from_secs(122);

/// Why the containers of a pod cannot start yet: a volume failed its first setup.
#[derive(Debug)]
pub struct VolumeWait {
    /// The first volume that failed (the waiting containers' message).
    pub error: VolumeError,
    /// When to try again: upstream's back-off, 500 ms doubling up to 2m2s.
    pub retry: Duration,
}

/// One pod's volumes between syncs: their host paths once all were set up, and how often
/// the first setup failed in a row.
#[derive(Debug, Default)]
pub struct PodVolumes {
    paths: Option<HashMap<String, PathBuf>>,
    failures: u32,
}

impl PodVolumes {
    /// The host path of every volume, once all were set up.
    pub fn paths(&self) -> Option<&HashMap<String, PathBuf>> {
        self.paths.as_ref()
    }

    /// Forgets the volumes (they were torn down): the next sync sets them up again.
    pub fn forget(&mut self) {
        *self = Self::default();
    }

    /// Resolves what the volumes name through `objects`, then sets up the missing volumes
    /// and rewrites the object-backed ones; [`PodVolumes::paths`] has them afterwards. Until
    /// every volume was set up once, a failure keeps the containers waiting
    /// ([`VolumeWait`]); after that, a failing rewrite is logged and the volume keeps its
    /// previous content, as upstream's.
    pub async fn sync(
        &mut self,
        pod: &Pod,
        host: &VolumeHost<'_>,
        objects: &dyn ObjectSource,
    ) -> Result<(), VolumeWait> {
        let fetched = fetch(pod, objects).await;
        let (paths, mut errors) = prepare(pod, host, &fetched, self.paths.as_ref());
        if errors.is_empty() {
            if self.paths.is_none() {
                debug!(volumes = paths.len(), "volumes set up");
            }
            self.failures = 0;
            self.paths = Some(paths);
            return Ok(());
        }
        if let Some(previous) = &mut self.paths {
            for error in &errors {
                warn!(volume = %error.volume, %error, "volume refresh failed; keeping its content");
            }
            // Volumes that did refresh take their (unchanged) paths; failed ones keep theirs.
            previous.extend(paths);
            return Ok(());
        }
        let retry = RETRY_INITIAL
            .saturating_mul(1u32 << self.failures.min(8))
            .min(RETRY_MAX);
        self.failures = self.failures.saturating_add(1);
        Err(VolumeWait {
            error: errors.remove(0),
            retry,
        })
    }
}

mod atomic_writer;
mod cleanup;
mod downward;
mod empty_dir;
mod error;
mod fetch;
mod host_path;
mod kind;
mod mounts;
mod ownership;
mod payload;
mod sub_path;

pub use cleanup::cleanup;
pub use error::{VolumeError, VolumeProblem};
pub use fetch::{fetch, FetchedObjects};
pub use kind::{ProjectionKind, VolumeKind};
pub use mounts::{mounts, valid_sub_path};

#[cfg(test)]
mod tests;
