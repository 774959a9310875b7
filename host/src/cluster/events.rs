//! Events in the API server, as upstream's kubelet writes them: core/v1 `Event` objects (a node
//! identity may write only those; `events.k8s.io` is refused), through the main client, each
//! write taking a token of the events bucket (`eventRecordQPS`/`eventBurst`).
//!
//! [`ApiEventRecorder::record`] never blocks: it queues to a bounded channel that one task
//! drains. The task does in short what upstream's `EventCorrelator` does
//! (`client-go/tools/record/events_cache.go`): a per-(source, object) spam filter (burst 25,
//! one more every 5 minutes) drops floods, and an identical event (same object, reason,
//! message, type and source) within 10 minutes becomes a PATCH of `count` and
//! `lastTimestamp` of the Event already written instead of a new Event. The correlator and
//! the writer are tested against an in-memory [`EventSink`].
//!
//! A static pod is known to the API only as its mirror pod, so an event about one is written
//! against the mirror pod's UID ([`MirrorLookup`]); until the mirror pod exists it waits up to
//! [`MIRROR_WAIT`], so the first events of a static pod still show in `kubectl describe pod`.
use super::{ApiClients, ApiError};
use crate::events::{EventRecorder, EventType, ObjectRef};
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tracing::debug;

/// The `source.component` and `reportingComponent` of every event.
pub const COMPONENT: &str = "kubelet";
/// Events waiting to be written (upstream's `maxQueuedEvents`); more are dropped.
pub const QUEUE_CAPACITY: usize = 1000;
/// An identical event within this window updates the existing Event (upstream's
/// `maxIntervalInSeconds` of the aggregator).
pub const AGGREGATION_WINDOW: Duration = Duration::from_secs(600);
/// Events one (source, object) may write at once (upstream's `defaultSpamBurst`).
pub const SPAM_BURST: f64 = 25.0;
/// One more event per (source, object) every this long (upstream's `defaultSpamQPS` 1/300).
pub const SPAM_REFILL: Duration = Duration::from_secs(300);
/// How long an event about a static pod waits for its mirror pod before it is written
/// against the static pod's own UID.
pub const MIRROR_WAIT: Duration = Duration::from_secs(30);
/// Deadline of one write: events are not worth holding the queue longer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the recorder knows of a pod UID: static pods are addressed through their mirror pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MirrorUid {
    /// Not a static pod: the UID is the API's own.
    NotStatic,
    /// A static pod whose mirror pod has this UID.
    Known(String),
    /// A static pod whose mirror pod does not exist (yet).
    NotYet,
}

/// Translates a static pod's UID to its mirror pod's (implemented by
/// [`super::mirror::MirrorPods`]).
pub trait MirrorLookup: Send + Sync {
    /// What `uid` is, and its mirror pod's UID if it is a static pod's.
    fn lookup(&self, uid: &str) -> MirrorUid;
}

/// No static pods: every UID is the API's own.
impl MirrorLookup for () {
    fn lookup(&self, _uid: &str) -> MirrorUid {
        MirrorUid::NotStatic
    }
}

/// Where Events are written: the API server, or a recording fake in tests.
pub trait EventSink: Send + Sync + 'static {
    /// POSTs a new Event.
    fn create(&self, event: &Event) -> impl Future<Output = Result<(), ApiError>> + Send;
    /// PATCHes (strategic merge) the Event `namespace/name`.
    fn patch(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> impl Future<Output = Result<(), ApiError>> + Send;
}

/// The API server through the main client.
struct ApiSink {
    client: kube::Client,
}

async fn timed<T>(call: impl Future<Output = Result<T, kube::Error>>) -> Result<(), ApiError> {
    super::within(WRITE_TIMEOUT, call).await.map(drop)
}

impl EventSink for ApiSink {
    async fn create(&self, event: &Event) -> Result<(), ApiError> {
        let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        timed(api.create(&PostParams::default(), event)).await
    }

    async fn patch(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), ApiError> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        timed(api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))).await
    }
}

/// One call of [`EventRecorder::record`], queued for the writer.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// What it is about (a static pod's UID is translated when written).
    pub object: ObjectRef,
    /// Normal or Warning.
    pub kind: EventType,
    /// Upstream's reason (`Pulled`, `BackOff`...).
    pub reason: String,
    /// The human-readable text.
    pub message: String,
    /// When it happened: the Event's name and timestamps.
    pub at: SystemTime,
}

/// The cluster recorder: queues events for the writer task and never blocks.
pub struct ApiEventRecorder {
    queue: mpsc::Sender<Recorded>,
}

impl ApiEventRecorder {
    /// Starts the writer task on the current runtime: Events go through `clients.main`, one
    /// token of `clients.event_allowed()` per write; static pods are addressed through
    /// `mirrors`. The task ends when the recorder is dropped.
    pub fn start(clients: &ApiClients, mirrors: Arc<dyn MirrorLookup>) -> Arc<Self> {
        let (queue, inbox) = mpsc::channel(QUEUE_CAPACITY);
        let limits = clients.clone();
        let writer = Writer::new(
            ApiSink {
                client: clients.main.clone(),
            },
            clients.node_name.clone(),
            mirrors,
            Box::new(move || limits.event_allowed()),
        );
        tokio::spawn(writer.run(inbox));
        Arc::new(Self { queue })
    }
}

impl EventRecorder for ApiEventRecorder {
    fn record(&self, object: &ObjectRef, kind: EventType, reason: &str, message: String) {
        debug!(kind = %object.kind, namespace = %object.namespace, name = %object.name, event_type = kind.as_str(), %reason, %message, "event");
        let recorded = Recorded {
            object: object.clone(),
            kind,
            reason: reason.to_string(),
            message,
            at: SystemTime::now(),
        };
        if self.queue.try_send(recorded).is_err() {
            debug!(%reason, name = %object.name, "event dropped: the event queue is full");
        }
    }
}

/// The Event upstream's recorder makes (`makeEvent`): named `<object>.<hex unix nanos>`, in
/// the object's namespace (`default` for the Node), with count 1.
pub fn make_event(recorded: &Recorded, node_name: &str) -> Event {
    let object = &recorded.object;
    let nanos = recorded
        .at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let namespace = if object.namespace.is_empty() {
        "default".to_string()
    } else {
        object.namespace.clone()
    };
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let at = crate::timestamps::api_time(recorded.at);
    Event {
        metadata: ObjectMeta {
            name: Some(format!("{}.{nanos:x}", object.name)),
            namespace: Some(namespace),
            ..Default::default()
        },
        involved_object: ObjectReference {
            api_version: Some("v1".into()),
            kind: non_empty(&object.kind),
            namespace: non_empty(&object.namespace),
            name: non_empty(&object.name),
            uid: non_empty(&object.uid),
            field_path: object.field_path.clone(),
            resource_version: None,
        },
        reason: Some(recorded.reason.clone()),
        message: Some(recorded.message.clone()),
        type_: Some(recorded.kind.as_str().into()),
        source: Some(EventSource {
            component: Some(COMPONENT.into()),
            host: Some(node_name.into()),
        }),
        reporting_component: Some(COMPONENT.into()),
        reporting_instance: Some(node_name.into()),
        first_timestamp: Some(at.clone()),
        last_timestamp: Some(at),
        count: Some(1),
        ..Default::default()
    }
}

mod correlator;
mod writer;

pub use correlator::{Correlated, Correlator};
pub use writer::Writer;

#[cfg(test)]
mod tests;
