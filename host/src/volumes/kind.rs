//! The volume sources this node serves, as one typed table in the manner of upstream's volume
//! plugins (`pkg/volume/plugins.go`): a [`VolumeKind`] is derived once from a pod's `Volume`,
//! and each question a plugin answers there (`CanSupport`, `RequiresRemount`, whether its
//! mounts are read-only) is an exhaustive `match` here, so a new kind fails to compile until
//! every answer is given. The sources of a projected volume are a [`ProjectionKind`] each, for
//! the same reason.

use k8s_openapi::api::core::v1::{
    ConfigMapProjection, ConfigMapVolumeSource, DownwardAPIProjection, DownwardAPIVolumeSource,
    EmptyDirVolumeSource, HostPathVolumeSource, ProjectedVolumeSource, SecretProjection,
    SecretVolumeSource, ServiceAccountTokenProjection, Volume, VolumeProjection,
};

/// Why a volume of a source other than those of [`VolumeKind`] is refused.
pub(super) const UNSUPPORTED_TYPE: &str = "only emptyDir, hostPath, downwardAPI, configMap, secret and projected volumes are supported by wasmlet yet";
/// Why a projection other than those of [`ProjectionKind`] is refused.
pub(super) const UNSUPPORTED_PROJECTION: &str =
    "clusterTrustBundle and podCertificate projections are not supported by wasmlet yet";
/// Why a static pod may not name API objects: the node reads them with its API identity, and a
/// static pod has no API server behind it.
const STATIC_POD_API_OBJECTS: &str =
    "configMap, secret and service-account token volumes need an API server; static pods cannot use them";

/// The source of one pod volume, borrowed from its spec. The API server lets a volume name
/// exactly one source; should a spec name several, the first in the order below is the one
/// served.
#[derive(Debug, Clone, Copy)]
pub enum VolumeKind<'a> {
    /// A directory of the pod's own (`emptyDir`), on disk or on a tmpfs (`medium: Memory`).
    EmptyDir(&'a EmptyDirVolumeSource),
    /// A path of the node (`hostPath`), after its `type` check.
    HostPath(&'a HostPathVolumeSource),
    /// Fields of the pod written as files (`downwardAPI`).
    DownwardApi(&'a DownwardAPIVolumeSource),
    /// The keys of a configMap written as files.
    ConfigMap(&'a ConfigMapVolumeSource),
    /// The keys of a secret written as files, on a tmpfs.
    Secret(&'a SecretVolumeSource),
    /// Several sources written into one directory, on a tmpfs.
    Projected(&'a ProjectedVolumeSource),
    /// A source the node cannot serve (persistentVolumeClaim, nfs, csi, ...): admission
    /// refuses the pod and setup fails, both with the same text.
    Unsupported,
}

impl<'a> VolumeKind<'a> {
    /// The kind of `volume`, from the source its spec names.
    pub fn of(volume: &'a Volume) -> Self {
        if let Some(source) = &volume.empty_dir {
            Self::EmptyDir(source)
        } else if let Some(source) = &volume.host_path {
            Self::HostPath(source)
        } else if let Some(source) = &volume.downward_api {
            Self::DownwardApi(source)
        } else if let Some(source) = &volume.config_map {
            Self::ConfigMap(source)
        } else if let Some(source) = &volume.secret {
            Self::Secret(source)
        } else if let Some(source) = &volume.projected {
            Self::Projected(source)
        } else {
            Self::Unsupported
        }
    }

    /// The sources of a projected volume, in order; none for any other kind.
    pub fn projections(&self) -> impl Iterator<Item = ProjectionKind<'a>> {
        let sources = match self {
            Self::Projected(source) => source.sources.as_deref().unwrap_or_default(),
            Self::EmptyDir(_)
            | Self::HostPath(_)
            | Self::DownwardApi(_)
            | Self::ConfigMap(_)
            | Self::Secret(_)
            | Self::Unsupported => &[],
        };
        sources.iter().map(ProjectionKind::of)
    }

    /// Why this volume cannot be served by this node, or `None` when it can (upstream's
    /// `CanSupport`, with the reason a refusal reads). `from_api_server` says whether the pod
    /// came from the API server: the volumes that name API objects are served to those only.
    pub fn unsupported(&self, from_api_server: bool) -> Option<&'static str> {
        let supported = match self {
            Self::Unsupported => return Some(UNSUPPORTED_TYPE),
            Self::Projected(_) => self.projections().all(|p| p.supported()),
            Self::EmptyDir(_)
            | Self::HostPath(_)
            | Self::DownwardApi(_)
            | Self::ConfigMap(_)
            | Self::Secret(_) => true,
        };
        if !supported {
            Some(UNSUPPORTED_PROJECTION)
        } else if self.needs_api_objects() && !from_api_server {
            Some(STATIC_POD_API_OBJECTS)
        } else {
            None
        }
    }

    /// Whether the volume names objects the node reads from the API server.
    pub fn needs_api_objects(&self) -> bool {
        match self {
            Self::ConfigMap(_) | Self::Secret(_) => true,
            Self::Projected(_) => self.projections().any(|p| p.needs_api_objects()),
            Self::EmptyDir(_) | Self::HostPath(_) | Self::DownwardApi(_) | Self::Unsupported => {
                false
            }
        }
    }

    /// Whether the volume's files are rewritten on every sync, as their content may have
    /// changed (upstream's `RequiresRemount`).
    pub fn requires_remount(&self) -> bool {
        match self {
            Self::DownwardApi(_) | Self::ConfigMap(_) | Self::Secret(_) | Self::Projected(_) => {
                true
            }
            Self::EmptyDir(_) | Self::HostPath(_) | Self::Unsupported => false,
        }
    }

    /// Upstream's plugin name for the volume's source (`kubernetes.io/configmap`), which
    /// names its directory under the pod (with `~` for `/`) and labels its storage
    /// operations; `None` for a source no plugin serves.
    pub fn plugin_name(&self) -> Option<&'static str> {
        match self {
            Self::EmptyDir(_) => Some("kubernetes.io/empty-dir"),
            Self::HostPath(_) => Some("kubernetes.io/host-path"),
            Self::DownwardApi(_) => Some("kubernetes.io/downward-api"),
            Self::ConfigMap(_) => Some("kubernetes.io/configmap"),
            Self::Secret(_) => Some("kubernetes.io/secret"),
            Self::Projected(_) => Some("kubernetes.io/projected"),
            Self::Unsupported => None,
        }
    }

    /// Whether every container mounts the volume read-only whatever its `volumeMount` says:
    /// the node writes these files, and upstream has mounted them read-only since 1.10 so that
    /// a container cannot plant files or symlinks where the node writes.
    pub fn read_only(&self) -> bool {
        match self {
            Self::DownwardApi(_) | Self::ConfigMap(_) | Self::Secret(_) | Self::Projected(_) => {
                true
            }
            Self::EmptyDir(_) | Self::HostPath(_) | Self::Unsupported => false,
        }
    }
}

/// One source of a projected volume, borrowed from its spec; as with [`VolumeKind`], the first
/// source a projection names in the order below is the one served.
#[derive(Debug, Clone, Copy)]
pub enum ProjectionKind<'a> {
    /// A token of the pod's service account, requested from the API server.
    ServiceAccountToken(&'a ServiceAccountTokenProjection),
    /// Keys of a configMap.
    ConfigMap(&'a ConfigMapProjection),
    /// Keys of a secret.
    Secret(&'a SecretProjection),
    /// Fields of the pod.
    DownwardApi(&'a DownwardAPIProjection),
    /// A projection the node cannot serve (clusterTrustBundle, podCertificate).
    Unsupported,
}

impl<'a> ProjectionKind<'a> {
    /// The kind of `projection`, from the source it names.
    pub fn of(projection: &'a VolumeProjection) -> Self {
        if let Some(token) = &projection.service_account_token {
            Self::ServiceAccountToken(token)
        } else if let Some(map) = &projection.config_map {
            Self::ConfigMap(map)
        } else if let Some(secret) = &projection.secret {
            Self::Secret(secret)
        } else if let Some(downward) = &projection.downward_api {
            Self::DownwardApi(downward)
        } else {
            Self::Unsupported
        }
    }

    /// Whether the node can write this projection.
    pub fn supported(&self) -> bool {
        match self {
            Self::ServiceAccountToken(_)
            | Self::ConfigMap(_)
            | Self::Secret(_)
            | Self::DownwardApi(_) => true,
            Self::Unsupported => false,
        }
    }

    /// Whether the projection names objects the node reads from the API server.
    pub fn needs_api_objects(&self) -> bool {
        match self {
            Self::ServiceAccountToken(_) | Self::ConfigMap(_) | Self::Secret(_) => true,
            Self::DownwardApi(_) | Self::Unsupported => false,
        }
    }
}

#[cfg(test)]
mod tests;
