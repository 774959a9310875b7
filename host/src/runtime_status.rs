//! What the runtime holds for one pod (upstream's `kubecontainer.PodStatus`): its sandboxes
//! and every container with full CRI status, read by pod UID and node labels.

use crate::cri::{api, labels, CriClient, CriError, Labels};

/// One pod sandbox.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// The runtime's sandbox ID, which containers are created in.
    pub id: String,
    /// The sandbox is ready: its network is up and containers can be started in it.
    pub ready: bool,
    /// How many sandboxes were made for this pod before; the next one gets `attempt + 1`.
    pub attempt: u32,
    /// Unix nanoseconds; orders the sandboxes so the newest is the current one.
    pub created_at: i64,
    /// Pod IPs, primary first (empty for a sandbox that is not ready).
    pub ips: Vec<String>,
}

/// Sandboxes (newest first) and containers (newest first) of a pod.
#[derive(Debug, Clone, Default)]
pub struct PodRuntimeStatus {
    /// The pod's sandboxes, newest first: the first is the one containers run in.
    pub sandboxes: Vec<Sandbox>,
    /// Every container of the pod the runtime still holds, including exited ones.
    pub containers: Vec<api::ContainerStatus>,
}

/// The selector for everything this node created for pod `uid`.
pub fn pod_selector(uid: &str, node_name: &str) -> Labels {
    Labels::from([
        (labels::POD_UID.to_string(), uid.to_string()),
        (labels::NODE.to_string(), node_name.to_string()),
    ])
}

impl PodRuntimeStatus {
    /// Reads the pod's sandboxes and containers; objects removed while reading are skipped.
    pub async fn fetch(cri: &CriClient, uid: &str, node_name: &str) -> Result<Self, CriError> {
        let selector = pod_selector(uid, node_name);
        let mut sandboxes = Vec::new();
        for sandbox in cri.list_pod_sandbox(selector.clone()).await? {
            let ready = sandbox.state == api::PodSandboxState::SandboxReady as i32;
            let mut ips = Vec::new();
            if ready {
                match cri.pod_sandbox_status(&sandbox.id).await {
                    Ok(status) => {
                        if let Some(network) = status.network {
                            ips.extend(Some(network.ip).filter(|ip| !ip.is_empty()));
                            ips.extend(network.additional_ips.into_iter().map(|p| p.ip));
                        }
                    }
                    Err(e) if e.is_not_found() => continue,
                    Err(e) => return Err(e),
                }
            }
            sandboxes.push(Sandbox {
                attempt: sandbox.metadata.as_ref().map_or(0, |m| m.attempt),
                id: sandbox.id,
                ready,
                created_at: sandbox.created_at,
                ips,
            });
        }
        sandboxes.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        let mut containers = Vec::new();
        for container in cri.list_containers(selector).await? {
            match cri.container_status(&container.id).await {
                Ok(status) => containers.push(status),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        let mut status = Self {
            sandboxes,
            containers,
        };
        status.sort_containers();
        Ok(status)
    }

    /// Adds a sandbox just created (newest), without relisting the pod.
    pub async fn add_sandbox(&mut self, cri: &CriClient, id: &str) -> Result<(), CriError> {
        let status = cri.pod_sandbox_status(id).await?;
        let ips = status
            .network
            .map(|n| {
                Some(n.ip)
                    .filter(|ip| !ip.is_empty())
                    .into_iter()
                    .chain(n.additional_ips.into_iter().map(|p| p.ip))
                    .collect()
            })
            .unwrap_or_default();
        for older in &mut self.sandboxes {
            older.ready = false;
        }
        self.sandboxes.insert(
            0,
            Sandbox {
                id: id.to_string(),
                ready: status.state == api::PodSandboxState::SandboxReady as i32,
                attempt: status.metadata.map_or(0, |m| m.attempt),
                created_at: status.created_at,
                ips,
            },
        );
        Ok(())
    }

    /// Re-reads the status of containers `ids` (just created or started) in place.
    pub async fn refresh_containers(
        &mut self,
        cri: &CriClient,
        ids: &[String],
    ) -> Result<(), CriError> {
        for id in ids {
            let status = match cri.container_status(id).await {
                Ok(status) => status,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e),
            };
            self.containers.retain(|c| &c.id != id);
            self.containers.push(status);
        }
        if !ids.is_empty() {
            self.sort_containers();
        }
        Ok(())
    }

    fn sort_containers(&mut self) {
        self.containers.sort_by(|a, b| {
            attempt(b)
                .cmp(&attempt(a))
                .then(b.created_at.cmp(&a.created_at))
        });
    }

    /// The newest sandbox, which is the pod's current one.
    pub fn current_sandbox(&self) -> Option<&Sandbox> {
        self.sandboxes.first()
    }

    /// Containers created for `name`, newest attempt first.
    pub fn containers_named<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a api::ContainerStatus> + 'a {
        self.containers
            .iter()
            .filter(move |c| container_name(c) == name)
    }

    /// The newest container created for `name`.
    pub fn latest<'a>(&'a self, name: &'a str) -> Option<&'a api::ContainerStatus> {
        self.containers_named(name).next()
    }

    /// Containers still running or created (not exited).
    pub fn live_containers(&self) -> impl Iterator<Item = &api::ContainerStatus> {
        self.containers.iter().filter(|c| !is_exited(c))
    }
}

/// The container name the status belongs to.
pub fn container_name(status: &api::ContainerStatus) -> &str {
    status.metadata.as_ref().map_or("", |m| m.name.as_str())
}

/// The attempt (restart count) of the container.
pub fn attempt(status: &api::ContainerStatus) -> u32 {
    status.metadata.as_ref().map_or(0, |m| m.attempt)
}

/// Whether the container has exited (or its state is unknown, which upstream treats alike).
pub fn is_exited(status: &api::ContainerStatus) -> bool {
    status.state == api::ContainerState::ContainerExited as i32
        || status.state == api::ContainerState::ContainerUnknown as i32
}

/// Whether the container is running.
pub fn is_running(status: &api::ContainerStatus) -> bool {
    status.state == api::ContainerState::ContainerRunning as i32
}
