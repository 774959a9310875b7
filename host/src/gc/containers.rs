//! Container GC: dead containers of this node beyond the per-container and node-wide limits,
//! every dead container of a deleted pod, and dead sandboxes with nothing left in them.

use super::GcError;
use crate::cri::{api, labels, CriClient, Labels};
use crate::metrics::{decided_by_label, Metrics, PluginLabels};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use tracing::{debug, info, warn};
use wasmlet_plugin_host::PodMeta;
use wasmlet_plugin_host::{DecidedBy, PluginRegistry};
use wasmlet_policy_default::gc::ContainerGcPolicy;
use wasmlet_policy_default::DeadContainer;

/// What one container GC cycle removed.
#[derive(Debug, Clone, Default)]
pub struct ContainerGcReport {
    /// IDs of the removed containers.
    pub containers: Vec<String>,
    /// IDs of the removed sandboxes.
    pub sandboxes: Vec<String>,
}

/// Container GC for one node's containers (those carrying its `wasmlet.dev/node` label).
pub struct ContainerGc {
    /// Only containers with this node label are collected.
    pub node_name: String,
    /// Upstream's limits (MaxPerPodContainer, MaxContainers).
    pub policy: ContainerGcPolicy,
}

fn label<'a>(map: &'a HashMap<String, String>, key: &str) -> &'a str {
    map.get(key).map_or("", String::as_str)
}

/// The dead containers of `containers` as the plugin sees them, plus each one's pod metadata.
fn dead_containers(
    containers: &[api::Container],
    desired: &HashSet<String>,
) -> (Vec<usize>, Vec<DeadContainer>, Vec<PodMeta>) {
    let dead: Vec<usize> = (0..containers.len())
        .filter(|&i| {
            let state = containers[i].state;
            state == api::ContainerState::ContainerExited as i32
                || state == api::ContainerState::ContainerUnknown as i32
        })
        .collect();
    let mut pods: BTreeMap<&str, u32> = BTreeMap::new();
    let mut meta = Vec::new();
    let mut units: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for &i in &dead {
        let c = &containers[i];
        let uid = label(&c.labels, labels::POD_UID);
        pods.entry(uid).or_insert_with(|| {
            meta.push(PodMeta {
                namespace: label(&c.labels, labels::POD_NAMESPACE).to_string(),
                name: label(&c.labels, labels::POD_NAME).to_string(),
                uid: uid.to_string(),
                ..Default::default()
            });
            (meta.len() - 1) as u32
        });
        units
            .entry((uid, label(&c.labels, labels::CONTAINER_NAME)))
            .or_default()
            .push(i);
    }
    let mut planned = vec![DeadContainer::default(); dead.len()];
    let position: HashMap<usize, usize> = dead.iter().enumerate().map(|(p, &i)| (i, p)).collect();
    for (unit, ((uid, _), members)) in units.iter_mut().enumerate() {
        // Newest first, by creation time as upstream.
        members.sort_by_key(|&i| std::cmp::Reverse(containers[i].created_at));
        for (rank, &i) in members.iter().enumerate() {
            planned[position[&i]] = DeadContainer {
                pod_deleted: !desired.contains(*uid),
                finished_unix_ms: (containers[i].created_at.max(0) / 1_000_000) as u64,
                per_container_rank: rank as u32,
                unit: unit as u32,
                pod: pods[uid],
            };
        }
    }
    (dead, planned, meta)
}

/// Sandboxes to remove: not ready, with no container left, and not the newest sandbox of a
/// pod that still exists (upstream `evictSandboxes`).
fn dead_sandboxes<'a>(
    sandboxes: &'a [api::PodSandbox],
    containers_left: &HashSet<&str>,
    desired: &HashSet<String>,
) -> Vec<&'a api::PodSandbox> {
    let mut newest: HashMap<&str, (i64, &str)> = HashMap::new();
    for s in sandboxes {
        let uid = s.metadata.as_ref().map_or("", |m| m.uid.as_str());
        let entry = newest.entry(uid).or_insert((s.created_at, s.id.as_str()));
        if s.created_at > entry.0 {
            *entry = (s.created_at, s.id.as_str());
        }
    }
    sandboxes
        .iter()
        .filter(|s| {
            let uid = s.metadata.as_ref().map_or("", |m| m.uid.as_str());
            let keep_newest =
                desired.contains(uid) && newest.get(uid).map(|n| n.1) == Some(s.id.as_str());
            s.state == api::PodSandboxState::SandboxNotready as i32
                && !containers_left.contains(s.id.as_str())
                && !keep_newest
        })
        .collect()
}

impl ContainerGc {
    /// One cycle. `desired`: UIDs of the pods the sources want; any other pod is deleted.
    pub async fn collect(
        &self,
        cri: &CriClient,
        plugins: &Arc<PluginRegistry>,
        metrics: &Metrics,
        desired: &HashSet<String>,
    ) -> Result<ContainerGcReport, GcError> {
        let selector = Labels::from([(labels::NODE.to_string(), self.node_name.clone())]);
        let containers = cri.list_containers(selector.clone()).await?;
        let (dead, planned, meta) = dead_containers(&containers, desired);
        let mut report = ContainerGcReport::default();
        let mut removed: HashSet<&str> = HashSet::new();
        if !dead.is_empty() {
            let decision = {
                let (plugins, planned, policy) = (plugins.clone(), planned.clone(), self.policy);
                tokio::task::spawn_blocking(move || {
                    plugins.plan_containers(&planned, meta, &policy)
                })
                .await
                .map_err(|e| GcError::Plan(e.to_string()))?
            };
            if let DecidedBy::Plugin { name, .. } = &decision.decided_by {
                tracing::Span::current().record("plugin", name.as_str());
            }
            let plugin = decided_by_label(&decision.decided_by);
            for index in decision.order {
                let (c, plan) = (&containers[dead[index as usize]], &planned[index as usize]);
                let name = label(&c.labels, labels::CONTAINER_NAME);
                let pod = label(&c.labels, labels::POD_NAME);
                // Kept for `logs --previous` whatever a plugin says, as upstream keeps it.
                if !plan.pod_deleted && plan.per_container_rank == 0 {
                    debug!(%pod, container = %name, id = %c.id, %plugin, "container GC: keeping the newest dead container of a live pod");
                    continue;
                }
                match cri.remove_container(&c.id).await {
                    Ok(()) => {
                        info!(%pod, container = %name, id = %c.id, %plugin, pod_deleted = plan.pod_deleted, "container GC: removed dead container");
                        metrics
                            .containers_removed
                            .get_or_create(&PluginLabels {
                                plugin: plugin.clone(),
                            })
                            .inc();
                        removed.insert(c.id.as_str());
                        report.containers.push(c.id.clone());
                    }
                    Err(error) if error.is_not_found() => {}
                    Err(error) => {
                        warn!(%pod, container = %name, id = %c.id, %error, "container GC: removing a container failed")
                    }
                }
            }
        }

        let containers_left: HashSet<&str> = containers
            .iter()
            .filter(|c| !removed.contains(c.id.as_str()))
            .map(|c| c.pod_sandbox_id.as_str())
            .collect();
        let sandboxes = cri.list_pod_sandbox(selector).await?;
        for sandbox in dead_sandboxes(&sandboxes, &containers_left, desired) {
            let pod = sandbox.metadata.as_ref().map_or("", |m| m.name.as_str());
            match cri.remove_pod_sandbox(&sandbox.id).await {
                Ok(()) => {
                    info!(%pod, id = %sandbox.id, "container GC: removed dead sandbox");
                    metrics.sandboxes_removed.inc();
                    report.sandboxes.push(sandbox.id.clone());
                }
                Err(error) if error.is_not_found() => {}
                Err(error) => {
                    warn!(%pod, id = %sandbox.id, %error, "container GC: removing a sandbox failed")
                }
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(
        id: &str,
        uid: &str,
        name: &str,
        created_at: i64,
        state: api::ContainerState,
    ) -> api::Container {
        api::Container {
            id: id.into(),
            pod_sandbox_id: format!("sb-{uid}"),
            state: state as i32,
            created_at,
            labels: HashMap::from([
                (labels::POD_UID.to_string(), uid.to_string()),
                (labels::POD_NAME.to_string(), format!("pod-{uid}")),
                (labels::CONTAINER_NAME.to_string(), name.to_string()),
            ]),
            ..Default::default()
        }
    }

    #[test]
    fn dead_containers_are_ranked_newest_first_per_unit() {
        use api::ContainerState::*;
        let containers = vec![
            container("old", "u1", "app", 1_000_000, ContainerExited),
            container("running", "u1", "app", 9_000_000, ContainerRunning),
            container("new", "u1", "app", 5_000_000, ContainerExited),
            container("gone", "u2", "app", 2_000_000, ContainerExited),
        ];
        let desired: HashSet<String> = ["u1".to_string()].into();
        let (dead, planned, meta) = dead_containers(&containers, &desired);
        assert_eq!(dead, vec![0, 2, 3]);
        assert_eq!(planned[0].per_container_rank, 1);
        assert_eq!(planned[1].per_container_rank, 0);
        assert_eq!(planned[0].unit, planned[1].unit);
        assert!(!planned[0].pod_deleted);
        assert!(planned[2].pod_deleted);
        assert_ne!(planned[2].unit, planned[0].unit);
        assert_eq!(meta[planned[2].pod as usize].uid, "u2");
        assert_eq!(planned[1].finished_unix_ms, 5);
    }

    #[test]
    fn the_newest_sandbox_of_a_live_pod_stays() {
        let sandbox = |id: &str, uid: &str, created_at: i64, ready: bool| api::PodSandbox {
            id: id.into(),
            metadata: Some(api::PodSandboxMetadata {
                uid: uid.into(),
                ..Default::default()
            }),
            state: if ready {
                api::PodSandboxState::SandboxReady as i32
            } else {
                api::PodSandboxState::SandboxNotready as i32
            },
            created_at,
            ..Default::default()
        };
        let sandboxes = vec![
            sandbox("old", "u1", 1, false),
            sandbox("newest", "u1", 2, false),
            sandbox("deleted", "u2", 1, false),
            sandbox("busy", "u2", 2, false),
            sandbox("ready", "u3", 1, true),
        ];
        let left: HashSet<&str> = ["busy"].into();
        let desired: HashSet<String> = ["u1".to_string(), "u3".to_string()].into();
        let ids: Vec<&str> = dead_sandboxes(&sandboxes, &left, &desired)
            .iter()
            .map(|s| s.id.as_str())
            .collect();
        assert_eq!(ids, vec!["old", "deleted"]);
    }
}
