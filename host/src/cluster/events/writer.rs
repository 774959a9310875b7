//! The task behind [`super::ApiEventRecorder`]: holds events about static pods until their
//! mirror pod is known, correlates, takes a token of the events bucket, and writes with a few
//! retries.

use super::correlator::{Correlated, Correlator};
use super::{
    make_event, EventSink, MirrorLookup, MirrorUid, Recorded, MIRROR_WAIT, QUEUE_CAPACITY,
};
use crate::cluster::ApiError;
use k8s_openapi::api::core::v1::Event;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
use tracing::{debug, warn};

/// Attempts of a write that failed in transport (upstream tries 12 times, 10 s apart).
const WRITE_TRIES: u32 = 3;

/// The task behind [`super::ApiEventRecorder`]: resolves static pods to their mirror pods,
/// correlates, takes a token of the events bucket, and writes.
pub struct Writer<S> {
    sink: S,
    node_name: String,
    correlator: Correlator,
    mirrors: Arc<dyn MirrorLookup>,
    /// Takes a token of the events bucket; false drops the event.
    pub(super) allowed: Box<dyn Fn() -> bool + Send + Sync>,
    /// Events about static pods whose mirror pod is not known yet, oldest first.
    pending: VecDeque<Recorded>,
    /// The wait before the first retry of a failed write (the n-th waits n times as long).
    pub(super) retry_delay: Duration,
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
