//! Pod sandboxes, as upstream's `kuberuntime_sandbox.go`: create one (after stopping what a
//! dead one left behind), stop the ready ones of a pod that is done.

use super::{ignore_not_found, stop_all, RuntimeManager, SyncError};
use crate::cri::{api, CriError};
use crate::runtime_status::PodRuntimeStatus;
use tracing::{info, warn};

impl RuntimeManager {
    /// Stops every container and sandbox left of the pod (containers that lost their
    /// sandbox cannot keep running in a new one), then runs the sandbox `config`.
    pub(super) async fn create_sandbox(
        &self,
        runtime: &PodRuntimeStatus,
        config: api::PodSandboxConfig,
        grace: std::time::Duration,
    ) -> Result<String, SyncError> {
        stop_all(&self.cri, runtime, |_| grace, None).await?;
        for old in &runtime.sandboxes {
            self.cri
                .stop_pod_sandbox(&old.id)
                .await
                .or_else(ignore_not_found)?;
        }
        if let Err(error) = std::fs::create_dir_all(&config.log_directory) {
            warn!(dir = %config.log_directory, %error, "cannot create the pod log directory");
        }
        let attempt = config.metadata.as_ref().map_or(0, |m| m.attempt);
        let started = std::time::Instant::now();
        let metrics = crate::metrics::kubelet::kubelet();
        metrics.started_pods.inc();
        let id = self.cri.run_pod_sandbox(config).await.inspect_err(|_| {
            metrics.started_pods_errors.inc();
        })?;
        info!(sandbox = %id, attempt, elapsed_ms = started.elapsed().as_millis() as u64, "pod sandbox running");
        Ok(id)
    }

    /// Stops the pod's sandboxes that are still ready (a finished or evicted pod keeps its
    /// exited containers, but not its network and pause process).
    pub async fn stop_ready_sandboxes(&self, runtime: &PodRuntimeStatus) -> Result<(), CriError> {
        for sandbox in runtime.sandboxes.iter().filter(|s| s.ready) {
            self.cri
                .stop_pod_sandbox(&sandbox.id)
                .await
                .or_else(ignore_not_found)?;
        }
        Ok(())
    }
}
