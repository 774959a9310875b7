//! `/metrics/cadvisor`: the container series dashboards and alerts are built on (the
//! kubernetes-mixin, kube-prometheus), with upstream's names, help, types and labels, computed
//! from the cgroups and /proc rather than by an embedded cAdvisor.
//!
//! Upstream the kubelet registers cAdvisor's `PrometheusCollector` and
//! `PrometheusMachineCollector` (`pkg/kubelet/server/server.go`), labelling every cgroup with
//! `container`, `id` (the cgroup path), `image`, `name` (the runtime's container id),
//! `namespace` and `pod`, empty where they do not apply (`containerPrometheusLabelsFunc`). The
//! cgroups are the node root `/`, `/kubepods` and its QoS cgroups, each pod cgroup
//! (`container=""`), each pod's sandbox and each running container. Network counters are on the
//! root (the node's namespace) and the sandbox (the pod's namespace), per `interface`.
//! Statistics carry the time they were read, in ms; spec and machine series carry none, as
//! cAdvisor writes them. The cgroups are read in housekeeping, not in the scrape
//! ([`super::housekeeping`]).

mod collect;
mod pressure;

pub use collect::CadvisorProvider;

use super::cgroup::snapshot::CgroupSnapshot;
use super::network::InterfaceCounters;
use super::text_format::{self, Family, Kind, LabelSet, Series};
use std::time::{SystemTime, UNIX_EPOCH};

/// The label values upstream puts on every container series; empty where they do not apply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels {
    /// The cgroup path (`/kubepods/burstable/pod<uid>/<container id>`), cAdvisor's name.
    pub id: String,
    /// The runtime's container id (cAdvisor's first alias).
    pub name: String,
    /// The container's image.
    pub image: String,
    /// The container's name in the pod spec.
    pub container: String,
    /// The pod's name.
    pub pod: String,
    /// The pod's namespace.
    pub namespace: String,
}

/// Bytes a container takes on one filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsUsage {
    /// The filesystem's device (cAdvisor's `device` label).
    pub device: String,
    /// Bytes used.
    pub used_bytes: u64,
}

/// One cgroup as a set of series: who it is and what was read of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Subject {
    /// Its labels.
    pub labels: Labels,
    /// Its counters and limits.
    pub cgroup: CgroupSnapshot,
    /// The interfaces of its network namespace (the root's and sandboxes' only).
    pub network: Vec<InterfaceCounters>,
    /// Its filesystem usage.
    pub fs: Vec<FsUsage>,
    /// When it started: the runtime's creation time for containers, else the cgroup's.
    pub start_time: Option<SystemTime>,
    /// Its pressure stall information (the node's for `/`; cgroup v2 only otherwise).
    pub pressure: super::psi::Pressure,
}

/// The machine, as cAdvisor's `MachineInfo` labels it (read once: it does not change).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Machine {
    /// Logical CPUs.
    pub cores: u64,
    /// `MemTotal`.
    pub memory_bytes: u64,
    /// `/etc/machine-id`.
    pub machine_id: String,
    /// The firmware's product UUID.
    pub system_uuid: String,
    /// This boot's id.
    pub boot_id: String,
}

impl Labels {
    /// The base labels plus `extra`, in name order as client_golang writes them.
    fn with(&self, extra: Option<(&'static str, &str)>) -> LabelSet {
        let mut pairs: Vec<(&str, &str)> = vec![
            ("container", &self.container),
            ("id", &self.id),
            ("image", &self.image),
            ("name", &self.name),
            ("namespace", &self.namespace),
            ("pod", &self.pod),
        ];
        if let Some(extra) = extra {
            pairs.push(extra);
            pairs.sort_by_key(|(k, _)| *k);
        }
        LabelSet::new(&pairs)
    }
}

/// Seconds since the epoch of `at`, whole as cAdvisor writes `CreationTime.Unix()`.
fn unix_seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs() as f64)
}

/// Picks one counter out of an interface's.
type Pick = fn(&InterfaceCounters) -> u64;

/// The families of one scrape, each with the series of every subject that has the value.
struct Families {
    cpu_usage: Family,
    cfs_periods: Family,
    cfs_throttled_periods: Family,
    cfs_throttled_seconds: Family,
    memory_cache: Family,
    memory_rss: Family,
    memory_usage: Family,
    memory_working_set: Family,
    oom_events: Family,
    fs_usage: Family,
    start_time: Family,
    last_seen: Family,
    spec_cpu_period: Family,
    spec_cpu_quota: Family,
    spec_cpu_shares: Family,
    spec_memory_limit: Family,
    /// `container_pressure_<resource>_{waiting,stalled}_seconds_total`: PSI's `some` and
    /// `full` totals, cpu, memory and io.
    pressure: [(Family, Family); 3],
    network: [(Family, Pick); 8],
}

impl Families {
    fn new() -> Self {
        use Kind::{Counter, Gauge};
        let net = |name, help| Family::new(name, help, Counter);
        Families {
            cpu_usage: Family::new(
                "container_cpu_usage_seconds_total",
                "Cumulative cpu time consumed in seconds.",
                Counter,
            ),
            cfs_periods: Family::new(
                "container_cpu_cfs_periods_total",
                "Number of elapsed enforcement period intervals.",
                Counter,
            ),
            cfs_throttled_periods: Family::new(
                "container_cpu_cfs_throttled_periods_total",
                "Number of throttled period intervals.",
                Counter,
            ),
            cfs_throttled_seconds: Family::new(
                "container_cpu_cfs_throttled_seconds_total",
                "Total time duration the container has been throttled.",
                Counter,
            ),
            memory_cache: Family::new(
                "container_memory_cache",
                "Number of bytes of page cache memory.",
                Gauge,
            ),
            memory_rss: Family::new("container_memory_rss", "Size of RSS in bytes.", Gauge),
            memory_usage: Family::new(
                "container_memory_usage_bytes",
                "Current memory usage in bytes, including all memory regardless of when it was accessed",
                Gauge,
            ),
            memory_working_set: Family::new(
                "container_memory_working_set_bytes",
                "Current working set in bytes.",
                Gauge,
            ),
            oom_events: Family::new(
                "container_oom_events_total",
                "Count of out of memory events observed for the container",
                Counter,
            ),
            fs_usage: Family::new(
                "container_fs_usage_bytes",
                "Number of bytes that are consumed by the container on this filesystem.",
                Gauge,
            ),
            start_time: Family::new(
                "container_start_time_seconds",
                "Start time of the container since unix epoch in seconds.",
                Gauge,
            ),
            last_seen: Family::new(
                "container_last_seen",
                "Last time a container was seen by the exporter",
                Gauge,
            ),
            spec_cpu_period: Family::new(
                "container_spec_cpu_period",
                "CPU period of the container.",
                Gauge,
            ),
            spec_cpu_quota: Family::new(
                "container_spec_cpu_quota",
                "CPU quota of the container.",
                Gauge,
            ),
            spec_cpu_shares: Family::new(
                "container_spec_cpu_shares",
                "CPU share of the container.",
                Gauge,
            ),
            spec_memory_limit: Family::new(
                "container_spec_memory_limit_bytes",
                "Memory limit for the container.",
                Gauge,
            ),
            pressure: pressure::families(),
            network: [
                (
                    net(
                        "container_network_receive_bytes_total",
                        "Cumulative count of bytes received",
                    ),
                    |i| i.rx_bytes,
                ),
                (
                    net(
                        "container_network_receive_packets_total",
                        "Cumulative count of packets received",
                    ),
                    |i| i.rx_packets,
                ),
                (
                    net(
                        "container_network_receive_packets_dropped_total",
                        "Cumulative count of packets dropped while receiving",
                    ),
                    |i| i.rx_dropped,
                ),
                (
                    net(
                        "container_network_receive_errors_total",
                        "Cumulative count of errors encountered while receiving",
                    ),
                    |i| i.rx_errors,
                ),
                (
                    net(
                        "container_network_transmit_bytes_total",
                        "Cumulative count of bytes transmitted",
                    ),
                    |i| i.tx_bytes,
                ),
                (
                    net(
                        "container_network_transmit_packets_total",
                        "Cumulative count of packets transmitted",
                    ),
                    |i| i.tx_packets,
                ),
                (
                    net(
                        "container_network_transmit_packets_dropped_total",
                        "Cumulative count of packets dropped while transmitting",
                    ),
                    |i| i.tx_dropped,
                ),
                (
                    net(
                        "container_network_transmit_errors_total",
                        "Cumulative count of errors encountered while transmitting",
                    ),
                    |i| i.tx_errors,
                ),
            ],
        }
    }

    /// Adds the series of one subject read at `at_ms`.
    fn add(&mut self, subject: &Subject, at_ms: i64) {
        let labels = &subject.labels;
        let base = labels.with(None);
        let stat = |family: &mut Family, value: u64| {
            family.series.push(Series {
                labels: base.clone(),
                value: value as f64,
                timestamp_ms: Some(at_ms),
            });
        };
        let spec = |family: &mut Family, value: f64| {
            family.series.push(Series {
                labels: base.clone(),
                value,
                timestamp_ms: None,
            });
        };
        let cgroup = &subject.cgroup;

        if let Some(started) = subject.start_time.or(cgroup.created) {
            spec(&mut self.start_time, unix_seconds(started));
        }
        let limited = cgroup.cpu_spec.is_some_and(|s| s.quota_us != 0);
        if let Some(cpu) = cgroup.cpu_spec {
            spec(&mut self.spec_cpu_period, cpu.period_us as f64);
            if limited {
                spec(&mut self.spec_cpu_quota, cpu.quota_us as f64);
            }
            spec(&mut self.spec_cpu_shares, cpu.shares as f64);
        }
        if let Some(memory) = &cgroup.memory {
            // No limit is 0, as cAdvisor's specMemoryValue writes it.
            spec(
                &mut self.spec_memory_limit,
                memory.limit.unwrap_or(0) as f64,
            );
        }

        pressure::add(&mut self.pressure, &subject.pressure, &base, at_ms);
        self.last_seen.series.push(Series {
            labels: base.clone(),
            value: (at_ms / 1000) as f64,
            timestamp_ms: Some(at_ms),
        });
        if let Some(ns) = cgroup.cpu_usage_ns.filter(|&ns| ns > 0) {
            self.cpu_usage.series.push(Series {
                labels: labels.with(Some(("cpu", "total"))),
                value: ns as f64 / 1e9,
                timestamp_ms: Some(at_ms),
            });
        }
        if let (true, Some(cfs)) = (limited, cgroup.cfs) {
            stat(&mut self.cfs_periods, cfs.periods);
            stat(&mut self.cfs_throttled_periods, cfs.throttled_periods);
            self.cfs_throttled_seconds.series.push(Series {
                labels: base.clone(),
                value: cfs.throttled_ns as f64 / 1e9,
                timestamp_ms: Some(at_ms),
            });
        }
        if let Some(memory) = &cgroup.memory {
            stat(&mut self.memory_cache, memory.counters.cache.unwrap_or(0));
            stat(&mut self.memory_rss, memory.counters.rss.unwrap_or(0));
            stat(&mut self.memory_usage, memory.usage);
            stat(&mut self.memory_working_set, memory.working_set);
        }
        stat(&mut self.oom_events, cgroup.oom_kills.unwrap_or(0));
        for interface in &subject.network {
            let labels = labels.with(Some(("interface", &interface.name)));
            for (family, value) in &mut self.network {
                family.series.push(Series {
                    labels: labels.clone(),
                    value: value(interface) as f64,
                    timestamp_ms: Some(at_ms),
                });
            }
        }
        for fs in &subject.fs {
            self.fs_usage.series.push(Series {
                labels: labels.with(Some(("device", &fs.device))),
                value: fs.used_bytes as f64,
                timestamp_ms: Some(at_ms),
            });
        }
    }

    fn into_vec(self) -> Vec<Family> {
        let mut families = vec![
            self.cpu_usage,
            self.cfs_periods,
            self.cfs_throttled_periods,
            self.cfs_throttled_seconds,
            self.memory_cache,
            self.memory_rss,
            self.memory_usage,
            self.memory_working_set,
            self.oom_events,
            self.fs_usage,
            self.start_time,
            self.last_seen,
            self.spec_cpu_period,
            self.spec_cpu_quota,
            self.spec_cpu_shares,
            self.spec_memory_limit,
        ];
        for (waiting, stalled) in self.pressure {
            families.push(waiting);
            families.push(stalled);
        }
        families.extend(self.network.into_iter().map(|(family, _)| family));
        families
    }
}

/// The machine's series (`machine_*`), labelled with its identity as cAdvisor labels them.
fn machine_families(machine: &Machine) -> Vec<Family> {
    let labels = || {
        LabelSet::new(&[
            ("boot_id", &machine.boot_id),
            ("machine_id", &machine.machine_id),
            ("system_uuid", &machine.system_uuid),
        ])
    };
    let gauge = |name, help, value: u64| {
        let mut family = Family::new(name, help, Kind::Gauge);
        family.series.push(Series {
            labels: labels(),
            value: value as f64,
            timestamp_ms: None,
        });
        family
    };
    let mut scrape_error = Family::new(
        "machine_scrape_error",
        "1 if there was an error while getting machine metrics, 0 otherwise.",
        Kind::Gauge,
    );
    scrape_error.series.push(Series {
        labels: LabelSet::default(),
        value: 0.0,
        timestamp_ms: None,
    });
    vec![
        gauge(
            "machine_cpu_cores",
            "Number of logical CPU cores.",
            machine.cores,
        ),
        gauge(
            "machine_memory_bytes",
            "Amount of memory installed on the machine.",
            machine.memory_bytes,
        ),
        scrape_error,
    ]
}

/// The text of `/metrics/cadvisor` for `subjects` read at `at_ms`; `failed` when the
/// containers could not be listed (then `container_scrape_error` is 1, as upstream).
pub fn encode(machine: &Machine, subjects: &[Subject], at_ms: i64, failed: bool) -> String {
    let mut families = Families::new();
    for subject in subjects {
        families.add(subject, at_ms);
    }
    let mut families = families.into_vec();
    families.extend(machine_families(machine));
    let mut scrape_error = Family::new(
        "container_scrape_error",
        "1 if there was an error while getting container metrics, 0 otherwise",
        Kind::Gauge,
    );
    scrape_error.series.push(Series {
        labels: LabelSet::default(),
        value: if failed { 1.0 } else { 0.0 },
        timestamp_ms: None,
    });
    families.push(scrape_error);
    text_format::encode(&mut families)
}

#[cfg(test)]
mod tests;
