//! A pod worker's status: published after each sync from the runtime view it read, and
//! again without reading the runtime when only an event's exit or a readiness result is new.

use super::PodWorker;
use crate::cri::api;
use crate::pleg::ExitHint;
use crate::podutil;
use crate::prober;
use crate::runtime_status::{self, PodRuntimeStatus};
use crate::status::{self, StatusInput, Waiting};
use crate::timestamps;
use std::collections::HashMap;
use std::time::SystemTime;
use tracing::debug;

impl PodWorker {
    /// Whether a PLEG start of `id` (a container's or a sandbox's runtime ID) is one this
    /// worker made and has already shown: the last status published shows it running, and
    /// every app container and sidecar of the spec running, so no later sync waits on it (the
    /// next sidecar starts once the one before runs).
    pub(super) fn shows_running(&self, id: &str) -> bool {
        let Some((runtime, _)) = &self.last_published else {
            return false;
        };
        let running = |name: &str| runtime.latest(name).is_some_and(runtime_status::is_running);
        podutil::sidecars_and_app_containers(&self.pod).all(|c| running(&c.name))
            && (runtime.sandboxes.iter().any(|s| s.id == id && s.ready)
                || runtime
                    .containers
                    .iter()
                    .any(|c| c.id == id && runtime_status::is_running(c)))
    }

    /// Publishes the status again on the last runtime view, for a readiness result.
    pub(super) fn republish(&mut self) {
        if let Some((runtime, waiting)) = self.last_published.take() {
            self.publish(&runtime, &waiting, false);
        }
    }

    /// Shows exits reported by containerd's events in the status at once, on top of the last
    /// runtime view; the sync that follows the confirmed event replaces it with CRI's record.
    pub(super) fn publish_exits(&mut self, exits: &[(String, ExitHint)]) {
        let Some((mut runtime, waiting)) = self.last_published.clone() else {
            return;
        };
        let mut changed = false;
        for (id, exit) in exits {
            let Some(container) = runtime.containers.iter_mut().find(|c| &c.id == id) else {
                continue;
            };
            // A SIGKILL (137) may be the OOM killer's, whose event can come after the exit:
            // CRI's record says which, so such exits wait for it.
            if !runtime_status::is_running(container) || (exit.exit_code == 137 && !exit.oom_killed)
            {
                continue;
            }
            container.state = api::ContainerState::ContainerExited as i32;
            container.exit_code = exit.exit_code;
            container.finished_at = exit.finished_at;
            container.reason = match (exit.oom_killed, exit.exit_code) {
                (true, _) => "OOMKilled",
                (false, 0) => "Completed",
                (false, _) => "Error",
            }
            .into();
            changed = true;
        }
        if changed {
            debug!(
                exits = exits.len(),
                "status updated from containerd's exit events"
            );
            self.publish(&runtime, &waiting, false);
        }
    }

    pub(super) fn publish(
        &mut self,
        runtime: &PodRuntimeStatus,
        waiting: &HashMap<String, Waiting>,
        terminal: bool,
    ) {
        self.last_published = Some((runtime.clone(), waiting.clone()));
        let previous = self.node.status.published_status(&self.uid);
        let probes: HashMap<String, prober::ProbeView> = self
            .probes
            .iter()
            .filter(|(name, p)| runtime.latest(name).is_some_and(|c| c.id == p.container_id))
            .map(|(name, p)| (name.clone(), p.view()))
            .collect();
        let status = status::generate(&StatusInput {
            probes: &probes,
            pod: &self.pod,
            runtime,
            waiting,
            host_ip: self.node.node_ip(),
            runtime_name: &self.node.runtime_name,
            start_time: self.start_time.clone(),
            previous: previous.as_ref(),
            terminal,
            applied: self.sync_state.applied_resources(),
            resize_pending: self.resize_pending.as_ref(),
        });
        if !self.start_recorded && status.phase.as_deref() == Some("Running") {
            self.start_recorded = true;
            self.record_start();
        }
        self.node.status.set_status(&self.pod, status);
    }

    /// The pod runs for the first time: upstream's start duration and start SLI.
    fn record_start(&self) {
        let since_seen = self.first_seen.elapsed().as_secs_f64();
        let sli = self
            .pod
            .metadata
            .creation_timestamp
            .as_ref()
            .and_then(timestamps::system_time)
            .and_then(|created| SystemTime::now().duration_since(created).ok())
            .map(|age| {
                age.saturating_sub(self.sync_state.image_pulling())
                    .as_secs_f64()
            });
        let host_network = self
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.host_network)
            .unwrap_or(false);
        crate::metrics::kubelet::kubelet().pod_started(since_seen, sli, host_network);
    }
}
