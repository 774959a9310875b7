//! The pod's runtime side, as upstream's `pkg/kubelet/kuberuntime`: what a sync must do
//! ([`compute_pod_actions`], pure), then doing it through CRI ([`RuntimeManager::sync_pod`]):
//! sandboxes, images, starting and killing containers, and the CRI configs built from the
//! spec. The pod worker keeps the per-pod state machine and calls in here; nothing here knows
//! about sources, admission or status.

mod actions;
mod container;
pub mod env;
mod etc_hosts;
mod image;
mod linux_resources;
pub mod pod_cgroup;
pub mod pod_config;
pub mod resize;
mod sandbox;
mod sub_path_expr;
mod sync;
mod termination_message;
mod termination_order;

pub use actions::{
    compute_pod_actions, container_hash, seed_backoff, ActionInput, BackOffHold, CreatedContainer,
    KillAction, KillReason, PodActions, StartAction, Unhealthy,
};
pub use container::{kill_and_remove, stop_all};
pub use pod_config::NodeContext;
pub use sync::{PodSyncState, SyncResult};

use crate::cri::{CriClient, CriError};
use crate::events::EventRecorder;
use crate::lifecycle::PodHooks;
use crate::runtime_status::{self, PodRuntimeStatus};
use k8s_openapi::api::core::v1::Pod;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use wasmlet_plugin_host::PluginRegistry;

/// Retry period after a failed sync (upstream waits 10s; short periods keep pods moving here).
pub const SYNC_ERROR_RETRY: Duration = Duration::from_secs(2);

/// Why a sync could not complete; the worker retries it.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// A CRI call failed.
    #[error(transparent)]
    Runtime(#[from] CriError),
    /// The pod spec cannot be turned into a runtime config.
    #[error("cannot build the runtime config: {0}")]
    Config(pod_config::ConfigError),
}

/// What every pod's runtime side shares: the runtime, the node's facts, the hook plugins.
pub struct RuntimeManager {
    /// The CRI runtime and image services.
    pub cri: CriClient,
    /// Node-wide facts every config needs.
    pub node: NodeContext,
    /// The `lifecycle-hooks` plugins run at postStart and preStop.
    pub plugins: Arc<PluginRegistry>,
    /// The resync period: the requeue of a sync that has nothing to wait for.
    pub sync_frequency: Duration,
    /// Where volumes and the environment read configMaps, secrets, tokens and Services:
    /// the API server in cluster mode, [`crate::objects::Standalone`] otherwise.
    pub objects: Arc<dyn crate::objects::ObjectSource>,
    /// Where the pod and container events go (`Pulled`, `Started`, `Killing`, `BackOff`...).
    pub events: Arc<dyn EventRecorder>,
}

impl RuntimeManager {
    /// Reads what the runtime holds for pod `uid` on this node.
    pub async fn fetch(&self, uid: &str) -> Result<PodRuntimeStatus, CriError> {
        let mut status = PodRuntimeStatus::fetch(&self.cri, uid, &self.node.node_name).await?;
        status
            .containers
            .iter_mut()
            .for_each(termination_message::fill);
        Ok(status)
    }

    /// What the hooks of `pod` may reach, as of `runtime`.
    pub fn hooks(&self, pod: &Pod, runtime: &PodRuntimeStatus) -> PodHooks {
        PodHooks {
            cri: self.cri.clone(),
            plugins: self.plugins.clone(),
            pod: pod.clone(),
            pod_ip: self.pod_ip(pod, runtime),
            containers: Arc::new(running_containers(runtime)),
            events: self.events.clone(),
        }
    }

    /// The pod IP hooks and probes use: the sandbox's, or the node's under hostNetwork.
    pub fn pod_ip(&self, pod: &Pod, runtime: &PodRuntimeStatus) -> String {
        match runtime.current_sandbox().and_then(|s| s.ips.first()) {
            Some(ip) if !crate::podutil::host_network(pod) => ip.clone(),
            _ => self.node.node_ip.clone(),
        }
    }
}

/// Name -> ID of the pod's running containers.
pub fn running_containers(runtime: &PodRuntimeStatus) -> HashMap<String, String> {
    runtime
        .containers
        .iter()
        .filter(|c| runtime_status::is_running(c))
        .map(|c| (runtime_status::container_name(c).to_string(), c.id.clone()))
        .collect()
}

/// Treats a CRI "not found" as done: teardown of something already gone succeeded.
fn ignore_not_found(error: CriError) -> Result<(), CriError> {
    if error.is_not_found() {
        Ok(())
    } else {
        Err(error)
    }
}
