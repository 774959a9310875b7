//! Where `/metrics/cadvisor`'s cgroups come from: the runtime's ready sandboxes and running
//! containers of this node (the same three CRI lists `/stats/summary` makes), the pod cgroups
//! the kubelet made for them, and the node root. One scrape reads each cgroup once.

use super::{encode, FsUsage, Labels, Machine, Subject};
use crate::cri::{api, labels, CriClient};
use crate::resources::QosClass;
use crate::stats::cgroup::snapshot::{read_cgroup, Hierarchies};
use crate::stats::cgroup::CgroupMemory;
use crate::stats::housekeeping::{self, Housekeeping, Housekept};
use crate::stats::network::{self, InterfaceCounters};
use crate::stats::summary::{list_node, ready_sandboxes};
use crate::stats::{cpu, fs, node, StatsError};
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The cgroups between the root and the pods that cAdvisor reports too: the kubelet's pods
/// cgroup and its QoS children (Guaranteed pods sit directly under `/kubepods`).
const POD_PARENTS: [&str; 3] = ["/kubepods", "/kubepods/besteffort", "/kubepods/burstable"];

/// Builds `/metrics/cadvisor` for one node.
pub struct CadvisorProvider {
    cri: CriClient,
    node_name: String,
    root_dir: PathBuf,
    hierarchies: Hierarchies,
    machine: Machine,
    housekeeping: Housekeeping,
}

/// What the runtime said in one scrape.
pub(super) struct Runtime {
    pub sandboxes: Vec<api::PodSandbox>,
    pub containers: Vec<api::Container>,
    pub stats: Vec<api::ContainerStats>,
}

impl CadvisorProvider {
    /// A provider for the pods of `node_name`, with the kubelet's root directory (nodefs),
    /// reading the cgroups every `housekeeping_period` while it is scraped. The machine is
    /// read now: cAdvisor, too, reads its `MachineInfo` once.
    pub fn new(
        cri: CriClient,
        node_name: impl Into<String>,
        root_dir: impl Into<PathBuf>,
        housekeeping_period: Duration,
    ) -> Self {
        let identity = crate::machine::machine_info();
        CadvisorProvider {
            cri,
            node_name: node_name.into(),
            root_dir: root_dir.into(),
            hierarchies: Hierarchies::host(),
            machine: Machine {
                cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
                memory_bytes: u64::try_from(crate::machine::machine_memory_bytes()).unwrap_or(0),
                machine_id: identity.machine_id,
                system_uuid: identity.system_uuid,
                boot_id: identity.boot_id,
            },
            housekeeping: Housekeeping::new(housekeeping_period),
        }
    }

    /// The text of a scrape (housekeeping's last rendering).
    pub async fn scrape(self: &Arc<Self>) -> Bytes {
        housekeeping::scrape(self).await
    }

    /// Reads every cgroup once and renders the text, the cgroup reads off the executor. A
    /// failed runtime listing is logged and reported as `container_scrape_error 1`, with the
    /// machine series still served (upstream's collector continues on error).
    async fn read_and_render(self: &Arc<Self>) -> Bytes {
        let at = SystemTime::now();
        let at_ms = at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let runtime = match self.list().await {
            Ok(runtime) => runtime,
            Err(error) => {
                tracing::error!(path = "/metrics/cadvisor", %error, "cannot list containers");
                return Bytes::from(encode(&self.machine, &[], at_ms, true));
            }
        };
        let provider = self.clone();
        let rendered = tokio::task::spawn_blocking(move || {
            let subjects = provider.subjects(&runtime);
            encode(&provider.machine, &subjects, at_ms, false)
        })
        .await;
        match rendered {
            Ok(text) => Bytes::from(text),
            Err(error) => {
                tracing::error!(path = "/metrics/cadvisor", %error, "reading the cgroups failed");
                Bytes::from(encode(&self.machine, &[], at_ms, true))
            }
        }
    }

    async fn list(&self) -> Result<Runtime, StatsError> {
        let (sandboxes, containers, stats) = list_node(&self.cri, &self.node_name).await?;
        Ok(Runtime {
            sandboxes,
            containers,
            stats,
        })
    }

    /// The node root, the pods' parent cgroups, and every pod with its sandbox and containers.
    fn subjects(&self, runtime: &Runtime) -> Vec<Subject> {
        let h = &self.hierarchies;
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mounts = fs::Mounts::parse(&mountinfo);
        let mut subjects = vec![self.root(runtime, &mounts)];
        subjects.extend(pod_subjects(h, runtime, &mounts, network::of_process));
        subjects
    }

    /// The root cgroup `/`: the node as a whole, its own network namespace and the filesystems
    /// of nodefs and the runtime's writable layers.
    fn root(&self, runtime: &Runtime, mounts: &fs::Mounts) -> Subject {
        let mut cgroup = read_cgroup(&self.hierarchies, "/").unwrap_or_default();
        // The v2 root has no memory.current (and older kernels no root cpu.stat): read the
        // node as /stats/summary reads it.
        if cgroup.memory.is_none() {
            cgroup.memory = node::memory().ok().map(|m| CgroupMemory {
                usage: m.usage,
                working_set: m.working_set,
                limit: None,
                counters: node::memory_counters(),
            });
        }
        if cgroup.cpu_usage_ns.is_none() {
            cgroup.cpu_usage_ns = cpu::node_usage_ns().ok();
        }
        let mut paths = vec![self.root_dir.clone()];
        paths.extend(
            runtime
                .stats
                .iter()
                .filter_map(|s| s.writable_layer.as_ref()?.fs_id.as_ref())
                .map(|id| PathBuf::from(&id.mountpoint))
                .filter(|p| p.is_absolute()),
        );
        let mut devices: BTreeMap<String, u64> = BTreeMap::new();
        for path in paths {
            let Some(device) = mounts.device_of(&path) else {
                continue;
            };
            if devices.contains_key(device) {
                continue;
            }
            if let Ok(stats) = fs::of(&path) {
                devices.insert(device.to_string(), stats.used_bytes);
            }
        }
        Subject {
            labels: Labels {
                id: "/".into(),
                ..Labels::default()
            },
            cgroup,
            network: network::host().unwrap_or_default(),
            fs: devices
                .into_iter()
                .map(|(device, used_bytes)| FsUsage { device, used_bytes })
                .collect(),
            start_time: node::boot_time().ok(),
            pressure: crate::stats::psi::Pressure::node(),
        }
    }
}

impl Housekept for CadvisorProvider {
    const PATH: &'static str = "/metrics/cadvisor";

    fn housekeeping(&self) -> &Housekeeping {
        &self.housekeeping
    }

    fn render(self: &Arc<Self>) -> impl std::future::Future<Output = Bytes> + Send {
        self.read_and_render()
    }
}

/// A CRI time (ns since the epoch) as a `SystemTime`; `None` for an unset one.
fn system_time(nanos: i64) -> Option<SystemTime> {
    let nanos = u64::try_from(nanos).ok().filter(|&n| n > 0)?;
    Some(UNIX_EPOCH + Duration::from_nanos(nanos))
}

/// The pod cgroup of `uid` in `h`, whichever QoS class put it where.
fn pod_cgroup(h: &Hierarchies, uid: &str) -> Option<String> {
    [
        QosClass::Guaranteed,
        QosClass::Burstable,
        QosClass::BestEffort,
    ]
    .into_iter()
    .map(|qos| qos.cgroup_parent(uid))
    .find(|parent| h.exists(parent))
}

/// The pods' parent cgroups, and for every ready sandbox its pod cgroup (`container=""`), the
/// sandbox with the pod's network (`netns_of` a process in it), and its running containers
/// with their writable layers; with cgroups under `h` (the cgroupfs layout,
/// `<pod cgroup>/<container id>`).
pub(super) fn pod_subjects(
    h: &Hierarchies,
    runtime: &Runtime,
    mounts: &fs::Mounts,
    netns_of: impl Fn(u32) -> Option<Vec<InterfaceCounters>>,
) -> Vec<Subject> {
    let mut subjects: Vec<Subject> = POD_PARENTS
        .iter()
        .filter_map(|parent| {
            Some(Subject {
                labels: Labels {
                    id: parent.to_string(),
                    ..Labels::default()
                },
                cgroup: read_cgroup(h, parent)?,
                pressure: h.pressure(parent),
                ..Subject::default()
            })
        })
        .collect();
    let layers: HashMap<&str, &api::FilesystemUsage> = runtime
        .stats
        .iter()
        .filter_map(|s| {
            Some((
                s.attributes.as_ref()?.id.as_str(),
                s.writable_layer.as_ref()?,
            ))
        })
        .collect();
    for sandbox in ready_sandboxes(&runtime.sandboxes) {
        let Some(meta) = &sandbox.metadata else {
            continue;
        };
        let Some(pod_cgroup) = pod_cgroup(h, &meta.uid) else {
            continue;
        };
        let pod_labels = Labels {
            id: pod_cgroup.clone(),
            pod: meta.name.clone(),
            namespace: meta.namespace.clone(),
            ..Labels::default()
        };
        if let Some(cgroup) = read_cgroup(h, &pod_cgroup) {
            subjects.push(Subject {
                labels: pod_labels.clone(),
                cgroup,
                pressure: h.pressure(&pod_cgroup),
                ..Subject::default()
            });
        }
        let sandbox_cgroup = format!("{pod_cgroup}/{}", sandbox.id);
        if let Some(cgroup) = read_cgroup(h, &sandbox_cgroup) {
            subjects.push(Subject {
                labels: Labels {
                    id: sandbox_cgroup.clone(),
                    name: sandbox.id.clone(),
                    ..pod_labels.clone()
                },
                cgroup,
                network: h
                    .first_process(&sandbox_cgroup)
                    .and_then(&netns_of)
                    .unwrap_or_default(),
                start_time: system_time(sandbox.created_at),
                pressure: h.pressure(&sandbox_cgroup),
                ..Subject::default()
            });
        }
        let running = runtime.containers.iter().filter(|c| {
            c.pod_sandbox_id == sandbox.id
                && c.state == api::ContainerState::ContainerRunning as i32
        });
        for container in running {
            let id = format!("{pod_cgroup}/{}", container.id);
            let Some(cgroup) = read_cgroup(h, &id) else {
                continue;
            };
            let name = container
                .metadata
                .as_ref()
                .map(|m| m.name.clone())
                .or_else(|| container.labels.get(labels::CONTAINER_NAME).cloned())
                .unwrap_or_default();
            let image = container
                .image
                .as_ref()
                .map(|i| i.image.clone())
                .filter(|i| !i.is_empty())
                .unwrap_or_else(|| container.image_ref.clone());
            let fs = layers
                .get(container.id.as_str())
                .and_then(|layer| writable_layer(mounts, layer))
                .into_iter()
                .collect();
            subjects.push(Subject {
                pressure: h.pressure(&id),
                labels: Labels {
                    id,
                    name: container.id.clone(),
                    image,
                    container: name,
                    ..pod_labels.clone()
                },
                cgroup,
                network: Vec::new(),
                fs,
                start_time: system_time(container.created_at),
            });
        }
    }
    subjects
}

/// A writable layer's usage on the filesystem the runtime keeps it on.
fn writable_layer(mounts: &fs::Mounts, layer: &api::FilesystemUsage) -> Option<FsUsage> {
    let mountpoint = &layer.fs_id.as_ref()?.mountpoint;
    let device = mounts
        .device_of(Path::new(mountpoint))
        .unwrap_or(mountpoint);
    Some(FsUsage {
        device: device.to_string(),
        used_bytes: layer.used_bytes.as_ref().map_or(0, |v| v.value),
    })
}
