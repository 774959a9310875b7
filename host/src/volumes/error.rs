//! What can go wrong with a pod's volumes, worded as upstream's `FailedMount` events, so the
//! waiting containers' status reads as on any kubelet.

use crate::fieldpath::FieldPathError;
use crate::objects::ObjectError;
use crate::resources::QuantityError;
use std::path::PathBuf;

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
