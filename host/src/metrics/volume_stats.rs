//! `kubelet_volume_stats_*` for the pods' emptyDir volumes. Upstream fills these for
//! PersistentVolumeClaims only (`pkg/kubelet/metrics/collectors/volume_stats.go`), from usage
//! measured every `volumeStatsAggPeriod`; wasmlet mounts no claims, so it shows its emptyDirs the
//! same way: measured in the background at that period (a walk of each volume is too slow for
//! a scrape), with upstream's `namespace` and `persistentvolumeclaim` (empty: an emptyDir has
//! no claim) and `pod` and `volume` to tell them apart.

use crate::stats::{fs, pod::dir_usage};
use k8s_openapi::api::core::v1::Pod;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use std::path::Path;
use std::sync::RwLock;

/// Where the emptyDir plugin keeps a pod's volumes, under `<root>/pods/<uid>/volumes/`.
const EMPTY_DIR_PLUGIN: &str = "kubernetes.io~empty-dir";

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
    /// Measures the emptyDirs of `pods` under `root_dir` (blocking: it walks the volumes) and
    /// keeps the result for the scrapes.
    pub fn refresh(&self, root_dir: &Path, pods: &[Pod]) {
        let samples = measure(root_dir, pods);
        *self.latest.write().unwrap_or_else(|e| e.into_inner()) = samples;
    }

    fn samples(&self) -> Vec<VolumeSample> {
        self.latest
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The emptyDirs of `pods` that exist on disk, measured.
pub fn measure(root_dir: &Path, pods: &[Pod]) -> Vec<VolumeSample> {
    let mut samples = Vec::new();
    for pod in pods {
        let (Some(uid), Some(spec)) = (pod.metadata.uid.as_deref(), pod.spec.as_ref()) else {
            continue;
        };
        let dir = root_dir
            .join("pods")
            .join(uid)
            .join("volumes")
            .join(EMPTY_DIR_PLUGIN);
        for volume in spec.volumes.iter().flatten() {
            if volume.empty_dir.is_none() {
                continue;
            }
            let path = dir.join(&volume.name);
            let Ok(filesystem) = fs::of(&path) else {
                continue;
            };
            let (used_bytes, inodes_used) = dir_usage(&path);
            samples.push(VolumeSample {
                namespace: pod.metadata.namespace.clone().unwrap_or_default(),
                pod: pod.metadata.name.clone().unwrap_or_default(),
                volume: volume.name.clone(),
                capacity_bytes: filesystem.capacity_bytes,
                available_bytes: filesystem.available_bytes,
                used_bytes,
                inodes: filesystem.inodes,
                inodes_free: filesystem.inodes_free,
                inodes_used,
            });
        }
    }
    samples
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pod_with_empty_dir(uid: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "default", "uid": uid},
            "spec": {
                "containers": [{"name": "c"}],
                "volumes": [{"name": "scratch", "emptyDir": {}}, {"name": "gone", "emptyDir": {}}]
            }
        }))
        .expect("pod")
    }

    #[test]
    fn an_empty_dir_on_disk_is_measured_and_a_missing_one_skipped() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root
            .path()
            .join("pods/u1/volumes")
            .join(EMPTY_DIR_PLUGIN)
            .join("scratch");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("data"), vec![7u8; 64 * 1024]).expect("write");
        let samples = measure(root.path(), &[pod_with_empty_dir("u1")]);
        assert_eq!(samples.len(), 1, "{samples:?}");
        let sample = &samples[0];
        assert_eq!(
            (
                sample.namespace.as_str(),
                sample.pod.as_str(),
                sample.volume.as_str()
            ),
            ("default", "web", "scratch")
        );
        assert!(sample.used_bytes >= 64 * 1024, "{sample:?}");
        assert!(sample.inodes_used >= 1, "{sample:?}");
        assert!(sample.capacity_bytes >= sample.available_bytes);
    }
}
