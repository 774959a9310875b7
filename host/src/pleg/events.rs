//! Container event streams as a PLEG input: containerd's own events service (containerd 1.6
//! does not implement CRI `GetContainerEvents`, but its events service on the same socket
//! reports task starts and exits within milliseconds), or CRI `GetContainerEvents` where a
//! runtime offers it.

use crate::backoff::Doubling;
use crate::cri::containerd::events as task;
use crate::cri::containerd::services::events::v1::Envelope;
use crate::cri::CriClient;
use prost::Message;
use std::time::Duration;
use tokio::sync::mpsc;

/// The containerd namespace the CRI plugin keeps its containers in.
pub const CRI_NAMESPACE: &str = "k8s.io";

/// Topics the PLEG subscribes to, in containerd's filter syntax (filters are OR-ed).
pub fn filters() -> Vec<String> {
    ["/tasks/start", "/tasks/exit", "/tasks/oom"]
        .iter()
        .map(|topic| format!("topic==\"{topic}\""))
        .collect()
}

/// A task event of a container's (or sandbox's) main process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskEvent {
    /// The main process started: the PLEG reports the container started without a relist.
    Started {
        /// The runtime's container (or sandbox) ID.
        container_id: String,
    },
    /// The main process exited: carries what the status needs before CRI has recorded it.
    Exited {
        /// The runtime's container (or sandbox) ID.
        container_id: String,
        /// The process's exit status.
        exit_code: i32,
        /// Unix nanoseconds (0 when containerd sent none).
        exited_at: i64,
    },
    /// The kernel OOM-killed a process in the container; remembered until its exit arrives.
    OutOfMemory {
        /// The runtime's container (or sandbox) ID.
        container_id: String,
    },
    /// A stop without exit details (CRI events carry none): CRI's status tells the rest.
    Stopped {
        /// The runtime's container (or sandbox) ID.
        container_id: String,
    },
}

/// Which stream to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventSource {
    /// containerd's `Events/Subscribe` (task start, exit, OOM).
    Containerd,
    /// CRI `GetContainerEvents`.
    Cri,
}

/// Maps a CRI container event; `None` for creation (nothing to sync yet).
pub fn decode_cri(event: &crate::cri::api::ContainerEventResponse) -> Option<TaskEvent> {
    use crate::cri::api::ContainerEventType as Kind;
    let container_id = event.container_id.clone();
    match Kind::try_from(event.container_event_type).ok()? {
        Kind::ContainerStartedEvent => Some(TaskEvent::Started { container_id }),
        Kind::ContainerStoppedEvent | Kind::ContainerDeletedEvent => {
            Some(TaskEvent::Stopped { container_id })
        }
        Kind::ContainerCreatedEvent => None,
    }
}

/// Decodes an envelope; `None` for other namespaces, other topics and exec processes.
pub fn decode(envelope: &Envelope) -> Option<TaskEvent> {
    if envelope.namespace != CRI_NAMESPACE {
        return None;
    }
    let payload = envelope.event.as_ref()?;
    let bytes = payload.value.as_slice();
    match envelope.topic.as_str() {
        "/tasks/start" => task::TaskStart::decode(bytes)
            .ok()
            .map(|e| TaskEvent::Started {
                container_id: e.container_id,
            }),
        // An exec'd process (a probe) exits with its own id; only the main process counts.
        "/tasks/exit" => task::TaskExit::decode(bytes)
            .ok()
            .filter(|e| e.id.is_empty() || e.id == e.container_id)
            .map(|e| TaskEvent::Exited {
                container_id: e.container_id,
                exit_code: e.exit_status as i32,
                exited_at: e.exited_at.map_or(0, |t| {
                    t.seconds
                        .saturating_mul(1_000_000_000)
                        .saturating_add(i64::from(t.nanos))
                }),
            }),
        "/tasks/oom" => task::TaskOom::decode(bytes)
            .ok()
            .map(|e| TaskEvent::OutOfMemory {
                container_id: e.container_id,
            }),
        _ => None,
    }
}

/// What the subscriber task tells the PLEG.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamMessage {
    /// The subscription is in place: events from now on arrive.
    Up,
    /// The stream is gone (runtime restarted or unreachable); the subscriber retries.
    Down(String),
    /// An event to apply.
    Event(TaskEvent),
}

/// How long a subscribe call must stay open without failing before it counts as in place
/// (containerd answers the call only with its first event).
const SETTLE: Duration = Duration::from_millis(300);

/// Keeps a subscription to `source`, resubscribing with back-off.
pub fn spawn_subscriber(cri: CriClient, source: EventSource) -> mpsc::Receiver<StreamMessage> {
    let (tx, rx) = mpsc::channel(1024);
    tokio::spawn(async move {
        let mut backoff = Doubling::new(Duration::from_millis(100), Duration::from_secs(5));
        while !tx.is_closed() {
            let reason = match source {
                EventSource::Containerd => {
                    follow(cri.subscribe_events(filters()), &tx, decode, &mut backoff).await
                }
                EventSource::Cri => {
                    follow(cri.get_container_events(), &tx, decode_cri, &mut backoff).await
                }
            };
            let Some(reason) = reason else { return };
            let _ = tx.send(StreamMessage::Down(reason)).await;
            tokio::time::sleep(backoff.next_delay()).await;
        }
    });
    rx
}

/// Follows one subscription until it breaks; returns why (`None`: the PLEG is gone).
async fn follow<M>(
    call: impl std::future::Future<Output = Result<tonic::Streaming<M>, crate::cri::CriError>>,
    tx: &mpsc::Sender<StreamMessage>,
    decode: fn(&M) -> Option<TaskEvent>,
    backoff: &mut Doubling,
) -> Option<String> {
    tokio::pin!(call);
    let mut announced = false;
    let result = tokio::select! {
        result = &mut call => result,
        _ = tokio::time::sleep(SETTLE) => {
            announced = true;
            tx.send(StreamMessage::Up).await.ok()?;
            call.await
        }
    };
    let mut stream = match result {
        Ok(stream) => stream,
        Err(error) => return Some(error.to_string()),
    };
    if !announced {
        tx.send(StreamMessage::Up).await.ok()?;
    }
    backoff.reset();
    loop {
        match stream.message().await {
            Ok(Some(message)) => {
                if let Some(event) = decode(&message) {
                    tx.send(StreamMessage::Event(event)).await.ok()?;
                }
            }
            Ok(None) => return Some("the stream ended".into()),
            Err(status) => return Some(status.message().to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_cri_container_events() {
        use crate::cri::api::{ContainerEventResponse, ContainerEventType};
        let event = |kind: ContainerEventType| ContainerEventResponse {
            container_id: "c".into(),
            container_event_type: kind as i32,
            ..Default::default()
        };
        assert_eq!(
            decode_cri(&event(ContainerEventType::ContainerStartedEvent)),
            Some(TaskEvent::Started {
                container_id: "c".into()
            })
        );
        assert_eq!(
            decode_cri(&event(ContainerEventType::ContainerStoppedEvent)),
            Some(TaskEvent::Stopped {
                container_id: "c".into()
            })
        );
        assert_eq!(
            decode_cri(&event(ContainerEventType::ContainerCreatedEvent)),
            None
        );
    }

    fn envelope(namespace: &str, topic: &str, event: impl Message) -> Envelope {
        Envelope {
            timestamp: None,
            namespace: namespace.into(),
            topic: topic.into(),
            event: Some(prost_types::Any {
                type_url: "containerd.events.X".into(),
                value: event.encode_to_vec(),
            }),
        }
    }

    #[test]
    fn decodes_main_process_events_only() {
        let exit = task::TaskExit {
            container_id: "c1".into(),
            id: "c1".into(),
            pid: 7,
            exit_status: 1,
            exited_at: None,
        };
        assert_eq!(
            decode(&envelope("k8s.io", "/tasks/exit", exit.clone())),
            Some(TaskEvent::Exited {
                container_id: "c1".into(),
                exit_code: 1,
                exited_at: 0,
            })
        );
        let exec_exit = task::TaskExit {
            id: "exec-1".into(),
            ..exit.clone()
        };
        assert_eq!(decode(&envelope("k8s.io", "/tasks/exit", exec_exit)), None);
        assert_eq!(decode(&envelope("default", "/tasks/exit", exit)), None);
        let start = task::TaskStart {
            container_id: "c2".into(),
            pid: 9,
        };
        assert_eq!(
            decode(&envelope("k8s.io", "/tasks/start", start)),
            Some(TaskEvent::Started {
                container_id: "c2".into()
            })
        );
    }
}
