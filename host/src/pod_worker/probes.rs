//! The probes of a pod's running app containers: started when a container runs, dropped when
//! it stops or is replaced, and their liveness/startup verdicts handed to the next sync.

use super::{PodWorker, WorkerMessage};
use crate::kuberuntime::{self, Unhealthy};
use crate::podutil;
use crate::prober::{self, ContainerProbes, ProbeConfig, ProbeKind, ProbeTarget};
use crate::runtime_status::{self, PodRuntimeStatus};
use crate::timestamps;
use k8s_openapi::api::core::v1::Pod;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::SystemTime;
use tracing::debug;

/// The probes of each app container and sidecar of `pod` that declares any (spec and plugin
/// annotations).
pub(super) fn probe_configs(pod: &Pod) -> HashMap<String, Vec<ProbeConfig>> {
    podutil::sidecars_and_app_containers(pod)
        .map(|c| (c.name.clone(), prober::container_probes(pod, c)))
        .filter(|(_, probes)| !probes.is_empty())
        .collect()
}

impl PodWorker {
    /// Running containers whose liveness or startup probe failed.
    pub(super) fn unhealthy(&self) -> HashMap<String, Unhealthy> {
        self.probes
            .iter()
            .filter_map(|(name, probes)| {
                let (probe, message, grace) = probes.kill_reason()?;
                Some((
                    name.clone(),
                    Unhealthy {
                        container_id: probes.container_id.clone(),
                        probe,
                        message,
                        grace,
                    },
                ))
            })
            .collect()
    }

    /// Stops every probe task and waits until none runs a command any more.
    pub(super) async fn quiesce_probes(&mut self) {
        futures::future::join_all(self.probes.drain().map(|(_, probes)| probes.quiesce())).await;
    }

    /// Containers with a startup probe that has not succeeded on their running instance
    /// (or whose probes have not started yet).
    pub(super) fn not_started(&self) -> HashSet<String> {
        self.probe_configs
            .iter()
            .filter(|(_, configs)| configs.iter().any(|c| c.kind == ProbeKind::Startup))
            .filter(|(name, _)| self.probes.get(*name).is_none_or(|p| !p.view().started))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Starts probe tasks for app containers that run now and stops those of containers
    /// that stopped or were replaced.
    pub(super) fn update_probes(&mut self, runtime: &PodRuntimeStatus, pod_ip: &str) {
        if self.probe_configs.is_empty() {
            return;
        }
        self.probes.retain(|name, probes| {
            runtime
                .latest(name)
                .is_some_and(|c| c.id == probes.container_id && runtime_status::is_running(c))
        });
        let pod_containers = Arc::new(kuberuntime::running_containers(runtime));
        let ports = podutil::declared_ports(&self.pod);
        for (name, configs) in &self.probe_configs {
            if self.probes.contains_key(name) {
                continue;
            }
            let Some(running) = runtime
                .latest(name)
                .filter(|c| runtime_status::is_running(c))
            else {
                continue;
            };
            let target = ProbeTarget {
                cri: self.node.runtime.cri.clone(),
                plugins: self.node.prober.plugins.clone(),
                metrics: self.node.prober.metrics.clone(),
                namespace: self.pod.metadata.namespace.clone().unwrap_or_default(),
                pod_name: self.pod.metadata.name.clone().unwrap_or_default(),
                pod_uid: self.uid.clone(),
                container: name.clone(),
                container_id: running.id.clone(),
                pod_ip: pod_ip.to_string(),
                pod_ports: ports.clone(),
                pod_containers: pod_containers.clone(),
            };
            let weak = self.myself.clone();
            // Readiness changes only the status (upstream's `SetContainerReadiness`); a
            // liveness failure or a startup success changes what the runtime must do.
            let notify: prober::Notify = Arc::new(move |kind| {
                if let Some(inbox) = weak.upgrade() {
                    let _ = inbox.send(match kind {
                        ProbeKind::Readiness => WorkerMessage::Republish,
                        ProbeKind::Liveness | ProbeKind::Startup => WorkerMessage::Sync,
                    });
                }
            });
            let started_at =
                timestamps::time_of(running.started_at).unwrap_or_else(SystemTime::now);
            debug!(container = %name, id = %running.id, probes = configs.len(), "starting probes");
            self.probes.insert(
                name.clone(),
                ContainerProbes::start(
                    &self.node.prober,
                    target,
                    configs.clone(),
                    started_at,
                    notify,
                ),
            );
        }
    }
}
