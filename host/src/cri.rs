//! The container runtime, through CRI v1: the generated protocol, a client with deadlines, and
//! the label keys objects carry. What to ask of it is `kuberuntime`'s.

pub mod client;

pub use client::{CriClient, CriError, Labels, StreamOptions};

/// CRI v1 (`runtime.v1`) generated from proto/runtime/v1/api.proto.
#[allow(clippy::all, missing_docs)]
pub mod api {
    tonic::include_proto!("runtime.v1");
}

/// containerd's own events service and task events, from proto/containerd/.
#[allow(clippy::all, missing_docs)]
pub mod containerd {
    pub mod events {
        tonic::include_proto!("containerd.events");
    }
    pub mod types {
        tonic::include_proto!("containerd.types");
    }
    pub mod services {
        pub mod events {
            pub mod v1 {
                tonic::include_proto!("containerd.services.events.v1");
            }
        }
    }
}

/// Labels and annotations on sandboxes and containers: the upstream kubelet's keys, so tools
/// that read them (crictl, log shippers) work, plus wasmlet's node label.
pub mod labels {
    /// The pod's name, so a container in the runtime can be traced back to its pod.
    pub const POD_NAME: &str = "io.kubernetes.pod.name";
    /// The pod's namespace, which with the name identifies the pod to a person.
    pub const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
    /// The pod's UID: what wasmlet groups sandboxes and containers by, across pod updates.
    pub const POD_UID: &str = "io.kubernetes.pod.uid";
    /// The container's name within its pod spec, which status and restarts are keyed by.
    pub const CONTAINER_NAME: &str = "io.kubernetes.container.name";
    /// Which node agent owns the object: wasmlet only ever manages objects carrying its own
    /// node name, so several agents (or test nodes) can share one runtime safely.
    pub const NODE: &str = "wasmlet.dev/node";
    /// Marks a sidecar (an init container with `restartPolicy: Always`); its value is the
    /// sidecar's position among the init containers: sidecars stop after the regular
    /// containers, the last declared first.
    pub const SIDECAR: &str = "wasmlet.dev/sidecar";
    /// Which list of the spec the container comes from ([`TYPE_REGULAR`], [`TYPE_INIT`],
    /// [`TYPE_EPHEMERAL`]): sidecars outlive the regular containers only.
    pub const CONTAINER_TYPE: &str = "wasmlet.dev/container-type";
    /// A container of `spec.containers`.
    pub const TYPE_REGULAR: &str = "regular";
    /// A container of `spec.initContainers` (sidecars included).
    pub const TYPE_INIT: &str = "init";
    /// A container of `spec.ephemeralContainers`.
    pub const TYPE_EPHEMERAL: &str = "ephemeral";
    /// Annotations, as upstream. The container's restart count when it was created, for
    /// tools that read upstream's annotations.
    pub const CONTAINER_RESTART_COUNT: &str = "io.kubernetes.container.restartCount";
    /// The spec's `terminationMessagePath`, recorded as upstream records it for such tools.
    pub const CONTAINER_TERMINATION_MESSAGE_PATH: &str =
        "io.kubernetes.container.terminationMessagePath";
    /// The spec's `terminationMessagePolicy`: whether an empty message falls back to the log.
    pub const CONTAINER_TERMINATION_MESSAGE_POLICY: &str =
        "io.kubernetes.container.terminationMessagePolicy";
    /// The pod's grace period at creation: an orphaned container (its pod no longer known) is
    /// stopped with it.
    pub const POD_TERMINATION_GRACE_PERIOD: &str = "io.kubernetes.pod.terminationGracePeriod";
    /// The hash of the container spec the container was created from: a container whose
    /// spec changed under the same pod UID is replaced.
    pub const CONTAINER_HASH: &str = "io.kubernetes.container.hash";
}
