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

use crate::fieldpath::FieldPathError;
use crate::objects::{ObjectError, ObjectSource};
use crate::resources::{self, QuantityError};
use atomic_writer::{atomic_write, FileProjection};
use downward::downward_files;
use empty_dir::{is_mounted, mount_tmpfs, pod_memory_limit};
use host_path::host_path_check;
use k8s_openapi::api::core::v1::{Pod, Volume};
use std::collections::HashMap;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tracing::{debug, warn};

/// Why a volume could not be set up; shown in the waiting containers' status, as upstream's
/// `FailedMount` events read.
#[derive(Debug, thiserror::Error)]
#[error("MountVolume.SetUp failed for volume {volume:?} : {reason}")]
pub struct VolumeError {
    /// The volume's name in the pod spec.
    pub volume: String,
    /// What went wrong and, where it can, what to change.
    pub reason: VolumeProblem,
}

/// What went wrong with one volume: a spec the node cannot serve, or the host refusing.
#[derive(Debug, thiserror::Error)]
pub enum VolumeProblem {
    /// An item path (or a key used as one) that is absolute, climbs out with `..` or starts
    /// with `..`, the atomic writer's own names.
    #[error("item path {path:?} must be relative without '..'")]
    InvalidItemPath {
        /// The item's path as written.
        path: String,
    },
    /// A downward API `fieldRef` path a volume cannot carry.
    #[error("unsupported fieldRef {path:?} in a downward API volume")]
    UnsupportedFieldRef {
        /// The field path as written.
        path: String,
    },
    /// A `resourceFieldRef` naming a container the pod does not have.
    #[error("resourceFieldRef names no container {container:?}")]
    NoSuchContainer {
        /// The container name as written.
        container: String,
    },
    /// A `resourceFieldRef` that cannot be resolved.
    #[error(transparent)]
    ResourceFieldRef(#[from] FieldPathError),
    /// A downward API item with neither `fieldRef` nor `resourceFieldRef`.
    #[error("item {path:?} has neither fieldRef nor resourceFieldRef")]
    NoItemSource {
        /// The item's path as written.
        path: String,
    },
    /// A path or mount option with a NUL byte, which `mount(2)` cannot take.
    #[error("{0}")]
    NulByte(#[from] std::ffi::NulError),
    /// The kernel refused the tmpfs of a `medium: Memory` emptyDir.
    #[error("mount tmpfs on {}: {source}", .path.display())]
    MountTmpfs {
        /// The mount point.
        path: PathBuf,
        /// What `mount(2)` said.
        source: std::io::Error,
    },
    /// A hostPath that exists but is not of the `type` the spec asks for.
    #[error("hostPath type check failed: {} is not a {want}", .path.display())]
    HostPathWrongType {
        /// The host path.
        path: PathBuf,
        /// What the spec's `type` wants (`directory`, `socket`, ...).
        want: &'static str,
    },
    /// A hostPath whose `type` requires it to exist, and it does not.
    #[error("hostPath type check failed: {} does not exist", .path.display())]
    HostPathMissing {
        /// The host path.
        path: PathBuf,
    },
    /// `DirectoryOrCreate` could not create the directory.
    #[error("cannot create directory {}: {source}", .path.display())]
    HostPathCreateDirectory {
        /// The host path.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// `FileOrCreate` could not create the file.
    #[error("cannot create file {}: {source}", .path.display())]
    HostPathCreateFile {
        /// The host path.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// A hostPath `type` Kubernetes does not define.
    #[error("unknown hostPath type {kind:?}")]
    UnknownHostPathType {
        /// The type as written.
        kind: String,
    },
    /// The volume's directory under the root dir could not be created.
    #[error("cannot create {}: {source}", .path.display())]
    CreateDirectory {
        /// The directory.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// An emptyDir `sizeLimit` that is not a valid quantity.
    #[error("sizeLimit: {0}")]
    SizeLimit(#[source] QuantityError),
    /// An emptyDir could not be made writable for every container user.
    #[error("cannot set permissions on {}: {source}", .path.display())]
    SetPermissions {
        /// The directory.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// A downward API volume's files could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The volume's directory.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// A configMap, secret or token the volume names could not be read (a missing object
    /// reads as upstream's `configmap "x" not found`).
    #[error(transparent)]
    Object(#[from] ObjectError),
    /// An `items` key the configMap lacks, in a volume that is not `optional`.
    #[error("configmap references non-existent config key: {key}")]
    MissingConfigMapKey {
        /// The key as written.
        key: String,
    },
    /// An `items` key the secret lacks, in a volume that is not `optional`.
    #[error("references non-existent secret key: {key}")]
    MissingSecretKey {
        /// The key as written.
        key: String,
    },
    /// Several sources of a projected volume failed, listed as upstream aggregates them.
    #[error("[{}]", join(.0))]
    Several(Vec<VolumeProblem>),
    /// A volume type the node cannot serve; the text says why and what is supported.
    #[error("{0}")]
    Unsupported(&'static str),
    /// A `volumeMount` naming a volume the pod does not declare.
    #[error("no such volume in the pod")]
    NoSuchVolume,
    /// A `subPath` that is absolute or climbs out of the volume.
    #[error("subPath {sub_path:?} must be a relative path inside the volume")]
    InvalidSubPath {
        /// The subPath as written.
        sub_path: String,
    },
    /// A `subPath` whose resolution leaves its volume (through a symlink), or cannot be
    /// resolved safely.
    #[error("subPath {sub_path:?} cannot be mounted: {reason}")]
    SubPathEscapes {
        /// The subPath as written.
        sub_path: String,
        /// Which step failed and why.
        reason: String,
    },
    /// A resolved `subPath` could not be bind-mounted on its target under the pod's directory.
    #[error("cannot bind-mount subPath {sub_path:?} on {}: {source}", .target.display())]
    SubPathMount {
        /// The subPath as written.
        sub_path: String,
        /// The node's mount point for it (`<pod-dir>/volume-subpaths/...`).
        target: PathBuf,
        /// What the kernel said, or which check failed.
        source: std::io::Error,
    },
    /// A missing `subPath` could not be created.
    #[error("cannot create subPath {}: {source}", .path.display())]
    CreateSubPath {
        /// The subPath's host path.
        path: PathBuf,
        /// What the filesystem said.
        source: std::io::Error,
    },
    /// A `mountPropagation` other than None, HostToContainer or Bidirectional.
    #[error("unknown mountPropagation {propagation:?}")]
    UnknownPropagation {
        /// The propagation as written.
        propagation: String,
    },
}

fn join(problems: &[VolumeProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The directory of a pod's data under the root dir.
pub fn pod_dir(root_dir: &Path, uid: &str) -> PathBuf {
    root_dir.join("pods").join(uid)
}

fn volume_dir(root_dir: &Path, uid: &str, plugin: &str, name: &str) -> PathBuf {
    pod_dir(root_dir, uid)
        .join("volumes")
        .join(format!("kubernetes.io~{plugin}"))
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

fn needs_api_objects(volume: &Volume) -> bool {
    volume.config_map.is_some()
        || volume.secret.is_some()
        || volume.projected.as_ref().is_some_and(|p| {
            p.sources.iter().flatten().any(|s| {
                s.config_map.is_some() || s.secret.is_some() || s.service_account_token.is_some()
            })
        })
}

fn supported_projections(volume: &Volume) -> bool {
    volume.projected.as_ref().is_none_or(|p| {
        p.sources.iter().flatten().all(|s| {
            s.downward_api.is_some()
                || s.config_map.is_some()
                || s.secret.is_some()
                || s.service_account_token.is_some()
        })
    })
}

const UNSUPPORTED_TYPE: &str = "only emptyDir, hostPath, downwardAPI, configMap, secret and projected volumes are supported by wasmlet yet";
const STATIC_POD_API_OBJECTS: &str =
    "configMap, secret and service-account token volumes need an API server; static pods cannot use them";

/// Why `volume` of `pod` cannot be served here, or `None` when it can: admission refuses the
/// pod with it (`UnsupportedVolume`). Volumes that name API objects are served to pods from
/// the API server only.
pub fn unsupported(pod: &Pod, volume: &Volume) -> Option<&'static str> {
    let known = volume.empty_dir.is_some()
        || volume.host_path.is_some()
        || volume.downward_api.is_some()
        || volume.config_map.is_some()
        || volume.secret.is_some()
        || volume.projected.is_some();
    if !known {
        Some(UNSUPPORTED_TYPE)
    } else if !supported_projections(volume) {
        Some(payload::UNSUPPORTED_PROJECTION)
    } else if needs_api_objects(volume) && !from_api_server(pod) {
        Some(STATIC_POD_API_OBJECTS)
    } else {
        None
    }
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

/// Whether a volume's files are rewritten on every sync (upstream's `RequiresRemount`).
fn rewritten(volume: &Volume) -> bool {
    volume.downward_api.is_some()
        || volume.config_map.is_some()
        || volume.secret.is_some()
        || volume.projected.is_some()
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
        let known = previous
            .and_then(|p| p.get(&volume.name))
            .filter(|_| !rewritten(volume));
        if let Some(path) = known {
            paths.insert(volume.name.clone(), path.clone());
            continue;
        }
        match set_up(pod, host, fetched, volume) {
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

/// Sets up (or rewrites) one volume and returns its host path.
fn set_up(
    pod: &Pod,
    host: &VolumeHost<'_>,
    fetched: &FetchedObjects,
    volume: &Volume,
) -> Result<PathBuf, VolumeProblem> {
    let uid = crate::podutil::uid(pod);
    let dir = |plugin: &str| volume_dir(host.root_dir, uid, plugin, &volume.name);
    let memory = crate::machine::machine_memory_bytes;
    if let Some(empty) = &volume.empty_dir {
        let path = dir("empty-dir");
        std::fs::create_dir_all(&path).map_err(|source| VolumeProblem::CreateDirectory {
            path: path.clone(),
            source,
        })?;
        if empty.medium.as_deref() == Some("Memory") {
            if !is_mounted(&path) {
                let size = match &empty.size_limit {
                    Some(q) => resources::bytes(q).map_err(VolumeProblem::SizeLimit)?,
                    None => pod_memory_limit(pod),
                };
                mount_tmpfs(&path, size)?;
            }
        } else {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).map_err(
                |source| VolumeProblem::SetPermissions {
                    path: path.clone(),
                    source,
                },
            )?;
        }
        if let Some(group) = fs_group(pod) {
            ownership::apply(&path, group, false);
        }
        Ok(path)
    } else if let Some(host_path) = &volume.host_path {
        let path = PathBuf::from(&host_path.path);
        host_path_check(&path, host_path.type_.as_deref().unwrap_or(""))?;
        Ok(path)
    } else if let Some(downward) = &volume.downward_api {
        let path = dir("downward-api");
        let items = downward.items.as_deref().unwrap_or_default();
        let files = downward_files(
            pod,
            items,
            payload::mode_of(downward.default_mode),
            memory(),
        )?;
        write_files(&path, &files, pod)?;
        Ok(path)
    } else if let Some(source) = &volume.config_map {
        let files = payload::config_map_volume(source, fetched)?;
        let path = dir("configmap");
        make_volume_dir(&path, pod, false)?;
        write_files(&path, &files, pod)?;
        Ok(path)
    } else if let Some(source) = &volume.secret {
        let files = payload::secret_volume(source, fetched)?;
        let path = dir("secret");
        make_volume_dir(&path, pod, host.memory_backed)?;
        write_files(&path, &files, pod)?;
        Ok(path)
    } else if let Some(source) = &volume.projected {
        let files = payload::projected_volume(pod, source, fetched, memory())?;
        let path = dir("projected");
        make_volume_dir(&path, pod, host.memory_backed)?;
        write_files(&path, &files, pod)?;
        Ok(path)
    } else {
        Err(VolumeProblem::Unsupported(UNSUPPORTED_TYPE))
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

/// The mount points under `dir`, deepest first, from `/proc/self/mountinfo` (whose octal
/// escapes of spaces and the like are decoded).
fn mount_points_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let mut points: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(std::ffi::OsString::from_vec(unescape_mountinfo(p))))
        .filter(|p| p.starts_with(dir) && p != dir)
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
    points
}

/// A mountinfo field with its `\ooo` escapes decoded.
fn unescape_mountinfo(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0')));
        match octal.and_then(|n| u8::try_from(n).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    out
}

/// Removes a pod's volumes once its containers are gone: unmounts everything mounted under
/// `<root-dir>/pods/<uid>` (tmpfs volumes and the subPath binds in `volume-subpaths`),
/// deepest first, then deletes the directory. hostPath data is never touched: a subPath bind
/// of a hostPath is a mount point, and the directory stays (with a warning) while any mount
/// is left under it, as `remove_dir_all` would otherwise descend into it. Nothing here follows
/// a symlink: mountinfo lists kernel paths, the unmounts use `UMOUNT_NOFOLLOW`, and
/// `remove_dir_all` unlinks a symlink instead of entering it, so a link a container planted in
/// a volume never leads the cleanup out of the pod's directory.
pub fn cleanup(root_dir: &Path, uid: &str) {
    use rustix::mount::{unmount, UnmountFlags};
    let dir = pod_dir(root_dir, uid);
    for point in mount_points_under(&dir) {
        if let Err(error) = unmount(&point, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW) {
            warn!(mount = %point.display(), %error, "cannot unmount a pod volume");
        }
    }
    let left = mount_points_under(&dir);
    if let Some(point) = left.first() {
        warn!(dir = %dir.display(), mount = %point.display(), mounts = left.len(), "pod directory still has mounts; not removing it");
        return;
    }
    if let Err(error) = std::fs::remove_dir_all(&dir) {
        if error.kind() != std::io::ErrorKind::NotFound {
            warn!(dir = %dir.display(), %error, "cannot remove the pod's volumes");
        }
    }
}

mod atomic_writer;
mod downward;
mod empty_dir;
mod fetch;
mod host_path;
mod mounts;
mod ownership;
mod payload;
mod sub_path;

pub use fetch::{fetch, FetchedObjects};
pub use mounts::{mounts, valid_sub_path};

#[cfg(test)]
mod tests;
