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
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tracing::{debug, warn};

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
/// Entries of the correlator's caches (upstream's `maxLruCacheEntries`).
const CACHE_ENTRIES: usize = 4096;
/// Deadline of one write: events are not worth holding the queue longer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts of a write that failed in transport (upstream tries 12 times, 10 s apart).
const WRITE_TRIES: u32 = 3;

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

/// What the correlator made of an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Correlated {
    /// Write a new Event.
    Create(Event),
    /// The same event happened again within the window: PATCH `count` and `lastTimestamp` of
    /// the Event written before. `event` is the whole updated Event, created instead when the
    /// old one is gone (Events expire after an hour).
    Patch {
        /// The updated Event (name and first timestamp of the first one).
        event: Event,
        /// The strategic-merge patch body.
        patch: serde_json::Value,
    },
    /// The spam filter dropped it.
    Dropped,
}

/// An event written before, by its identity.
#[derive(Debug, Clone)]
struct Seen {
    name: String,
    count: i32,
    first: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    last: SystemTime,
}

/// A token bucket of one (source, object), refilled passively.
#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    at: SystemTime,
}

impl Bucket {
    fn take(&mut self, now: SystemTime) -> bool {
        if let Ok(elapsed) = now.duration_since(self.at) {
            let refill = elapsed.as_secs_f64() / SPAM_REFILL.as_secs_f64();
            self.tokens = (self.tokens + refill).min(SPAM_BURST);
            self.at = now;
        }
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Upstream's `EventCorrelator`, in short: the spam filter, then aggregation of identical
/// events into one Event with a count.
#[derive(Debug, Default)]
pub struct Correlator {
    seen: HashMap<String, Seen>,
    spam: HashMap<String, Bucket>,
}

/// Upstream's `getSpamKey`: the source and the object.
fn spam_key(event: &Event) -> String {
    let source = event.source.clone().unwrap_or_default();
    let o = &event.involved_object;
    [
        source.component,
        source.host,
        o.kind.clone(),
        o.namespace.clone(),
        o.name.clone(),
        o.uid.clone(),
        o.api_version.clone(),
    ]
    .map(Option::unwrap_or_default)
    .join("\0")
}

/// Upstream's `getEventKey`: the source, the object (and field path), type, reason, message.
fn event_key(event: &Event) -> String {
    let o = &event.involved_object;
    [
        spam_key(event),
        o.field_path.clone().unwrap_or_default(),
        event.type_.clone().unwrap_or_default(),
        event.reason.clone().unwrap_or_default(),
        event.message.clone().unwrap_or_default(),
    ]
    .join("\0")
}

/// Keeps `map` within [`CACHE_ENTRIES`] by forgetting the entry used longest ago.
fn bound<V>(map: &mut HashMap<String, V>, last: impl Fn(&V) -> SystemTime) {
    while map.len() > CACHE_ENTRIES {
        let Some(oldest) = map
            .iter()
            .min_by_key(|(_, v)| last(v))
            .map(|(k, _)| k.clone())
        else {
            return;
        };
        map.remove(&oldest);
    }
}

impl Correlator {
    /// Decides what to write for `event`, which happened at `now`.
    pub fn correlate(&mut self, mut event: Event, now: SystemTime) -> Correlated {
        let bucket = self.spam.entry(spam_key(&event)).or_insert(Bucket {
            tokens: SPAM_BURST,
            at: now,
        });
        let allowed = bucket.take(now);
        bound(&mut self.spam, |b| b.at);
        if !allowed {
            return Correlated::Dropped;
        }
        let key = event_key(&event);
        let recent = self.seen.get_mut(&key).filter(|seen| {
            now.duration_since(seen.last)
                .is_ok_and(|d| d < AGGREGATION_WINDOW)
        });
        match recent {
            Some(seen) => {
                seen.count += 1;
                seen.last = now;
                event.metadata.name = Some(seen.name.clone());
                event.count = Some(seen.count);
                event.first_timestamp = seen.first.clone();
                let patch = serde_json::json!({
                    "count": seen.count,
                    "lastTimestamp": event.last_timestamp,
                });
                Correlated::Patch { event, patch }
            }
            None => {
                self.seen.insert(
                    key,
                    Seen {
                        name: event.metadata.name.clone().unwrap_or_default(),
                        count: 1,
                        first: event.first_timestamp.clone(),
                        last: now,
                    },
                );
                bound(&mut self.seen, |s| s.last);
                Correlated::Create(event)
            }
        }
    }
}

/// The task behind [`ApiEventRecorder`]: resolves static pods to their mirror pods,
/// correlates, takes a token of the events bucket, and writes.
pub struct Writer<S> {
    sink: S,
    node_name: String,
    correlator: Correlator,
    mirrors: Arc<dyn MirrorLookup>,
    allowed: Box<dyn Fn() -> bool + Send + Sync>,
    /// Events about static pods whose mirror pod is not known yet, oldest first.
    pending: VecDeque<Recorded>,
    retry_delay: Duration,
}

impl<S: EventSink> Writer<S> {
    /// A writer to `sink` for node `node_name`; `allowed` takes a token of the events bucket.
    pub fn new(
        sink: S,
        node_name: String,
        mirrors: Arc<dyn MirrorLookup>,
        allowed: Box<dyn Fn() -> bool + Send + Sync>,
    ) -> Self {
        Self {
            sink,
            node_name,
            correlator: Correlator::default(),
            mirrors,
            allowed,
            pending: VecDeque::new(),
            retry_delay: Duration::from_secs(1),
        }
    }

    /// Writes what arrives on `inbox` until every recorder is gone.
    pub async fn run(mut self, mut inbox: mpsc::Receiver<Recorded>) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                recorded = inbox.recv() => match recorded {
                    Some(recorded) => self.accept(recorded, SystemTime::now()).await,
                    None => return,
                },
                _ = tick.tick(), if !self.pending.is_empty() => {
                    self.flush_pending(SystemTime::now()).await;
                }
            }
        }
    }

    /// Writes `recorded` now, or holds it while its static pod's mirror pod is unknown.
    pub async fn accept(&mut self, mut recorded: Recorded, now: SystemTime) {
        // Events about one object keep their order.
        let behind = self
            .pending
            .iter()
            .any(|p| p.object.uid == recorded.object.uid);
        if behind || !self.resolve(&mut recorded, now) {
            if self.pending.len() >= QUEUE_CAPACITY {
                if let Some(dropped) = self.pending.pop_front() {
                    debug!(reason = %dropped.reason, name = %dropped.object.name, "event dropped: too many wait for their mirror pod");
                }
            }
            self.pending.push_back(recorded);
            return;
        }
        self.write(recorded).await;
    }

    /// Writes the held events whose mirror pod is now known or that waited long enough.
    pub async fn flush_pending(&mut self, now: SystemTime) {
        let mut waiting = VecDeque::new();
        while let Some(mut recorded) = self.pending.pop_front() {
            let behind = waiting
                .iter()
                .any(|p: &Recorded| p.object.uid == recorded.object.uid);
            if behind || !self.resolve(&mut recorded, now) {
                waiting.push_back(recorded);
            } else {
                self.write(recorded).await;
            }
        }
        self.pending = waiting;
    }

    /// Puts the mirror pod's UID in place of a static pod's; false while it must wait.
    fn resolve(&self, recorded: &mut Recorded, now: SystemTime) -> bool {
        if recorded.object.kind != "Pod" {
            return true;
        }
        match self.mirrors.lookup(&recorded.object.uid) {
            MirrorUid::NotStatic => true,
            MirrorUid::Known(uid) => {
                recorded.object.uid = uid;
                true
            }
            MirrorUid::NotYet => now
                .duration_since(recorded.at)
                .is_ok_and(|waited| waited >= MIRROR_WAIT),
        }
    }

    async fn write(&mut self, recorded: Recorded) {
        let event = make_event(&recorded, &self.node_name);
        let correlated = self.correlator.correlate(event, recorded.at);
        if correlated == Correlated::Dropped {
            debug!(reason = %recorded.reason, name = %recorded.object.name, "event dropped by the spam filter");
            return;
        }
        if !(self.allowed)() {
            debug!(reason = %recorded.reason, name = %recorded.object.name, "event dropped: over eventRecordQPS");
            return;
        }
        match correlated {
            Correlated::Create(event) => self.create(&event).await,
            Correlated::Patch { event, patch } => {
                let namespace = event.metadata.namespace.clone().unwrap_or_default();
                let name = event.metadata.name.clone().unwrap_or_default();
                let (sink, ns, nm, body) = (&self.sink, &namespace, &name, &patch);
                match self.retrying(move || sink.patch(ns, nm, body)).await {
                    Ok(()) => {}
                    // Expired (Events live an hour): write it anew with its count.
                    Err(error) if error.is_not_found() => self.create(&event).await,
                    Err(error) => {
                        warn!(event = %name, %namespace, %error, "cannot update event")
                    }
                }
            }
            Correlated::Dropped => {}
        }
    }

    async fn create(&self, event: &Event) {
        let sink = &self.sink;
        if let Err(error) = self.retrying(move || sink.create(event)).await {
            let name = event.metadata.name.as_deref().unwrap_or_default();
            let namespace = event.metadata.namespace.as_deref().unwrap_or_default();
            warn!(event = %name, %namespace, %error, "cannot write event");
        }
    }

    /// Runs `call` again after a transport failure or timeout; an answer is final.
    async fn retrying<F, Fut>(&self, mut call: F) -> Result<(), ApiError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<(), ApiError>>,
    {
        let mut attempt = 1;
        loop {
            match call().await {
                Err(ApiError::Transport(_) | ApiError::Timeout(_)) if attempt < WRITE_TRIES => {
                    tokio::time::sleep(self.retry_delay * attempt).await;
                    attempt += 1;
                }
                result => return result,
            }
        }
    }
}

#[cfg(test)]
mod tests;
