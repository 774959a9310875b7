//! How a pod removed or deleted from its source ends: its containers stopped with the
//! deletion's grace period (preStop first), its final status published, then everything the
//! runtime holds removed. A second delete with a shorter grace period shortens the stop under
//! way, as upstream's pod workers do (`calculateEffectiveGracePeriod`): the stop starts again
//! with the new period, and a pod removed from the API while it stops (a forced delete) gets
//! the minimum.

use super::teardown::{remove_pod_leftovers, retry};
use super::{PodWorker, WorkerMessage, WorkerState};
use crate::events::{EventType, ObjectRef};
use crate::kuberuntime::{self, RuntimeManager};
use crate::podutil::{self, MINIMUM_GRACE};
use crate::runtime_status::PodRuntimeStatus;
use crate::timestamps;
use k8s_openapi::api::core::v1::Pod;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::info;

impl PodWorker {
    /// Graceful termination and removal of everything the runtime holds for the pod: the
    /// containers are stopped (preStop first), the final status published with a terminal
    /// phase, then containers and sandboxes removed. A `Terminate` in `inbox` with a shorter
    /// grace period while the containers stop restarts the stop with it.
    pub(super) async fn terminate(
        &mut self,
        grace: Option<Duration>,
        inbox: &mut mpsc::UnboundedReceiver<WorkerMessage>,
    ) {
        self.state = WorkerState::Terminating;
        let mut grace = grace
            .map(|g| g.max(MINIMUM_GRACE))
            .unwrap_or_else(|| podutil::grace_period(&self.pod));
        // The worker's own copy from here on: the source's pod is not being stopped.
        Arc::make_mut(&mut self.pod).metadata.deletion_timestamp = Some(timestamps::now());
        // No probe acts on a pod being deleted (upstream sets liveness and startup to success),
        // and none may still run a command in a container being stopped.
        self.quiesce_probes().await;
        info!(grace_s = grace.as_secs(), "terminating pod");
        let mut with_hooks = true;
        let stopped = loop {
            Arc::make_mut(&mut self.pod)
                .metadata
                .deletion_grace_period_seconds = Some(grace.as_secs() as i64);
            self.node.status.mark_terminating(&self.uid, grace);
            tokio::select! {
                stopped = self.stop_for_removal(grace, with_hooks) => break stopped,
                shorter = shorter_grace(inbox, grace) => {
                    info!(grace_s = shorter.as_secs(), was_s = grace.as_secs(), "termination grace period shortened");
                    grace = shorter;
                    // The hooks had their chance under the longer period; the new one is
                    // for stopping.
                    with_hooks = false;
                }
            }
        };
        self.publish(&stopped, &HashMap::new(), true);
        let runtime = &self.node.runtime;
        let uid = &self.uid;
        retry("removing pod failed", || async move {
            let current = runtime.fetch(uid).await?;
            kuberuntime::kill_and_remove(&runtime.cri, &current, |_| grace, None).await
        })
        .await;
        let qos = crate::resources::pod_qos(&self.pod);
        remove_pod_leftovers(&self.node, &self.uid, &[qos]);
        self.node.status.remove(&self.uid);
        self.node.prober.metrics.forget_pod(&self.uid);
        self.state = WorkerState::Terminated;
        info!("pod terminated and removed");
    }

    /// Stops every container with `grace` (preStop first when `with_hooks`), retrying until
    /// it succeeds; the runtime's view afterwards.
    async fn stop_for_removal(&self, grace: Duration, with_hooks: bool) -> PodRuntimeStatus {
        let runtime = &self.node.runtime;
        let pod = &self.pod;
        let uid = &self.uid;
        retry("terminating pod failed", || async move {
            let current = runtime.fetch(uid).await?;
            let hooks = with_hooks.then(|| runtime.hooks(pod, &current));
            kuberuntime::stop_all(&runtime.cri, &current, |_| grace, hooks.as_ref())
                .await
                .inspect_err(|error| failed_kill(runtime, pod, error))?;
            runtime.fetch(uid).await
        })
        .await
    }
}

/// Waits for a `Terminate` shorter than `current` (other messages mean nothing to a pod
/// being stopped); never returns once the SyncLoop's side is gone.
async fn shorter_grace(
    inbox: &mut mpsc::UnboundedReceiver<WorkerMessage>,
    current: Duration,
) -> Duration {
    while let Some(message) = inbox.recv().await {
        if let Some(shorter) = shortens(&message, current) {
            return shorter;
        }
    }
    std::future::pending().await
}

/// The grace period `message` sets when it is shorter than `current`.
fn shortens(message: &WorkerMessage, current: Duration) -> Option<Duration> {
    match message {
        WorkerMessage::Terminate { grace: Some(grace) } => {
            Some((*grace).max(MINIMUM_GRACE)).filter(|g| *g < current)
        }
        _ => None,
    }
}

/// Upstream's `FailedKillPod` event; the teardown retries.
pub(super) fn failed_kill(runtime: &RuntimeManager, pod: &Pod, error: &crate::cri::CriError) {
    let message = format!("error killing pod: {error}");
    runtime.events.record(
        &ObjectRef::pod(pod),
        EventType::Warning,
        "FailedKillPod",
        message,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_a_shorter_delete_shortens_a_termination() {
        let secs = Duration::from_secs;
        let terminate = |grace| WorkerMessage::Terminate { grace };
        assert_eq!(shortens(&terminate(Some(secs(5))), secs(30)), Some(secs(5)));
        assert_eq!(shortens(&terminate(Some(secs(30))), secs(30)), None);
        assert_eq!(shortens(&terminate(Some(secs(60))), secs(30)), None);
        assert_eq!(shortens(&terminate(None), secs(30)), None);
        assert_eq!(
            shortens(&terminate(Some(Duration::ZERO)), secs(30)),
            Some(MINIMUM_GRACE),
            "a forced delete stops with the minimum"
        );
        assert_eq!(shortens(&WorkerMessage::Sync, secs(30)), None);

        let (tx, mut rx) = mpsc::unbounded_channel();
        tx.send(WorkerMessage::Sync).ok();
        tx.send(terminate(Some(secs(40)))).ok();
        tx.send(terminate(Some(secs(3)))).ok();
        assert_eq!(shorter_grace(&mut rx, secs(30)).await, secs(3));
    }
}
