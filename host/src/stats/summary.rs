//! The Summary API (`/stats/summary`), built as upstream's kubelet builds it with the CRI stats
//! provider (`pkg/kubelet/stats/cri_stats_provider.go`, `server/stats/summary.go`): pods are the
//! runtime's ready sandboxes, containers its running containers; container CPU, memory and
//! writable layers come from CRI `ListContainerStats`, pod and node CPU and memory from the
//! cgroups (as cadvisor reads them), filesystems from statvfs and CRI `ImageFsInfo`.
//!
//! `usageNanoCores` needs two samples; [`SummaryProvider`] keeps the last one per cgroup and
//! container between requests, so the first request after a start has no rate yet.

mod convert;
mod types;

pub use types::*;

use convert::{cgroup_memory_stats, network_stats, volume_stats};

use super::cpu::{self, UsageNanoCores};
use super::network;
use super::pod::dir_usage;
use super::psi::{self, Resource};
use super::{cgroup, fs, node, StatsError};
use crate::cri::{api, labels, CriClient, Labels};
use crate::resources::QosClass;
use crate::timestamps::{api_time, api_time_of};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The system container of all pods, the cgroup every pod cgroup is under.
const PODS_CGROUP: &str = "/kubepods";

/// The emptyDir plugin's directory under a pod's `volumes/`.
pub(crate) const EMPTY_DIR_PLUGIN: &str = "kubernetes.io~empty-dir";

/// Builds the Summary of one node from its cgroups and its runtime.
pub struct SummaryProvider {
    cri: CriClient,
    node_name: String,
    root_dir: PathBuf,
    pod_logs_dir: PathBuf,
    cpu: UsageNanoCores,
}

/// What one request reads once and every pod shares.
struct Reading {
    now: SystemTime,
    time: Time,
    /// Everything, or only CPU and memory (`only_cpu_and_memory`, `/metrics/resource`).
    full: bool,
    image_fs: Option<fs::FsStats>,
    root_fs: Option<fs::FsStats>,
    logs_fs: Option<fs::FsStats>,
}

impl SummaryProvider {
    /// A provider for the pods of `node_name` (the runtime's objects carrying its node label),
    /// with the kubelet's root directory (nodefs, pod volumes) and `podLogsDir`.
    pub fn new(
        cri: CriClient,
        node_name: impl Into<String>,
        root_dir: impl Into<PathBuf>,
        pod_logs_dir: impl Into<PathBuf>,
    ) -> Self {
        SummaryProvider {
            cri,
            node_name: node_name.into(),
            root_dir: root_dir.into(),
            pod_logs_dir: pod_logs_dir.into(),
            cpu: UsageNanoCores::default(),
        }
    }

    /// The node's summary. With `only_cpu_and_memory` (upstream's `GetCPUAndMemoryStats`) it
    /// has the node's, system containers', pods' and containers' CPU, memory and swap only, and
    /// costs no filesystem walk.
    pub async fn get(&self, only_cpu_and_memory: bool) -> Result<Summary, StatsError> {
        let (sandboxes, containers, container_stats) =
            list_node(&self.cri, &self.node_name).await?;
        let now = SystemTime::now();
        let time = api_time(now);
        let full = !only_cpu_and_memory;
        let (image_fs, image_fs_stats) = if full {
            let (fs, stats) = self.image_fs(&time).await?;
            (Some(fs), Some(stats))
        } else {
            (None, None)
        };
        let reading = Reading {
            now,
            time,
            full,
            image_fs,
            root_fs: full.then(|| fs::of(&self.root_dir).ok()).flatten(),
            logs_fs: full.then(|| fs::of(&self.pod_logs_dir).ok()).flatten(),
        };
        let node = self.node(&reading, image_fs_stats)?;

        let stats_by_id: HashMap<&str, &api::ContainerStats> = container_stats
            .iter()
            .filter_map(|s| Some((s.attributes.as_ref()?.id.as_str(), s)))
            .collect();
        let mut pods: Vec<PodStats> = ready_sandboxes(&sandboxes)
            .into_iter()
            .filter_map(|sandbox| {
                let running: Vec<&api::Container> = containers
                    .iter()
                    .filter(|c| {
                        c.pod_sandbox_id == sandbox.id
                            && c.state == api::ContainerState::ContainerRunning as i32
                    })
                    .collect();
                self.pod(&reading, sandbox, &running, &stats_by_id, &container_stats)
            })
            .collect();
        pods.sort_by(|a, b| {
            (&a.pod_ref.namespace, &a.pod_ref.name).cmp(&(&b.pod_ref.namespace, &b.pod_ref.name))
        });
        self.cpu.forget_stale(unix_nanos(now));
        Ok(Summary { node, pods })
    }

    /// The image filesystem: its statvfs and, as the runtime reports them, the bytes and inodes
    /// images take. containerd 1.6 reports no separate container filesystem: the writable
    /// layers are on the same one, so `containerFs` repeats it (as upstream does then).
    async fn image_fs(&self, time: &Time) -> Result<(fs::FsStats, FsStats), StatsError> {
        let info = self.cri.image_fs_info().await?;
        let (mountpoint, usage) = info
            .image_filesystems
            .iter()
            .find_map(|f| {
                let mountpoint = &f.fs_id.as_ref()?.mountpoint;
                (!mountpoint.is_empty()).then_some((mountpoint, f))
            })
            .ok_or(StatsError::NoImageFs)?;
        let measured = fs::of(Path::new(mountpoint))?;
        let stats = FsStats {
            used_bytes: usage.used_bytes.as_ref().map(|v| v.value),
            inodes_used: usage.inodes_used.as_ref().map(|v| v.value),
            ..FsStats::on(time, Some(&measured), 0, 0)
        };
        Ok((measured, stats))
    }

    /// The node: CPU and memory of the root cgroup, the `pods` system container, swap; and for
    /// the full summary the network, nodefs, the runtime's filesystems and the PID limit.
    fn node(&self, r: &Reading, image_fs: Option<FsStats>) -> Result<NodeStats, StatsError> {
        let total = cpu::node_usage_ns()?;
        let memory = node::memory()?;
        let counters = node::memory_counters();
        let pressure = psi::Pressure::node();
        let mut stats = NodeStats {
            node_name: self.node_name.clone(),
            system_containers: self
                .cgroup_container("pods", PODS_CGROUP, r)
                .into_iter()
                .collect(),
            start_time: node::boot_time().map_or_else(|_| r.time.clone(), api_time),
            cpu: Some(CpuStats {
                time: r.time.clone(),
                usage_nano_cores: self.cpu.rate("/", unix_nanos(r.now), total),
                usage_core_nano_seconds: Some(total),
                psi: pressure.cpu,
            }),
            memory: Some(MemoryStats {
                time: r.time.clone(),
                available_bytes: Some(memory.capacity.saturating_sub(memory.working_set)),
                usage_bytes: Some(memory.usage),
                working_set_bytes: Some(memory.working_set),
                rss_bytes: counters.rss,
                page_faults: counters.page_faults,
                major_page_faults: counters.major_page_faults,
                psi: pressure.memory,
            }),
            network: None,
            fs: None,
            runtime: None,
            rlimit: None,
            swap: node::swap().ok().map(|(total, free)| SwapStats {
                time: r.time.clone(),
                swap_available_bytes: Some(free),
                swap_usage_bytes: Some(total.saturating_sub(free)),
            }),
            io: pressure.io.map(|io| IoStats {
                time: r.time.clone(),
                psi: Some(io),
            }),
        };
        if r.full {
            stats.network = network::host()
                .ok()
                .map(|interfaces| network_stats(&r.time, interfaces));
            stats.fs = r.root_fs.as_ref().map(|fs| FsStats {
                used_bytes: Some(fs.used_bytes),
                inodes_used: Some(fs.inodes.saturating_sub(fs.inodes_free)),
                ..FsStats::on(&r.time, Some(fs), 0, 0)
            });
            stats.runtime = image_fs.map(|image_fs| RuntimeStats {
                container_fs: Some(image_fs.clone()),
                image_fs: Some(image_fs),
            });
            stats.rlimit = node::pids().ok().map(|(max, running)| RlimitStats {
                time: r.time.clone(),
                maxpid: i64::try_from(max).ok(),
                curproc: i64::try_from(running).ok(),
            });
        }
        Ok(stats)
    }

    /// A cgroup as a system container (`pods`): its CPU and memory.
    fn cgroup_container(&self, name: &str, parent: &str, r: &Reading) -> Option<ContainerStats> {
        let memory = cgroup::memory(parent)?;
        Some(ContainerStats {
            name: name.to_string(),
            start_time: cgroup::created(parent).map_or_else(|| r.time.clone(), api_time),
            cpu: self.cgroup_cpu(parent, r),
            memory: Some(MemoryStats {
                psi: psi::cgroup(parent, Resource::Memory),
                ..cgroup_memory_stats(&r.time, &memory)
            }),
            rootfs: None,
            logs: None,
            swap: None,
        })
    }

    /// CPU of a cgroup, with its rate since the previous request.
    fn cgroup_cpu(&self, parent: &str, r: &Reading) -> Option<CpuStats> {
        let total = cgroup::cpu_usage_ns(parent)?;
        Some(CpuStats {
            time: r.time.clone(),
            usage_nano_cores: self.cpu.rate(parent, unix_nanos(r.now), total),
            usage_core_nano_seconds: Some(total),
            psi: psi::cgroup(parent, Resource::Cpu),
        })
    }

    /// One pod: its cgroup, its running containers and, in the full summary, its network,
    /// volumes, ephemeral storage and processes. `None` for a sandbox without metadata.
    fn pod(
        &self,
        r: &Reading,
        sandbox: &api::PodSandbox,
        running: &[&api::Container],
        stats_by_id: &HashMap<&str, &api::ContainerStats>,
        all_stats: &[api::ContainerStats],
    ) -> Option<PodStats> {
        let meta = sandbox.metadata.as_ref()?;
        let parent = pod_cgroup(&meta.uid);
        let log_dir = crate::podutil::log_directory_of(
            &self.pod_logs_dir,
            &meta.namespace,
            &meta.name,
            &meta.uid,
        );
        let containers = running
            .iter()
            .map(|c| self.container(r, c, stats_by_id.get(c.id.as_str()).copied(), &log_dir))
            .collect();
        let mut stats = PodStats {
            pod_ref: PodReference {
                name: meta.name.clone(),
                namespace: meta.namespace.clone(),
                uid: meta.uid.clone(),
            },
            start_time: api_time_of(sandbox.created_at).unwrap_or_else(|| r.time.clone()),
            containers,
            cpu: parent.as_deref().and_then(|p| self.cgroup_cpu(p, r)),
            memory: parent
                .as_deref()
                .and_then(cgroup::memory)
                .map(|m| cgroup_memory_stats(&r.time, &m)),
            network: None,
            volume_stats: Vec::new(),
            ephemeral_storage: None,
            process_stats: None,
            swap: None,
        };
        if !r.full {
            return Some(stats);
        }
        if let Some(parent) = &parent {
            stats.network = cgroup::first_process(parent, &sandbox.id)
                .and_then(network::of_process)
                .map(|interfaces| network_stats(&r.time, interfaces));
            stats.process_stats = Some(ProcessStats {
                process_count: cgroup::processes(parent),
            });
        }
        let volumes_dir = self.root_dir.join("pods").join(&meta.uid).join("volumes");
        stats.volume_stats = volume_stats(&r.time, &volumes_dir);
        stats.ephemeral_storage = Some(self.ephemeral_storage(
            r,
            &meta.uid,
            all_stats,
            &log_dir,
            &volumes_dir.join(EMPTY_DIR_PLUGIN),
        ));
        Some(stats)
    }

    /// One running container: CPU, memory and writable layer from the runtime's stats, and
    /// in the full summary its log files.
    fn container(
        &self,
        r: &Reading,
        container: &api::Container,
        stats: Option<&api::ContainerStats>,
        pod_log_dir: &Path,
    ) -> ContainerStats {
        let name = container
            .metadata
            .as_ref()
            .map(|m| m.name.clone())
            .or_else(|| container.labels.get(labels::CONTAINER_NAME).cloned())
            .unwrap_or_default();
        let cpu = stats.and_then(|s| s.cpu.as_ref()).and_then(|cpu| {
            let total = cpu.usage_core_nano_seconds.as_ref()?.value;
            let at = if cpu.timestamp > 0 {
                cpu.timestamp
            } else {
                unix_nanos(r.now)
            };
            // containerd reports no rate (0): take it from the previous sample.
            let rate = cpu
                .usage_nano_cores
                .as_ref()
                .map(|v| v.value)
                .filter(|&v| v > 0)
                .or_else(|| self.cpu.rate(&container.id, at, total));
            Some(CpuStats {
                time: api_time_of(at).unwrap_or_else(|| r.time.clone()),
                usage_nano_cores: rate,
                usage_core_nano_seconds: Some(total),
                psi: None,
            })
        });
        let memory = stats.and_then(|s| s.memory.as_ref()).map(|m| {
            let value = |v: &Option<api::UInt64Value>| v.as_ref().map(|v| v.value);
            MemoryStats {
                time: api_time_of(m.timestamp).unwrap_or_else(|| r.time.clone()),
                // containerd says 0 for "no limit", where the Summary API leaves it out.
                available_bytes: value(&m.available_bytes).filter(|&v| v > 0),
                usage_bytes: value(&m.usage_bytes),
                working_set_bytes: value(&m.working_set_bytes),
                rss_bytes: value(&m.rss_bytes),
                page_faults: value(&m.page_faults),
                major_page_faults: value(&m.major_page_faults),
                psi: None,
            }
        });
        let (rootfs, logs) = if r.full {
            let rootfs = stats.and_then(|s| s.writable_layer.as_ref()).map(|layer| {
                FsStats::on(
                    &r.time,
                    r.image_fs.as_ref(),
                    layer.used_bytes.as_ref().map_or(0, |v| v.value),
                    layer.inodes_used.as_ref().map_or(0, |v| v.value),
                )
            });
            let (bytes, inodes) = dir_usage(&pod_log_dir.join(&name));
            (
                rootfs,
                Some(FsStats::on(&r.time, r.logs_fs.as_ref(), bytes, inodes)),
            )
        } else {
            (None, None)
        };
        ContainerStats {
            name,
            start_time: api_time_of(container.created_at).unwrap_or_else(|| r.time.clone()),
            cpu,
            memory,
            rootfs,
            logs,
            swap: None,
        }
    }

    /// Writable layers of all the pod's containers, its log directory and its disk-backed
    /// emptyDirs: the sum the eviction manager ranks pods by for ephemeral storage.
    fn ephemeral_storage(
        &self,
        r: &Reading,
        uid: &str,
        all_stats: &[api::ContainerStats],
        log_dir: &Path,
        empty_dirs: &Path,
    ) -> FsStats {
        let (mut bytes, mut inodes) = (0u64, 0u64);
        for stats in all_stats {
            let of_pod = stats
                .attributes
                .as_ref()
                .is_some_and(|a| a.labels.get(labels::POD_UID).map(String::as_str) == Some(uid));
            if let (true, Some(layer)) = (of_pod, &stats.writable_layer) {
                bytes += layer.used_bytes.as_ref().map_or(0, |v| v.value);
                inodes += layer.inodes_used.as_ref().map_or(0, |v| v.value);
            }
        }
        for dir in [log_dir, empty_dirs] {
            let (b, i) = dir_usage(dir);
            bytes += b;
            inodes += i;
        }
        FsStats::on(&r.time, r.root_fs.as_ref(), bytes, inodes)
    }
}

/// The ready sandboxes, one per pod UID (the newest when a pod has several).
pub(crate) fn ready_sandboxes(sandboxes: &[api::PodSandbox]) -> Vec<&api::PodSandbox> {
    let mut by_uid: HashMap<&str, &api::PodSandbox> = HashMap::new();
    for sandbox in sandboxes {
        if sandbox.state != api::PodSandboxState::SandboxReady as i32 {
            continue;
        }
        let Some(meta) = &sandbox.metadata else {
            continue;
        };
        let newer = by_uid
            .get(meta.uid.as_str())
            .is_none_or(|kept| kept.created_at < sandbox.created_at);
        if newer {
            by_uid.insert(&meta.uid, sandbox);
        }
    }
    by_uid.into_values().collect()
}

/// The pod cgroup of `uid`, whichever QoS class put it where.
fn pod_cgroup(uid: &str) -> Option<String> {
    [
        QosClass::Guaranteed,
        QosClass::Burstable,
        QosClass::BestEffort,
    ]
    .into_iter()
    .map(|qos| qos.cgroup_parent(uid))
    .find(|parent| cgroup::exists(parent))
}

/// The node's sandboxes, containers and container stats in the runtime, listed concurrently:
/// where both the Summary and `/metrics/cadvisor` start.
pub(crate) async fn list_node(
    cri: &CriClient,
    node_name: &str,
) -> Result<
    (
        Vec<api::PodSandbox>,
        Vec<api::Container>,
        Vec<api::ContainerStats>,
    ),
    crate::cri::CriError,
> {
    let selector = Labels::from([(labels::NODE.to_string(), node_name.to_string())]);
    tokio::try_join!(
        cri.list_pod_sandbox(selector.clone()),
        cri.list_containers(selector.clone()),
        cri.list_container_stats(selector),
    )
}

/// Nanoseconds since the epoch, as CRI spells times.
fn unix_nanos(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
pub(crate) mod tests;
