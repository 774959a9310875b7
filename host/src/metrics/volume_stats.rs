//! `kubelet_volume_stats_*` for the pods' emptyDir volumes. Upstream fills these for
//! PersistentVolumeClaims only (`pkg/kubelet/metrics/collectors/volume_stats.go`), from usage
//! measured every `volumeStatsAggPeriod`; wasmlet mounts no claims, so it shows its emptyDirs the
//! same way: measured in the background at that period (a walk of each volume is too slow for
//! a scrape), with upstream's `namespace` and `persistentvolumeclaim` (empty: an emptyDir has
//! no claim) and `pod` and `volume` to tell them apart. `stats::volume_usage` measures them.

use parking_lot::RwLock;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;

/// One volume's numbers, as the summary's `VolumeStats` has them.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeSample {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The volume's name in the pod spec.
    pub volume: String,
    /// Size of the filesystem the volume lives on (a memory-backed one: its tmpfs).
    pub capacity_bytes: u64,
    /// Free bytes on that filesystem for unprivileged users.
    pub available_bytes: u64,
    /// Bytes the volume's files use.
    pub used_bytes: u64,
    /// Inodes of the filesystem.
    pub inodes: u64,
    /// Free inodes of the filesystem.
    pub inodes_free: u64,
    /// Inodes the volume's files use.
    pub inodes_used: u64,
}

/// The latest measurement of every emptyDir, read at each scrape.
#[derive(Debug, Default)]
pub struct VolumeStats {
    latest: RwLock<Vec<VolumeSample>>,
}

impl VolumeStats {
    /// Keeps `samples` (the latest measurement of every emptyDir) for the scrapes.
    pub fn set(&self, samples: Vec<VolumeSample>) {
        *self.latest.write() = samples;
    }

    fn samples(&self) -> Vec<VolumeSample> {
        self.latest.read().clone()
    }
}

/// Encodes the latest [`VolumeStats`] of the process's kubelet series.
#[derive(Debug, Default)]
pub struct VolumeStatsCollector;

type Field = fn(&VolumeSample) -> u64;

/// Each family: name, upstream's help, the field it shows.
const FAMILIES: [(&str, &str, Field); 6] = [
    (
        "kubelet_volume_stats_capacity_bytes",
        "[ALPHA] Capacity in bytes of the volume",
        |s| s.capacity_bytes,
    ),
    (
        "kubelet_volume_stats_available_bytes",
        "[ALPHA] Number of available bytes in the volume",
        |s| s.available_bytes,
    ),
    (
        "kubelet_volume_stats_used_bytes",
        "[ALPHA] Number of used bytes in the volume",
        |s| s.used_bytes,
    ),
    (
        "kubelet_volume_stats_inodes",
        "[ALPHA] Maximum number of inodes in the volume",
        |s| s.inodes,
    ),
    (
        "kubelet_volume_stats_inodes_free",
        "[ALPHA] Number of free inodes in the volume",
        |s| s.inodes_free,
    ),
    (
        "kubelet_volume_stats_inodes_used",
        "[ALPHA] Number of used inodes in the volume",
        |s| s.inodes_used,
    ),
];

impl Collector for VolumeStatsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let samples = super::kubelet::kubelet().volume_stats.samples();
        for (name, help, field) in FAMILIES {
            let mut family = encoder.encode_descriptor(
                name,
                help,
                None,
                prometheus_client::metrics::MetricType::Gauge,
            )?;
            for sample in &samples {
                let labels = [
                    ("namespace", sample.namespace.as_str()),
                    ("persistentvolumeclaim", ""),
                    ("pod", sample.pod.as_str()),
                    ("volume", sample.volume.as_str()),
                ];
                let gauge = ConstGauge::new(field(sample) as i64);
                gauge.encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}
