//! What happened to a pod or the node, told as Kubernetes Events (upstream's
//! `record.EventRecorder`): the pod worker, the prober, eviction and the node status loop
//! record them here, and in cluster mode they become core/v1 Events in the API server;
//! standalone they only go to the log. The reasons are upstream's (`pkg/kubelet/events`).

use k8s_openapi::api::core::v1::Pod;

/// Whether an event is routine or something an operator should look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Routine progress (`Pulled`, `Started`, `NodeReady`).
    Normal,
    /// Something went wrong (`BackOff`, `Unhealthy`, `FailedMount`, `Evicted`).
    Warning,
}

impl EventType {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// The object an event is about, as the API's `involvedObject`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    /// `Pod` or `Node`.
    pub kind: String,
    /// The pod's namespace; empty for the Node.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The object's UID (for a static pod, the mirror pod's is substituted by the recorder).
    pub uid: String,
    /// `spec.containers{name}` when the event is about one container.
    pub field_path: Option<String>,
}

impl ObjectRef {
    /// The pod itself.
    pub fn pod(pod: &Pod) -> Self {
        Self {
            kind: "Pod".into(),
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            field_path: None,
        }
    }

    /// One container of the pod (`spec.containers{name}` or `spec.initContainers{name}`).
    pub fn container(pod: &Pod, container: &str) -> Self {
        let init = pod
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.name == container));
        let list = if init { "initContainers" } else { "containers" };
        Self {
            field_path: Some(format!("spec.{list}{{{container}}}")),
            ..Self::pod(pod)
        }
    }

    /// The node.
    pub fn node(name: &str, uid: &str) -> Self {
        Self {
            kind: "Node".into(),
            name: name.into(),
            uid: uid.into(),
            ..Default::default()
        }
    }
}

/// Where events go. Recording never blocks and never fails the caller: a recorder that
/// cannot deliver drops the event (and says so in the log), as upstream's broadcaster does.
pub trait EventRecorder: Send + Sync {
    /// Records that `reason` happened to `object`, with a human-readable `message`.
    fn record(&self, object: &ObjectRef, kind: EventType, reason: &str, message: String);
}

/// The standalone recorder: events go to the log at debug level only.
#[derive(Debug, Default)]
pub struct LogOnly;

impl EventRecorder for LogOnly {
    fn record(&self, object: &ObjectRef, kind: EventType, reason: &str, message: String) {
        tracing::debug!(
            kind = %object.kind,
            namespace = %object.namespace,
            name = %object.name,
            event_type = kind.as_str(),
            %reason,
            %message,
            "event"
        );
    }
}
