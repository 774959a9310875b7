//! The PLEG: tells the SyncLoop which pods changed. containerd's event stream
//! ([`events`]) reports task starts and exits within milliseconds; a relist (upstream
//! `pkg/kubelet/pleg/generic.go`: list this node's sandboxes and containers, diff against the
//! previous list) runs as the safety net, slowly while the stream is up and at the fast
//! period while it is down.

pub mod events;
mod running;

use crate::cri::{api, labels, CriClient, CriError, Labels};
use crate::health::Health;
use crate::status::StatusStore;
use events::{StreamMessage, TaskEvent};
use running::RunningGauges;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// Upstream's `plegChannelCapacity`.
pub const CHANNEL_CAPACITY: usize = 1000;

/// How long the relist that routes the start of a container not listed yet waits. Such a
/// start is one a pod worker has just made, and that worker publishes the status itself: a
/// relist at once would compete with the rest of that pod's start (CreateContainer,
/// StartContainer) for the runtime, and would run once per container when many pods start;
/// within this window the starts of a burst share one relist.
pub const UNLISTED_START_RELIST: Duration = Duration::from_millis(100);

/// What happened to a container (or sandbox) between two relists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlegEventKind {
    /// The container is running now and was not at the last relist.
    ContainerStarted,
    /// The container exited (or vanished while running): its pod is synced to restart it or
    /// finish.
    ContainerDied,
    /// The container is gone from the runtime (removed after it exited).
    ContainerRemoved,
    /// The container is created or in an unknown state; kept as upstream has it, but not
    /// sent to the SyncLoop, since there is nothing to act on yet.
    ContainerChanged,
}

/// A lifecycle event of one pod's container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlegEvent {
    /// The pod the container belongs to, from its UID label: the SyncLoop wakes that pod's
    /// worker.
    pub pod_uid: String,
    /// The runtime's container (or sandbox) ID.
    pub container_id: String,
    /// What happened to it.
    pub kind: PlegEventKind,
    /// For an exit reported by containerd's event before CRI has recorded it: what the event
    /// says, so status can show the exit at once.
    pub exit: Option<ExitHint>,
}

/// An exit as containerd's task event reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitHint {
    /// The process's exit status, shown in the container's terminated state.
    pub exit_code: i32,
    /// Unix nanoseconds.
    pub finished_at: i64,
    /// containerd saw an OOM event for the container before it exited.
    pub oom_killed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    Exited,
    Created,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    pod_uid: String,
    state: State,
}

impl State {
    /// Upstream's `container_state` label value.
    fn as_str(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Exited => "exited",
            State::Created => "created",
            State::Unknown => "unknown",
        }
    }
}

fn container_state(state: i32) -> State {
    match api::ContainerState::try_from(state) {
        Ok(api::ContainerState::ContainerRunning) => State::Running,
        Ok(api::ContainerState::ContainerExited) => State::Exited,
        Ok(api::ContainerState::ContainerCreated) => State::Created,
        _ => State::Unknown,
    }
}

fn sandbox_state(state: i32) -> State {
    if state == api::PodSandboxState::SandboxReady as i32 {
        State::Running
    } else {
        State::Exited
    }
}

/// Events for one container between two relists, as upstream's `generateEvents`.
fn events_for(old: Option<State>, new: Option<State>) -> Vec<PlegEventKind> {
    use PlegEventKind::*;
    match (old, new) {
        (a, b) if a == b => vec![],
        (_, Some(State::Running)) => vec![ContainerStarted],
        (_, Some(State::Exited)) => vec![ContainerDied],
        (_, Some(State::Unknown)) | (_, Some(State::Created)) => vec![ContainerChanged],
        (Some(State::Exited), None) => vec![ContainerRemoved],
        (_, None) => vec![ContainerDied, ContainerRemoved],
    }
}

/// How the PLEG is paced.
#[derive(Debug, Clone, Copy)]
pub struct PlegConfig {
    /// Relist period while the event stream is down (upstream: 1s).
    pub relist_period: Duration,
    /// Relist period while the event stream is up (upstream's evented PLEG: 300s).
    pub evented_relist_period: Duration,
    /// Which event stream to follow, if any.
    pub events: Option<events::EventSource>,
}

/// The PLEG's state: the last relist, by container (and sandbox) ID.
pub struct Pleg {
    cri: CriClient,
    selector: Labels,
    config: PlegConfig,
    health: Arc<Health>,
    store: Arc<StatusStore>,
    records: HashMap<String, Record>,
    /// Containers containerd reported out of memory, until their exit arrives.
    oom_killed: HashSet<String>,
    /// When the previous relist began, for `kubelet_pleg_relist_interval_seconds`.
    last_relist: Option<std::time::Instant>,
    running: RunningGauges,
}

impl Pleg {
    /// Watches only the sandboxes and containers labelled with `node_name`, so several agents
    /// can share a runtime.
    pub fn new(
        cri: CriClient,
        node_name: &str,
        config: PlegConfig,
        health: Arc<Health>,
        store: Arc<StatusStore>,
    ) -> Self {
        Self {
            cri,
            selector: Labels::from([(labels::NODE.to_string(), node_name.to_string())]),
            config,
            health,
            store,
            records: HashMap::new(),
            oom_killed: HashSet::new(),
            last_relist: None,
            running: RunningGauges::default(),
        }
    }

    /// Runs until the SyncLoop goes away. `runtime_pods` receives the UIDs the runtime holds
    /// for this node after each successful relist (`None` until the first), for orphan
    /// cleanup and to start new pods without reading the runtime first.
    pub async fn run(
        mut self,
        events: mpsc::Sender<PlegEvent>,
        runtime_pods: watch::Sender<Option<HashSet<String>>>,
    ) {
        let mut stream = self
            .config
            .events
            .map(|source| events::spawn_subscriber(self.cri.clone(), source));
        let mut stream_up = false;
        let mut relist_at = Instant::now();
        while !events.is_closed() {
            tokio::select! {
                _ = tokio::time::sleep_until(relist_at) => {
                    self.relist_and_publish(&events, &runtime_pods).await;
                    let period = if stream_up { self.config.evented_relist_period } else { self.config.relist_period };
                    relist_at = Instant::now() + period;
                }
                Some(message) = async { stream.as_mut()?.recv().await }, if stream.is_some() => match message {
                    StreamMessage::Up => {
                        let source = match self.config.events {
                            Some(events::EventSource::Cri) => "CRI container",
                            _ => "containerd task",
                        };
                        info!("subscribed to {source} events");
                        stream_up = true;
                        // Whatever happened while unsubscribed is found by a relist.
                        relist_at = Instant::now();
                    }
                    StreamMessage::Down(reason) => {
                        if stream_up {
                            warn!(%reason, "containerd event stream lost; relisting until resubscribed");
                        }
                        stream_up = false;
                        relist_at = relist_at.min(Instant::now() + self.config.relist_period);
                    }
                    StreamMessage::Event(event) => {
                        if let Some(within) = self.on_task_event(event, &events) {
                            relist_at = relist_at.min(Instant::now() + within);
                        }
                    }
                },
            }
            if stream.as_ref().is_some_and(|s| s.is_closed()) {
                stream = None;
            }
        }
    }

    async fn relist_and_publish(
        &mut self,
        events: &mpsc::Sender<PlegEvent>,
        runtime_pods: &watch::Sender<Option<HashSet<String>>>,
    ) {
        match self.relist().await {
            Ok(found) => {
                for event in found {
                    send(events, event);
                }
                let uids: HashSet<String> =
                    self.records.values().map(|r| r.pod_uid.clone()).collect();
                runtime_pods.send_if_modified(|current| {
                    let changed = current.as_ref() != Some(&uids);
                    *current = Some(uids);
                    changed
                });
                self.store.set_stale(false);
                self.health.pleg_relisted();
            }
            Err(error) => {
                warn!(%error, "PLEG relist failed; serving the last known status as stale");
                self.store.set_stale(true);
            }
        }
    }

    /// Applies a task event. Returns how soon to relist when the container is not listed
    /// yet (created since the last relist): a stop at once, a start within
    /// [`UNLISTED_START_RELIST`].
    fn on_task_event(
        &mut self,
        event: TaskEvent,
        events: &mpsc::Sender<PlegEvent>,
    ) -> Option<Duration> {
        match event {
            TaskEvent::Started { container_id } => {
                // Events only trigger syncs; the records stay what the last relist saw, so
                // the next relist still reports any change an event could not confirm.
                let Some(record) = self.records.get(&container_id) else {
                    debug!(%container_id, "start of a container not listed yet; relisting");
                    return Some(UNLISTED_START_RELIST);
                };
                let kind = PlegEventKind::ContainerStarted;
                self.running
                    .event(&self.records, &container_id, State::Running);
                send(
                    events,
                    PlegEvent {
                        pod_uid: record.pod_uid.clone(),
                        container_id,
                        kind,
                        exit: None,
                    },
                );
                None
            }
            TaskEvent::Exited {
                container_id,
                exit_code,
                exited_at,
            } => {
                let oom_killed = self.oom_killed.remove(&container_id);
                let exit = ExitHint {
                    exit_code,
                    finished_at: exited_at,
                    oom_killed,
                };
                (!self.on_stop(container_id, Some(exit), events)).then_some(Duration::ZERO)
            }
            TaskEvent::Stopped { container_id } => {
                (!self.on_stop(container_id, None, events)).then_some(Duration::ZERO)
            }
            // The exit follows; remember why it will come.
            TaskEvent::OutOfMemory { container_id } => {
                if self.oom_killed.len() < 1024 {
                    self.oom_killed.insert(container_id);
                }
                None
            }
        }
    }

    /// A container stopped: show the exit at once when the event says how (`exit`), and have
    /// the pod synced once CRI has recorded it. Returns whether the container was listed.
    fn on_stop(
        &mut self,
        container_id: String,
        exit: Option<ExitHint>,
        events: &mpsc::Sender<PlegEvent>,
    ) -> bool {
        let known_uid = self
            .records
            .get(&container_id)
            .map(|record| record.pod_uid.clone());
        if let (Some(pod_uid), Some(exit)) = (&known_uid, exit) {
            let kind = PlegEventKind::ContainerDied;
            let event = PlegEvent {
                pod_uid: pod_uid.clone(),
                container_id: container_id.clone(),
                kind,
                exit: Some(exit),
            };
            send(events, event);
        }
        debug!(%container_id, known = known_uid.is_some(), "container stopped");
        let listed = known_uid.is_some();
        self.running
            .event(&self.records, &container_id, State::Exited);
        let node_name = self.selector.get(labels::NODE).cloned().unwrap_or_default();
        tokio::spawn(confirm_exit(
            self.cri.clone(),
            container_id,
            known_uid,
            node_name,
            events.clone(),
        ));
        listed
    }

    /// One relist: the events since the previous one.
    pub async fn relist(&mut self) -> Result<Vec<PlegEvent>, CriError> {
        let began = std::time::Instant::now();
        let metrics = crate::metrics::kubelet::kubelet();
        metrics.pleg_last_seen.set(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64(),
        );
        if let Some(previous) = self.last_relist.replace(began) {
            metrics
                .pleg_relist_interval
                .observe(began.duration_since(previous).as_secs_f64());
        }
        let sandboxes = self.cri.list_pod_sandbox(self.selector.clone()).await?;
        let containers = self.cri.list_containers(self.selector.clone()).await?;
        let uid_of = |labels: &HashMap<String, String>| {
            labels.get(labels::POD_UID).cloned().unwrap_or_default()
        };
        let mut current = HashMap::new();
        let sandbox_ids: HashSet<String> = sandboxes.iter().map(|s| s.id.clone()).collect();
        for sandbox in sandboxes {
            let record = Record {
                pod_uid: uid_of(&sandbox.labels),
                state: sandbox_state(sandbox.state),
            };
            current.insert(sandbox.id, record);
        }
        for container in containers {
            let record = Record {
                pod_uid: uid_of(&container.labels),
                state: container_state(container.state),
            };
            current.insert(container.id, record);
        }
        let mut found = Vec::new();
        let ids: HashSet<&String> = self.records.keys().chain(current.keys()).collect();
        for id in ids {
            let old = self.records.get(id);
            let new = current.get(id);
            let pod_uid = new.or(old).map(|r| r.pod_uid.clone()).unwrap_or_default();
            for kind in events_for(old.map(|r| r.state), new.map(|r| r.state)) {
                if kind != PlegEventKind::ContainerChanged {
                    found.push(PlegEvent {
                        pod_uid: pod_uid.clone(),
                        container_id: id.clone(),
                        kind,
                        exit: None,
                    });
                }
            }
        }
        if !found.is_empty() {
            debug!(events = found.len(), "PLEG relist found changes");
        }
        self.records = current;
        self.running.relisted(&self.records, sandbox_ids);
        metrics
            .pleg_relist_duration
            .observe(began.elapsed().as_secs_f64());
        Ok(found)
    }
}

/// containerd publishes an exit before its CRI plugin has recorded it: wait until CRI reports
/// the container exited, then tell its pod's worker, so the worker syncs on the new state.
/// The pod comes from the container's own labels when the relist has not seen it yet.
async fn confirm_exit(
    cri: CriClient,
    container_id: String,
    known_uid: Option<String>,
    node_name: String,
    events: mpsc::Sender<PlegEvent>,
) {
    let mut pod_uid = known_uid;
    for _ in 0..200 {
        match cri.container_status(&container_id).await {
            Ok(status) => {
                if status.labels.get(labels::NODE) != Some(&node_name) {
                    return;
                }
                pod_uid = status.labels.get(labels::POD_UID).cloned().or(pod_uid);
                if status.state != api::ContainerState::ContainerRunning as i32 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(_) => break,
        }
    }
    if let Some(pod_uid) = pod_uid {
        let kind = PlegEventKind::ContainerDied;
        send(
            &events,
            PlegEvent {
                pod_uid,
                container_id,
                kind,
                exit: None,
            },
        );
    }
}

fn send(events: &mpsc::Sender<PlegEvent>, event: PlegEvent) {
    if let Err(mpsc::error::TrySendError::Full(event)) = events.try_send(event) {
        crate::metrics::kubelet::kubelet().pleg_discard_events.inc();
        warn!(pod_uid = %event.pod_uid, "PLEG event channel full; event dropped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PlegEventKind::*;

    #[test]
    fn state_transitions_map_to_upstream_events() {
        assert_eq!(events_for(None, Some(State::Running)), [ContainerStarted]);
        assert_eq!(
            events_for(Some(State::Running), Some(State::Exited)),
            [ContainerDied]
        );
        assert_eq!(
            events_for(Some(State::Running), None),
            [ContainerDied, ContainerRemoved]
        );
        assert_eq!(events_for(Some(State::Exited), None), [ContainerRemoved]);
        assert_eq!(events_for(Some(State::Running), Some(State::Running)), []);
        assert_eq!(events_for(None, Some(State::Created)), [ContainerChanged]);
    }
}
