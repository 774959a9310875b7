//! What removing a pod leaves to do besides its worker's sync: the retried teardown, the
//! node-side leftovers (volumes, pod cgroups, logs), and orphans no source wants.

use super::NodeRuntime;
use crate::cgroups;
use crate::config::BackOffConfig;
use crate::cri::{api, labels};
use crate::kuberuntime;
use crate::podutil::MINIMUM_GRACE;
use crate::resources::QosClass;
use crate::volumes;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tracing::{info, warn, Instrument};

/// Runs `attempt` until it succeeds, backing off from 200 ms to 5 s between failures: a
/// teardown must complete, however long the runtime is away.
pub(super) async fn retry<T, F, Fut>(what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, crate::cri::CriError>>,
{
    let mut backoff = crate::backoff::BackOff::new(BackOffConfig {
        initial_period: Duration::from_millis(200),
        max_period: Duration::from_secs(5),
        reset_period: Duration::MAX,
    });
    loop {
        match attempt().await {
            Ok(value) => return value,
            Err(error) => {
                warn!(%error, "{what}; retrying");
                let now = SystemTime::now();
                backoff.next(what, now, now);
                tokio::time::sleep(backoff.current(what).unwrap_or(MINIMUM_GRACE)).await;
            }
        }
    }
}

/// Removes what a pod leaves on the node besides runtime objects: its volumes, its pod
/// cgroup (under each QoS class it may have had) and its log directory.
pub(super) fn remove_pod_leftovers(node: &NodeRuntime, uid: &str, qos_classes: &[QosClass]) {
    volumes::cleanup(&node.runtime.node.root_dir, uid);
    crate::metrics::kubelet::kubelet().cgroup_operation("destroy", || {
        for qos in qos_classes {
            cgroups::remove_pod_cgroup(&qos.cgroup_parent(uid));
        }
    });
    let suffix = format!("_{uid}");
    if let Ok(entries) = std::fs::read_dir(&node.runtime.node.pod_logs_dir) {
        for entry in entries.flatten() {
            if !entry.file_name().to_string_lossy().ends_with(&suffix) {
                continue;
            }
            if let Err(error) = std::fs::remove_dir_all(entry.path()) {
                if error.kind() != std::io::ErrorKind::NotFound {
                    warn!(dir = %entry.path().display(), %error, "cannot remove the pod log directory");
                }
            }
        }
    }
}

/// Terminates a pod the runtime still runs for this node but no source wants any more
/// (its manifest went away while wasmlet was down, or its termination was cut short).
/// Each container gets the grace period recorded on it when it was created.
pub async fn remove_orphan(node: Arc<NodeRuntime>, uid: String) {
    let grace_of = |c: &api::ContainerStatus| {
        let seconds = c
            .annotations
            .get(labels::POD_TERMINATION_GRACE_PERIOD)
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(30);
        Duration::from_secs(seconds).max(MINIMUM_GRACE)
    };
    info!(pod_uid = %uid, "terminating orphaned pod");
    let runtime = &node.runtime;
    let id = &uid;
    retry("removing orphaned pod failed", || async move {
        let current = runtime.fetch(id).await?;
        kuberuntime::kill_and_remove(&runtime.cri, &current, grace_of, None).await
    })
    .instrument(tracing::info_span!("orphan", pod_uid = %uid))
    .await;
    remove_pod_leftovers(
        &node,
        &uid,
        &[
            QosClass::Guaranteed,
            QosClass::Burstable,
            QosClass::BestEffort,
        ],
    );
    info!(pod_uid = %uid, "orphaned pod removed");
}
