//! The relisting PLEG (upstream `pkg/kubelet/pleg/generic.go`): lists this node's sandboxes
//! and containers every period, diffs their states against the previous relist, and tells
//! the SyncLoop which pods changed.

use crate::cri::{api, labels, CriClient, CriError, Labels};
use crate::health::Health;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn};

/// Upstream's `plegChannelCapacity`.
pub const CHANNEL_CAPACITY: usize = 1000;

/// What happened to a container (or sandbox) between two relists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlegEventKind {
    ContainerStarted,
    ContainerDied,
    ContainerRemoved,
    ContainerChanged,
}

/// A lifecycle event of one pod's container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlegEvent {
    pub pod_uid: String,
    pub container_id: String,
    pub kind: PlegEventKind,
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

/// The relisting PLEG.
pub struct Pleg {
    cri: CriClient,
    selector: Labels,
    period: Duration,
    health: Arc<Health>,
    records: HashMap<String, Record>,
}

impl Pleg {
    pub fn new(cri: CriClient, node_name: &str, period: Duration, health: Arc<Health>) -> Self {
        Self {
            cri,
            selector: Labels::from([(labels::NODE.to_string(), node_name.to_string())]),
            period,
            health,
            records: HashMap::new(),
        }
    }

    /// Relists forever. `runtime_pods` receives the UIDs the runtime holds for this node
    /// after each successful relist, for orphan cleanup.
    pub async fn run(
        mut self,
        events: mpsc::Sender<PlegEvent>,
        runtime_pods: watch::Sender<HashSet<String>>,
    ) {
        loop {
            match self.relist().await {
                Ok(found) => {
                    for event in found {
                        if let Err(mpsc::error::TrySendError::Full(event)) = events.try_send(event)
                        {
                            warn!(pod_uid = %event.pod_uid, "PLEG event channel full; event dropped");
                        }
                    }
                    let uids: HashSet<String> =
                        self.records.values().map(|r| r.pod_uid.clone()).collect();
                    runtime_pods.send_if_modified(|current| {
                        let changed = *current != uids;
                        *current = uids;
                        changed
                    });
                    self.health.pleg_relisted();
                }
                Err(error) => warn!(%error, "PLEG relist failed"),
            }
            if events.is_closed() {
                return;
            }
            tokio::time::sleep(self.period).await;
        }
    }

    /// One relist: the events since the previous one.
    pub async fn relist(&mut self) -> Result<Vec<PlegEvent>, CriError> {
        let sandboxes = self.cri.list_pod_sandbox(self.selector.clone()).await?;
        let containers = self.cri.list_containers(self.selector.clone()).await?;
        let uid_of = |labels: &HashMap<String, String>| {
            labels.get(labels::POD_UID).cloned().unwrap_or_default()
        };
        let mut current = HashMap::new();
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
                    });
                }
            }
        }
        if !found.is_empty() {
            debug!(events = found.len(), "PLEG relist found changes");
        }
        self.records = current;
        Ok(found)
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
