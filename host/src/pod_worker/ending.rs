//! How a running pod ends on the node without being removed from its source: it reaches a
//! terminal phase, the eviction manager evicts it, or its `activeDeadlineSeconds` pass
//! (upstream's `activeDeadlineHandler`). Each stops what runs and leaves the pod Finished.

use super::teardown::retry;
use super::terminate::failed_kill;
use super::{PodWorker, WorkerState};
use crate::kuberuntime::{self, SyncError};
use crate::podutil::{self, MINIMUM_GRACE};
use crate::runtime_status::PodRuntimeStatus;
use crate::timestamps;
use crate::volumes;
use std::collections::HashMap;
use std::time::{Duration, SystemTime};
use tracing::info;

/// The status reason of a pod past its active deadline, as upstream's.
pub const DEADLINE_REASON: &str = "DeadlineExceeded";
/// The status message of a pod past its active deadline, as upstream's.
pub const DEADLINE_MESSAGE: &str = "Pod was active on the node longer than the specified deadline";

/// How much of `activeDeadlineSeconds` is left after `started`, at `now`: `None` without a
/// deadline, zero once it has passed.
pub fn deadline_left(
    active_deadline_seconds: Option<i64>,
    started: SystemTime,
    now: SystemTime,
) -> Option<Duration> {
    let deadline = Duration::from_secs(u64::try_from(active_deadline_seconds?).unwrap_or(0));
    let active = now.duration_since(started).unwrap_or(Duration::ZERO);
    Some(deadline.saturating_sub(active))
}

impl PodWorker {
    /// What is left of the pod's active deadline since its start time; `None` without a
    /// deadline or before the pod started.
    pub(super) fn active_deadline_left(&self) -> Option<Duration> {
        let seconds = self.pod.spec.as_ref()?.active_deadline_seconds;
        let started = timestamps::system_time(self.start_time.as_ref()?)?;
        deadline_left(seconds, started, SystemTime::now())
    }

    /// The pod is done (Succeeded or Failed): stop its sandbox, keep the exited containers
    /// for their logs and status, as upstream.
    pub(super) async fn finish(&mut self, runtime: PodRuntimeStatus) -> Result<(), SyncError> {
        let grace = podutil::grace_period(&self.pod);
        let cri = &self.node.runtime.cri;
        kuberuntime::stop_all(cri, &runtime, |_| grace, None).await?;
        self.node.runtime.stop_ready_sandboxes(&runtime).await?;
        let runtime = self.node.runtime.fetch(&self.uid).await?;
        self.publish(&runtime, &HashMap::new(), true);
        self.state = WorkerState::Finished;
        info!("pod finished");
        Ok(())
    }

    /// Kills the pod for node pressure (upstream `evictPod`): every container with `grace`,
    /// the sandbox stopped, volumes freed (an emptyDir on tmpfs is memory the node needs back),
    /// then the status says Failed / Evicted with a DisruptionTarget condition.
    pub(super) async fn evict(&mut self, message: String, grace: Duration) {
        let grace = grace.max(MINIMUM_GRACE);
        info!(grace_s = grace.as_secs(), %message, "evicting pod");
        let runtime_status = self.stop_with_hooks(grace, "evicting pod failed").await;
        volumes::cleanup(&self.node.runtime.node.root_dir, &self.uid);
        self.sync_state.forget_volumes();
        self.publish(&runtime_status, &HashMap::new(), true);
        self.node.status.mark_evicted(&self.uid, message);
        self.state = WorkerState::Finished;
        info!("pod evicted");
    }

    /// The pod ran past `activeDeadlineSeconds`: its containers are stopped with the pod's
    /// grace period and it is Failed with reason DeadlineExceeded, as upstream.
    pub(super) async fn exceed_deadline(&mut self) {
        let grace = podutil::grace_period(&self.pod);
        info!(
            grace_s = grace.as_secs(),
            "pod passed its activeDeadlineSeconds; stopping it"
        );
        self.quiesce_probes().await;
        let runtime_status = self
            .stop_with_hooks(grace, "stopping a pod past its deadline failed")
            .await;
        self.publish(&runtime_status, &HashMap::new(), true);
        self.node
            .status
            .mark_failed(&self.uid, DEADLINE_REASON, DEADLINE_MESSAGE.into());
        self.state = WorkerState::Finished;
    }

    /// Stops every container (preStop first) with `grace` and the sandboxes, retrying until
    /// it succeeds; returns the runtime's view afterwards.
    async fn stop_with_hooks(&self, grace: Duration, what: &str) -> PodRuntimeStatus {
        let runtime = &self.node.runtime;
        let pod = &self.pod;
        let uid = &self.uid;
        retry(what, || async move {
            let current = runtime.fetch(uid).await?;
            let hooks = runtime.hooks(pod, &current);
            kuberuntime::stop_all(&runtime.cri, &current, |_| grace, Some(&hooks))
                .await
                .inspect_err(|error| failed_kill(runtime, pod, error))?;
            runtime.stop_ready_sandboxes(&current).await?;
            runtime.fetch(uid).await
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_left_counts_from_the_start() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let at = |s: u64| start + Duration::from_secs(s);
        assert_eq!(deadline_left(None, start, at(5)), None);
        assert_eq!(
            deadline_left(Some(30), start, at(10)),
            Some(Duration::from_secs(20))
        );
        assert_eq!(deadline_left(Some(30), start, at(30)), Some(Duration::ZERO));
        assert_eq!(deadline_left(Some(5), start, at(60)), Some(Duration::ZERO));
        assert_eq!(
            deadline_left(Some(-1), start, at(0)),
            Some(Duration::ZERO),
            "a negative deadline (refused by the API) has passed"
        );
        assert_eq!(
            deadline_left(Some(30), at(10), start),
            Some(Duration::from_secs(30)),
            "a start time in the future counts as now"
        );
    }
}
