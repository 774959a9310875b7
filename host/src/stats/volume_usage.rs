//! The usage of the pods' emptyDir volumes, measured for `kubelet_volume_stats_*`
//! (`metrics::volume_stats`): the filesystem each lives on and a walk of its files.

use super::summary::EMPTY_DIR_PLUGIN;
use super::{fs, pod::dir_usage};
use crate::metrics::volume_stats::VolumeSample;
use k8s_openapi::api::core::v1::Pod;
use std::path::Path;
use std::sync::Arc;

/// The emptyDirs of `pods` that exist on disk, measured.
pub fn measure(root_dir: &Path, pods: &[Arc<Pod>]) -> Vec<VolumeSample> {
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
        let samples = measure(root.path(), &[Arc::new(pod_with_empty_dir("u1"))]);
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
